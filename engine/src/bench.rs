//! `engine bench`: timed prefill and decode over synthetic prompts, one CSV row.

use crate::backend::Backend;
use crate::decode::SpecStats;
use crate::model::Model;
use crate::synthetic::prompt_token;
use anyhow::{bail, Result};
use std::time::Instant;

/// What one bench run does (the model and backend are built by the caller).
#[derive(Clone, Debug)]
pub struct BenchPlan {
    pub n_prompt: usize,
    pub n_gen: usize,
    pub reps: usize,
    pub warmup: usize,
    pub prefill_chunk: usize,
    /// Draft tokens per round, `None` for plain decode.
    pub draft_tokens: Option<usize>,
    pub prompts: usize,
    pub seed: u64,
}

/// One rep over every prompt.
struct Rep {
    prefill_s: f64,
    decode_s: f64,
    spec: SpecStats,
}

#[derive(Clone, Debug)]
pub struct BenchResult {
    pub model: String,
    pub backend: String,
    pub plan: BenchPlan,
    pub threads: usize,
    pub prefill_seconds_mean: f64,
    pub decode_seconds_mean: f64,
    pub spec: SpecStats,
    pub output_digest: String,
    pub state_pool_bytes: usize,
    pub prefetch: &'static str,
    pub pool_layout: &'static str,
    pub prefetch_bytes_per_token: f64,
    pub prefetch_walked_bytes_per_token: f64,
}

/// Synthetic prompts from the seed.
pub fn prompts(seed: u64, count: usize, len: usize, vocab: usize) -> Vec<Vec<u32>> {
    (0..count).map(|p| (0..len).map(|j| prompt_token(seed, p, j, vocab)).collect()).collect()
}

/// blake3 hex of token ids as little-endian u32s in order.
pub fn digest(tokens: &[Vec<u32>]) -> String {
    let mut h = blake3::Hasher::new();
    for t in tokens.iter().flatten() {
        h.update(&t.to_le_bytes());
    }
    h.finalize().to_hex().to_string()
}

/// Generates the tokens of one prompt: the prefill's token then `n_gen` decoded ones.
fn generate<B: Backend>(m: &mut Model<B>, plan: &BenchPlan, prompt: &[u32], out: &mut Vec<u32>) -> (f64, f64, SpecStats) {
    out.clear();
    let t0 = Instant::now();
    let first = m.prefill(prompt, plan.prefill_chunk, plan.draft_tokens.is_some());
    let t1 = Instant::now();
    out.push(first);
    let spec = match plan.draft_tokens {
        Some(k) => m.decode_spec(first, plan.n_gen, k, out),
        None => {
            m.decode_plain(first, plan.n_gen, out);
            SpecStats::default()
        }
    };
    let t2 = Instant::now();
    ((t1 - t0).as_secs_f64(), (t2 - t1).as_secs_f64(), spec)
}

fn rep<B: Backend>(m: &mut Model<B>, plan: &BenchPlan, prompts: &[Vec<u32>], outs: &mut [Vec<u32>]) -> Rep {
    let mut r = Rep { prefill_s: 0.0, decode_s: 0.0, spec: SpecStats::default() };
    for (p, out) in prompts.iter().zip(outs.iter_mut()) {
        let (pf, dc, spec) = generate(m, plan, p, out);
        r.prefill_s += pf;
        r.decode_s += dc;
        r.spec.add(spec);
    }
    r
}

