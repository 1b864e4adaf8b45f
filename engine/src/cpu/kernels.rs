//! Scalar building blocks of the CPU backend.
//!
//! Every output element is computed by the same sequence of f32 operations whatever the
//! batch size, thread count or SIMD width: that is what makes prefill equal token-by-token
//! decode and speculative output equal plain output, bit for bit.

use super::prefetch::Prefetcher;
use rayon::prelude::*;

const LANES: usize = 16;

/// Dot product with 16 independent lane accumulators reduced in a fixed order.
#[inline(always)]
fn dot_body(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; LANES];
    let mut ca = a.chunks_exact(LANES);
    let mut cb = b.chunks_exact(LANES);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for l in 0..LANES {
            acc[l] += x[l] * y[l];
        }
    }
    for (l, (x, y)) in ca.remainder().iter().zip(cb.remainder()).enumerate() {
        acc[l] += x * y;
    }
    // Pairwise tree over the lanes.
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for l in 0..w {
            acc[l] += acc[l + w];
        }
    }
    acc[0]
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    // Same operations as `dot_body` (no FMA): wider registers, identical results.
    dot_body(a, b)
}

#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { dot_avx2(a, b) };
    }
    dot_body(a, b)
}

/// Work below this many multiply-adds runs on the calling thread.
const PAR_MIN_MACS: usize = 1 << 17;
/// Weight rows per parallel task.
const ROW_BLOCK: usize = 32;

/// `out[i][r] = W[r] · x[i]` for `t` rows of `x`, streaming each weight row once and issuing
/// one armed prefetch line per weight row.
pub fn matmul(
    w: &[f32],
    rows: usize,
    cols: usize,
    x: &[f32],
    t: usize,
    out: &mut [f32],
    pf: &Prefetcher,
) {
    debug_assert!(w.len() == rows * cols && x.len() >= t * cols && out.len() >= t * rows);
    let block = |r0: usize, r1: usize, out: OutPtr| {
        for r in r0..r1 {
            pf.step(1);
            let wr = &w[r * cols..(r + 1) * cols];
            for i in 0..t {
                let v = dot(wr, &x[i * cols..(i + 1) * cols]);
                // SAFETY: each (i, r) is written by exactly one task; `out` outlives the call.
                unsafe { *out.0.add(i * rows + r) = v };
            }
        }
    };
    let out = OutPtr(out.as_mut_ptr());
    if rows * cols * t < PAR_MIN_MACS || rows < 2 * ROW_BLOCK {
        block(0, rows, out);
    } else {
        (0..rows.div_ceil(ROW_BLOCK))
            .into_par_iter()
            .for_each(|b| block(b * ROW_BLOCK, ((b + 1) * ROW_BLOCK).min(rows), out));
    }
}

#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

pub fn silu(x: f32) -> f32 {
    x * sigmoid(x)
}

pub fn softplus(x: f32) -> f32 {
    if x > 20.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

/// `1 / sqrt(mean(x²) + eps)`.
pub fn inv_rms(x: &[f32], eps: f32) -> f32 {
    let ss: f32 = x.iter().map(|v| v * v).sum();
    1.0 / (ss / x.len() as f32 + eps).sqrt()
}

/// `x / sqrt(Σx² + 1e-6)` in place, then times `scale`.
pub fn l2_normalize(x: &mut [f32], scale: f32) {
    let ss: f32 = x.iter().map(|v| v * v).sum();
    let k = scale / (ss + 1e-6).sqrt();
    x.iter_mut().for_each(|v| *v *= k);
}

/// Zero-centred RMSNorm: `x / rms(x) · (1 + w)`.
pub fn rms_norm_row(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    let k = inv_rms(x, eps);
    for ((o, v), w) in out.iter_mut().zip(x).zip(w) {
        *o = v * k * (1.0 + w);
    }
}

/// Index of the largest value, lowest index on ties.
pub fn argmax(x: &[f32]) -> usize {
    let mut best = 0;
    for (i, v) in x.iter().enumerate() {
        if *v > x[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_is_batch_and_thread_invariant() {
        let (rows, cols) = (300, 257);
        let w: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5)
            .collect();
        let x: Vec<f32> = (0..5 * cols)
            .map(|i| ((i * 104729) % 997) as f32 / 997.0 - 0.5)
            .collect();
        let pf = Prefetcher::default();
        let mut all = vec![0.0; 5 * rows];
        matmul(&w, rows, cols, &x, 5, &mut all, &pf);
        for i in 0..5 {
            let mut one = vec![0.0; rows];
            matmul(&w, rows, cols, &x[i * cols..], 1, &mut one, &pf);
            assert_eq!(one, all[i * rows..(i + 1) * rows]);
            let exact: f64 = (0..cols)
                .map(|c| w[c] as f64 * x[i * cols + c] as f64)
                .sum();
            assert!((all[i * rows] as f64 - exact).abs() < 1e-4);
        }
        assert_eq!(
            dot_body(&w[..cols], &x[..cols]),
            dot(&w[..cols], &x[..cols])
        );
    }
}
