//! A recorded card played back instead of NVML (`runner run --card-playback FILE`): for the
//! tests, and for measuring what the sampler costs on a machine without a card.
//!
//! The file is CSV with the header [`HEADER`]; each row is the card's state from `t_ms`
//! (milliseconds after the cell's first reading) until the next row, the last row's until
//! the cell ends. Every cell plays the series from its start. An empty field is a quantity the
//! driver refused; `throttle` is a `0x` mask; lines that start with `#` are comments.

use super::{CardProbe, Reading};
use ladder::card;
use std::path::Path;
use std::str::FromStr;
use std::time::Instant;

pub const HEADER: &str = "t_ms,energy_mj,power_mw,sm_clock_mhz,temp_c,mem_used_mib,throttle";

/// A recorded series: from `t_ms`, this reading.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    rows: Vec<(u64, Reading)>,
    /// blake3 of the file, for the start record.
    pub blake3: String,
}

impl Series {
    pub fn load(path: &Path) -> anyhow::Result<Series> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        Series::parse(&text).map_err(|e| anyhow::anyhow!("{}:{e}", path.display()))
    }

    /// `Err` is `LINE: what is wrong; the fix`.
    pub fn parse(text: &str) -> Result<Series, String> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        match lines.next() {
            Some((_, header)) if header == HEADER => {}
            other => {
                return Err(format!(
                    "{}: the header is not {HEADER:?}; start the file with that line",
                    other.map_or(1, |(n, _)| n)
                ))
            }
        }
        let mut rows: Vec<(u64, Reading)> = Vec::new();
        for (n, line) in lines {
            let (t, reading) = row(line).map_err(|e| format!("{n}: {e}"))?;
            let after = rows.last().map(|(last, _)| *last);
            if after.is_some_and(|last| t <= last) || (after.is_none() && t != 0) {
                return Err(format!(
                    "{n}: t_ms = {t} does not follow the row before; the rows start at t_ms = 0 and increase"
                ));
            }
            rows.push((t, reading));
        }
        if rows.is_empty() {
            return Err("1: the series has no rows; add one per change of the card's state".into());
        }
        Ok(Series {
            rows,
            blake3: blake3::hash(text.as_bytes()).to_hex().to_string(),
        })
    }

    /// A probe that plays the series from now.
    pub fn probe(&self) -> PlaybackProbe<'_> {
        PlaybackProbe {
            series: self,
            started: Instant::now(),
        }
    }

    /// The reading in force `ms` after the start.
    fn at(&self, ms: u64) -> Reading {
        let i = self.rows.partition_point(|(t, _)| *t <= ms);
        self.rows[i.saturating_sub(1)].1
    }
}

fn row(line: &str) -> Result<(u64, Reading), String> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    let [t, energy, power, sm, temp, mem, throttle] = fields[..] else {
        return Err(format!(
            "{} fields, {HEADER:?} has 7; write one value per column (empty: refused by the driver)",
            fields.len()
        ));
    };
    let t = number(t, "t_ms")?.ok_or("t_ms is empty; give every row its time")?;
    let throttle = match throttle {
        "" => None,
        text => Some(card::parse_mask(text).ok_or_else(|| {
            format!("throttle is {text:?}, not a 0x mask; write e.g. 0x4 for sw_power_cap")
        })?),
    };
    Ok((
        t,
        Reading {
            energy_mj: number(energy, "energy_mj")?,
            power_mw: number(power, "power_mw")?,
            sm_clock_mhz: number(sm, "sm_clock_mhz")?,
            temp_c: number(temp, "temp_c")?,
            mem_used_mib: number(mem, "mem_used_mib")?,
            throttle,
        },
    ))
}

/// A whole number, `None` when the field is empty.
fn number<T: FromStr>(text: &str, column: &str) -> Result<Option<T>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| {
        format!("{column} is {text:?}, not a whole number; write it in the header's unit")
    })
}

/// Plays one series from the moment it was made.
pub struct PlaybackProbe<'s> {
    series: &'s Series,
    started: Instant,
}

impl CardProbe for PlaybackProbe<'_> {
    fn read(&mut self) -> Reading {
        self.series.at(self.started.elapsed().as_millis() as u64)
    }
}
