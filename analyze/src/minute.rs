//! What a device-minute buys (METHOD.md "What a device-minute buys"): per metric and arm, the
//! 95 % half-width that one minute of this ladder's passes gives at many passes, so that two
//! designs run on one card compare by the device time a half-width costs them.

use ladder::stats::{pct_of_log, sample_sd};
use serde::Serialize;
use statrs::distribution::{ChiSquared, ContinuousCDF, FisherSnedecor, Normal};

/// Fewer paired passes give no spread worth a figure.
const LEAST_PASSES: usize = 3;

/// One arm's `H₆₀` on one metric, with the interval its spread's sampling error gives.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MinuteHalfwidth {
    pub column: String,
    pub arm: String,
    pub against: String,
    /// `n`: the analysis passes in which both cells hold a value.
    pub passes: usize,
    /// `c`: the mean device seconds of an analysis pass, every arm's cells.
    pub pass_seconds: f64,
    /// `100·s`: the sd of a pass's log ratio.
    pub sd_pct: f64,
    pub halfwidth_pct: f64,
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
}

/// `H₆₀` of the pass-paired log ratios `logs` (one per analysis pass that pairs) at `c`
/// device seconds a pass; `None` with fewer than three of them or no time.
pub fn minute_halfwidth(
    column: &str,
    arm: &str,
    against: &str,
    logs: &[f64],
    pass_seconds: f64,
) -> Option<MinuteHalfwidth> {
    let n = logs.len();
    // A NaN or non-positive time prices nothing.
    if n < LEAST_PASSES || pass_seconds.is_nan() || pass_seconds <= 0.0 {
        return None;
    }
    let s = sample_sd(logs);
    let (halfwidth_pct, ci_low_pct, ci_high_pct) = halfwidths(s, n - 1, pass_seconds)?;
    Some(MinuteHalfwidth {
        column: column.to_string(),
        arm: arm.to_string(),
        against: against.to_string(),
        passes: n,
        pass_seconds,
        sd_pct: 100.0 * s,
        halfwidth_pct,
        ci_low_pct,
        ci_high_pct,
    })
}

/// `H₆₀` of a log-ratio sd `s` on `df` degrees of freedom at `c` seconds a pass, and its 95 %
/// interval from `s`'s.
fn halfwidths(s: f64, df: usize, c: f64) -> Option<(f64, f64, f64)> {
    let df = df as f64;
    let chi2 = ChiSquared::new(df).ok()?;
    let halfwidth = |sd: f64| pct_of_log(z() * sd * (c / 60.0).sqrt());
    Some((
        halfwidth(s),
        halfwidth(s * (df / chi2.inverse_cdf(0.975)).sqrt()),
        halfwidth(s * (df / chi2.inverse_cdf(0.025)).sqrt()),
    ))
}

/// One design's `H₆₀` pooled over ladders of one spec (METHOD.md "Across ladders").
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MinutePool {
    pub spec: String,
    pub column: String,
    pub arm: String,
    pub against: String,
    /// The ladders pooled, by tag.
    pub ladders: Vec<String>,
    /// `d = Σ(n − 1)`.
    pub df: usize,
    /// `c = Σ n·c / Σ n`.
    pub pass_seconds: f64,
    pub sd_pct: f64,
    pub halfwidth_pct: f64,
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    /// The device time to one half-width against the reference spec's pool of this metric and
    /// arm; `None` for the reference's own pools and where it has no such arm.
    pub time_ratio: Option<TimeRatio>,
}

/// `ρ = (s²·c) / (s₁²·c₁)` against the reference pool, with its F interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimeRatio {
    pub spec: String,
    pub arm: String,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

impl TimeRatio {
    pub fn reading(&self) -> &'static str {
        match (self.ci_high < 1.0, self.ci_low > 1.0) {
            (true, _) => "cheaper",
            (_, true) => "dearer",
            _ => "not resolved",
        }
    }
}

/// One ladder's figures as the pools read them: its spec's name, its tag and its `H₆₀`s.
pub type LadderMinutes<'a> = (&'a str, &'a str, &'a [MinuteHalfwidth]);

