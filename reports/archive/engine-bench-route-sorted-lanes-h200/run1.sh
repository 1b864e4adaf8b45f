set +e
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
R=/tmp/r; mkdir -p $R
B="bench --backend cuda --preset qwen3.6-35b-a3b -pg 2048,384 -r 2 --warmup 1 --prefill-chunk 8192 --read-ceiling-gbs 4538.8"
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
step() { echo "[$(el)s] $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu --format=csv > $R/gpu.csv 2>&1
for v in B A; do timeout 150 .bin/$v/cuda_kernels > $R/kernels-$v.log 2>&1; step "kernels $v rc=$?"; grep "test result\|panicked" $R/kernels-$v.log; done
timeout 90 .bin/C/cuda_kernels routing_breaks_ties > $R/kernels-C-ties.log 2>&1; step "kernels C (>=) rc=$?"; grep "test result\|panicked" -A2 $R/kernels-C-ties.log | head -8
for i in 1 2 3; do timeout 120 .bin/B/cuda_backend > $R/backend-B-$i.log 2>&1; step "backend B $i rc=$?"; grep "test result\|panicked" $R/backend-B-$i.log; done
timeout 120 .bin/B/cuda_l2 > $R/l2-B.log 2>&1; step "l2 B rc=$?"; grep "test result\|panicked" $R/l2-B.log
for i in 1 2 3; do for v in A B; do timeout 60 .bin/$v/engine $B > $R/plain-$v-$i.csv 2>$R/plain-$v-$i.err; step "plain $v $i $(tail -1 $R/plain-$v-$i.csv | cut -d, -f12,19,28)"; done; done
for v in A B; do timeout 60 .bin/$v/engine $B --spec mtp --draft-tokens 3 > $R/spec-$v.csv 2>$R/spec-$v.err; step "spec $v $(tail -1 $R/spec-$v.csv | cut -d, -f12,18,19,28)"; done
for v in A B; do timeout 90 .bin/$v/cuda_profile qwen3.6-35b-a3b 2048 64 4538.8 --timeline > $R/timeline-$v.md 2>$R/timeline-$v.err; step "timeline $v rc=$?"; grep "moe_route_stream\|moe_gate_up \|moe_down \|wall time" $R/timeline-$v.md | cut -c1-150; done
timeout 60 .bin/B/engine bench --backend cuda --preset dense-27b -pg 2048,384 -r 2 --warmup 1 --prefill-chunk 8192 --read-ceiling-gbs 4538.8 > $R/dense-B.csv 2>$R/dense-B.err; step "dense B $(tail -1 $R/dense-B.csv | cut -d, -f12,19,28)"
for v in A B; do if [ $(el) -lt 430 ]; then timeout 75 .bin/$v/cuda_kernels_bench > $R/kbench-$v.txt 2>&1; step "kbench $v rc=$?"; grep "moe\|o-proj" $R/kbench-$v.txt; fi; done
tar czf $OUT/r1.tgz -C $R .
step done
