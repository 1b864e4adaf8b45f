//! What the runner prints at the end, for a person: `runner run`'s table, how a ladder ended,
//! `runner ab`'s reading and `runner fleet`'s files, as plain text (`crate::terminal`).

use crate::ab::AbRun;
use crate::fleet::Member;
use crate::ladder_run::Outcome;
use crate::terminal::{header, render, styled, table, BAD, GOOD};
use comfy_table::CellAlignment;
use std::fmt::Write as _;

/// The mean, or `n/a` for no values.
fn mean(values: &[f64], decimals: usize) -> String {
    match values.len() {
        0 => "n/a".into(),
        n => format!("{:.decimals$}", values.iter().sum::<f64>() / n as f64),
    }
}

/// `runner run`'s summary: each arm's cells, wall time and first metric, then the plan of a
/// `[stop]` ladder.
pub fn run_summary(outcome: &Outcome) -> String {
    let metric = format!("{} mean", outcome.metric);
    let mut t = table();
    t.set_header(header(&["arm", "cells", "wall s/cell", &metric]));
    for arm in &outcome.summary {
        t.add_row(vec![
            arm.name.clone(),
            arm.walls.len().to_string(),
            mean(&arm.walls, 3),
            mean(&arm.metric, 4),
        ]);
    }
    for numeric in 1..4 {
        if let Some(column) = t.column_mut(numeric) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut text = render(t);
    let _ = writeln!(
        text,
        "(the metric's mean over the analysis passes; analyze report {} reads the paired ratios)",
        outcome.path.display()
    );
    if let Some(words) = &outcome.plan_words {
        let _ = writeln!(text, "{words}");
    }
    text
}

/// Where the file is, for a complete ladder (stdout); for an aborted one, what stopped it and
/// what the file keeps (stderr).
pub fn ending(outcome: &Outcome) -> (String, String) {
    match &outcome.aborted {
        None => (
            format!(
                "wrote {} ({} cells)\n",
                outcome.path.display(),
                outcome.cells
            ),
            String::new(),
        ),
        Some(reason) => (
            String::new(),
            format!(
                "{}\nrunner: {} keeps every cell written so far and an abort record\n",
                styled(
                    BAD,
                    &format!(
                        "runner: ladder aborted after {} cells: {reason}",
                        outcome.cells
                    )
                ),
                outcome.path.display()
            ),
        ),
    }
}

/// `runner ab`'s report: analyze's summary (or the runner's own reading), the plan of a
/// `[stop]` ladder, then the files and the commands that repeat and re-read the ladder.
pub fn ab_report(run: &AbRun, out_dir: &std::path::Path) -> String {
    let outcome = &run.outcome;
    let mut text = String::new();
    if let Some(summary) = &run.summary {
        match summary {
            Ok(summary) => text.push_str(summary),
            Err(why) => {
                let _ = writeln!(
                    text,
                    "({why}; the runner's own reading follows, without the report's checks)"
                );
                text.push_str(&crate::reading::describe(outcome));
            }
        }
        if let Some(words) = &outcome.plan_words {
            let _ = writeln!(text, "{words}");
        }
    }
    let spec = run.spec.display();
    let mut t = table();
    t.add_row(vec!["spec:".to_string(), spec.to_string()]);
    t.add_row(vec![
        "reproduce:".to_string(),
        format!("runner run {spec} --out {}", out_dir.display()),
    ]);
    t.add_row(vec![
        "re-read:".to_string(),
        format!("analyze report {}", outcome.path.display()),
    ]);
    text.push_str(&unindented(render(t)));
    text
}

/// A table's lines without the indent, for lines that stand on their own.
fn unindented(lines: String) -> String {
    lines.lines().map(|l| format!("{}\n", &l[2..])).collect()
}

/// Each ladder of the fleet: its card, its exit and whether it is one connected run.
pub fn fleet_report(members: &[Member]) -> String {
    let mut t = table();
    t.set_header(header(&["card", "exit", "file", "verify"]));
    for m in members {
        let verdict = match m.connected {
            true => styled(GOOD, &m.verdict),
            false => styled(BAD, &m.verdict),
        };
        t.add_row(vec![
            m.slot.index().to_string(),
            m.exit.map_or("?".into(), |c| c.to_string()),
            m.path.display().to_string(),
            verdict,
        ]);
    }
    let files: Vec<String> = members
        .iter()
        .map(|m| m.path.display().to_string())
        .collect();
    format!(
        "{}read them as one: analyze report {} -o reports/NAME.md\n",
        render(t),
        files.join(" ")
    )
}
