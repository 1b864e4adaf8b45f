//! A cell's row: the header fixed by the first cell, a build's columns stored by name, the
//! harness fields as the file writes them.

use super::*;

impl Run<'_> {
    /// The first cell fixes the header; every later cell must print the same columns, unless
    /// its arm runs another binary than that cell's (a build against a build whose output
    /// gained or lost a column). Such a cell must print every column the spec reads; its
    /// values go under the header's columns, empty where it printed none, and columns the
    /// header lacks are said once per arm on stderr and in the side log, and not stored.
    pub(super) fn fit_columns(
        &mut self,
        engine: Option<CellOutput>,
        cell: Cell,
        at: &str,
    ) -> Result<Option<CellOutput>, String> {
        let binary = &self.arms[cell.arm].binary.blake3;
        let (first, out) = match (&self.engine_columns, engine) {
            (None, engine) => {
                let columns = engine
                    .as_ref()
                    .map_or(Vec::new(), |out| out.columns.clone());
                if engine.is_some() {
                    self.check_declared_columns(&columns)?;
                }
                self.engine_columns = Some(columns);
                self.write_header()?;
                return Ok(engine);
            }
            (Some(first), Some(out)) if *first != out.columns && !first.is_empty() => {
                (first.clone(), out)
            }
            (_, engine) => return Ok(engine),
        };
        // The header came from the ladder's first cell.
        let header_arm = self.order.cells().next().map(|c| c.arm);
        if header_arm.map(|a| &self.arms[a].binary.blake3) == Some(binary) {
            return Err(format!(
                "{at} printed the columns {:?}, the first cell printed {:?}",
                out.columns, first
            ));
        }
        self.check_declared_columns(&out.columns)
            .map_err(|e| format!("{at}: {e}"))?;
        let extra: Vec<&String> = out.columns.iter().filter(|c| !first.contains(c)).collect();
        if !extra.is_empty() && !self.extra_said.contains(&cell.arm) {
            self.extra_said.push(cell.arm);
            let line = format!(
                "runner: arm {} runs another binary than the first cell's and prints columns the ladder file does not hold: {}; they are not stored\n",
                self.order.arms[cell.arm],
                extra.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
            );
            eprint!("{line}");
            let _ = self.log.write_all(line.as_bytes());
        }
        let rows = out
            .rows
            .iter()
            .map(|values| {
                first
                    .iter()
                    .map(|c| {
                        out.columns
                            .iter()
                            .position(|o| o == c)
                            .and_then(|i| values.get(i).cloned())
                            .unwrap_or_default()
                    })
                    .collect()
            })
            .collect();
        Ok(Some(CellOutput {
            columns: first,
            rows,
        }))
    }

    /// Every column the spec reads must be among those the engine printed.
    fn check_declared_columns(&self, columns: &[String]) -> Result<(), String> {
        let spec = &self.loaded.spec;
        if let Some(clash) = columns
            .iter()
            .find(|c| c.starts_with("ladder_") || c.starts_with("witness_"))
        {
            return Err(format!("the engine printed a column named {clash:?}; ladder_* and witness_* belong to the harness"));
        }
        let mut declared: Vec<String> = spec
            .effective_metrics()
            .into_iter()
            .map(|m| m.column)
            .collect();
        if let Some(split) = &spec.split {
            declared.extend([split.rounds.clone(), split.time.clone()]);
            declared.extend(split.energy.clone());
        }
        if let Some(identity) = &spec.identity {
            declared.push(identity.column.clone());
        }
        if let Some(breakdown) = &spec.breakdown {
            declared.extend(breakdown.columns().into_iter().map(|(_, c)| c.to_string()));
        }
        for column in &declared {
            if !is_measured_harness_column(column) && !columns.contains(column) {
                let line = self
                    .loaded
                    .line_of(column)
                    .map(|l| format!(":{l}"))
                    .unwrap_or_default();
                return Err(format!(
                    "{}{line}: the column {column:?} is not among the columns the engine printed in its first row: {}; fix the spec or the command",
                    self.loaded.path.display(),
                    columns.join(", ")
                ));
            }
        }
        Ok(())
    }

    fn write_header(&mut self) -> Result<(), String> {
        let mut columns: Vec<String> = HARNESS_COLUMNS.iter().map(|c| c.to_string()).collect();
        columns.push(ROW_COLUMN.into());
        columns.push(WALL_COLUMN.into());
        columns.extend(USAGE_COLUMNS.iter().map(|c| c.to_string()));
        columns.extend(self.witness.columns(WitnessSide::Before));
        columns.extend(self.witness.columns(WitnessSide::After));
        columns.extend(ladder::card::COLUMNS.map(String::from));
        columns.extend(self.engine_columns.clone().unwrap_or_default());
        self.writer
            .as_mut()
            .expect("writer held")
            .write_header(&columns)
            .map_err(|e| format!("cannot write the ladder file: {e}"))
    }

    pub(super) fn rows(
        &self,
        cell: Cell,
        result: &cell::CellRun,
        engine: Option<&CellOutput>,
        before: &[String],
        after: &[String],
    ) -> Vec<Vec<String>> {
        let width = self.engine_columns.as_ref().map_or(0, Vec::len);
        let empty = vec![vec![String::new(); width]];
        let engine_rows = engine.map_or(&empty, |e| &e.rows);
        engine_rows
            .iter()
            .enumerate()
            .map(|(i, values)| {
                let mut row = vec![
                    cell.pass.to_string(),
                    cell.slot.to_string(),
                    self.order.arms[cell.arm].clone(),
                    timestamp(result.started),
                    timestamp(result.ended),
                    result.exit.to_string(),
                    i.to_string(),
                    seconds_field(result.wall_s),
                    seconds_field(result.usage.user_s),
                    seconds_field(result.usage.sys_s),
                    result.usage.maxrss_kib.to_string(),
                ];
                row.extend(before.iter().cloned());
                row.extend(after.iter().cloned());
                row.extend(values.iter().cloned());
                row
            })
            .collect()
    }
}

/// Harness columns that hold a measurement and may be named as metrics.
fn is_measured_harness_column(column: &str) -> bool {
    column == WALL_COLUMN
        || USAGE_COLUMNS.contains(&column)
        || ladder::card::COLUMNS.contains(&column)
}

/// A measured harness column's value for one cell, as the ladder file holds it (six
/// decimals), so that the runner's stopping rule reads what `verify` reads.
pub(super) fn harness_value(column: &str, result: &cell::CellRun) -> Option<f64> {
    match column {
        WALL_COLUMN => as_written(result.wall_s),
        "ladder_user_s" => as_written(result.usage.user_s),
        "ladder_sys_s" => as_written(result.usage.sys_s),
        "ladder_maxrss_kib" => Some(result.usage.maxrss_kib as f64),
        _ => None,
    }
}

/// `value` rounded as a harness column writes it.
fn as_written(value: f64) -> Option<f64> {
    seconds_field(value).parse().ok()
}

/// A harness column's text: seconds with six decimals.
fn seconds_field(value: f64) -> String {
    format!("{value:.6}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stopping_rule_reads_harness_values_as_the_file_writes_them() {
        assert_eq!(seconds_field(0.123_456_789), "0.123457");
        assert_eq!(as_written(0.123_456_789), Some(0.123457));
        assert_eq!(as_written(2.0000004), Some(2.0));
    }
}
