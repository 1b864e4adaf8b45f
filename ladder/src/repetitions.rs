//! The columns `engine bench --rows reps` adds to every row of a cell (docs/METHOD.md "Where a
//! ladder's time goes", "Variance components"): the summary row, `rep` 0, carries the cell's
//! start-up and the sum of its timed repetitions; each repetition row, `rep` 1…R, its own.

/// Seconds from the process's start to its first timed repetition.
pub const STARTUP_COLUMN: &str = "startup_seconds";
/// Seconds of timed repetitions: all of them on the summary row, one on a repetition row.
pub const TIMED_COLUMN: &str = "timed_seconds";
/// The repetition's number, 1…R on a repetition row and 0 on the summary row.
pub const REP_COLUMN: &str = "rep";
