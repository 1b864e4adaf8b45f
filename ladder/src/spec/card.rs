//! `[card]`: how often the runner samples the card during a cell, and the pre-registered
//! rule for a cell that ran under a power or thermal throttle (LADDER-FORMAT.md "The card
//! during the cell").

use super::locate::Locator;
use super::{Spec, SpecError};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A reading every 20 ms: a throttle of 40 ms falls on at least one reading.
pub const DEFAULT_SAMPLE_MS: u64 = 20;
/// A minute: a slower sampler would miss everything a cell is short enough to hide.
pub const MAX_SAMPLE_MS: u64 = 60_000;
pub(super) const CARD_KEYS: &[&str] = &["sample_ms", "throttle", "clocks"];

/// What a cell that saw a power or thermal throttle is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThrottleRule {
    /// Listed by the report; the ladder stays clean.
    #[default]
    Report,
    /// A `card-throttle` defect of the file.
    Defect,
}

/// What a clock change is: listed by the report (the only rule so far).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockRule {
    #[default]
    Report,
}

/// `[card]`, every key optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CardSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_ms: Option<u64>,
    #[serde(default)]
    pub throttle: ThrottleRule,
    #[serde(default)]
    pub clocks: ClockRule,
}

impl Spec {
    /// The interval between two readings of the card during a cell.
    pub fn sample_every(&self) -> Duration {
        let ms = self.card.as_ref().and_then(|c| c.sample_ms);
        Duration::from_millis(ms.unwrap_or(DEFAULT_SAMPLE_MS))
    }

    /// The pre-registered throttle rule (`report` unless `[card]` says `defect`).
    pub fn throttle_rule(&self) -> ThrottleRule {
        self.card
            .as_ref()
            .map_or_else(ThrottleRule::default, |c| c.throttle)
    }
}

/// `sample_ms` is a whole number of milliseconds the sampler can keep to, and the round
/// split's energy is not the whole cell's.
pub(super) fn check(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    let split_energy = spec.split.as_ref().and_then(|s| s.energy.as_deref());
    if split_energy == Some(crate::card::ENERGY_J) {
        return Err(at.error(
            "energy",
            Some(crate::card::ENERGY_J),
            "[split] energy names witness_energy_j, the whole cell's energy (start-up and loading included), which the round split would charge to the rounds",
            "name the program's own energy over the time column's span (e.g. energy = \"decode_j_per_token\"), and read witness_energy_j as a [[metric]]",
        ));
    }
    let Some(ms) = spec.card.as_ref().and_then(|c| c.sample_ms) else {
        return Ok(());
    };
    if !(1..=MAX_SAMPLE_MS).contains(&ms) {
        return Err(at
            .error(
                "sample_ms",
                None,
                &format!("[card] sample_ms = {ms} is not from 1 to {MAX_SAMPLE_MS} ms"),
                &format!("set sample_ms = {DEFAULT_SAMPLE_MS} (the default), or any whole number of milliseconds from 1 to {MAX_SAMPLE_MS}"),
            )
            .at_table(at, "card"));
    }
    Ok(())
}
