//! Projections (kernels/gemv.cu; prefill GEMMs through cuBLAS with kernels/gemm.cu), the LM
//! head with argmax and the plain step's token feed that follows it (kernels/argmax.cu).

use anyhow::{anyhow, ensure, Context, Result};
use cudarc::cublas::{result::gemm_ex, sys as blas_sys, CudaBlas};
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
/// Rows per block of the GEMV, whose threads split the columns (kernels/common.cuh `GEMV_ROWS`).
pub(crate) const GEMV_ROWS: usize = 4;
/// 16-byte chunks of each of the block's rows that a GEMV thread loads in one batch
/// (kernels/common.cuh `GEMV_BATCH`).
const GEMV_BATCH: usize = 2;

/// Threads of a block that splits `cols` columns in 16-byte chunks: as many warps as make
/// each thread's chunks one batch of loads (one trip to memory), up to 8. Fewer threads with
/// a full batch each beat more threads with half a batch (docs/journal.md, ninth pass).
fn threads_for(cols: usize) -> u32 {
    (cols / 8).div_ceil(32 * GEMV_BATCH).clamp(1, 8) as u32 * 32
}

fn check_cols(what: &str, cols: usize) -> Result<()> {
    ensure!(
        cols.is_multiple_of(8) && cols > 0,
        "{what}: input size {cols} must be a positive multiple of 8 (16-byte weight rows)"
    );
    Ok(())
}

/// The cuBLAS handle and the bf16 split of the activations of the prefill GEMMs, made on the
/// first GEMM and grown to the largest chunk.
#[derive(Default)]
pub(crate) struct Blas {
    handle: Option<CudaBlas>,
    split: Option<CudaSlice<bf16>>,
}

/// An RMSNorm folded into the projections that read its output, `x/rms·(1+w)`: the kernels
/// normalise the input as they read it, so the norm costs no launch of its own.
#[derive(Clone, Copy)]
pub struct FoldedNorm<'a> {
    /// The norm's weights, one per input column (bf16).
    pub w: &'a CudaSlice<bf16>,
    pub eps: f32,
}

impl FoldedNorm<'_> {
    /// The kernel to launch: `base`, or its `_norm` variant, which folds the norm in.
    pub(crate) fn kernel(norm: Option<Self>, base: &str) -> String {
        match norm {
            Some(_) => format!("{base}_norm"),
            None => base.to_string(),
        }
    }

    /// The weights' device address (0: no norm) and eps, as both variants take them.
    pub(crate) fn args(
        norm: Option<Self>,
        cols: usize,
        stream: &cudarc::driver::CudaStream,
    ) -> Result<(u64, f32)> {
        match norm {
            Some(n) => Ok((input("folded norm weight", n.w, cols, stream)?, n.eps)),
            None => Ok((0, 0.0)),
        }
    }
}

/// Most projections one fused GEMV launch takes (`gemv_multi_t*`).
pub const MAX_FUSED: usize = 4;

