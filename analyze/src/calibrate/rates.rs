//! What one simulated ladder's reading is boiled down to, and the rates over many.

use super::breakdown::BreakdownTally;
use super::simulate::NoiseModel;
use super::Plan;
use crate::analysis::{self, MetricReport};
use ladder::stats::clopper_pearson;
use ladder::Role;
use serde::Serialize;

/// One simulated ladder's reading, boiled down to what is counted.
pub struct Tally {
    /// Verdicts of arms with no true effect, and how many were resolved.
    null_verdicts: usize,
    false_verdicts: usize,
    /// The metrics (each one Holm family) in which a Holm verdict resolved among the arms
    /// with no true effect.
    holm_false: usize,
    families: usize,
    gate: bool,
    /// Per inert control test (arm, metric): the arm, and whether the control held.
    pub inert: Vec<(usize, bool)>,
    /// Per known-effect test (arm, metric): whether the control held.
    pub known: Vec<bool>,
    disqualified: bool,
    order_sensitive: bool,
    /// A metric's drift-within-passes test rejected.
    drifting: bool,
    /// For each `arm` arm with a true effect: (covered, resolved better).
    effect: Vec<(bool, bool)>,
    /// Estimates of the arms with no true effect, and with carry-over removed (when estimable).
    estimates: Vec<f64>,
    carry_free: Vec<f64>,
    /// Per carry-over-removed estimate (a design that can estimate carry-over): whether its
    /// interval holds the arm's true effect.
    adjusted_held: Vec<bool>,
    pub passes: usize,
    /// Under `[stop]`: whether the noise rose after the first look on some metric, or
    /// `None` without a test.
    noise_rose: Option<bool>,
    /// The breakdown's counts, for a spec with `[breakdown]`.
    pub breakdown: Option<BreakdownTally>,
}

/// The ladder's metrics' readings, counted.
pub fn tally(plan: &Plan, metrics: &[MetricReport], passes: usize) -> Tally {
    let index = |name: &str| {
        plan.design
            .names
            .iter()
            .position(|n| n == name)
            .unwrap_or(0)
    };
    let mut t = Tally {
        null_verdicts: 0,
        false_verdicts: 0,
        holm_false: 0,
        families: metrics.len(),
        gate: metrics.iter().any(|m| !m.within_noise_limit),
        inert: Vec::new(),
        known: Vec::new(),
        disqualified: !analysis::disqualifications(metrics).is_empty(),
        order_sensitive: metrics.iter().any(|m| m.order_effects.sensitive()),
        drifting: metrics.iter().any(|m| m.order_effects.drifting()),
        effect: Vec::new(),
        estimates: Vec::new(),
        carry_free: Vec::new(),
        adjusted_held: Vec::new(),
        passes,
        noise_rose: metrics
            .iter()
            .filter_map(|m| m.noise_rise)
            .map(|r| r.rose)
            .reduce(|a, b| a || b),
        breakdown: None,
    };
    for (k, m) in metrics.iter().enumerate() {
        for c in &m.controls {
            let (arm, held) = (index(&c.arm), c.holds == Some(true));
            match c.role {
                Role::KnownEffect => t.known.push(held),
                r if r.is_inert_control() => t.inert.push((arm, held)),
                _ => {}
            }
        }
        let mut holm_false = false;
        for a in &m.arms {
            let truth = plan.effect[k][index(&a.arm)];
            let f = &a.figures;
            if truth == 0.0 {
                t.null_verdicts += 1;
                t.false_verdicts += usize::from(f.verdict != "not resolved");
                holm_false |= a.holm_verdict != "not resolved";
                t.estimates.push(f.estimate_pct);
            } else if a.role == Role::Arm {
                let truth_pct = 100.0 * truth.exp_m1();
                t.effect.push((
                    f.ci_low_pct <= truth_pct && truth_pct <= f.ci_high_pct,
                    f.verdict == "better",
                ));
            }
        }
        t.holm_false += usize::from(holm_false);
        for a in &m.order_effects.adjusted {
            let truth = plan.effect[k][index(&a.arm)];
            if truth == 0.0 {
                t.carry_free.push(a.estimate_pct);
            }
            let truth_pct = 100.0 * truth.exp_m1();
            t.adjusted_held
                .push(a.ci_low_pct <= truth_pct && truth_pct <= a.ci_high_pct);
        }
    }
    t
}

