//! The device's measured limits (kernels/ceiling.cu): the read ceiling, which the GEMV and the
//! whole decode step are quoted against, and what a decode stage pays to wait for the one
//! before it, which bounds any launch structure.

use anyhow::{ensure, Context, Result};
use cudarc::driver::{CudaSlice, LaunchConfig};
use half::bf16;

use super::synthetic::synthetic_key;
use super::Gpu;

impl Gpu {
    /// Read bandwidth in GB/s (1e9 B/s) of a float4 grid-stride read over `bytes` of non-zero
    /// data: the median of 10 timed launches after 2 warm-up launches. Use several times the
    /// L2 size (GPU.md measured with 4 GiB).
    pub fn measure_read_ceiling_gbs(&self, bytes: usize) -> Result<f64> {
        ensure!(bytes >= 16 && bytes.is_multiple_of(16), "read ceiling buffer of {bytes} B: give a positive multiple of 16");
        let mut data = self.stream.alloc_zeros::<bf16>(bytes / 2).with_context(|| format!("allocating {bytes} B for the read ceiling"))?;
        // Non-zero data: zeros can be compressed and read faster than weights.
        self.fill_synthetic(&mut data, 1, synthetic_key("read_ceiling"), 1.0, 0.5)?;
        let blocks = self.info.sm_count * 4;
        let mut sink = self.stream.alloc_zeros::<f32>(blocks as usize).context("allocating the read ceiling sink")?;
        let n = (bytes / 16) as u64;
        let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (512, 1, 1), shared_mem_bytes: 0 };
        let ms = self.time_median_ms(2, 10, || {
            let data = super::args::input("read ceiling data", &data, 0, &self.stream)?;
            let sink = super::args::output("read ceiling sink", &mut sink, 0, &self.stream)?;
            launch!(self, "read_ceiling", cfg, &data, &n, &sink);
            Ok(())
        })?;
        Ok(bytes as f64 / (ms * 1e-3) / 1e9)
    }

    /// What one decode stage pays to wait for the one before, in µs, with one 128-thread
    /// block per SM, each way with and without a handoff (after its wait, each block reads a
    /// value another block wrote before it): a dependent launch (kernels that only wait, or
    /// hand off, in a graph of 64, with dependent launch as [`super::GpuOptions`] say), and a
    /// grid-wide barrier inside one launch (256 barriers against none, so the launch itself
    /// cancels). Each the median of 10 timed runs. The handoffs check what they read, so a
    /// wait that let a block through early is an error, not a fast number. The barrier needs
    /// every block resident at once: run it with the device to itself.
    pub fn measure_stage_sync_us(&self) -> Result<StageSync> {
        let mut values = self.stream.alloc_zeros::<u32>(2 * self.info.sm_count as usize).context("allocating the handoff values")?;
        Ok(StageSync {
            launch_us: self.launch_chain_us(None)?,
            launch_handoff_us: self.launch_chain_us(Some(&mut values))?,
            barrier_us: self.grid_barrier_us(None)?,
            barrier_handoff_us: self.grid_barrier_us(Some(&mut values))?,
        })
    }

    /// The shape both ways of waiting are measured at: one block of 128 threads per SM.
    fn stage_config(&self) -> LaunchConfig {
        LaunchConfig { grid_dim: (self.info.sm_count, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 }
    }

    /// µs a launch of `stage_step` costs in a graph of [`STAGE_LAUNCHES`]. With `handoff` (two
    /// values a block, zeros), launches alternate between its halves, each reading the other,
    /// and every value must end at the number of launches run.
    fn launch_chain_us(&self, mut handoff: Option<&mut CudaSlice<u32>>) -> Result<f64> {
        let blocks = self.info.sm_count as usize;
        let halves = match handoff.as_deref_mut() {
            Some(v) => {
                let a = super::args::output("handoff values", v, 2 * blocks, &self.stream)?;
                [a, a + 4 * blocks as u64]
            }
            None => [0, 0],
        };
        let graph = self.capture(|gpu| {
            for i in 0..STAGE_LAUNCHES {
                let (from, to) = (halves[i % 2], halves[(i + 1) % 2]);
                launch!(gpu, "stage_step", self.stage_config(), &from, &to);
            }
            Ok(())
        })?;
        let ms = self.time_median_ms(STAGE_WARMUP, STAGE_REPS, || graph.launch().context("launching the stage graph"))?;
        if let Some(v) = handoff {
            let last = self.stream.clone_dtoh(&v.slice(..blocks)).context("reading the handoff values back")?;
            self.synchronize()?;
            let launches = ((STAGE_WARMUP + STAGE_REPS) * STAGE_LAUNCHES) as u32;
            ensure!(last.iter().all(|&n| n == launches), "a dependent launch read the launch before it too early: after {launches} launches the values are {last:?}");
        }
        Ok(ms * 1e3 / STAGE_LAUNCHES as f64)
    }

    /// µs a grid-wide barrier costs inside one `grid_barriers` launch ([`STAGE_ROUNDS`] of them
    /// against none). With `handoff` (two values a block), no block may see another's value
    /// from an older round after a barrier.
    fn grid_barrier_us(&self, mut handoff: Option<&mut CudaSlice<u32>>) -> Result<f64> {
        let blocks = self.info.sm_count as usize;
        let slots = match handoff.as_deref_mut() {
            Some(v) => super::args::output("barrier slots", v, 2 * blocks, &self.stream)?,
            None => 0,
        };
        let mut count = self.stream.alloc_zeros::<u32>(1).context("allocating the barrier counter")?;
        let mut timed = |rounds: i32| {
            self.time_median_ms(STAGE_WARMUP, STAGE_REPS, || {
                self.stream.memset_zeros(&mut count)?;
                if let Some(v) = handoff.as_deref_mut() {
                    self.stream.memset_zeros(v)?;
                }
                let c = super::args::output("barrier counter", &mut count, 1, &self.stream)?;
                launch!(self, "grid_barriers", self.stage_config(), &c, &slots, &rounds);
                Ok(())
            })
        };
        let (none, many) = (timed(0)?, timed(STAGE_ROUNDS)?);
        if let Some(v) = handoff {
            let early = self.stream.clone_dtoh(&v.slice(blocks..)).context("reading the barrier check back")?;
            self.synchronize()?;
            ensure!(early.iter().all(|&n| n == 0), "the grid barrier let blocks through before every block had arrived (rounds seen early, per block: {early:?})");
        }
        Ok((many - none) * 1e3 / STAGE_ROUNDS as f64)
    }
}

/// Launches in the graph that [`Gpu::measure_stage_sync_us`] times, barriers in its one
/// launch, and the runs before and of each median.
const STAGE_LAUNCHES: usize = 64;
const STAGE_ROUNDS: i32 = 256;
const STAGE_WARMUP: usize = 2;
const STAGE_REPS: usize = 10;

/// What a decode stage pays to wait for the one before ([`Gpu::measure_stage_sync_us`]), µs.
#[derive(Debug, Clone, Copy)]
pub struct StageSync {
    /// A dependent launch in a graph.
    pub launch_us: f64,
    /// The same, each block reading a value of the launch before.
    pub launch_handoff_us: f64,
    /// A grid-wide barrier inside one launch, one block per SM.
    pub barrier_us: f64,
    /// The same, each block reading a value written before the barrier.
    pub barrier_handoff_us: f64,
}
