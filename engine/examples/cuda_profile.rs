//! Where a plain decode step's time goes on the GPU: CUDA events around every operation,
//! launched eagerly, summed per operation over the decoded tokens.
//!
//!     cargo run --release -p engine --example cuda_profile -- [PRESET] [PROMPT] [GEN] [CEILING_GBS]
//!
//! Prints a Markdown table: operation, calls and µs per token, share of the step, bytes it
//! must move per token and the bandwidth that gives against the read ceiling.

use anyhow::{Context, Result};
use engine::arms::Arm;
use engine::backend::Backend;
use engine::config::ModelConfig;
use engine::cuda::CudaBackend;
use engine::model::Model;
use engine::weights::WeightSource;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let preset = args.first().map_or("qwen3.6-35b-a3b", |s| s.as_str());
    let n_prompt: usize = args.get(1).map_or(Ok(2048), |s| s.parse()).context("PROMPT must be an integer")?;
    let n_gen: usize = args.get(2).map_or(Ok(64), |s| s.parse()).context("GEN must be an integer")?;
    let cfg = ModelConfig::preset(preset)?;
    let backend = CudaBackend::new(0, false, Default::default())?;
    let ceiling = match args.get(3) {
        Some(s) => s.parse().context("CEILING_GBS must be a number")?,
        None => backend.gpu.measure_read_ceiling_gbs(4 << 30)?,
    };
    let mut m = Model::new(cfg.clone(), &WeightSource::Synthetic { seed: 0 }, Arm::default(), backend, 64)?;
    let prompt = engine::bench::prompts(0, 1, n_prompt, cfg.vocab).remove(0);
    let first = m.prefill(&prompt, 64, false);
    let mut out = vec![first];
    // Untimed tokens first, so that the profile sees steady-state launches.
    m.decode_plain(first, 4, &mut out);
    m.backend.start_profile();
    let wall = std::time::Instant::now();
    let last = *out.last().expect("tokens");
    m.decode_plain(last, n_gen, &mut out);
    let wall = wall.elapsed().as_secs_f64();
    m.backend.take_error()?;
    let rows = m.backend.profile()?;
    let total_ms: f64 = rows.iter().map(|r| r.ms).sum();
    let per = |v: f64| v / n_gen as f64;
    println!("{preset}, plain decode after a {n_prompt}-token prompt, {n_gen} tokens, eager launches, read ceiling {ceiling:.0} GB/s");
    println!("sum of operation times {:.1} µs/token; wall time (eager, with event records) {:.1} µs/token\n", per(total_ms) * 1e3, wall / n_gen as f64 * 1e6);
    println!("| operation | calls/token | µs/token | share | MB/token | GB/s | of ceiling |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for r in &rows {
        let gbs = if r.ms > 0.0 { r.bytes as f64 / (r.ms * 1e-3) / 1e9 } else { 0.0 };
        let (mb, bw, frac) = if r.bytes > 0 { (format!("{:.2}", per(r.bytes as f64) / 1e6), format!("{gbs:.0}"), format!("{:.1} %", 100.0 * gbs / ceiling)) } else { ("—".into(), "—".into(), "—".into()) };
        println!("| {} | {:.0} | {:.1} | {:.1} % | {mb} | {bw} | {frac} |", r.label, per(r.calls as f64), per(r.ms) * 1e3, 100.0 * r.ms / total_ms);
    }
    Ok(())
}
