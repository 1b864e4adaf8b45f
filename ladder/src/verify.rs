//! Replaying a ladder file against the one legal order its start record defines.
//!
//! `replay` reads any bytes at all and returns a verdict listing every defect with its line
//! (LADDER-FORMAT.md, "Connected run"), plus the parsed cells for the analysis when the start
//! record and header could be read.

use crate::breakdown::{self, BreakdownSpec, CellRow};
use crate::ladder_file::{
    parse_timestamp, EndRecord, Fields, LineSplitter, StartRecord, ABORT_TAG, DONE_TAG,
    HARNESS_COLUMNS, ROW_COLUMN, START_TAG, WALL_COLUMN,
};
use crate::order::Order;
use crate::spec::{MetricSpec, Spec};
use crate::stop::{MetricValues, StopPlan};
use serde::Serialize;
use std::collections::HashSet;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DefectKind {
    MissingStart,
    ExtraStart,
    BadHeader,
    BadRow,
    Gap,
    Repeat,
    WrongArm,
    NonMonotoneTime,
    FailedCell,
    Aborted,
    MissingDone,
    CellsAfterDone,
    CountMismatch,
    /// Under `[card] throttle = "defect"`: a cell that ran under a power or thermal throttle.
    CardThrottle,
    BreakdownKey,
}

impl fmt::Display for DefectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let json = serde_json::to_value(self).expect("defect kind serializes");
        f.write_str(json.as_str().unwrap_or("?"))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Defect {
    pub kind: DefectKind,
    /// 1-based line number in the file.
    pub line: usize,
    pub detail: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub connected: bool,
    pub cells_expected: usize,
    pub cells_found: usize,
    pub defects: Vec<Defect>,
}

impl Verdict {
    /// The verdict in words, as `analyze verify` prints it.
    pub fn summary(&self) -> String {
        if self.connected {
            format!(
                "one connected run, {} of {} cells, no gaps, no repeats, monotone timestamps",
                self.cells_found, self.cells_expected
            )
        } else {
            format!(
                "NOT connected: {} defect(s), {} of {} cells",
                self.defects.len(),
                self.cells_found,
                self.cells_expected
            )
        }
    }
}

/// One data row of a ladder, its harness fields parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub line: usize,
    pub pass: usize,
    pub slot: usize,
    /// Index into the start record's arms.
    pub arm: usize,
    /// `ladder_row`, 0 when the engine printed one row per run.
    pub row: usize,
    pub started_us: i64,
    pub ended_us: i64,
    pub exit: String,
    /// Every field of the row, harness columns included, in header order.
    pub fields: Fields,
}

/// A ladder as read: what the analysis computes from.
#[derive(Clone, Debug)]
pub struct Ladder {
    pub start: StartRecord,
    pub columns: Vec<String>,
    /// Rows of legal cells, in file order (repeats and out-of-grid rows are left out).
    pub rows: Vec<Row>,
    pub end: Option<EndRecord>,
}

impl Ladder {
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The passes run: the done record's `passes` (`ladder/2`, a stopped ladder's look), else
    /// the order's; a file without its done record (an interrupted run) ran only up to the
    /// pass of its last cell.
    pub fn passes_run(&self) -> usize {
        let planned = self.start.order.passes;
        match &self.end {
            Some(end) => end.passes.map_or(planned, |p| p.min(planned)),
            None => self
                .rows
                .iter()
                .map(|r| r.pass + 1)
                .max()
                .unwrap_or(0)
                .min(planned),
        }
    }

    /// The analysis passes: those after the warm-up, up to the passes run.
    pub fn analysis_passes(&self) -> std::ops::Range<usize> {
        analysis_passes(self.start.warmup_passes, self.passes_run())
    }

    /// Recomputes a `[stop]` ladder's plan from its own file; `None` without `[stop]`.
    pub fn stop_plan(&self, spec: &Spec) -> Option<StopPlan> {
        stop_plan(&self.start, &self.columns, &self.rows, spec)
    }

    /// One metric's values, as written, in the passes before `passes`.
    pub fn metric_values(&self, metric: &MetricSpec, passes: usize) -> MetricValues {
        metric_values(
            &self.columns,
            &self.rows,
            self.start.arms.len(),
            metric,
            passes,
        )
    }
}

