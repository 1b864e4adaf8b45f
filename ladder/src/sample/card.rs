//! The card during the cell in a generated ladder: the sampled columns as the runner writes
//! them, a `[card]` table, and an energy that follows each arm's speed and power, so that
//! the energy readings have a known true effect.

use super::{Noise, SampleArm};
use crate::card::{self, ENERGY_J};
use serde_json::json;

/// The split's energy column when [`SampleCard::split_energy`] asks for one.
pub const ENERGY_COLUMN: &str = "decode_j";
/// The base's power while the split's time runs.
const BASE_POWER_W: f64 = 300.0;
/// The base's energy over a whole cell (start-up included).
const CELL_J: f64 = 600.0;

/// What a generated ladder says about its card during each cell.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SampleCard {
    /// The spec pre-registers `[card] throttle = "defect"`.
    pub throttle_defect: bool,
    /// `witness_energy_j` is a `[[metric]]` (lower is better).
    pub energy_metric: bool,
    /// With the sample's split: `[split] energy` names [`ENERGY_COLUMN`], the split's time
    /// times the arm's power.
    pub split_energy: bool,
    /// Cell numbers that ran under a power cap only inside the cell: the readings before and
    /// after show none, the sampled mask holds `sw_power_cap`.
    pub throttled_inside: Vec<usize>,
}

impl SampleCard {
    /// Adds the `[card]` table, the energy metric and the split's energy to the spec.
    pub(super) fn spec(&self, spec: &mut serde_json::Value) {
        let throttle = if self.throttle_defect {
            "defect"
        } else {
            "report"
        };
        spec["card"] = json!({"sample_ms": 20, "throttle": throttle});
        if self.energy_metric {
            let metric = json!({"column": ENERGY_J, "better": "lower"});
            spec["metric"]
                .as_array_mut()
                .expect("the sample's metrics are a list")
                .push(metric);
        }
        if self.split_energy && spec.get("split").is_some() {
            spec["split"]["energy"] = json!(ENERGY_COLUMN);
        }
    }

    /// The sampled columns, after the readings before and after.
    pub(super) fn columns(&self) -> impl Iterator<Item = String> {
        card::COLUMNS.iter().map(|c| c.to_string())
    }

    /// One cell's sampled values. `gain` is the arm's speed-up (`1 + effect_pct/100`); the
    /// cell's energy is its time times its power. Every cell saw the card idle before its
    /// process started (`gpu_idle`), which is no throttle.
    pub(super) fn fields(
        &self,
        arm: &SampleArm,
        gain: f64,
        cell: usize,
        throttled: bool,
        noise: &mut Noise,
    ) -> Vec<String> {
        let jitter = 1.0 + 0.001 * noise.gaussian();
        let energy = CELL_J * (1.0 + arm.power_pct / 100.0) / gain * jitter;
        let mut mask = 0x1;
        if throttled {
            mask |= 0x20;
        }
        if self.throttled_inside.contains(&cell) {
            mask |= 0x4;
        }
        let sm_min = if mask == 0x1 { "1980" } else { "1755" };
        [
            format!("{energy:.3}"),
            "690.2".into(),
            sm_min.into(),
            "1980".into(),
            "44".into(),
            "81234".into(),
            card::mask_text(mask),
            "501".into(),
        ]
        .into()
    }

    /// The split's energy over `seconds` at the arm's power; nothing without `split_energy`.
    pub(super) fn split_energy(&self, seconds: f64, arm: &SampleArm) -> Option<String> {
        let power = BASE_POWER_W * (1.0 + arm.power_pct / 100.0);
        self.split_energy.then(|| format!("{:.9}", seconds * power))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ladder_file::Role;

    fn mean_energy(arm: &SampleArm, gain: f64) -> f64 {
        let mut noise = Noise::new(7);
        let draws = 400;
        let sum: f64 = (0..draws)
            .map(|_| {
                SampleCard::default().fields(arm, gain, 0, false, &mut noise)[0].parse::<f64>()
            })
            .map(|energy| energy.expect("the energy is a number"))
            .sum();
        sum / f64::from(draws)
    }

    #[test]
    fn a_cells_energy_is_its_power_over_its_speed() {
        let mut arm = SampleArm::new("hot", Role::Arm, 25.0);
        arm.power_pct = 10.0;
        let expected = CELL_J * 1.1 / 1.25;
        // The jitter's sd is 0.1 % of a cell, 0.005 % over the draws: 0.02 % is four of them.
        let read = mean_energy(&arm, 1.25);
        assert!(
            (read / expected - 1.0).abs() < 2e-4,
            "{read} against {expected}"
        );
    }

    #[test]
    fn a_throttled_cell_reads_the_lower_clock_and_its_reason() {
        let card = SampleCard {
            throttled_inside: vec![3],
            ..SampleCard::default()
        };
        let arm = SampleArm::new("base", Role::Base, 0.0);
        let mut noise = Noise::new(1);
        let idle = card.fields(&arm, 1.0, 0, false, &mut noise);
        let capped = card.fields(&arm, 1.0, 0, true, &mut noise);
        let inside = card.fields(&arm, 1.0, 3, false, &mut noise);
        assert_eq!((idle[2].as_str(), idle[6].as_str()), ("1980", "0x1"));
        assert_eq!((capped[2].as_str(), capped[6].as_str()), ("1755", "0x21"));
        assert_eq!((inside[2].as_str(), inside[6].as_str()), ("1755", "0x5"));
    }
}
