//! Loading ladder files into one polars frame.
//!
//! Files are replayed in parallel (one `ladder::replay` each); the numeric cells every
//! statistic needs go into a single long frame, one row per (file, series, cell), built in
//! bulk from plain vectors. A *series* is one numeric column of one file read at one
//! `ladder_row`: a metric, or the rounds or time column of the round split.

use crate::breakdown_cells::BreakdownCells;
use crate::identity::{self, Identity};
use crate::time_use::{self, TimeUse};
use crate::variance::{self, VarianceComponents};
use crate::witness::{self, Witness};
use anyhow::bail;
use ladder::ladder_file::{EndRecord, Fields, StartRecord};
use ladder::spec::{MetricSpec, Spec};
use ladder::{Ladder, Verdict};
use polars::prelude::*;
use rayon::prelude::*;
use std::path::Path;

pub const FILE: &str = "file";
pub const SERIES: &str = "series";
pub const PASS: &str = "pass";
pub const SLOT: &str = "slot";
pub const ARM: &str = "arm";
pub const VALUE: &str = "value";
/// True in the analysis passes (after the warm-up).
pub const ANALYSIS: &str = "analysis";
/// True in the base arm's cells.
pub const BASE: &str = "base";

/// What one series of a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesKind {
    /// The file's `n`-th effective metric.
    Metric(usize),
    /// The split's rounds column.
    Rounds,
    /// The split's time column.
    Time,
    /// The split's energy column (`[split] energy`).
    Energy,
}

/// One file as read: its verdict and, when the start record and header parsed, its ladder.
pub struct LoadedFile {
    /// The path as given on the command line.
    pub path: String,
    pub verdict: Verdict,
    pub ladder: Option<LadderInfo>,
}

/// What the report needs from a parsed ladder besides its numbers.
pub struct LadderInfo {
    pub start: StartRecord,
    pub spec: Spec,
    pub end: Option<EndRecord>,
    /// The passes run (`ladder::Ladder::passes_run`).
    pub passes_run: usize,
    pub metrics: Vec<MetricSpec>,
    /// Whether statistics are computed: the file is connected, or defects are allowed.
    pub analyzed: bool,
    /// `series[i]` is what frame series `i` of this file holds.
    pub series: Vec<SeriesKind>,
    /// The string-valued readings, taken while the rows are at hand (rows are not kept).
    pub identity: Option<Identity>,
    pub witness: Option<Witness>,
    /// The breakdown rows (`[breakdown]`), when statistics are computed.
    pub breakdown: Option<BreakdownCells>,
    /// Where the cells' device time went; `None` when no statistics are computed.
    pub time_use: Option<TimeUse>,
    /// The variance components: `Ok(None)` without repetition rows, `Err` why they could not
    /// be read.
    pub variance: Result<Option<VarianceComponents>, String>,
}

impl LadderInfo {
    pub fn n_arms(&self) -> usize {
        self.start.arms.len()
    }

    pub fn analysis_passes(&self) -> std::ops::Range<usize> {
        ladder::verify::analysis_passes(self.start.warmup_passes, self.passes_run)
    }

    /// A `[stop]` ladder cut off before its first look: Stein's rule never ran, so it is read
    /// as a fixed ladder of the passes it ran (METHOD.md "Precision stopping").
    pub fn cut_before_first_look(&self) -> bool {
        self.stop_looks()
            .and_then(|looks| looks.first().copied())
            .is_some_and(|first| self.passes_run < first)
    }

    /// The looks of a `[stop]` ladder, as the start record (or else the spec) gives them.
    pub fn stop_looks(&self) -> Option<Vec<usize>> {
        self.start
            .order
            .looks
            .clone()
            .or_else(|| self.spec.stop.as_ref().map(|s| s.looks.clone()))
    }
}

/// All files, and the frame of their numeric cells.
pub struct Loaded {
    pub files: Vec<LoadedFile>,
    pub cells: DataFrame,
}

/// One file's rows of the frame, before they are joined into it.
#[derive(Default)]
struct Part {
    series: Vec<u32>,
    pass: Vec<u32>,
    slot: Vec<u32>,
    arm: Vec<u32>,
    value: Vec<f64>,
    analysis: Vec<bool>,
    base: Vec<bool>,
}

