//! The device's measured limits (kernels/ceiling.cu): the read ceiling, which the GEMV and the
//! whole decode step are quoted against, and what a decode stage pays to wait for the one
//! before it, which bounds any launch structure.

use anyhow::{ensure, Context, Result};
use cudarc::driver::LaunchConfig;
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
    /// cancels). Each the median of 10 timed runs. The barrier needs every block resident at
    /// once: run it with the device to itself.
    pub fn measure_stage_sync_us(&self) -> Result<StageSync> {
        const LAUNCHES: usize = 64;
        const ROUNDS: i32 = 256;
        let blocks = self.info.sm_count as usize;
        let cfg = LaunchConfig { grid_dim: (self.info.sm_count, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
        let mut data = self.stream.alloc_zeros::<u32>(2 * blocks).context("allocating the handoff values")?;
        let mut count = self.stream.alloc_zeros::<u32>(1).context("allocating the barrier counter")?;
        let a = super::args::output("handoff values", &mut data, 2 * blocks, &self.stream)?;
        let b = a + 4 * blocks as u64;
        let chain = |handoff: bool| -> Result<f64> {
            let graph = self.capture(|gpu| {
                for i in 0..LAUNCHES {
                    let (from, to) = match (handoff, i % 2) {
                        (false, _) => (0u64, 0u64),
                        (true, 0) => (a, b),
                        (true, _) => (b, a),
                    };
                    launch!(gpu, "stage_step", cfg, &from, &to);
                }
                Ok(())
            })?;
            let ms = self.time_median_ms(2, 10, || graph.launch().context("launching the stage graph"))?;
            Ok(ms * 1e3 / LAUNCHES as f64)
        };
        let mut barriers = |handoff: bool| -> Result<f64> {
            let data = if handoff { a } else { 0 };
            let mut timed = |rounds: i32| {
                self.time_median_ms(2, 10, || {
                    self.stream.memset_zeros(&mut count)?;
                    let c = super::args::output("barrier counter", &mut count, 1, &self.stream)?;
                    launch!(self, "grid_barriers", cfg, &c, &data, &rounds);
                    Ok(())
                })
            };
            let (none, many) = (timed(0)?, timed(ROUNDS)?);
            Ok((many - none) * 1e3 / ROUNDS as f64)
        };
        Ok(StageSync { launch_us: chain(false)?, launch_handoff_us: chain(true)?, barrier_us: barriers(false)?, barrier_handoff_us: barriers(true)? })
    }
}

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
