//! The report's figures of METHOD.md (method 2.1) on one series of paired log ratios: the
//! estimate with its interval and the median beside it, the verdict in words, and Holm's
//! procedure. The series itself (mean, spread, t interval, p-value, MDE) is
//! `ladder::stats::LogSeries`, shared with the runner.

use ladder::stats::{pct_of_log, LogSeries, Spread};

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

/// The `p` quantile of `sorted` (ascending, not empty) by the nearest rank: the value at rank
/// `⌈p·n⌉`, at least the first.
pub fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    sorted[((p * n as f64).ceil() as usize).clamp(1, n) - 1]
}

/// Estimate, sem, 95 % interval and median of one quantity, as percents (the t test's p,
/// which only Holm's family needs, is [`LogSeries::p_value`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub estimate: f64,
    pub sem: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub median: f64,
    pub n: usize,
}

impl Summary {
    /// `logs` in pass order; the deltas shown are `100 · (exp(l) − 1)` of each.
    pub fn of(logs: &[f64], spread: Spread) -> Summary {
        let series = LogSeries::of(logs, spread);
        let (ci_low, ci_high) = series.interval(0.95);
        let mut deltas: Vec<f64> = logs.iter().map(|&l| pct_of_log(l)).collect();
        Summary {
            estimate: pct_of_log(series.mean),
            sem: 100.0 * series.se(),
            ci_low,
            ci_high,
            median: median(&mut deltas),
            n: series.n,
        }
    }

    /// The reading in words: the interval entirely above 0, entirely below, or neither.
    pub fn verdict(&self) -> &'static str {
        verdict(self.ci_low, self.ci_high)
    }
}

/// `better` when `(lo, hi)` lies wholly above 0, `worse` wholly below, else `not resolved`.
pub fn verdict(lo: f64, hi: f64) -> &'static str {
    if lo > 0.0 {
        "better"
    } else if hi < 0.0 {
        "worse"
    } else {
        "not resolved"
    }
}