/// Reads and replays every file in parallel and builds the frame. A file that cannot be
/// read, whose recorded spec is unusable, or whose metric cells are not numbers is an error
/// naming it; a file that is not connected is loaded with its defects (and its cells only
/// when `allow_defects`).
pub fn load(paths: &[impl AsRef<Path> + Sync], allow_defects: bool) -> anyhow::Result<Loaded> {
    let parts: Vec<(LoadedFile, Part)> = paths
        .par_iter()
        .map(|p| load_file(p.as_ref(), allow_defects))
        .collect::<anyhow::Result<_>>()?;
    let rows: usize = parts.iter().map(|(_, part)| part.value.len()).sum();
    let mut all = Part {
        series: Vec::with_capacity(rows),
        pass: Vec::with_capacity(rows),
        slot: Vec::with_capacity(rows),
        arm: Vec::with_capacity(rows),
        value: Vec::with_capacity(rows),
        analysis: Vec::with_capacity(rows),
        base: Vec::with_capacity(rows),
    };
    let mut file = Vec::with_capacity(rows);
    for (id, (_, part)) in parts.iter().enumerate() {
        file.extend(std::iter::repeat_n(id as u32, part.value.len()));
        all.series.extend_from_slice(&part.series);
        all.pass.extend_from_slice(&part.pass);
        all.slot.extend_from_slice(&part.slot);
        all.arm.extend_from_slice(&part.arm);
        all.value.extend_from_slice(&part.value);
        all.analysis.extend_from_slice(&part.analysis);
        all.base.extend_from_slice(&part.base);
    }
    let columns = vec![
        Column::new(FILE.into(), file),
        Column::new(SERIES.into(), all.series),
        Column::new(PASS.into(), all.pass),
        Column::new(SLOT.into(), all.slot),
        Column::new(ARM.into(), all.arm),
        Column::new(VALUE.into(), all.value),
        Column::new(ANALYSIS.into(), all.analysis),
        Column::new(BASE.into(), all.base),
    ];
    let cells = DataFrame::new(rows, columns)?;
    Ok(Loaded {
        files: parts.into_iter().map(|(f, _)| f).collect(),
        cells,
    })
}

fn load_file(path: &Path, allow_defects: bool) -> anyhow::Result<(LoadedFile, Part)> {
    let shown = path.display().to_string();
    let bytes = ladder::limits::read_ladder_file(path).map_err(anyhow::Error::msg)?;
    let replay = ladder::replay(&bytes);
    drop(bytes);
    let mut part = Part::default();
    let ladder = match replay.ladder {
        Some(ladder) => Some(read_ladder(
            &shown,
            ladder,
            replay.verdict.connected || allow_defects,
            !replay.verdict.connected,
            &mut part,
        )?),
        None => None,
    };
    Ok((
        LoadedFile {
            path: shown,
            verdict: replay.verdict,
            ladder,
        },
        part,
    ))
}

/// Reads what the report needs from a parsed ladder; its rows go into `part` (when
/// `analyzed`) and are then dropped.
fn read_ladder(
    shown: &str,
    ladder: Ladder,
    analyzed: bool,
    with_defects: bool,
    part: &mut Part,
) -> anyhow::Result<LadderInfo> {
    let spec = Spec::from_json(&ladder.start.spec).map_err(|e| {
        anyhow::anyhow!("{shown}: {e}; the start record's `spec` must be the ladder spec as JSON (rerun the ladder with a current runner)")
    })?;
    let metrics = spec.effective_metrics();
    let mut series: Vec<SeriesKind> = (0..metrics.len()).map(SeriesKind::Metric).collect();
    if spec.split.is_some() {
        series.extend([SeriesKind::Rounds, SeriesKind::Time]);
    }
    if spec.split.as_ref().is_some_and(|s| s.energy.is_some()) {
        series.push(SeriesKind::Energy);
    }
    let (mut identity, mut time_use, mut variance) = (None, None, Ok(None));
    if analyzed {
        fill(shown, &ladder, &spec, &metrics, &series, with_defects, part)?;
        let passes = ladder.analysis_passes();
        identity = identity::read(shown, &spec, &ladder, passes.clone())?;
        time_use = Some(time_use::time_use(&ladder));
        variance = variance::components(&ladder, &metrics, passes);
    }
    let witness = witness::read(&ladder);
    let breakdown = analyzed
        .then(|| BreakdownCells::read(&spec, &ladder))
        .flatten();
    let passes_run = ladder.passes_run();
    let Ladder { mut start, end, .. } = ladder;
    start.spec = serde_json::Value::Null;
    Ok(LadderInfo {
        start,
        spec,
        end,
        passes_run,
        metrics,
        analyzed,
        series,
        identity,
        witness,
        breakdown,
        time_use,
        variance,
    })
}

