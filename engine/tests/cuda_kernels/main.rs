//! Every CUDA kernel against a plain f64 host reference on random non-zero inputs. Every test
//! needs a CUDA device: they are ignored unless run with `--ignored` (`.ci/gpu-tests`).

#[path = "../common/mod.rs"]
mod common;

pub use common::gpu;

mod attention;
mod gdn;
mod graph;
mod linear;
mod moe;
mod resources;
mod synthetic;

use cudarc::driver::CudaSlice;
use engine::cuda::{synthetic_key, Gpu};
use half::bf16;

/// Deterministic random numbers (SplitMix64) for inputs.
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / 16777216.0
    }
    /// Non-zero: magnitude in [0.1, 1) times `scale`, random sign.
    pub fn value(&mut self, scale: f32) -> f32 {
        let m = 0.1 + 0.9 * self.unit();
        if self.next_u64() & 1 == 0 {
            m * scale
        } else {
            -m * scale
        }
    }
    pub fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.value(scale)).collect()
    }
}

pub fn upload<T: cudarc::driver::DeviceRepr>(gpu: &Gpu, v: &[T]) -> CudaSlice<T> {
    gpu.stream.clone_htod(v).expect("upload")
}

pub fn download<T: cudarc::driver::DeviceRepr + Default + Clone>(
    gpu: &Gpu,
    d: &CudaSlice<T>,
) -> Vec<T> {
    gpu.stream.clone_dtoh(d).expect("download")
}

/// A bf16 weight tensor filled on the device, and its host copy widened to f64.
pub fn weights(
    gpu: &Gpu,
    name: &str,
    n: usize,
    offset: f32,
    scale: f32,
) -> (CudaSlice<bf16>, Vec<f64>) {
    let mut w = gpu.stream.alloc_zeros::<bf16>(n).unwrap();
    gpu.fill_synthetic(&mut w, 7, synthetic_key(name), offset, scale)
        .unwrap();
    let host = download(gpu, &w).iter().map(|v| v.to_f64()).collect();
    (w, host)
}

/// max |got - want| / max |want|, printed with `what`, and asserted below `tol`.
pub fn assert_close(what: &str, got: &[f32], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let err = got
        .iter()
        .zip(want)
        .fold(0.0f64, |m, (g, w)| m.max((*g as f64 - w).abs()));
    let rel = err / scale.max(1e-30);
    println!("{what}: relative error {rel:.3e} (max |ref| {scale:.3e})");
    assert!(scale > 0.0, "{what}: reference is all zeros");
    assert!(
        rel <= tol,
        "{what}: relative error {rel:.3e} above {tol:.1e}"
    );
}

pub fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}
pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}
pub fn bf16_round(x: f32) -> f64 {
    bf16::from_f32(x).to_f64()
}
