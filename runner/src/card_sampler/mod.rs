//! The card during the cell: one thread reads the cell's card every `[card] sample_ms` while
//! the cell's process runs, and the readings become the `witness_energy_j` … columns
//! (LADDER-FORMAT.md "The card during the cell").
//!
//! The readings come through [`CardProbe`]: NVML on a GPU host ([`nvml`]), a recorded series
//! played back for tests and for measuring the sampler's own cost ([`playback`]). The thread
//! sleeps between readings and takes the first before the process starts and the last after
//! it is reaped, so that the energy covers the whole cell and nothing of the cell's own time
//! is spent on the card.

pub mod nvml;
pub mod playback;
mod readings;

pub use readings::{CellCard, Reading};

use crate::witness::Witness;
use anyhow::Context;
use ladder::card;
use ladder::spec::LoadedSpec;
use playback::Series;
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// One reading of the card, whatever it comes from.
pub trait CardProbe: Send {
    fn read(&mut self) -> Reading;
}

/// Where a ladder's card readings come from.
enum Source<'a> {
    Card(nvml_wrapper::Device<'a>),
    Playback {
        series: Series,
        path: String,
    },
    /// No NVML, or no card at the index: the columns stay empty.
    Unsampled,
}

/// Samples each cell's card around its process.
pub struct CardSampler<'a> {
    source: Source<'a>,
    every: Duration,
}

impl<'a> CardSampler<'a> {
    /// The card the witness reads, or the series at `playback` instead; `every` is the
    /// spec's `[card] sample_ms`.
    pub fn new(
        witness: &'a Witness,
        playback: Option<&Path>,
        every: Duration,
    ) -> anyhow::Result<CardSampler<'a>> {
        let source = match (playback, witness.device()) {
            (Some(path), _) => Source::Playback {
                series: load_playback(path)?,
                path: path.display().to_string(),
            },
            (None, Some(device)) => Source::Card(device),
            (None, None) => Source::Unsampled,
        };
        Ok(CardSampler { source, every })
    }

    /// The start record's `card` when the readings are played back: the file and its hash.
    pub fn playback_record(&self) -> Option<serde_json::Value> {
        match &self.source {
            Source::Playback { series, path } => Some(serde_json::json!({
                "playback": path,
                "blake3": series.blake3,
            })),
            _ => None,
        }
    }

    /// Refuses a spec whose metric is a sampled column on a host whose card cannot be sampled.
    pub fn check_metrics(&self, loaded: &LoadedSpec, index: u32) -> anyhow::Result<()> {
        if !matches!(self.source, Source::Unsampled) {
            return Ok(());
        }
        let sampled = loaded
            .spec
            .effective_metrics()
            .into_iter()
            .find(|m| card::COLUMNS.contains(&m.column.as_str()));
        match sampled {
            Some(metric) => {
                let line = loaded
                    .line_of(&metric.column)
                    .map(|l| format!(":{l}"))
                    .unwrap_or_default();
                anyhow::bail!(
                    "{}{line}: the metric {:?} is read off the card during each cell, but {}; \
                     run the ladder on a host with an NVIDIA driver (--card N), or drop the metric",
                    loaded.path.display(),
                    metric.column,
                    unsampled_why(index)
                )
            }
            None => Ok(()),
        }
    }

    /// What the runner says once, when the card cannot be sampled; `None` when it can.
    pub fn unsampled_note(&self, index: u32) -> Option<String> {
        matches!(self.source, Source::Unsampled).then(|| {
            format!(
                "runner: {}: the columns {} stay empty\n",
                unsampled_why(index),
                card::COLUMNS.join(", ")
            )
        })
    }

    /// Runs `work` (the cell) with the card sampled around it: a reading before, one every
    /// interval from a thread that sleeps in between, and one after.
    pub fn around<T>(&self, work: impl FnOnce() -> T) -> (T, CellCard) {
        match &self.source {
            Source::Card(device) => {
                sample_around(&mut nvml::NvmlProbe::new(device), self.every, work)
            }
            Source::Playback { series, .. } => sample_around(&mut series.probe(), self.every, work),
            Source::Unsampled => (work(), CellCard::default()),
        }
    }
}

fn unsampled_why(index: u32) -> String {
    format!("card {index} cannot be sampled (no NVML on this host, or no card {index})")
}

/// Loads a recorded series for `--card-playback`, naming the flag in its errors.
pub fn load_playback(path: &Path) -> anyhow::Result<Series> {
    Series::load(path).with_context(|| format!("--card-playback {}", path.display()))
}

/// Reads `probe` once, then every `every` on a thread of its own while `work` runs on this
/// one, then once more after it.
pub fn sample_around<T>(
    probe: &mut dyn CardProbe,
    every: Duration,
    work: impl FnOnce() -> T,
) -> (T, CellCard) {
    let mut card = CellCard::default();
    card.add(probe.read());
    let (stop, stopped) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let sampler = scope.spawn(move || {
            sample_until(probe, every, &stopped, &mut card);
            card
        });
        let out = work();
        drop(stop);
        let card = sampler.join().expect("the card sampler does not panic");
        (out, card)
    })
}

/// Reads at `start + k·every` until `stopped` disconnects, then once more. A reading that
/// comes late does not move the ones after it; deadlines passed while the thread could not
/// run are skipped, not made up in a burst.
fn sample_until(
    probe: &mut dyn CardProbe,
    every: Duration,
    stopped: &mpsc::Receiver<()>,
    card: &mut CellCard,
) {
    let mut next = Instant::now() + every;
    // Anything but a timeout means the cell has ended (the sender is dropped, never used).
    while let Err(RecvTimeoutError::Timeout) =
        stopped.recv_timeout(next.saturating_duration_since(Instant::now()))
    {
        card.add(probe.read());
        let now = Instant::now();
        while next <= now {
            next += every;
        }
    }
    card.add(probe.read());
}

#[cfg(test)]
mod tests;
