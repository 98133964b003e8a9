"""A missing tool in a test that needs one: CI installs the C++ toolchain (tools/hip_toolchain.sh: clang, the HIP
headers and device libraries, cuobjdump / nvdisasm) and NVRTC and says so with CI_REQUIRE_HIP=1 / CI_REQUIRE_NVRTC=1;
there a missing piece fails the test (a silent skip would count nothing as passing), anywhere else it skips with the
command that installs it."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

HIP = "CI_REQUIRE_HIP"
NVRTC = "CI_REQUIRE_NVRTC"
INSTALL = {HIP: "bash tools/hip_toolchain.sh (after installing triton)",
           NVRTC: "pip install nvidia-cuda-nvrtc==13.0.88 (the version of nvcc)"}


def required(env: str = HIP) -> bool:
    """Whether CI promised the tool (``env`` set to 1)."""
    return os.environ.get(env) == "1"


def missing(what: str, env: str = HIP) -> NoReturn:
    """Fail (``env`` = 1: CI installed it) or skip, naming what is missing and how to install it."""
    if required(env):
        pytest.fail(f"{env}=1 but {what} is missing (CI installs it: {INSTALL[env]})", pytrace=False)
    pytest.skip(f"{what} missing here: {INSTALL[env]} installs it")
