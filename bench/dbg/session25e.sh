#!/usr/bin/env bash
# Session 25's device run 5: Nsight Compute of AoS 4bit_nc with and without pair_prmt (12 splits, B=32 L=32K) and of
# the other failing D=128 decodes (their tuned split counts): which pipe or memory holds them, now that 7.6 % fewer
# SASS instructions a tile (pair_prmt) bought 1-3 %. OUT must be set.
NAME=-prmt bash bench/dbg/prof.sh 4bit_nc:aos:12,k3v4_nc:aos,3bit_nc:aos,3bit_nc:soa 2>&1 | tail -80
OPTS=pair_prmt=0 NAME=-noprmt bash bench/dbg/prof.sh 4bit_nc:aos:12 2>&1 | tail -24