/// Every design's pool over `ladders` (in their order), each of another spec than the first
/// ladder's compared with that spec's pool of its metric and arm; none for fewer than two
/// ladders.
pub fn pools(ladders: &[LadderMinutes]) -> Vec<MinutePool> {
    if ladders.len() < 2 {
        return Vec::new();
    }
    let mut sums: Vec<(MinutePool, f64, f64)> = Vec::new(); // pool, Σ(n−1)s², Σ n·c
    for &(spec, tag, minutes) in ladders {
        for h in minutes {
            let key = |p: &MinutePool| {
                p.spec == spec && (&p.column, &p.arm, &p.against) == (&h.column, &h.arm, &h.against)
            };
            let at = match sums.iter().position(|(p, ..)| key(p)) {
                Some(at) => at,
                None => {
                    sums.push((empty_pool(spec, h), 0.0, 0.0));
                    sums.len() - 1
                }
            };
            let (pool, ss, nc) = &mut sums[at];
            let s = h.sd_pct / 100.0;
            pool.ladders.push(tag.to_string());
            pool.df += h.passes - 1;
            *ss += (h.passes - 1) as f64 * s * s;
            *nc += h.passes as f64 * h.pass_seconds;
        }
    }
    let mut pools: Vec<MinutePool> = sums.into_iter().filter_map(finish).collect();
    let Some(reference) = pools.first().map(|p| p.spec.clone()) else {
        return pools;
    };
    for i in 0..pools.len() {
        let p = &pools[i];
        let twin =
            |q: &&MinutePool| q.spec == reference && (&q.column, &q.arm) == (&p.column, &p.arm);
        if p.spec != reference {
            pools[i].time_ratio = pools.iter().find(twin).and_then(|r| time_ratio(r, p));
        }
    }
    pools
}

fn empty_pool(spec: &str, h: &MinuteHalfwidth) -> MinutePool {
    MinutePool {
        spec: spec.to_string(),
        column: h.column.clone(),
        arm: h.arm.clone(),
        against: h.against.clone(),
        ladders: Vec::new(),
        df: 0,
        pass_seconds: 0.0,
        sd_pct: f64::NAN,
        halfwidth_pct: f64::NAN,
        ci_low_pct: f64::NAN,
        ci_high_pct: f64::NAN,
        time_ratio: None,
    }
}

/// The pool's `s`, `c` and `H₆₀` from its sums.
fn finish((mut pool, ss, nc): (MinutePool, f64, f64)) -> Option<MinutePool> {
    let passes = pool.df + pool.ladders.len();
    let s = (ss / pool.df as f64).sqrt();
    pool.pass_seconds = nc / passes as f64;
    pool.sd_pct = 100.0 * s;
    (pool.halfwidth_pct, pool.ci_low_pct, pool.ci_high_pct) =
        halfwidths(s, pool.df, pool.pass_seconds)?;
    Some(pool)
}

/// `pool`'s device time to one half-width against `first`'s, with Fisher's F interval.
fn time_ratio(first: &MinutePool, pool: &MinutePool) -> Option<TimeRatio> {
    // The percent's scale cancels in the ratio (so `/ 100` mutated to `* 100` or `% 100`, for
    // sds below 100 %, is an equivalent mutant).
    let cost = |p: &MinutePool| (p.sd_pct / 100.0).powi(2) * p.pass_seconds;
    let ratio = cost(pool) / cost(first);
    let (d, d1) = (pool.df as f64, first.df as f64);
    let upper = |a: f64, b: f64| FisherSnedecor::new(a, b).ok().map(|f| f.inverse_cdf(0.975));
    Some(TimeRatio {
        spec: first.spec.clone(),
        arm: first.arm.clone(),
        ratio,
        ci_low: ratio / upper(d, d1)?,
        ci_high: ratio * upper(d1, d)?,
    })
}

/// `c`: the mean of `pass_seconds` (indexed by pass) over `passes`; `None` when none ran.
pub fn mean_pass_seconds(pass_seconds: &[f64], passes: std::ops::Range<usize>) -> Option<f64> {
    let ran: Vec<f64> = passes
        .filter_map(|p| pass_seconds.get(p).copied())
        .collect();
    (!ran.is_empty()).then(|| ran.iter().sum::<f64>() / ran.len() as f64)
}