/// Appends the file's numeric cells, one series after the other, in file order.
fn fill(
    shown: &str,
    ladder: &Ladder,
    spec: &Spec,
    metrics: &[MetricSpec],
    series: &[SeriesKind],
    with_defects: bool,
    part: &mut Part,
) -> anyhow::Result<()> {
    let base = ladder.start.base_index();
    let analysis = ladder.analysis_passes();
    for (id, kind) in series.iter().enumerate() {
        let (name, row) = match kind {
            SeriesKind::Metric(i) => (metrics[*i].column.as_str(), metrics[*i].row),
            SeriesKind::Rounds => (spec.split.as_ref().map_or("", |s| s.rounds.as_str()), 0),
            SeriesKind::Time => (spec.split.as_ref().map_or("", |s| s.time.as_str()), 0),
            SeriesKind::Energy => (
                spec.split
                    .as_ref()
                    .and_then(|s| s.energy.as_deref())
                    .unwrap_or(""),
                0,
            ),
        };
        let Some(column) = ladder.column(name) else {
            bail!(
                "{shown}: the spec names column {name:?}, which the file's header lacks; \
                 correct the spec's [[metric]]/[split] column to one of: {}",
                ladder.columns.join(", ")
            );
        };
        for r in ladder.rows.iter().filter(|r| r.row == row) {
            let value = match number(shown, r.line, name, &r.fields, column) {
                Ok(value) => value,
                // In a file read with its defects, a failed cell's value is a missing cell:
                // the defects already say why it failed.
                Err(_) if with_defects => continue,
                Err(e) => return Err(e),
            };
            part.series.push(id as u32);
            part.pass.push(r.pass as u32);
            part.slot.push(r.slot as u32);
            part.arm.push(r.arm as u32);
            part.value.push(value);
            part.analysis.push(analysis.contains(&r.pass));
            part.base.push(r.arm == base);
        }
    }
    Ok(())
}

fn number(
    shown: &str,
    line: usize,
    name: &str,
    fields: &Fields,
    column: usize,
) -> anyhow::Result<f64> {
    let text = fields.get(column).unwrap_or_default();
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => bail!(
            "{shown}:{line}: column {name} is {text:?}, not a positive number; \
             a metric must be a positive number in every cell (fix the engine's output or the spec's column)"
        ),
    }
}

/// One series of one file as a dense grid: `value(p, a)` for pass `p`, arm `a`.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    pub passes: usize,
    pub arms: usize,
    /// Pass-major; NaN where the cell is missing (a file read with its defects).
    pub values: Vec<f64>,
    /// The slot each arm ran in, pass-major; `u32::MAX` where missing.
    pub slots: Vec<u32>,
}

impl Grid {
    pub fn new(passes: usize, arms: usize) -> Grid {
        Grid {
            passes,
            arms,
            values: vec![f64::NAN; passes * arms],
            slots: vec![u32::MAX; passes * arms],
        }
    }

    pub fn value(&self, pass: usize, arm: usize) -> f64 {
        self.values[pass * self.arms + arm]
    }

    pub fn slot(&self, pass: usize, arm: usize) -> u32 {
        self.slots[pass * self.arms + arm]
    }
}

/// The frame cut into grids: `grids[file][series]`. Files without statistics get none.
pub fn grids(loaded: &Loaded) -> anyhow::Result<Vec<Vec<Grid>>> {
    let mut grids: Vec<Vec<Grid>> = loaded
        .files
        .iter()
        .map(|f| match &f.ladder {
            Some(info) if info.analyzed => {
                let shape = (info.start.order.passes, info.n_arms());
                info.series
                    .iter()
                    .map(|_| Grid::new(shape.0, shape.1))
                    .collect()
            }
            _ => Vec::new(),
        })
        .collect();
    let df = &loaded.cells;
    let u32s = |name: &str| -> anyhow::Result<&[u32]> { Ok(df.column(name)?.u32()?.cont_slice()?) };
    let (file, series, pass, slot, arm) = (
        u32s(FILE)?,
        u32s(SERIES)?,
        u32s(PASS)?,
        u32s(SLOT)?,
        u32s(ARM)?,
    );
    let value = df.column(VALUE)?.f64()?.cont_slice()?;
    for i in 0..value.len() {
        let grid = &mut grids[file[i] as usize][series[i] as usize];
        let at = pass[i] as usize * grid.arms + arm[i] as usize;
        grid.values[at] = value[i];
        grid.slots[at] = slot[i];
    }
    Ok(grids)
}

/// The base spread of every (file, series) over the analysis passes (method 1's figure,
/// reported as drift), computed by polars: `spreads[file][series]`, NaN where there is none.
pub fn base_spreads(loaded: &Loaded) -> anyhow::Result<Vec<Vec<f64>>> {
    let mut spreads: Vec<Vec<f64>> = loaded
        .files
        .iter()
        .map(|f| vec![f64::NAN; f.ladder.as_ref().map_or(0, |l| l.series.len())])
        .collect();
    let cells = &loaded.cells;
    let in_base = cells.column(ANALYSIS)?.bool()? & cells.column(BASE)?.bool()?;
    for group in cells.filter(&in_base)?.partition_by([FILE, SERIES], true)? {
        let key = |name: &str| -> anyhow::Result<Option<usize>> {
            Ok(group.column(name)?.u32()?.get(0).map(|v| v as usize))
        };
        let (Some(f), Some(s)) = (key(FILE)?, key(SERIES)?) else {
            continue;
        };
        let values = group.column(VALUE)?.f64()?;
        let (sd, mean) = (values.std(1), values.mean());
        spreads[f][s] = sd
            .zip(mean)
            .map_or(f64::NAN, |(sd, mean)| 100.0 * sd / mean);
    }
    Ok(spreads)
}
