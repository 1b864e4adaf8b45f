//! A figure in words, the one way both binaries say it: a time (or any lower-is-better
//! metric) as the ratio `base/arm` with its interval, `ran 2.69× faster than fixed
//! [2.47, 2.92]`; a higher-is-better metric as a percent, `+13.2 % [+7.3, +19.5]`; each with
//! as many decimals as its interval needs.

use crate::spec::Better;

/// Enough decimals to show an interval of this half-width: 1 at several units, 3 at a few
/// hundredths, at most 4.
pub fn decimals(halfwidth: f64) -> usize {
    if !(halfwidth.is_finite() && halfwidth > 0.0) {
        return 1;
    }
    (1.0 - halfwidth.log10().floor()).clamp(1.0, 4.0) as usize
}

/// The decimals of an interval's figures: as its half-width needs, or, for an interval of
/// no width (a quantity that never varies), as the estimate's distance from no change
/// (`size`) needs, so that a real difference never reads as none.
fn interval_decimals(halfwidth: f64, size: f64) -> usize {
    match halfwidth > 0.0 {
        true => decimals(halfwidth),
        false => decimals(size.abs()),
    }
}

/// Whether a column holds a time, so that its ratio reads `ran … faster`.
pub fn is_time(column: &str) -> bool {
    ["_s", "_seconds", "seconds_mean", "_ms", "_us", "_ns"]
        .iter()
        .any(|suffix| column.ends_with(suffix))
}

/// A lower-is-better quantity against `against`, from its estimate and interval in percent
/// (better-is-positive): the ratio `base/arm = 1 + estimate/100`, said the way round that is
/// above 1 (`ran 2.69× faster`, `ran 1.50× slower`; `1.20× lower` for a metric that is not a
/// time).
pub fn ratio(column: &str, against: &str, estimate: f64, lo: f64, hi: f64) -> String {
    let (r, rlo, rhi) = (1.0 + estimate / 100.0, 1.0 + lo / 100.0, 1.0 + hi / 100.0);
    let time = is_time(column);
    let (factor, low, high, word) = if r >= 1.0 {
        (r, rlo, rhi, if time { "faster" } else { "lower" })
    } else {
        let word = if time { "slower" } else { "higher" };
        (1.0 / r, 1.0 / rhi, 1.0 / rlo, word)
    };
    // As many decimals as the interval shown needs, at least two.
    let d = interval_decimals((high - low) / 2.0, factor - 1.0).max(2);
    let verb = if time { "ran " } else { "" };
    format!("{verb}{factor:.d$}× {word} than {against} [{low:.d$}, {high:.d$}]")
}

/// A higher-is-better estimate as a percent with its interval.
pub fn percent(estimate: f64, lo: f64, hi: f64) -> String {
    let d = interval_decimals((hi - lo) / 2.0, estimate);
    format!("{estimate:+.d$} % [{lo:+.d$}, {hi:+.d$}]")
}

/// The estimate of a metric against `against` as its kind of metric reads.
pub fn estimate(better: Better, column: &str, against: &str, est: f64, lo: f64, hi: f64) -> String {
    match better {
        Better::Lower => ratio(column, against, est, lo, hi),
        Better::Higher => percent(est, lo, hi),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_reads_as_a_ratio_from_the_same_interval() {
        // base/arm = 2.69 with the interval [2.47, 2.92]: estimate +169 % [+147, +192].
        assert_eq!(
            ratio("ladder_wall_s", "fixed", 169.0, 147.0, 192.0),
            "ran 2.69× faster than fixed [2.47, 2.92]"
        );
        // An arm that takes 1.5 times as long: base/arm = 0.667 [0.6, 0.75].
        assert_eq!(
            ratio("ladder_wall_s", "a", -33.333_333, -40.0, -25.0),
            "ran 1.50× slower than a [1.33, 1.67]"
        );
        // 5.80 times as slow, [5.58, 6.03]: the decimals follow the interval shown.
        assert_eq!(
            ratio("ladder_wall_s", "a", -82.757, -83.424, -82.068),
            "ran 5.80× slower than a [5.58, 6.03]"
        );
        assert_eq!(
            ratio("ladder_maxrss_kib", "a", 20.0, 10.0, 30.0),
            "1.20× lower than a [1.10, 1.30]"
        );
    }

    #[test]
    fn percents_show_as_many_decimals_as_the_interval_needs() {
        assert_eq!(percent(13.2, 7.3, 19.5), "+13.2 % [+7.3, +19.5]");
        assert_eq!(percent(0.134, 0.097, 0.171), "+0.134 % [+0.097, +0.171]");
        assert_eq!(decimals(f64::NAN), 1);
        assert_eq!(decimals(0.0004), 4);
        assert_eq!(
            estimate(Better::Higher, "tok_s", "a", 1.0, 0.5, 1.5),
            "+1.00 % [+0.50, +1.50]"
        );
        assert!(estimate(Better::Lower, "run_s", "a", 10.0, 5.0, 15.0)
            .starts_with("ran 1.100× faster than a [1.050, 1.150]"));
    }

    #[test]
    fn an_interval_of_no_width_still_shows_its_difference() {
        // 0.0084 % more memory in every pass: not `1.00× higher [1.00, 1.00]`.
        let e = -0.008_409;
        assert_eq!(
            ratio("device_mem_peak_mib", "plain", e, e, e),
            "1.0001× higher than plain [1.0001, 1.0001]"
        );
        assert_eq!(percent(0.25, 0.25, 0.25), "+0.25 % [+0.25, +0.25]");
        assert_eq!(percent(0.0, 0.0, 0.0), "+0.0 % [+0.0, +0.0]");
    }
}
