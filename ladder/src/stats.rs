//! The statistics every part of abab shares, once (METHOD.md): Student's t quantiles, the
//! sample sd, a series of paired log ratios with its geometric-mean estimate and t interval,
//! and the Clopper–Pearson interval of a rate. The runner's stopping rule and reading,
//! `verify`, `report` and `calibrate` all call these, so they agree to the last digit.

use crate::spec::Better;
use statrs::distribution::{Beta, ContinuousCDF, StudentsT};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::OnceLock;

/// `t(0.975, df)`, Student's t quantile; NaN for `df = 0`.
pub fn t975(df: usize) -> f64 {
    // Every ladder of one shape asks for the same df: compute each once.
    const CACHED: usize = 512;
    static CACHE: [OnceLock<f64>; CACHED] = [const { OnceLock::new() }; CACHED];
    match CACHE.get(df) {
        Some(cell) => *cell.get_or_init(|| inverse_t(0.975, df)),
        None => inverse_t(0.975, df),
    }
}

/// `t(q, df)` for any level; NaN for `df = 0`.
pub fn t_quantile(q: f64, df: usize) -> f64 {
    if q == 0.975 {
        return t975(df);
    }
    // The controls of every ladder of one design ask for the same few (q, df); the inverse
    // CDF is iterative, so each thread keeps the ones it has computed.
    thread_local! {
        static CACHE: RefCell<HashMap<(u64, usize), f64>> = Default::default();
    }
    CACHE.with(|cache| {
        *cache
            .borrow_mut()
            .entry((q.to_bits(), df))
            .or_insert_with(|| inverse_t(q, df))
    })
}

/// NaN at df = 0, where statrs refuses the distribution.
fn inverse_t(q: f64, df: usize) -> f64 {
    StudentsT::new(0.0, 1.0, df as f64).map_or(f64::NAN, |t| t.inverse_cdf(q))
}

/// The mean; NaN for no values.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
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

/// The log ratio of `a` against `b` in one pass, positive meaning `a` is better.
pub fn log_ratio(better: Better, a: f64, b: f64) -> f64 {
    match better {
        Better::Higher => (a / b).ln(),
        Better::Lower => (b / a).ln(),
    }
}

/// `100 · (exp(l) − 1)`: a log ratio as a percent change.
pub fn pct_of_log(l: f64) -> f64 {
    100.0 * l.exp_m1()
}

/// Where the spread of a series comes from: its own passes, or under `[stop]` the first
/// look's `m0` passes (METHOD.md "Precision stopping").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Spread {
    Own,
    FirstLook(usize),
    /// The first look's pooled `s0` and its degrees of freedom (METHOD.md "The pooled
    /// first-look spread"), computed over the arms by `crate::pooled`.
    Pooled {
        sd: f64,
        df: usize,
    },
}

/// Mean and spread of one series of paired log ratios: everything the figures are made of.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogSeries {
    pub mean: f64,
    /// `s`, or `s0` of the first look.
    pub sd: f64,
    /// The passes averaged.
    pub n: usize,
    /// Degrees of freedom of the spread: `n − 1`, or `m0 − 1`.
    pub df: usize,
}

impl LogSeries {
    pub fn of(logs: &[f64], spread: Spread) -> LogSeries {
        let n = logs.len();
        let (sd, df) = match spread {
            // A first look no shorter than the series is the series' own spread.
            Spread::FirstLook(m0) => {
                let m0 = m0.min(n);
                (sample_sd(&logs[..m0]), m0.saturating_sub(1))
            }
            Spread::Pooled { sd, df } => (sd, df),
            Spread::Own => (sample_sd(logs), n.saturating_sub(1)),
        };
        LogSeries {
            mean: mean(logs),
            sd,
            n,
            df,
        }
    }

    /// `s / √n` in log space.
    pub fn se(&self) -> f64 {
        self.sd / (self.n as f64).sqrt()
    }

