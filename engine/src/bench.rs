//! `engine bench`: timed prefill and decode over synthetic prompts, one CSV row.

use crate::backend::Backend;
use crate::config::{Ffn, ModelConfig};
use crate::cuda::l2::L2Audit;
use crate::decode::SpecStats;
use crate::meter::{joules, Meter, NoMeter};
use crate::model::Model;
use crate::options::Named;
use crate::pad::PadTally;
use crate::synthetic::prompt_token;
use crate::tensors::{tensor_specs, Traffic};
use anyhow::{bail, Result};
use std::time::Instant;

/// What one bench run does (the model and backend are built by the caller).
#[derive(Clone, Debug)]
pub struct BenchPlan {
    pub n_prompt: usize,
    pub n_gen: usize,
    pub reps: usize,
    pub warmup: usize,
    /// Tokens each warm-up rep decodes per prompt (`--warmup-decode`); `None`: `n_gen`, as a
    /// timed rep. The warm-up's job is the first touch and the graph captures, which a few
    /// rounds do; the rest of its decode is time a ladder pays for nothing.
    pub warmup_decode: Option<usize>,
    pub prefill_chunk: usize,
    /// Draft tokens per round, `None` for plain decode.
    pub draft_tokens: Option<usize>,
    pub prompts: usize,
    pub seed: u64,
    /// The device's read bandwidth in GB/s the decode is quoted against (measured at start
    /// or given), if known.
    pub read_ceiling_gbs: Option<f64>,
    /// `ENGINE_DECODE_PAD_PCT`: every decode round padded by this percentage of its own time
    /// ([`crate::pad`]); `None`: no pad.
    pub decode_pad_pct: Option<f64>,
}

impl BenchPlan {
    /// Refuses a plan that cannot run as asked, before anything is built or run.
    pub fn check(&self) -> Result<()> {
        if let Some(n) = self.warmup_decode.filter(|&n| n == 0 || n > self.n_gen) {
            bail!(
                "--warmup-decode {n}: a warm-up rep decodes 1 to {} tokens (the timed reps' \
                 count, from -pg); pass a number in that range, or leave it out to decode all",
                self.n_gen
            );
        }
        Ok(())
    }

    /// The plan of a warm-up rep: the timed reps' with its own decode length.
    fn warmup_rep(&self) -> BenchPlan {
        BenchPlan {
            n_gen: self.warmup_decode.unwrap_or(self.n_gen),
            ..self.clone()
        }
    }
}

/// The known-effect pad (`ENGINE_DECODE_PAD_PCT`) as the timed reps ran it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DecodePad {
    /// The percentage asked: of every round's own time ([`crate::pad`]).
    pub pct: f64,
    /// What the timed reps' pads counted, on their clock: every timed round.
    pub tally: PadTally,
}

impl DecodePad {
    /// The mean wait of a timed round.
    pub fn round_seconds(&self) -> f64 {
        self.tally.per_round(self.tally.waited_seconds)
    }
}

/// One rep over every prompt.
struct Rep {
    prefill_s: f64,
    decode_s: f64,
    /// Joules the card's counter moved over the prefills and over the decodes.
    prefill_j: Option<f64>,
    decode_j: Option<f64>,
    spec: SpecStats,
}

/// One timed rep's own times (`engine bench --rows reps`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RepTimes {
    pub prefill_s: f64,
    pub decode_s: f64,
    /// Joules over the rep's prefills and decodes (`None` without an energy counter).
    pub prefill_j: Option<f64>,
    pub decode_j: Option<f64>,
    /// The rep's wall time, prompts and bookkeeping included.
    pub seconds: f64,
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
    pub prefetch: String,
    pub pool_layout: String,
    pub prefetch_bytes_per_token: f64,
    pub prefetch_walked_bytes_per_token: f64,
    /// Bytes a decode round must move (see [`bytes_per_round`]).
    pub bytes_per_round: f64,
    /// Share of the read ceiling the decode reached: bytes moved per second / ceiling.
    pub roofline_fraction: Option<f64>,
    /// The L2 arm as the decode graphs and the device hold it, read back after the run.
    pub l2: L2Audit,
    /// The pad of every timed decode round, when `ENGINE_DECODE_PAD_PCT` asked for one.
    pub decode_pad: Option<DecodePad>,
    /// Each timed rep's times, in order.
    pub reps: Vec<RepTimes>,
    /// Bytes one rep's decode moves (see [`bytes_per_round`]).
    pub decode_bytes: f64,
    /// From the start given to [`run_from`] to the first timed rep.
    pub startup_seconds: f64,
    /// The timed reps' wall time, summed.
    pub timed_seconds: f64,
    /// The most device memory the process held, read after the warm-up and after the timed
    /// reps (everything is allocated before the first graph is captured).
    pub device_mem_peak_mib: Option<u64>,
}

