set +e
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
K=.bin/diag/cuda_kernels; R=/tmp/r; mkdir -p $R
t0=$(date +%s); step() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
run() { n=$1; shift; env "$@" > $R/$n.log 2>&1; step "$n rc=$?"; grep -h "gpu:\|again:\|test result" $R/$n.log | cut -c1-200; }
run cold-gpu-first XDG_CACHE_HOME=/tmp/c1 timeout 200 $K diag::diag_gpu_first --exact --nocapture
run warm-gpu-first XDG_CACHE_HOME=/tmp/c1 timeout 100 $K diag::diag_gpu_first --exact --nocapture
run warm-nvrtc-first XDG_CACHE_HOME=/tmp/c1 timeout 100 $K diag::diag_nvrtc_first --exact --nocapture
run warm-bindnow LD_BIND_NOW=1 XDG_CACHE_HOME=/tmp/c1 timeout 100 $K diag::diag_gpu_first --exact --nocapture
run warm-resources XDG_CACHE_HOME=/tmp/c1 timeout 150 $K resources:: --nocapture
N=$(ls /usr/local/cuda/lib64/libnvrtc.so.* | head -1); J=$(ldconfig -p | grep ptxjitcompiler | head -1 | awk '{print $NF}')
echo "nvrtc=$N jit=$J"; ls -la /usr/local/cuda/lib64/libnvrtc* $J
nm -D --defined-only $N | awk '{print $NF}' | sort -u > $R/nvrtc.sym; nm -D --defined-only $J | awk '{print $NF}' | sort -u > $R/jit.sym
wc -l $R/*.sym; comm -12 $R/nvrtc.sym $R/jit.sym | head -30
nvidia-smi --query-gpu=driver_version --format=csv
tar czf $OUT/r.tgz -C $R .
