//! The runner's own reading of a finished ladder, for when `analyze` is not at hand: per
//! metric and arm, the geometric mean of the paired ratios against the base with its 95 % t
//! interval, said as `analyze report --summary` says it (`b ran 2.69× faster than a
//! [2.47, 2.92]` for a time). It checks nothing (no gate, no controls, no order effects);
//! `analyze report` does.

use crate::ladder_run::Outcome;
use crate::terminal;
use ladder::spec::Better;
use ladder::stats::{LogSeries, Spread};
use std::fmt::Write as _;

/// One table per metric, one row per non-base arm.
pub fn describe(outcome: &Outcome) -> String {
    let mut text = String::new();
    let arms: Vec<&str> = outcome.summary.iter().map(|a| a.name.as_str()).collect();
    let base = arms[outcome.base];
    for (metric, values) in outcome.metrics.iter().zip(&outcome.values) {
        let _ = writeln!(
            text,
            "{} ({} is better; paired, geometric mean, 95 % t interval)",
            metric.column, metric.better
        );
        let mut table = terminal::table();
        table.set_header(terminal::header(&["arm", "against the base", "passes"]));
        for arm in (0..arms.len()).filter(|&a| a != outcome.base) {
            let passes = outcome.warmup..values.values.len();
            // Better-is-positive, as every estimate of the report.
            let logs: Vec<f64> = values
                .log_ratios(arm, outcome.base, passes)
                .into_iter()
                .map(|l| match metric.better {
                    Better::Higher => l,
                    Better::Lower => -l,
                })
                .collect();
            table.add_row(vec![
                arms[arm].to_string(),
                estimate(&metric.column, metric.better, base, &logs),
                logs.len().to_string(),
            ]);
        }
        text.push_str(&terminal::render(table));
    }
    text
}

/// `ran 2.69× faster than a [2.47, 2.92]` for a time, `1.20× lower than a [...]` for another
/// lower-is-better metric, `+13.2 % [+7.3, +19.5]` for a higher-is-better one.
fn estimate(column: &str, better: Better, base: &str, logs: &[f64]) -> String {
    if logs.len() < 2 {
        return format!("too few paired passes ({})", logs.len());
    }
    let series = LogSeries::of(logs, Spread::Own);
    let (lo, hi) = series.interval(0.95);
    let pct = series.estimate_pct();
    match better {
        Better::Lower => ratio_words(column, base, pct, lo, hi),
        Better::Higher => {
            let d = decimals((hi - lo) / 2.0);
            format!("{pct:+.d$} % [{lo:+.d$}, {hi:+.d$}]")
        }
    }
}

/// Enough decimals to show an interval of this half-width: 1 at several units, 3 at a few
/// hundredths, at most 4 (as the report's summary).
fn decimals(halfwidth: f64) -> usize {
    if !(halfwidth.is_finite() && halfwidth > 0.0) {
        return 1;
    }
    (1.0 - halfwidth.log10().floor()).clamp(1.0, 4.0) as usize
}

/// Whether a column holds a time, so that its ratio reads `ran … faster` (the report's rule).
fn is_time(column: &str) -> bool {
    ["_s", "_seconds", "seconds_mean", "_ms", "_us", "_ns"]
        .iter()
        .any(|suffix| column.ends_with(suffix))
}

/// The ratio `base/arm = 1 + pct/100` with its interval, said the way round that is above 1,
/// with as many decimals as the interval said that way needs.
fn ratio_words(column: &str, base: &str, pct: f64, lo: f64, hi: f64) -> String {
    let (r, rlo, rhi) = (1.0 + pct / 100.0, 1.0 + lo / 100.0, 1.0 + hi / 100.0);
    let time = is_time(column);
    let (factor, low, high, word) = if r >= 1.0 {
        (r, rlo, rhi, if time { "faster" } else { "lower" })
    } else {
        let word = if time { "slower" } else { "higher" };
        (1.0 / r, 1.0 / rhi, 1.0 / rlo, word)
    };
    let d = decimals((high - low) / 2.0).max(2);
    let verb = if time { "ran " } else { "" };
    format!("{verb}{factor:.d$}× {word} than {base} [{low:.d$}, {high:.d$}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_reads_as_a_ratio_and_a_rate_as_a_percent() {
        // b takes 1/2.69 of a's time in every pass: b ran 2.69× faster than a.
        let faster = [2.69f64.ln(); 3];
        assert_eq!(
            estimate("ladder_wall_s", Better::Lower, "a", &faster),
            "ran 2.69× faster than a [2.69, 2.69]"
        );
        let slower = [-(1.5f64.ln()); 3];
        assert_eq!(
            estimate("ladder_wall_s", Better::Lower, "a", &slower),
            "ran 1.50× slower than a [1.50, 1.50]"
        );
        assert_eq!(
            estimate("ladder_maxrss_kib", Better::Lower, "a", &[1.2f64.ln(); 2]),
            "1.20× lower than a [1.20, 1.20]"
        );
        assert_eq!(
            estimate("tok_s", Better::Higher, "a", &[1.1f64.ln(); 3]),
            "+10.0 % [+10.0, +10.0]"
        );
        assert!(estimate("tok_s", Better::Higher, "a", &[0.1]).contains("too few"));
    }

    #[test]
    fn a_slower_arm_gets_the_decimals_of_its_own_interval() {
        // base/arm in [0.1723, 0.1794]: 5.80× slower [5.57, 6.03], not 5.7994× [5.5749, …].
        let (lo, hi) = (100.0 * (0.1723 - 1.0), 100.0 * (0.1794 - 1.0));
        let words = ratio_words("ladder_wall_s", "fixed", 100.0 * (0.1724 - 1.0), lo, hi);
        assert_eq!(words, "ran 5.80× slower than fixed [5.57, 5.80]");
    }

    #[test]
    fn the_interval_is_the_t_interval_of_the_log_ratios() {
        let logs = [0.9, 1.0, 1.1];
        let series = LogSeries::of(&logs, Spread::Own);
        let (lo, hi) = series.interval(0.95);
        let words = estimate("ladder_wall_s", Better::Lower, "a", &logs);
        let want = format!(
            "ran {:.2}× faster than a [{:.2}, {:.2}]",
            1.0f64.exp(),
            1.0 + lo / 100.0,
            1.0 + hi / 100.0
        );
        assert_eq!(words, want);
    }
}