pub fn run<B: Backend>(m: &mut Model<B>, plan: &BenchPlan) -> Result<BenchResult> {
    m.check_fit(plan.n_prompt, plan.n_gen)?;
    let prompts = prompts(plan.seed, plan.prompts, plan.n_prompt, m.cfg.vocab);
    let mut outs: Vec<Vec<u32>> = prompts.iter().map(|_| Vec::with_capacity(plan.n_gen + 1)).collect();
    for w in 0..plan.warmup {
        eprintln!("warmup {}/{}", w + 1, plan.warmup);
        rep(m, plan, &prompts, &mut outs);
    }
    let before = m.backend.prefetch_counts();
    let mut reps = Vec::with_capacity(plan.reps);
    let mut first_tokens: Option<Vec<Vec<u32>>> = None;
    for r in 0..plan.reps {
        let rr = rep(m, plan, &prompts, &mut outs);
        eprintln!("rep {}/{}: prefill {:.3} s, decode {:.3} s", r + 1, plan.reps, rr.prefill_s, rr.decode_s);
        match &first_tokens {
            None => first_tokens = Some(outs.clone()),
            Some(f) if *f != outs => bail!("rep {} generated different tokens than rep 1: the engine is not deterministic", r + 1),
            Some(_) => {}
        }
        if let Some(first) = reps.first().map(|x: &Rep| x.spec) {
            if first != rr.spec {
                bail!("rep {} ran different speculation counts than rep 1", r + 1);
            }
        }
        reps.push(rr);
    }
    let after = m.backend.prefetch_counts();
    let n = reps.len() as f64;
    let generated = (plan.reps * plan.prompts * plan.n_gen).max(1) as f64;
    Ok(BenchResult {
        model: m.cfg.name.clone(),
        backend: m.backend.name().to_string(),
        plan: plan.clone(),
        threads: rayon::current_num_threads(),
        prefill_seconds_mean: reps.iter().map(|r| r.prefill_s).sum::<f64>() / n,
        decode_seconds_mean: reps.iter().map(|r| r.decode_s).sum::<f64>() / n,
        spec: reps[0].spec,
        output_digest: digest(first_tokens.as_deref().unwrap_or_default()),
        state_pool_bytes: m.map.total_bytes(),
        prefetch: after.mode.name(),
        pool_layout: m.map.layout.name(),
        prefetch_bytes_per_token: (after.issued_bytes - before.issued_bytes) as f64 / generated,
        prefetch_walked_bytes_per_token: (after.walked_bytes - before.walked_bytes) as f64 / generated,
    })
}

/// RFC 4180 quoting where needed.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl BenchResult {
    pub const HEADER: &'static str = "model,backend,n_prompt,n_gen,prompts,reps,prefill_chunk,threads,\
prefill_seconds_mean,prefill_tok_s,decode_seconds_mean,decode_tok_s,total_seconds_mean,\
spec,draft_tokens,spec_rounds,spec_fallback_steps,spec_acceptance_rate,output_digest,\
state_pool_bytes,prefetch,pool_layout,prefetch_bytes_per_token,prefetch_walked_bytes_per_token,seed";

    pub fn row(&self) -> String {
        let p = &self.plan;
        let per = |tokens: usize, s: f64| if s > 0.0 { tokens as f64 / s } else { 0.0 };
        let fields = [
            csv_field(&self.model),
            self.backend.clone(),
            p.n_prompt.to_string(),
            p.n_gen.to_string(),
            p.prompts.to_string(),
            p.reps.to_string(),
            p.prefill_chunk.to_string(),
            self.threads.to_string(),
            format!("{:.6}", self.prefill_seconds_mean),
            format!("{:.3}", per(p.n_prompt * p.prompts, self.prefill_seconds_mean)),
            format!("{:.6}", self.decode_seconds_mean),
            format!("{:.3}", per(p.n_gen * p.prompts, self.decode_seconds_mean)),
            format!("{:.6}", self.prefill_seconds_mean + self.decode_seconds_mean),
            if p.draft_tokens.is_some() { "mtp" } else { "none" }.to_string(),
            p.draft_tokens.unwrap_or(0).to_string(),
            self.spec.rounds.to_string(),
            self.spec.fallback_steps.to_string(),
            format!("{:.6}", self.spec.acceptance_rate()),
            self.output_digest.clone(),
            self.state_pool_bytes.to_string(),
            self.prefetch.to_string(),
            self.pool_layout.to_string(),
            format!("{:.1}", self.prefetch_bytes_per_token),
            format!("{:.1}", self.prefetch_walked_bytes_per_token),
            p.seed.to_string(),
        ];
        fields.join(",")
    }
}
