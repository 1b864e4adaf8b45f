//! `engine bench --rows ops`: where the decode's time goes, one row per operation (CPU) or
//! kernel (CUDA), timed by the backend's op clock ([`Backend::start_op_clock`]) in reps of
//! their own, run after the timed reps, so that the timed reps run exactly as they do
//! without the rows.

use crate::backend::{Backend, OpTime};
use crate::bench::{self, BenchPlan};
use crate::model::Model;
use anyhow::{bail, Result};
use std::collections::HashMap;
use std::time::Instant;

/// One operation's or kernel's row.
#[derive(Clone, Debug, PartialEq)]
pub struct OpRow {
    pub name: String,
    pub launches_per_token: f64,
    pub us_per_token: f64,
    /// Its share of the decode step in the breakdown's reps (a fraction).
    pub share: f64,
}

/// The rows, longest first, and the decode step they were timed in.
#[derive(Clone, Debug, PartialEq)]
pub struct Breakdown {
    pub rows: Vec<OpRow>,
    /// The decode's microseconds per generated token in the breakdown's reps, as the host
    /// clock measured it around each decode.
    pub step_us_per_token: f64,
}

impl Breakdown {
    /// What the rows cover of their own step, and what timing them cost against the timed
    /// reps' step, in words for stderr.
    pub fn describe(&self, timed_us_per_token: f64) -> String {
        let covered: f64 = self.rows.iter().map(|r| r.us_per_token).sum();
        format!(
            "op rows: {} rows cover {covered:.1} of {:.1} µs a token ({:.1} %) in their own reps; \
             the timed reps ran {timed_us_per_token:.1} µs a token, so timing the rows cost {:+.2} %",
            self.rows.len(),
            self.step_us_per_token,
            100.0 * covered / self.step_us_per_token,
            100.0 * (self.step_us_per_token / timed_us_per_token - 1.0)
        )
    }
}

/// Times `plan.reps` reps' decodes on the op clock, after `warmups` untimed reps (a model
/// built for the breakdown alone needs its own, to capture its graphs; one that just ran the
/// timed reps does not). `pad_pct` is the timed reps' decode pad, run here too, so that the
/// rounds are the ones the timed reps ran. The reps must generate `digest`'s tokens: rows
/// of other tokens would describe another decode.
pub fn run<B: Backend>(
    m: &mut Model<B>,
    plan: &BenchPlan,
    warmups: usize,
    pad_pct: Option<f64>,
    digest: &str,
) -> Result<Breakdown> {
    let prompts = bench::prompts(plan.seed, plan.prompts, plan.n_prompt, m.cfg.vocab);
    let mut outs: Vec<Vec<u32>> = prompts
        .iter()
        .map(|_| Vec::with_capacity(plan.n_gen + 1))
        .collect();
    if let Some(pct) = pad_pct {
        m.pad_rounds(pct / 100.0)?;
    }
    for w in 0..warmups {
        eprintln!("op rows: warmup {}/{warmups}", w + 1);
        rep(m, plan, &prompts, &mut outs, None)?;
    }
    let mut totals = Totals::default();
    for r in 0..plan.reps {
        eprintln!("op rows: rep {}/{}", r + 1, plan.reps);
        rep(m, plan, &prompts, &mut outs, Some(&mut totals))?;
        if bench::digest(&outs) != digest {
            bail!(
                "the op rows' rep {} generated other tokens than the timed reps: its rows would \
                 describe another decode",
                r + 1
            );
        }
    }
    let tokens = (plan.reps * plan.prompts * plan.n_gen) as f64;
    Ok(totals.rows(tokens))
}

/// What the op clock timed, summed over the decodes.
#[derive(Default)]
struct Totals {
    ops: HashMap<String, (u64, f64)>,
    decode_s: f64,
}

impl Totals {
    fn add(&mut self, times: Vec<OpTime>, decode_s: f64) {
        for t in times {
            let total = self.ops.entry(t.name).or_default();
            total.0 += t.calls;
            total.1 += t.seconds;
        }
        self.decode_s += decode_s;
    }

    fn rows(self, tokens: f64) -> Breakdown {
        let decode_s = self.decode_s;
        let mut rows: Vec<OpRow> = self
            .ops
            .into_iter()
            .map(|(name, (calls, seconds))| OpRow {
                name,
                launches_per_token: calls as f64 / tokens,
                us_per_token: seconds * 1e6 / tokens,
                share: seconds / decode_s,
            })
            .collect();
        rows.sort_by(|a, b| {
            b.us_per_token
                .total_cmp(&a.us_per_token)
                .then_with(|| a.name.cmp(&b.name))
        });
        Breakdown {
            rows,
            step_us_per_token: decode_s * 1e6 / tokens,
        }
    }
}

/// One rep over every prompt; with `totals`, each decode on the op clock (the prefill is not
/// part of the step).
fn rep<B: Backend>(
    m: &mut Model<B>,
    plan: &BenchPlan,
    prompts: &[Vec<u32>],
    outs: &mut [Vec<u32>],
    mut totals: Option<&mut Totals>,
) -> Result<()> {
    for (prompt, out) in prompts.iter().zip(outs.iter_mut()) {
        out.clear();
        let first = bench::prefill(m, plan, prompt)?;
        out.push(first);
        if totals.is_some() {
            m.backend.start_op_clock()?;
        }
        let started = Instant::now();
        bench::decode(m, plan, first, out);
        let decode_s = started.elapsed().as_secs_f64();
        m.backend.take_error()?;
        if let Some(totals) = totals.as_deref_mut() {
            totals.add(m.backend.read_op_clock()?, decode_s);
        }
    }
    Ok(())
}
