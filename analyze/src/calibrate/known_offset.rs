//! How far known-effect controls read from their declared effects, pooled over a host and
//! card's ladders, and whether their scatter about that offset is what their intervals say
//! (METHOD.md "The live ledger", "The plant or the intervals?").

use super::simulate::normal;
use crate::stats::nearest_rank;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde::Serialize;

/// Draws of honest tests that set the offset's interval and the Birge ratio's range.
const DRAWS: usize = 4000;

/// One known-effect test: its offset from the declared effect on the log scale, the standard
/// error of its mean log ratio and that error's degrees of freedom.
#[derive(Clone, Copy, Debug)]
pub struct Offset {
    pub log: f64,
    pub se: f64,
    pub df: usize,
}

impl Offset {
    /// The test of a mean log ratio `mean` against `expected_pct`.
    pub fn of(mean: f64, se: f64, df: usize, expected_pct: f64) -> Offset {
        Offset {
            log: mean - (expected_pct / 100.0).ln_1p(),
            se,
            df,
        }
    }

    fn usable(&self) -> bool {
        self.log.is_finite() && self.se.is_finite() && self.se > 0.0 && self.df > 0
    }
}

/// The tests pooled.
#[derive(Debug, Serialize, PartialEq)]
pub struct PooledOffset {
    pub tests: usize,
    /// Read minus declared, as a percent, with its 95 % interval.
    pub pct: f64,
    pub low_pct: f64,
    pub high_pct: f64,
    /// `√(Q/(k − 1))` and the 95 % range honest intervals give it; `None` for one test.
    pub birge: Option<f64>,
    pub birge_range: Option<(f64, f64)>,
}

/// The inverse-variance mean, its standard error and the Birge ratio (`None` for one test) of
/// offsets `(log, se)`.
fn weighted(tests: impl Iterator<Item = (f64, f64)> + Clone) -> (f64, f64, Option<f64>) {
    let total: f64 = tests.clone().map(|(_, se)| se.powi(-2)).sum();
    let mean = tests.clone().map(|(l, se)| l / (se * se)).sum::<f64>() / total;
    let (q, k) = tests.fold((0.0, 0usize), |(q, k), (l, se)| {
        (q + ((l - mean) / se).powi(2), k + 1)
    });
    let birge = (k > 1).then(|| (q / (k - 1) as f64).sqrt());
    (mean, total.sqrt().recip(), birge)
}

/// The inverse-variance pool of `tests`; `None` when none is usable. Each standard error is
/// itself estimated, so the pool's interval and the Birge ratio's range come from `DRAWS`
/// honest sets of the same tests (each offset normal at its standard error, each error drawn
/// with its degrees of freedom), not from the normal and χ² they would follow were the errors
/// known.
pub fn pool(tests: &[Offset], seed: u64) -> Option<PooledOffset> {
    let usable: Vec<&Offset> = tests.iter().filter(|t| t.usable()).collect();
    if usable.is_empty() {
        return None;
    }
    let (mean, se, birge) = weighted(usable.iter().map(|t| (t.log, t.se)));
    let mut rng = SmallRng::seed_from_u64(seed);
    let (mut ts, mut birges): (Vec<f64>, Vec<f64>) = (0..DRAWS)
        .map(|_| {
            let drawn: Vec<(f64, f64)> = usable
                .iter()
                .map(|t| (t.se * normal(&mut rng), t.se * chi_sd(t.df, &mut rng)))
                .collect();
            let (m, s, b) = weighted(drawn.iter().copied());
            ((m / s).abs(), b.unwrap_or(f64::NAN))
        })
        .unzip();
    ts.sort_unstable_by(f64::total_cmp);
    birges.sort_unstable_by(f64::total_cmp);
    let half = se * nearest_rank(&ts, 0.95);
    let pct = |l: f64| 100.0 * l.exp_m1();
    Some(PooledOffset {
        tests: usable.len(),
        pct: pct(mean),
        low_pct: pct(mean - half),
        high_pct: pct(mean + half),
        birge,
        birge_range: birge.map(|_| (nearest_rank(&birges, 0.025), nearest_rank(&birges, 0.975))),
    })
}

