//! Properties every reading must have, over generated ladders.

mod common;

use analyze::analysis::split_factors;
use common::{close, one, Hand};
use ladder::spec::Better;
use ladder::Role;
use proptest::prelude::*;

/// A pseudo-random but fixed value for (pass, arm), around 100.
fn noisy(pass: usize, arm: usize) -> f64 {
    let h = ((pass * 7919 + arm * 104_729) as f64 * 0.618_033_988_75).fract();
    100.0 * (1.0 + 0.01 * arm as f64) * (1.0 + 0.004 * (h - 0.5))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// In log space `b` against `a` is exactly minus `a` against `b`: swapping two arms'
    /// declared order negates the mean log ratio of their contrast, and maps the interval
    /// `[lo, hi]` onto `[−hi, −lo]`, for any values.
    #[test]
    fn swapping_two_arms_negates_their_contrast(
        values in proptest::collection::vec((50.0f64..150.0, 50.0f64..150.0, 50.0f64..150.0), 4..10)
    ) {
        let passes = values.len();
        let arms = [("off", Role::Base), ("a", Role::Arm), ("b", Role::Arm)];
        let swapped = [("off", Role::Base), ("b", Role::Arm), ("a", Role::Arm)];
        let cell = |p: usize, a: usize| { let v = values[p]; [v.0, v.1, v.2][a] };
        let forward = one("swap_f", Hand::new(&arms, &[("x", Better::Higher)], passes).text(|_, p, a| format!("{}", cell(p, a))));
        let backward = one("swap_b", Hand::new(&swapped, &[("x", Better::Higher)], passes).text(|_, p, a| format!("{}", cell(p, [0, 2, 1][a]))));
        let (f, b) = (&forward.metrics[0].contrasts[2], &backward.metrics[0].contrasts[2]);
        prop_assert_eq!((f.arm.as_str(), f.against.as_str(), b.arm.as_str(), b.against.as_str()), ("b", "a", "a", "b"));
        let log = |pct: f64| (1.0 + pct / 100.0).ln();
        let (ef, eb) = (log(f.figures.estimate_pct), log(b.figures.estimate_pct));
        prop_assert!((ef + eb).abs() < 1e-12, "{} {}", ef, eb);
        prop_assert!((log(f.figures.ci_low_pct) + log(b.figures.ci_high_pct)).abs() < 1e-12);
        prop_assert!((f.figures.sem_pct - b.figures.sem_pct).abs() < 1e-12);
        prop_assert_eq!(f.figures.verdict == "better", b.figures.verdict == "worse");
    }
}

#[test]
fn scaling_a_metric_leaves_the_deltas_unchanged() {
    let hand = Hand::new(
        &[("off", Role::Base), ("on", Role::Arm)],
        &[("x", Better::Higher)],
        6,
    );
    let plain = one("scale_1", hand.text(|_, p, a| format!("{}", noisy(p, a))));
    let scaled = one(
        "scale_k",
        hand.text(|_, p, a| format!("{}", noisy(p, a) * 1024.0)),
    );
    let (d1, d2) = (
        &plain.metrics[0].arms[0].deltas_pct,
        &scaled.metrics[0].arms[0].deltas_pct,
    );
    assert_eq!(d1.len(), 5);
    for (x, y) in d1.iter().zip(d2) {
        assert!(close(*x, *y), "{x} {y}");
    }
}

#[test]
fn higher_and_lower_agree_on_a_time_and_its_inverse() {
    let hand = Hand::new(
        &[("off", Role::Base), ("on", Role::Arm), ("z", Role::Arm)],
        &[("tok_s", Better::Higher), ("s_per_tok", Better::Lower)],
        6,
    );
    let report = one(
        "inverse",
        hand.text(|c, p, a| {
            let v = noisy(p, a);
            format!("{}", if c == "tok_s" { v } else { 1.0 / v })
        }),
    );
    let (high, low) = (&report.metrics[0], &report.metrics[1]);
    for (h, l) in high.arms.iter().zip(&low.arms) {
        for (x, y) in h.deltas_pct.iter().zip(&l.deltas_pct) {
            assert!((x - y).abs() < 1e-9, "{x} {y}");
        }
    }
    for (h, l) in high.contrasts.iter().zip(&low.contrasts) {
        assert!((h.figures.estimate_pct - l.figures.estimate_pct).abs() < 1e-9);
    }
}

#[test]
fn the_round_split_multiplies_back_to_the_total() {
    for i in 0..1000 {
        let v = |k: usize| 0.5 + noisy(i, k) / 100.0;
        let (tb, ta, rb, ra) = (v(0), v(1) * 1.3, (10 + i % 7) as f64, (9 + i % 5) as f64);
        let (total, count, speed) = split_factors(tb, ta, rb, ra);
        assert!(close(total, count * speed), "{total} {count} {speed}");
        assert!(close(total, tb / ta));
    }
}
