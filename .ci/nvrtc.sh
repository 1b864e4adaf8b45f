#!/usr/bin/env bash
# Installs NVRTC 13.0 and the CUDA runtime headers from PyPI into .nvrtc/ so that
# `engine/tests/cuda_compile.rs` compiles every kernel in kernels/ on a machine without a GPU.
#
# Use:  source .ci/nvrtc.sh   (exports LD_LIBRARY_PATH and ABAB_CUDA_INCLUDE)
#   or: eval "$(.ci/nvrtc.sh)" (prints the export lines)
# NVRTC 13.0.88 is the compiler on the lent H200 (CUDA 13.0); the runtime wheel of the same
# release carries cuda_bf16.h and the headers it includes.
#
# The work runs in a subshell with its own strict options: sourcing this file leaves the
# calling shell's options (errexit, nounset, pipefail) as they were.

abab_nvrtc_exports() (
    set -euo pipefail
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    dest="$root/.nvrtc"
    nvrtc_version="13.0.88"
    runtime_version="13.0.88"

    if [ ! -e "$dest/nvidia/cu13/lib/libnvrtc.so.13" ] || [ ! -e "$dest/nvidia/cu13/include/cuda_bf16.h" ]; then
        python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$dest" --upgrade \
            "nvidia-cuda-nvrtc==$nvrtc_version" "nvidia-cuda-runtime==$runtime_version" >&2 || {
            echo "nvrtc.sh: pip could not install nvidia-cuda-nvrtc and nvidia-cuda-runtime $nvrtc_version into $dest: it needs PyPI" >&2
            exit 1
        }
    fi

    lib="$dest/nvidia/cu13/lib"
    include="$dest/nvidia/cu13/include"
    for f in "$lib/libnvrtc.so.13" "$include/cuda_bf16.h"; do
        if [ ! -e "$f" ]; then
            echo "nvrtc.sh: $f missing after the install; remove $dest and run again" >&2
            exit 1
        fi
    done

    echo "export LD_LIBRARY_PATH=\"$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
    echo "export ABAB_CUDA_INCLUDE=\"$include\""
)

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
    # Sourced: export into the calling shell, and fail the `source` (not the shell) on error.
    abab_nvrtc_lines="$(abab_nvrtc_exports)"
    abab_nvrtc_status=$?
    unset -f abab_nvrtc_exports
    if [ "$abab_nvrtc_status" -ne 0 ]; then
        unset abab_nvrtc_lines abab_nvrtc_status
        return 1
    fi
    eval "$abab_nvrtc_lines"
    echo "$abab_nvrtc_lines"
    unset abab_nvrtc_lines abab_nvrtc_status
else
    abab_nvrtc_exports
fi
