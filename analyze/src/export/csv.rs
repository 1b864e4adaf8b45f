//! The CSV summary other tools expect: one row per ladder × metric × arm against the base,
//! with the estimate, its interval and the verdicts.

use crate::analysis::LadderReport;
use ladder::ladder_file::csv_line;
use std::io::Write;

pub const COLUMNS: [&str; 18] = [
    "file",
    "ladder",
    "tag",
    "qualified",
    "disqualified_by",
    "metric",
    "better",
    "arm",
    "role",
    "against",
    "estimate_pct",
    "ci_low_pct",
    "ci_high_pct",
    "sem_pct",
    "n",
    "verdict",
    "holm_verdict",
    "mde_pct",
];

/// Writes the header and one row per arm of every metric of every ladder with statistics.
pub fn write(reports: &[LadderReport], mut out: impl Write) -> anyhow::Result<()> {
    writeln!(out, "{}", csv_line(&COLUMNS))?;
    let number = |v: f64| {
        if v.is_finite() {
            format!("{v}")
        } else {
            String::new()
        }
    };
    for r in reports.iter().filter(|r| r.statistics) {
        for m in &r.metrics {
            for a in &m.arms {
                let f = &a.figures;
                let row = [
                    r.file.clone(),
                    r.ladder.clone().unwrap_or_default(),
                    r.tag.clone().unwrap_or_default(),
                    r.qualified.to_string(),
                    r.disqualified_by.join(" "),
                    m.column.clone(),
                    m.better.to_string(),
                    a.arm.clone(),
                    a.role.to_string(),
                    a.against.clone(),
                    number(f.estimate_pct),
                    number(f.ci_low_pct),
                    number(f.ci_high_pct),
                    number(f.sem_pct),
                    f.n.to_string(),
                    f.verdict.to_string(),
                    a.holm_verdict.to_string(),
                    number(a.mde_pct),
                ];
                writeln!(out, "{}", csv_line(&row))?;
            }
        }
    }
    out.flush()?;
    Ok(())
}
