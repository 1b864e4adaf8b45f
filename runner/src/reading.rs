//! The runner's own reading of a finished ladder, for when `analyze` is not at hand: per
//! metric and arm, the geometric mean of the paired ratios against the base with its t
//! interval. It checks nothing (no gate, no controls, no order effects); `analyze report`
//! does.

use crate::ladder_run::Outcome;
use ladder::stats::{sample_sd, t975};
use std::fmt::Write as _;

/// One line per metric and non-base arm.
pub fn describe(outcome: &Outcome) -> String {
    let mut text = String::new();
    let arms: Vec<&str> = outcome.summary.iter().map(|a| a.name.as_str()).collect();
    for metric in &outcome.values {
        let _ = writeln!(
            text,
            "{} against {} (paired, geometric mean, 95 % t interval):",
            metric.metric, arms[outcome.base]
        );
        for arm in (0..arms.len()).filter(|&a| a != outcome.base) {
            let ratios: Vec<f64> = metric
                .values
                .iter()
                .skip(outcome.warmup)
                .filter_map(|pass| {
                    Some((pass.get(arm).copied()??, pass.get(outcome.base).copied()??))
                })
                .filter(|(x, b)| *x > 0.0 && *b > 0.0)
                .map(|(x, b)| (x / b).ln())
                .collect();
            let _ = writeln!(text, "  {:<20} {}", arms[arm], estimate(&ratios));
        }
    }
    text
}

/// `+1.23 % [+0.80, +1.66] over 9 passes`, in percent of the base.
fn estimate(log_ratios: &[f64]) -> String {
    let m = log_ratios.len();
    if m < 2 {
        return format!("too few paired passes ({m})");
    }
    let mean = log_ratios.iter().sum::<f64>() / m as f64;
    let half = t975(m - 1) * sample_sd(log_ratios) / (m as f64).sqrt();
    let pct = |l: f64| 100.0 * (l.exp() - 1.0);
    format!(
        "{:+.2} % [{:+.2}, {:+.2}] over {m} passes",
        pct(mean),
        pct(mean - half),
        pct(mean + half)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_is_the_geometric_mean_with_a_t_interval() {
        let l = [1.1f64.ln(), 1.1f64.ln(), 1.1f64.ln()];
        assert_eq!(estimate(&l), "+10.00 % [+10.00, +10.00] over 3 passes");
        let l = [0.01, 0.03];
        let half = t975(1) * sample_sd(&l) / 2f64.sqrt();
        let expected = format!("{:+.2} %", 100.0 * (0.02f64.exp() - 1.0));
        assert!(estimate(&l).starts_with(&expected));
        assert!(estimate(&l).contains(&format!("{:+.2}]", 100.0 * ((0.02 + half).exp() - 1.0))));
        assert!(estimate(&[0.1]).contains("too few"));
    }
}
