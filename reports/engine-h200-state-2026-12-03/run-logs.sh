#!/usr/bin/env bash
# The same binaries again on a second machine: the GPU tests' whole logs and the decode's
# chain, packed into one archive (a device call returns at most eight files).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$(pwd)/.bin
mkdir -p $OUT/logs
for t in cuda_compile cuda_kernels cuda_backend cuda_l2; do
  timeout 240 $B/$t --test-threads=1 --nocapture > $OUT/logs/tests-$t.log 2>&1
  echo "$t rc=$? $(grep 'test result' $OUT/logs/tests-$t.log)" | tee -a $OUT/summary-2.txt
done
timeout 120 $B/cuda_profile qwen3.6-35b-a3b 2048 64 --timeline > $OUT/logs/timeline.txt 2>&1
head -3 $OUT/logs/timeline.txt
cd $OUT && tar czf logs.tgz logs && rm -rf logs
