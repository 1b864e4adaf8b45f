#!/usr/bin/env bash
# The chain rows again, with the decode's bytes as one stage beside them.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu --format=csv,noheader > $OUT/smi-2.txt
timeout 400 .bin/cuda_kernels_bench > $OUT/kernels-bench-2.txt 2>&1
echo "cuda_kernels_bench rc=$?"
sed -n '3,30p' $OUT/kernels-bench-2.txt
