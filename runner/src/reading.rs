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
    ladder::sentence::estimate(better, column, base, pct, lo, hi)
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
