//! The decode timeline: where a decode's time goes launch by launch, as it runs, with the
//! graphs and dependent launch (the eager profile, [`super::CudaBackend::start_profile`], times
//! each operation alone, so it cannot see how launches overlap).
//!
//! Kernels compiled with `ENGINE_TIMELINE` ([`super::Gpu::with_timeline`]) note, in the first block of
//! every launch, the `%globaltimer` at which its dependency wait returned (kernels/common.cuh).
//! A launch's wait returns when the launch before it has finished, so the time from one note to
//! the next is what that launch added to the chain. The host logs every launch it enqueues (a
//! graph replay logs the launches its capture logged) and matches the notes to that log one for
//! one, checking each launch's shape.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::{ensure, Context, Result};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, LaunchConfig};

use super::backend::ProfileRow;
use crate::backend::OpTime;

/// One launch as the host enqueued it.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub kernel: Arc<str>,
    /// The backend operation it belongs to (its kernel's name outside any).
    pub op: Arc<str>,
    /// Whether it is its operation's first launch; that one carries the operation's bytes.
    pub first_of_op: bool,
    pub bytes: u64,
    pub blocks: u32,
    pub threads: u32,
}

/// A launch's note: when its wait returned, and the shape it ran with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mark {
    pub ns: u64,
    pub blocks: u32,
    pub threads: u32,
}

/// A launch and what it added to the chain: from its note to the next launch's.
#[derive(Clone, Debug)]
pub struct TimedLaunch {
    pub launch: Launch,
    pub ns: u64,
}

/// The launches the host enqueued, in order, each with its operation.
#[derive(Default)]
struct LaunchLog {
    launches: Vec<Launch>,
    /// The operation being enqueued and its bytes, until its first launch takes them.
    op: Option<(Arc<str>, u64, bool)>,
    /// The launches each captured graph enqueues, by the backend's graph index.
    graphs: HashMap<usize, Vec<Launch>>,
}

impl LaunchLog {
    fn launched(&mut self, kernel: &str, cfg: &LaunchConfig) {
        let (op, bytes, first_of_op) = match self.op.as_mut() {
            Some((op, bytes, first)) => (
                op.clone(),
                std::mem::take(bytes),
                std::mem::replace(first, false),
            ),
            None => (Arc::from(kernel), 0, true),
        };
        let (g, b) = (cfg.grid_dim, cfg.block_dim);
        self.launches.push(Launch {
            kernel: Arc::from(kernel),
            op,
            first_of_op,
            bytes,
            blocks: g.0 * g.1 * g.2,
            threads: b.0 * b.1 * b.2,
        });
    }

    fn captured(&mut self, graph: usize, from: usize) {
        let launches = self.launches[from..].to_vec();
        self.graphs.insert(graph, launches);
    }

    fn replayed(&mut self, graph: usize) {
        if let Some(launches) = self.graphs.get(&graph) {
            self.launches.extend_from_slice(launches);
        }
    }
}

/// The device buffers the kernels note into, and the host's log of launches.
pub struct Timeline {
    /// Two words a note: the time, then blocks | threads << 32 (`TimelineMark`).
    marks: CudaSlice<u64>,
    count: CudaSlice<u32>,
    capacity: usize,
    log: Mutex<LaunchLog>,
}

impl Timeline {
    pub(crate) fn new(stream: &Arc<CudaStream>, capacity: usize) -> Result<Self> {
        Ok(Self {
            marks: stream
                .alloc_zeros(2 * capacity)
                .context("allocating the timeline's notes")?,
            count: stream
                .alloc_zeros(1)
                .context("allocating the timeline's count")?,
            capacity,
            log: Mutex::default(),
        })
    }

    /// The value of every module's `timeline_sink` (kernels/common.cuh): where the notes go,
    /// the counter, the capacity.
    pub(crate) fn sink(&self, stream: &Arc<CudaStream>) -> [u64; 3] {
        [
            self.marks.device_ptr(stream).0,
            self.count.device_ptr(stream).0,
            self.capacity as u64,
        ]
    }

    fn log(&self) -> MutexGuard<'_, LaunchLog> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Logs a launch just enqueued.
    pub(crate) fn launched(&self, kernel: &str, cfg: &LaunchConfig) {
        self.log().launched(kernel, cfg);
    }

