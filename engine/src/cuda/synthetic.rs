//! Synthetic weights generated on the device (kernels/synthetic.cu).

use anyhow::Result;
use cudarc::driver::{DevicePtrMut, LaunchConfig};
use half::bf16;

use super::args::output;
use super::Gpu;

/// The per-tensor key of the synthetic hash: the first 8 bytes (little-endian) of
/// blake3(tensor name), as on the CPU backend.
pub fn synthetic_key(tensor_name: &str) -> u64 {
    let hash = blake3::hash(tensor_name.as_bytes());
    u64::from_le_bytes(
        hash.as_bytes()[..8]
            .try_into()
            .expect("blake3 hashes are 32 bytes"),
    )
}

impl Gpu {
    /// Fills all of `out` with `offset + scale * (2u - 1)`, u uniform in [0, 1) from the hash
    /// of (seed, key, index), rounded to bf16 (nearest even). Bit-identical to the CPU backend.
    pub fn fill_synthetic(
        &self,
        out: &mut impl DevicePtrMut<bf16>,
        seed: u64,
        key: u64,
        offset: f32,
        scale: f32,
    ) -> Result<()> {
        let n = out.len() as u64;
        let ptr = output("synthetic weights", out, 0, &self.stream)?;
        let blocks = (self.info.sm_count * 8).min(n.div_ceil(256).max(1) as u32);
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            self,
            "synthetic_fill_bf16",
            cfg,
            &ptr,
            &n,
            &seed,
            &key,
            &offset,
            &scale
        );
        Ok(())
    }
}
