//! Where a plain decode step's time goes on the GPU, per operation.
//!
//!     cargo run --release -p engine --example cuda_profile -- [PRESET] [PROMPT] [GEN] [CEILING_GBS] [--timeline]
//!
//! By default every operation is launched eagerly between two CUDA events and timed alone.
//! With `--timeline` the decode runs as it does in `engine bench` (graphs, dependent launch)
//! on kernels that note when each launch's wait returned (`engine::cuda::timeline`): each
//! launch is given the time from its note to the next, its part of the chain. Prints Markdown
//! tables: operation, calls and µs per token, share of the step, bytes it must move per token
//! and the bandwidth that gives against the read ceiling; with `--timeline`, per kernel too.

use anyhow::{Context, Result};
use engine::backend::Backend;
use engine::config::ModelConfig;
use engine::cuda::{timeline, CudaBackend, Gpu, ProfileRow};
use engine::model::Model;
use engine::options::Arm;
use engine::weights::WeightSource;

/// Launches a timeline holds: a 35B-A3B token takes about 300.
const TIMELINE_CAPACITY: usize = 1 << 20;

fn main() -> Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let timeline = args.iter().any(|a| a == "--timeline");
    args.retain(|a| a != "--timeline");
    let preset = args.first().map_or("qwen3.6-35b-a3b", |s| s.as_str());
    let n_prompt: usize = args
        .get(1)
        .map_or(Ok(2048), |s| s.parse())
        .context("PROMPT must be an integer")?;
    let n_gen: usize = args
        .get(2)
        .map_or(Ok(64), |s| s.parse())
        .context("GEN must be an integer")?;
    let cfg = ModelConfig::preset(preset)?;
    let gpu = if timeline {
        Gpu::with_timeline(0, TIMELINE_CAPACITY)?
    } else {
        Gpu::new(0)?
    };
    let backend = CudaBackend::on(gpu, timeline, Default::default());
    let ceiling = match args.get(3) {
        Some(s) => s.parse().context("CEILING_GBS must be a number")?,
        None => backend.gpu.measure_read_ceiling_gbs(4 << 30)?,
    };
    let mut m = Model::new(
        cfg.clone(),
        &WeightSource::Synthetic { seed: 0 },
        Arm::default(),
        backend,
        64,
    )?;
    let prompt = engine::bench::prompts(0, 1, n_prompt, cfg.vocab).remove(0);
    let first = m.prefill(&prompt, 64, false);
    let mut out = vec![first];
    // Untimed tokens first, so that the profile sees steady-state launches (and graphs).
    m.decode_plain(first, 4, &mut out);
    let stream = m.backend.gpu.stream.clone();
    match m.backend.gpu.timeline.as_mut() {
        Some(t) => t.reset(&stream)?,
        None => m.backend.start_profile(),
    }
    let wall = std::time::Instant::now();
    let last = *out.last().expect("tokens");
    m.decode_plain(last, n_gen, &mut out);
    let wall = wall.elapsed().as_secs_f64();
    m.backend.take_error()?;
    let per_token = |v: f64| v / n_gen as f64;
    let Some(t) = m.backend.gpu.timeline.as_ref() else {
        let rows = m.backend.profile()?;
        println!("{preset}, plain decode after a {n_prompt}-token prompt, {n_gen} tokens, eager launches, read ceiling {ceiling:.0} GB/s");
        println!("sum of operation times {:.1} µs/token; wall time (eager, with event records) {:.1} µs/token\n", per_token(total_ms(&rows)) * 1e3, per_token(wall) * 1e6);
        return print_table("operation", &rows, n_gen, ceiling);
    };
    let timed = t.read(&stream)?;
    let ops = timeline::by_op(&timed);
    println!("{preset}, plain decode after a {n_prompt}-token prompt, {n_gen} tokens, graphs and dependent launch as in `engine bench`, read ceiling {ceiling:.0} GB/s");
    println!("each launch timed from its wait's return to the next launch's (the chain), {} launches; sum {:.1} µs/token; wall time {:.1} µs/token\n", timed.len(), per_token(total_ms(&ops)) * 1e3, per_token(wall) * 1e6);
    // The timer's resolution bounds how finely one launch is timed (not the sums).
    let smallest = timed
        .iter()
        .map(|t| t.ns)
        .filter(|&ns| ns > 0)
        .min()
        .unwrap_or(0);
    let zero = timed.iter().filter(|t| t.ns == 0).count();
    println!("smallest step between two notes {smallest} ns; {zero} launches noted at the same time as the next\n");
    print_table("operation", &ops, n_gen, ceiling)?;
    println!();
    print_table("kernel", &timeline::by_kernel(&timed), n_gen, ceiling)
}

fn total_ms(rows: &[ProfileRow]) -> f64 {
    rows.iter().map(|r| r.ms).sum()
}

fn print_table(what: &str, rows: &[ProfileRow], n_gen: usize, ceiling: f64) -> Result<()> {
    let total = total_ms(rows);
    let per = |v: f64| v / n_gen as f64;
    println!("| {what} | calls/token | µs/token | share | MB/token | GB/s | of ceiling |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for r in rows {
        let gbs = if r.ms > 0.0 {
            r.bytes as f64 / (r.ms * 1e-3) / 1e9
        } else {
            0.0
        };
        let (mb, bw, frac) = if r.bytes > 0 {
            (
                format!("{:.2}", per(r.bytes as f64) / 1e6),
                format!("{gbs:.0}"),
                format!("{:.1} %", 100.0 * gbs / ceiling),
            )
        } else {
            ("—".into(), "—".into(), "—".into())
        };
        println!(
            "| {} | {:.0} | {:.1} | {:.1} % | {mb} | {bw} | {frac} |",
            r.label,
            per(r.calls as f64),
            per(r.ms) * 1e3,
            100.0 * r.ms / total
        );
    }
    Ok(())
}
