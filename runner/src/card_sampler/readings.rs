//! One reading of the card, and a cell's readings folded into the sampled columns.

use ladder::card;
use ladder::spec::LoadedSpec;

/// What one reading found; `None` where the driver refused that quantity.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Reading {
    /// The card's energy counter since the driver loaded, mJ.
    pub energy_mj: Option<u64>,
    pub power_mw: Option<u32>,
    pub sm_clock_mhz: Option<u32>,
    pub temp_c: Option<u32>,
    pub mem_used_mib: Option<u64>,
    /// NVML's throttle-reason bitmask.
    pub throttle: Option<u64>,
}

/// A cell's readings, folded as they arrive (the thread keeps no series).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CellCard {
    first_energy_mj: Option<u64>,
    last_energy_mj: Option<u64>,
    power_mw_max: Option<u32>,
    sm_clock_mhz_min: Option<u32>,
    sm_clock_mhz_max: Option<u32>,
    temp_c_max: Option<u32>,
    mem_used_mib_max: Option<u64>,
    throttle_seen: Option<u64>,
    samples: usize,
}

fn max<T: Ord>(seen: Option<T>, new: Option<T>) -> Option<T> {
    seen.into_iter().chain(new).max()
}

fn min<T: Ord>(seen: Option<T>, new: Option<T>) -> Option<T> {
    seen.into_iter().chain(new).min()
}

impl CellCard {
    pub fn add(&mut self, r: Reading) {
        self.first_energy_mj = self.first_energy_mj.or(r.energy_mj);
        self.last_energy_mj = r.energy_mj.or(self.last_energy_mj);
        self.power_mw_max = max(self.power_mw_max, r.power_mw);
        self.sm_clock_mhz_min = min(self.sm_clock_mhz_min, r.sm_clock_mhz);
        self.sm_clock_mhz_max = max(self.sm_clock_mhz_max, r.sm_clock_mhz);
        self.temp_c_max = max(self.temp_c_max, r.temp_c);
        self.mem_used_mib_max = max(self.mem_used_mib_max, r.mem_used_mib);
        self.throttle_seen = match (self.throttle_seen, r.throttle) {
            (Some(seen), Some(new)) => Some(seen | new),
            (seen, new) => seen.or(new),
        };
        self.samples += 1;
    }

    /// The card's energy over the cell, J: last reading less first (none when the counter
    /// went back, as it does when the driver reloads).
    fn energy_j(&self) -> Option<f64> {
        let spent = self.last_energy_mj?.checked_sub(self.first_energy_mj?)?;
        Some(spent as f64 / 1000.0)
    }

    /// The values of `ladder::card::COLUMNS`, in order; all empty for a cell not sampled.
    pub fn fields(&self) -> Vec<String> {
        if self.samples == 0 {
            return vec![String::new(); card::COLUMNS.len()];
        }
        let text = |v: Option<String>| v.unwrap_or_default();
        vec![
            text(self.energy_j().map(|j| format!("{j:.3}"))),
            text(
                self.power_mw_max
                    .map(|mw| format!("{:.1}", f64::from(mw) / 1000.0)),
            ),
            text(self.sm_clock_mhz_min.map(|v| v.to_string())),
            text(self.sm_clock_mhz_max.map(|v| v.to_string())),
            text(self.temp_c_max.map(|v| v.to_string())),
            text(self.mem_used_mib_max.map(|v| v.to_string())),
            text(self.throttle_seen.map(card::mask_text)),
            self.samples.to_string(),
        ]
    }

    /// A sampled column's value as the file holds it, for the stopping rule.
    pub fn value(&self, column: &str) -> Option<f64> {
        let at = card::COLUMNS.iter().position(|c| *c == column)?;
        self.fields()[at].parse().ok()
    }

    /// Every metric the spec reads off the card is a positive number in this cell; `Err` is
    /// the abort reason, naming the cell (`at`).
    pub fn check_metrics(&self, loaded: &LoadedSpec, at: &str) -> Result<(), String> {
        for metric in loaded.spec.effective_metrics() {
            if !card::COLUMNS.contains(&metric.column.as_str()) {
                continue;
            }
            if !self.value(&metric.column).is_some_and(|v| v > 0.0) {
                return Err(format!(
                    "{at}: the card gave no positive {} ({} reading(s)); the metric cannot be read \
                     in this cell: check that the card reports it (nvidia-smi -q), or drop the metric",
                    metric.column, self.samples
                ));
            }
        }
        Ok(())
    }
}