/// A count and the rate it makes, with its 95 % Clopper–Pearson interval.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Count {
    pub k: usize,
    pub n: usize,
    pub rate: f64,
    pub ci: (f64, f64),
}

impl Count {
    pub fn of(k: usize, n: usize) -> Count {
        Count {
            k,
            n,
            rate: rate(k, n),
            ci: clopper_pearson(k, n),
        }
    }
}

/// The rates of one spec under one model.
#[derive(Debug, Serialize)]
pub struct Rates {
    pub spec: String,
    pub model: NoiseModel,
    pub ladders: usize,
    pub verdicts: usize,
    pub false_positives: usize,
    pub false_positive_rate: f64,
    pub false_positive_ci: (f64, f64),
    /// Holm families (one per metric of a ladder) in which an arm with no true effect was
    /// resolved.
    pub holm_familywise_rate: f64,
    pub disqualified_rate: f64,
    /// The ladders disqualified, with its interval: the family's wrong-disqualification rate
    /// when no arm of a control has a true effect.
    pub disqualified: Count,
    pub gate_rate: f64,
    /// Per inert control arm: the ladders in which it failed on some metric.
    pub control_rates: Vec<(String, f64)>,
    /// Ladders where any inert control failed.
    pub control_failure_rate: f64,
    /// Inert control tests (arm, metric) that held: with `--control-effect-pct`, the margin
    /// rule's error rate.
    pub inert_held: Count,
    /// Known-effect tests (arm, metric) that held: the coverage of a known effect.
    pub known_effect_held: Option<Count>,
    pub order_sensitive_rate: f64,
    /// Ladders whose drift-within-passes test rejected on some metric.
    pub drifting_rate: f64,
    pub coverage: Option<f64>,
    pub power: Option<f64>,
    pub mean_estimate_pct: f64,
    /// Mean carry-over-free estimate of the arms with no true effect (its bias), and how
    /// many ladders could estimate it.
    pub carry_free_bias_pct: Option<f64>,
    /// The carry-over-removed intervals that held their arm's true effect.
    pub carry_free_held: Option<Count>,
    pub mean_passes: f64,
    /// Under `[stop]`: the ladders in which the noise rose after the first look on some
    /// metric, of those with a test.
    pub noise_rose: Option<Count>,
    pub breakdown: Option<BreakdownRates>,
}

/// The breakdown's error rates (METHOD.md "Breakdown"), for a spec with `[breakdown]`.
#[derive(Debug, Serialize)]
pub struct BreakdownRates {
    /// Arms against the base in which a key with no true effect was resolved after Holm.
    pub false_families: Count,
    /// Slowed keys whose 95 % interval held the true effect, and those resolved.
    pub covered: Option<Count>,
    pub resolved: Option<Count>,
    /// Closures said not to add up (every simulated breakdown adds up).
    pub not_adding_up: Count,
    /// Keys' controls (arms of no true effect) that failed; `None` without such an arm.
    pub controls_failed: Option<Count>,
}

fn breakdown_rates(tallies: &[Tally]) -> Option<BreakdownRates> {
    let all: Vec<BreakdownTally> = tallies.iter().filter_map(|t| t.breakdown).collect();
    if all.is_empty() {
        return None;
    }
    let sum = |f: fn(&BreakdownTally) -> usize| all.iter().map(f).sum::<usize>();
    let slowed = sum(|t| t.slowed);
    Some(BreakdownRates {
        false_families: Count::of(sum(|t| t.false_families), sum(|t| t.families)),
        covered: (slowed > 0).then(|| Count::of(sum(|t| t.covered), slowed)),
        resolved: (slowed > 0).then(|| Count::of(sum(|t| t.resolved), slowed)),
        not_adding_up: Count::of(sum(|t| t.not_adding_up), sum(|t| t.closures)),
        controls_failed: (sum(|t| t.controls) > 0)
            .then(|| Count::of(sum(|t| t.controls_failed), sum(|t| t.controls))),
    })
}