/// Bytes one decode round must move at a context of `ctx` positions, at bf16 weights and KV
/// cache and fp32 recurrent state: the weights it reads, every GDN layer's state slot read
/// and written, and the KV caches read. Plain decode (`draft` None): one target step.
/// With `draft` K: the verify pass over K+1 positions (routed experts: the expected number
/// of distinct experts among K+1 independent routings) and K passes of the MTP layer, each
/// with the LM head.
pub fn bytes_per_round(cfg: &ModelConfig, ctx: f64, draft: Option<usize>) -> f64 {
    let (experts, top_k) = match cfg.ffn {
        Ffn::Moe { experts, top_k, .. } => (experts as f64, top_k as f64),
        Ffn::Dense { .. } => (1.0, 1.0),
    };
    let (mut every, mut expert, mut row, mut draft_every, mut draft_expert) =
        (0.0, 0.0, 0.0, 0.0, 0.0);
    for s in tensor_specs(cfg) {
        let n = s.numel() as f64;
        match s.traffic {
            Traffic::Every => every += n,
            Traffic::Expert => expert += n,
            Traffic::Row => row += s.shape[1] as f64,
            Traffic::Draft if s.name.contains(".mlp.experts.") => draft_expert += n,
            Traffic::Draft => draft_every += n,
        }
    }
    let distinct = |tokens: f64| 1.0 - (1.0 - top_k / experts).powf(tokens);
    let state = (cfg.gdn_layers() * 2 * (cfg.conv_slot_bytes() + cfg.rec_slot_bytes())) as f64;
    let kv = (2 * cfg.attn_kv_heads * cfg.attn_head_dim * 2) as f64 * ctx;
    let attn_layers = cfg.attention_layers() as f64;
    match draft {
        None => 2.0 * (every + expert * distinct(1.0) + row) + state + attn_layers * kv,
        Some(k) => {
            let rows = (k + 1) as f64;
            let verify = 2.0 * (every + expert * distinct(rows) + row * rows)
                + state
                + attn_layers * kv * rows;
            let lm_head = (cfg.vocab * cfg.hidden) as f64;
            let mtp = 2.0 * (draft_every + draft_expert * distinct(1.0) + lm_head + row) + kv;
            verify + k as f64 * mtp
        }
    }
}

/// Synthetic prompts from the seed.
pub fn prompts(seed: u64, count: usize, len: usize, vocab: usize) -> Vec<Vec<u32>> {
    (0..count)
        .map(|p| (0..len).map(|j| prompt_token(seed, p, j, vocab)).collect())
        .collect()
}

/// blake3 hex of token ids as little-endian u32s in order.
pub fn digest(tokens: &[Vec<u32>]) -> String {
    let mut h = blake3::Hasher::new();
    for t in tokens.iter().flatten() {
        h.update(&t.to_le_bytes());
    }
    h.finalize().to_hex().to_string()
}

/// Prefills one prompt as the plan says: its first generated token.
pub(crate) fn prefill<B: Backend>(
    m: &mut Model<B>,
    plan: &BenchPlan,
    prompt: &[u32],
) -> Result<u32> {
    let first = m.prefill(prompt, plan.prefill_chunk, plan.draft_tokens.is_some());
    m.backend.take_error()?;
    Ok(first)
}

