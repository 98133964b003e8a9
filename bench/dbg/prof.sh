# ncu of one decode launch per (preset, layout), B=32 L=32K D=128, at the GPU's own clock (debug);
# OP=store: the store launches of 64K tokens instead (the third of three per item); BACKEND=triton: the
# Triton variants; NAME: the output file's suffix ($OUT/ncu$NAME.txt); NCU_EXTRA: more ncu arguments
# (e.g. '--section InstructionStats'); NCU_METRICS: more metrics (e.g. 'dram__bytes_read.sum')
# KERNEL: the kernel-name regex (default tq_decode_split; the pair kernel: tq_decode_pair)
export PYTHONPATH=$PWD:/tmp/pp TQGEN_CACHE_DIR=/tmp/tqc PYTHONUNBUFFERED=1; mkdir -p /tmp/pp && ln -sfn $PWD/runtime /tmp/pp/tqgen_runtime
ITEMS=${1:-4bit_nc:soa,3bit_nc:soa,k3v4_nc:soa,4bit_nc:aos,k8v4:soa}
K=${KERNEL:-tq_decode_split}; C=$(echo "$ITEMS" | tr , "\n" | wc -l); [ "${OP:-}" = store ] && K=tq_store && C=$((3 * C))
ncu --clock-control none -k regex:$K --launch-count $C --section SpeedOfLight --section Occupancy --section LaunchStats ${NCU_EXTRA:-} \
  --metrics 'regex:smsp__warp_issue_stalled_.*_per_warp_active\.pct,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__throughput.avg.pct_of_peak_sustained_active'"${NCU_METRICS:+,$NCU_METRICS}" \
  python bench/dbg/prof.py $ITEMS > $OUT/ncu${NAME:-}.txt 2>&1
grep -E "tq_decode|tq_store|Duration|SM Frequency|DRAM Throughput|stalled.*pct +[0-9]+\.|issue_active|pipe_|bank_conf|wavefronts|inst_executed.sum|l1tex__throughput|Achieved Active|Registers Per" $OUT/ncu${NAME:-}.txt | awk '{ if ($NF+0 >= 1 || $0 !~ /stalled/) print }'
