//! Method 2.1's control rules on small ladders: one family over every (control, metric)
//! pair, the pre-registered margin, the known-effect control, a control that cannot be read,
//! and a metric with no residual.

mod common;

use analyze::analysis::{self, Design, LadderReport};
use analyze::frames::Grid;
use common::{one, Hand};
use ladder::sample::{Sample, SampleArm, SampleMetric};
use ladder::spec::{ArmSpec, Better, Expected, MetricSpec};
use ladder::stats::t_quantile;
use ladder::Role;

fn two_metrics(sample: &mut Sample) {
    sample.metrics.push(SampleMetric {
        column: "prefill_tok_s".into(),
        better: Better::Higher,
        level: 1000.0,
        noise_limit_pct: None,
    });
}

fn report_of(name: &str, sample: &Sample) -> LadderReport {
    one(name, sample.file_text())
}

#[test]
fn the_control_family_spans_every_metric() {
    // A null and a reflexive control on two metrics: K = 4, each interval at 1 − 0.05/4.
    let arms = vec![
        SampleArm::new("off", Role::Base, 0.0),
        SampleArm::new("null", Role::Null, 0.0),
        SampleArm::new("again", Role::Reflexive, 0.0),
    ];
    let mut sample = Sample::new("family", "t1", arms);
    two_metrics(&mut sample);
    let report = report_of("family", &sample);
    assert_eq!(report.control_family, 4);
    for m in &report.metrics {
        for c in &m.controls {
            assert_eq!(c.level, 1.0 - 0.05 / 4.0, "{}", c.arm);
            // The interval is the series' own at that level.
            let a = m.arms.iter().find(|a| a.arm == c.arm).unwrap();
            let half_95 = (a.figures.ci_high_pct - a.figures.ci_low_pct) / 2.0;
            let half = (c.ci_high_pct - c.ci_low_pct) / 2.0;
            let ratio = t_quantile(1.0 - 0.025 / 4.0, 6) / t_quantile(0.975, 6);
            assert!((half / half_95 - ratio).abs() < 1e-3, "{half} {half_95}");
        }
    }
    // A known-effect arm joins the family on every metric its expected_pct names.
    let mut sample = sample.clone();
    sample
        .arms
        .push(SampleArm::known_effect("pad", -4.762, -4.762));
    assert_eq!(report_of("family_known", &sample).control_family, 6);
}

fn margin_ladder(noise_pct: f64, control_effect_pct: f64, margin: f64) -> LadderReport {
    let arms = vec![
        SampleArm::new("off", Role::Base, 0.0),
        SampleArm::new("null", Role::Null, control_effect_pct),
    ];
    let mut sample = Sample::new("margin", "t1", arms);
    sample.passes = 12;
    sample.noise_pct = noise_pct;
    sample.noise_limit_pct = None;
    sample.equivalence_margin_pct = Some(margin);
    report_of("margin", &sample)
}

#[test]
fn with_a_margin_a_control_holds_only_inside_it() {
    // Quiet ladder, no true effect: the interval lies inside ±0.5 %.
    let report = margin_ladder(0.05, 0.0, 0.5);
    let c = &report.metrics[0].controls[0];
    assert_eq!((c.holds, c.rule), (Some(true), "within ±margin"), "{c:?}");
    assert!(report.qualified);
    // Quiet ladder, a true 1 % effect: the interval lies outside ±0.5 %.
    let report = margin_ladder(0.05, 1.0, 0.5);
    let c = &report.metrics[0].controls[0];
    assert_eq!(c.holds, Some(false), "{c:?}");
    assert!(c.ci_low_pct > 0.5);
    assert_eq!(report.disqualified_by, vec!["control:null"]);
    // Noisy ladder, no true effect: the interval holds 0 but is wider than the margin, so
    // the control cannot show it holds (the point rule would have passed it).
    let report = margin_ladder(2.0, 0.0, 0.1);
    let c = &report.metrics[0].controls[0];
    assert!(c.ci_low_pct < 0.0 && c.ci_high_pct > 0.0, "{c:?}");
    assert_eq!(c.holds, Some(false), "{c:?}");
    assert!(
        c.reading(Some(0.1)).1.contains("too wide"),
        "{:?}",
        c.reading(Some(0.1))
    );
    assert_eq!(report.disqualified_by, vec!["control:null"]);
}

