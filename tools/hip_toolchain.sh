#!/usr/bin/env bash
# Install what compiling generated HIP C++ needs on a machine without ROCm or an AMD GPU
# (TOOLCHAIN.md, "HIP C++ (compile-only)"); tqgen/compile_cpp.py uses it:
#   1. clang-22, lld-22, llvm-22 from Debian 12's security repo (Debian's hipcc 5.2 knows no gfx942/gfx950);
#   2. the HIP headers of libamdhip64-dev 7.2.4 (Debian experimental; fallback: sid's 6.4.3, which then
#      needs -D__AMDGCN_WAVEFRONT_SIZE=64 — compile_cpp adds it), fetched with a private apt config so
#      the system's apt sources stay untouched, unpacked (dpkg-deb -x) into the HIP root;
#   3. the triton wheel's ocml.bc/ockl.bc copied to <root>/bitcode, so compile_cpp can link a full code
#      object and read registers/spills from its notes (best effort: needs a python with triton).
# Idempotent and fast when done. Prints the HIP root (${TQGEN_HIP_ROOT:-~/.cache/tqgen/hip}) last on stdout.
set -euo pipefail

ROOT="${TQGEN_HIP_ROOT:-$HOME/.cache/tqgen/hip}"
PY="${PYTHON:-python3}"
say() { echo "hip_toolchain: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }
retry() { "$@" || { say "failed, retrying once in 3 s: $*"; sleep 3; "$@"; }; }  # network/mirror hiccups
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo DEBIAN_FRONTEND=noninteractive"

# 1. LLVM 22: clang drives the HIP compile, lld links the code object, llvm-readelf prints its notes
if ! command -v clang-22 >/dev/null || ! command -v ld.lld-22 >/dev/null \
        || ! command -v llvm-readelf-22 >/dev/null; then
    say "installing clang-22 lld-22 llvm-22 with apt-get"
    retry $SUDO apt-get update -q >&2 || die "apt-get update failed twice; check the network and /etc/apt/sources.list*"
    # a retry after a fresh update: a stale package list can name a version the mirror no longer has
    install=($SUDO apt-get install -y -q --no-install-recommends clang-22 lld-22 llvm-22)
    "${install[@]}" >&2 || { $SUDO apt-get update -q >&2 && "${install[@]}" >&2; } \
        || die "apt-get install clang-22 lld-22 llvm-22 failed (they come from Debian 12's bookworm-security repo)"
fi

# 2. HIP headers
if [ ! -f "$ROOT/include/hip/hip_runtime.h" ]; then
    W="$(mktemp -d)"
    trap 'rm -rf "$W"' EXIT
    mkdir -p "$W/lists/partial" "$W/cache/archives/partial" "$W/parts" "$W/x"
    KEY=/usr/share/keyrings/debian-archive-keyring.gpg
    printf 'deb [signed-by=%s] http://deb.debian.org/debian %s main\n' "$KEY" experimental "$KEY" sid >"$W/sources.list"
    # private state, cache and sources: nothing under /etc/apt or /var/lib/apt changes
    APT=(apt-get -q -o "Dir::State=$W" -o "Dir::State::Lists=$W/lists" -o "Dir::Cache=$W/cache"
         -o "Dir::Etc::SourceList=$W/sources.list" -o "Dir::Etc::SourceParts=$W/parts"
         -o "APT::Sandbox::User=root")
    retry "${APT[@]}" update >&2 || die "apt-get update of the private experimental/sid list failed twice (network?)"
    versions="$(apt-cache -o "Dir::State=$W" -o "Dir::State::Lists=$W/lists" -o "Dir::Cache=$W/cache" \
        -o "Dir::Etc::SourceList=$W/sources.list" -o "Dir::Etc::SourceParts=$W/parts" \
        madison libamdhip64-dev | awk -F'|' '{gsub(/ /, "", $2); print $2}')"
    want="$(grep -m1 '^7\.2\.4' <<<"$versions" || true)"
    if [ -z "$want" ]; then
        want="$(grep -m1 '^6\.4\.3' <<<"$versions" || true)"
        [ -n "$want" ] || die "libamdhip64-dev 7.2.4 (experimental) and 6.4.3 (sid) are both gone;" \
            "found: ${versions:-none}; update the versions in $0 (TOOLCHAIN.md)"
        say "NOTE: libamdhip64-dev 7.2.4 not in experimental; using sid's $want" \
            "(needs -D__AMDGCN_WAVEFRONT_SIZE=64: compile_cpp adds it for HIP < 7)"
    fi
    (cd "$W" && retry "${APT[@]}" download "libamdhip64-dev=$want" >&2) \
        || die "apt-get download libamdhip64-dev=$want failed (network?)"
    dpkg-deb -x "$W"/libamdhip64-dev_*.deb "$W/x"
    [ -f "$W/x/usr/include/hip/hip_runtime.h" ] || die "libamdhip64-dev $want has no usr/include/hip/hip_runtime.h"
    rm -rf "$ROOT.partial" && mkdir -p "$ROOT.partial"
    cp -a "$W/x/usr/." "$ROOT.partial/"
    echo "libamdhip64-dev $want" >"$ROOT.partial/PACKAGE"
    # keep bitcode copied by an earlier run, then swap the new tree in whole
    [ -d "$ROOT/bitcode" ] && cp -a "$ROOT/bitcode" "$ROOT.partial/"
    rm -rf "$ROOT" && mv "$ROOT.partial" "$ROOT"
    echo '#include <hip/hip_runtime.h>
__global__ void k(float* p) { p[threadIdx.x] = 1.f; }' >"$W/k.hip"
    clang-22 -x hip -std=c++17 --offload-arch=gfx942 --cuda-device-only -nogpulib --rocm-path="$ROOT" \
        -isystem "$ROOT/include" -D__AMDGCN_WAVEFRONT_SIZE=64 -fsyntax-only "$W/k.hip" >&2 \
        || die "clang-22 cannot compile a trivial kernel against the headers in $ROOT"
    say "HIP headers: libamdhip64-dev $want in $ROOT"
fi

# 3. ocml/ockl bitcode from the triton wheel (pinned triton==3.6.0 in CI), for linked code objects
if [ ! -f "$ROOT/bitcode/ocml.bc" ] || [ ! -f "$ROOT/bitcode/ockl.bc" ]; then
    lib="$("$PY" -c 'import importlib.util as u, os; s = u.find_spec("triton")
print(os.path.join(s.submodule_search_locations[0], "backends", "amd", "lib") if s else "")' 2>/dev/null || true)"
    if [ -n "$lib" ] && [ -f "$lib/ocml.bc" ] && [ -f "$lib/ockl.bc" ]; then
        mkdir -p "$ROOT/bitcode" && cp "$lib/ocml.bc" "$lib/ockl.bc" "$ROOT/bitcode/"
        say "copied ocml.bc/ockl.bc from $lib"
    else
        say "NOTE: no triton wheel found for '$PY': HIP compiles will be -S only (no register/spill numbers);" \
            "pip install triton==3.6.0 and rerun to enable linking"
    fi
fi
echo "$ROOT"
