//! Small ladders computed by hand, checked to the last digit against METHOD.md (method 2).

mod common;

use common::{close, one, Hand};
use ladder::spec::{Better, StopSpec};
use ladder::Role;

const T975_2: f64 = 4.302652729911275;

/// Base 99, 100, 101 in the analysis passes; `on` 1 %, 2 %, 3 % above it; `null` equal.
fn three_arms() -> Hand {
    let mut hand = Hand::new(
        &[("off", Role::Base), ("on", Role::Arm), ("null", Role::Null)],
        &[("tok_s", Better::Higher)],
        4,
    );
    hand.sample.split = true;
    hand.sample.digest = true;
    hand.extra_columns = vec![
        "spec_rounds".into(),
        "decode_seconds_mean".into(),
        "output_digest".into(),
    ];
    hand
}

fn base_value(pass: usize) -> f64 {
    [50.0, 99.0, 100.0, 101.0][pass]
}

fn value(column: &str, pass: usize, arm: usize) -> String {
    let base = base_value(pass);
    match (column, arm) {
        ("tok_s", 0) | ("tok_s", 2) => format!("{base}"),
        ("tok_s", _) => format!("{}", base * (1.0 + 0.01 * pass as f64)),
        ("spec_rounds", 1) => "8".into(),
        ("spec_rounds", _) => "10".into(),
        ("decode_seconds_mean", 1) => "0.9".into(),
        ("decode_seconds_mean", _) => "1.0".into(),
        ("output_digest", 2) if pass == 2 => "beef".into(),
        _ => "abcd".into(),
    }
}

/// Asserts that `(lo, hi)`, in percent, is the interval `mean ± half` of log ratios.
fn assert_interval(what: &str, (lo, hi): (f64, f64), mean: f64, half: f64, tol: f64) {
    let pct = |l: f64| 100.0 * l.exp_m1();
    let (want_lo, want_hi) = (pct(mean - half), pct(mean + half));
    assert!(
        (lo - want_lo).abs() < tol,
        "{what}: low {lo}, want {want_lo}"
    );
    assert!(
        (hi - want_hi).abs() < tol,
        "{what}: high {hi}, want {want_hi}"
    );
}

