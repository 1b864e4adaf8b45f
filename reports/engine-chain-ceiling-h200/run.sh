#!/usr/bin/env bash
# The decode chain's bytes streamed and nothing else, as dependent launches and as one
# persistent launch (cuda_kernels_bench, its chain rows), with the GPU kernel tests first.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$(pwd)/.bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu --format=csv,noheader > $OUT/smi.txt
timeout 240 $B/cuda_kernels --test-threads=1 --nocapture > $OUT/tests-cuda_kernels.log 2>&1
echo "cuda_kernels rc=$? $(grep 'test result' $OUT/tests-cuda_kernels.log)"
grep -E "^chain of|kernels: " $OUT/tests-cuda_kernels.log
timeout 300 $B/cuda_kernels_bench > $OUT/kernels-bench.txt 2>&1
echo "cuda_kernels_bench rc=$?"
sed -n '1,24p' $OUT/kernels-bench.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu --format=csv,noheader >> $OUT/smi.txt
