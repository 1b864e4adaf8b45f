//! The card during the cell (LADDER-FORMAT.md "The card during the cell"): the columns the
//! runner's sampler writes, and NVML's throttle reasons by bit and name, with the power or
//! thermal ones that the pre-registered `[card] throttle = "defect"` rule makes defects
//! (`verify` applies it).

pub const ENERGY_J: &str = "witness_energy_j";
pub const POWER_W_MAX: &str = "witness_power_w_max";
pub const SM_CLOCK_MHZ_MIN: &str = "witness_sm_clock_mhz_min";
pub const SM_CLOCK_MHZ_MAX: &str = "witness_sm_clock_mhz_max";
pub const TEMP_C_MAX: &str = "witness_temp_c_max";
pub const MEM_PEAK_MIB: &str = "witness_mem_peak_mib";
pub const THROTTLE_SEEN: &str = "witness_throttle_seen";
pub const SAMPLES: &str = "witness_samples";

/// The sampled columns, in the order the runner writes them (after the before and after
/// readings).
pub const COLUMNS: [&str; 8] = [
    ENERGY_J,
    POWER_W_MAX,
    SM_CLOCK_MHZ_MIN,
    SM_CLOCK_MHZ_MAX,
    TEMP_C_MAX,
    MEM_PEAK_MIB,
    THROTTLE_SEEN,
    SAMPLES,
];

/// NVML's clock-event (throttle) reasons: bit and name (`nvmlClocksThrottleReason*`).
pub const REASONS: [(u64, &str); 9] = [
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
];

/// The reasons that mean the card slowed itself for power or heat (not idleness, a clock
/// the user set, or sync boost): SW power cap, HW slowdown, SW and HW thermal, HW power brake.
pub const POWER_OR_THERMAL: u64 = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

/// A mask as `witness_throttle_seen` writes it: `0x` and lowercase hex.
pub fn mask_text(mask: u64) -> String {
    format!("{mask:#x}")
}

/// A `witness_throttle_seen` value read back; `None` when it is not a `0x` mask.
pub fn parse_mask(text: &str) -> Option<u64> {
    u64::from_str_radix(text.trim().strip_prefix("0x")?, 16).ok()
}

/// The names of the reasons in `mask`, a bit without a name as its hex.
pub fn reason_names(mask: u64) -> Vec<String> {
    let named: u64 = REASONS.iter().map(|(bit, _)| bit).sum();
    let mut names: Vec<String> = REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, name)| name.to_string())
        .collect();
    if mask & !named != 0 {
        names.push(mask_text(mask & !named));
    }
    names
}

/// The power or thermal reasons of a cell's `witness_throttle_seen`: `Ok(None)` when it saw
/// none (or was not sampled: an empty value), `Err` when the value is not a mask.
pub fn power_or_thermal(text: &str) -> Result<Option<Vec<String>>, String> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let mask =
        parse_mask(text).ok_or_else(|| format!("{THROTTLE_SEEN} is {text:?}, not a 0x mask"))?;
    Ok((mask & POWER_OR_THERMAL != 0).then(|| reason_names(mask & POWER_OR_THERMAL)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_read_back_as_written_and_name_their_reasons() {
        assert_eq!(mask_text(0), "0x0");
        assert_eq!(mask_text(0x44), "0x44");
        assert_eq!(parse_mask("0x44"), Some(0x44));
        assert_eq!(parse_mask("44"), None);
        assert_eq!(reason_names(0x44), ["sw_power_cap", "hw_thermal_slowdown"]);
        assert_eq!(reason_names(0x1001), ["gpu_idle", "0x1000"]);
    }

    #[test]
    fn only_power_and_thermal_reasons_count() {
        assert_eq!(power_or_thermal("").unwrap(), None);
        assert_eq!(power_or_thermal("0x0").unwrap(), None);
        // Idle, an application clock and sync boost are the card's ordinary states.
        assert_eq!(power_or_thermal("0x113").unwrap(), None);
        for (bit, name) in [
            (0x4, "sw_power_cap"),
            (0x8, "hw_slowdown"),
            (0x20, "sw_thermal_slowdown"),
            (0x40, "hw_thermal_slowdown"),
            (0x80, "hw_power_brake_slowdown"),
        ] {
            let text = mask_text(bit | 0x1);
            assert_eq!(
                power_or_thermal(&text).unwrap(),
                Some(vec![name.to_string()])
            );
        }
        assert!(power_or_thermal("sw_thermal")
            .unwrap_err()
            .contains("not a 0x mask"));
    }
}
