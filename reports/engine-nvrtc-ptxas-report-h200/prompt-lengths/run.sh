set +e
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
R=/tmp/r4; mkdir -p $R
t0=$(date +%s); step() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
for pg in 4096,384 7680,384; do p=${pg%,*}; timeout 90 .bin/fix/engine bench --backend cuda --preset qwen3.6-35b-a3b -pg $pg -r 2 --warmup 1 --prefill-chunk 8192 --read-ceiling-gbs 4538.8 > $R/plain-p$p.csv 2>$R/plain-p$p.err; step "plain p$p $(tail -1 $R/plain-p$p.csv | cut -d, -f10,12,19,28)"; done
head -1 $R/plain-p4096.csv > $R/header.txt
tar czf $OUT/r4.tgz -C $R .
