//! Running a whole ladder: every cell in the legal order, each row durable before the next
//! cell starts, and an abort record naming the reason when anything stops the run early.

use crate::binary::Binary;
use crate::card_sampler::{CardSampler, CellCard};
use crate::cell::{self, CellRun, Cut, Exit, Launch, Pad, StdoutTo};
use crate::cell_env::CellEnvs;
use crate::output::{self, CellOutput};
use crate::progress::Progress;
use crate::witness::Witness;
use anyhow::Context;
use chrono::Utc;
use ladder::ladder_file::{
    timestamp, ArmRecord, BinaryRecord, EndRecord, HostRecord, LadderWriter, OrderRecord,
    StartRecord, WitnessSide, FORMAT, HARNESS_COLUMNS, ROW_COLUMN, USAGE_COLUMNS, WALL_COLUMN,
};
use ladder::order::{Cell, Order};
use ladder::spec::{LoadedSpec, MetricSpec, OutputMode, Spec, StdoutMode, StopSpec};
use ladder::stop::{MetricValues, StopPlan};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What `runner run` was asked to do.
pub struct RunOptions {
    pub spec: PathBuf,
    pub tag: Option<String>,
    pub out_dir: PathBuf,
    pub card: u32,
    /// A recorded series played back instead of the card (`--card-playback`).
    pub card_playback: Option<PathBuf>,
    /// How an abort for an exit status says to accept that status.
    pub exit_fix: ExitFix,
}

/// Where the user says which exit codes count as success.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitFix {
    /// In the spec: `ok_exit = [0, 1]` (`runner run`).
    SpecKey,
    /// On the command line: `--ok-exit 0,1` (`runner ab`).
    AbFlag,
}

impl ExitFix {
    /// The fix that makes `codes` count as success.
    fn words(self, codes: &[i32]) -> String {
        let codes: Vec<String> = codes.iter().map(i32::to_string).collect();
        match self {
            ExitFix::SpecKey => format!("add ok_exit = [{}] to the spec", codes.join(", ")),
            ExitFix::AbFlag => format!("rerun with --ok-exit {}", codes.join(",")),
        }
    }
}

/// How a ladder ended.
pub struct Outcome {
    pub path: PathBuf,
    pub cells: usize,
    /// The abort reason, `None` for a complete ladder.
    pub aborted: Option<String>,
    /// The spec's first metric, whose values the summary holds.
    pub metric: String,
    pub summary: Vec<ArmSummary>,
    /// `[stop]`: where the first look put the end, and which quantity did.
    pub plan: Option<StopPlan>,
    /// The plan in words, at the mean time a pass took.
    pub plan_words: Option<String>,
    /// Every metric's values by pass and arm, for a reading without `analyze`.
    pub values: Vec<MetricValues>,
    /// The metrics of `values`, in the same order.
    pub metrics: Vec<MetricSpec>,
    pub base: usize,
    pub warmup: usize,
    /// The spec's `[stop]`, whose first look's spread the reading uses.
    pub stop: Option<StopSpec>,
}

/// One arm's cells, for the summary table.
#[derive(Default, Clone)]
pub struct ArmSummary {
    pub name: String,
    pub walls: Vec<f64>,
    pub metric: Vec<f64>,
}

/// The order a spec asks for.
pub fn order_of(spec: &Spec) -> Order {
    let names = spec.arms.iter().map(|a| a.name.clone()).collect();
    Order::new(spec.order, names, spec.passes(), spec.seed)
}

/// The default tag: the UTC start time, so that repeated runs never collide.
pub fn default_tag() -> String {
    Utc::now().format("%Y%m%dT%H%M%SZ").to_string()
}

/// Each arm's full argv and its resolved executable, in declared order.
pub struct ArmArgv {
    pub argv: Vec<String>,
    pub binary: Binary,
}

/// Resolves and hashes every arm's executable; the error names the arm.
pub fn arm_argvs(spec: &Spec) -> anyhow::Result<Vec<ArmArgv>> {
    spec.arms
        .iter()
        .map(|arm| {
            let argv = spec.argv_of(arm);
            let binary =
                Binary::resolve(&argv[0]).with_context(|| format!("arm {:?}", arm.name))?;
            Ok(ArmArgv { argv, binary })
        })
        .collect()
}

