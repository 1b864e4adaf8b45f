//! Energy in the markdown: the round split's energy factors, and the energy beside each
//! speed in the table across ladders.

use super::{name, num, pct};
use crate::across::EnergyBeside;
use crate::analysis::RoundSplit;
use std::fmt::Write;

/// The round split's energy table, when the spec names an energy column.
pub(super) fn split_table(split: &RoundSplit, out: &mut String) {
    let Some(column) = &split.energy else {
        return;
    };
    let _ = writeln!(
        out,
        "\nEnergy ({}), split the same way: `E[base]/E[arm] = (R[base]/R[arm]) · ((E[base]/R[base]) / (E[arm]/R[arm]))`, \
         and the energy per round into the round speed and the power `(E[base]/T[base]) / (E[arm]/T[arm])`; \
         positive: the arm spends less.\n",
        name(column)
    );
    out.push_str("| arm | energy | round count | energy per round | round speed | power |\n|---|---:|---:|---:|---:|---:|\n");
    for a in &split.arms {
        let Some(e) = &a.energy else { continue };
        let _ = writeln!(
            out,
            "| {} | {} % | {} % | {} % | {} % | {} % |",
            name(&a.arm),
            pct(e.energy_pct),
            pct(a.count_pct),
            pct(e.j_per_round_pct),
            pct(a.speed_pct),
            pct(e.power_pct)
        );
    }
}

/// The energy cell of one row across ladders: each energy metric's estimates in the row's
/// ladders and its spread.
pub(super) fn beside_cell(energy: &[EnergyBeside]) -> String {
    energy
        .iter()
        .map(|e| {
            let estimates: Vec<String> = e
                .estimates_pct
                .iter()
                .map(|v| v.map_or("–".to_string(), pct))
                .collect();
            format!(
                "{}: {} (spread {} pp)",
                name(&e.column),
                estimates.join("; "),
                num(e.spread_pp)
            )
        })
        .collect::<Vec<_>>()
        .join("<br>")
}