/// Scratch of the two-pass LM head argmax, sized for a vocabulary and up to `MAX_T` positions.
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
    /// `y[t] = W x[t]` (`+ y[t]` when `accumulate`) for t < `t` (1..=8): W `[rows][cols]` bf16,
    /// x `[t][cols]`, y `[t][rows]` fp32. One read of W serves all positions.
    #[allow(clippy::too_many_arguments)] // one argument per kernel parameter
    pub fn gemv<X: GemvInput>(
        &self,
        w: &impl DevicePtr<bf16>,
        x: &impl DevicePtr<X>,
        y: &mut impl DevicePtrMut<f32>,
        rows: usize,
        cols: usize,
        t: usize,
        accumulate: bool,
    ) -> Result<()> {
        positions(t)?;
        check_cols("gemv", cols)?;
        let w = input("gemv weight", w, rows * cols, &self.stream)?;
        let x = input("gemv input", x, t * cols, &self.stream)?;
        let y = output("gemv output", y, t * rows, &self.stream)?;
        let cfg = LaunchConfig {
            grid_dim: (rows.div_ceil(GEMV_ROWS) as u32, 1, 1),
            block_dim: (threads_for(cols), 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            self,
            format!("{}_t{t}", X::KERNEL),
            cfg,
            &w,
            &x,
            &y,
            &dim("rows", rows)?,
            &dim("cols", cols)?,
            &i32::from(accumulate),
            &self.early_arg()
        );
        Ok(())
    }

    /// Y = X W^T (+ Y when `accumulate`) for a prefill chunk of any `t`: X `[t][cols]` fp32,
    /// W `[rows][cols]` bf16, Y `[t][rows]` fp32. On the tensor cores through cuBLAS: X split into
    /// three bf16 terms (kernels/gemm.cu), three bf16 GEMMs accumulated in fp32, smallest first.
    #[allow(clippy::too_many_arguments)] // gemv's parameters, for prefill chunks
    pub fn gemm(
        &self,
        x: &impl DevicePtr<f32>,
        w: &impl DevicePtr<bf16>,
        y: &mut impl DevicePtrMut<f32>,
        rows: usize,
        cols: usize,
        t: usize,
        accumulate: bool,
    ) -> Result<()> {
        ensure!(
            t > 0 && rows > 0 && cols > 0,
            "gemm with an empty dimension (t {t}, rows {rows}, cols {cols})"
        );
        let n = t * cols;
        let xp = input("gemm input", x, n, &self.stream)?;
        let wp = input("gemm weight", w, rows * cols, &self.stream)?;
        let yp = output("gemm output", y, t * rows, &self.stream)?;
        let mut blas = self
            .blas
            .lock()
            .map_err(|_| anyhow!("the cuBLAS state was poisoned by a panic"))?;
        if blas.handle.is_none() {
            ensure!(unsafe { blas_sys::is_culib_present() }, "cuBLAS (libcublas.so.13) was not found: add the CUDA toolkit's lib64 (e.g. /usr/local/cuda/lib64) to LD_LIBRARY_PATH");
            blas.handle = Some(
                CudaBlas::new(self.stream.clone())
                    .map_err(|e| anyhow!("creating a cuBLAS handle: {e:?}"))?,
            );
        }
        if blas.split.as_ref().is_none_or(|s| s.len() < 3 * n) {
            blas.split = Some(self.stream.alloc_zeros(3 * n).with_context(|| {
                format!("allocating the {t}×{cols} bf16 split of a prefill GEMM input")
            })?);
        }
        let split = output(
            "gemm split input",
            blas.split.as_mut().expect("allocated above"),
            3 * n,
            &self.stream,
        )?;
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(256).min(8192) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(self, "split_bf16x3", cfg, &xp, &split, &(n as i64));
        let handle = *blas.handle.as_ref().expect("created above").handle();
        let (m, nn, k) = (dim("rows", rows)?, dim("t", t)?, dim("cols", cols)?);
        let one = 1.0f32;
        // Column-major view: Y^T [rows][t] = W^T' (W stored [rows][cols]) x X^T [cols][t].
        for (i, term) in [2u64, 1, 0].into_iter().enumerate() {
            let beta: f32 = if i == 0 && !accumulate { 0.0 } else { 1.0 };
            let xs = split + term * (n as u64) * 2;
            unsafe {
                gemm_ex(
                    handle,
                    blas_sys::cublasOperation_t::CUBLAS_OP_T,
                    blas_sys::cublasOperation_t::CUBLAS_OP_N,
                    m,
                    nn,
                    k,
                    (&one as *const f32).cast(),
                    wp as *const _,
                    blas_sys::cudaDataType::CUDA_R_16BF,
                    k,
                    xs as *const _,
                    blas_sys::cudaDataType::CUDA_R_16BF,
                    k,
                    (&beta as *const f32).cast(),
                    yp as *mut _,
                    blas_sys::cudaDataType::CUDA_R_32F,
                    m,
                    blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }
            .map_err(|e| anyhow!("cuBLAS GemmEx {rows}×{cols} over {t} positions: {e:?}"))?;
        }
        Ok(())
    }

    /// Several projections of one input, `ys[i][t] = Ws[i] x[t]`, as one GEMV launch for
    /// t <= 8 (each weight `[rows_i][cols]`, rows a multiple of 4, at most [`MAX_FUSED`]);
    /// one projection after another otherwise. With `norm`, the projections read
    /// `rmsnorm(x)` instead (one launch only: see [`Gpu::can_fuse`]).
    pub fn project_many<W: DevicePtr<bf16>>(
        &self,
        x: &impl DevicePtr<f32>,
        cols: usize,
        t: usize,
        parts: &mut [(&W, usize, &mut CudaSlice<f32>)],
        norm: Option<FoldedNorm>,
    ) -> Result<()> {
        let fused = Self::can_fuse(cols, t, parts.iter().map(|(_, rows, _)| *rows));
        ensure!(fused || norm.is_none(), "a norm folded into {} projections of {cols} columns over {t} positions: only one GEMV launch (t <= {MAX_T}, at most {MAX_FUSED} parts of a multiple of {GEMV_ROWS} rows) can fold it", parts.len());
        if !fused {
            for (w, rows, y) in parts.iter_mut() {
                self.project(x, *w, *y, *rows, cols, t, false)?;
            }
            return Ok(());
        }
        positions(t)?;
        let xp = input("fused gemv input", x, t * cols, &self.stream)?;
        let (mut ws, mut ys, mut ends) = ([0u64; MAX_FUSED], [0u64; MAX_FUSED], [0i32; MAX_FUSED]);
        let mut end = 0;
        for (i, (w, rows, y)) in parts.iter_mut().enumerate() {
            ws[i] = input("fused gemv weight", *w, *rows * cols, &self.stream)?;
            ys[i] = output("fused gemv output", *y, t * *rows, &self.stream)?;
            end += *rows;
            ends[i] = dim("fused gemv rows", end)?;
        }
        for i in parts.len()..MAX_FUSED {
            (ws[i], ys[i], ends[i]) = (ws[i - 1], ys[i - 1], ends[i - 1]);
        }
        let cfg = LaunchConfig {
            grid_dim: (end.div_ceil(GEMV_ROWS) as u32, 1, 1),
            block_dim: (threads_for(cols), 1, 1),
            shared_mem_bytes: 0,
        };
        let [w0, w1, w2, w3] = ws;
        let [y0, y1, y2, y3] = ys;
        let [e0, e1, e2, e3] = ends;
        let (nw, eps) = FoldedNorm::args(norm, cols, &self.stream)?;
        launch!(
            self,
            format!("{}_t{t}", FoldedNorm::kernel(norm, "gemv_multi")),
            cfg,
            &w0,
            &w1,
            &w2,
            &w3,
            &y0,
            &y1,
            &y2,
            &y3,
            &e0,
            &e1,
            &e2,
            &e3,
            &xp,
            &dim("cols", cols)?,
            &nw,
            &eps,
            &self.early_arg()
        );
        Ok(())
    }

    /// Whether [`Gpu::project_many`] runs projections of these row counts as one launch (and
    /// can fold a norm into it).
    pub fn can_fuse(cols: usize, t: usize, mut rows: impl ExactSizeIterator<Item = usize>) -> bool {
        (1..=MAX_T).contains(&t)
            && cols.is_multiple_of(8)
            && (1..=MAX_FUSED).contains(&rows.len())
            && rows.all(|r| r.is_multiple_of(GEMV_ROWS))
    }

    /// A projection of `t` positions: the GEMV for t <= 8 (decode, verify), else the GEMM
    /// (prefill chunks).
    #[allow(clippy::too_many_arguments)] // the parameters of gemv and gemm, which it picks between
    pub fn project(
        &self,
        x: &impl DevicePtr<f32>,
        w: &impl DevicePtr<bf16>,
        y: &mut impl DevicePtrMut<f32>,
        rows: usize,
        cols: usize,
        t: usize,
        accumulate: bool,
    ) -> Result<()> {
        if t <= MAX_T && cols.is_multiple_of(8) {
            self.gemv(w, x, y, rows, cols, t, accumulate)
        } else {
            self.gemm(x, w, y, rows, cols, t, accumulate)
        }
    }

    /// `ids[t]` = argmax over the vocabulary of `W x[t]` (lowest index on ties), for t < `t`
    /// (1..=8), without writing the logits: W `[vocab][hidden]` bf16, x `[t][hidden]` fp32.
    #[allow(clippy::too_many_arguments)] // one argument per kernel parameter
    pub fn lm_head_argmax(
        &self,
        w: &impl DevicePtr<bf16>,
        x: &impl DevicePtr<f32>,
        scratch: &mut ArgmaxScratch,
        ids: &mut impl DevicePtrMut<i32>,
        vocab: usize,
        hidden: usize,
        t: usize,
    ) -> Result<()> {
        positions(t)?;
        check_cols("lm head", hidden)?;
        ensure!(
            scratch.blocks == vocab.div_ceil(ROWS_PER_BLOCK),
            "argmax scratch was sized for another vocabulary than {vocab}"
        );
        let w = input("lm head weight", w, vocab * hidden, &self.stream)?;
        let x = input("lm head input", x, t * hidden, &self.stream)?;
        let vals = output("argmax scratch", &mut scratch.vals, 0, &self.stream)?;
        let idx = output("argmax scratch", &mut scratch.idx, 0, &self.stream)?;
        let ids = output("token ids", ids, t, &self.stream)?;
        let cfg = LaunchConfig {
            grid_dim: (scratch.blocks as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            self,
            format!("lm_head_argmax_t{t}"),
            cfg,
            &w,
            &x,
            &dim("vocab", vocab)?,
            &dim("hidden", hidden)?,
            &vals,
            &idx
        );
        let blocks = dim("blocks", scratch.blocks)?;
        let cfg = LaunchConfig {
            grid_dim: (t as u32, 1, 1),
            block_dim: (1024, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(self, "argmax_reduce", cfg, &vals, &idx, &blocks, &ids);
        Ok(())
    }

    /// The end of a plain step on the device: `tok_in[0] = history[pos + 1] = tok_out[0]`
    /// and `base = pos + 1`, where pos is the one i32 in `base`, read on the device (a
    /// position past the history is not kept there).
    pub fn feed_next(
        &self,
        tok_out: &impl DevicePtr<i32>,
        tok_in: &mut impl DevicePtrMut<i32>,
        history: &mut impl DevicePtrMut<i32>,
        base: &mut impl DevicePtrMut<i32>,
    ) -> Result<()> {
        let history_len = dim("token history", history.len())?;
        let tok_out = input("step token", tok_out, 1, &self.stream)?;
        let tok_in = output("next step's token", tok_in, 1, &self.stream)?;
        let history = output("token history", history, 1, &self.stream)?;
        let base = output("round position", base, 1, &self.stream)?;
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            self,
            "feed_next",
            cfg,
            &tok_out,
            &tok_in,
            &history,
            &history_len,
            &base
        );
        Ok(())
    }

    /// `ids[t]` = argmax of `logits[t][0..n)` (lowest index on ties), for t < `t`.
    pub fn argmax(
        &self,
        logits: &impl DevicePtr<f32>,
        ids: &mut impl DevicePtrMut<i32>,
        n: usize,
        t: usize,
    ) -> Result<()> {
        let logits = input("logits", logits, t * n, &self.stream)?;
        let ids = output("token ids", ids, t, &self.stream)?;
        let cfg = LaunchConfig {
            grid_dim: (dim("t", t)? as u32, 1, 1),
            block_dim: (1024, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            self,
            "argmax_reduce",
            cfg,
            &logits,
            &0u64,
            &dim("n", n)?,
            &ids
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::nvrtc::assert_defines;
    use super::{threads_for, GEMV_BATCH, GEMV_ROWS};

    #[test]
    fn launch_shape_is_the_kernels() {
        assert_defines(
            "common.cuh",
            &[("GEMV_ROWS", GEMV_ROWS), ("GEMV_BATCH", GEMV_BATCH)],
        );
    }

    /// Each thread takes one batch of 16-byte chunks a row: 2048 columns are 256 chunks, two
    /// a thread for 128 threads; wider rows stop at 256 threads, narrow ones at one warp.
    #[test]
    fn a_block_has_warps_for_one_batch_a_thread() {
        for (cols, threads) in [
            (8, 32),
            (512, 32),
            (2048, 128),
            (4096, 256),
            (5120, 256),
            (17408, 256),
        ] {
            assert_eq!(threads_for(cols), threads, "{cols} columns");
        }
    }
}
