//! Round count against round speed (METHOD.md): each pass's time ratio split exactly into
//! the ratio of round counts and the ratio of round speeds.

use super::energy_split::{EnergyLogs, EnergySplit};
use crate::frames::{Grid, LadderInfo, SeriesKind};
use ladder::stats::{mean, pct_of_log};
use serde::Serialize;
use std::ops::Range;

#[derive(Debug, Serialize)]
pub struct RoundSplit {
    pub rounds: String,
    pub time: String,
    /// `[split] energy`, split as the time is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy: Option<String>,
    pub arms: Vec<SplitArm>,
    pub rounds_identical: bool,
    pub differing_cells: Vec<RoundCell>,
    /// Cells of the analysis passes whose round count was compared.
    pub cells: usize,
}

#[derive(Debug, Serialize)]
pub struct SplitArm {
    pub arm: String,
    pub total_pct: f64,
    pub count_pct: f64,
    pub speed_pct: f64,
    pub n: usize,
    /// With an energy column: its factors (left out without one).
    #[serde(flatten)]
    pub energy: Option<EnergySplit>,
}

#[derive(Debug, Serialize)]
pub struct RoundCell {
    pub pass: usize,
    pub slot: u32,
    pub arm: String,
    pub rounds: f64,
    pub base_rounds: f64,
}

/// The three factors of one pass, each as a ratio: total `T[b]/T[a]`, count `R[b]/R[a]`,
/// speed `(T[b]/R[b]) / (T[a]/R[a])`; `total = count · speed`.
pub fn split_factors(t_base: f64, t_arm: f64, r_base: f64, r_arm: f64) -> (f64, f64, f64) {
    (
        t_base / t_arm,
        r_base / r_arm,
        (t_base / r_base) / (t_arm / r_arm),
    )
}

pub fn round_split(info: &LadderInfo, grids: &[Grid], passes: Range<usize>) -> Option<RoundSplit> {
    let split = info.spec.split.as_ref()?;
    let find = |kind| {
        info.series
            .iter()
            .position(|s| *s == kind)
            .map(|i| &grids[i])
    };
    let (rounds, time) = (find(SeriesKind::Rounds)?, find(SeriesKind::Time)?);
    let energy = find(SeriesKind::Energy);
    let base = info.start.base_index();
    let arms = &info.start.arms;
    let geometric = |logs: &[f64]| pct_of_log(mean(logs));
    let mut split_arms = Vec::new();
    for a in (0..arms.len()).filter(|&a| a != base) {
        let (mut total, mut count, mut speed) = (Vec::new(), Vec::new(), Vec::new());
        let mut energy_logs = EnergyLogs::default();
        for p in passes.clone() {
            let (tb, ta, rb, ra) = (
                time.value(p, base),
                time.value(p, a),
                rounds.value(p, base),
                rounds.value(p, a),
            );
            if [tb, ta, rb, ra].iter().all(|v| v.is_finite()) {
                let (t, c, s) = split_factors(tb, ta, rb, ra);
                total.push(t.ln());
                count.push(c.ln());
                speed.push(s.ln());
                let e = energy.map_or((f64::NAN, f64::NAN), |g| (g.value(p, base), g.value(p, a)));
                if e.0.is_finite() && e.1.is_finite() {
                    energy_logs.push((tb, ta), (rb, ra), e);
                }
            }
        }
        split_arms.push(SplitArm {
            arm: arms[a].name.clone(),
            total_pct: geometric(&total),
            count_pct: geometric(&count),
            speed_pct: geometric(&speed),
            n: total.len(),
            energy: energy_logs.split(),
        });
    }
    let mut differing_cells = Vec::new();
    let mut cells = 0;
    for p in passes {
        for (a, arm) in arms.iter().enumerate() {
            let (r, rb) = (rounds.value(p, a), rounds.value(p, base));
            if !(r.is_finite() && rb.is_finite()) {
                continue;
            }
            cells += 1;
            if r != rb {
                differing_cells.push(RoundCell {
                    pass: p,
                    slot: rounds.slot(p, a),
                    arm: arm.name.clone(),
                    rounds: r,
                    base_rounds: rb,
                });
            }
        }
    }
    Some(RoundSplit {
        rounds: split.rounds.clone(),
        time: split.time.clone(),
        energy: split.energy.clone(),
        arms: split_arms,
        rounds_identical: differing_cells.is_empty(),
        differing_cells,
        cells,
    })
}
