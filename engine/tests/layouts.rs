//! `engine bench --layouts N`: the runs of one plan on models built in turn, merged into one
//! result (the placement itself needs a device: `cuda_backend.rs`).

mod common;

use common::tiny_bench as run;
use engine::bench::{merge_layouts, BenchPlan};

fn plan(seed: u64, reps: usize) -> BenchPlan {
    BenchPlan {
        n_prompt: 12,
        n_gen: 16,
        reps,
        warmup: 1,
        warmup_decode: None,
        prefill_chunk: 8,
        draft_tokens: None,
        prompts: 1,
        seed,
        read_ceiling_gbs: Some(100.0),
        decode_pad_pct: None,
    }
}

#[test]
fn the_merged_result_holds_every_layouts_reps_and_their_means() {
    let (first, _) = run(&plan(3, 2));
    let (second, _) = run(&plan(3, 3));
    let merged = merge_layouts(vec![first.clone(), second.clone()]).unwrap();
    let reps: Vec<_> = first.reps.iter().chain(&second.reps).copied().collect();
    assert_eq!(merged.reps, reps, "every timed rep, in order");
    assert_eq!(merged.plan.reps, 5, "the reps column counts them all");
    let mean = |f: fn(&engine::bench::RepTimes) -> f64| reps.iter().map(f).sum::<f64>() / 5.0;
    assert!((merged.decode_seconds_mean - mean(|r| r.decode_s)).abs() < 1e-12);
    assert!((merged.prefill_seconds_mean - mean(|r| r.prefill_s)).abs() < 1e-12);
    assert_eq!(
        merged.startup_seconds, first.startup_seconds,
        "to the first timed rep"
    );
    let timed = first.timed_seconds + second.timed_seconds;
    assert!((merged.timed_seconds - timed).abs() < 1e-12);
    let roofline = merged.decode_bytes / merged.decode_seconds_mean / 100e9;
    assert!((merged.roofline_fraction.unwrap() - roofline).abs() < 1e-12);
    assert_eq!(merged.output_digest, first.output_digest);
}

#[test]
fn one_layout_is_its_own_result() {
    let (only, _) = run(&plan(3, 2));
    let merged = merge_layouts(vec![only.clone()]).unwrap();
    assert_eq!(merged.reps, only.reps);
    assert_eq!(merged.decode_seconds_mean, only.decode_seconds_mean);
}

#[test]
fn layouts_that_generated_other_tokens_are_refused() {
    let (first, _) = run(&plan(3, 1));
    let (other, _) = run(&plan(4, 1));
    assert_ne!(first.output_digest, other.output_digest);
    let e = merge_layouts(vec![first.clone(), first, other])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("layout 3") && e.contains("different tokens"),
        "{e}"
    );
}

#[test]
fn the_merged_pad_counts_every_layouts_rounds_and_waits() {
    let padded = BenchPlan {
        decode_pad_pct: Some(5.0),
        ..plan(3, 2)
    };
    let (a, _) = run(&padded);
    let (b, _) = run(&padded);
    let (pa, pb) = (a.decode_pad.unwrap(), b.decode_pad.unwrap());
    let merged = merge_layouts(vec![a, b])
        .unwrap()
        .decode_pad
        .expect("a pad");
    let (m, ta, tb) = (merged.tally, pa.tally, pb.tally);
    assert_eq!(m.rounds, ta.rounds + tb.rounds);
    for (what, merged, a, b) in [
        (
            "waited",
            m.waited_seconds,
            ta.waited_seconds,
            tb.waited_seconds,
        ),
        ("own", m.own_seconds, ta.own_seconds, tb.own_seconds),
        (
            "turnaround",
            m.turnaround_seconds,
            ta.turnaround_seconds,
            tb.turnaround_seconds,
        ),
    ] {
        assert!(a > 0.0 && b > 0.0, "{what}: {a} and {b} s");
        assert!((merged - (a + b)).abs() < 1e-12, "{what}");
    }
    assert_eq!(merged.pct, 5.0);
}
