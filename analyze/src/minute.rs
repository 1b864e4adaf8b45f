//! What a device-minute buys (METHOD.md "What a device-minute buys"): per metric and arm, the
//! 95 % half-width that one minute of this ladder's passes gives at many passes, so that two
//! designs run on one card compare by the device time a half-width costs them.

use ladder::stats::{pct_of_log, sample_sd};
use serde::Serialize;
use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};

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
    if n < LEAST_PASSES || !(pass_seconds > 0.0) {
        return None;
    }
    let s = sample_sd(logs);
    let df = (n - 1) as f64;
    let chi2 = ChiSquared::new(df).ok()?;
    let halfwidth = |sd: f64| pct_of_log(z() * sd * (pass_seconds / 60.0).sqrt());
    Some(MinuteHalfwidth {
        column: column.to_string(),
        arm: arm.to_string(),
        against: against.to_string(),
        passes: n,
        pass_seconds,
        sd_pct: 100.0 * s,
        halfwidth_pct: halfwidth(s),
        ci_low_pct: halfwidth(s * (df / chi2.inverse_cdf(0.975)).sqrt()),
        ci_high_pct: halfwidth(s * (df / chi2.inverse_cdf(0.025)).sqrt()),
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
