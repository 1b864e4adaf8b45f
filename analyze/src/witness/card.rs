//! The card during the cell, as the report reads it (METHOD.md "The card during the cell"):
//! the cells that ran under a power or thermal throttle, whatever the rule, and the
//! qualification reasons a file's defects give, `card-throttle` among them.

use super::WitnessCell;
use ladder::card::{self, THROTTLE_SEEN};
use ladder::spec::{Spec, ThrottleRule};
use ladder::{Defect, DefectKind, Ladder};
use serde::Serialize;

/// What the sampler saw during the cells.
#[derive(Clone, Debug, Serialize)]
pub struct CardDuring {
    pub sample_ms: u128,
    /// The pre-registered rule: `report` or `defect`.
    pub throttle_rule: ThrottleRule,
    /// Cells with a sampled reading, of all cells.
    pub sampled_cells: usize,
    pub cells: usize,
    /// Cells whose `witness_throttle_seen` holds a power or thermal reason, named.
    pub throttled: Vec<WitnessCell>,
}

/// `None` when the file has no `witness_throttle_seen` column (a runner before the sampler).
pub fn during(ladder: &Ladder) -> Option<CardDuring> {
    let column = ladder.column(THROTTLE_SEEN)?;
    let spec = Spec::from_json(&ladder.start.spec).ok();
    let mut during = CardDuring {
        sample_ms: spec.as_ref().map_or(0, |s| s.sample_every().as_millis()),
        throttle_rule: spec
            .as_ref()
            .map_or_else(ThrottleRule::default, Spec::throttle_rule),
        sampled_cells: 0,
        cells: 0,
        throttled: Vec::new(),
    };
    for row in ladder.rows.iter().filter(|r| r.row == 0) {
        during.cells += 1;
        let text = row.fields.get(column).unwrap_or_default();
        if text.trim().is_empty() {
            continue;
        }
        during.sampled_cells += 1;
        let detail = match card::power_or_thermal(text) {
            Ok(None) => continue,
            Ok(Some(reasons)) => {
                format!("during the cell: {} ({})", reasons.join(", "), text.trim())
            }
            Err(e) => e,
        };
        during.throttled.push(WitnessCell {
            pass: row.pass,
            slot: row.slot,
            arm: ladder.start.arms[row.arm].name.clone(),
            detail,
        });
    }
    Some(during)
}

/// Why a file's defects disqualify it: `card-throttle` for a throttled cell under the
/// pre-registered rule, `not-connected` for any other defect.
pub fn defect_reasons(defects: &[Defect]) -> Vec<String> {
    let throttled = defects.iter().any(|d| d.kind == DefectKind::CardThrottle);
    let other = defects.iter().any(|d| d.kind != DefectKind::CardThrottle);
    [(other, "not-connected"), (throttled, "card-throttle")]
        .into_iter()
        .filter(|(given, _)| *given)
        .map(|(_, reason)| reason.to_string())
        .collect()
}
