#!/usr/bin/env bash
# State-store cache hints in gdn_step: timelines and benches, alternated, two rounds.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$(pwd)/.bin/gdn
mkdir -p $OUT/tl
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu --format=csv > $OUT/smi.txt
for round in 1 2; do
  for v in none ABL_STORE_CS ABL_STORE_WT ABL_STORE_CG; do
    d=$v; [ $v = none ] && d=
    ENGINE_KERNEL_DEFINES=$d timeout 120 $B/cuda_profile qwen3.6-35b-a3b 2048 64 4538.8 --timeline > $OUT/tl/$v-r$round.txt 2>&1
    echo "$round $v $(sed -n 2p $OUT/tl/$v-r$round.txt | grep -o 'sum.*') | $(grep '^| gdn_step' $OUT/tl/$v-r$round.txt) | $(grep '^| moe_gate_up' $OUT/tl/$v-r$round.txt)" | tee -a $OUT/summary.txt
  done
  for v in none ABL_STORE_CS ABL_STORE_WT ABL_STORE_CG; do
    d=$v; [ $v = none ] && d=
    ENGINE_KERNEL_DEFINES=$d timeout 120 $B/engine bench --backend cuda --preset qwen3.6-35b-a3b -pg 2048,384 -r 2 --warmup 1 --prefill-chunk 8192 --read-ceiling-gbs 4538.8 > $OUT/tl/bench-$v-r$round.csv 2> $OUT/tl/bench-$v-r$round.err
    echo "$round $v bench $(tail -n +2 $OUT/tl/bench-$v-r$round.csv | awk -F, '{print $12, $19, $28}' | tr '\n' ' ')" | tee -a $OUT/summary.txt
  done
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu --format=csv >> $OUT/smi.txt
cd $OUT && tar czf tl.tgz tl && rm -rf tl