fn noise_rose(tallies: &[Tally]) -> Option<Count> {
    let tested: Vec<bool> = tallies.iter().filter_map(|t| t.noise_rose).collect();
    (!tested.is_empty()).then(|| Count::of(tested.iter().filter(|&&r| r).count(), tested.len()))
}

/// `k / n`; NaN (written `n/a`) when nothing was counted: no test is no rate of 0.
pub fn rate(k: usize, n: usize) -> f64 {
    if n == 0 {
        return f64::NAN;
    }
    k as f64 / n as f64
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, count) = values.fold((0.0, 0usize), |(s, c), v| (s + v, c + 1));
    (count > 0).then(|| sum / count as f64)
}

pub fn rates(spec: &str, plan: &Plan, model: NoiseModel, tallies: &[Tally]) -> Rates {
    let n = tallies.len();
    let verdicts: usize = tallies.iter().map(|t| t.null_verdicts).sum();
    let false_positives: usize = tallies.iter().map(|t| t.false_verdicts).sum();
    let count = |f: &dyn Fn(&Tally) -> bool| tallies.iter().filter(|t| f(t)).count();
    let inert_arms: Vec<usize> = (0..plan.design.names.len())
        .filter(|&a| plan.design.roles[a].is_inert_control())
        .collect();
    let effects: Vec<(bool, bool)> = tallies
        .iter()
        .flat_map(|t| t.effect.iter().copied())
        .collect();
    let inert: Vec<bool> = tallies
        .iter()
        .flat_map(|t| t.inert.iter().map(|i| i.1))
        .collect();
    let known: Vec<bool> = tallies
        .iter()
        .flat_map(|t| t.known.iter().copied())
        .collect();
    let adjusted: Vec<bool> = tallies
        .iter()
        .flat_map(|t| t.adjusted_held.iter().copied())
        .collect();
    let held = |v: &[bool]| Count::of(v.iter().filter(|&&h| h).count(), v.len());
    let disqualified = count(&|t| t.disqualified);
    Rates {
        spec: spec.to_string(),
        model,
        ladders: n,
        verdicts,
        false_positives,
        false_positive_rate: rate(false_positives, verdicts),
        false_positive_ci: clopper_pearson(false_positives, verdicts),
        holm_familywise_rate: rate(
            tallies.iter().map(|t| t.holm_false).sum(),
            tallies.iter().map(|t| t.families).sum(),
        ),
        disqualified_rate: rate(disqualified, n),
        disqualified: Count::of(disqualified, n),
        gate_rate: rate(count(&|t| t.gate), n),
        control_rates: inert_arms
            .iter()
            .map(|&a| {
                let failed = count(&|t| t.inert.iter().any(|&(arm, held)| arm == a && !held));
                (plan.design.names[a].clone(), rate(failed, n))
            })
            .collect(),
        control_failure_rate: rate(count(&|t| t.inert.iter().any(|i| !i.1)), n),
        inert_held: held(&inert),
        known_effect_held: (!known.is_empty()).then(|| held(&known)),
        order_sensitive_rate: rate(count(&|t| t.order_sensitive), n),
        drifting_rate: rate(count(&|t| t.drifting), n),
        coverage: (!effects.is_empty())
            .then(|| rate(effects.iter().filter(|e| e.0).count(), effects.len())),
        power: (!effects.is_empty())
            .then(|| rate(effects.iter().filter(|e| e.1).count(), effects.len())),
        mean_estimate_pct: mean(tallies.iter().flat_map(|t| t.estimates.iter().copied()))
            .unwrap_or(f64::NAN),
        carry_free_bias_pct: mean(tallies.iter().flat_map(|t| t.carry_free.iter().copied())),
        carry_free_held: (!adjusted.is_empty()).then(|| held(&adjusted)),
        mean_passes: mean(tallies.iter().map(|t| t.passes as f64)).unwrap_or(f64::NAN),
        noise_rose: noise_rose(tallies),
        breakdown: breakdown_rates(tallies),
    }
}
