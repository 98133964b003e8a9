#!/bin/bash
# Same-run A/B of two code trees on the GPU machine (debug). Two steps:
#   here:        bash bench/dbg/ab_trees.sh prepare REV      # git archive of REV into .xfer/base (ignored)
#   on the GPU:  bash bench/dbg/ab_trees.sh run 'CMD' [ROUNDS] # CMD in base, then in this tree, ROUNDS times
# (carry .xfer/base to the device). CMD runs from each tree's root with that tree first on PYTHONPATH
# (scripts under bench/ do not see the current directory otherwise) and its own kernel cache; every
# stdout line is prefixed "base " or "new " and appended to $OUT/ab.txt. $AB_NEW is this tree's root in both runs (a
# script base lacks: python $AB_NEW/bench/dbg/x.py runs this tree's script on each tree's package). Example:
#   bash bench/dbg/ab_trees.sh run 'LAYOUT=aos python bench/dbg/sweep3.py default 4bit_nc,3bit_nc' 2
set -u
R=$(cd "$(dirname "$0")/../.." && pwd)
case "${1:-}" in
  prepare)
    rm -rf "$R/.xfer/base" && mkdir -p "$R/.xfer/base"
    git -C "$R" archive "${2:?a revision}" tqgen runtime bench pyproject.toml | tar -x -C "$R/.xfer/base"
    grep -qx '/.xfer/' "$R/.git/info/exclude" 2>/dev/null || echo '/.xfer/' >> "$R/.git/info/exclude"
    echo "base = $2 in $R/.xfer/base" ;;
  run)
    CMD=${2:?a command}; ROUNDS=${3:-1}; OUTF=${OUT:-/tmp}/ab.txt
    export PYTHONUNBUFFERED=1 AB_NEW=$R
    for t in base new; do  # tqgen_runtime is the runtime/ folder under its installed name
      mkdir -p "/tmp/ab_pp_$t"; ln -sfn "$([ $t = base ] && echo "$R/.xfer/base" || echo "$R")/runtime" "/tmp/ab_pp_$t/tqgen_runtime"
    done
    for _ in $(seq "$ROUNDS"); do
      for t in base new; do
        root=$([ $t = base ] && echo "$R/.xfer/base" || echo "$R")
        (cd "$root" && PYTHONPATH="$root:/tmp/ab_pp_$t" TQGEN_CACHE_DIR="/tmp/ab_cache_$t" bash -c "$CMD") 2>/dev/null \
          | sed "s/^/$t /" | tee -a "$OUTF"
      done
    done ;;
  *) sed -n 2,8p "$0"; exit 2 ;;
esac
