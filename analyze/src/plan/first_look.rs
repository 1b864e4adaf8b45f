//! A first look for Stein's rule (METHOD.md "Repetitions and passes"): the one with the
//! fewest expected analysis passes when the pilot's spread is the truth, and the looks after
//! it. A small first look costs a large t quantile; a large one may run past the need.

use ladder::stats::t975;
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The fewest analysis passes of a first look: a spec's looks leave at least three.
pub const MIN_FIRST_LOOK: usize = 3;

/// Looks a plan prints between the first and the last, at most.
const MORE_LOOKS: usize = 14;

/// The first look chosen for one spread rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FirstLook {
    /// `m0`: analysis passes at the first look.
    pub analysis: usize,
    /// `E(m0)`: the analysis passes the rule runs, on average, with a look at every pass.
    pub expected: f64,
    /// The 99th percentile of the analysis passes it runs.
    pub p99: usize,
}

/// `F_k(x)`, the χ² distribution function with `k` degrees of freedom.
fn chi2_cdf(k: usize, x: f64) -> f64 {
    ChiSquared::new(k as f64).map_or(f64::NAN, |d| d.cdf(x))
}

/// `c = t(0.975, k)²·v/h²`: the need, per unit of `s0²/v`.
fn scale(k: usize, v: f64, h: f64) -> f64 {
    t975(k).powi(2) * v / (h * h)
}

/// `E[max(m0, c·X)]`, `X ~ χ²_k/k`: `m0·F_k(k·m0/c) + c·(1 − F_{k+2}(k·m0/c))`.
pub fn expected_passes(m0: usize, k: usize, c: f64) -> f64 {
    if c <= 0.0 {
        return m0 as f64;
    }
    let x = k as f64 * m0 as f64 / c;
    m0 as f64 * chi2_cdf(k, x) + c * (1.0 - chi2_cdf(k + 2, x))
}

/// The first look with the fewest expected analysis passes at variance `v` and half-width
/// `h`; `df(m0)` gives the degrees of freedom of `s0` at a first look of `m0` analysis
/// passes. The search ends at the first `m0` above the best expectation, since
/// `E(m0) ≥ m0`.
pub fn first_look(v: f64, h: f64, df: impl Fn(usize) -> usize) -> FirstLook {
    let at = |m0: usize| {
        let c = scale(df(m0), v, h);
        (m0, expected_passes(m0, df(m0), c))
    };
    let mut best = at(MIN_FIRST_LOOK);
    let mut m0 = MIN_FIRST_LOOK + 1;
    while (m0 as f64) <= best.1 {
        let candidate = at(m0);
        if candidate.1 < best.1 {
            best = candidate;
        }
        m0 += 1;
    }
    let (m0, expected) = best;
    let k = df(m0);
    let q99 = ChiSquared::new(k as f64).map_or(f64::NAN, |d| d.inverse_cdf(0.99));
    let p99 = (scale(k, v, h) * q99 / k as f64).ceil();
    FirstLook {
        analysis: m0,
        expected,
        p99: (p99 as usize).max(m0),
    }
}

