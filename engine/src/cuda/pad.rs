//! The decode pad (kernels/pad.cu): the busy-wait that `ENGINE_DECODE_PAD_PCT` ends every timed
//! decode round with, so that the decode slows by a known share.

use anyhow::Result;
use cudarc::driver::{CudaSlice, LaunchConfig};

use super::args::input;
use super::Gpu;

/// One thread waits: the pad costs the device nothing but its time.
const ONE_THREAD: LaunchConfig = LaunchConfig {
    grid_dim: (1, 1, 1),
    block_dim: (1, 1, 1),
    shared_mem_bytes: 0,
};

impl Gpu {
    /// Spins on the device's clock, once the kernel before has finished, for the nanoseconds
    /// `pad_ns` holds when the launch runs: a captured round replays the length written since.
    pub fn decode_pad(&self, pad_ns: &CudaSlice<u64>) -> Result<()> {
        let pad = input("decode pad length", pad_ns, 1, &self.stream)?;
        launch!(self, "decode_pad", ONE_THREAD, &pad);
        Ok(())
    }
}
