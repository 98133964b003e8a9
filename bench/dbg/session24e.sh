#!/usr/bin/env bash
# Session 24's device run 5: SoA k3v4_nc at head_dim 128 with CudaOptions.pair_add (the pair table without its
# alignment padding: 8 blocks an SM instead of 6) against the default, split counts 3-8, both target shapes, CUDA
# graphs, the sweep's check against the reference. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT GRAPH=1 bash bench/dbg/sweeps.sh 'k3soa|3,4,6,8|soa|default,default+pair_add=1|k3v4_nc'
GRAPH=1 LAYOUT=soa python bench/dbg/splits.py k3v4_nc 3,6 2>&1 | grep occupancy -A3 | head -3
