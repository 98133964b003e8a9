#!/usr/bin/env bash
# Session 25's device run 8: AoS 4bit_nc with its query fragments in registers (q_in_smem=0: 8 LDS.64 a tile fewer,
# 16 of ~140 shared wavefronts, in a decode held by shared memory; 168 registers, no spills in the classic kernel),
# same-run A/B by CUDA graphs at D=128 and 64. OUT must be set.
GRAPH=1 OUT=$OUT bash bench/dbg/sweeps.sh 'qreg128|4,8,12|aos|default,default+q_in_smem=0|4bit_nc' 2>&1 | tail -13
D=64 GRAPH=1 OUT=$OUT bash bench/dbg/sweeps.sh 'qreg64|12,16|aos|default,default+q_in_smem=0|4bit_nc' 2>&1 | tail -5