    /// The launches from now until [`Timeline::end_op`] belong to operation `label`, which
    /// must move `bytes` (its first launch carries them).
    pub(crate) fn begin_op(&self, label: &str, bytes: u64) {
        self.log().op = Some((Arc::from(label), bytes, true));
    }

    pub(crate) fn end_op(&self) {
        self.log().op = None;
    }

    /// How many launches are logged: where a capture starts.
    pub(crate) fn logged(&self) -> usize {
        self.log().launches.len()
    }

    /// Keeps the launches logged since `from` as what graph `graph` enqueues on each replay.
    pub(crate) fn captured(&self, graph: usize, from: usize) {
        self.log().captured(graph, from);
    }

    /// Logs a replay of graph `graph`.
    pub(crate) fn replayed(&self, graph: usize) {
        self.log().replayed(graph);
    }

    /// Forgets every note and logged launch (the graphs' lists stay): the timeline starts with
    /// the next launch.
    pub fn reset(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        stream
            .memset_zeros(&mut self.count)
            .context("resetting the timeline's count")?;
        self.log().launches.clear();
        Ok(())
    }

    /// Every launch since [`Timeline::reset`] but the last, with what it added to the chain.
    /// Waits for the queued work.
    pub fn read(&self, stream: &Arc<CudaStream>) -> Result<Vec<TimedLaunch>> {
        let count = stream
            .clone_dtoh(&self.count)
            .context("reading the timeline's count")?[0] as usize;
        ensure!(count <= self.capacity, "the timeline holds {} launches and {count} were noted: reset it closer to the launches to time, or give it more room", self.capacity);
        let words = stream
            .clone_dtoh(&self.marks.slice(..2 * count))
            .context("reading the timeline's notes")?;
        let marks: Vec<Mark> = words
            .chunks_exact(2)
            .map(|w| Mark {
                ns: w[0],
                blocks: w[1] as u32,
                threads: (w[1] >> 32) as u32,
            })
            .collect();
        attribute(&marks, &self.log().launches)
    }

    /// What [`Timeline::read`] gives, per kernel: its launches and the seconds they added to
    /// the chain (the op clock of `engine bench --rows ops`).
    pub fn kernel_times(&self, stream: &Arc<CudaStream>) -> Result<Vec<OpTime>> {
        Ok(by_kernel(&self.read(stream)?)
            .into_iter()
            .map(|r| OpTime {
                name: r.label,
                calls: r.calls,
                seconds: r.ms * 1e-3,
            })
            .collect())
    }
}

/// Matches the notes to the launches logged, one for one and shape for shape, and gives each
/// launch but the last the time to the next note.
pub fn attribute(marks: &[Mark], launches: &[Launch]) -> Result<Vec<TimedLaunch>> {
    ensure!(
        marks.len() == launches.len(),
        "{} launches were enqueued and {} noted: every kernel's first block must reach pdl_begin once (kernels/common.cuh)",
        launches.len(),
        marks.len()
    );
    for (i, (m, l)) in marks.iter().zip(launches).enumerate() {
        ensure!(
            (m.blocks, m.threads) == (l.blocks, l.threads),
            "note {i} came from a launch of {} blocks of {} threads, but launch {i} is {} ({} blocks of {}): the notes are out of order",
            m.blocks,
            m.threads,
            l.kernel,
            l.blocks,
            l.threads
        );
    }
    marks
        .windows(2)
        .zip(launches)
        .map(|(w, l)| {
            ensure!(
                w[1].ns >= w[0].ns,
                "launch {} noted before the launch before it",
                l.kernel
            );
            Ok(TimedLaunch {
                launch: l.clone(),
                ns: w[1].ns - w[0].ns,
            })
        })
        .collect()
}

/// One row per value of `key` (an operation, a kernel), longest first: `calls` counts the
/// launches for which `counts` holds.
fn rows(
    timed: &[TimedLaunch],
    key: impl Fn(&Launch) -> &str,
    counts: impl Fn(&Launch) -> bool,
) -> Vec<ProfileRow> {
    let mut by_key: HashMap<&str, ProfileRow> = HashMap::new();
    for t in timed {
        let label = key(&t.launch);
        let row = by_key.entry(label).or_insert_with(|| ProfileRow {
            label: label.to_string(),
            ..Default::default()
        });
        row.calls += counts(&t.launch) as u64;
        row.ms += t.ns as f64 * 1e-6;
        row.bytes += t.launch.bytes;
    }
    let mut rows: Vec<ProfileRow> = by_key.into_values().collect();
    rows.sort_by(|a, b| b.ms.total_cmp(&a.ms).then_with(|| a.label.cmp(&b.label)));
    rows
}

