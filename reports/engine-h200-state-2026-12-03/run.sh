#!/usr/bin/env bash
# The engine at f021e2d on the H200: GPU tests (cold kernel cache, then warm), the decode
# bench of both presets, the kernel bench with what a stage costs, and the decode's chain.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$(pwd)/.bin
smi() { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu --format=csv,noheader >> $OUT/smi.txt; }
smi
for t in cuda_compile cuda_kernels cuda_backend cuda_l2; do
  ( time timeout 240 $B/$t --test-threads=1 ) > $OUT/tests-$t.log 2>&1
  echo "$t rc=$? $(grep 'test result' $OUT/tests-$t.log)" | tee -a $OUT/summary.txt
done
B35="--backend cuda -pg 2048,384 -r 2 --warmup 1 --prefill-chunk 8192"
for i in 1 2; do
  $B/engine bench $B35 --preset qwen3.6-35b-a3b > $OUT/bench-plain-$i.csv 2>> $OUT/bench.err
done
$B/engine bench $B35 --preset qwen3.6-35b-a3b --spec mtp --draft-tokens 3 > $OUT/bench-spec.csv 2>> $OUT/bench.err
$B/engine bench $B35 --preset dense-27b > $OUT/bench-dense.csv 2>> $OUT/bench.err
smi
timeout 200 $B/cuda_kernels_bench > $OUT/kernels-bench.txt 2>&1
timeout 120 $B/cuda_profile qwen3.6-35b-a3b 2048 64 --timeline > $OUT/timeline.txt 2>&1
smi