fn known_ladder(expected: f64, truth: f64) -> LadderReport {
    let arms = vec![
        SampleArm::new("off", Role::Base, 0.0),
        SampleArm::known_effect("pad", expected, truth),
    ];
    let mut sample = Sample::new("known", "t1", arms);
    sample.noise_limit_pct = None;
    report_of("known", &sample)
}

#[test]
fn a_known_effect_holds_when_its_interval_contains_the_expected_effect() {
    let report = known_ladder(-4.762, -4.762);
    let c = &report.metrics[0].controls[0];
    assert_eq!(
        (c.role, c.holds, c.rule, c.expected_pct),
        (
            Role::KnownEffect,
            Some(true),
            "contains expected",
            Some(-4.762)
        ),
        "{c:?}"
    );
    assert!(report.qualified, "{:?}", report.disqualified_by);
    // The interval misses the expected effect: the ladder cannot see a known effect right.
    let report = known_ladder(-4.762, -2.0);
    let c = &report.metrics[0].controls[0];
    assert_eq!(c.holds, Some(false), "{c:?}");
    assert!(c.ci_low_pct > -4.762);
    assert_eq!(report.disqualified_by, vec!["control:pad"]);
}

#[test]
fn a_control_that_cannot_be_read_disqualifies_the_ladder() {
    let arm = |name: &str, role: Role, expected: Option<f64>| ArmSpec {
        name: name.into(),
        role,
        env: Default::default(),
        command: None,
        args: None,
        expected_pct: expected.map(Expected::Every),
        pad_pct: None,
    };
    let arms = [
        arm("off", Role::Base, None),
        arm("null", Role::Null, None),
        arm("pad", Role::KnownEffect, Some(-5.0)),
    ];
    let metric = MetricSpec {
        column: "x".into(),
        better: Better::Higher,
        row: 0,
        noise_limit_pct: None,
    };
    let design = Design::new(&arms, std::slice::from_ref(&metric), None, None);
    // Five passes; the controls' cells are missing in all but one analysis pass.
    let mut grid = Grid::new(5, 3);
    for p in 0..5 {
        for a in 0..3 {
            let at = p * 3 + a;
            grid.slots[at] = a as u32;
            grid.values[at] = if a > 0 && p > 1 {
                f64::NAN
            } else {
                100.0 + p as f64
            };
        }
    }
    let m = analysis::read_metric(
        &design,
        &metric,
        &grid,
        1..5,
        analysis::MetricSpread::OWN,
        None,
    );
    for c in &m.controls {
        assert!(!c.readable && c.holds == Some(false), "{c:?}");
        assert_eq!(c.reading(None).0, "cannot be read");
    }
    assert_eq!(
        analysis::disqualifications(std::slice::from_ref(&m)),
        vec!["control-unreadable:null", "control-unreadable:pad"]
    );
    // Their p-values count as 1 in Holm's family.
    assert!(
        m.arms.iter().all(|a| a.holm_p == 1.0),
        "{:?}",
        m.arms.iter().map(|a| a.holm_p).collect::<Vec<_>>()
    );
}

#[test]
fn a_metric_with_no_residual_is_not_testable_for_order_and_never_flags() {
    // A round count: the same in every cell of an arm.
    let mut hand = Hand::new(
        &[("off", Role::Base), ("on", Role::Arm), ("null", Role::Null)],
        &[("rounds", Better::Lower)],
        9,
    );
    hand.sample.noise_limit_pct = None;
    let report = one(
        "no_residual",
        hand.text(|_, _, a| ["64", "60", "64"][a].into()),
    );
    let e = &report.metrics[0].order_effects;
    assert!(
        e.no_residual && !e.position_testable && e.position_p.is_none(),
        "{e:?}"
    );
    assert!(!report.order_sensitive);
    assert!(report.qualified, "{:?}", report.disqualified_by);
}
