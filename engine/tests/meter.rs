//! The joules `engine bench` writes (`decode_j_per_token`, `prefill_j_per_token`) and the
//! memory it held (`device_mem_peak_mib`), read through a meter whose counter runs at a known
//! power: the figures must be that power times the timed spans, per token, and the memory the
//! most the meter ever said.

mod common;

use common::tiny_model;
use engine::bench::{self, BenchPlan};
use engine::meter::Meter;
use engine::options::Arm;
use std::time::Instant;

/// A card that draws `watts` from its creation on, and whose held memory grows by 1 MiB a read.
struct Steady {
    since: Instant,
    watts: f64,
    reads: u64,
}

impl Meter for Steady {
    fn energy_mj(&mut self) -> Option<u64> {
        Some((self.since.elapsed().as_secs_f64() * self.watts * 1e3) as u64)
    }
    fn held_mib(&mut self) -> Option<u64> {
        self.reads += 1;
        Some(100 + self.reads)
    }
}

fn plan() -> BenchPlan {
    BenchPlan {
        n_prompt: 96,
        n_gen: 96,
        reps: 3,
        warmup: 1,
        warmup_decode: None,
        prefill_chunk: 32,
        draft_tokens: None,
        prompts: 2,
        seed: 4,
        read_ceiling_gbs: None,
        decode_pad_pct: None,
    }
}

#[test]
fn joules_per_token_are_the_power_times_each_timed_span_per_token() {
    let plan = plan();
    let mut m = tiny_model(plan.seed, Arm::default(), plan.prefill_chunk);
    let mut meter = Steady {
        since: Instant::now(),
        watts: 400.0,
        reads: 0,
    };
    let r = bench::run_from(&mut m, &plan, Instant::now(), &mut meter).unwrap();
    let decode = r.decode_j_per_token().unwrap();
    let want = 400.0 * r.decode_us_per_token() / 1e6;
    assert!(
        (decode / want - 1.0).abs() < 0.1,
        "decode {decode} J/token, power × time per token {want}"
    );
    let prefill = r.prefill_j_per_token().unwrap();
    let tokens = (plan.n_prompt * plan.prompts) as f64;
    let want = 400.0 * r.prefill_seconds_mean / tokens;
    assert!(
        (prefill / want - 1.0).abs() < 0.1,
        "prefill {prefill} J/token, power × time per token {want}"
    );
    // Read after the warm-up and after the timed reps: the later, larger one.
    assert_eq!(r.device_mem_peak_mib, Some(102));
    // Each rep's own row carries its own joules.
    let rep = r.for_rep(1);
    let want = 400.0 * r.reps[1].decode_s / (plan.n_gen * plan.prompts) as f64;
    let got = rep.decode_j_per_token().unwrap();
    assert!(
        (got / want - 1.0).abs() < 0.1,
        "rep 2: {got} against {want}"
    );
}

#[test]
fn without_a_counter_the_columns_stay_empty() {
    let plan = plan();
    let mut m = tiny_model(plan.seed, Arm::default(), plan.prefill_chunk);
    let r = bench::run(&mut m, &plan).unwrap();
    assert_eq!(r.decode_j_per_token(), None);
    assert_eq!(r.device_mem_peak_mib, None);
    let header: Vec<_> = bench::BenchResult::header()
        .split(',')
        .map(String::from)
        .collect();
    let row = r.row();
    let row: Vec<_> = row.split(',').collect();
    for column in [
        "decode_j_per_token",
        "prefill_j_per_token",
        "device_mem_peak_mib",
    ] {
        let i = header.iter().position(|h| h == column).unwrap();
        assert_eq!(row[i], "", "{column}");
    }
}
