//! How finely the card's energy counter resolves a span (`engine energy-counter`): how often
//! it moves and by how much, read under load. A span of T seconds is known to about one
//! update interval's energy, so `decode_j_per_token` needs spans many intervals long.

use crate::cuda::Gpu;
use crate::meter::Meter;
use anyhow::{Context, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The counter as a poll in a tight loop saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterReading {
    /// Polls made and the changes among them.
    pub polls: usize,
    pub updates: usize,
    /// Median time between changes and median change.
    pub interval_ms: f64,
    pub step_mj: f64,
    /// The mean power over the first to the last change.
    pub power_w: f64,
}

impl CounterReading {
    /// The shortest span whose energy the counter gives to within `pct` percent: one
    /// update interval is the most a span's two ends can miss together.
    pub fn span_for_pct(&self, pct: f64) -> Duration {
        Duration::from_secs_f64(self.interval_ms / 1e3 / (pct / 100.0))
    }
}

/// The counter polled on its own thread for `seconds` while this one keeps `gpu` streaming
/// memory (the counter moves with the power drawn, and an idle card draws little).
pub fn measure<M: Meter + Send>(gpu: &Gpu, meter: &mut M, seconds: f64) -> Result<CounterReading> {
    let done = AtomicBool::new(false);
    let reading = std::thread::scope(|s| -> Result<_> {
        let poller = s.spawn(|| poll(meter, &done));
        let until = Instant::now() + Duration::from_secs_f64(seconds);
        let load = (|| -> Result<()> {
            while Instant::now() < until {
                gpu.measure_read_ceiling_gbs(1 << 30)?;
            }
            Ok(())
        })();
        done.store(true, Ordering::Relaxed);
        let reading = poller.join().expect("the poller does not panic");
        load.map(|()| reading)
    })?;
    reading.context("the energy counter moved fewer than three times")
}

/// Polls `meter` until `done` is set; `None` when the counter cannot be read or moved fewer
/// than three times.
pub fn poll(meter: &mut dyn Meter, done: &AtomicBool) -> Option<CounterReading> {
    let mut changes: Vec<(Instant, u64)> = Vec::new();
    let mut last = meter.energy_mj()?;
    let mut polls = 1;
    while !done.load(Ordering::Relaxed) {
        let now = meter.energy_mj()?;
        polls += 1;
        if now != last {
            changes.push((Instant::now(), now));
            last = now;
        }
    }
    summarize(&changes, polls)
}

/// The reading of a series of (time, counter) changes.
pub fn summarize(changes: &[(Instant, u64)], polls: usize) -> Option<CounterReading> {
    if changes.len() < 3 {
        return None;
    }
    let pairs = changes.windows(2);
    let intervals: Vec<f64> = pairs
        .clone()
        .map(|w| (w[1].0 - w[0].0).as_secs_f64() * 1e3)
        .collect();
    let steps: Vec<f64> = pairs.map(|w| (w[1].1 - w[0].1) as f64).collect();
    let (first, last) = (changes[0], changes[changes.len() - 1]);
    let seconds = (last.0 - first.0).as_secs_f64();
    Some(CounterReading {
        polls,
        updates: changes.len(),
        interval_ms: median(intervals),
        step_mj: median(steps),
        power_w: (last.1 - first.1) as f64 / 1e3 / seconds,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_moving_every_100_ms_by_50_j_reads_500_w() {
        let t0 = Instant::now();
        let changes: Vec<_> = (0..11u64)
            .map(|k| (t0 + Duration::from_millis(100 * k), 1_000_000 + 50_000 * k))
            .collect();
        let r = summarize(&changes, 5_000).unwrap();
        assert!((r.interval_ms - 100.0).abs() < 1e-9, "{r:?}");
        assert_eq!(r.step_mj, 50_000.0);
        assert!((r.power_w - 500.0).abs() < 1e-9, "{r:?}");
        assert_eq!((r.updates, r.polls), (11, 5_000));
        // One interval in a hundred: a 1 % figure needs spans of 10 s.
        assert_eq!(r.span_for_pct(1.0), Duration::from_secs(10));
    }

    #[test]
    fn too_few_changes_give_no_reading() {
        let t0 = Instant::now();
        assert_eq!(summarize(&[(t0, 1), (t0, 2)], 10), None);
    }
}