    /// The interval at `level` (0.95 for the headline), as percents.
    pub fn interval(&self, level: f64) -> (f64, f64) {
        let half = t_quantile(1.0 - (1.0 - level) / 2.0, self.df) * self.se();
        (pct_of_log(self.mean - half), pct_of_log(self.mean + half))
    }

    /// The geometric-mean estimate, as a percent.
    pub fn estimate_pct(&self) -> f64 {
        pct_of_log(self.mean)
    }

    /// The smallest true effect (a positive percent) that the 95 % interval excludes 0 for
    /// with 80 % power: `(t(0.975, df) + t(0.80, df)) · s/√n` (METHOD.md).
    pub fn mde_pct(&self) -> f64 {
        let t = t975(self.df) + t_quantile(0.80, self.df);
        pct_of_log(t * self.se())
    }

    /// Two-sided p-value of the one-sample t test of "mean log ratio = 0".
    pub fn p_value(&self) -> f64 {
        let t = self.mean / self.se();
        match StudentsT::new(0.0, 1.0, self.df as f64) {
            // statrs refuses df = 0.
            Ok(dist) if t.is_finite() => 2.0 * dist.sf(t.abs()),
            _ if self.df > 0 && self.sd == 0.0 && self.mean != 0.0 => 0.0,
            _ => f64::NAN,
        }
    }
}

