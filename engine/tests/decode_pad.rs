//! `ENGINE_DECODE_PAD_PCT`, the known-effect control, through `engine bench`'s own loop on the
//! CPU: every timed round waits P % of its own time (engine/src/pad.rs), and the pad changes no
//! token and no round.

mod common;

use common::{tiny_bench as run, tiny_model};
use engine::bench::{self, BenchPlan};
use engine::options::Arm;

fn plan(draft_tokens: Option<usize>, decode_pad_pct: Option<f64>) -> BenchPlan {
    BenchPlan {
        n_prompt: 12,
        n_gen: 24,
        reps: 2,
        warmup: 1,
        warmup_decode: None,
        prefill_chunk: 8,
        draft_tokens,
        prompts: 2,
        seed: 4,
        read_ceiling_gbs: None,
        decode_pad_pct,
    }
}

/// The decode rounds of one rep, from a run's total over its warm-up and timed reps.
fn per_rep(plan: &BenchPlan, rounds: u64) -> u64 {
    let reps = (plan.warmup + plan.reps) as u64;
    assert_eq!(rounds % reps, 0, "{rounds} rounds over {reps} reps");
    rounds / reps
}

#[test]
fn the_pad_changes_no_token_and_no_round() {
    for draft in [None, Some(2)] {
        let base_plan = plan(draft, None);
        let (base, base_rounds) = run(&base_plan);
        assert_eq!(base.decode_pad, None, "unset: no pad");
        for pct in [0.0, 5.0, 300.0] {
            let padded_plan = plan(draft, Some(pct));
            let (padded, rounds) = run(&padded_plan);
            let what = format!("draft {draft:?}, ENGINE_DECODE_PAD_PCT={pct}");
            assert_eq!(padded.output_digest, base.output_digest, "{what}");
            assert_eq!(padded.spec, base.spec, "{what}");
            assert_eq!(
                per_rep(&padded_plan, rounds),
                per_rep(&base_plan, base_rounds),
                "{what}"
            );
            assert_eq!(padded.decode_pad.map(|p| p.pct), Some(pct), "{what}");
        }
    }
}

/// Every timed round, speculative rounds, replays and fallback steps alike, waits P % of its
/// own time: at P = 1000 the pads are 10/11 of the decode, and a pad missing from a tenth of
/// the rounds, or one timed on a round's share, breaks that.
#[test]
fn every_timed_round_waits_p_percent_of_itself() {
    for draft in [None, Some(2)] {
        let plan = plan(draft, Some(1000.0));
        let (r, rounds) = run(&plan);
        let pad = r.decode_pad.expect("the pad was asked for");
        let per_rep = per_rep(&plan, rounds);
        assert_eq!(
            pad.tally.rounds,
            per_rep * plan.reps as u64,
            "draft {draft:?}"
        );
        let steps = r.spec.rounds + r.spec.fallback_steps;
        match draft {
            None => assert_eq!(per_rep, (plan.n_gen * plan.prompts) as u64),
            Some(_) => assert!(
                per_rep > steps,
                "the replays are rounds too: {per_rep} rounds, {steps} rounds and fallback steps"
            ),
        }
        let decode = r.decode_seconds_mean * plan.reps as f64;
        let share = pad.tally.waited_seconds / decode;
        assert!(
            (0.85..=0.92).contains(&share),
            "draft {draft:?}: the pads waited {} s of a {decode} s decode ({share:.3}, 10/11 \
             expected)",
            pad.tally.waited_seconds
        );
        let t = pad.tally;
        assert!((pad.round_seconds() * t.rounds as f64 - t.waited_seconds).abs() < 1e-12);
        // What each wait was P % of: the rounds' own time and turnarounds, the rest of the
        // decode (the first round's turnaround is the last one before it, outside the decode).
        let counted = t.own_seconds + t.turnaround_seconds;
        // Never less than the rule; more only by a spin the scheduler took the core from.
        let ratio = t.waited_seconds / counted;
        assert!(
            (9.99..=10.5).contains(&ratio),
            "draft {draft:?}: waited {ratio} times what the rounds counted"
        );
        assert!(
            (0.9..=1.01).contains(&((counted + t.waited_seconds) / decode)),
            "draft {draft:?}: {counted} s counted and {} s waited of a {decode} s decode",
            t.waited_seconds
        );
    }
}

/// The pad is a share of the round alone: with 240 prompt positions prefilled one at a time
/// and one token decoded, the prefill is most of a rep, and lies between the warm-up's last
/// round and the timed one, where no turnaround is counted.
#[test]
fn the_pad_is_a_share_of_the_round_alone() {
    let plan = BenchPlan {
        n_prompt: 240,
        n_gen: 1,
        prefill_chunk: 1,
        prompts: 1,
        reps: 1,
        ..plan(None, Some(5.0))
    };
    let (r, _) = run(&plan);
    let pad = r.decode_pad.expect("the pad was asked for");
    assert_eq!(pad.tally.rounds, 1);
    assert!(
        pad.tally.waited_seconds * 80.0 < r.prefill_seconds_mean,
        "a 5 % pad of one round waited {} s, the prefill of 240 positions took {} s",
        pad.tally.waited_seconds,
        r.prefill_seconds_mean
    );
}

/// No rep times the pad: without a warm-up every timed round is padded all the same.
#[test]
fn the_pad_needs_no_warmup_rep() {
    let plan = BenchPlan {
        warmup: 0,
        warmup_decode: None,
        ..plan(None, Some(5.0))
    };
    plan.check().unwrap();
    let (r, rounds) = run(&plan);
    let pad = r.decode_pad.expect("the pad was asked for");
    assert_eq!(pad.tally.rounds, rounds, "every round is a timed one");
    assert!(pad.tally.waited_seconds > 0.0);
}

/// The timing itself, on the build machine's two noisy cores: alternated runs of P = 20
/// against unset, the median of the decode time ratios within 5 points of 1.2. The ladder is
/// the real check; this one is run by hand.
#[test]
#[ignore = "timing on a noisy machine: run by hand"]
fn a_twenty_percent_pad_slows_the_decode_by_a_sixth() {
    let plan = |pct| BenchPlan {
        n_gen: 96,
        reps: 3,
        ..self::plan(None, pct)
    };
    let (mut base, mut padded) = (
        tiny_model(4, Arm::default(), 8),
        tiny_model(4, Arm::default(), 8),
    );
    let mut ratios: Vec<f64> = (0..7)
        .map(|_| {
            let b = bench::run(&mut base, &plan(None)).unwrap();
            let p = bench::run(&mut padded, &plan(Some(20.0))).unwrap();
            p.decode_seconds_mean / b.decode_seconds_mean
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    eprintln!("decode time padded / unpadded: {ratios:.4?}, median {median:.4} (expected 1.2)");
    assert!((median - 1.2).abs() <= 0.05, "median ratio {median}");
}