/// `Φ⁻¹(0.975)`: the figure describes a design at many passes, not one ladder's `t`.
fn z() -> f64 {
    Normal::standard().inverse_cdf(0.975)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::simulate::normal;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn a_minute_of_passes_buys_z_sd_over_root_passes() {
        // sd 0.1 % a pass, 6 s a pass: ten passes a minute, ±1.96 · 0.1 / √10 %.
        let logs = [0.001, -0.001, 0.001, -0.001, 0.001, -0.001];
        let sd = sample_sd(&logs);
        let h = minute_halfwidth("tok_s", "b", "a", &logs, 6.0).unwrap();
        let want = 100.0 * (1.959964 * sd / 10f64.sqrt()).exp_m1();
        assert!((h.halfwidth_pct - want).abs() < 1e-6, "{h:?}");
        assert_eq!(h.passes, 6);
        assert!((h.sd_pct - 100.0 * sd).abs() < 1e-12);
        assert!(h.ci_low_pct < h.halfwidth_pct && h.halfwidth_pct < h.ci_high_pct);
    }

    /// Four times the device time a pass doubles the half-width a minute buys.
    #[test]
    fn a_dearer_pass_buys_a_wider_half_width() {
        let logs = [0.002, -0.001, 0.0005, 0.0, -0.0015];
        let cheap = minute_halfwidth("m", "b", "a", &logs, 2.0).unwrap();
        let dear = minute_halfwidth("m", "b", "a", &logs, 8.0).unwrap();
        let log = |h: &MinuteHalfwidth| (h.halfwidth_pct / 100.0).ln_1p();
        let ratio = log(&dear) / log(&cheap);
        assert!((ratio - 2.0).abs() < 1e-9, "{ratio}");
    }

    #[test]
    fn too_few_passes_or_no_time_give_none() {
        assert_eq!(minute_halfwidth("m", "b", "a", &[0.1, 0.2], 5.0), None);
        assert_eq!(minute_halfwidth("m", "b", "a", &[0.1, 0.2, 0.3], 0.0), None);
        assert_eq!(
            minute_halfwidth("m", "b", "a", &[0.1, 0.2, 0.3], f64::NAN),
            None
        );
    }

    #[test]
    fn the_mean_pass_is_over_the_passes_asked_for() {
        let seconds = [100.0, 4.0, 6.0, 8.0];
        assert_eq!(mean_pass_seconds(&seconds, 1..4), Some(6.0));
        assert_eq!(
            mean_pass_seconds(&seconds, 1..9),
            Some(6.0),
            "passes not run"
        );
        assert_eq!(mean_pass_seconds(&seconds, 4..6), None);
    }

    fn pool_of(sd: f64, df: usize, c: f64) -> MinutePool {
        let h = minute_halfwidth("m", "b", "a", &[0.0, 1.0, 2.0], c).unwrap();
        let mut pool = empty_pool("spec", &h);
        (pool.sd_pct, pool.df, pool.pass_seconds) = (100.0 * sd, df, c);
        pool
    }

    #[test]
    fn the_time_ratio_is_the_cost_ratio_with_fishers_interval() {
        let t = time_ratio(&pool_of(0.0160, 30, 7.82), &pool_of(0.0234, 26, 6.62)).unwrap();
        let want = (0.0234f64 / 0.0160).powi(2) * 6.62 / 7.82;
        assert!((t.ratio - want).abs() < 1e-12, "{t:?}");
        // F(0.975; 26, 30) = 2.1124 and F(0.975; 30, 26) = 2.1563.
        assert!((t.ratio / t.ci_low - 2.1124).abs() < 1e-3, "{t:?}");
        assert!((t.ci_high / t.ratio - 2.1563).abs() < 1e-3, "{t:?}");
        assert_eq!(t.reading(), "not resolved");
    }

    #[test]
    fn a_ratio_is_cheaper_or_dearer_only_where_its_interval_leaves_1() {
        let reading = |ci_low, ci_high| {
            let (spec, arm, ratio) = (String::new(), String::new(), 1.0);
            TimeRatio {
                spec,
                arm,
                ratio,
                ci_low,
                ci_high,
            }
            .reading()
        };
        assert_eq!(reading(0.2, 0.9), "cheaper");
        assert_eq!(reading(1.1, 3.0), "dearer");
        assert_eq!(reading(0.5, 2.0), "not resolved");
        assert_eq!(
            reading(0.5, 1.0),
            "not resolved",
            "an interval that reaches 1"
        );
        assert_eq!(
            reading(1.0, 2.0),
            "not resolved",
            "an interval that reaches 1"
        );
    }

    fn figure(arm: &str, passes: usize, sd_pct: f64, pass_seconds: f64) -> MinuteHalfwidth {
        let mut h = minute_halfwidth("m", arm, "base", &[0.0, 1.0, 2.0], pass_seconds).unwrap();
        (h.passes, h.sd_pct) = (passes, sd_pct);
        h
    }

    #[test]
    fn pools_need_two_ladders() {
        let one = [figure("x", 5, 0.02, 10.0)];
        assert!(pools(&[("a", "t1", &one[..])]).is_empty());
        let two = pools(&[("a", "t1", &one[..]), ("a", "t2", &one[..])]);
        assert_eq!(two.len(), 1);
        assert_eq!(two[0].ladders, ["t1", "t2"]);
    }

    /// `d = Σ(n − 1)`, `s² = Σ(n − 1)s²/d`, `c = Σ n·c / Σ n`, and the pool's `H₆₀` from them.
    #[test]
    fn a_pool_adds_degrees_of_freedom_and_weights_a_pass_by_its_ladders_passes() {
        let (first, second) = ([figure("x", 5, 0.02, 10.0)], [figure("x", 9, 0.04, 20.0)]);
        let pool = &pools(&[("a", "t1", &first[..]), ("a", "t2", &second[..])])[0];
        assert_eq!(pool.df, 12);
        let c = (5.0 * 10.0 + 9.0 * 20.0) / 14.0;
        assert!(
            (pool.pass_seconds - c).abs() < 1e-12,
            "{}",
            pool.pass_seconds
        );
        let s = ((4.0 * 0.0002f64.powi(2) + 8.0 * 0.0004f64.powi(2)) / 12.0).sqrt();
        assert!((pool.sd_pct - 100.0 * s).abs() < 1e-12);
        let (h, lo, hi) = halfwidths(s, 12, c).unwrap();
        assert_eq!(
            (pool.halfwidth_pct, pool.ci_low_pct, pool.ci_high_pct),
            (h, lo, hi)
        );
    }

    /// Arms of one spec are not designs of their own: each arm of another spec is compared
    /// with the first spec's arm of its name, and the first spec's arms with nothing.
    #[test]
    fn each_arm_is_compared_with_the_first_specs_arm_of_its_name() {
        let first = [figure("x", 9, 0.02, 10.0), figure("y", 9, 0.04, 10.0)];
        let other = [figure("x", 9, 0.02, 10.0), figure("y", 9, 0.02, 10.0)];
        let ladders = [("a", "t1", &first[..]), ("b", "t2", &other[..])];
        let pools = pools(&ladders);
        let ratio = |spec: &str, arm: &str| {
            let p = pools
                .iter()
                .find(|p| p.spec == spec && p.arm == arm)
                .unwrap();
            p.time_ratio.as_ref().map(|t| (t.arm.clone(), t.ratio))
        };
        assert_eq!(ratio("a", "x"), None);
        assert_eq!(ratio("a", "y"), None);
        assert_eq!(ratio("b", "x"), Some(("x".into(), 1.0)));
        let (arm, r) = ratio("b", "y").unwrap();
        assert_eq!(arm, "y");
        assert!((r - 0.25).abs() < 1e-12, "{r}");
    }

    /// Under normal noise the ratio's interval holds the true one in about 95 % of pairs.
    #[test]
    fn the_time_ratio_interval_covers_the_truth_95_percent_of_the_time() {
        let (sd1, sd2, c1, c2, trials): (f64, f64, f64, f64, usize) =
            (0.0002, 0.0003, 8.0, 6.0, 4000);
        let truth = (sd2 / sd1).powi(2) * c2 / c1;
        let mut rng = SmallRng::seed_from_u64(7);
        let mut draw = |sd: f64, n: usize| {
            let logs: Vec<f64> = (0..n).map(|_| sd * normal(&mut rng)).collect();
            sample_sd(&logs)
        };
        let covered = (0..trials)
            .filter(|_| {
                let (first, second) =
                    (pool_of(draw(sd1, 12), 11, c1), pool_of(draw(sd2, 9), 8, c2));
                let t = time_ratio(&first, &second).unwrap();
                t.ci_low <= truth && truth <= t.ci_high
            })
            .count();
        let rate = covered as f64 / trials as f64;
        assert!((rate - 0.95).abs() < 0.012, "coverage {rate}");
    }

    /// Under normal noise the interval holds the true `H₆₀` in about 95 % of ladders.
    #[test]
    fn the_interval_covers_the_true_half_width_95_percent_of_the_time() {
        let (sd, c, ladders) = (0.0003, 5.0, 4000);
        let truth = pct_of_log(z() * sd * (c / 60.0f64).sqrt());
        let mut rng = SmallRng::seed_from_u64(49);
        let covered = (0..ladders)
            .filter(|_| {
                let logs: Vec<f64> = (0..8).map(|_| sd * normal(&mut rng)).collect();
                let h = minute_halfwidth("m", "b", "a", &logs, c).unwrap();
                h.ci_low_pct <= truth && truth <= h.ci_high_pct
            })
            .count();
        let rate = covered as f64 / ladders as f64;
        // ±3.5 binomial sds of 0.95 over 4000 ladders: 0.012.
        assert!((rate - 0.95).abs() < 0.012, "coverage {rate}");
    }
}
