#!/usr/bin/env bash
# moe_down with its weights bulk-copied into shared memory: benches alternated, then timelines.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$(pwd)/.bin/bulk
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu --format=csv > $OUT/smi.txt
arm() { # label -> env
  case $1 in
    base) echo "ENGINE_EXP_DOWN=regs" ;;
    b32all) echo "ENGINE_EXP_DOWN=bulk ENGINE_EXP_CARVEOUT=all" ;;
    b40all) echo "ENGINE_EXP_DOWN=bulk ENGINE_EXP_BULK_REGS=40 ENGINE_EXP_CARVEOUT=all" ;;
    b40moe) echo "ENGINE_EXP_DOWN=bulk ENGINE_EXP_BULK_REGS=40 ENGINE_EXP_CARVEOUT=moe_" ;;
    b40) echo "ENGINE_EXP_DOWN=bulk ENGINE_EXP_BULK_REGS=40" ;;
    b40gd) echo "ENGINE_EXP_DOWN=bulk ENGINE_EXP_BULK_REGS=40 ENGINE_EXP_CARVEOUT=moe_gate_up,moe_down_bulk" ;;
    r8gd) echo "ENGINE_EXP_DOWN=bulk ENGINE_EXP_BULK_REGS=r8 ENGINE_EXP_CARVEOUT=moe_gate_up,moe_down_bulk" ;;
    r8gd40) echo "ENGINE_EXP_DOWN=bulk ENGINE_EXP_BULK_REGS=r8 ENGINE_EXP_CARVEOUT=moe_gate_up,moe_down_bulk ENGINE_EXP_CARVEOUT_PCT=40" ;;
    r8) echo "ENGINE_EXP_DOWN=bulk ENGINE_EXP_BULK_REGS=r8" ;;
    c0stream) echo "ENGINE_EXP_DOWN=regs ENGINE_EXP_CARVEOUT=gemv,moe_gate_up,moe_down,moe_out_logits,lm_head ENGINE_EXP_CARVEOUT_PCT=0" ;;
    c0all) echo "ENGINE_EXP_DOWN=regs ENGINE_EXP_CARVEOUT=all ENGINE_EXP_CARVEOUT_PCT=0" ;;
    c0gu) echo "ENGINE_EXP_DOWN=regs ENGINE_EXP_CARVEOUT=moe_gate_up ENGINE_EXP_CARVEOUT_PCT=0" ;;
    c0down) echo "ENGINE_EXP_DOWN=regs ENGINE_EXP_CARVEOUT=moe_down ENGINE_EXP_CARVEOUT_PCT=0" ;;
    c0gemv) echo "ENGINE_EXP_DOWN=regs ENGINE_EXP_CARVEOUT=gemv ENGINE_EXP_CARVEOUT_PCT=0" ;;
    c3gu) echo "ENGINE_EXP_DOWN=regs ENGINE_EXP_CARVEOUT=moe_gate_up ENGINE_EXP_CARVEOUT_PCT=3" ;;
    c7gu) echo "ENGINE_EXP_DOWN=regs ENGINE_EXP_CARVEOUT=moe_gate_up ENGINE_EXP_CARVEOUT_PCT=7" ;;
    c7stream) echo "ENGINE_EXP_DOWN=regs ENGINE_EXP_CARVEOUT=gemv,moe_gate_up,moe_down,moe_out_logits,lm_head ENGINE_EXP_CARVEOUT_PCT=7" ;;
    b64gd) echo "ENGINE_EXP_DOWN=bulk ENGINE_EXP_BULK_REGS=64 ENGINE_EXP_CARVEOUT=moe_gate_up,moe_down_bulk" ;;
  esac
}
bench() { env $(arm $1) timeout 150 $B/engine bench --backend cuda --preset qwen3.6-35b-a3b -pg 2048,384 -r 2 --warmup 1 --prefill-chunk 8192 --read-ceiling-gbs 4538.8 > $OUT/r/bench-$1-r$2.csv 2> $OUT/r/bench-$1-r$2.err
  echo "$2 $1 bench $(tail -n +2 $OUT/r/bench-$1-r$2.csv | awk -F, '{print $12, $19, $28}' | tr '\n' ' ') $(tail -1 $OUT/r/bench-$1-r$2.err)" | tee -a $OUT/summary.txt; }
tl() { env $(arm $1) timeout 150 $B/cuda_profile qwen3.6-35b-a3b 2048 64 4538.8 --timeline > $OUT/r/tl-$1-r$2.txt 2>&1
  echo "$2 $1 $(sed -n 2p $OUT/r/tl-$1-r$2.txt | grep -o 'sum.*') | $(grep '^| moe_gate_up' $OUT/r/tl-$1-r$2.txt) | $(grep '^| moe_down' $OUT/r/tl-$1-r$2.txt) | $(grep '^| gemv_multi_norm_t1' $OUT/r/tl-$1-r$2.txt)" | tee -a $OUT/summary.txt; }
for a in ${ARMS:-base b40all b32all b40moe b40}; do bench $a 1; grep -q "^error" $OUT/r/bench-$a-r1.err && { cat $OUT/r/bench-$a-r1.err; exit 1; }; done
for a in ${TLARMS:-base b40all}; do tl $a 1; done
for a in ${KBARMS:-}; do env $(arm $a) timeout 200 $B/cuda_kernels_bench > $OUT/r/kb-$a.txt 2>&1; echo "kb $a $(grep -E 'moe launch|moe, norm' $OUT/r/kb-$a.txt | tr '\n' ' ')" | tee -a $OUT/summary.txt; done
for a in ${ARMS:-base b40all b32all b40moe b40}; do bench $a 2; done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu --format=csv >> $OUT/smi.txt
cp $OUT/summary.txt $OUT/summary-copy.txt 2>/dev/null
cd $OUT && tar czf r.tgz r && rm -rf r
