//! The card witness: what else was happening on the card (or host) around every cell.
//!
//! A ladder that shared its GPU with a foreign process, or ran through a clock or throttle
//! change, must be visible as such from the file alone; so the runner samples the card
//! before and after each cell and writes the readings as `witness_*` columns.

use ladder::ladder_file::{witness, witness_column, WitnessSide};
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::Nvml;
use serde_json::json;

/// Reads the card through NVML, or the host's load average where there is no NVIDIA GPU.
pub enum Witness {
    Card { nvml: Box<Nvml>, index: u32 },
    Host,
}

impl Witness {
    /// NVML on card `index` when the driver answers; the host's load average otherwise.
    pub fn open(index: u32) -> Witness {
        match Nvml::init() {
            Ok(nvml) if nvml.device_by_index(index).is_ok() => Witness::Card {
                nvml: Box::new(nvml),
                index,
            },
            _ => Witness::Host,
        }
    }

    /// The card as the start record names it, or `None` without a GPU.
    pub fn card(&self) -> Option<serde_json::Value> {
        let Witness::Card { nvml, index } = self else {
            return None;
        };
        let device = nvml.device_by_index(*index).ok()?;
        Some(json!({
            "index": index,
            "name": device.name().ok(),
            "uuid": device.uuid().ok(),
            "driver": nvml.sys_driver_version().ok(),
            "memory_bytes": device.memory_info().ok().map(|m| m.total),
            "max_sm_clock_mhz": device.max_clock_info(Clock::SM).ok(),
        }))
    }

    /// The card, for the sampler that reads it during each cell; `None` without one.
    pub fn device(&self) -> Option<nvml_wrapper::Device<'_>> {
        match self {
            Witness::Card { nvml, index } => nvml.device_by_index(*index).ok(),
            Witness::Host => None,
        }
    }

    /// The reading names, without the `witness_` prefix and `_before`/`_after` suffix.
    pub fn fields(&self) -> &'static [&'static str] {
        match self {
            Witness::Card { .. } => &witness::CARD,
            Witness::Host => &witness::HOST,
        }
    }

    /// The column names in the order `sample` fills them, for one side of a cell.
    pub fn columns(&self, side: WitnessSide) -> Vec<String> {
        self.fields()
            .iter()
            .map(|f| witness_column(f, side))
            .collect()
    }

    /// One reading of every field; a reading the driver refuses is left empty.
    pub fn sample(&self) -> Vec<String> {
        match self {
            Witness::Card { nvml, index } => card_sample(nvml, *index),
            Witness::Host => vec![host_loadavg()],
        }
    }
}

fn card_sample(nvml: &Nvml, index: u32) -> Vec<String> {
    let Ok(device) = nvml.device_by_index(index) else {
        return vec![String::new(); 6];
    };
    let text = |v: Option<String>| v.unwrap_or_default();
    // The runner itself holds no context on the card, so every compute process is foreign.
    let procs = device
        .running_compute_processes()
        .ok()
        .map(|p| p.len().to_string());
    let throttle = device.current_throttle_reasons().ok().map(|r| {
        let names: Vec<&str> = r.iter_names().map(|(name, _)| name).collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join("|")
        }
    });
    vec![
        text(procs),
        text(device.clock_info(Clock::SM).ok().map(|c| c.to_string())),
        text(device.clock_info(Clock::Memory).ok().map(|c| c.to_string())),
        text(
            device
                .temperature(TemperatureSensor::Gpu)
                .ok()
                .map(|t| t.to_string()),
        ),
        text(
            device
                .power_usage()
                .ok()
                .map(|mw| format!("{:.1}", f64::from(mw) / 1000.0)),
        ),
        text(throttle),
    ]
}

/// The 1-minute load average from /proc/loadavg, empty where it cannot be read.
fn host_loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_default()
}