/// Decodes the plan's `n_gen` tokens after `first` onto `out`, plainly or speculatively; the
/// caller takes the backend's error after its clock.
pub(crate) fn decode<B: Backend>(
    m: &mut Model<B>,
    plan: &BenchPlan,
    first: u32,
    out: &mut Vec<u32>,
) -> SpecStats {
    match plan.draft_tokens {
        Some(k) => m.decode_spec(first, plan.n_gen, k, out),
        None => {
            m.decode_plain(first, plan.n_gen, out);
            SpecStats::default()
        }
    }
}

/// Generates the tokens of one prompt: the prefill's token then `n_gen` decoded ones.
/// One prompt's prefill and decode: their seconds and joules, and the decode's speculation.
struct Generated {
    prefill_s: f64,
    decode_s: f64,
    prefill_j: Option<f64>,
    decode_j: Option<f64>,
    spec: SpecStats,
}

/// Reads the energy counter outside the timed spans, so that the times are those of a run
/// without a meter.
fn generate<B: Backend>(
    m: &mut Model<B>,
    plan: &BenchPlan,
    prompt: &[u32],
    out: &mut Vec<u32>,
    meter: &mut dyn Meter,
) -> Result<Generated> {
    out.clear();
    let e0 = meter.energy_mj();
    let t0 = Instant::now();
    let first = prefill(m, plan, prompt)?;
    let t1 = Instant::now();
    let e1 = meter.energy_mj();
    out.push(first);
    let t1_decode = Instant::now();
    let spec = decode(m, plan, first, out);
    let t2 = Instant::now();
    let e2 = meter.energy_mj();
    m.backend.take_error()?;
    Ok(Generated {
        prefill_s: (t1 - t0).as_secs_f64(),
        decode_s: (t2 - t1_decode).as_secs_f64(),
        prefill_j: joules(e0, e1),
        decode_j: joules(e1, e2),
        spec,
    })
}

