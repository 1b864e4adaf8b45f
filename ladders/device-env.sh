# The environment of a device call, sourced by ladders/h200.sh and ladders/l2-sweep-h200.sh
# (docs/GPU.md): the repository root as the working directory, the CUDA driver's libraries,
# the kernel cache carried in .bin/xdg with the headers it is keyed by, and `out`, where
# ladder files and logs go: $OUT when set (a device call's output folder), else raw/.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export XDG_CACHE_HOME="$PWD/.bin/xdg"
if [ -d .nvrtc/nvidia/cu13/include ]; then
    export ABAB_CUDA_INCLUDE="$PWD/.nvrtc/nvidia/cu13/include"
fi
out=${OUT:-raw}

# A device call brings back at most 8 files from $OUT (docs/GPU.md): on exit the side logs and
# the planned specs there go into one archive, $OUT/side-logs.tar (appended to by each script
# of the call), so that every ladder file comes back.
bundle_side_logs() {
    (
        cd "$OUT" || exit 0
        shopt -s nullglob
        set -- *.stderr.log *.toml
        [ $# -gt 0 ] && tar -rf side-logs.tar "$@" && rm -f "$@"
    ) || true
}
if [ -n "${OUT:-}" ]; then
    trap bundle_side_logs EXIT
fi
