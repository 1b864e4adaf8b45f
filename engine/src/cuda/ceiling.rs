//! The measured read ceiling (kernels/ceiling.cu): what the GEMV and the whole decode step
//! are quoted against.

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
}