/// The looks (passes, warm-up included): the first at `W + m0`, the last at `W + p99`, and
/// at most 14 more between them, evenly spaced and rounded up.
pub fn looks(warmup: usize, look: &FirstLook) -> Vec<usize> {
    let (first, last) = (warmup + look.analysis, warmup + look.p99);
    let more = MORE_LOOKS.min((last - first).saturating_sub(1));
    let mut looks = vec![first];
    looks.extend((1..=more).map(|i| first + (i * (last - first)).div_ceil(more + 1)));
    if last > first {
        looks.push(last);
    }
    looks
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `E[max(m0, c·X)]` by simulation, for the closed form to agree with.
    fn simulated(m0: usize, k: usize, c: f64) -> f64 {
        let (mut state, n) = (7u64, 200_000);
        let mut normal = || {
            let mut uniform = || {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
            };
            let (u, v) = (uniform(), uniform());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let total: f64 = (0..n)
            .map(|_| {
                let x = (0..k).map(|_| normal().powi(2)).sum::<f64>() / k as f64;
                (c * x).max(m0 as f64)
            })
            .sum();
        total / n as f64
    }

    #[test]
    fn the_expected_passes_are_those_of_the_rule() {
        for (m0, k, c) in [(4, 3, 12.0), (6, 5, 4.0), (5, 8, 30.0)] {
            let (exact, sim) = (expected_passes(m0, k, c), simulated(m0, k, c));
            assert!(
                (exact - sim).abs() < 0.01 * exact,
                "{m0} {k} {c}: {exact} vs {sim}"
            );
        }
        // No spread: the rule stops at its first look.
        assert_eq!(expected_passes(5, 4, 0.0), 5.0);
    }

    #[test]
    fn the_first_look_is_the_least_expected_one() {
        let (v, h) = (2e-4, 0.005);
        let chosen = first_look(v, h, |m0| m0 - 1);
        for m0 in MIN_FIRST_LOOK..60 {
            let k = m0 - 1;
            assert!(
                expected_passes(m0, k, scale(k, v, h)) >= chosen.expected,
                "m0 = {m0} beats the chosen {chosen:?}"
            );
        }
        assert!(chosen.analysis > MIN_FIRST_LOOK && chosen.p99 > chosen.analysis);
        // Pooled over three arms: more degrees of freedom, fewer passes expected.
        let pooled = first_look(v, h, |m0| 2 * (m0 - 1));
        assert!(pooled.expected < chosen.expected, "{pooled:?} {chosen:?}");
    }

    /// Stein's rule played out with its own draws: `k + 1` normal log ratios of variance `v`
    /// give `s0`, the rule runs `max(m0, (t(0.975, k)·s0/h)²)` analysis passes; their mean is
    /// the chosen first look's expectation, which the closed form must agree with.
    #[test]
    fn the_chosen_first_look_expects_the_passes_the_rule_runs() {
        let (v, h) = (1e-4, 1.005f64.ln());
        let look = first_look(v, h, |m0| m0 - 1);
        let (m0, k) = (look.analysis, look.analysis - 1);
        let mut state = 11u64;
        let mut uniform = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let n = 100_000;
        let mut runs = Vec::with_capacity(n);
        for _ in 0..n {
            let draws: Vec<f64> = (0..m0)
                .map(|_| {
                    let (a, b) = (uniform(), uniform());
                    v.sqrt() * (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
                })
                .collect();
            let mean = draws.iter().sum::<f64>() / m0 as f64;
            let s0 = (draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / k as f64).sqrt();
            runs.push((t975(k) * s0 / h).powi(2).max(m0 as f64));
        }
        let simulated = runs.iter().sum::<f64>() / n as f64;
        assert!(
            (simulated - look.expected).abs() < 0.01 * look.expected,
            "{look:?} against {simulated}"
        );
        // The last look: the 99th percentile of the passes run.
        runs.sort_by(f64::total_cmp);
        let p99 = runs[n * 99 / 100].ceil();
        assert!(
            (p99 - look.p99 as f64).abs() <= 0.03 * p99,
            "{look:?} against a 99th percentile of {p99}"
        );
    }

    #[test]
    fn with_no_spread_the_first_look_is_the_least_allowed() {
        // E(m0) = m0: the least first look a spec allows, not one below it.
        let look = first_look(0.0, 0.005, |m0| m0 - 1);
        assert_eq!((look.analysis, look.expected), (MIN_FIRST_LOOK, 3.0));
    }

    #[test]
    fn the_looks_run_from_the_first_to_the_99th_percentile() {
        let look = |analysis, p99| FirstLook {
            analysis,
            expected: 0.0,
            p99,
        };
        assert_eq!(looks(1, &look(4, 4)), [5]);
        assert_eq!(looks(1, &look(4, 7)), [5, 6, 7, 8]);
        let many = looks(1, &look(10, 310));
        assert_eq!((many.len(), many[0], many[15]), (16, 11, 311));
        assert_eq!(many[1], 11 + 20);
        assert!(many.windows(2).all(|w| w[1] > w[0]));
    }
}