/// The 95 % Clopper–Pearson interval of `k` successes in `n`; NaN for `n = 0`.
pub fn clopper_pearson(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let (kf, nf) = (k as f64, n as f64);
    let lo = if k == 0 {
        0.0
    } else {
        Beta::new(kf, nf - kf + 1.0).map_or(f64::NAN, |b| b.inverse_cdf(0.025))
    };
    let hi = if k == n {
        1.0
    } else {
        Beta::new(kf + 1.0, nf - kf).map_or(f64::NAN, |b| b.inverse_cdf(0.975))
    };
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        assert!((t975(2) - 4.302652729911275).abs() < 1e-9);
        assert!((t975(6) - 2.446911851144969).abs() < 1e-9);
        assert!((t_quantile(0.9875, 3) - 4.176534).abs() < 1e-5);
        assert!((t_quantile(0.80, 5) - 0.919544).abs() < 1e-5);
        assert!(t975(0).is_nan() && t_quantile(0.9, 0).is_nan());
        assert_eq!(t_quantile(0.975, 7), t975(7));
    }

    #[test]
    fn the_sample_sd_divides_by_m_minus_one() {
        assert_eq!(sample_sd(&[1.0, 3.0]), 2f64.sqrt());
        assert_eq!(sample_sd(&[2.0, 4.0, 6.0]), 2.0);
        assert!(sample_sd(&[1.0]).is_nan());
        // Centred before squaring: Σv² − n·mean² would cancel to a negative here.
        let offset = [1e9 + 0.1, 1e9 + 0.7, 1e9 + 0.3];
        assert!(
            (sample_sd(&offset) - 0.305_505).abs() < 1e-5,
            "{}",
            sample_sd(&offset)
        );
        assert!(mean(&[]).is_nan());
    }

    #[test]
    fn log_ratios_point_towards_better() {
        assert_eq!(log_ratio(Better::Higher, 2.0, 1.0), 2f64.ln());
        assert_eq!(log_ratio(Better::Higher, 2.0, 4.0), 0.5f64.ln());
        assert_eq!(log_ratio(Better::Lower, 2.0, 1.0), 0.5f64.ln());
        assert!((pct_of_log(1.1f64.ln()) - 10.0).abs() < 1e-12);
    }

    #[test]
    fn a_stopped_series_uses_the_first_looks_spread() {
        let l = [0.01, 0.02, 0.03, 0.0, 0.04];
        let s = LogSeries::of(&l, Spread::FirstLook(3));
        assert_eq!((s.n, s.df), (5, 2));
        assert!((s.sd - 0.01).abs() < 1e-15);
        assert!((s.mean - 0.02).abs() < 1e-15);
        let own = LogSeries::of(&l, Spread::Own);
        assert_eq!((own.df, own.sd), (4, sample_sd(&l)));
        // A first look no shorter than the series is the series' own spread.
        assert_eq!(LogSeries::of(&l, Spread::FirstLook(5)), own);
        assert_eq!(LogSeries::of(&l, Spread::FirstLook(9)), own);
    }

    #[test]
    fn the_interval_is_the_t_interval_of_the_mean_log_ratio() {
        // 0.01, 0.02, 0.03: mean 0.02, s 0.01, n 3; t(0.975, 2) = 4.302653, t(0.95, 2) = 2.919986.
        let s = LogSeries::of(&[0.01, 0.02, 0.03], Spread::Own);
        let se = 0.01 / 3f64.sqrt();
        let (lo, hi) = s.interval(0.95);
        assert!(
            (lo - 100.0 * (0.02 - 4.302_652_73 * se).exp_m1()).abs() < 1e-6,
            "{lo}"
        );
        assert!(
            (hi - 100.0 * (0.02 + 4.302_652_73 * se).exp_m1()).abs() < 1e-6,
            "{hi}"
        );
        let (lo90, hi90) = s.interval(0.90);
        assert!((lo90 - 100.0 * (0.02 - 2.919_985_58 * se).exp_m1()).abs() < 1e-6);
        assert!((hi90 - 100.0 * (0.02 + 2.919_985_58 * se).exp_m1()).abs() < 1e-6);
        assert!((s.estimate_pct() - 100.0 * 0.02f64.exp_m1()).abs() < 1e-12);
        // t = 0.02 / (0.01/√3) = 3.464 on 2 df: p = 0.074180 (scipy.stats.t.sf).
        assert!((s.p_value() - 0.074_179_9).abs() < 1e-6, "{}", s.p_value());
    }

    #[test]
    fn the_mde_is_t975_plus_t80_standard_errors() {
        let s = LogSeries {
            mean: 0.0,
            sd: 0.01,
            n: 9,
            df: 8,
        };
        let want = 100.0 * ((2.306004135f64 + 0.888889) * 0.01 / 3.0).exp_m1();
        assert!((s.mde_pct() - want).abs() < 1e-4, "{}", s.mde_pct());
    }

    #[test]
    fn the_p_value_of_a_series_without_spread() {
        let none = LogSeries {
            mean: 0.0,
            sd: 0.0,
            n: 4,
            df: 3,
        };
        assert!(none.p_value().is_nan());
        let sure = LogSeries {
            mean: 0.1,
            sd: 0.0,
            n: 4,
            df: 3,
        };
        assert_eq!(sure.p_value(), 0.0);
        let one = LogSeries {
            mean: 0.1,
            sd: f64::NAN,
            n: 1,
            df: 0,
        };
        assert!(one.p_value().is_nan());
        // No degrees of freedom: no p, whatever the spread.
        for sd in [0.0, 0.01] {
            let lone = LogSeries {
                mean: 0.1,
                sd,
                n: 1,
                df: 0,
            };
            assert!(lone.p_value().is_nan(), "sd {sd}");
        }
    }

    #[test]
    fn clopper_pearson_matches_a_table() {
        // 5 of 100: [1.64 %, 11.28 %] (the exact binomial interval).
        let (lo, hi) = clopper_pearson(5, 100);
        assert!(
            (lo - 0.016432).abs() < 1e-5 && (hi - 0.112835).abs() < 1e-5,
            "{lo} {hi}"
        );
        assert_eq!(clopper_pearson(0, 10).0, 0.0);
        assert_eq!(clopper_pearson(10, 10).1, 1.0);
        assert!(clopper_pearson(0, 0).0.is_nan());
    }
}
