//! The statistics of METHOD.md, exactly as written there, and nothing else.

use ladder::spec::Better;
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::sync::OnceLock;

/// The paired delta of `a` against `b` in one pass, in percent, positive meaning `a` is better.
pub fn delta_pct(better: Better, a: f64, b: f64) -> f64 {
    match better {
        Better::Higher => 100.0 * (a / b - 1.0),
        Better::Lower => 100.0 * (b / a - 1.0),
    }
}

/// The median; the mean of the two middle values when the count is even. Sorts `values`.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_unstable_by(f64::total_cmp);
    let m = values.len();
    if m % 2 == 1 {
        values[m / 2]
    } else {
        (values[m / 2 - 1] + values[m / 2]) / 2.0
    }
}

pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The sample standard deviation (denominator `m − 1`); NaN below two values.
pub fn sample_sd(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return f64::NAN;
    }
    let mean = mean(values);
    let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

/// `t(0.975, df)`, Student's t quantile from statrs; NaN for `df = 0`.
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

/// Estimate, sem and 95 % interval of a set of paired deltas.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub estimate: f64,
    pub sem: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub n: usize,
}

impl Summary {
    /// `deltas` in pass order; they are not reordered.
    pub fn of(deltas: &[f64]) -> Summary {
        let n = deltas.len();
        let mut sorted = deltas.to_vec();
        let estimate = median(&mut sorted);
        let sem = sample_sd(deltas) / (n as f64).sqrt();
        let half = t975(n.saturating_sub(1)) * sem;
        Summary {
            estimate,
            sem,
            ci_low: estimate - half,
            ci_high: estimate + half,
            n,
        }
    }

    /// The reading in words: the interval entirely above 0, entirely below, or neither.
    pub fn verdict(&self) -> &'static str {
        if self.ci_low > 0.0 {
            "better"
        } else if self.ci_high < 0.0 {
            "worse"
        } else {
            "not resolved"
        }
    }
}

/// The base spread: `100 · sd / mean` of the base's values over the analysis passes.
pub fn spread_pct(values: &[f64]) -> f64 {
    100.0 * sample_sd(values) / mean(values)
}

/// An inert control holds when its estimate lies inside the noise floor.
pub fn control_holds(estimate: f64, base_spread: f64) -> bool {
    estimate.abs() <= base_spread
}

/// `100 · (f − 1)`: a ratio as a percent change.
pub fn ratio_pct(f: f64) -> f64 {
    100.0 * (f - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_count_is_mean_of_middle_values() {
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
    }

    #[test]
    fn t_quantile_matches_tables() {
        assert!((t975(2) - 4.302652729911275).abs() < 1e-9);
        assert!((t975(6) - 2.446911851144969).abs() < 1e-9);
        assert!((t975(10_000) - 1.960201263621358).abs() < 1e-6);
        assert!(t975(0).is_nan());
    }

    #[test]
    fn verdict_needs_the_whole_interval_on_one_side() {
        let s = |lo, hi| Summary {
            estimate: 0.0,
            sem: 0.0,
            ci_low: lo,
            ci_high: hi,
            n: 3,
        };
        assert_eq!(s(0.1, 1.0).verdict(), "better");
        assert_eq!(s(-1.0, -0.1).verdict(), "worse");
        assert_eq!(s(-0.1, 1.0).verdict(), "not resolved");
        assert_eq!(s(0.0, 1.0).verdict(), "not resolved");
    }
}