/// `√(χ²_df / df)`: an estimated standard deviation over its true one.
fn chi_sd(df: usize, rng: &mut SmallRng) -> f64 {
    ((0..df).map(|_| normal(rng).powi(2)).sum::<f64>() / df as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// Two tests, worked by hand: offsets 0.01 and 0.03 with standard errors 0.01 and 0.02
    /// weigh 4 to 1: δ̄ = (4·0.01 + 0.03)/5 = 0.014, se = 0.01·√(4/5),
    /// Q = (0.004/0.01)² + (0.016/0.02)² = 0.16 + 0.64 = 0.8 on 1 degree of freedom.
    #[test]
    fn two_tests_pool_by_their_inverse_variances() {
        let (mean, se, birge) = weighted([(0.01, 0.01), (0.03, 0.02)].into_iter());
        assert!(close(mean, 0.014, 1e-15));
        assert!(close(se, 0.01 * 0.8f64.sqrt(), 1e-15));
        assert!(close(birge.unwrap(), 0.8f64.sqrt(), 1e-12));
    }

    /// Three equal errors: δ̄ = 0.02, Q = (0.01² + 0 + 0.01²)/0.01² = 2 on 2 degrees of freedom,
    /// B = 1.
    #[test]
    fn the_birge_ratio_divides_by_the_tests_less_one() {
        let (mean, _, birge) = weighted([(0.01, 0.01), (0.02, 0.01), (0.03, 0.01)].into_iter());
        assert!(close(mean, 0.02, 1e-15));
        assert!(close(birge.unwrap(), 1.0, 1e-12));
    }

    /// With errors known almost exactly (many degrees of freedom) the simulated interval is
    /// the normal one, ±1.96 standard errors, and the Birge ratio's range that of √(χ²₁).
    #[test]
    fn with_well_known_errors_the_interval_is_the_normal_one() {
        let t = |log| Offset {
            log,
            se: 0.01,
            df: 2000,
        };
        let p = pool(&[t(0.01), t(0.03)], 1).unwrap();
        let half = 0.02f64.ln_1p() - (p.low_pct / 100.0).ln_1p();
        assert!(close(half / (0.01 / 2f64.sqrt()), 1.96, 0.08), "{p:?}");
        assert!(close(p.pct, 100.0 * 0.02f64.exp_m1(), 1e-12), "{p:?}");
        // √(χ²₁) at 0.025 and 0.975: 0.031 and 2.241.
        let (lo, hi) = p.birge_range.unwrap();
        assert!(lo < 0.08 && close(hi, 2.241, 0.12), "{lo} {hi}");
    }

    /// Few degrees of freedom widen both: an error estimated from 4 passes (3 df) is often
    /// far too small.
    #[test]
    fn errors_estimated_on_few_passes_widen_the_interval_and_the_range() {
        let t = |log, df| Offset { log, se: 0.01, df };
        let wide = pool(&[t(0.01, 3), t(0.03, 3), t(0.02, 3)], 1).unwrap();
        let narrow = pool(&[t(0.01, 2000), t(0.03, 2000), t(0.02, 2000)], 1).unwrap();
        assert!(wide.low_pct < narrow.low_pct && wide.high_pct > narrow.high_pct);
        assert!(wide.birge_range.unwrap().1 > narrow.birge_range.unwrap().1 + 0.2);
    }

    #[test]
    fn one_test_has_an_offset_but_no_scatter() {
        let p = pool(&[Offset::of(0.0, 0.001, 6, -1.0)], 1).unwrap();
        assert!(close(p.pct, 100.0 / 0.99 - 100.0, 1e-9), "{p:?}");
        assert_eq!((p.birge, p.birge_range), (None, None));
    }

    #[test]
    fn tests_without_a_usable_error_are_left_out() {
        let t = |log, se, df| Offset { log, se, df };
        assert_eq!(
            pool(&[t(f64::NAN, 0.01, 5), t(0.0, 0.0, 5), t(0.0, 0.01, 0)], 1),
            None
        );
        assert_eq!(
            pool(&[t(f64::NAN, 0.01, 5), t(0.0, 0.01, 5)], 1)
                .unwrap()
                .tests,
            1
        );
    }
}
