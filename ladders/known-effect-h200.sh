#!/usr/bin/env bash
# The known-effect ladder on the lent H200 (ladders/known-effect-h200.toml), each step sized to
# one device call:
#   bash ladders/known-effect-h200.sh TAG STEP...
# STEP: tests (the pad's GPU tests), ladder (one ladder, tagged TAG).
# Built here and carried in .bin/ (docs/GPU.md): .bin/engine, .bin/runner, .bin/gpu-tests/,
# and the kernel cache .bin/xdg filled by `XDG_CACHE_HOME=.bin/xdg engine kernels` after
# `source .ci/nvrtc.sh` (carry .nvrtc/nvidia/cu13/include too: the cache is keyed by the
# header path). Ladder files and their side logs go to $OUT when it is set (a device call's
# output folder), else to raw/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tag=$1
shift
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export XDG_CACHE_HOME="$PWD/.bin/xdg"
[ -d .nvrtc/nvidia/cu13/include ] && export ABAB_CUDA_INCLUDE="$PWD/.nvrtc/nvidia/cu13/include"
out=${OUT:-raw}

for step in "$@"; do
    echo "== $step ($(date -u +%H:%M:%S))"
    case $step in
        tests)
            .bin/gpu-tests/cuda_kernels --ignored --exact graph::a_captured_pad_waits_the_length_written_after_capture
            .bin/gpu-tests/cuda_backend --ignored --nocapture --exact a_five_percent_pad_slows_the_decode_to_1_over_1_05
            ;;
        ladder)
            .bin/runner run ladders/known-effect-h200.toml --tag "$tag" --out "$out"
            ;;
        *) echo "unknown step $step" >&2; exit 2 ;;
    esac
done
