#!/usr/bin/env bash
# What each latency-bound launch's work after its wait costs the decode chain: timelines of
# builds in which one kernel returns right after its wait, alternated, two rounds.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$(pwd)/.bin/abl
mkdir -p $OUT/tl
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu --format=csv > $OUT/smi.txt
for round in 1 2; do
  for v in ${ARMS:-none ABL_MIN ABL_ATTN_MIN ABL_ATTN_PREP_MIN ABL_MOE_ROUTE_MIN ABL_MOE_GU_MIN ABL_MOE_DOWN_MIN}; do
    d=$v; [ $v = none ] && d=
    ENGINE_KERNEL_DEFINES=$d timeout 150 $B/cuda_profile qwen3.6-35b-a3b 2048 64 4538.8 --timeline > $OUT/tl/$v-r$round.txt 2>&1
    echo "$round $v $(sed -n 2p $OUT/tl/$v-r$round.txt | grep -o 'sum.*')" | tee -a $OUT/summary.txt
  done
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu --format=csv >> $OUT/smi.txt
cd $OUT && tar czf tl.tgz tl && rm -rf tl
