//! The decode pad (kernels/pad.cu): the busy-wait that `ENGINE_DECODE_PAD_PCT` ends every timed
//! decode round with, so that the decode slows by a known share.

use std::time::Duration;

use anyhow::{Context, Result};
use cudarc::driver::{CudaSlice, LaunchConfig};

use super::args::{dim, input, output};
use super::Gpu;

/// Distinct clock readings taken to find its step.
const TICKS: usize = 64;

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

    /// The step of `%globaltimer`, the clock the pad spins on: the smallest advance between
    /// two distinct readings of [`TICKS`] in a row.
    pub fn globaltimer_step(&self) -> Result<Duration> {
        let mut ticks = self
            .stream
            .alloc_zeros::<u64>(TICKS + 1)
            .context("allocating the clock readings")?;
        let out = output("clock readings", &mut ticks, TICKS + 1, &self.stream)?;
        let n = dim("readings", TICKS)?;
        launch!(self, "globaltimer_ticks", ONE_THREAD, &out, &n);
        let readings = self.stream.clone_dtoh(&ticks)?;
        smallest_step(&readings).context("the device clock did not advance")
    }
}

/// The smallest advance between consecutive readings, `None` where no two differ.
fn smallest_step(readings: &[u64]) -> Option<Duration> {
    readings
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .filter(|&ns| ns > 0)
        .min()
        .map(Duration::from_nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_is_the_smallest_advance_between_distinct_readings() {
        let us = |n| Some(Duration::from_nanos(n));
        assert_eq!(smallest_step(&[1000, 2000, 3000, 5000]), us(1000));
        assert_eq!(smallest_step(&[0, 32, 96, 128]), us(32));
        assert_eq!(smallest_step(&[7, 7, 7]), None);
        assert_eq!(smallest_step(&[5]), None);
    }
}
