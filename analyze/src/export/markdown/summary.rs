//! The one-screen summary that opens the markdown report.

use super::*;
use std::fmt::Write;

/// The one-screen summary: per ladder and metric, each arm's estimate [interval] and
/// verdict, the controls, and qualified or why not.
pub fn summary(reports: &[LadderReport]) -> String {
    let mut out = String::from("## Summary\n\n");
    for r in reports {
        let title = super::super::status::title(r, name);
        let _ = write!(out, "**{title}: {}**", status(r));
        if r.statistics {
            let _ = write!(out, " ({} analysis passes", r.analysis_passes);
            if r.stopped.is_some() {
                let _ = write!(out, "; {}", stop_words(r));
            }
            out.push(')');
            for w in super::super::status::warnings(r, name) {
                let _ = write!(out, "; **{}**", w.head);
                if let Some(detail) = w.detail {
                    let _ = write!(out, " ({detail})");
                }
            }
        }
        out.push_str("\n\n");
        if !r.statistics {
            continue;
        }
        out.push_str(
            "| metric | arm | estimate [95 % interval] | verdict | Holm |\n|---|---|---|---|---|\n",
        );
        for m in &r.metrics {
            for a in &m.arms {
                let f = &a.figures;
                let _ = writeln!(
                    out,
                    "| {} | {} | {} % {} | {} | {} |",
                    name(&m.column),
                    name(&a.arm),
                    pct(f.estimate_pct),
                    interval(f.ci_low_pct, f.ci_high_pct),
                    f.verdict,
                    a.holm_verdict
                );
            }
        }
        let controls: Vec<String> = r
            .metrics
            .iter()
            .flat_map(|m| m.controls.iter().map(move |c| (m, c)))
            .filter_map(|(m, c)| {
                let (head, _) = c.reading(m.equivalence_margin_pct);
                let reading = match c.holds? {
                    true => head.to_string(),
                    false => format!("**{head}**"),
                };
                Some(format!(
                    "{} on {} {reading} ({} at level {:.4}, {})",
                    name(&c.arm),
                    name(&m.column),
                    interval(c.ci_low_pct, c.ci_high_pct),
                    c.level,
                    c.rule
                ))
            })
            .collect();
        let _ = writeln!(
            out,
            "\nControls: {}.\n",
            if controls.is_empty() {
                "none".to_string()
            } else {
                controls.join("; ")
            }
        );
    }
    out
}
