//! CPU decode speed and peak memory of a preset:
//! `cargo run --release -p engine --example decode_bench [-- PRESET [PROMPT GEN]]`.

use engine::bench::{self, BenchPlan};
use engine::config::ModelConfig;
use engine::cpu::CpuBackend;
use engine::model::Model;
use engine::options::Arm;
use engine::weights::WeightSource;

/// Peak resident memory of this process (VmHWM), as /proc reports it.
fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l["VmHWM:".len()..].trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let preset = args.first().map(String::as_str).unwrap_or("small");
    let n_prompt = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(128);
    let n_gen = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(128);
    let cfg = ModelConfig::preset(preset)?;
    let mut model = Model::new(
        cfg,
        &WeightSource::Synthetic { seed: 0 },
        Arm::from_env()?,
        CpuBackend::new(),
        64,
    )?;
    let pool = rayon::ThreadPoolBuilder::new().build()?;
    println!(
        "preset {preset}, {n_prompt} prompt + {n_gen} generated tokens, {} threads",
        pool.current_num_threads()
    );
    for k in [None, Some(1), Some(3), Some(5)] {
        let plan = BenchPlan {
            n_prompt,
            n_gen,
            reps: 3,
            warmup: 1,
            warmup_decode: None,
            prefill_chunk: 64,
            draft_tokens: k,
            prompts: 1,
            seed: 0,
            read_ceiling_gbs: None,
            decode_pad_pct: None,
        };
        let r = pool.install(|| bench::run(&mut model, &plan))?;
        let label = k.map_or("plain".to_string(), |k| format!("mtp K={k}"));
        println!(
            "{label:>9}: prefill {:8.1} tok/s   decode {:7.1} tok/s   acceptance {:.3}   digest {}",
            n_prompt as f64 / r.prefill_seconds_mean,
            n_gen as f64 / r.decode_seconds_mean,
            r.spec.acceptance_rate(),
            &r.output_digest[..16]
        );
    }
    println!("peak memory (VmHWM): {}", peak_rss());
    Ok(())
}
