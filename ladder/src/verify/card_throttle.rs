//! The pre-registered `[card] throttle = "defect"` rule (LADDER-FORMAT.md "The card during the
//! cell"), applied to every cell of a replayed file.

use super::{Defect, DefectKind, Row};
use crate::card::{power_or_thermal, THROTTLE_SEEN};
use crate::ladder_file::StartRecord;
use crate::order::cell_words;

/// Whether the recorded spec pre-registered `[card] throttle = "defect"`, read from the JSON
/// alone (a full spec parse per file would cost more than the replay).
fn throttle_is_defect(start: &StartRecord) -> bool {
    start
        .spec
        .pointer("/card/throttle")
        .and_then(|v| v.as_str())
        == Some("defect")
}

/// Under `[card] throttle = "defect"`: a `card-throttle` defect for every cell that saw a
/// power or thermal throttle or whose reading is not a mask, and one on the header when the
/// file has no `witness_throttle_seen` to read.
pub(super) fn throttle_defects(
    start: &StartRecord,
    columns: &[String],
    rows: &[Row],
) -> Vec<Defect> {
    if !throttle_is_defect(start) {
        return Vec::new();
    }
    let Some(column) = columns.iter().position(|c| c == THROTTLE_SEEN) else {
        return vec![Defect {
            kind: DefectKind::CardThrottle,
            line: 2,
            detail: format!(
                "[card] throttle = \"defect\" reads {THROTTLE_SEEN}, which the header lacks: \
                 the runner that wrote the file did not sample the card; rerun the ladder with a current runner"
            ),
        }];
    };
    rows.iter()
        .filter(|r| r.row == 0)
        .filter_map(|row| {
            let at = cell_words(row.pass, row.slot, &start.order.arms[row.arm]);
            let text = row.fields.get(column).unwrap_or_default();
            let detail = match power_or_thermal(text) {
                Ok(None) => return None,
                Ok(Some(reasons)) => format!(
                    "{at} ran under a power or thermal throttle: {} ({THROTTLE_SEEN} {}); \
                     [card] throttle = \"defect\" makes it a defect: find the cause with \
                     `nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE` (power cap, temperature, \
                     cooling, a neighbour's load), remove it and rerun the ladder",
                    reasons.join(", "),
                    text.trim()
                ),
                Err(e) => format!(
                    "{at}: {e}; [card] throttle = \"defect\" cannot read it: rerun the ladder \
                     with a current runner"
                ),
            };
            Some(Defect {
                kind: DefectKind::CardThrottle,
                line: row.line,
                detail,
            })
        })
        .collect()
}
