//! What `engine bench` prints on stdout: the CSV header and the summary row, then, with
//! `--rows`, one row per timed rep or per operation. Every row of a run has the same header:
//! the summary's columns, then the mode's own, empty on the summary row (a runner turns the
//! rows into `ladder_row` 0, 1, …, and a spec's `row = 0` reads the summary).

use crate::bench::{csv_field, BenchResult};
use crate::breakdown::Breakdown;

/// The rows after the summary row.
pub enum Extra {
    None,
    /// One row per timed rep, with its own times.
    Reps,
    /// One row per operation or kernel.
    Ops(Breakdown),
}

const REP_COLUMNS: &str = "rep";
const OP_COLUMNS: &str = "kernel,launches_per_token,us_per_token,share";

/// The header and every row, `\n`-terminated.
pub fn csv(result: &BenchResult, extra: &Extra) -> String {
    let summary = result.row();
    let lines: Vec<String> = match extra {
        Extra::None => vec![BenchResult::header(), summary],
        Extra::Reps => {
            let reps =
                (0..result.reps.len()).map(|k| format!("{},{}", result.for_rep(k).row(), k + 1));
            [
                format!("{},{REP_COLUMNS}", BenchResult::header()),
                format!("{summary},0"),
            ]
            .into_iter()
            .chain(reps)
            .collect()
        }
        Extra::Ops(breakdown) => {
            let ops = breakdown.rows.iter().map(|r| {
                format!(
                    "{summary},{},{:.4},{:.3},{:.6}",
                    csv_field(&r.name),
                    r.launches_per_token,
                    r.us_per_token,
                    r.share
                )
            });
            [
                format!("{},{OP_COLUMNS}", BenchResult::header()),
                format!("{summary},,,,"),
            ]
            .into_iter()
            .chain(ops)
            .collect()
        }
    };
    lines.iter().map(|l| format!("{l}\n")).collect()
}
