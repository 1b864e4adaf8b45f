//! The decode pad (kernels/pad.cu): the busy-wait that `ENGINE_DECODE_PAD_PCT` ends every
//! padded decode round with, a fraction of the round's own time ([`crate::pad`]), so that the
//! decode slows by a known share.

use std::time::Duration;

use anyhow::{Context, Result};
use cudarc::driver::{CudaSlice, LaunchConfig};

use super::args::{dim, output};
use super::Gpu;
use crate::pad::PadTally;

/// Distinct clock readings taken to find its step.
const TICKS: usize = 64;

/// One thread waits: the pad costs the device nothing but its time.
const ONE_THREAD: LaunchConfig = LaunchConfig {
    grid_dim: (1, 1, 1),
    block_dim: (1, 1, 1),
    shared_mem_bytes: 0,
};

/// The pad's state on the device, word by word as kernels/pad.cu names them (`PAD_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PadState {
    pub fraction: f64,
    pub round_start_ns: u64,
    /// When the previous pad ended; 0 before the first.
    pub previous_end_ns: u64,
    pub turnaround_ns: u64,
    /// The counts since the host last took them ([`PadState::tally`]).
    pub waited_ns: u64,
    pub rounds: u64,
    pub own_total_ns: u64,
    pub turnaround_total_ns: u64,
}

impl PadState {
    pub const WORDS: usize = 8;

    pub fn new(fraction: f64) -> Self {
        Self {
            fraction,
            ..Self::default()
        }
    }

    pub fn to_words(self) -> [u64; Self::WORDS] {
        [
            self.fraction.to_bits(),
            self.round_start_ns,
            self.previous_end_ns,
            self.turnaround_ns,
            self.waited_ns,
            self.rounds,
            self.own_total_ns,
            self.turnaround_total_ns,
        ]
    }

    pub fn from_words(w: &[u64]) -> Self {
        Self {
            fraction: f64::from_bits(w[0]),
            round_start_ns: w[1],
            previous_end_ns: w[2],
            turnaround_ns: w[3],
            waited_ns: w[4],
            rounds: w[5],
            own_total_ns: w[6],
            turnaround_total_ns: w[7],
        }
    }

    /// The counts in seconds.
    pub fn tally(&self) -> PadTally {
        PadTally {
            waited_seconds: self.waited_ns as f64 * 1e-9,
            own_seconds: self.own_total_ns as f64 * 1e-9,
            turnaround_seconds: self.turnaround_total_ns as f64 * 1e-9,
            rounds: self.rounds,
        }
    }

    /// The state with its counts taken: zero, the rest kept.
    pub fn counts_taken(self) -> Self {
        Self {
            waited_ns: 0,
            rounds: 0,
            own_total_ns: 0,
            turnaround_total_ns: 0,
            ..self
        }
    }
}

impl Gpu {
    /// Marks the start of a padded round in `state`.
    pub fn round_start(&self, state: &mut CudaSlice<u64>) -> Result<()> {
        let pad = output("decode pad state", state, PadState::WORDS, &self.stream)?;
        launch!(self, "round_start", ONE_THREAD, &pad);
        Ok(())
    }

    /// Spins on the device's clock, once the kernel before has finished, for the fraction
    /// `state` holds of the round's own time and turnaround, when the launch runs: a captured
    /// round replays the fraction written since.
    pub fn decode_pad(&self, state: &mut CudaSlice<u64>) -> Result<()> {
        let pad = output("decode pad state", state, PadState::WORDS, &self.stream)?;
        launch!(self, "decode_pad", ONE_THREAD, &pad);
        Ok(())
    }

    /// Writes `state` to the device, by a copy on the stream: the rounds queued before run
    /// with the old state and every round after with the new one.
    pub fn write_pad(&self, state: PadState, to: &mut CudaSlice<u64>) -> Result<()> {
        self.stream
            .memcpy_htod(&state.to_words(), to)
            .context("writing the decode pad's state to the GPU")
    }

    /// Reads the state back, once the rounds queued before have run.
    pub fn read_pad(&self, from: &CudaSlice<u64>) -> Result<PadState> {
        let words = self
            .stream
            .clone_dtoh(from)
            .context("reading the decode pad's state from the GPU")?;
        Ok(PadState::from_words(&words))
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
