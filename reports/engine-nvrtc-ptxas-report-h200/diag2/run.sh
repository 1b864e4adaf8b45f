set +e
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
K=.bin/diag/cuda_kernels; R=/tmp/r2; mkdir -p $R
t0=$(date +%s); step() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
run() { n=$1; shift; env "$@" > $R/$n.log 2>&1; step "$n rc=$?"; grep -h "gpu:\|again:\|test result" $R/$n.log | cut -c1-120; }
ls -la ~ ~/.nv ~/.nv/* 2>&1 | head -30; echo HOME=$HOME
find / -xdev -newer .bin/diag/run.sh -type f -not -path '/proc/*' -not -path '/sys/*' -not -path '/tmp/r*' 2>/dev/null | grep -v "^/tmp/c1/abab" | head -40
run warm-c1 XDG_CACHE_HOME=/tmp/c1 timeout 100 $K diag::diag_nvrtc_first --exact --nocapture
run nocache CUDA_CACHE_DISABLE=1 XDG_CACHE_HOME=/tmp/c1 timeout 100 $K diag::diag_nvrtc_first --exact --nocapture
run newpath CUDA_CACHE_PATH=/tmp/cc XDG_CACHE_HOME=/tmp/c1 timeout 100 $K diag::diag_nvrtc_first --exact --nocapture
run newpath-again CUDA_CACHE_PATH=/tmp/cc XDG_CACHE_HOME=/tmp/c1 timeout 100 $K diag::diag_nvrtc_first --exact --nocapture
ls -laR /tmp/cc 2>&1 | head -20
tar czf $OUT/r2.tgz -C $R .
