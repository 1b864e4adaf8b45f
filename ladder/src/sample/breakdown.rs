//! Breakdown rows for a generated ladder, as `engine bench --rows ops` prints them: each
//! cell's summary row with the total (`decode_us_per_token`) and empty key columns, then one
//! row per key (`kernel`, `launches_per_token`, `us_per_token`), under a `[breakdown]`
//! naming those columns (METHOD.md "Breakdown").

use super::Noise;
use serde_json::json;

/// The engine columns a breakdown ladder adds after the others.
pub const TOTAL_COLUMN: &str = "decode_us_per_token";
pub const KEY_COLUMN: &str = "kernel";
pub const LAUNCHES_COLUMN: &str = "launches_per_token";
pub const VALUE_COLUMN: &str = "us_per_token";

/// What every cell's breakdown holds, and what each arm changes in it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SampleBreakdown {
    /// Every arm's keys: (key, the base's value in µs per token, launches per token).
    pub keys: Vec<(String, f64, f64)>,
    /// The true change of a key in an arm: (arm, key, percent of the base's value; positive:
    /// the arm spends more).
    pub changes: Vec<(String, String, f64)>,
    /// Keys one arm alone prints: (arm, key, value).
    pub only: Vec<(String, String, f64)>,
    /// The part of every total in no key (the time between the operations).
    pub untimed: f64,
    /// What an arm's total holds beyond its keys' change: (arm, µs per token). A breakdown
    /// that does not add up.
    pub untimed_delta: Vec<(String, f64)>,
    /// Rows left out: (cell number `pass · arms + slot`, key). Such a cell is a defect.
    pub missing: Vec<(usize, String)>,
}

impl SampleBreakdown {
    /// The spec's `[breakdown]` table.
    pub(super) fn spec_json() -> serde_json::Value {
        json!({"key": KEY_COLUMN, "value": VALUE_COLUMN, "total": TOTAL_COLUMN,
               "launches": LAUNCHES_COLUMN})
    }

    pub(super) fn columns() -> [&'static str; 4] {
        [TOTAL_COLUMN, KEY_COLUMN, LAUNCHES_COLUMN, VALUE_COLUMN]
    }

    /// One cell's rows: `row` (the summary, `ladder_row` at `row_column`) with the total and
    /// empty key columns, then one copy per key with its `ladder_row` and key columns. Each
    /// value is the key's base value changed by the arm, with relative noise `noise_pct`.
    pub(super) fn rows(
        &self,
        row: Vec<String>,
        row_column: usize,
        (arm, cell): (&str, usize),
        noise: &mut Noise,
        noise_pct: f64,
    ) -> Vec<Vec<String>> {
        let own = self
            .only
            .iter()
            .filter(|(a, _, _)| a == arm)
            .map(|(_, key, value)| (key.clone(), *value, 1.0));
        let keys: Vec<(String, f64, f64)> = self.keys.iter().cloned().chain(own).collect();
        let mut sum = self.untimed + of_arm(&self.untimed_delta, arm);
        let mut key_rows = Vec::new();
        for (key, base, launches) in keys {
            let change = self
                .changes
                .iter()
                .find(|(a, k, _)| a == arm && *k == key)
                .map_or(0.0, |c| c.2);
            let value =
                base * (1.0 + change / 100.0) * (1.0 + noise_pct / 100.0 * noise.gaussian());
            sum += value;
            if !self.missing.contains(&(cell, key.clone())) {
                key_rows.push([key, format!("{launches}"), format!("{value:.3}")]);
            }
        }
        let mut summary = row;
        summary.extend([
            format!("{sum:.3}"),
            String::new(),
            String::new(),
            String::new(),
        ]);
        let mut rows = vec![summary.clone()];
        for (k, [key, launches, value]) in key_rows.into_iter().enumerate() {
            let mut r = summary.clone();
            r[row_column] = (k + 1).to_string();
            let n = r.len();
            r[n - 3..].clone_from_slice(&[key, launches, value]);
            rows.push(r);
        }
        rows
    }
}

fn of_arm(list: &[(String, f64)], arm: &str) -> f64 {
    list.iter().find(|(a, _)| a == arm).map_or(0.0, |x| x.1)
}
