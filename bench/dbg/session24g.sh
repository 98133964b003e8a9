#!/usr/bin/env bash
# Session 24's device run 7: SoA 3bit_nc at head_dim 128 (floor 69.4 / 69.8 % in v31) in head groups of 2 (as SoA
# k3v4_nc), with and without pair_add, against its default 4-warp blocks; CUDA graphs. OUT must be set.
export PYTHONPATH=$PWD:/tmp/pp PYTHONUNBUFFERED=1
mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
OUT=$OUT GRAPH=1 bash bench/dbg/sweeps.sh 'k3soa3|2,3,4,6,8|soa|default,default+head_groups=1+decode_warps=2+decode_min_blocks=8,default+head_groups=1+decode_warps=2+decode_min_blocks=8+pair_add=1|3bit_nc'
