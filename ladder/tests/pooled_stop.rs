//! The stopping rule under `[stop] spread = "pooled"` (METHOD.md "The pooled first-look
//! spread"): every arm of a metric needs the passes of one pooled `s0`.

use ladder::pooled::pooled_spread;
use ladder::spec::{StopSpec, StopSpread};
use ladder::stop::MetricValues;

fn values(rows: &[&[f64]]) -> MetricValues {
    MetricValues {
        metric: "m".into(),
        values: rows
            .iter()
            .map(|r| r.iter().map(|&v| Some(v)).collect())
            .collect(),
    }
}

#[test]
fn a_pooled_plan_gives_every_arm_the_pooled_need() {
    let arms = ["base".to_string(), "a".into(), "b".into()];
    let v = values(&[
        &[9.0, 1.0, 1.0],
        &[100.0, 101.0, 99.0],
        &[110.0, 110.0, 111.0],
        &[90.0, 91.8, 90.5],
    ]);
    let stop = StopSpec {
        halfwidth_pct: 1.0,
        looks: vec![4, 12, 40],
        spread: StopSpread::Pooled,
        metrics: Vec::new(),
        within_s: None,
    };
    let plan = stop.plan(1, 0, &arms, std::slice::from_ref(&v));
    let (s0, df) = pooled_spread(&v.values, 1..4);
    assert_eq!(df, 4);
    assert_eq!(plan.need.passes, stop.need(s0, df));
    let per_arm = StopSpec {
        spread: StopSpread::PerArm,
        ..stop.clone()
    };
    let need_a = per_arm.passes_needed(&v.log_ratios(1, 0, 1..4));
    let need_b = per_arm.passes_needed(&v.log_ratios(2, 0, 1..4));
    let own = per_arm.plan(1, 0, &arms, std::slice::from_ref(&v));
    assert_eq!(own.need.passes, need_a.max(need_b));
    assert_ne!(own.need.passes, plan.need.passes);
    // A missing value at the first look: no need, the last look.
    let mut gap = v.clone();
    gap.values[2][2] = None;
    let plan = stop.plan(1, 0, &arms, &[gap]);
    assert!(plan.need.passes.is_nan());
    assert_eq!(plan.look, 40);
}
