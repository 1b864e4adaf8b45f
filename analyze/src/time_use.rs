//! Where a ladder's device time goes (METHOD.md "Where a ladder's time goes"): each cell's
//! wall time, split by the engine's `startup_seconds` and `timed_seconds`, summed per arm into
//! its efficiency, and over every cell into the ladder's device seconds.

use ladder::ladder_file::WALL_COLUMN;
use ladder::repetitions::{STARTUP_COLUMN, TIMED_COLUMN};
use ladder::Ladder;
use serde::Serialize;

/// One cell's times, in seconds, from its summary row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CellTime {
    pub pass: usize,
    pub arm: usize,
    pub wall: f64,
    pub startup: Option<f64>,
    pub timed: Option<f64>,
}

/// One arm's sums over every cell it ran, warm-up included.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArmTime {
    pub arm: String,
    pub cells: usize,
    pub wall_s: f64,
    /// `None` unless every cell of the arm printed both columns.
    pub startup_s: Option<f64>,
    pub timed_s: Option<f64>,
    /// `timed_s / wall_s`: the share of the arm's device time spent measuring.
    pub efficiency: Option<f64>,
    pub startup_share: Option<f64>,
}

/// The device time of a ladder and of each of its arms.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimeUse {
    /// `Σ w` over every cell.
    pub device_seconds: f64,
    pub arms: Vec<ArmTime>,
    /// `Σ w` over each pass's cells, indexed by pass.
    #[serde(skip)]
    pub pass_seconds: Vec<f64>,
}

/// Every cell's times, in file order. The wall is `ladder_wall_s` where the file has it
/// (the runner's own clock), else the cell's timestamps.
pub fn cells(ladder: &Ladder) -> Vec<CellTime> {
    let wall = ladder.column(WALL_COLUMN);
    let (startup, timed) = (ladder.column(STARTUP_COLUMN), ladder.column(TIMED_COLUMN));
    let seconds = |row: &ladder::verify::Row, column: Option<usize>| {
        let text = row.fields.get(column?)?;
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    ladder
        .rows
        .iter()
        .filter(|r| r.row == 0)
        .map(|r| CellTime {
            pass: r.pass,
            arm: r.arm,
            wall: seconds(r, wall).unwrap_or((r.ended_us - r.started_us) as f64 / 1e6),
            startup: seconds(r, startup),
            timed: seconds(r, timed),
        })
        .collect()
}

/// The sums per arm (in the start record's order) and over the ladder.
pub fn time_use(ladder: &Ladder) -> TimeUse {
    let cells = cells(ladder);
    let arms = ladder
        .start
        .arms
        .iter()
        .enumerate()
        .map(|(a, record)| arm_time(&record.name, cells.iter().filter(|c| c.arm == a)))
        .collect();
    let passes = cells.iter().map(|c| c.pass + 1).max().unwrap_or(0);
    let mut pass_seconds = vec![0.0; passes];
    for c in &cells {
        pass_seconds[c.pass] += c.wall;
    }
    TimeUse {
        device_seconds: cells.iter().map(|c| c.wall).sum(),
        arms,
        pass_seconds,
    }
}

fn arm_time<'a>(name: &str, cells: impl Iterator<Item = &'a CellTime>) -> ArmTime {
    let (mut n, mut wall) = (0, 0.0);
    let (mut startup, mut timed) = (Some(0.0), Some(0.0));
    for c in cells {
        n += 1;
        wall += c.wall;
        startup = startup.zip(c.startup).map(|(s, v)| s + v);
        timed = timed.zip(c.timed).map(|(s, v)| s + v);
    }
    // An arm with no cells has no sums to share.
    let (startup, timed) = match n {
        0 => (None, None),
        _ => (startup, timed),
    };
    let share = |part: Option<f64>| part.map(|p| p / wall).filter(|s| s.is_finite());
    ArmTime {
        arm: name.to_string(),
        cells: n,
        wall_s: wall,
        startup_s: startup,
        timed_s: timed,
        efficiency: share(timed),
        startup_share: share(startup),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An arm that ran no cell (a file cut off before its first) has no sums, not sums of 0.
    #[test]
    fn an_arm_without_cells_has_no_times() {
        let none = arm_time("late", std::iter::empty());
        assert_eq!(
            (none.cells, none.startup_s, none.timed_s, none.efficiency),
            (0, None, None, None)
        );
    }
}
