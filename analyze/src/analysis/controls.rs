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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Figures;

    fn design(roles: &[Role], margin_pct: Option<f64>) -> Design {
        Design {
            names: (0..roles.len()).map(|a| format!("arm{a}")).collect(),
            roles: roles.to_vec(),
            expected: vec![None; roles.len()],
            base: 0,
            noise_limit_pct: None,
            equivalence_margin_pct: margin_pct,
            family: 1,
        }
    }

    fn contrast_of(a: usize, against: usize) -> Contrast {
        Contrast {
            arm: format!("arm{a}"),
            against: format!("arm{against}"),
            figures: Figures {
                estimate_pct: 0.0,
                sem_pct: 0.0,
                ci_low_pct: 0.0,
                ci_high_pct: 0.0,
                median_pct: 0.0,
                n: 0,
                verdict: "",
            },
        }
    }

    #[test]
    fn a_structural_zero_reads_every_real_arm_against_it_and_no_control() {
        let roles = [
            Role::Base,
            Role::Arm,
            Role::StructuralZero,
            Role::Reflexive,
            Role::Arm,
        ];
        let c = control(
            &design(&roles, None),
            2,
            "m",
            &[0.01, 0.02, 0.015],
            Spread::Own,
            &contrast_of,
        );
        let gains: Vec<_> = c
            .gains
            .iter()
            .map(|g| (g.arm.as_str(), g.against.as_str()))
            .collect();
        assert_eq!(gains, [("arm1", "arm2"), ("arm4", "arm2")]);
        assert_eq!((c.holds, c.rule), (None, ""));
    }

    /// exp overflows on the interval's high end alone: a half-open interval is not a reading.
    #[test]
    fn an_interval_with_one_end_not_finite_cannot_be_read() {
        let d = design(&[Role::Base, Role::Reflexive], None);
        let c = control(&d, 1, "m", &[0.0, 800.0], Spread::Own, &contrast_of);
        assert!(
            c.ci_low_pct.is_finite() && c.ci_high_pct.is_infinite(),
            "{c:?}"
        );
        assert!(!c.readable);
        assert_eq!(c.holds, Some(false));
        assert_eq!(c.reading(None).0, "cannot be read");
    }

    #[test]
    fn a_control_outside_its_margin_is_told_from_one_too_wide_for_it() {
        let d = design(&[Role::Base, Role::Reflexive], Some(1.0));
        let read = |logs: &[f64]| {
            let c = control(&d, 1, "m", logs, Spread::Own, &contrast_of);
            assert_eq!((c.holds, c.rule), (Some(false), "within ±margin"));
            c.reading(Some(1.0)).1
        };
        let wide = read(&[-0.03, 0.03, 0.0]);
        assert!(
            wide.contains("too wide to show the control holds"),
            "{wide}"
        );
        let above = read(&[0.05, 0.051, 0.052]);
        assert!(above.contains("lies outside ±1 %"), "{above}");
        let below = read(&[-0.05, -0.051, -0.052]);
        assert!(below.contains("lies outside ±1 %"), "{below}");
    }
}
