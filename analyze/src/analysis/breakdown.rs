//! Where the time moves (METHOD.md "Breakdown"): per arm against the base, each key's paired
//! delta in the value's unit (additive, so the keys' deltas sum to their sum's) and in percent
//! (the method-2 log mean), Holm over the keys, the keys below 1 % of the step folded into one
//! rest line, and the closure: the keys' summed delta against the step's own.

use super::Design;
use crate::breakdown_cells::BreakdownCells;
use crate::stats::{holm, median};
use ladder::stats::{t975, LogSeries, Spread};
use serde::Serialize;
use std::ops::Range;

/// A key below this share of the step, in the base and in the arm, is folded into `rest`.
pub const REST_BELOW: f64 = 0.01;

#[derive(Debug, Serialize)]
pub struct BreakdownReport {
    pub key: String,
    pub value: String,
    pub total: Option<String>,
    pub launches: Option<String>,
    /// The base's median step: of its total, or without one of its keys' sum.
    pub step: f64,
    pub arms: Vec<BreakdownArm>,
}

/// One arm against the base.
#[derive(Debug, Serialize)]
pub struct BreakdownArm {
    pub arm: String,
    pub against: String,
    /// Every key of either side, the largest contribution `|delta|` first.
    pub keys: Vec<KeyLine>,
    /// The folded keys together; `None` when none is folded.
    pub rest: Option<KeyLine>,
    pub closure: Closure,
    /// The check of an arm of no true effect (`null`, `reflexive`); `None` for other arms.
    pub control: Option<KeyControl>,
}

/// The controls' keys (METHOD.md "Breakdown"): an arm of no true effect holds when none of
/// its keys resolves after Holm.
#[derive(Debug, Serialize)]
pub struct KeyControl {
    pub holds: bool,
    /// The keys resolved after Holm, the largest contribution first.
    pub resolved: Vec<String>,
    /// The largest `|delta %|` among them: a key's change of this or less is not to be read
    /// as a mechanism in this ladder. 0 when the check holds.
    pub largest_pct: f64,
}

impl KeyControl {
    /// The check in words, each key as `quote` shows it.
    pub fn reading(&self, quote: impl Fn(&str) -> String) -> String {
        match self.holds {
            true => "holds: no key resolved after Holm".into(),
            false => format!(
                "fails: {} resolved after Holm in an arm of no true effect; in this ladder a \
                 key's change of {:.2} % or less is not to be read as a mechanism",
                self.resolved
                    .iter()
                    .map(|k| quote(k))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.largest_pct
            ),
        }
    }

    fn of(keys: &[KeyLine]) -> KeyControl {
        let resolved: Vec<&KeyLine> = keys
            .iter()
            .filter(|l| matches!(l.holm_verdict, "more" | "less"))
            .collect();
        let largest_pct = resolved
            .iter()
            .map(|l| l.delta_pct.abs())
            .filter(|c| c.is_finite())
            .fold(0.0, f64::max);
        KeyControl {
            holds: resolved.is_empty(),
            resolved: resolved.iter().map(|l| l.key.clone()).collect(),
            largest_pct,
        }
    }
}

/// One key (or the rest) of one arm against the base.
#[derive(Clone, Debug, Serialize)]
pub struct KeyLine {
    pub key: String,
    /// Below [`REST_BELOW`] of the step in both: shown in the rest line.
    pub folded: bool,
    /// `"arm"` or `"base"` for a key only that side prints (0 on the other).
    pub only_in: Option<&'static str>,
    /// The medians of the launches column, where the spec names one and the side prints it.
    pub launches_base: Option<f64>,
    pub launches_arm: Option<f64>,
    pub base_median: f64,
    pub arm_median: f64,
    /// Mean of `x[arm] − x[base]` with its 95 % t interval, in the value's unit.
    pub delta: f64,
    pub delta_ci_low: f64,
    pub delta_ci_high: f64,
    /// `100·(exp(mean ln(x[arm]/x[base])) − 1)` with its 95 % t interval; positive: more.
    pub delta_pct: f64,
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    pub p_value: f64,
    pub holm_p: f64,
    /// `more`, `less` or `not resolved` after Holm over the arm's keys; `not tested` for rest.
    pub holm_verdict: &'static str,
    pub n: usize,
    /// The rest line: how many keys it folds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<usize>,
}

/// A mean with its 95 % t interval.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Interval {
    pub estimate: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub n: usize,
}

