"""tqgen_runtime — what applications import (variant selection lands with the runtime issue)."""
