//! The controls of one metric (METHOD.md "Controls"): each control arm's interval at the
//! family's level and the rule that reads it, and a structural zero's cost with the gains of
//! the real arms against it.

use super::{Contrast, Design};
use ladder::stats::{pct_of_log, LogSeries, Spread};
use ladder::Role;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Control {
    pub arm: String,
    pub role: Role,
    pub estimate_pct: f64,
    /// The interval at `level`; for a structural zero, its 95 % interval.
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    pub level: f64,
    /// Whether the control holds by `rule`. None for a structural zero, which measures a
    /// cost instead.
    pub holds: Option<bool>,
    /// The rule that decided: `contains 0`, `within ±margin` or `contains expected`; empty
    /// for a structural zero.
    pub rule: &'static str,
    /// A known-effect arm's true effect on this metric.
    pub expected_pct: Option<f64>,
    /// False when the interval could not be computed: the control fails.
    pub readable: bool,
    /// The mean log ratio the interval is built on, with its spread and degrees of freedom
    /// (the live ledger pools known-effect offsets with them).
    #[serde(skip)]
    pub series: LogSeries,
    /// Structural zero: every real arm against it, the gain from where the mechanism points.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gains: Vec<Contrast>,
}

impl Control {
    /// The control's reading in words: a head (`holds`, `does not hold`, `cannot be read`,
    /// or what a structural zero measures) and why, by the rule that decided.
    pub fn reading(&self, margin_pct: Option<f64>) -> (&'static str, String) {
        let margin = margin_pct.unwrap_or(f64::NAN);
        match (self.holds, self.rule) {
            (None, _) => ("the cost of the mechanism alone", String::new()),
            (Some(false), _) if !self.readable => (
                "cannot be read",
                "its interval could not be computed (too few paired passes, or a missing value); the ladder is disqualified".into(),
            ),
            (Some(true), "contains expected") => (
                "holds",
                format!("the interval contains the expected {:+.3} %", self.expected_pct.unwrap_or(f64::NAN)),
            ),
            (Some(false), "contains expected") => (
                "does not hold",
                format!("the interval misses the expected {:+.3} %: this ladder's intervals do not see a known effect right; the ladder is disqualified", self.expected_pct.unwrap_or(f64::NAN)),
            ),
            (Some(true), "within ±margin") => (
                "holds",
                format!("the interval lies within ±{margin} %"),
            ),
            (Some(false), "within ±margin") if self.ci_low_pct <= 0.0 && 0.0 <= self.ci_high_pct => (
                "does not hold",
                format!("the interval reaches beyond ±{margin} %: too wide to show the control holds; the ladder is disqualified"),
            ),
            (Some(false), "within ±margin") => (
                "does not hold",
                format!("the interval lies outside ±{margin} %; the ladder is disqualified by its own control"),
            ),
            (Some(true), _) => ("holds", "the interval contains 0".into()),
            (Some(false), _) => (
                "does not hold",
                "the interval excludes 0; the ladder is disqualified by its own control".into(),
            ),
        }
    }
}

pub fn control(
    design: &Design,
    a: usize,
    column: &str,
    logs: &[f64],
    spread: Spread,
    contrast: &dyn Fn(usize, usize) -> Contrast,
) -> Control {
    let series = LogSeries::of(logs, spread);
    let role = design.roles[a];
    let expected = design.control_on(a, column);
    let level = if expected.is_some() {
        design.control_level()
    } else {
        0.95
    };
    let (lo, hi) = series.interval(level);
    let readable = lo.is_finite() && hi.is_finite();
    let mut c = Control {
        arm: design.names[a].clone(),
        role,
        estimate_pct: pct_of_log(series.mean),
        ci_low_pct: lo,
        ci_high_pct: hi,
        level,
        holds: None,
        rule: "",
        expected_pct: expected.filter(|_| role == Role::KnownEffect),
        readable,
        series,
        gains: Vec::new(),
    };
    match (expected, design.equivalence_margin_pct) {
        (None, _) => {
            let real = (0..design.arms()).filter(|&r| design.roles[r] == Role::Arm);
            c.gains = real.map(|r| contrast(r, a)).collect();
        }
        (Some(e), _) if role == Role::KnownEffect => {
            c.rule = "contains expected";
            c.holds = Some(readable && lo <= e && e <= hi);
        }
        (Some(_), None) => {
            c.rule = "contains 0";
            c.holds = Some(readable && lo <= 0.0 && 0.0 <= hi);
        }
        (Some(_), Some(margin)) => {
            c.rule = "within ±margin";
            c.holds = Some(readable && -margin <= lo && hi <= margin);
        }
    }
    c
}