/// The keys' summed delta against the step's own delta (`total`), and the gap between them.
#[derive(Debug, Serialize)]
pub struct Closure {
    pub keys_sum: Interval,
    pub total: Option<Interval>,
    pub gap: Option<Interval>,
    /// The gap's interval contains 0; `None` without a total or a readable gap.
    pub adds_up: Option<bool>,
}

/// The mean of `values` and its 95 % t interval (`spread` as the headline's).
fn interval(values: &[f64], spread: Spread) -> Interval {
    let s = LogSeries::of(values, spread);
    let half = t975(s.df) * s.se();
    Interval {
        estimate: s.mean,
        ci_low: s.mean - half,
        ci_high: s.mean + half,
        n: s.n,
    }
}

/// The breakdown of every arm of `design` against its base over `passes`.
pub fn read(
    cells: &BreakdownCells,
    design: &Design,
    passes: Range<usize>,
    spread: Spread,
) -> BreakdownReport {
    let base = design.base;
    let step = base_step(cells, base, passes.clone());
    let arms = (0..cells.arms)
        .filter(|&a| a != base)
        .map(|a| {
            let mut against = arm(
                cells,
                &design.names,
                (a, base),
                passes.clone(),
                spread,
                step,
            );
            let inert = design.roles.get(a).is_some_and(|r| r.is_inert_control());
            against.control = inert.then(|| KeyControl::of(&against.keys));
            against
        })
        .collect();
    let spec = &cells.spec;
    BreakdownReport {
        key: spec.key.clone(),
        value: spec.value.clone(),
        total: spec.total.clone(),
        launches: spec.launches.clone(),
        step,
        arms,
    }
}

/// The base's median step: of its totals, or without them of its keys' sum.
fn base_step(cells: &BreakdownCells, base: usize, passes: Range<usize>) -> f64 {
    let mut steps: Vec<f64> = passes
        .filter(|&p| cells.ran(p, base))
        .map(|p| match cells.spec.total {
            Some(_) => cells.total(p, base),
            None => (0..cells.keys.len()).map(|k| cells.value(k, p, base)).sum(),
        })
        .filter(|v| v.is_finite())
        .collect();
    median(&mut steps)
}

/// The passes in which both cells ran.
fn paired(cells: &BreakdownCells, (a, b): (usize, usize), passes: Range<usize>) -> Vec<usize> {
    passes
        .filter(|&p| cells.ran(p, a) && cells.ran(p, b))
        .collect()
}

fn arm(
    cells: &BreakdownCells,
    names: &[String],
    (a, b): (usize, usize),
    passes: Range<usize>,
    spread: Spread,
    step: f64,
) -> BreakdownArm {
    let pairs = paired(cells, (a, b), passes);
    let printed = |k: usize, side: usize| pairs.iter().any(|&p| cells.printed(k, p, side));
    let mut keys: Vec<KeyLine> = (0..cells.keys.len())
        .filter(|&k| printed(k, a) || printed(k, b))
        .map(|k| {
            let series = |side: usize| -> Vec<f64> {
                pairs.iter().map(|&p| cells.value(k, p, side)).collect()
            };
            let mut line = line(&cells.keys[k], &series(a), &series(b), spread);
            line.only_in = match (printed(k, a), printed(k, b)) {
                (true, false) => Some("arm"),
                (false, true) => Some("base"),
                _ => None,
            };
            if cells.spec.launches.is_some() {
                let launches = |side: usize| {
                    let mut l: Vec<f64> = pairs
                        .iter()
                        .map(|&p| cells.launches(k, p, side))
                        .filter(|v| v.is_finite())
                        .collect();
                    (!l.is_empty()).then(|| median(&mut l))
                };
                (line.launches_arm, line.launches_base) = (launches(a), launches(b));
            }
            line.folded = line.base_median.max(line.arm_median) < REST_BELOW * step;
            line
        })
        .collect();
    let adjusted = holm(&keys.iter().map(|l| l.p_value).collect::<Vec<_>>());
    for (line, p) in keys.iter_mut().zip(adjusted) {
        line.holm_p = p;
        line.holm_verdict = match (p < 0.05, line.delta > 0.0) {
            (true, true) => "more",
            (true, false) => "less",
            (false, _) => "not resolved",
        };
    }
    keys.sort_by(|x, y| {
        y.delta
            .abs()
            .total_cmp(&x.delta.abs())
            .then_with(|| x.key.cmp(&y.key))
    });
    let rest = rest(cells, &keys, (a, b), &pairs, spread);
    let closure = closure(cells, (a, b), &pairs, spread);
    BreakdownArm {
        arm: names[a].clone(),
        against: names[b].clone(),
        keys,
        rest,
        closure,
        control: None,
    }
}

