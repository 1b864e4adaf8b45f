//! The witness: what the runner saw on the card around each cell (`witness_*_before` and
//! `_after` columns, all optional): foreign processes, clock changes, throttling.

use ladder::ladder_file::{parse_witness_column, witness, WitnessSide};
use ladder::verify::Row;
use ladder::Ladder;
use serde::Serialize;

pub mod card;

#[derive(Clone, Debug, Serialize)]
pub struct Witness {
    /// The witness quantities the file records (`sm_clock_mhz`, `throttle`, …).
    pub quantities: Vec<String>,
    /// Cells that ran beside another compute process on the card.
    pub foreign_cells: Vec<WitnessCell>,
    /// Cells whose SM or memory clock, before or after, differs from the ladder's usual
    /// (commonest end-of-cell) clock.
    pub clock_changes: Vec<WitnessCell>,
    /// Cells with a throttle reason other than `none`.
    pub throttle_cells: Vec<WitnessCell>,
    /// The range of every numeric quantity over all cells, before and after.
    pub ranges: Vec<WitnessRange>,
    /// What the sampler saw during the cells; `None` in a file without its columns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub card: Option<card::CardDuring>,
}

#[derive(Clone, Debug, Serialize)]
pub struct WitnessCell {
    pub pass: usize,
    pub slot: usize,
    pub arm: String,
    pub detail: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct WitnessRange {
    pub quantity: String,
    pub min: f64,
    pub max: f64,
}

/// One quantity's two columns.
struct Pair {
    name: String,
    before: Option<usize>,
    after: Option<usize>,
}

/// `None` when the file has no witness column.
pub fn read(ladder: &Ladder) -> Option<Witness> {
    let pairs = pairs(ladder);
    if pairs.is_empty() {
        return None;
    }
    let mut witness = Witness {
        quantities: pairs.iter().map(|p| p.name.clone()).collect(),
        foreign_cells: Vec::new(),
        clock_changes: Vec::new(),
        throttle_cells: Vec::new(),
        ranges: Vec::new(),
        card: card::during(ladder),
    };
    let cells: Vec<_> = ladder.rows.iter().filter(|r| r.row == 0).collect();
    let number = |row: &Row, column| value(row, column).and_then(|v| v.parse::<f64>().ok());
    for pair in &pairs {
        let mut range: Option<(f64, f64)> = None;
        // The clock the ladder ran at: the commonest reading at the end of a cell, when the
        // card is still loaded (a reading before a cell can catch the card idle).
        let usual = mode(
            cells
                .iter()
                .filter_map(|r| number(r, pair.after.or(pair.before))),
        );
        for row in &cells {
            let (b, a) = (number(row, pair.before), number(row, pair.after));
            for v in [b, a].into_iter().flatten() {
                range = Some(range.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
            }
            let note = |detail: String| WitnessCell {
                pass: row.pass,
                slot: row.slot,
                arm: ladder.start.arms[row.arm].name.clone(),
                detail,
            };
            let show = |v: Option<f64>| v.map_or("?".to_string(), |v| v.to_string());
            match pair.name.as_str() {
                witness::FOREIGN_PROCS if b.unwrap_or(0.0) > 0.0 || a.unwrap_or(0.0) > 0.0 => {
                    witness.foreign_cells.push(note(format!(
                        "{} foreign process(es) before, {} after",
                        show(b),
                        show(a)
                    )))
                }
                witness::SM_CLOCK_MHZ | witness::MEM_CLOCK_MHZ
                    if [b, a].into_iter().flatten().any(|v| Some(v) != usual) =>
                {
                    let detail = format!(
                        "{} {} → {} MHz (the ladder's usual {})",
                        pair.name,
                        show(b),
                        show(a),
                        show(usual)
                    );
                    witness.clock_changes.push(note(detail));
                }
                witness::THROTTLE => {
                    let reasons: Vec<&str> = [value(row, pair.before), value(row, pair.after)]
                        .into_iter()
                        .flatten()
                        .filter(|v| !v.is_empty() && *v != "none")
                        .collect();
                    if !reasons.is_empty() {
                        let detail = format!(
                            "throttle {} before, {} after",
                            value(row, pair.before).unwrap_or("?"),
                            value(row, pair.after).unwrap_or("?")
                        );
                        witness.throttle_cells.push(note(detail));
                    }
                }
                _ => {}
            }
        }
        if let Some((min, max)) = range {
            witness.ranges.push(WitnessRange {
                quantity: pair.name.clone(),
                min,
                max,
            });
        }
    }
    Some(witness)
}

/// The most frequent value (the smallest among equally frequent ones).
fn mode(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut sorted: Vec<f64> = values.collect();
    sorted.sort_by(f64::total_cmp);
    sorted
        .chunk_by(|x, y| x == y)
        .max_by(|x, y| x.len().cmp(&y.len()).then(y[0].total_cmp(&x[0])))
        .map(|run| run[0])
}

fn value(row: &Row, column: Option<usize>) -> Option<&str> {
    column.and_then(|c| row.fields.get(c)).map(str::trim)
}

/// The witness columns grouped by quantity, in header order.
fn pairs(ladder: &Ladder) -> Vec<Pair> {
    let mut pairs: Vec<Pair> = Vec::new();
    for (i, column) in ladder.columns.iter().enumerate() {
        let Some((name, side)) = parse_witness_column(column) else {
            continue;
        };
        let is_before = side == WitnessSide::Before;
        let at = match pairs.iter().position(|p| p.name == name) {
            Some(at) => at,
            None => {
                pairs.push(Pair {
                    name: name.to_string(),
                    before: None,
                    after: None,
                });
                pairs.len() - 1
            }
        };
        if is_before {
            pairs[at].before = Some(i);
        } else {
            pairs[at].after = Some(i);
        }
    }
    pairs
}
