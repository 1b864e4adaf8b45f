//! `--warmup-decode N`: each warm-up rep decodes N tokens a prompt instead of the timed reps'
//! count, changing no output, with the decode pad as without it.

mod common;

use common::tiny_bench as run;
use engine::bench::BenchPlan;

fn plan(warmup_decode: Option<usize>, decode_pad_pct: Option<f64>) -> BenchPlan {
    BenchPlan {
        n_prompt: 12,
        n_gen: 24,
        reps: 2,
        warmup: 1,
        warmup_decode,
        prefill_chunk: 8,
        draft_tokens: None,
        prompts: 2,
        seed: 4,
        read_ceiling_gbs: None,
        decode_pad_pct,
    }
}

#[test]
fn a_short_warmup_decodes_its_own_count_and_changes_no_token() {
    let (full, full_rounds) = run(&plan(None, None));
    let (short, short_rounds) = run(&plan(Some(3), None));
    assert_eq!(short.output_digest, full.output_digest);
    // Plain decode: a round a token. Two prompts, one warm-up rep, two timed reps.
    assert_eq!(full_rounds, 2 * 24 + 2 * 2 * 24);
    assert_eq!(short_rounds, 2 * 3 + 2 * 2 * 24);
}

#[test]
fn a_padded_bench_runs_the_same_short_warmup() {
    // No extra rep times the pad: the warm-up is as short with it as without it.
    let (padded, rounds) = run(&plan(Some(3), Some(5.0)));
    let pad = padded.decode_pad.expect("a pad");
    assert_eq!(pad.tally.rounds, 2 * 2 * 24, "the timed rounds");
    assert_eq!(rounds, 2 * 3 + 2 * 2 * 24);
}

#[test]
fn a_warmup_decode_outside_one_to_the_timed_count_is_refused() {
    for n in [0, 25] {
        let e = plan(Some(n), None).check().unwrap_err().to_string();
        assert!(
            e.contains(&format!("--warmup-decode {n}")) && e.contains("1 to 24"),
            "{e}"
        );
    }
    assert!(plan(Some(24), None).check().is_ok());
}
