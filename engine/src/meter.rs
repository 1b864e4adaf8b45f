//! The card's energy counter and the device memory this process holds, read around the timed
//! reps: the runner's witness sees a whole cell (start-up, prefill, decode, exit) and cannot
//! split its joules between prefill and decode; the engine can.

use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::Nvml;

/// What the engine reads off the card.
pub trait Meter {
    /// The card's energy counter in millijoules (it only grows), or `None` where there is
    /// no counter.
    fn energy_mj(&mut self) -> Option<u64>;
    /// The device memory this process holds, in MiB, or `None` where it cannot be read.
    fn held_mib(&mut self) -> Option<u64>;
}

/// No card (the CPU backend): every figure stays empty.
pub struct NoMeter;

impl Meter for NoMeter {
    fn energy_mj(&mut self) -> Option<u64> {
        None
    }
    fn held_mib(&mut self) -> Option<u64> {
        None
    }
}

/// Card `index` read through NVML.
pub struct NvmlMeter {
    nvml: Nvml,
    index: u32,
}

impl NvmlMeter {
    /// NVML on card `index`, or `None` (and why) when the driver does not answer.
    pub fn open(index: u32) -> Result<NvmlMeter, String> {
        let nvml = Nvml::init().map_err(|e| format!("NVML did not start ({e})"))?;
        nvml.device_by_index(index)
            .map_err(|e| format!("NVML has no card {index} ({e})"))?;
        Ok(NvmlMeter { nvml, index })
    }
}

impl Meter for NvmlMeter {
    fn energy_mj(&mut self) -> Option<u64> {
        let d = self.nvml.device_by_index(self.index).ok()?;
        d.total_energy_consumption().ok()
    }

    /// This process's entry among the card's compute processes; where the driver lists none
    /// for it (a container's own process ids), the card's whole used memory.
    fn held_mib(&mut self) -> Option<u64> {
        let d = self.nvml.device_by_index(self.index).ok()?;
        let pid = std::process::id();
        let own = d.running_compute_processes().ok().and_then(|ps| {
            ps.into_iter()
                .find(|p| p.pid == pid)
                .and_then(|p| match p.used_gpu_memory {
                    UsedGpuMemory::Used(bytes) => Some(bytes),
                    UsedGpuMemory::Unavailable => None,
                })
        });
        own.or_else(|| d.memory_info().ok().map(|m| m.used))
            .map(|bytes| bytes >> 20)
    }
}

/// The joules of a span read off a counter in millijoules; `None` when either end is missing.
pub fn joules(before: Option<u64>, after: Option<u64>) -> Option<f64> {
    Some(after?.checked_sub(before?)? as f64 / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joules_are_the_counter_difference_and_need_both_ends() {
        assert_eq!(joules(Some(1_000), Some(3_500)), Some(2.5));
        assert_eq!(joules(None, Some(3_500)), None);
        assert_eq!(joules(Some(1_000), None), None);
        // A counter that went back (a driver reload) gives no figure, not a negative one.
        assert_eq!(joules(Some(3_500), Some(1_000)), None);
    }
}
