#!/usr/bin/env bash
# The chain rows with the known stages also pulling up to 256 KB a block into the L2 ahead of
# their wait (ChainEarly::KnownToL2), after the chain test.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
timeout 150 .bin/cuda_kernels --test-threads=1 --nocapture graph::the_chain 2>&1 | grep -E "chain of|test result|panicked"
timeout 150 .bin/cuda_kernels_bench 2>&1 | sed -n '3,32p'