/// Holm's step-down adjustment of a family of p-values: `adjusted[i]` is compared with
/// 0.05 as the unadjusted p would be. A p-value that could not be computed (NaN) counts as
/// 1: it stays in the family, so it never makes the others' bar lower.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let p: Vec<f64> = p
        .iter()
        .map(|&x| if x.is_nan() { 1.0 } else { x })
        .collect();
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let k = order.len();
    let mut adjusted = vec![f64::NAN; p.len()];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((k - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// The verdict after Holm: the direction of the estimate when the adjusted p is below 0.05.
pub fn holm_verdict(estimate: f64, adjusted_p: f64) -> &'static str {
    match adjusted_p < 0.05 {
        true if estimate > 0.0 => "better",
        true if estimate < 0.0 => "worse",
        _ => "not resolved",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantile_is_the_nearest_rank() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(nearest_rank(&v, 0.5), 3.0);
        assert_eq!(nearest_rank(&v, 0.95), 5.0);
        assert_eq!(nearest_rank(&v, 0.0), 1.0);
        assert_eq!(nearest_rank(&v, 0.2), 1.0);
    }

    #[test]
    fn an_interval_that_touches_zero_is_not_resolved() {
        assert_eq!(verdict(0.1, 2.0), "better");
        assert_eq!(verdict(-2.0, -0.1), "worse");
        assert_eq!(verdict(0.0, 2.0), "not resolved");
        assert_eq!(verdict(-2.0, 0.0), "not resolved");
        assert_eq!(verdict(-1.0, 1.0), "not resolved");
    }

    use ladder::stats::t_quantile;

    #[test]
    fn median_of_even_count_is_mean_of_middle_values() {
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
    }

    #[test]
    fn geometric_mean_and_its_interval_by_hand() {
        // l = ln 1.01, ln 1.02, ln 1.03: mean and sd in log space, t(0.975, 2).
        let l = [1.01f64.ln(), 1.02f64.ln(), 1.03f64.ln()];
        let s = Summary::of(&l, Spread::Own);
        let m = (1.01f64 * 1.02 * 1.03).ln() / 3.0;
        let sd =
            ((l[0] - m).powi(2) + (l[1] - m).powi(2) + (l[2] - m).powi(2)).sqrt() / 2f64.sqrt();
        let half = 4.302652729911275 * sd / 3f64.sqrt();
        assert!((s.estimate - 100.0 * (m.exp() - 1.0)).abs() < 1e-12);
        assert!((s.sem - 100.0 * sd / 3f64.sqrt()).abs() < 1e-12);
        assert!((s.ci_low - 100.0 * ((m - half).exp() - 1.0)).abs() < 1e-9);
        assert!((s.ci_high - 100.0 * ((m + half).exp() - 1.0)).abs() < 1e-9);
        assert!((s.median - 2.0).abs() < 1e-12);
        // The interval reaches below 0 (half-width about 2.4 % around 2 %).
        assert_eq!((s.n, s.verdict()), (3, "not resolved"));
    }

    #[test]
    fn a_stopped_series_uses_the_first_looks_spread() {
        // Five passes, the first look at m0 = 3: s0 from the first three, df 2, √5 below.
        let l = [0.01, 0.02, 0.03, 0.0, 0.04];
        let s = Summary::of(&l, Spread::FirstLook(3));
        let s0 = 0.01;
        let m = 0.1 / 5.0;
        let half = 4.302652729911275 * s0 / 5f64.sqrt();
        assert!(
            (s.sem - 100.0 * s0 / 5f64.sqrt()).abs() < 1e-12,
            "{}",
            s.sem
        );
        assert!((s.ci_low - 100.0 * ((m - half).exp() - 1.0)).abs() < 1e-9);
        assert!((s.ci_high - 100.0 * ((m + half).exp() - 1.0)).abs() < 1e-9);
        assert_eq!(s.n, 5);
    }

    #[test]
    fn the_t_test_p_value_matches_a_table() {
        // t = 2.446911851144969 with 6 df is the 0.975 quantile: p = 0.05 exactly.
        let series = LogSeries {
            mean: 2.446911851144969,
            sd: 7f64.sqrt(),
            n: 7,
            df: 6,
        };
        assert!(
            (series.p_value() - 0.05).abs() < 1e-9,
            "{}",
            series.p_value()
        );
    }

    #[test]
    fn holm_by_hand() {
        // Sorted 0.01, 0.02, 0.04 in a family of 3: 0.03, max(0.03, 0.04), max(0.04, 0.04).
        let adjusted = holm(&[0.04, 0.01, 0.02]);
        let want = [0.04, 0.03, 0.04];
        for (a, w) in adjusted.iter().zip(want) {
            assert!((a - w).abs() < 1e-15, "{adjusted:?}");
        }
        // Monotone: a larger p never gets a smaller adjusted p, and nothing exceeds 1.
        assert_eq!(holm(&[0.5, 0.9]), vec![1.0, 1.0]);
        // A NaN counts as 1 and stays in the family: 0.02 is multiplied by 2, not 1.
        let with_nan = holm(&[0.02, f64::NAN]);
        assert_eq!(with_nan, vec![0.04, 1.0]);
        assert_eq!(holm_verdict(0.3, 0.049), "better");
        assert_eq!(holm_verdict(-0.3, 0.01), "worse");
        assert_eq!(holm_verdict(0.3, 0.05), "not resolved");
        // No direction, no verdict: an estimate of 0 (or NaN) is never better or worse.
        assert_eq!(holm_verdict(0.0, 0.01), "not resolved");
        assert_eq!(holm_verdict(f64::NAN, 0.01), "not resolved");
    }

    #[test]
    fn verdict_needs_the_whole_interval_on_one_side() {
        assert_eq!(verdict(0.1, 1.0), "better");
        assert_eq!(verdict(-1.0, -0.1), "worse");
        assert_eq!(verdict(-0.1, 1.0), "not resolved");
        assert_eq!(verdict(0.0, 1.0), "not resolved");
    }

    #[test]
    fn the_interval_at_another_level() {
        // Level 0.975 uses t(0.9875, df).
        let series = LogSeries {
            mean: 0.0,
            sd: 0.01,
            n: 4,
            df: 3,
        };
        let (lo, hi) = series.interval(0.975);
        let t = t_quantile(0.9875, 3);
        assert!((t - 4.176534).abs() < 1e-5, "{t}");
        assert!((hi - 100.0 * (t * 0.005f64).exp_m1()).abs() < 1e-12);
        assert!((lo + 100.0 * -(-t * 0.005f64).exp_m1()).abs() < 1e-12);
    }
}
