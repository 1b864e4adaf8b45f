//! Helpers shared by the integration tests.
#![allow(dead_code)]

use engine::backend::Backend;
use engine::bench::{BenchPlan, BenchResult};
use engine::config::{Ffn, ModelConfig};
use engine::cpu::{CpuBackend, CpuMat};
use engine::cuda::Gpu;
use engine::model::Model;
use engine::options::Arm;
use engine::synthetic::{key, synthetic_value};
use engine::weights::WeightSource;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Deterministic values in [-scale, scale] for test inputs.
pub fn rand_vec(tag: &str, n: usize, scale: f32) -> Vec<f32> {
    let k = key(tag);
    (0..n)
        .map(|i| synthetic_value(99, k, i as u64, scale, 0.0))
        .collect()
}

pub fn mat(tag: &str, rows: usize, cols: usize) -> CpuMat {
    CpuMat {
        rows,
        cols,
        data: rand_vec(tag, rows * cols, 1.0 / (cols as f32).sqrt()),
    }
}

pub fn tiny_model(seed: u64, arm: Arm, chunk: usize) -> Model<CpuBackend> {
    let cfg = ModelConfig::preset("tiny").unwrap();
    Model::new(
        cfg,
        &WeightSource::Synthetic { seed },
        arm,
        CpuBackend::new(),
        chunk,
    )
    .unwrap()
}

/// One `engine bench` run on a fresh tiny CPU model: its result and the decode rounds the
/// model ran in all (warm-up and timed reps).
pub fn tiny_bench(plan: &BenchPlan) -> (BenchResult, u64) {
    let mut m = tiny_model(plan.seed, Arm::default(), plan.prefill_chunk);
    let r = engine::bench::run(&mut m, plan).unwrap();
    (r, m.rounds_run())
}

pub fn prompt(seed: u64, len: usize) -> Vec<u32> {
    engine::bench::prompts(seed, 1, len, 512).remove(0)
}

/// The CUDA device shared by a test binary's tests. The tests that call it are
/// `#[ignore = "needs a CUDA device"]` and run with `--ignored` on a GPU machine
/// (`.ci/gpu-tests`), so a missing device is a failure here, never a silent pass.
pub fn gpu() -> &'static Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| {
        Gpu::new(0).unwrap_or_else(|e| panic!("this test needs a CUDA device: {e:#}"))
    })
}

/// Prefill then plain or speculative greedy decode; returns all generated tokens.
pub fn generate<B: Backend>(
    m: &mut Model<B>,
    prompt: &[u32],
    chunk: usize,
    n_gen: usize,
    k: Option<usize>,
) -> (Vec<u32>, engine::decode::SpecStats) {
    let first = m.prefill(prompt, chunk, k.is_some());
    let mut out = vec![first];
    let stats = match k {
        Some(k) => m.decode_spec(first, n_gen, k, &mut out),
        None => {
            m.decode_plain(first, n_gen, &mut out);
            Default::default()
        }
    };
    m.backend
        .take_error()
        .expect("the backend reported an error");
    (out, stats)
}

pub fn close(a: &[f32], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: length");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (*x as f64 - y).abs() <= tol * (1.0 + y.abs()),
            "{what}[{i}]: engine {x} vs reference {y}"
        );
    }
}

pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

pub fn silu(x: f64) -> f64 {
    x * sigmoid(x)
}

/// Zero-centred RMSNorm in f64.
pub fn rms_norm(x: &[f64], w: &[f32], eps: f64) -> Vec<f64> {
    let ms = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
    let k = 1.0 / (ms + eps).sqrt();
    x.iter()
        .zip(w)
        .map(|(v, w)| v * k * (1.0 + *w as f64))
        .collect()
}

pub fn matvec(m: &CpuMat, x: &[f64]) -> Vec<f64> {
    (0..m.rows)
        .map(|r| {
            (0..m.cols)
                .map(|c| m.data[r * m.cols + c] as f64 * x[c])
                .sum()
        })
        .collect()
}

pub fn f64s(x: &[f32]) -> Vec<f64> {
    x.iter().map(|v| *v as f64).collect()
}

/// The device for one test at a time. Every `Gpu` of the process is the device's one primary
/// context, and what one test does to it can reach another's: the L2 persisting limit and the
/// stream's window are the context's, and a test's teardown (its modules unloaded, its memory
/// freed) may land while another test captures a graph.
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    static DEVICE: Mutex<()> = Mutex::new(());
    DEVICE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A small model in the shapes the CUDA kernels take (128-wide GDN heads).
pub fn gpu_cfg() -> ModelConfig {
    let mut c = ModelConfig::preset("small").unwrap();
    c.name = "small-gpu".into();
    c.vocab = 4096;
    c.layers = 4;
    (
        c.gdn_key_heads,
        c.gdn_value_heads,
        c.gdn_key_dim,
        c.gdn_value_dim,
    ) = (2, 4, 128, 128);
    (c.attn_heads, c.attn_kv_heads, c.attn_head_dim) = (8, 2, 64);
    c.ffn = Ffn::Moe {
        experts: 16,
        top_k: 4,
        expert_size: 64,
        shared_size: 64,
    };
    c.max_context = 512;
    c.validate().unwrap();
    c
}