/// The analysis passes of a ladder that ran `passes` with `warmup` of them warm-up.
pub fn analysis_passes(warmup: usize, passes: usize) -> std::ops::Range<usize> {
    warmup.min(passes)..passes
}

/// `metric`'s values in the passes before `passes`, `values[pass][arm]`, read from the rows
/// as written (`None` where a cell printed nothing usable).
fn metric_values(
    columns: &[String],
    rows: &[Row],
    arms: usize,
    metric: &MetricSpec,
    passes: usize,
) -> MetricValues {
    let mut values = vec![vec![None; arms]; passes];
    if let Some(column) = columns.iter().position(|c| *c == metric.column) {
        for row in rows
            .iter()
            .filter(|r| r.pass < passes && r.row == metric.row)
        {
            values[row.pass][row.arm] = row.fields.get(column).and_then(|v| v.parse().ok());
        }
    }
    MetricValues {
        metric: metric.column.clone(),
        values,
    }
}

/// The stopping rule applied to a file's first look: the spec's metrics read from the rows
/// of those passes, as written. `None` for a ladder without `[stop]`.
fn stop_plan(
    start: &StartRecord,
    columns: &[String],
    rows: &[Row],
    spec: &Spec,
) -> Option<StopPlan> {
    let stop = spec.stop.as_ref()?;
    let first = stop.first_look();
    let metrics: Vec<MetricValues> = spec
        .effective_metrics()
        .iter()
        .map(|m| metric_values(columns, rows, start.arms.len(), m, first))
        .collect();
    let arms: Vec<String> = start.arms.iter().map(|a| a.name.clone()).collect();
    let plan = stop.plan(start.warmup_passes, start.base_index(), &arms, &metrics);
    Some(plan.within(stop, cell_seconds(columns, rows, first)))
}

/// The seconds of the cells in the passes before `passes`: their `ladder_wall_s` as written,
/// summed in file order as the runner summed them (NaN where a value does not parse).
fn cell_seconds(columns: &[String], rows: &[Row], passes: usize) -> f64 {
    let Some(wall) = columns.iter().position(|c| c == WALL_COLUMN) else {
        return f64::NAN;
    };
    rows.iter()
        .filter(|r| r.pass < passes && r.row == 0)
        .map(|r| {
            r.fields
                .get(wall)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(f64::NAN)
        })
        .sum()
}

pub struct Replay {
    pub verdict: Verdict,
    pub ladder: Option<Ladder>,
}

thread_local! {
    /// Building the CSV parser's automaton costs more than reading a whole ladder, so each
    /// thread builds one and reuses it for every file it replays.
    static SPLITTER: std::cell::RefCell<LineSplitter> = std::cell::RefCell::new(LineSplitter::default());
}

/// The fewest bytes a data row takes: seven fields, two of them RFC 3339 times.
const MIN_ROW_BYTES: usize = 64;

/// Replays a whole file.
pub fn replay(bytes: &[u8]) -> Replay {
    SPLITTER.with_borrow_mut(|splitter| replay_with(bytes, splitter))
}

fn replay_with(bytes: &[u8], splitter: &mut LineSplitter) -> Replay {
    let mut lines = split_lines(bytes);
    let Some((first, _)) = lines.next() else {
        return early(Defect::new(
            DefectKind::MissingStart,
            1,
            "the file is empty",
        ));
    };
    let start = match parse_start(first) {
        Ok(start) => start,
        Err(detail) => return early(Defect::new(DefectKind::MissingStart, 1, detail)),
    };
    let order = start.order.order();
    let header = match lines.next() {
        Some((Ok(text), _)) => parse_header(text, splitter),
        Some((Err(_), _)) => Err("line 2 is not UTF-8".to_string()),
        None => Err("the file ends after the start record: no column header".to_string()),
    };
    let (columns, harness) = match header {
        Ok(parsed) => parsed,
        Err(detail) => {
            let mut replay = early(Defect::new(DefectKind::BadHeader, 2, detail));
            replay.verdict.cells_expected = order.n_cells();
            return replay;
        }
    };
    // Sized by what the file can hold, never by what its header claims.
    let room = order.n_cells().min(bytes.len() / MIN_ROW_BYTES);
    let mut replayer = Replayer::new(&order, start, columns, splitter, room);
    replayer.harness = harness;
    let mut last_line = 2;
    for (text, number) in lines {
        last_line = number;
        match text {
            Ok(text) => replayer.line(number, text),
            Err(_) => replayer.defect(DefectKind::BadRow, number, "not UTF-8".into()),
        }
    }
    replayer.finish(last_line)
}

