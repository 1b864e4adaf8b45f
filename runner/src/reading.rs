//! The runner's own reading of a finished ladder, for when `analyze` is not at hand: per
//! metric and arm, the geometric mean of the paired ratios against the base with its 95 % t
//! interval, said as `analyze report --summary` says it (`b ran 2.69× faster than a
//! [2.47, 2.92]` for a time), under `[stop]` on the spread the report uses (the first look's,
//! or every pass's where the noise rose after it). It checks nothing (no gate, no controls,
//! no order effects); `analyze report` does.

use crate::ladder_run::Outcome;
use crate::terminal;
use ladder::noise_rise::MetricSpread;
use ladder::spec::Better;
use ladder::stats::{LogSeries, Spread};
use std::fmt::Write as _;

/// One table per metric, one row per non-base arm.
pub fn describe(outcome: &Outcome) -> String {
    let mut text = String::new();
    let arms: Vec<&str> = outcome.summary.iter().map(|a| a.name.as_str()).collect();
    let base = arms[outcome.base];
    for (metric, values) in outcome.metrics.iter().zip(&outcome.values) {
        let passes = outcome.warmup..values.values.len();
        let spread = match &outcome.stop {
            Some(stop) => MetricSpread::stopped(stop, outcome.warmup, &values.values, passes),
            None => MetricSpread::OWN,
        };
        let _ = writeln!(
            text,
            "{} ({} is better; paired, geometric mean, 95 % t interval{})",
            metric.column,
            metric.better,
            spread_words(&spread)
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
                estimate(&metric.column, metric.better, base, &logs, spread.spread),
                logs.len().to_string(),
            ]);
        }
        text.push_str(&terminal::render(table));
    }
    text
}

/// Whose spread the intervals use, when it is not each series' own.
fn spread_words(spread: &MetricSpread) -> String {
    match (spread.noise_rise, spread.spread) {
        (Some(r), _) if r.rose => format!(
            "; the noise rose {} after the first look, so every pass's spread",
            r.factor()
        ),
        (_, Spread::Own) => String::new(),
        _ => ", on the first look's spread".into(),
    }
}

/// `ran 2.69× faster than a [2.47, 2.92]` for a time, `1.20× lower than a [...]` for another
/// lower-is-better metric, `+13.2 % [+7.3, +19.5]` for a higher-is-better one.
fn estimate(column: &str, better: Better, base: &str, logs: &[f64], spread: Spread) -> String {
    if logs.len() < 2 {
        return format!("too few paired passes ({})", logs.len());
    }
    let series = LogSeries::of(logs, spread);
    let (lo, hi) = series.interval(0.95);
    let pct = series.estimate_pct();
    ladder::sentence::estimate(better, column, base, pct, lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ladder::stop::MetricValues;

    #[test]
    fn a_time_reads_as_a_ratio_and_a_rate_as_a_percent() {
        // b takes 1/2.69 of a's time in every pass: b ran 2.69× faster than a.
        let faster = [2.69f64.ln(); 3];
        assert_eq!(
            estimate("ladder_wall_s", Better::Lower, "a", &faster, Spread::Own),
            "ran 2.69× faster than a [2.69, 2.69]"
        );
        let slower = [-(1.5f64.ln()); 3];
        assert_eq!(
            estimate("ladder_wall_s", Better::Lower, "a", &slower, Spread::Own),
            "ran 1.50× slower than a [1.50, 1.50]"
        );
        assert_eq!(
            estimate(
                "ladder_maxrss_kib",
                Better::Lower,
                "a",
                &[1.2f64.ln(); 2],
                Spread::Own
            ),
            "1.20× lower than a [1.20, 1.20]"
        );
        assert_eq!(
            estimate("tok_s", Better::Higher, "a", &[1.1f64.ln(); 3], Spread::Own),
            "+10.0 % [+10.0, +10.0]"
        );
        assert!(estimate("tok_s", Better::Higher, "a", &[0.1], Spread::Own).contains("too few"));
    }

    /// Two arms over 10 passes (1 warm-up), looks at 4 and 10: the first look's 3 analysis
    /// passes of `b` move by `first`, the 6 after it by `later`.
    fn stopped_outcome(first: f64, later: f64) -> Outcome {
        let d: Vec<f64> = (0..10)
            .map(|p| match p {
                0 => 0.0,
                1..=3 => first * (p as f64 - 2.0),
                _ if p % 2 == 0 => later,
                _ => -later,
            })
            .collect();
        let values = d
            .iter()
            .map(|l| vec![Some(100.0), Some(100.0 * l.exp())])
            .collect();
        let arm = |name: &str| crate::ladder_run::ArmSummary {
            name: name.into(),
            ..Default::default()
        };
        Outcome {
            path: "x.csv".into(),
            cells: 20,
            aborted: None,
            metric: "tok_s".into(),
            summary: vec![arm("a"), arm("b")],
            plan: None,
            plan_words: None,
            values: vec![MetricValues {
                metric: "tok_s".into(),
                values,
            }],
            metrics: vec![ladder::spec::MetricSpec {
                column: "tok_s".into(),
                better: Better::Higher,
                row: 0,
                noise_limit_pct: None,
            }],
            base: 0,
            warmup: 1,
            stop: Some(ladder::spec::StopSpec {
                halfwidth_pct: 0.5,
                looks: vec![4, 10],
                spread: Default::default(),
                metrics: Vec::new(),
                within_s: None,
            }),
        }
    }

    /// The row of arm `b` as the reading would print it with `spread`.
    fn row_of_b(outcome: &Outcome, spread: Spread) -> String {
        let logs = outcome.values[0].log_ratios(1, 0, 1..10);
        estimate("tok_s", Better::Higher, "a", &logs, spread)
    }

    #[test]
    fn a_stopped_ladder_reads_like_the_report_and_says_when_the_noise_rose() {
        let steady = stopped_outcome(0.004, 0.004);
        let text = describe(&steady);
        assert!(text.contains("on the first look's spread"), "{text}");
        assert!(
            text.contains(&row_of_b(&steady, Spread::FirstLook(3))),
            "{text}"
        );
        let rose = stopped_outcome(0.004, 0.03);
        let text = describe(&rose);
        assert!(text.contains("the noise rose ×"), "{text}");
        assert!(text.contains(&row_of_b(&rose, Spread::Own)), "{text}");
        assert!(
            !text.contains(&row_of_b(&rose, Spread::FirstLook(3))),
            "{text}"
        );
    }

    #[test]
    fn the_interval_is_the_t_interval_of_the_log_ratios() {
        let logs = [0.9, 1.0, 1.1];
        let series = LogSeries::of(&logs, Spread::Own);
        let (lo, hi) = series.interval(0.95);
        let words = estimate("ladder_wall_s", Better::Lower, "a", &logs, Spread::Own);
        let want = format!(
            "ran {:.2}× faster than a [{:.2}, {:.2}]",
            1.0f64.exp(),
            1.0 + lo / 100.0,
            1.0 + hi / 100.0
        );
        assert_eq!(words, want);
    }
}
