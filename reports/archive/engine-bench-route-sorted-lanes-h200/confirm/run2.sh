set +e
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
R=/tmp/r; mkdir -p $R
B="bench --backend cuda --preset qwen3.6-35b-a3b -pg 2048,384 -r 2 --warmup 1 --prefill-chunk 8192 --read-ceiling-gbs 4538.8"
t0=$(date +%s); step() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
timeout 150 .bin/F/cuda_kernels > $R/kernels-F.log 2>&1; step "kernels F rc=$?"; grep "test result\|panicked" $R/kernels-F.log
timeout 120 .bin/F/cuda_backend > $R/backend-F.log 2>&1; step "backend F rc=$?"; grep "test result\|panicked" $R/backend-F.log
timeout 60 .bin/F/cuda_l2 > $R/l2-F.log 2>&1; step "l2 F rc=$?"; grep "test result" $R/l2-F.log
for i in 1 2; do for v in A F; do timeout 60 .bin/$v/engine $B > $R/plain-$v-$i.csv 2>$R/plain-$v-$i.err; step "plain $v $i $(tail -1 $R/plain-$v-$i.csv | cut -d, -f12,19,28)"; done; done
timeout 60 .bin/F/engine $B --spec mtp --draft-tokens 3 > $R/spec-F.csv 2>$R/spec-F.err; step "spec F $(tail -1 $R/spec-F.csv | cut -d, -f12,18,19,28)"
timeout 90 .bin/F/cuda_profile qwen3.6-35b-a3b 2048 64 4538.8 --timeline > $R/timeline-F.md 2>$R/timeline-F.err; step "timeline F rc=$?"; grep "moe_route_stream\|wall time" $R/timeline-F.md | cut -c1-150
for i in 1 2; do rm -f ~/.cache/abab/kernels/moe-*.ptx; timeout 60 .bin/A/cuda_kernels > $R/kernels-A-cold-$i.log 2>&1; step "kernels A cold moe $i rc=$?"; grep "test result" $R/kernels-A-cold-$i.log; grep -c "ptxas reported the entries" $R/kernels-A-cold-$i.log; done
rm -f ~/.cache/abab/kernels/moe-*.ptx; timeout 60 .bin/F/cuda_kernels > $R/kernels-F-cold.log 2>&1; step "kernels F cold moe rc=$?"; grep "test result" $R/kernels-F-cold.log
tar czf $OUT/r2.tgz -C $R .
step done
