//! The checks of one finished cell's output values, before the ladder goes on: every value
//! the analysis will read is a finite positive number, every cell prints as many rows as
//! the first (under `[breakdown]`, as its arm's first: arms may run other kernels), and every
//! metric's `row` exists. A cell that fails them is written, then the
//! ladder ends with an abort record naming it, so that the file never holds a value its
//! own report would refuse.

use crate::output::CellOutput;
use ladder::ladder_file::WALL_COLUMN;
use ladder::spec::LoadedSpec;
use std::collections::HashMap;

/// What the cells seen so far fix for the ones that follow.
#[derive(Default)]
pub struct CellChecks {
    /// The row count of the first cell that printed rows, per arm under `[breakdown]`
    /// (`None`: the ladder's).
    rows: HashMap<Option<usize>, usize>,
}

impl CellChecks {
    /// `Err` is the abort reason, naming the cell (`at`, of arm index `arm`) and, for a spec
    /// mistake, its line.
    pub fn cell(
        &mut self,
        loaded: &LoadedSpec,
        out: &CellOutput,
        arm: usize,
        at: &str,
    ) -> Result<(), String> {
        let count = out.rows.len();
        let (scope, whose) = match loaded.spec.breakdown {
            Some(_) => (Some(arm), "its arm's first cell"),
            None => (None, "the first cell"),
        };
        match self.rows.get(&scope) {
            None => {
                self.rows.insert(scope, count);
            }
            Some(&first) if first != count => {
                return Err(format!(
                    "{at} printed {count} rows, {whose} printed {first}; every cell must print the same rows"
                ));
            }
            Some(_) => {}
        }
        for (column, row) in numeric_columns(loaded) {
            let Some(index) = out.columns.iter().position(|c| *c == column) else {
                continue;
            };
            let Some(values) = out.rows.get(row) else {
                let line = row_line(loaded, &column)
                    .map(|l| format!(":{l}"))
                    .unwrap_or_default();
                return Err(format!(
                    "{}{line}: [[metric]] {column:?} reads row = {row}, but {at} printed {count} row(s) (rows 0..{}); fix row in the spec",
                    loaded.path.display(),
                    count.saturating_sub(1)
                ));
            };
            let text = values.get(index).map(String::as_str).unwrap_or_default();
            if !text
                .trim()
                .parse::<f64>()
                .is_ok_and(|v| v.is_finite() && v > 0.0)
            {
                return Err(format!(
                    "{at} printed {column} = {text:?} in row {row}, not a finite positive number; the cell failed"
                ));
            }
        }
        Ok(())
    }
}

/// The line of `row = ...` in the `[[metric]]` table of `column` (or the column's own line).
fn row_line(loaded: &LoadedSpec, column: &str) -> Option<usize> {
    let first = loaded.line_of(column)?;
    let table = loaded
        .source
        .lines()
        .enumerate()
        .skip(first - 1)
        .skip(1)
        .take_while(|(_, l)| !l.trim_start().starts_with('['));
    let row = table
        .filter(|(_, l)| l.split('=').next().is_some_and(|k| k.trim() == "row"))
        .map(|(i, _)| i + 1)
        .next();
    // The table's lines before `column` are not searched: `row` usually follows it.
    row.or(Some(first))
}

/// The engine columns the analysis reads as numbers, each with the row it reads.
fn numeric_columns(loaded: &LoadedSpec) -> Vec<(String, usize)> {
    let spec = &loaded.spec;
    let mut columns: Vec<(String, usize)> = spec
        .effective_metrics()
        .into_iter()
        .filter(|m| m.column != WALL_COLUMN)
        .map(|m| (m.column, m.row))
        .collect();
    if let Some(split) = &spec.split {
        columns.extend([(split.rounds.clone(), 0), (split.time.clone(), 0)]);
        columns.extend(split.energy.clone().map(|e| (e, 0)));
    }
    if let Some(total) = spec.breakdown.as_ref().and_then(|b| b.total.clone()) {
        columns.push((total, 0));
    }
    columns
}
