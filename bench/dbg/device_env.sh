# Sourced by the device scripts (bench/dbg/session47*.sh): the repository's packages on the path (tqgen_runtime through a
# symlink, as tests/conftest.py maps it), one kernel cache, unbuffered output; prints the GPU and sets gpu (its name),
# slug (h100 / h200: result file stems), day and t0 (seconds, for "at N s" lines).
set -u
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn "$PWD/runtime" /tmp/pp/tqgen_runtime
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu"
slug=$(echo "$gpu" | tr 'A-Z' 'a-z' | sed 's/nvidia //; s/ .*//'); day=$(date +%F); t0=$SECONDS
