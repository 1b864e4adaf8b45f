//! Precision stopping: Stein's two-stage rule over the spec's looks (METHOD.md).
//!
//! The ladder's length is fixed from its first look alone: the spread of the paired log
//! ratios there says how many analysis passes reach the `[stop]` half-width, and the ladder
//! runs to the first look with that many (or to the last). The runner decides with it and
//! `verify` checks the file against it, so the rule lives here once.

use crate::spec::StopSpec;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::sync::OnceLock;

/// Why a `[stop]` ladder ended where it did, as the done record writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stopped {
    /// A look's analysis passes reached the largest need.
    Precision,
    /// No look did: the ladder ran to its last look.
    MaxPasses,
}

impl Stopped {
    pub fn as_str(self) -> &'static str {
        match self {
            Stopped::Precision => "precision",
            Stopped::MaxPasses => "max-passes",
        }
    }
}

/// `t(0.975, df)`, Student's t quantile; NaN for `df = 0`.
pub fn t975(df: usize) -> f64 {
    // Every ladder of one shape asks for the same df: compute each once.
    const CACHED: usize = 512;
    static CACHE: [OnceLock<f64>; CACHED] = [const { OnceLock::new() }; CACHED];
    let compute = |df: usize| match StudentsT::new(0.0, 1.0, df as f64) {
        Ok(t) if df > 0 => t.inverse_cdf(0.975),
        _ => f64::NAN,
    };
    match CACHE.get(df) {
        Some(cell) => *cell.get_or_init(|| compute(df)),
        None => compute(df),
    }
}

/// The sample standard deviation (denominator `m − 1`); NaN below two values.
pub fn sample_sd(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return f64::NAN;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

impl StopSpec {
    /// `m* = (t(0.975, m0−1) · s0 / ln(1 + halfwidth/100))²`: the analysis passes one series
    /// of paired log ratios needs, from its `m0` values at the first look.
    pub fn passes_needed(&self, first_look_log_ratios: &[f64]) -> f64 {
        let m0 = first_look_log_ratios.len();
        let s0 = sample_sd(first_look_log_ratios);
        let target = (1.0 + self.halfwidth_pct / 100.0).ln();
        (t975(m0.saturating_sub(1)) * s0 / target).powi(2)
    }

    /// The look a ladder runs to, given the largest need over every metric and arm: the
    /// first look whose analysis passes (`look − warmup`) reach it, else the last look.
    /// A need that cannot be computed (NaN) runs to the last look.
    pub fn stopping_look(&self, warmup: usize, need: f64) -> (usize, Stopped) {
        let last = self.looks.last().copied().unwrap_or(0);
        self.looks
            .iter()
            .find(|&&look| need.is_finite() && look.saturating_sub(warmup) as f64 >= need)
            .map_or((last, Stopped::MaxPasses), |&look| (look, Stopped::Precision))
    }

    pub fn first_look(&self) -> usize {
        self.looks.first().copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stop(halfwidth_pct: f64, looks: &[usize]) -> StopSpec {
        StopSpec { halfwidth_pct, looks: looks.to_vec() }
    }

    #[test]
    fn the_need_follows_the_formula() {
        // l = ln ratios with sd 0.01 over 4 values: m* = (t(0.975, 3) · 0.01 / ln 1.01)².
        let l = [0.01, 0.02, 0.0, 0.01 + 0.01 * 2f64.sqrt() * 0.0];
        let s0 = sample_sd(&l);
        let expected = (3.182446305284263 * s0 / 1.01f64.ln()).powi(2);
        let got = stop(1.0, &[5, 8]).passes_needed(&l);
        assert!((got - expected).abs() < 1e-9, "{got} vs {expected}");
    }

    #[test]
    fn it_stops_at_the_first_look_that_reaches_the_need() {
        let s = stop(0.5, &[6, 10, 16]);
        assert_eq!(s.stopping_look(1, 4.0), (6, Stopped::Precision));
        assert_eq!(s.stopping_look(1, 5.0), (6, Stopped::Precision));
        assert_eq!(s.stopping_look(1, 5.5), (10, Stopped::Precision));
        assert_eq!(s.stopping_look(1, 15.0), (16, Stopped::Precision));
        assert_eq!(s.stopping_look(1, 15.1), (16, Stopped::MaxPasses));
        assert_eq!(s.stopping_look(1, f64::NAN), (16, Stopped::MaxPasses));
    }

    #[test]
    fn t_quantile_matches_tables() {
        assert!((t975(2) - 4.302652729911275).abs() < 1e-9);
        assert!((t975(6) - 2.446911851144969).abs() < 1e-9);
        assert!(t975(0).is_nan());
    }
}
