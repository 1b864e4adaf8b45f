//! The round split's energy (METHOD.md "Round count against round speed", Energy): each
//! pass's energy ratio split into the round count's and the energy per round's, and the
//! energy per round further into the round speed's and the power's.

use ladder::stats::{mean, pct_of_log};
use serde::Serialize;

/// One arm's energy factors against the base, each the geometric mean over the analysis
/// passes as a percent, positive when the arm spends less.
#[derive(Debug, Serialize)]
pub struct EnergySplit {
    pub energy_pct: f64,
    pub j_per_round_pct: f64,
    pub power_pct: f64,
}

/// The factors of one pass, each a ratio base over arm: energy `E[b]/E[a]`, energy per round
/// `(E[b]/R[b]) / (E[a]/R[a])` and power `(E[b]/T[b]) / (E[a]/T[a])`. Energy is the round
/// count's factor times the energy per round's; energy per round is the round speed's times
/// the power's.
pub fn energy_factors(
    (t_base, t_arm): (f64, f64),
    (r_base, r_arm): (f64, f64),
    (e_base, e_arm): (f64, f64),
) -> (f64, f64, f64) {
    (
        e_base / e_arm,
        (e_base / r_base) / (e_arm / r_arm),
        (e_base / t_base) / (e_arm / t_arm),
    )
}

/// The logs of each pass's factors, collected as the passes are read.
#[derive(Default)]
pub struct EnergyLogs {
    energy: Vec<f64>,
    per_round: Vec<f64>,
    power: Vec<f64>,
}

impl EnergyLogs {
    pub fn push(&mut self, time: (f64, f64), rounds: (f64, f64), energy: (f64, f64)) {
        let (e, j, p) = energy_factors(time, rounds, energy);
        self.energy.push(e.ln());
        self.per_round.push(j.ln());
        self.power.push(p.ln());
    }

    /// The geometric means as percents; `None` when no pass held every value.
    pub fn split(&self) -> Option<EnergySplit> {
        let pct = |logs: &[f64]| pct_of_log(mean(logs));
        (!self.energy.is_empty()).then(|| EnergySplit {
            energy_pct: pct(&self.energy),
            j_per_round_pct: pct(&self.per_round),
            power_pct: pct(&self.power),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn energy_is_round_count_times_energy_per_round_and_that_is_speed_times_power() {
        // Base: 64 rounds in 0.64 s at 300 W; arm: 60 rounds in 0.6 s at 330 W.
        let (time, rounds) = ((0.64, 0.6), (64.0, 60.0));
        let energy = (0.64 * 300.0, 0.6 * 330.0);
        let (e, j, p) = energy_factors(time, rounds, energy);
        assert!((e - 192.0 / 198.0).abs() < 1e-12, "{e}");
        assert!((j - (192.0 / 64.0) / (198.0 / 60.0)).abs() < 1e-12, "{j}");
        assert!((p - 300.0 / 330.0).abs() < 1e-12, "{p}");
        let (count, speed) = (64.0 / 60.0, (0.64 / 64.0) / (0.6 / 60.0));
        assert!((e - count * j).abs() < 1e-12);
        assert!((j - speed * p).abs() < 1e-12);
    }
}