/// One line's figures from the arm's and the base's values, pass by pass.
fn line(key: &str, arm: &[f64], base: &[f64], spread: Spread) -> KeyLine {
    let deltas: Vec<f64> = arm.iter().zip(base).map(|(x, y)| x - y).collect();
    let d = interval(&deltas, spread);
    // The log mean reads only where both sides spend something in every pass.
    let logs: Vec<f64> = if arm.iter().chain(base).all(|&v| v > 0.0) {
        arm.iter().zip(base).map(|(x, y)| (x / y).ln()).collect()
    } else {
        Vec::new()
    };
    let series = LogSeries::of(&logs, spread);
    let (ci_low_pct, ci_high_pct) = series.interval(0.95);
    // A key one side lacks has no ratio: its test is the t test of its deltas.
    let p_value = match logs.is_empty() {
        true => LogSeries::of(&deltas, spread).p_value(),
        false => series.p_value(),
    };
    KeyLine {
        key: key.to_string(),
        folded: false,
        only_in: None,
        launches_base: None,
        launches_arm: None,
        base_median: median(&mut base.to_vec()),
        arm_median: median(&mut arm.to_vec()),
        delta: d.estimate,
        delta_ci_low: d.ci_low,
        delta_ci_high: d.ci_high,
        delta_pct: series.estimate_pct(),
        ci_low_pct,
        ci_high_pct,
        p_value,
        holm_p: f64::NAN,
        holm_verdict: "not tested",
        n: d.n,
        keys: None,
    }
}

/// The folded keys as one line whose value is their sum; `None` when none is folded.
fn rest(
    cells: &BreakdownCells,
    keys: &[KeyLine],
    (a, b): (usize, usize),
    pairs: &[usize],
    spread: Spread,
) -> Option<KeyLine> {
    let folded: Vec<usize> = keys
        .iter()
        .filter(|l| l.folded)
        .filter_map(|l| cells.keys.iter().position(|k| *k == l.key))
        .collect();
    if folded.is_empty() {
        return None;
    }
    let sum = |side: usize| -> Vec<f64> {
        pairs
            .iter()
            .map(|&p| folded.iter().map(|&k| cells.value(k, p, side)).sum())
            .collect()
    };
    let mut rest = line("rest", &sum(a), &sum(b), spread);
    rest.keys = Some(folded.len());
    Some(rest)
}

/// The keys' summed delta per pass against the totals' delta, and the gap between them.
fn closure(
    cells: &BreakdownCells,
    (a, b): (usize, usize),
    pairs: &[usize],
    spread: Spread,
) -> Closure {
    let keys_delta = |p: usize| -> f64 {
        (0..cells.keys.len())
            .map(|k| cells.value(k, p, a) - cells.value(k, p, b))
            .sum()
    };
    let sums: Vec<f64> = pairs.iter().map(|&p| keys_delta(p)).collect();
    let keys_sum = interval(&sums, spread);
    if cells.spec.total.is_none() {
        return Closure {
            keys_sum,
            total: None,
            gap: None,
            adds_up: None,
        };
    }
    let with_totals: Vec<(f64, f64)> = pairs
        .iter()
        .map(|&p| (cells.total(p, a) - cells.total(p, b), keys_delta(p)))
        .filter(|(d, _)| d.is_finite())
        .collect();
    let totals: Vec<f64> = with_totals.iter().map(|(d, _)| *d).collect();
    let gaps: Vec<f64> = with_totals.iter().map(|(d, s)| d - s).collect();
    let gap = interval(&gaps, spread);
    // Both ends are the one mean ∓ the one half-width: either end is finite when both are.
    let readable = gap.ci_high.is_finite();
    Closure {
        keys_sum,
        total: Some(interval(&totals, spread)),
        gap: Some(gap),
        adds_up: readable.then_some(gap.ci_low <= 0.0 && 0.0 <= gap.ci_high),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mean 2, sd 1 over three values: `2 ∓ t(0.975, 2)/√3`.
    #[test]
    fn an_interval_is_the_mean_with_its_t_half_width() {
        let i = interval(&[1.0, 2.0, 3.0], Spread::Own);
        let half = 4.302653 / 3f64.sqrt();
        assert_eq!((i.estimate, i.n), (2.0, 3));
        assert!((i.ci_low - (2.0 - half)).abs() < 1e-5, "{i:?}");
        assert!((i.ci_high - (2.0 + half)).abs() < 1e-5, "{i:?}");
    }
}