impl Defect {
    fn new(kind: DefectKind, line: usize, detail: impl Into<String>) -> Defect {
        Defect {
            kind,
            line,
            detail: detail.into(),
        }
    }
}

fn early(defect: Defect) -> Replay {
    Replay {
        verdict: Verdict {
            connected: false,
            cells_expected: 0,
            cells_found: 0,
            defects: vec![defect],
        },
        ladder: None,
    }
}

/// Lines with their 1-based numbers; a final empty line after the last `\n` is not a line.
fn split_lines(bytes: &[u8]) -> impl Iterator<Item = (Result<&str, ()>, usize)> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let empty = bytes.is_empty();
    body.split(|&b| b == b'\n')
        .filter(move |_| !empty)
        .enumerate()
        .map(|(i, line)| (std::str::from_utf8(line).map_err(|_| ()), i + 1))
}

fn parse_start(line: Result<&str, ()>) -> Result<StartRecord, String> {
    let line = line.map_err(|_| "line 1 is not UTF-8".to_string())?;
    let json = line
        .strip_prefix(START_TAG)
        .ok_or_else(|| format!("line 1 does not start with {:?}", START_TAG.trim_end()))?;
    let start: StartRecord =
        serde_json::from_str(json).map_err(|e| format!("start record does not parse: {e}"))?;
    start
        .check()
        .map_err(|e| format!("start record is unusable: {e}"))?;
    Ok(start)
}

/// The exit values that count as success, read from the recorded spec's `ok_exit` alone
/// (a full spec parse per file would cost more than the replay).
fn ok_exit_of(start: &StartRecord) -> Vec<String> {
    match start.spec.get("ok_exit").and_then(|v| v.as_array()) {
        Some(codes) => codes.iter().map(|c| c.to_string()).collect(),
        None => vec!["0".to_string()],
    }
}

/// Positions of the harness columns in the header, `ladder_row` last (if present).
type HarnessIndex = [usize; 7];

fn parse_header(
    text: &str,
    splitter: &mut LineSplitter,
) -> Result<(Vec<String>, HarnessIndex), String> {
    if text.starts_with('#') {
        return Err("line 2 is a record, not the column header".into());
    }
    let fields = splitter
        .split(text)
        .ok_or_else(|| "the column header does not parse as CSV".to_string())?;
    let columns: Vec<String> = fields.iter().map(str::to_string).collect();
    let mut seen = HashSet::new();
    if let Some(dup) = columns.iter().find(|c| !seen.insert(c.as_str())) {
        return Err(format!("column {dup:?} appears twice"));
    }
    let mut index = [usize::MAX; 7];
    for (slot, name) in HARNESS_COLUMNS.iter().enumerate() {
        index[slot] = columns
            .iter()
            .position(|c| c == name)
            .ok_or_else(|| format!("harness column {name:?} is missing"))?;
    }
    index[6] = columns
        .iter()
        .position(|c| c == ROW_COLUMN)
        .unwrap_or(usize::MAX);
    Ok((columns, index))
}

/// State of one replay: where the legal order says the next cell is.
struct Replayer<'o> {
    order: &'o Order,
    splitter: &'o mut LineSplitter,
    start: StartRecord,
    columns: Vec<String>,
    harness: HarnessIndex,
    defects: Vec<Defect>,
    rows: Vec<Row>,
    seen: HashSet<(usize, usize)>,
    /// Cell number `p·n + s` the next new cell should have.
    next_cell: usize,
    last_ended_us: Option<i64>,
    rows_per_cell: Option<usize>,
    current_cell_rows: usize,
    current_cell_line: usize,
    end: Option<(EndRecord, usize, bool)>,
    /// `ladder_exit` values that count as success: the spec's `ok_exit`, default `0`.
    ok_exit: Vec<String>,
    /// The spec's `[breakdown]`: its keys are checked per arm, and arms may print different
    /// numbers of rows.
    breakdown: Option<BreakdownSpec>,
}

