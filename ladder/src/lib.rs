//! The ladder file format (`ladder/1`, `ladder/2`) and everything that decides what a legal ladder is:
//! the spec a person writes, the legal order of its cells, the file the runner writes, and
//! the replay that proves a file is one connected run.

pub mod breakdown;
pub mod card;
pub mod ladder_file;
pub mod limits;
pub mod names;
pub mod noise_rise;
pub mod order;
pub mod pooled;
pub mod refusals;
pub mod repetitions;
/// The synthetic ladder generator, for tests and benchmarks (feature `sample`).
#[cfg(feature = "sample")]
pub mod sample;
pub mod scan;
pub mod sentence;
pub mod spec;
pub mod stats;
pub mod stop;
pub mod verify;

pub use ladder_file::{LadderWriter, Role, StartRecord};
pub use order::{Order, Scheme};
pub use spec::Spec;
pub use verify::{replay, Defect, DefectKind, Ladder, Replay, Verdict};