pub fn run_ladder(options: &RunOptions) -> anyhow::Result<Outcome> {
    let loaded = Spec::load(&options.spec)?;
    crate::preflight::programs(&loaded)?;
    let binary = Binary::resolve(&loaded.spec.default_program())?;
    let arms = arm_argvs(&loaded.spec)?;
    let order = order_of(&loaded.spec);
    let witness = Witness::open(options.card);
    let sampler = CardSampler::new(
        &witness,
        options.card_playback.as_deref(),
        loaded.spec.sample_every(),
    )?;
    sampler.check_metrics(&loaded, options.card)?;
    let tag = options.tag.clone().unwrap_or_else(default_tag);
    std::fs::create_dir_all(&options.out_dir).with_context(|| {
        format!(
            "cannot create the output folder {}",
            options.out_dir.display()
        )
    })?;
    let path = options
        .out_dir
        .join(format!("{}_{tag}.csv", loaded.spec.name));
    crate::preflight::file_names(&tag, &path)?;
    crate::reaper::become_subreaper().context(
        "cannot make the runner a subreaper, which it needs to end what cells leave behind",
    )?;
    let mut start = start::start_record(&loaded, &order, &binary, &arms, &witness, &tag);
    start.card = sampler.playback_record().or(start.card);
    let writer = LadderWriter::create(&path, &start)?;
    let log_path = path.with_extension("stderr.log");
    let log = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(&log_path)
        .with_context(|| {
            format!(
                "cannot create the side log {} (remove it or pick another --tag)",
                log_path.display()
            )
        })?;
    if let Some(note) = sampler.unsampled_note(options.card) {
        eprint!("{note}");
        let _ = (&log).write_all(note.as_bytes());
    }
    let signal = crate::stop_signal::catch()?;
    let parent: BTreeMap<String, String> = std::env::vars().collect();
    let arm_envs = loaded.spec.arms.iter().map(|a| a.env.clone()).collect();
    let argv_bytes = arms
        .iter()
        .map(|a| crate::cell_env::argv_bytes(&a.binary.path.to_string_lossy(), &a.argv))
        .collect();
    let envs = CellEnvs::new(
        parent,
        loaded.spec.env.clone(),
        arm_envs,
        argv_bytes,
        &order,
    );
    let values = loaded
        .spec
        .effective_metrics()
        .into_iter()
        .map(|m| MetricValues {
            metric: m.column,
            values: vec![vec![None; order.n_arms()]; order.passes],
        })
        .collect();
    let mut run = Run {
        loaded: &loaded,
        order: &order,
        arms: &arms,
        witness: &witness,
        sampler: &sampler,
        envs,
        writer: Some(writer),
        log,
        log_path,
        signal,
        exit_fix: options.exit_fix,
        engine_columns: None,
        extra_said: Vec::new(),
        checks: Default::default(),
        cells: 0,
        summary: order
            .arms
            .iter()
            .map(|name| ArmSummary {
                name: name.clone(),
                ..Default::default()
            })
            .collect(),
        progress: Progress::new(order.n_cells()),
        values,
        plan: None,
        base_walls: vec![None; order.passes],
        cell_seconds: 0.0,
    };
    let mut aborted = run.setup().err();
    if aborted.is_none() {
        aborted = run.all_cells().err();
    }
    run.progress.finish();
    run.cleanup();
    let passes_run = run.cells / order.n_arms();
    let stopped = run
        .plan
        .as_ref()
        .filter(|_| aborted.is_none())
        .map(|p| p.stopped.as_str().to_string());
    let end = EndRecord {
        ended: timestamp(Utc::now()),
        cells: run.cells,
        reason: aborted.clone(),
        passes: Some(passes_run),
        stopped,
    };
    let writer = run.writer.take().expect("the writer is held until the end");
    match &aborted {
        None => writer.finish_done(&end)?,
        Some(_) => writer.finish_abort(&end)?,
    }
    let metric = loaded
        .spec
        .effective_metrics()
        .first()
        .map(|m| m.column.clone())
        .unwrap_or_default();
    let base = loaded.spec.base_index();
    let plan_words = run
        .plan
        .as_ref()
        .zip(loaded.spec.stop.as_ref())
        .map(|(plan, stop)| {
            let pass_s = run.cell_seconds / passes_run.max(1) as f64;
            plan.describe(stop, loaded.spec.warmup_passes, pass_s)
        });
    Ok(Outcome {
        path,
        cells: run.cells,
        aborted,
        metric,
        summary: run.summary,
        plan: run.plan,
        plan_words,
        values: run.values,
        metrics: loaded.spec.effective_metrics(),
        base,
        warmup: loaded.spec.warmup_passes,
        stop: loaded.spec.stop.clone(),
    })
}

/// One ladder in progress.
/// One ladder in progress; its cells are run by `scheduler`, its rows shaped by `columns`.
pub(super) struct Run<'a> {
    loaded: &'a LoadedSpec,
    order: &'a Order,
    arms: &'a [ArmArgv],
    witness: &'a Witness,
    sampler: &'a CardSampler<'a>,
    envs: CellEnvs,
    writer: Option<LadderWriter>,
    log: File,
    log_path: PathBuf,
    signal: Arc<AtomicUsize>,
    exit_fix: ExitFix,
    /// The engine's columns, known once the first cell has printed them.
    engine_columns: Option<Vec<String>>,
    /// Arms already said to print columns the header lacks.
    extra_said: Vec<usize>,
    checks: crate::cell_check::CellChecks,
    cells: usize,
    summary: Vec<ArmSummary>,
    progress: Progress,
    /// `values[metric].values[pass][arm]`, filled as cells finish.
    values: Vec<MetricValues>,
    plan: Option<StopPlan>,
    /// The base's wall time per pass, as written: what a known-effect arm's pad is a
    /// fraction of.
    base_walls: Vec<Option<f64>>,
    /// The cells' `ladder_wall_s` so far, as written, summed in the order they ran: what
    /// a `[stop]` plan prices a pass from, `within_s` too (as `verify` sums them from the file).
    cell_seconds: f64,
}

mod columns;
mod scheduler;
mod start;
