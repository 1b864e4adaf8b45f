//! The pooled first-look spread (METHOD.md "The pooled first-look spread"): one `s0` per
//! metric from the additive model `ln x[p][a] = μ[p] + α[a] + ε` over every arm of the first
//! look, with `(m0 − 1)(n − 1)` degrees of freedom. The runner's stopping rule, `verify`
//! and the report all take it from here, so they agree to the last digit.

use crate::spec::{StopSpec, StopSpread};
use crate::stats::Spread;
use std::ops::Range;

/// `(s0, df0)` from one metric's `values[pass][arm]` (`None` where a cell printed nothing
/// usable) over the complete passes of `passes` (every arm's value there and positive):
/// `s0² = 2·RSS/((m − 1)(n − 1))`, the variance of one paired log ratio. NaN (and 0 degrees
/// of freedom) below two complete passes or two arms.
pub fn pooled_spread(values: &[Vec<Option<f64>>], passes: Range<usize>) -> (f64, usize) {
    let logs: Vec<Vec<f64>> = passes
        .filter_map(|p| {
            let row = values.get(p)?;
            row.iter()
                .map(|v| v.filter(|&x| x > 0.0).map(f64::ln))
                .collect::<Option<Vec<f64>>>()
        })
        .collect();
    let (m, n) = (logs.len(), logs.first().map_or(0, Vec::len));
    if m < 2 || n < 2 {
        return (f64::NAN, 0);
    }
    let pass_means: Vec<f64> = logs
        .iter()
        .map(|row| row.iter().sum::<f64>() / n as f64)
        .collect();
    let arm_means: Vec<f64> = (0..n)
        .map(|a| logs.iter().map(|row| row[a]).sum::<f64>() / m as f64)
        .collect();
    let grand = pass_means.iter().sum::<f64>() / m as f64;
    let rss: f64 = logs
        .iter()
        .zip(&pass_means)
        .flat_map(|(row, mu)| {
            row.iter()
                .zip(&arm_means)
                .map(move |(y, alpha)| (y - mu - alpha + grand).powi(2))
        })
        .sum();
    let df = (m - 1) * (n - 1);
    ((2.0 * rss / df as f64).sqrt(), df)
}

impl StopSpec {
    /// The degrees of freedom of every interval under this `[stop]` in a ladder of `arms`
    /// arms: the first look's analysis passes less one (each arm's own spread), or the pooled
    /// spread's `(m − 1)(arms − 1)` (METHOD.md "The pooled first-look spread").
    pub fn interval_df(&self, warmup: usize, arms: usize) -> usize {
        let m = self.first_look().saturating_sub(warmup);
        match self.spread {
            StopSpread::PerArm => m.saturating_sub(1),
            StopSpread::Pooled => m.saturating_sub(1) * arms.saturating_sub(1),
        }
    }

    /// The spread every interval of one metric uses under this `[stop]`, from the metric's
    /// values (`values[pass][arm]`, at least through the first look).
    pub fn interval_spread(&self, warmup: usize, values: &[Vec<Option<f64>>]) -> Spread {
        match self.spread {
            StopSpread::PerArm => self.first_look_spread(warmup),
            StopSpread::Pooled => {
                let (sd, df) = pooled_spread(values, warmup..self.first_look());
                Spread::Pooled { sd, df }
            }
        }
    }

    /// Each series' own spread over the first look's analysis passes: every interval's under
    /// `spread = "per-arm"`, and a breakdown key's under either rule (a key is read in
    /// repetitions of its own, so no metric's pooled spread is its spread).
    pub fn first_look_spread(&self, warmup: usize) -> Spread {
        Spread::FirstLook(self.first_look().saturating_sub(warmup))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sample_sd;

    fn values(rows: &[&[f64]]) -> Vec<Vec<Option<f64>>> {
        rows.iter()
            .map(|r| r.iter().map(|&v| Some(v)).collect())
            .collect()
    }

    #[test]
    fn two_arms_pool_to_the_per_arm_spread() {
        let v = values(&[
            &[100.0, 101.0],
            &[110.0, 110.0],
            &[90.0, 91.8],
            &[95.0, 95.5],
        ]);
        let logs: Vec<f64> = v
            .iter()
            .map(|r| (r[1].unwrap() / r[0].unwrap()).ln())
            .collect();
        let (sd, df) = pooled_spread(&v, 0..4);
        assert!(
            (sd - sample_sd(&logs)).abs() < 1e-15,
            "{sd} vs {}",
            sample_sd(&logs)
        );
        assert_eq!(df, 3);
    }

    #[test]
    fn the_pooled_spread_by_hand() {
        // ln x = pass + arm + e, with residuals ±d in a 2 × 3 pattern whose rows and columns
        // sum to 0: e = [[d, −d, 0], [−d, d, 0]], RSS = 4d², df = 1·2, s0² = 2·4d²/2 = 4d².
        let d = 0.01f64;
        let level = |p: usize, a: usize, e: f64| (0.3 * p as f64 + 0.1 * a as f64 + e).exp();
        let v = values(&[
            &[level(0, 0, d), level(0, 1, -d), level(0, 2, 0.0)],
            &[level(1, 0, -d), level(1, 1, d), level(1, 2, 0.0)],
        ]);
        let (sd, df) = pooled_spread(&v, 0..2);
        assert!((sd - 2.0 * d).abs() < 1e-12, "{sd}");
        assert_eq!(df, 2);
        // A pass with a missing value is left out; one complete pass is too few.
        let mut gap = v.clone();
        gap[1][2] = None;
        assert!(pooled_spread(&gap, 0..2).0.is_nan());
        // So is a pass with a value of 0 (a cell that printed no rate), whose log is −∞.
        let mut three = v.clone();
        three.push(three[0].clone());
        let mut zero = three.clone();
        zero[2][1] = Some(0.0);
        assert_eq!(pooled_spread(&zero, 0..3), pooled_spread(&v, 0..2));
    }

    #[test]
    fn the_rule_picks_the_spread_of_the_intervals() {
        let mut stop = StopSpec {
            halfwidth_pct: 1.0,
            looks: vec![4, 8],
            spread: StopSpread::PerArm,
            metrics: Vec::new(),
            within_s: None,
        };
        let v = values(&[&[1.0, 1.0], &[1.0, 1.01], &[1.0, 1.03], &[1.0, 1.0]]);
        assert_eq!(stop.interval_spread(1, &v), Spread::FirstLook(3));
        stop.spread = StopSpread::Pooled;
        let (sd, df) = pooled_spread(&v, 1..4);
        assert_eq!(stop.interval_spread(1, &v), Spread::Pooled { sd, df });
    }

    #[test]
    fn the_degrees_of_freedom_match_the_spread_they_go_with() {
        // First look 4 with 1 warm-up: 3 analysis passes.
        let mut stop = StopSpec {
            halfwidth_pct: 1.0,
            looks: vec![4, 8],
            spread: StopSpread::PerArm,
            metrics: Vec::new(),
            within_s: None,
        };
        assert_eq!(stop.interval_df(1, 4), 2);
        stop.spread = StopSpread::Pooled;
        assert_eq!(stop.interval_df(1, 4), 6);
        // The pooled spread's own count, on 3 passes of 4 arms.
        let v = values(&[
            &[1.0, 1.0, 1.0, 1.0],
            &[1.0, 1.01, 1.02, 0.98],
            &[1.0, 1.03, 0.99, 1.01],
        ]);
        assert_eq!(pooled_spread(&v, 0..3).1, stop.interval_df(1, 4));
    }
}