/// Per operation: its launches' times summed, each call counted once, its bytes.
pub fn by_op(timed: &[TimedLaunch]) -> Vec<ProfileRow> {
    rows(timed, |l| &l.op, |l| l.first_of_op)
}

/// Per kernel: its launches' times summed, each launch counted.
pub fn by_kernel(timed: &[TimedLaunch]) -> Vec<ProfileRow> {
    let mut rows = rows(timed, |l| &l.kernel, |_| true);
    rows.iter_mut().for_each(|r| r.bytes = 0);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(kernel: &str, op: &str, first_of_op: bool, bytes: u64, blocks: u32) -> Launch {
        Launch {
            kernel: kernel.into(),
            op: op.into(),
            first_of_op,
            bytes,
            blocks,
            threads: 128,
        }
    }

    fn marks(times: &[u64], launches: &[Launch]) -> Vec<Mark> {
        times
            .iter()
            .zip(launches)
            .map(|(&ns, l)| Mark {
                ns,
                blocks: l.blocks,
                threads: l.threads,
            })
            .collect()
    }

    #[test]
    fn each_launch_gets_the_time_to_the_next_note() {
        let l = [
            launch("gemv", "proj", true, 100, 64),
            launch("router", "moe", true, 50, 16),
            launch("down", "moe", false, 0, 32),
            launch("gemv", "proj", true, 100, 64),
        ];
        let timed = attribute(&marks(&[1_000, 4_000, 4_500, 9_500], &l), &l).unwrap();
        assert_eq!(
            timed.iter().map(|t| t.ns).collect::<Vec<_>>(),
            [3_000, 500, 5_000],
            "the last launch has no next note"
        );
        let ops = by_op(&timed);
        assert_eq!(
            (ops[0].label.as_str(), ops[0].calls, ops[0].bytes),
            ("moe", 1, 50),
            "two launches of one moe call"
        );
        assert!((ops[0].ms - 0.0055).abs() < 1e-12);
        assert_eq!(
            (ops[1].label.as_str(), ops[1].calls, ops[1].bytes),
            ("proj", 1, 100)
        );
        let kernels = by_kernel(&timed);
        assert_eq!(
            kernels
                .iter()
                .map(|r| (r.label.as_str(), r.calls))
                .collect::<Vec<_>>(),
            [("down", 1), ("gemv", 1), ("router", 1)]
        );
    }

    #[test]
    fn a_missing_or_foreign_note_is_an_error() {
        let l = [launch("a", "a", true, 0, 8), launch("b", "b", true, 0, 16)];
        let missing = attribute(&marks(&[10], &l[..1]), &l)
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("2 launches were enqueued and 1 noted"),
            "{missing}"
        );
        let swapped = [
            Mark {
                ns: 10,
                blocks: 16,
                threads: 128,
            },
            Mark {
                ns: 20,
                blocks: 8,
                threads: 128,
            },
        ];
        let err = attribute(&swapped, &l).unwrap_err().to_string();
        assert!(
            err.contains("note 0 came from a launch of 16 blocks") && err.contains("launch 0 is a"),
            "{err}"
        );
    }

    #[test]
    fn launches_take_their_operation_and_graphs_replay_theirs() {
        let cfg = |blocks: u32| LaunchConfig {
            grid_dim: (blocks, 2, 1),
            block_dim: (64, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut log = LaunchLog::default();
        log.launched("embed", &cfg(1));
        log.op = Some(("moe".into(), 300, true));
        let from = log.launches.len();
        log.launched("moe_router", &cfg(4));
        log.launched("moe_down", &cfg(8));
        log.op = None;
        log.captured(0, from);
        log.replayed(0);
        log.replayed(7);
        let seen: Vec<_> = log
            .launches
            .iter()
            .map(|l| {
                (
                    &*l.kernel,
                    &*l.op,
                    l.first_of_op,
                    l.bytes,
                    l.blocks,
                    l.threads,
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("embed", "embed", true, 0, 2, 64),
                ("moe_router", "moe", true, 300, 8, 64),
                ("moe_down", "moe", false, 0, 16, 64),
                ("moe_router", "moe", true, 300, 8, 64),
                ("moe_down", "moe", false, 0, 16, 64),
            ],
            "a replay repeats its capture's launches; an unknown graph adds none"
        );
    }
}
