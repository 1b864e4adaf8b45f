//! Projections (kernels/gemv.cu, kernels/gemm.cu) and the LM head with argmax
//! (kernels/argmax.cu).

use anyhow::{ensure, Result};
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig};
use half::bf16;

use super::args::{dim, input, output, positions, MAX_T};
use super::Gpu;

/// Activation types a GEMV reads: fp32 or bf16.
pub trait GemvInput: cudarc::driver::DeviceRepr {
    const KERNEL: &'static str;
}
impl GemvInput for f32 {
    const KERNEL: &'static str = "gemv_f32";
}
impl GemvInput for bf16 {
    const KERNEL: &'static str = "gemv_bf16";
}

/// Rows per block of the LM head kernel: eight warps of four rows.
const ROWS_PER_BLOCK: usize = 32;
/// Rows per block of the GEMV, whose threads split the columns.
const GEMV_ROWS: usize = 4;

/// Threads of a block that splits `cols` columns in 16-byte chunks: a chunk per thread up
/// to 256 threads.
pub(crate) fn threads_for(cols: usize) -> u32 {
    (cols / 8).div_ceil(32).clamp(1, 8) as u32 * 32
}

fn check_cols(what: &str, cols: usize) -> Result<()> {
    ensure!(cols % 8 == 0 && cols > 0, "{what}: input size {cols} must be a positive multiple of 8 (16-byte weight rows)");
    Ok(())
}

/// Scratch of the two-pass LM head argmax, sized for a vocabulary and up to [`MAX_T`] positions.
pub struct ArgmaxScratch {
    vals: CudaSlice<f32>,
    idx: CudaSlice<i32>,
    blocks: usize,
}

impl ArgmaxScratch {
    pub fn new(gpu: &Gpu, vocab: usize) -> Result<Self> {
        let blocks = vocab.div_ceil(ROWS_PER_BLOCK);
        Ok(Self {
            vals: gpu.stream.alloc_zeros(MAX_T * blocks)?,
            idx: gpu.stream.alloc_zeros(MAX_T * blocks)?,
            blocks,
        })
    }
}

impl Gpu {
    /// y[t] = W x[t] (+ y[t] when `accumulate`) for t < `t` (1..=8): W [rows][cols] bf16,
    /// x [t][cols], y [t][rows] fp32. One read of W serves all positions.
    #[allow(clippy::too_many_arguments)]
    pub fn gemv<X: GemvInput>(&self, w: &impl DevicePtr<bf16>, x: &impl DevicePtr<X>, y: &mut impl DevicePtrMut<f32>, rows: usize, cols: usize, t: usize, accumulate: bool) -> Result<()> {
        positions(t)?;
        check_cols("gemv", cols)?;
        let w = input("gemv weight", w, rows * cols, &self.stream)?;
        let x = input("gemv input", x, t * cols, &self.stream)?;
        let y = output("gemv output", y, t * rows, &self.stream)?;
        let cfg = LaunchConfig { grid_dim: (rows.div_ceil(GEMV_ROWS) as u32, 1, 1), block_dim: (threads_for(cols), 1, 1), shared_mem_bytes: 0 };
        launch!(self, format!("{}_t{t}", X::KERNEL), cfg, &w, &x, &y, &dim("rows", rows)?, &dim("cols", cols)?, &i32::from(accumulate));
        Ok(())
    }

    /// Y = X W^T (+ Y when `accumulate`) for a prefill chunk of any `t`: X [t][cols] fp32,
    /// W [rows][cols] bf16, Y [t][rows] fp32. Tiled, fp32 accumulate.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm(&self, x: &impl DevicePtr<f32>, w: &impl DevicePtr<bf16>, y: &mut impl DevicePtrMut<f32>, rows: usize, cols: usize, t: usize, accumulate: bool) -> Result<()> {
        ensure!(t > 0 && rows > 0 && cols > 0, "gemm with an empty dimension (t {t}, rows {rows}, cols {cols})");
        let x = input("gemm input", x, t * cols, &self.stream)?;
        let w = input("gemm weight", w, rows * cols, &self.stream)?;
        let y = output("gemm output", y, t * rows, &self.stream)?;
        let cfg = LaunchConfig { grid_dim: (rows.div_ceil(64) as u32, t.div_ceil(64) as u32, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        launch!(self, "gemm_bf16", cfg, &x, &w, &y, &dim("t", t)?, &dim("rows", rows)?, &dim("cols", cols)?, &i32::from(accumulate));
        Ok(())
    }

    /// A projection of `t` positions: the GEMV for t <= 8 (decode, verify), else the GEMM
    /// (prefill chunks).
    #[allow(clippy::too_many_arguments)]
    pub fn project(&self, x: &impl DevicePtr<f32>, w: &impl DevicePtr<bf16>, y: &mut impl DevicePtrMut<f32>, rows: usize, cols: usize, t: usize, accumulate: bool) -> Result<()> {
        if t <= MAX_T && cols % 8 == 0 {
            self.gemv(w, x, y, rows, cols, t, accumulate)
        } else {
            self.gemm(x, w, y, rows, cols, t, accumulate)
        }
    }

    /// ids[t] = argmax over the vocabulary of W x[t] (lowest index on ties), for t < `t`
    /// (1..=8), without writing the logits: W [vocab][hidden] bf16, x [t][hidden] fp32.
    #[allow(clippy::too_many_arguments)]
    pub fn lm_head_argmax(&self, w: &impl DevicePtr<bf16>, x: &impl DevicePtr<f32>, scratch: &mut ArgmaxScratch, ids: &mut impl DevicePtrMut<i32>, vocab: usize, hidden: usize, t: usize) -> Result<()> {
        positions(t)?;
        check_cols("lm head", hidden)?;
        ensure!(scratch.blocks == vocab.div_ceil(ROWS_PER_BLOCK), "argmax scratch was sized for another vocabulary than {vocab}");
        let w = input("lm head weight", w, vocab * hidden, &self.stream)?;
        let x = input("lm head input", x, t * hidden, &self.stream)?;
        let vals = output("argmax scratch", &mut scratch.vals, 0, &self.stream)?;
        let idx = output("argmax scratch", &mut scratch.idx, 0, &self.stream)?;
        let ids = output("token ids", ids, t, &self.stream)?;
        let cfg = LaunchConfig { grid_dim: (scratch.blocks as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        launch!(self, format!("lm_head_argmax_t{t}"), cfg, &w, &x, &dim("vocab", vocab)?, &dim("hidden", hidden)?, &vals, &idx);
        let blocks = dim("blocks", scratch.blocks)?;
        let cfg = LaunchConfig { grid_dim: (t as u32, 1, 1), block_dim: (1024, 1, 1), shared_mem_bytes: 0 };
        launch!(self, "argmax_reduce", cfg, &vals, &idx, &blocks, &ids);
        Ok(())
    }

    /// ids[t] = argmax of logits[t][0..n) (lowest index on ties), for t < `t`.
    pub fn argmax(&self, logits: &impl DevicePtr<f32>, ids: &mut impl DevicePtrMut<i32>, n: usize, t: usize) -> Result<()> {
        let logits = input("logits", logits, t * n, &self.stream)?;
        let ids = output("token ids", ids, t, &self.stream)?;
        let cfg = LaunchConfig { grid_dim: (dim("t", t)? as u32, 1, 1), block_dim: (1024, 1, 1), shared_mem_bytes: 0 };
        launch!(self, "argmax_reduce", cfg, &logits, &0u64, &dim("n", n)?, &ids);
        Ok(())
    }
}
