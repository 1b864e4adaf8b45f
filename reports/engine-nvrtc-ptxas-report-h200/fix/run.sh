set +e
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
R=/tmp/r3; mkdir -p $R
B="bench --backend cuda --preset qwen3.6-35b-a3b -pg 2048,384 -r 2 --warmup 1 --prefill-chunk 8192 --read-ceiling-gbs 4538.8"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }; step() { echo "[$(el)s] $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu --format=csv > $R/gpu.csv 2>&1
ls ~/.nv/ComputeCache 2>&1 | head -3 > $R/compute-cache-at-start.txt
timeout 60 .bin/nofix/cuda_compile ptxas_reports > $R/compile-nofix.log 2>&1; step "compile nofix rc=$?"; grep "test result\|panicked" -A1 $R/compile-nofix.log | head -4
timeout 200 .bin/fix/cuda_compile > $R/compile-fix.log 2>&1; step "compile fix rc=$?"; grep "test result\|panicked" $R/compile-fix.log
for i in 1 2; do timeout 150 .bin/fix/cuda_kernels > $R/kernels-$i.log 2>&1; step "kernels $i rc=$?"; grep "test result\|panicked\|kernels:" $R/kernels-$i.log; done
timeout 60 .bin/fix/cuda_kernels diag:: --nocapture --test-threads=1 > $R/kernels-diag.log 2>&1; step "diag rc=$?"; grep -c "Ok(" $R/kernels-diag.log; grep -c "Err(" $R/kernels-diag.log
timeout 120 .bin/fix/cuda_backend > $R/backend.log 2>&1; step "backend rc=$?"; grep "test result\|panicked" $R/backend.log
timeout 120 .bin/fix/cuda_l2 > $R/l2.log 2>&1; step "l2 rc=$?"; grep "test result\|panicked" $R/l2.log
for i in 1 2; do timeout 60 .bin/fix/engine $B > $R/plain-$i.csv 2>$R/plain-$i.err; step "plain $i $(tail -1 $R/plain-$i.csv | cut -d, -f12,19,28)"; done
timeout 60 .bin/fix/engine $B --spec mtp --draft-tokens 3 > $R/spec.csv 2>$R/spec.err; step "spec $(tail -1 $R/spec.csv | cut -d, -f12,18,19,28)"
if [ $(el) -lt 480 ]; then timeout 75 .bin/fix/cuda_kernels_bench > $R/kbench.txt 2>&1; step "kbench rc=$?"; grep "moe\|o-proj" $R/kbench.txt | head; fi
tar czf $OUT/r3.tgz -C $R .
step done
