//! RMSNorm, both kinds (kernels/rmsnorm.cu).

use anyhow::Result;
use cudarc::driver::{DevicePtr, DevicePtrMut, LaunchConfig};
use half::bf16;

use super::args::{dim, input, output};
use super::Gpu;

impl Gpu {
    /// `y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * (1 + w)` for `rows` rows of length `n`
    /// (the model's zero-centred norm; also q/k norms with rows = heads, n = head dim).
    pub fn rmsnorm(
        &self,
        x: &impl DevicePtr<f32>,
        w: &impl DevicePtr<bf16>,
        y: &mut impl DevicePtrMut<f32>,
        rows: usize,
        n: usize,
        eps: f32,
    ) -> Result<()> {
        self.rmsnorm_launch(x, w, None, y, rows, n, eps, 1.0)
    }

    /// The GDN output norm: `y[r] = w * rmsnorm(o[r]) * silu(z[r])`, weight not zero-centred.
    #[allow(clippy::too_many_arguments)] // one argument per kernel parameter
    pub fn rmsnorm_gated(
        &self,
        o: &impl DevicePtr<f32>,
        z: &impl DevicePtr<f32>,
        w: &impl DevicePtr<bf16>,
        y: &mut impl DevicePtrMut<f32>,
        rows: usize,
        n: usize,
        eps: f32,
    ) -> Result<()> {
        let z = input("gate z", z, rows * n, &self.stream)?;
        self.rmsnorm_launch(o, w, Some(z), y, rows, n, eps, 0.0)
    }

    #[allow(clippy::too_many_arguments)] // one argument per kernel parameter
    fn rmsnorm_launch(
        &self,
        x: &impl DevicePtr<f32>,
        w: &impl DevicePtr<bf16>,
        z: Option<u64>,
        y: &mut impl DevicePtrMut<f32>,
        rows: usize,
        n: usize,
        eps: f32,
        w_offset: f32,
    ) -> Result<()> {
        let x = input("rmsnorm input", x, rows * n, &self.stream)?;
        let w = input("rmsnorm weight", w, n, &self.stream)?;
        let y = output("rmsnorm output", y, rows * n, &self.stream)?;
        let z = z.unwrap_or(0);
        // A thread per 16-byte chunk (n a multiple of 4) or per value, up to 256.
        let lanes = if n.is_multiple_of(4) { n / 4 } else { n };
        let threads = (lanes.div_ceil(32) * 32).clamp(32, 256) as u32;
        let cfg = LaunchConfig {
            grid_dim: (dim("rows", rows)? as u32, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            self,
            "rmsnorm",
            cfg,
            &x,
            &w,
            &z,
            &y,
            &dim("n", n)?,
            &eps,
            &w_offset
        );
        Ok(())
    }
}
