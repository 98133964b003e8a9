#!/usr/bin/env bash
# ncu metrics of one classic and one patched balanced launch (bench/dbg/bal_exp.py ncu); usage: bal_ncu.sh PATCH OUTFILE [ITEM] [BxL]
set -u
M=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors_op_write.sum,smsp__inst_executed.sum,smsp__warp_issue_stalled_no_instruction_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct,smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__warp_issue_stalled_selected_per_warp_active.pct,smsp__warp_issue_stalled_not_selected_per_warp_active.pct,smsp__warp_issue_stalled_dispatch_stall_per_warp_active.pct,smsp__warp_issue_stalled_branch_resolving_per_warp_active.pct,smsp__warp_issue_stalled_imc_miss_per_warp_active.pct,smsp__warp_issue_stalled_drain_per_warp_active.pct
timeout 200 ncu --clock-control none --kernel-name regex:tq_decode_split --launch-skip 2 --launch-count 2 --metrics $M \
  python bench/dbg/bal_exp.py ncu bench/dbg/balx ${3:-k8v4:soa} ${4:-32x32768} $1 > $2 2>&1
echo "ncu rc $?"
grep -E "tq_decode_split|__|Failed|ERR" $2 | head -60