impl<'o> Replayer<'o> {
    fn new(
        order: &'o Order,
        start: StartRecord,
        columns: Vec<String>,
        splitter: &'o mut LineSplitter,
        room: usize,
    ) -> Replayer<'o> {
        Replayer {
            order,
            splitter,
            columns,
            harness: [usize::MAX; 7],
            defects: Vec::new(),
            rows: Vec::with_capacity(room),
            seen: HashSet::with_capacity(room),
            next_cell: 0,
            last_ended_us: None,
            rows_per_cell: None,
            current_cell_rows: 0,
            current_cell_line: 0,
            end: None,
            ok_exit: ok_exit_of(&start),
            breakdown: BreakdownSpec::of_start(&start),
            start,
        }
    }

    fn defect(&mut self, kind: DefectKind, line: usize, detail: String) {
        self.defects.push(Defect { kind, line, detail });
    }

    fn line(&mut self, number: usize, text: &str) {
        if text.starts_with(START_TAG) {
            self.defect(
                DefectKind::ExtraStart,
                number,
                "a further start record: the file holds several runs (see `analyze split`)".into(),
            );
        } else if let Some(json) = text.strip_prefix(DONE_TAG) {
            self.end_record(number, json, false);
        } else if let Some(json) = text.strip_prefix(ABORT_TAG) {
            self.end_record(number, json, true);
        } else if text.starts_with('#') {
            // A comment: kept, ignored.
        } else if let Some((_, done_line, _)) = &self.end {
            let detail = format!("a row after the end record of line {done_line}");
            self.defect(DefectKind::CellsAfterDone, number, detail);
        } else {
            self.data_row(number, text);
        }
    }

    fn end_record(&mut self, number: usize, json: &str, aborted: bool) {
        if let Some((_, done_line, _)) = &self.end {
            let detail = format!("a further end record after line {done_line}");
            self.defect(DefectKind::CellsAfterDone, number, detail);
            return;
        }
        match serde_json::from_str::<EndRecord>(json) {
            Ok(record) => {
                if aborted {
                    let reason = record
                        .reason
                        .clone()
                        .unwrap_or_else(|| "no reason given".into());
                    self.defect(
                        DefectKind::Aborted,
                        number,
                        format!("the runner stopped: {reason}"),
                    );
                }
                self.check_end_time(number, &record);
                self.end = Some((record, number, aborted));
            }
            Err(e) => {
                let kind = if aborted {
                    DefectKind::Aborted
                } else {
                    DefectKind::MissingDone
                };
                self.defect(kind, number, format!("end record does not parse: {e}"));
            }
        }
    }

    fn data_row(&mut self, number: usize, text: &str) {
        let row = match self.parse_row(number, text) {
            Ok(row) => row,
            Err(detail) => return self.defect(DefectKind::BadRow, number, detail),
        };
        if row.row > 0 {
            return self.continuation_row(row);
        }
        self.close_cell();
        let (n, passes) = (self.order.n_arms(), self.order.passes);
        if row.pass >= passes || row.slot >= n {
            let detail = format!(
                "pass {} slot {} lies outside the {passes} × {n} grid",
                row.pass, row.slot
            );
            return self.defect(DefectKind::BadRow, number, detail);
        }
        if !self.seen.insert((row.pass, row.slot)) {
            let detail = format!("pass {} slot {} was already run", row.pass, row.slot);
            return self.defect(DefectKind::Repeat, number, detail);
        }
        let cell = row.pass * n + row.slot;
        if cell != self.next_cell {
            let detail = if self.next_cell < self.order.n_cells() {
                format!(
                    "expected pass {} slot {}, found pass {} slot {}",
                    self.next_cell / n,
                    self.next_cell % n,
                    row.pass,
                    row.slot
                )
            } else {
                format!(
                    "pass {} slot {} comes after the last legal cell",
                    row.pass, row.slot
                )
            };
            self.defect(DefectKind::Gap, number, detail);
        }
        self.next_cell = cell + 1;
        let legal = self.order.arm_at(row.pass, row.slot);
        if row.arm != legal {
            let detail = format!(
                "pass {} slot {} ran {:?}, the legal order runs {:?}",
                row.pass, row.slot, self.order.arms[row.arm], self.order.arms[legal]
            );
            self.defect(DefectKind::WrongArm, number, detail);
        }
        self.check_time(&row);
        if !self.ok_exit.contains(&row.exit) {
            let detail = format!("exit {} in pass {} slot {}", row.exit, row.pass, row.slot);
            self.defect(DefectKind::FailedCell, number, detail);
        }
        self.last_ended_us = Some(row.ended_us);
        self.current_cell_rows = 1;
        self.current_cell_line = number;
        self.rows.push(row);
    }

    /// A row with `ladder_row` > 0 belongs to the cell just before it.
    fn continuation_row(&mut self, row: Row) {
        let fits = self.rows.last().is_some_and(|prev| {
            self.current_cell_rows > 0
                && prev.row + 1 == row.row
                && (prev.pass, prev.slot, prev.arm) == (row.pass, row.slot, row.arm)
                && (prev.started_us, prev.ended_us) == (row.started_us, row.ended_us)
                && prev.exit == row.exit
        });
        if !fits {
            let detail = format!(
                "ladder_row {} does not continue the cell before it (pass {} slot {})",
                row.row, row.pass, row.slot
            );
            return self.defect(DefectKind::BadRow, row.line, detail);
        }
        self.current_cell_rows += 1;
        self.rows.push(row);
    }

    /// Every cell must hold as many rows as the first.
    fn close_cell(&mut self) {
        if self.current_cell_rows == 0 {
            return;
        }
        let rows = self.current_cell_rows;
        match self.rows_per_cell {
            // Under [breakdown] the keys decide, per arm (`breakdown_defects`).
            _ if self.breakdown.is_some() => {}
            None => self.rows_per_cell = Some(rows),
            Some(expected) if expected != rows => {
                let detail = format!("the cell has {rows} rows, the first cell has {expected}");
                self.defect(DefectKind::BadRow, self.current_cell_line, detail);
            }
            Some(_) => {}
        }
        self.current_cell_rows = 0;
    }

    fn check_time(&mut self, row: &Row) {
        if row.ended_us < row.started_us {
            let detail = "ladder_ended is earlier than its own ladder_started".to_string();
            self.defect(DefectKind::NonMonotoneTime, row.line, detail);
        }
        if let Some(previous) = self.last_ended_us {
            if row.started_us < previous {
                let detail = "ladder_started is earlier than the previous cell's ladder_ended";
                self.defect(DefectKind::NonMonotoneTime, row.line, detail.into());
            }
        }
    }

    /// The end record is written once the last cell has ended: a record dated before it was
    /// not written where it stands.
    fn check_end_time(&mut self, number: usize, record: &EndRecord) {
        let ended = parse_timestamp(&record.ended);
        if let (Some(ended), Some(last)) = (ended, self.last_ended_us) {
            if ended < last {
                let detail = "the end record's ended is earlier than the last cell's ladder_ended";
                self.defect(DefectKind::NonMonotoneTime, number, detail.into());
            }
        }
    }

    /// A `[stop]` ladder's expected cells from the look the stopping rule gives from its own
    /// first look: `Ok(cells)` when the done record ran to that look, `Err((cells, why))`
    /// otherwise. `None` without `[stop]`, or when the rows do not reach the first look
    /// (the defects already found say why).
    fn stopped_ladder(&self) -> Option<Result<usize, (usize, String)>> {
        self.start.order.looks.as_ref()?;
        let spec = match Spec::from_json(&self.start.spec) {
            Ok(spec) => spec,
            Err(e) => {
                return Some(Err((
                    self.order.n_cells(),
                    format!("the order has looks but {e}"),
                )))
            }
        };
        let first = spec.stop.as_ref()?.first_look();
        if self.seen.len() < first * self.order.n_arms() {
            return None;
        }
        let plan = stop_plan(&self.start, &self.columns, &self.rows, &spec)?;
        let n = self.order.n_arms();
        let cells = plan.look * n;
        let (record, _, _) = self.end.as_ref()?;
        if record.passes == Some(plan.look) && record.cells == cells {
            return Some(Ok(cells));
        }
        let ran = record
            .passes
            .map_or("no passes".to_string(), |p| format!("{p} passes"));
        Some(Err((
            cells,
            format!(
                "the done record says {ran} and {} cells; the stopping rule gives look {} ({} cells) from the first look at pass {first}",
                record.cells, plan.look, cells
            ),
        )))
    }

    fn parse_row(&mut self, number: usize, text: &str) -> Result<Row, String> {
        let fields = self
            .splitter
            .split(text)
            .ok_or("the row does not parse as CSV")?;
        if fields.len() != self.columns.len() {
            return Err(format!(
                "{} fields, the header has {} columns",
                fields.len(),
                self.columns.len()
            ));
        }
        let h = self.harness;
        let get = |i: usize| fields.get(i).unwrap_or_default();
        let number_field = |i: usize| -> Result<usize, String> {
            get(i)
                .parse()
                .map_err(|_| format!("{} is {:?}, not a count", self.columns[i], get(i)))
        };
        let time_field = |i: usize| -> Result<i64, String> {
            parse_timestamp(get(i))
                .ok_or_else(|| format!("{} is {:?}, not an RFC 3339 time", self.columns[i], get(i)))
        };
        let arm_name = get(h[2]);
        let arm = self
            .order
            .arms
            .iter()
            .position(|a| a == arm_name)
            .ok_or_else(|| format!("ladder_arm {arm_name:?} is not an arm of this ladder"))?;
        Ok(Row {
            line: number,
            pass: number_field(h[0])?,
            slot: number_field(h[1])?,
            arm,
            row: if h[6] == usize::MAX {
                0
            } else {
                number_field(h[6])?
            },
            started_us: time_field(h[3])?,
            ended_us: time_field(h[4])?,
            exit: get(h[5]).to_string(),
            fields,
        })
    }

    /// Every cell of an arm printed the arm's breakdown keys (LADDER-FORMAT.md).
    fn breakdown_defects(&mut self) {
        let Some(spec) = &self.breakdown else {
            return;
        };
        let rows = self
            .rows
            .iter()
            .filter(|r| self.ok_exit.contains(&r.exit))
            .map(|r| CellRow {
                line: r.line,
                pass: r.pass,
                slot: r.slot,
                arm: r.arm,
                fields: &r.fields,
            });
        for (line, detail) in breakdown::key_defects(spec, &self.columns, &self.order.arms, rows) {
            self.defects
                .push(Defect::new(DefectKind::BreakdownKey, line, detail));
        }
    }

    fn finish(mut self, last_line: usize) -> Replay {
        self.close_cell();
        self.breakdown_defects();
        let mut expected = self.order.n_cells();
        let found = self.seen.len();
        let stop_check = self.stopped_ladder();
        if let Some(Ok(cells)) | Some(Err((cells, _))) = &stop_check {
            expected = *cells;
        }
        let stop_mismatch = matches!(stop_check, Some(Err(_)));
        if let (Some(Err((_, detail))), Some((_, line, false))) = (stop_check, &self.end) {
            let line = *line;
            self.defect(DefectKind::CountMismatch, line, detail);
        }
        match &self.end {
            None => {
                let detail = format!("no done record: the run was interrupted after {found} cells");
                self.defect(DefectKind::MissingDone, last_line, detail);
            }
            Some((record, line, aborted)) => {
                let line = *line;
                let cells = record.cells;
                if cells != found {
                    let detail =
                        format!("the end record says {cells} cells, the file holds {found}");
                    self.defect(DefectKind::CountMismatch, line, detail);
                } else if !aborted && !stop_mismatch && found != expected {
                    let detail = format!("{found} cells, the order has {expected}");
                    self.defect(DefectKind::CountMismatch, line, detail);
                }
            }
        }
        let throttled = card_throttle::throttle_defects(&self.start, &self.columns, &self.rows);
        self.defects.extend(throttled);
        self.defects.sort_by_key(|d| d.line);
        let verdict = Verdict {
            connected: self.defects.is_empty(),
            cells_expected: expected,
            cells_found: found,
            defects: self.defects,
        };
        let ladder = Ladder {
            start: self.start,
            columns: self.columns,
            rows: self.rows,
            end: self.end.map(|(record, _, _)| record),
        };
        Replay {
            verdict,
            ladder: Some(ladder),
        }
    }
}

mod card_throttle;
