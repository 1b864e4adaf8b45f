#!/usr/bin/env bash
# The L2 sweep on the lent H200, step by step, each step sized to one device call:
#   bash ladders/l2-sweep-h200.sh TAG STEP...
# STEP: tests (the L2 and backend GPU tests), mtp, plain (one ladder each of
# ladders/l2-sweep-{mtp,plain}-h200.toml, tagged TAG), builds (ladders/l2-off-builds-h200.toml).
# Built here and carried in .bin/ (docs/GPU.md): .bin/engine, .bin/before/engine (ff7c1fb),
# .bin/after/engine, .bin/runner, .bin/gpu-tests/, and the kernel cache .bin/xdg filled by
# `XDG_CACHE_HOME=.bin/xdg engine kernels` after `source .ci/nvrtc.sh` (carry
# .nvrtc/nvidia/cu13/include too: the cache is keyed by the header path). Ladder files and
# their side logs go to $OUT when it is set (a device call's output folder), else to raw/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device-env.sh"
tag=$1
shift

for step in "$@"; do
    echo "== $step ($(date -u +%H:%M:%S))"
    case $step in
        tests)
            .bin/gpu-tests/cuda_l2 --ignored --test-threads 1
            .bin/gpu-tests/cuda_backend --ignored --skip timeline
            ;;
        mtp | plain)
            .bin/runner run "ladders/l2-sweep-$step-h200.toml" --tag "$tag" --out "$out"
            ;;
        builds)
            .bin/runner run ladders/l2-off-builds-h200.toml --tag "$tag" --out "$out"
            ;;
        *) echo "unknown step $step" >&2; exit 2 ;;
    esac
done