fn sd(v: &[f64]) -> f64 {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

#[test]
fn geometric_mean_and_its_interval_by_hand() {
    let report = one("by_hand", three_arms().text(value));
    assert!(
        report.connected && report.statistics,
        "{:?}",
        report.defects
    );
    assert_eq!(report.analysis_passes, 3);
    let on = &report.metrics[0].arms[0];
    assert_eq!((on.arm.as_str(), on.against.as_str()), ("on", "off"));
    // l = ln 1.01, ln 1.02, ln 1.03; the deltas shown are 1, 2, 3 %.
    let l = [1.01f64.ln(), 1.02f64.ln(), 1.03f64.ln()];
    for (got, want) in on.deltas_pct.iter().zip([1.0, 2.0, 3.0]) {
        assert!((got - want).abs() < 1e-9, "{got} {want}");
    }
    let mean = l.iter().sum::<f64>() / 3.0;
    let se = sd(&l) / 3f64.sqrt();
    let f = &on.figures;
    assert!(
        close(f.estimate_pct, 100.0 * (mean.exp() - 1.0)),
        "{}",
        f.estimate_pct
    );
    assert!(close(f.sem_pct, 100.0 * se));
    assert_interval("on", (f.ci_low_pct, f.ci_high_pct), mean, T975_2 * se, 1e-9);
    assert!((f.median_pct - 2.0).abs() < 1e-9);
    assert_eq!(
        (f.n, f.verdict, on.holm_verdict),
        (3, "not resolved", "not resolved")
    );
}

#[test]
fn paired_noise_drift_and_the_gate_by_hand() {
    let report = one("noise", three_arms().text(value));
    let m = &report.metrics[0];
    // Residuals of ln x = μ[p] + α[a] + ε: double-centered logs, σ² = RSS / ((3−1)(3−1)).
    let y: Vec<[f64; 3]> = (1..4)
        .map(|p| {
            let b = base_value(p);
            [b.ln(), (b * (1.0 + 0.01 * p as f64)).ln(), b.ln()]
        })
        .collect();
    let row = |p: usize| y[p].iter().sum::<f64>() / 3.0;
    let col = |a: usize| y.iter().map(|r| r[a]).sum::<f64>() / 3.0;
    let grand = (0..3).map(row).sum::<f64>() / 3.0;
    let rss: f64 = (0..3)
        .flat_map(|p| (0..3).map(move |a| (p, a)))
        .map(|(p, a)| (y[p][a] - row(p) - col(a) + grand).powi(2))
        .sum();
    let want = 100.0 * (2.0 * rss / 4.0).sqrt();
    assert!(
        close(m.paired_noise_pct, want),
        "{} {want}",
        m.paired_noise_pct
    );
    // Drift: the base spread (sd 1 of 99, 100, 101 over the mean 100) and the largest step of μ.
    assert!(close(m.drift_pct, 1.0), "{}", m.drift_pct);
    let step = (row(1) - row(0)).abs().max((row(2) - row(1)).abs());
    assert!(
        (m.drift_step_pct - 100.0 * step.exp_m1()).abs() < 1e-9,
        "{}",
        m.drift_step_pct
    );
    // The paired noise (about 0.6 %) exceeds the limit of 0.2 %: disqualified, every number kept.
    assert!(!m.within_noise_limit);
    assert_eq!(report.disqualified_by, vec!["noise-limit"]);
}

#[test]
fn drift_alone_never_disqualifies_and_no_limit_means_no_gate() {
    // The base wanders 20 % over the ladder; the arm is 1 % better in every pass, exactly.
    let mut hand = Hand::new(
        &[("off", Role::Base), ("on", Role::Arm)],
        &[("x", Better::Higher)],
        6,
    );
    hand.sample.noise_limit_pct = Some(0.1);
    let drifting = |_: &str, p: usize, a: usize| {
        format!(
            "{}",
            100.0 * (1.0 + 0.04 * p as f64) * if a == 1 { 1.01 } else { 1.0 }
        )
    };
    let report = one("drift", hand.text(drifting));
    let m = &report.metrics[0];
    assert!(m.drift_pct > 5.0, "{}", m.drift_pct);
    assert!(m.paired_noise_pct < 1e-9, "{}", m.paired_noise_pct);
    assert!(report.qualified, "{:?}", report.disqualified_by);
    hand.sample.noise_limit_pct = None;
    let report = one("no_gate", hand.text(drifting));
    assert_eq!(report.metrics[0].noise_limit_pct, None);
    assert!(report.metrics[0].within_noise_limit && report.qualified);
}

/// Speed exact to the last digit beside joules that wander ±2 % from cell to cell.
fn speed_and_joules() -> Hand {
    let mut hand = Hand::new(
        &[("off", Role::Base), ("on", Role::Arm)],
        &[("tok_s", Better::Higher), ("joules", Better::Lower)],
        6,
    );
    hand.sample.noise_limit_pct = Some(0.5);
    hand
}

fn speed_and_joules_value(column: &str, p: usize, a: usize) -> String {
    let wander = [1.0, 1.02, 0.98, 1.01, 0.99, 1.03][(p + 2 * a) % 6];
    match column {
        "tok_s" => format!("{}", 100.0 * if a == 1 { 1.01 } else { 1.0 }),
        _ => format!("{}", 50.0 * wander),
    }
}

#[test]
fn a_metrics_own_noise_limit_replaces_the_specs_for_that_metric_only() {
    let mut hand = speed_and_joules();
    let report = one("one_limit", hand.text(speed_and_joules_value));
    let joules = &report.metrics[1];
    assert!(joules.paired_noise_pct > 1.0, "{}", joules.paired_noise_pct);
    assert_eq!(report.disqualified_by, vec!["noise-limit"]);
    // The joules' own limit, above their noise: qualified, the speed still under the spec's.
    hand.sample.metrics[1].noise_limit_pct = Some(5.0);
    let report = one("own_limit", hand.text(speed_and_joules_value));
    let (speed, joules) = (&report.metrics[0], &report.metrics[1]);
    assert_eq!(
        (speed.noise_limit_pct, joules.noise_limit_pct),
        (Some(0.5), Some(5.0))
    );
    assert!(report.qualified, "{:?}", report.disqualified_by);
    // An own limit on the speed does not loosen the joules: they fall back to the spec's.
    hand.sample.metrics[1].noise_limit_pct = None;
    hand.sample.metrics[0].noise_limit_pct = Some(5.0);
    let report = one("other_limit", hand.text(speed_and_joules_value));
    assert_eq!(report.metrics[1].noise_limit_pct, Some(0.5));
    assert!(!report.metrics[1].within_noise_limit);
    assert_eq!(report.disqualified_by, vec!["noise-limit"]);
}

#[test]
fn controls_are_read_at_level_one_minus_005_over_k() {
    // Two controls: k = 2, level 0.975, t(0.9875, 3) over 4 analysis passes.
    let mut hand = Hand::new(
        &[
            ("off", Role::Base),
            ("null", Role::Null),
            ("again", Role::Reflexive),
        ],
        &[("x", Better::Higher)],
        5,
    );
    hand.sample.noise_limit_pct = None;
    let ratios: [f64; 5] = [1.0, 1.001, 0.999, 1.002, 0.998];
    let report = one(
        "controls",
        hand.text(|_, p, a| format!("{}", 100.0 * if a == 1 { ratios[p] } else { 1.0 })),
    );
    let c = &report.metrics[0].controls[0];
    assert_eq!((c.arm.as_str(), c.level), ("null", 0.975));
    let l: Vec<f64> = ratios[1..].iter().map(|r| r.ln()).collect();
    let mean = l.iter().sum::<f64>() / 4.0;
    let half = 4.176534 * sd(&l) / 2.0;
    assert_interval("null", (c.ci_low_pct, c.ci_high_pct), mean, half, 1e-5);
    assert_eq!(c.holds, Some(true));
    assert_eq!(report.metrics[0].controls[1].level, 0.975);
    assert!(report.qualified);
}

#[test]
fn a_control_whose_interval_excludes_0_disqualifies() {
    let drifting = |column: &str, pass: usize, arm: usize| match (column, arm) {
        ("tok_s", 2) => "105".to_string(),
        ("tok_s", _) => format!("{}", [100.0, 100.0, 100.1, 99.9][pass]),
        _ => value(column, pass, arm),
    };
    let mut hand = three_arms();
    hand.sample.noise_limit_pct = Some(5.0);
    let report = one("control", hand.text(drifting));
    assert_eq!(report.disqualified_by, vec!["control:null"]);
    let null = &report.metrics[0].controls[0];
    assert_eq!((null.holds, null.level), (Some(false), 0.95));
    assert!(null.ci_low_pct > 0.0);
}

#[test]
fn contrasts_in_log_space_and_holm_over_the_arms() {
    let report = one("contrasts", three_arms().text(value));
    let m = &report.metrics[0];
    let names: Vec<(&str, &str)> = m
        .contrasts
        .iter()
        .map(|c| (c.arm.as_str(), c.against.as_str()))
        .collect();
    assert_eq!(names, [("on", "off"), ("null", "off"), ("null", "on")]);
    // null against on: exactly minus on against off, in log space.
    let mean = (1.01f64 * 1.02 * 1.03).ln() / 3.0;
    assert!(close(
        m.contrasts[2].figures.estimate_pct,
        100.0 * ((-mean).exp() - 1.0)
    ));
    assert_eq!(
        m.contrasts[0].figures.estimate_pct,
        m.arms[0].figures.estimate_pct
    );
}

#[test]
fn holm_adjusts_the_family_of_arms_against_the_base() {
    // Two arms, both about 1 % better with small noise: p of each from its t test, and Holm
    // multiplies the smaller by 2 and the larger by 1 (keeping the order).
    let mut hand = Hand::new(
        &[("off", Role::Base), ("a", Role::Arm), ("b", Role::Arm)],
        &[("x", Better::Higher)],
        5,
    );
    hand.sample.noise_limit_pct = None;
    let a = [1.0, 1.010, 1.012, 1.008, 1.011];
    let b = [1.0, 1.004, 1.0, 1.012, 1.002];
    let report = one(
        "holm",
        hand.text(|_, p, arm| format!("{}", 100.0 * [1.0, a[p], b[p]][arm])),
    );
    let arms = &report.metrics[0].arms;
    let (pa, pb) = (arms[0].p_value, arms[1].p_value);
    assert!(pa < pb);
    assert!(
        close(arms[0].holm_p, (2.0 * pa).min(1.0)),
        "{} {pa}",
        arms[0].holm_p
    );
    assert!(
        close(arms[1].holm_p, pb.max(2.0 * pa).min(1.0)),
        "{} {pb}",
        arms[1].holm_p
    );
    assert_eq!(arms[0].holm_verdict, "better");
}

#[test]
fn round_split_is_the_geometric_mean_of_each_factor() {
    let report = one("split", three_arms().text(value));
    let split = report.round_split.as_ref().unwrap();
    let on = &split.arms[0];
    assert!(close(on.total_pct, 100.0 * (1.0 / 0.9 - 1.0)));
    assert!(close(on.count_pct, 25.0));
    assert!(close(
        on.speed_pct,
        100.0 * ((1.0 / 10.0) / (0.9 / 8.0) - 1.0)
    ));
    assert!(!split.rounds_identical);
    assert_eq!((split.differing_cells.len(), split.cells), (3, 9));
    let identity = report.identity.as_ref().unwrap();
    assert_eq!(
        (identity.comparisons, identity.identical, identity.distinct),
        (6, 5, 2)
    );
    assert_eq!(
        (
            identity.differing[0].pass,
            identity.differing[0].arm.as_str()
        ),
        (2, "null")
    );
}

/// A cell without its round count is left out of the split: its arm's pass and, where the
/// base lacks it, the whole pass; neither is counted among the cells compared. A file reads
/// a missing value as a gap only with its defects: a warm-up cell failed.
#[test]
fn a_cell_without_its_round_count_is_left_out_of_the_split() {
    let text = three_arms().text(|column, pass, arm| match (column, pass, arm) {
        ("spec_rounds", 2, 1) | ("spec_rounds", 3, 0) => String::new(),
        _ => value(column, pass, arm),
    });
    let text = common::edit_rows(&text, |row| {
        if (row.get("ladder_pass"), row.get("ladder_arm")) == ("0", "null") {
            row.set("ladder_exit", 1);
        }
        true
    });
    let report = &common::read_with("split_gaps", &[text], true).reports[0];
    let split = report.round_split.as_ref().unwrap();
    // Pass 1 holds every cell, pass 2 all but `on`'s: five cells, one of them differing.
    assert_eq!((split.cells, split.differing_cells.len()), (5, 1));
    assert_eq!(split.differing_cells[0].pass, 1);
    let n: Vec<usize> = split.arms.iter().map(|a| a.n).collect();
    assert_eq!(n, vec![1, 2]);
    assert!(close(split.arms[0].count_pct, 25.0));
}

/// Two arms and one metric over at most 10 passes (1 warm-up), stopping at ±0.5 % at `looks`.
fn stop_hand(looks: Vec<usize>) -> Hand {
    let mut hand = Hand::new(
        &[("off", Role::Base), ("on", Role::Arm)],
        &[("x", Better::Higher)],
        10,
    );
    hand.sample.noise_limit_pct = None;
    hand.sample.stop = Some(StopSpec {
        halfwidth_pct: 0.5,
        looks,
        spread: Default::default(),
        metrics: Vec::new(),
        within_s: None,
    });
    hand
}

#[test]
fn a_stopped_ladder_reads_its_passes_with_the_first_looks_spread() {
    // Looks at 4, 7 and 10 passes (1 warm-up); the ladder stopped at look 7. The interval
    // uses s0 of the first look's 3 analysis passes, t(0.975, 2), and √6.
    let hand = stop_hand(vec![4, 7, 10]);
    let r: [f64; 10] = [1.0, 1.01, 1.02, 1.03, 1.00, 1.04, 1.02, 9.0, 9.0, 9.0];
    let text = hand.text_until(7, |_, p, a| {
        format!("{}", 100.0 * if a == 1 { r[p] } else { 1.0 })
    });
    let reading = common::read_with("stopped", &[text], true);
    let report = &reading.reports[0];
    assert_eq!(report.analysis_passes, 6);
    let stop = report.stopped.as_ref().unwrap();
    assert_eq!(
        (stop.look, stop.reason.as_str(), stop.first_look),
        (7, "precision", 4)
    );
    let l: Vec<f64> = r[1..7].iter().map(|x| x.ln()).collect();
    let s0 = sd(&l[..3]);
    let mean = l.iter().sum::<f64>() / 6.0;
    let f = &report.metrics[0].arms[0].figures;
    assert_eq!(f.n, 6);
    assert!(close(f.sem_pct, 100.0 * s0 / 6f64.sqrt()), "{}", f.sem_pct);
    let half = T975_2 * s0 / 6f64.sqrt();
    assert_interval("on", (f.ci_low_pct, f.ci_high_pct), mean, half, 1e-9);
    let mut json = Vec::new();
    analyze::export::json::write(&reading, &mut json).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(value["ladders"][0]["stopped"]["look"], 7);
    assert_eq!(value["ladders"][0]["stopped"]["reason"], "precision");
}

#[test]
fn a_metric_that_is_not_a_positive_number_in_a_connected_ladder_is_refused_by_line() {
    // The runner fails such a cell; in a connected file it can only be an edit, and no
    // statistic may read it as a missing cell.
    let hand = Hand::new(
        &[("off", Role::Base), ("on", Role::Arm)],
        &[("x", Better::Higher)],
        4,
    );
    for bad in ["0", "-1.5", "inf", "NaN", "fast"] {
        let text = hand.text(|_, p, a| match (p, a) {
            (2, 1) => bad.to_string(),
            _ => "100".to_string(),
        });
        let line = 1 + text
            .lines()
            .position(|l| l.ends_with(&format!(",{bad}")))
            .unwrap();
        let Err(error) = common::try_read_with("bad-metric", &[text], false) else {
            panic!("{bad}: the ladder was read");
        };
        let error = format!("{error:#}");
        assert!(
            error.contains(&format!(
                ":{line}: column x is {bad:?}, not a positive number"
            )),
            "{bad}: {error}"
        );
    }
}

#[test]
fn a_ladder_that_stopped_at_its_first_look_is_stopped_not_cut_off() {
    // Looks at 4 and 10 passes; the first look's spread met the goal, so the ladder ended
    // there. Stein's rule ran: it is not a fixed ladder cut off before its first look.
    let hand = stop_hand(vec![4, 10]);
    let r: [f64; 4] = [1.0, 1.01, 1.011, 1.012];
    let text = hand.text_until(4, |_, p, a| {
        format!("{}", 100.0 * if a == 1 { r[p] } else { 1.0 })
    });
    let report = common::one("first-look", text);
    let stop = report.stopped.as_ref().unwrap();
    assert_eq!((stop.look, stop.first_look, stop.fixed), (4, 4, false));
    let summary = analyze::export::markdown::summary(std::slice::from_ref(&report));
    assert!(summary.contains("stopped at look 4"), "{summary}");
}

#[test]
fn a_stopped_ladder_whose_noise_rose_reads_its_own_spread_and_says_so() {
    // Looks at 4 and 10 passes (1 warm-up). The first look's 3 analysis passes move by
    // 0.4 % (a need of about 12 passes: it runs to the last look); the 6 after it by 3 %.
    // By the first look's spread the interval would be far too narrow: every interval is
    // read from the 9 passes' own spread with t(0.975, 8).
    let hand = stop_hand(vec![4, 10]);
    let r: [f64; 10] = [1.0, 1.0, 1.004, 1.008, 1.03, 0.97, 1.03, 0.97, 1.03, 0.97];
    let text = hand.text_until(10, |_, p, a| {
        format!("{}", 100.0 * if a == 1 { r[p] } else { 1.0 })
    });
    let reading = common::read_with("rose", &[text], false);
    let report = &reading.reports[0];
    assert!(report.connected, "{}", report.verdict);
    let stop = report.stopped.as_ref().unwrap();
    assert_eq!((stop.look, stop.first_look), (10, 4));
    let rise = report.metrics[0].noise_rise.unwrap();
    assert!(rise.rose && rise.ratio > 5.0, "{rise:?}");
    assert_eq!((rise.df_first, rise.df_later), (2, 5));
    let l: Vec<f64> = r[1..10].iter().map(|x| x.ln()).collect();
    let mean = l.iter().sum::<f64>() / 9.0;
    let half = ladder::stats::t975(8) * sd(&l) / 3.0;
    let f = &report.metrics[0].arms[0].figures;
    assert_interval("on", (f.ci_low_pct, f.ci_high_pct), mean, half, 1e-9);
    assert_eq!(report.noise_rose(), vec![("x", rise)]);
    // Both summaries name the metric and the factor, in the one sentence.
    let detail = |metric: &str| {
        format!(
            " ({metric}: {}; its intervals use the whole ladder's spread)",
            rise.factor()
        )
    };
    let terminal = analyze::export::terminal::summary(&reading.reports);
    let wanted = format!("; noise rose after the first look{}", detail("x"));
    assert!(terminal.contains(&wanted), "{terminal}");
    let markdown = analyze::export::markdown::summary(&reading.reports);
    let wanted = format!(
        "; **noise rose after the first look**{}",
        detail("<code>x</code>")
    );
    assert!(markdown.contains(&wanted), "{markdown}");
}

#[test]
fn an_interrupted_ladder_reads_only_the_passes_it_ran() {
    // Planned for up to 10 passes (1 warm-up), killed after its 5th pass: no done record.
    // Read with --allow-defects, it has 4 analysis passes, not the 9 the order planned, and
    // says it was interrupted, not where it stopped.
    let hand = stop_hand(vec![8, 10]);
    let r: [f64; 5] = [1.0, 1.01, 1.02, 1.03, 1.00];
    let text = hand.text_until(5, |_, p, a| {
        format!("{}", 100.0 * if a == 1 { r[p] } else { 1.0 })
    });
    let interrupted: String = text
        .lines()
        .filter(|l| !l.starts_with("#ladder-done"))
        .map(|l| format!("{l}\n"))
        .collect();
    let reading = common::read_with("interrupted", &[interrupted], true);
    let report = &reading.reports[0];
    assert_eq!(report.analysis_passes, 4);
    assert_eq!(report.metrics[0].arms[0].figures.n, 4);
    let stop = report.stopped.as_ref().unwrap();
    assert_eq!(stop.look, 5);
    assert!(stop.reason.starts_with("interrupted"), "{}", stop.reason);
    // Cut off before its first look (8): a fixed ladder's interval, from its 4 passes' sd.
    assert!(stop.fixed);
    let l: Vec<f64> = r[1..5].iter().map(|x| x.ln()).collect();
    let mean = l.iter().sum::<f64>() / 4.0;
    let half = ladder::stats::t975(3) * sd(&l) / 2.0;
    let f = &report.metrics[0].arms[0].figures;
    assert_interval("on", (f.ci_low_pct, f.ci_high_pct), mean, half, 1e-9);
}

#[test]
fn a_pooled_stop_reads_every_arm_with_one_first_look_spread() {
    // Three arms, looks at 4, 7 and 10 passes (1 warm-up), `spread = "pooled"`, stopped at
    // look 7. Every interval uses s0 from the additive model over the first look's 3 analysis
    // passes and all 3 arms: s0² = 2·RSS/((3−1)(3−1)), t(0.975, 4), and √6.
    let mut hand = Hand::new(
        &[("off", Role::Base), ("on", Role::Arm), ("null", Role::Null)],
        &[("x", Better::Higher)],
        10,
    );
    hand.sample.noise_limit_pct = None;
    hand.sample.stop = Some(StopSpec {
        halfwidth_pct: 0.5,
        looks: vec![4, 7, 10],
        spread: ladder::spec::StopSpread::Pooled,
        metrics: Vec::new(),
        within_s: None,
    });
    let on: [f64; 7] = [1.0, 1.01, 1.02, 1.03, 1.00, 1.04, 1.02];
    let null: [f64; 7] = [1.0, 1.005, 0.99, 1.0, 1.01, 0.995, 1.0];
    let level = |p: usize, a: usize| [1.0, on[p], null[p]][a];
    let text = hand.text_until(7, |_, p, a| format!("{}", 100.0 * level(p, a)));
    let reading = common::read_with("pooled", &[text], true);
    let report = &reading.reports[0];
    // The additive model's residuals over passes 1–3, by hand.
    let y = |p: usize, a: usize| (100.0 * level(p, a)).ln();
    let pass_mean = |p: usize| (0..3).map(|a| y(p, a)).sum::<f64>() / 3.0;
    let arm_mean = |a: usize| (1..4).map(|p| y(p, a)).sum::<f64>() / 3.0;
    let grand = (1..4).map(pass_mean).sum::<f64>() / 3.0;
    let rss: f64 = (1..4)
        .flat_map(|p| (0..3).map(move |a| (p, a)))
        .map(|(p, a)| (y(p, a) - pass_mean(p) - arm_mean(a) + grand).powi(2))
        .sum();
    let s0 = (2.0 * rss / 4.0).sqrt();
    const T975_4: f64 = 2.776445105197793;
    let check = |arm: &str, lo: f64, hi: f64| {
        let series: [f64; 7] = if arm == "on" { on } else { null };
        let l: Vec<f64> = series[1..7].iter().map(|x| x.ln()).collect();
        let mean = l.iter().sum::<f64>() / 6.0;
        assert_interval(arm, (lo, hi), mean, T975_4 * s0 / 6f64.sqrt(), 1e-9);
    };
    let m = &report.metrics[0];
    for a in &m.arms {
        check(&a.arm, a.figures.ci_low_pct, a.figures.ci_high_pct);
        assert!(close(a.figures.sem_pct, 100.0 * s0 / 6f64.sqrt()));
    }
    // The null control is the family's only test: its interval at 95 %, with the same s0.
    let control = &m.controls[0];
    assert_eq!((control.arm.as_str(), control.level), ("null", 0.95));
    check("null", control.ci_low_pct, control.ci_high_pct);
    let mut json = Vec::new();
    analyze::export::json::write(&reading, &mut json).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(value["ladders"][0]["stopped"]["spread"], "pooled");
}

/// The start record's binary blake3 replaced, as if another build had run the same spec.
fn with_binary(text: &str, blake3: &str) -> String {
    let at = text
        .find("\"binary\"")
        .expect("start record names its binary");
    let key = "\"blake3\":\"";
    let from = at + text[at..].find(key).expect("binary blake3") + key.len();
    let to = from + text[from..].find('"').unwrap();
    format!("{}{blake3}{}", &text[..from], &text[to..])
}

/// `text` with each arm's own binary in its start record, at the spec binary's path: the
/// blake3 `blake3s[a]` for arm `a`, as `ladder/2` records build arms.
fn with_arm_binaries(text: &str, blake3s: &[&str]) -> String {
    let (start, rest) = text.split_once('\n').expect("a start record line");
    let json = start
        .strip_prefix("#ladder-start ")
        .expect("the start record first");
    let mut record: serde_json::Value = serde_json::from_str(json).unwrap();
    let path = record["binary"]["path"].clone();
    let arms = record["arms"].as_array_mut().expect("the arms");
    for (arm, blake3) in arms.iter_mut().zip(blake3s) {
        arm["binary"] = serde_json::json!({"path": path, "blake3": blake3});
    }
    format!("#ladder-start {record}\n{rest}")
}

#[test]
fn an_arm_shows_its_own_binary_only_where_it_differs_from_the_specs() {
    let text = three_arms().text(value);
    let spec = common::one("spec_binary", text.clone())
        .run
        .unwrap()
        .binary_blake3;
    let other = "0".repeat(64);
    let report = one(
        "arm_binaries",
        with_arm_binaries(&text, &[&spec, &other, &spec]),
    );
    let run = report.run.unwrap();
    let own: Vec<Option<&str>> = run
        .arms
        .iter()
        .map(|a| a.binary.as_ref().map(|b| b.blake3.as_str()))
        .collect();
    assert_eq!(own, [None, Some(other.as_str()), None]);
    assert_eq!(
        run.arm_binaries(),
        format!("off={spec} on={other} null={spec}")
    );
    let same = one(
        "arm_binaries_same",
        with_arm_binaries(&text, &[spec.as_str(); 3]),
    );
    assert_eq!(
        same.run.unwrap().arm_binaries(),
        spec,
        "one binary, named once"
    );
}

#[test]
fn a_start_record_whose_card_is_null_ran_on_no_card() {
    let text = three_arms().text(value);
    assert!(text.lines().next().unwrap().contains("\"card\":null"));
    assert_eq!(one("no_card", text).run.unwrap().card_label(), "no card");
}

#[test]
fn ladders_of_different_binaries_are_not_called_replications() {
    let text = three_arms().text(value);
    let same = common::read("same_binary", &[text.clone(), text.clone()]);
    assert!(!same.replications.is_empty());
    assert!(
        same.replications
            .iter()
            .all(|q| q.same_binary && q.replicates),
        "one binary twice replicates"
    );

    let other = with_binary(&text, &"0".repeat(64));
    let differ = common::read("two_binaries", &[text, other]);
    assert!(!differ.replications.is_empty());
    for q in &differ.replications {
        assert!(!q.same_binary, "{}: two binaries read as one", q.quantity);
        assert_eq!(q.binaries[1], "0".repeat(64));
    }
    let dir = std::env::temp_dir().join(format!("analyze_binaries_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let md = dir.join("report.md");
    analyze::export::markdown::write(&differ, &md).unwrap();
    let text = std::fs::read_to_string(&md).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        text.contains("**Different binaries**")
            && text.contains("binaries differ: a change, not a replication"),
        "{text}"
    );
    assert!(!text.contains("replicates: within the limit"), "{text}");
}
