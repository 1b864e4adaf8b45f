//! `[breakdown]`: which rows of a cell form its breakdown (one row per key: a kernel, an
//! operation), and the replay's check that every cell of an arm printed the same keys
//! (LADDER-FORMAT.md, METHOD.md "Breakdown").

use crate::ladder_file::{Fields, StartRecord};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The spec's `[breakdown]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BreakdownSpec {
    /// The column naming a row's key; a row whose key is empty is not a breakdown row.
    pub key: String,
    /// The column holding each key's share of the whole, in an additive unit.
    pub value: String,
    /// The column of row 0 holding the whole, in `value`'s unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<String>,
    /// The column holding each key's launches (or calls), shown beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launches: Option<String>,
}

impl BreakdownSpec {
    /// The `[breakdown]` of the spec a start record carries, read alone (a full spec parse
    /// per replayed file would cost more than the replay); `None` without one.
    pub fn of_start(start: &StartRecord) -> Option<BreakdownSpec> {
        let table = start.spec.get("breakdown")?;
        serde_json::from_value(table.clone()).ok()
    }

    /// Every column the table names, each with its key in the table.
    pub fn columns(&self) -> Vec<(&'static str, &str)> {
        let mut columns = vec![("key", self.key.as_str()), ("value", self.value.as_str())];
        columns.extend(self.total.as_deref().map(|c| ("total", c)));
        columns.extend(self.launches.as_deref().map(|c| ("launches", c)));
        columns
    }
}

/// A data row of a successful cell, as the key check reads it.
pub struct CellRow<'a> {
    pub line: usize,
    pub pass: usize,
    pub slot: usize,
    pub arm: usize,
    pub fields: &'a Fields,
}

/// One cell's breakdown: its keys in row order, with the line each is on.
struct Cell {
    line: usize,
    pass: usize,
    slot: usize,
    arm: usize,
    keys: Vec<(String, usize)>,
}

/// Every breakdown defect of `rows` (in file order, a cell's rows together), as (line,
/// detail): a column the table names missing from the header; a key printed twice in a cell
/// or with a value that is not a finite number ≥ 0; a cell whose keys are not its arm's (the
/// set most of the arm's cells print, the earliest on a tie), each key missing or extra named.
pub fn key_defects<'a>(
    spec: &BreakdownSpec,
    columns: &[String],
    arms: &[String],
    rows: impl Iterator<Item = CellRow<'a>>,
) -> Vec<(usize, String)> {
    let position = |name: &str| columns.iter().position(|c| c == name);
    let missing: Vec<(usize, String)> = spec
        .columns()
        .into_iter()
        .filter(|(_, column)| position(column).is_none())
        .map(|(role, column)| {
            (
                2,
                format!(
                    "[breakdown] names {role} = {column:?}, which the header lacks; name a column \
                     the program prints, or make it print one"
                ),
            )
        })
        .collect();
    let (Some(key), Some(value), true) = (
        position(&spec.key),
        position(&spec.value),
        missing.is_empty(),
    ) else {
        return missing;
    };
    let (cells, mut defects) = cells(rows, key, value, arms);
    defects.extend(sets(&cells, arms));
    defects
}

/// The rows grouped into cells, and the defects of single rows.
fn cells<'a>(
    rows: impl Iterator<Item = CellRow<'a>>,
    key: usize,
    value: usize,
    arms: &[String],
) -> (Vec<Cell>, Vec<(usize, String)>) {
    let mut cells: Vec<Cell> = Vec::new();
    let mut defects = Vec::new();
    for row in rows {
        let same = cells
            .last()
            .is_some_and(|c| (c.pass, c.slot) == (row.pass, row.slot));
        if !same {
            cells.push(Cell {
                line: row.line,
                pass: row.pass,
                slot: row.slot,
                arm: row.arm,
                keys: Vec::new(),
            });
        }
        let name = row.fields.get(key).unwrap_or_default();
        if name.is_empty() {
            continue;
        }
        let cell = cells.last_mut().expect("pushed above");
        let at = cell_words(cell, arms);
        if cell.keys.iter().any(|(k, _)| k == name) {
            defects.push((row.line, format!("{at} prints key {name:?} twice")));
        }
        let text = row.fields.get(value).unwrap_or_default();
        if !text
            .trim()
            .parse::<f64>()
            .is_ok_and(|v| v.is_finite() && v >= 0.0)
        {
            defects.push((
                row.line,
                format!("{at}: key {name:?} has the value {text:?}, not a finite number ≥ 0"),
            ));
        }
        cell.keys.push((name.to_string(), row.line));
    }
    (cells, defects)
}

fn cell_words(cell: &Cell, arms: &[String]) -> String {
    let arm = arms.get(cell.arm).map_or("?", String::as_str);
    crate::order::cell_words(cell.pass, cell.slot, arm)
}

/// A cell's keys, sorted, each once.
fn set(cell: &Cell) -> Vec<&str> {
    let mut keys: Vec<&str> = cell.keys.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The cells whose set of keys differs from their arm's.
fn sets(cells: &[Cell], arms: &[String]) -> Vec<(usize, String)> {
    let mut defects = Vec::new();
    for arm in 0..arms.len() {
        let of_arm: Vec<&Cell> = cells.iter().filter(|c| c.arm == arm).collect();
        let mut counts: HashMap<Vec<&str>, (usize, usize)> = HashMap::new();
        for (i, c) in of_arm.iter().enumerate() {
            counts.entry(set(c)).or_insert((0, i)).0 += 1;
        }
        // The most cells, then the earliest.
        let Some((usual, (count, _))) = counts
            .iter()
            .max_by_key(|(_, (count, first))| (*count, std::cmp::Reverse(*first)))
        else {
            continue;
        };
        for c in of_arm.iter().filter(|c| set(c) != *usual) {
            let keys = set(c);
            let named = |list: Vec<&str>, what: &str| {
                list.iter()
                    .map(|k| format!("key {k:?} {what}"))
                    .collect::<Vec<_>>()
            };
            let mut words = named(
                usual
                    .iter()
                    .filter(|k| !keys.contains(k))
                    .copied()
                    .collect(),
                "missing",
            );
            words.extend(named(
                keys.iter()
                    .filter(|k| !usual.contains(k))
                    .copied()
                    .collect(),
                "extra",
            ));
            defects.push((
                c.line,
                format!(
                    "{}: {}; {count} of the arm's {} cells print the {} keys [{}]",
                    cell_words(c, arms),
                    words.join(", "),
                    of_arm.len(),
                    usual.len(),
                    usual.join(", ")
                ),
            ));
        }
    }
    defects
}