/// `a + b` where both are known.
fn add_joules(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

fn rep<B: Backend>(
    m: &mut Model<B>,
    plan: &BenchPlan,
    prompts: &[Vec<u32>],
    outs: &mut [Vec<u32>],
    meter: &mut dyn Meter,
) -> Result<Rep> {
    let mut r = Rep {
        prefill_s: 0.0,
        decode_s: 0.0,
        prefill_j: Some(0.0),
        decode_j: Some(0.0),
        spec: SpecStats::default(),
    };
    for (p, out) in prompts.iter().zip(outs.iter_mut()) {
        let g = generate(m, plan, p, out, meter)?;
        r.prefill_s += g.prefill_s;
        r.decode_s += g.decode_s;
        r.prefill_j = add_joules(r.prefill_j, g.prefill_j);
        r.decode_j = add_joules(r.decode_j, g.decode_j);
        r.spec.add(g.spec);
    }
    Ok(r)
}

/// The pads the timed reps waited, said on stderr.
fn timed_pad<B: Backend>(m: &mut Model<B>, pct: f64) -> Result<DecodePad> {
    let tally = m.backend.take_pad_tally()?;
    let pad = DecodePad { pct, tally };
    eprintln!(
        "decode pad: {pct} % of every round's own time, {:.1} µs a round on average over the \
         timed reps' {} rounds (ENGINE_DECODE_PAD_PCT); a round's own time {:.1} µs and its \
         turnaround {:.1} µs",
        pad.round_seconds() * 1e6,
        tally.rounds,
        tally.per_round(tally.own_seconds) * 1e6,
        tally.per_round(tally.turnaround_seconds) * 1e6,
    );
    Ok(pad)
}

/// The read ceiling's share that moving `bytes` in `seconds` reaches.
fn roofline(ceiling_gbs: Option<f64>, bytes: f64, seconds: f64) -> Option<f64> {
    ceiling_gbs
        .filter(|_| seconds > 0.0)
        .map(|c| bytes / seconds / (c * 1e9))
}

/// Runs the plan: the warm-up reps, then the timed ones. `startup_seconds` counts from now.
pub fn run<B: Backend>(m: &mut Model<B>, plan: &BenchPlan) -> Result<BenchResult> {
    run_from(m, plan, Instant::now(), &mut NoMeter)
}

/// [`run`], with `startup_seconds` counted from `started` (the process's start, for `engine
/// bench`), the warm-up's part of it said on stderr, and the card read through `meter`.
pub fn run_from<B: Backend>(
    m: &mut Model<B>,
    plan: &BenchPlan,
    started: Instant,
    meter: &mut dyn Meter,
) -> Result<BenchResult> {
    plan.check()?;
    m.check_fit(plan.n_prompt, plan.n_gen)?;
    let prompts = prompts(plan.seed, plan.prompts, plan.n_prompt, m.cfg.vocab);
    let mut outs: Vec<Vec<u32>> = prompts
        .iter()
        .map(|_| Vec::with_capacity(plan.n_gen + 1))
        .collect();
    if let Some(pct) = plan.decode_pad_pct {
        // From the first round: a backend that records rounds records the pad with them.
        m.pad_rounds(pct / 100.0)?;
    }
    let warmup = plan.warmup;
    let warmup_plan = plan.warmup_rep();
    let warmup_started = Instant::now();
    for w in 0..warmup {
        eprintln!("warmup {}/{warmup}", w + 1);
        rep(m, &warmup_plan, &prompts, &mut outs, meter)?;
    }
    // The warm-up's pads are not the timed reps'.
    m.backend.take_pad_tally()?;
    let before = m.backend.prefetch_counts();
    let mut reps = Vec::with_capacity(plan.reps);
    let mut times = Vec::with_capacity(plan.reps);
    let mut first_tokens: Option<Vec<Vec<u32>>> = None;
    let held_after_warmup = meter.held_mib();
    let timed_started = Instant::now();
    eprintln!(
        "start-up {:.3} s to the first timed rep, the warm-up's {warmup} reps (graph captures \
         included) {:.3} s of it",
        (timed_started - started).as_secs_f64(),
        (timed_started - warmup_started).as_secs_f64()
    );
    for r in 0..plan.reps {
        let rep_started = Instant::now();
        let rr = rep(m, plan, &prompts, &mut outs, meter)?;
        times.push(RepTimes {
            prefill_s: rr.prefill_s,
            decode_s: rr.decode_s,
            prefill_j: rr.prefill_j,
            decode_j: rr.decode_j,
            seconds: rep_started.elapsed().as_secs_f64(),
        });
        eprintln!(
            "rep {}/{}: prefill {:.3} s, decode {:.3} s",
            r + 1,
            plan.reps,
            rr.prefill_s,
            rr.decode_s
        );
        match &first_tokens {
            None => first_tokens = Some(outs.clone()),
            Some(f) if *f != outs => bail!(
                "rep {} generated different tokens than rep 1: the engine is not deterministic",
                r + 1
            ),
            Some(_) => {}
        }
        if let Some(first) = reps.first().map(|x: &Rep| x.spec) {
            if first != rr.spec {
                bail!("rep {} ran different speculation counts than rep 1", r + 1);
            }
        }
        reps.push(rr);
    }
    let decode_pad = match plan.decode_pad_pct {
        Some(pct) => Some(timed_pad(m, pct)?),
        None => None,
    };
    let after = m.backend.prefetch_counts();
    let device_mem_peak_mib = held_after_warmup.max(meter.held_mib());
    let generated = (plan.reps * plan.prompts * plan.n_gen).max(1) as f64;
    let ctx = (plan.n_prompt + plan.n_gen / 2) as f64;
    let spec = reps[0].spec;
    let (prefill_seconds_mean, decode_seconds_mean) = rep_means(&times);
    let round_bytes = bytes_per_round(&m.cfg, ctx, plan.draft_tokens);
    // Bytes a rep's decode moved: its rounds, and plain steps for the rest.
    let moved = match plan.draft_tokens {
        None => round_bytes * (plan.n_gen * plan.prompts) as f64,
        Some(_) => {
            round_bytes * spec.rounds as f64
                + bytes_per_round(&m.cfg, ctx, None) * spec.fallback_steps as f64
        }
    };
    let roofline_fraction = roofline(plan.read_ceiling_gbs, moved, decode_seconds_mean);
    Ok(BenchResult {
        model: m.cfg.name.clone(),
        backend: m.backend.name().to_string(),
        plan: plan.clone(),
        threads: rayon::current_num_threads(),
        prefill_seconds_mean,
        decode_seconds_mean,
        spec,
        output_digest: digest(first_tokens.as_deref().unwrap_or_default()),
        state_pool_bytes: m.map.total_bytes(),
        prefetch: after.mode.name(),
        pool_layout: m.map.layout.name(),
        prefetch_bytes_per_token: (after.issued_bytes - before.issued_bytes) as f64 / generated,
        prefetch_walked_bytes_per_token: (after.walked_bytes - before.walked_bytes) as f64
            / generated,
        bytes_per_round: round_bytes,
        roofline_fraction,
        // The caller reads the device back for a GPU run; on the CPU there is none.
        l2: L2Audit::no_device(),
        decode_pad,
        timed_seconds: times.iter().map(|t| t.seconds).sum(),
        reps: times,
        decode_bytes: moved,
        startup_seconds: (timed_started - started).as_secs_f64(),
        device_mem_peak_mib,
    })
}

/// The runs of one plan on models built in turn (`engine bench --layouts`) as one result: the
/// timed reps of all in order, their means, the start-up to the first timed rep of the first.
/// Refuses runs that generated different tokens or speculated differently.
pub fn merge_layouts(results: Vec<BenchResult>) -> Result<BenchResult> {
    let mut runs = results.into_iter();
    let Some(mut merged) = runs.next() else {
        bail!("no run to merge")
    };
    for (k, r) in runs.enumerate() {
        if r.output_digest != merged.output_digest || r.spec != merged.spec {
            bail!(
                "layout {} generated different tokens than layout 1: the engine's output \
                 depends on where its memory lies",
                k + 2
            );
        }
        merged.reps.extend(r.reps);
        merged.timed_seconds += r.timed_seconds;
        merged.device_mem_peak_mib = merged.device_mem_peak_mib.max(r.device_mem_peak_mib);
        merged.decode_pad = match (merged.decode_pad, r.decode_pad) {
            (Some(a), Some(b)) => Some(DecodePad {
                tally: a.tally + b.tally,
                ..a
            }),
            _ => None,
        };
        merged.l2 = r.l2;
    }
    (merged.prefill_seconds_mean, merged.decode_seconds_mean) = rep_means(&merged.reps);
    merged.plan.reps = merged.reps.len();
    merged.roofline_fraction = roofline(
        merged.plan.read_ceiling_gbs,
        merged.decode_bytes,
        merged.decode_seconds_mean,
    );
    Ok(merged)
}

/// The mean prefill and decode seconds of the timed reps.
fn rep_means(reps: &[RepTimes]) -> (f64, f64) {
    let n = reps.len() as f64;
    let mean = |f: fn(&RepTimes) -> f64| reps.iter().map(f).sum::<f64>() / n;
    (mean(|r| r.prefill_s), mean(|r| r.decode_s))
}

/// RFC 4180 quoting where needed.
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl BenchResult {
    /// The decode's microseconds per generated token (`decode_us_per_token`).
    pub fn decode_us_per_token(&self) -> f64 {
        let tokens = (self.plan.n_gen * self.plan.prompts).max(1) as f64;
        self.decode_seconds_mean * 1e6 / tokens
    }

    /// Joules per generated token over the timed decodes, or `None` without an energy counter.
    pub fn decode_j_per_token(&self) -> Option<f64> {
        let tokens = self.plan.n_gen * self.plan.prompts;
        self.joules_per_token(|r| r.decode_j, tokens)
    }

    /// Joules per prompt token over the timed prefills.
    pub fn prefill_j_per_token(&self) -> Option<f64> {
        let tokens = self.plan.n_prompt * self.plan.prompts;
        self.joules_per_token(|r| r.prefill_j, tokens)
    }

    fn joules_per_token(
        &self,
        j: impl Fn(&RepTimes) -> Option<f64>,
        per_rep: usize,
    ) -> Option<f64> {
        let total = self.reps.iter().map(j).sum::<Option<f64>>()?;
        let tokens = (per_rep * self.reps.len()).max(1) as f64;
        Some(total / tokens)
    }

    /// The result as timed rep `k` (0-based) alone saw it: its prefill, decode and wall
    /// times and what follows from them; every other figure is the run's.
    pub fn for_rep(&self, k: usize) -> BenchResult {
        let rep = self.reps[k];
        BenchResult {
            prefill_seconds_mean: rep.prefill_s,
            decode_seconds_mean: rep.decode_s,
            roofline_fraction: roofline(
                self.plan.read_ceiling_gbs,
                self.decode_bytes,
                rep.decode_s,
            ),
            timed_seconds: rep.seconds,
            reps: vec![rep],
            ..self.clone()
        }
    }

    const BASE_HEADER: &'static str = "model,backend,n_prompt,n_gen,prompts,reps,prefill_chunk,threads,\
prefill_seconds_mean,prefill_tok_s,decode_seconds_mean,decode_tok_s,decode_us_per_token,\
total_seconds_mean,startup_seconds,timed_seconds,spec,draft_tokens,spec_rounds,spec_fallback_steps,spec_acceptance_rate,output_digest,\
state_pool_bytes,prefetch,pool_layout,prefetch_bytes_per_token,prefetch_walked_bytes_per_token,seed,bytes_per_round,read_ceiling_gbs,\
roofline_fraction,decode_pad_pct,decode_pad_us,decode_pad_own_us,decode_pad_turnaround_us,decode_j_per_token,prefill_j_per_token,device_mem_peak_mib";

    /// The CSV header: the run's columns, then the L2 audit's.
    pub fn header() -> String {
        format!("{},{}", Self::BASE_HEADER, L2Audit::COLUMNS.join(","))
    }

    pub fn row(&self) -> String {
        let p = &self.plan;
        let per = |tokens: usize, s: f64| if s > 0.0 { tokens as f64 / s } else { 0.0 };
        // One of the pad's counts, in µs a round.
        let pad_us = |count: fn(&PadTally) -> f64| {
            self.decode_pad
                .map(|d| format!("{:.3}", d.tally.per_round(count(&d.tally)) * 1e6))
                .unwrap_or_default()
        };
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
            format!(
                "{:.3}",
                per(p.n_prompt * p.prompts, self.prefill_seconds_mean)
            ),
            format!("{:.6}", self.decode_seconds_mean),
            format!("{:.3}", per(p.n_gen * p.prompts, self.decode_seconds_mean)),
            format!("{:.3}", self.decode_us_per_token()),
            format!(
                "{:.6}",
                self.prefill_seconds_mean + self.decode_seconds_mean
            ),
            format!("{:.6}", self.startup_seconds),
            format!("{:.6}", self.timed_seconds),
            if p.draft_tokens.is_some() {
                "mtp"
            } else {
                "none"
            }
            .to_string(),
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
            format!("{:.0}", self.bytes_per_round),
            p.read_ceiling_gbs
                .map(|c| format!("{c:.1}"))
                .unwrap_or_default(),
            self.roofline_fraction
                .map(|f| format!("{f:.4}"))
                .unwrap_or_default(),
            self.decode_pad
                .map(|p| p.pct.to_string())
                .unwrap_or_default(),
            pad_us(|t| t.waited_seconds),
            pad_us(|t| t.own_seconds),
            pad_us(|t| t.turnaround_seconds),
            self.decode_j_per_token()
                .map(|j| format!("{j:.6}"))
                .unwrap_or_default(),
            self.prefill_j_per_token()
                .map(|j| format!("{j:.6}"))
                .unwrap_or_default(),
            self.device_mem_peak_mib
                .map(|m| m.to_string())
                .unwrap_or_default(),
        ];
        format!("{},{}", fields.join(","), self.l2.values().join(","))
    }
}
