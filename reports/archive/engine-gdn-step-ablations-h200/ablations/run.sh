#!/usr/bin/env bash
# GDN-step ablations in the decode chain: one timeline per variant, two rounds.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$(pwd)/.bin/gdn
mkdir -p $OUT/tl
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu --format=csv > $OUT/smi.txt
for round in 1 2; do
  for v in none ABL_NO_NORM ABL_NO_REC_STORE ABL_NO_RECUR ABL_NO_PRELOAD ABL_MIN; do
    d=$v; [ $v = none ] && d=
    ENGINE_KERNEL_DEFINES=$d timeout 120 $B/cuda_profile qwen3.6-35b-a3b 2048 64 4538.8 --timeline > $OUT/tl/$v-r$round.txt 2>&1
    echo "$round $v $(sed -n 2p $OUT/tl/$v-r$round.txt) | $(grep '^| gdn_step' $OUT/tl/$v-r$round.txt) | $(grep '^| moe_out_logits' $OUT/tl/$v-r$round.txt)" | tee -a $OUT/summary.txt
  done
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu --format=csv >> $OUT/smi.txt
cd $OUT && tar czf tl.tgz tl && rm -rf tl
