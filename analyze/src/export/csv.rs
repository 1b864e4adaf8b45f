//! The CSV summary other tools expect: one row per ladder × metric × arm against the base,
//! with the estimate, its interval and the verdicts; with `[breakdown]`, one more per arm and
//! key (metric `VALUE[KEY]`, lower is better) and its delta in the value's unit.

use crate::analysis::LadderReport;
use ladder::ladder_file::csv_line;
use std::io::Write;

pub const COLUMNS: [&str; 21] = [
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
    "delta",
    "delta_ci_low",
    "delta_ci_high",
];

/// Writes the header and one row per arm of every metric of every ladder with statistics.
pub fn write(reports: &[LadderReport], mut out: impl Write) -> anyhow::Result<()> {
    writeln!(out, "{}", csv_line(&COLUMNS))?;
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
                    String::new(),
                    String::new(),
                    String::new(),
                ];
                writeln!(out, "{}", csv_line(&row))?;
            }
        }
        for row in breakdown_rows(r) {
            writeln!(out, "{}", csv_line(&row))?;
        }
    }
    out.flush()?;
    Ok(())
}

fn number(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        String::new()
    }
}

/// One row per arm and key of the breakdown, every key (folded ones too). Its percent is
/// turned to better-is-positive as every row's (less time is better): `100·(1/(1 + d/100) − 1)`
/// of the breakdown's change `d`; the delta columns keep the value's sign (arm − base).
fn breakdown_rows(r: &LadderReport) -> Vec<Vec<String>> {
    let Some(b) = &r.breakdown else {
        return Vec::new();
    };
    let better = |pct: f64| 100.0 * (1.0 / (1.0 + pct / 100.0) - 1.0);
    let mut rows = Vec::new();
    for a in &b.arms {
        let role = r
            .metrics
            .first()
            .and_then(|m| m.arms.iter().find(|x| x.arm == a.arm))
            .map_or(String::new(), |x| x.role.to_string());
        for k in &a.keys {
            let verdict = match k.holm_verdict {
                "more" => "worse",
                "less" => "better",
                other => other,
            };
            let unadjusted = crate::stats::verdict(better(k.ci_high_pct), better(k.ci_low_pct));
            rows.push(vec![
                r.file.clone(),
                r.ladder.clone().unwrap_or_default(),
                r.tag.clone().unwrap_or_default(),
                r.qualified.to_string(),
                r.disqualified_by.join(" "),
                format!("{}[{}]", b.value, k.key),
                "lower".into(),
                a.arm.clone(),
                role.clone(),
                a.against.clone(),
                number(better(k.delta_pct)),
                number(better(k.ci_high_pct)),
                number(better(k.ci_low_pct)),
                String::new(),
                k.n.to_string(),
                unadjusted.to_string(),
                verdict.to_string(),
                String::new(),
                number(k.delta),
                number(k.delta_ci_low),
                number(k.delta_ci_high),
            ]);
        }
    }
    rows
}
