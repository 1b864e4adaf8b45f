//! Embedding gather (kernels/embed.cu).

use anyhow::{ensure, Result};
use cudarc::driver::{DevicePtr, DevicePtrMut, LaunchConfig};
use half::bf16;

use super::args::{dim, input, output};
use super::Gpu;

impl Gpu {
    /// `out[t] = table[ids[t]]` as fp32 for t < `t`. table `[vocab][hidden]`; the ids are read on
    /// the device and must be < vocab.
    pub fn embed(
        &self,
        table: &impl DevicePtr<bf16>,
        ids: &impl DevicePtr<i32>,
        out: &mut impl DevicePtrMut<f32>,
        t: usize,
        vocab: usize,
        hidden: usize,
    ) -> Result<()> {
        ensure!(
            hidden.is_multiple_of(8),
            "embedding hidden size {hidden} must be a multiple of 8"
        );
        let table = input("embedding table", table, vocab * hidden, &self.stream)?;
        let ids = input("token ids", ids, t, &self.stream)?;
        let out = output("embedding output", out, t * hidden, &self.stream)?;
        let blocks = (hidden / 8).div_ceil(256) as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks, dim("positions", t)? as u32, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            self,
            "embed_gather",
            cfg,
            &table,
            &ids,
            &out,
            &dim("hidden", hidden)?
        );
        Ok(())
    }
}
