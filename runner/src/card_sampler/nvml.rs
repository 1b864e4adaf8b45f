//! The card read through NVML (`nvml-wrapper`): the probe behind the sampler on a GPU host.

use super::{CardProbe, Reading};
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::Device;

/// Reads one card; every quantity the driver refuses is left out of the reading.
pub struct NvmlProbe<'d, 'n> {
    device: &'d Device<'n>,
}

impl<'d, 'n> NvmlProbe<'d, 'n> {
    pub fn new(device: &'d Device<'n>) -> NvmlProbe<'d, 'n> {
        NvmlProbe { device }
    }
}

impl CardProbe for NvmlProbe<'_, '_> {
    fn read(&mut self) -> Reading {
        let d = self.device;
        Reading {
            energy_mj: d.total_energy_consumption().ok(),
            power_mw: d.power_usage().ok(),
            sm_clock_mhz: d.clock_info(Clock::SM).ok(),
            temp_c: d.temperature(TemperatureSensor::Gpu).ok(),
            mem_used_mib: d.memory_info().ok().map(|m| m.used >> 20),
            throttle: d.current_throttle_reasons().ok().map(|r| r.bits()),
        }
    }
}
