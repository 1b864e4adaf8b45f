//! Running a whole ladder: every cell in the legal order, each row durable before the next
//! cell starts, and an abort record naming the reason when anything stops the run early.

use crate::binary::Binary;
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
use ladder::spec::{LoadedSpec, MetricSpec, OutputMode, Spec, StdoutMode};
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
    let start = start_record(&loaded, &order, &binary, &arms, &witness, &tag);
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
    let signal = Arc::new(AtomicUsize::new(0));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize)?;
    }
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
        clock: std::time::Instant::now(),
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
            let pass_s = run.clock.elapsed().as_secs_f64() / passes_run.max(1) as f64;
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
    })
}

fn start_record(
    loaded: &LoadedSpec,
    order: &Order,
    binary: &Binary,
    arms: &[ArmArgv],
    witness: &Witness,
    tag: &str,
) -> StartRecord {
    let spec = &loaded.spec;
    StartRecord {
        format: FORMAT.into(),
        ladder: spec.name.clone(),
        tag: tag.into(),
        started: timestamp(Utc::now()),
        order: OrderRecord {
            scheme: spec.order,
            arms: order.arms.clone(),
            passes: spec.passes(),
            seed: spec.seed,
            looks: spec.stop.as_ref().map(|s| s.looks.clone()),
        },
        warmup_passes: spec.warmup_passes,
        arms: spec
            .arms
            .iter()
            .zip(arms)
            .map(|(a, argv)| ArmRecord {
                name: a.name.clone(),
                role: a.role,
                env: a.env.clone(),
                argv: Some(argv.argv.clone()),
                binary: Some(BinaryRecord {
                    path: argv.binary.path.display().to_string(),
                    blake3: argv.binary.blake3.clone(),
                }),
            })
            .collect(),
        spec: loaded.json.clone(),
        spec_blake3: loaded.blake3.clone(),
        command: spec.command.clone(),
        binary: BinaryRecord {
            path: binary.path.display().to_string(),
            blake3: binary.blake3.clone(),
        },
        host: host_record(),
        card: witness.card(),
        extra: [(
            "common_env".to_string(),
            serde_json::to_value(&spec.env).expect("env serializes"),
        )]
        .into_iter()
        .collect(),
    }
}

fn host_record() -> HostRecord {
    let hostname = hostname::get()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut extra = serde_json::Map::new();
    extra.insert("kernel".into(), kernel.trim().into());
    HostRecord {
        hostname,
        os: std::env::consts::OS.into(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        extra,
    }
}

/// One ladder in progress.
struct Run<'a> {
    loaded: &'a LoadedSpec,
    order: &'a Order,
    arms: &'a [ArmArgv],
    witness: &'a Witness,
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
    /// Since the first cell.
    clock: std::time::Instant,
}

impl Run<'_> {
    /// Runs every cell; `Err` is the abort reason.
    fn all_cells(&mut self) -> Result<(), String> {
        let first_look = self.loaded.spec.stop.as_ref().map(|s| s.first_look());
        let last_slot = self.order.n_arms() - 1;
        for cell in self.order.cells().collect::<Vec<_>>() {
            if self.plan.as_ref().is_some_and(|p| cell.pass >= p.look) {
                break;
            }
            self.one_cell(cell)?;
            if cell.slot == last_slot && Some(cell.pass + 1) == first_look {
                self.plan_from_first_look();
            }
        }
        Ok(())
    }

    /// `[stop]`: fixes the ladder's length from the first look (METHOD.md, Stein's rule).
    fn plan_from_first_look(&mut self) {
        let Some(stop) = &self.loaded.spec.stop else {
            return;
        };
        let warmup = self.loaded.spec.warmup_passes;
        let base = self.loaded.spec.base_index();
        let plan = stop.plan(warmup, base, &self.order.arms, &self.values);
        let short = format!(
            "{} passes planned, set by {} of {}",
            plan.look, plan.need.metric, plan.need.arm
        );
        let pass_s = self.clock.elapsed().as_secs_f64() / stop.first_look().max(1) as f64;
        self.progress.replan(
            plan.look * self.order.n_arms(),
            short,
            format!("runner: {}", plan.describe(stop, warmup, pass_s)),
        );
        self.plan = Some(plan);
    }

    /// Runs `setup` once before the first cell; its failure aborts the ladder.
    fn setup(&mut self) -> Result<(), String> {
        match self.loaded.spec.setup.clone() {
            Some(argv) => self.auxiliary("setup", &argv, &self.ladder_env()),
            None => Ok(()),
        }
    }

    /// Runs `cleanup` once after the last cell, also after an abort; a failure is reported
    /// but changes nothing in the ladder file, whose cells are complete.
    fn cleanup(&mut self) {
        if let Some(argv) = self.loaded.spec.cleanup.clone() {
            if let Err(e) = self.auxiliary("cleanup", &argv, &self.ladder_env()) {
                eprintln!("runner: warning: {e}");
            }
        }
    }

    /// The environment of `setup` and `cleanup`: the runner's own plus the common `[env]`.
    fn ladder_env(&self) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = std::env::vars().collect();
        env.extend(self.loaded.spec.env.clone());
        env
    }

    /// Runs an argv that is not a cell (setup, prepare, cleanup): untimed, output to the
    /// side log, and `Err` unless it exits 0.
    fn auxiliary(
        &mut self,
        what: &str,
        argv: &[String],
        env: &BTreeMap<String, String>,
    ) -> Result<(), String> {
        let line = format!("=== {} {what}: {}\n", timestamp(Utc::now()), argv.join(" "));
        let _ = self.log.write_all(line.as_bytes());
        let launch = Launch {
            program: std::path::Path::new(&argv[0]),
            args: &argv[1..],
            env,
            stdout: StdoutTo::Capped,
            cap: self.loaded.spec.output_cap_bytes(),
            timeout: Duration::from_secs_f64(self.loaded.spec.timeout_s),
            signal: &self.signal,
            pad: None,
        };
        let result = cell::run(&launch).map_err(|e| format!("{what} ({}): {e}", argv.join(" ")))?;
        self.keep_output(what, &result, true);
        if result.exit.is_ok(&[0]) && result.cut.is_none() {
            Ok(())
        } else {
            Err(format!(
                "{what} ({}) ended with {}; its output is in {}",
                argv.join(" "),
                result.exit,
                self.log_path.display()
            ))
        }
    }

    /// Where a cell's stdout goes: `time` mode reads it only to keep it.
    fn stdout_to(&self) -> StdoutTo {
        match (self.loaded.spec.output, self.loaded.spec.stdout_mode()) {
            (OutputMode::Time, StdoutMode::Discard) => StdoutTo::Null,
            (OutputMode::Time, StdoutMode::Keep) => StdoutTo::Capped,
            _ => StdoutTo::Whole,
        }
    }

    fn one_cell(&mut self, cell: Cell) -> Result<(), String> {
        let arm = &self.order.arms[cell.arm];
        let at = format!("pass {} slot {} (arm {arm})", cell.pass, cell.slot);
        if let Some(name) = signal_name(self.signal.load(Ordering::SeqCst)) {
            return Err(format!("interrupted by {name} before {at}"));
        }
        let arm_argv = &self.arms[cell.arm];
        arm_argv
            .binary
            .check_unchanged()
            .map_err(|e| format!("{e} before {at}"))?;
        self.progress.start_cell(cell, arm);
        let env = self.envs.cell(self.order, cell.pass, cell.slot);
        if let Some(prepare) = self.loaded.spec.prepare.clone() {
            self.auxiliary(&format!("prepare before {at}"), &prepare, &env)?;
        }
        let before = self.witness.sample();
        self.side_log(&at)?;
        let spec = &self.loaded.spec;
        let launch = Launch {
            program: &arm_argv.binary.path,
            args: &arm_argv.argv[1..],
            env: &env,
            stdout: self.stdout_to(),
            cap: spec.output_cap_bytes(),
            timeout: Duration::from_secs_f64(spec.timeout_s),
            signal: &self.signal,
            pad: self.pad_of(cell),
        };
        let result = cell::run(&launch).map_err(|e| format!("{e} at {at}"))?;
        let after = self.witness.sample();
        let ok = result.exit.is_ok(&spec.ok_exit_codes());
        let keep_stdout = spec.stdout_mode() == StdoutMode::Keep;
        self.keep_output(&at, &result, keep_stdout);
        if ok
            && result.cut.is_none()
            && spec.output != OutputMode::Time
            && result.stdout.whole().is_none()
        {
            return Err(format!(
                "{at} printed {} bytes on stdout, more than the {} MiB the runner parses; a benchmark prints a few rows: print less, or use output = \"time\"",
                result.stdout.total,
                cell::PARSED_STDOUT_LIMIT >> 20
            ));
        }
        let parsed = if ok && result.cut.is_none() {
            Some(
                output::parse(spec.output, result.stdout.whole().unwrap_or_default()).map_err(
                    |e| {
                        format!(
                            "{at} printed output that does not parse: {e}; stdout is in {}",
                            self.log_path.display()
                        )
                    },
                ),
            )
        } else {
            None
        };
        if let Some(Err(e)) = &parsed {
            if spec.stdout_mode() == StdoutMode::Discard {
                let _ = result.stdout.write_to(&mut self.log, "stdout");
            }
            return Err(e.clone());
        }
        let engine = parsed.map(|p| p.expect("errors returned above"));
        let engine = self.fit_columns(engine, cell, &at)?;
        let rows = self.rows(cell, &result, engine.as_ref(), &before, &after);
        self.writer
            .as_mut()
            .expect("writer held")
            .write_cell(&rows)
            .map_err(|e| format!("cannot write the ladder file: {e}"))?;
        self.cells += 1;
        self.record_summary(cell, &result, engine.as_ref());
        self.progress.end_cell(result.wall_s);
        engine
            .as_ref()
            .map_or(Ok(()), |out| self.checks.cell(self.loaded, out, &at))?;
        match result.cut {
            Some(Cut::TimedOut) => Err(format!(
                "{at} timed out after {} s and was killed (timeout_s in the spec)",
                self.loaded.spec.timeout_s
            )),
            Some(Cut::Signal(sig)) => Err(format!(
                "interrupted by {} during {at}; the cell was killed",
                signal_name(sig).unwrap_or("a signal")
            )),
            None if !ok => Err(self.exit_failure(&at, result.exit)),
            None => Ok(()),
        }
    }

    /// The abort reason of a cell whose exit status is not a success, with the fix that
    /// makes it one when it is an exit code.
    fn exit_failure(&self, at: &str, exit: Exit) -> String {
        let ok = self.loaded.spec.ok_exit_codes();
        let fix = match exit {
            Exit::Code(code) => {
                let mut accept = ok.clone();
                accept.push(code);
                accept.sort_unstable();
                format!(
                    "; if {code} means success for this program, {}",
                    self.exit_fix.words(&accept)
                )
            }
            Exit::Signal(_) => String::new(),
        };
        format!(
            "{at} exited with status {exit} (ok_exit: {ok:?}){fix}; its stderr is in {}",
            self.log_path.display()
        )
    }

    /// Keeps a process's stderr (and `stdout` when asked) in the side log with the processes
    /// it left running, and under `show_output` shows its output on stderr too, after the
    /// process has ended: printing during a timed cell would cost the runner time beside it.
    fn keep_output(&mut self, at: &str, result: &CellRun, stdout: bool) {
        let _ = result.stderr.write_to(&mut self.log, "stderr");
        if stdout {
            let _ = result.stdout.write_to(&mut self.log, "stdout");
        }
        if !result.leftovers.is_empty() {
            let killed: Vec<String> = result.leftovers.iter().map(|l| l.to_string()).collect();
            let line = format!(
                "--- killed {} process(es) it left running: {}\n",
                killed.len(),
                killed.join(", ")
            );
            let _ = self.log.write_all(line.as_bytes());
        }
        if self.loaded.spec.shows_output() {
            self.progress.suspend(|| {
                let mut shown = std::io::stderr().lock();
                let _ = writeln!(shown, "=== {at}");
                let _ = result.stdout.write_to(&mut shown, "stdout");
                let _ = result.stderr.write_to(&mut shown, "stderr");
            });
        }
    }

    /// A known-effect arm's pad (`pad_pct`): a fraction of the base's wall time in the pass
    /// before; in pass 0, of the base's cell earlier in the pass, or else of the cell's own.
    fn pad_of(&self, cell: Cell) -> Option<Pad> {
        let fraction = self.loaded.spec.arms[cell.arm].pad_pct? / 100.0;
        let reference = cell
            .pass
            .checked_sub(1)
            .and_then(|p| self.base_walls[p])
            .or(self.base_walls[cell.pass]);
        Some(match reference {
            Some(wall) => Pad::Fixed(Duration::from_secs_f64(wall * fraction)),
            None => Pad::OfOwn(fraction),
        })
    }

    /// Writes the side log's line that says which cell's output follows.
    fn side_log(&mut self, at: &str) -> Result<(), String> {
        let line = format!("=== {} {at}\n", timestamp(Utc::now()));
        self.log
            .write_all(line.as_bytes())
            .map_err(|e| format!("cannot write the side log {}: {e}", self.log_path.display()))
    }

    /// The first cell fixes the header; every later cell must print the same columns, unless
    /// its arm runs another binary than that cell's (a build against a build whose output
    /// gained or lost a column). Such a cell must print every column the spec reads; its
    /// values go under the header's columns, empty where it printed none, and columns the
    /// header lacks are said once per arm on stderr and in the side log, and not stored.
    fn fit_columns(
        &mut self,
        engine: Option<CellOutput>,
        cell: Cell,
        at: &str,
    ) -> Result<Option<CellOutput>, String> {
        let binary = &self.arms[cell.arm].binary.blake3;
        let (first, out) = match (&self.engine_columns, engine) {
            (None, engine) => {
                let columns = engine
                    .as_ref()
                    .map_or(Vec::new(), |out| out.columns.clone());
                if engine.is_some() {
                    self.check_declared_columns(&columns)?;
                }
                self.engine_columns = Some(columns);
                self.write_header()?;
                return Ok(engine);
            }
            (Some(first), Some(out)) if *first != out.columns && !first.is_empty() => {
                (first.clone(), out)
            }
            (_, engine) => return Ok(engine),
        };
        // The header came from the ladder's first cell.
        let header_arm = self.order.cells().next().map(|c| c.arm);
        if header_arm.map(|a| &self.arms[a].binary.blake3) == Some(binary) {
            return Err(format!(
                "{at} printed the columns {:?}, the first cell printed {:?}",
                out.columns, first
            ));
        }
        self.check_declared_columns(&out.columns)
            .map_err(|e| format!("{at}: {e}"))?;
        let extra: Vec<&String> = out.columns.iter().filter(|c| !first.contains(c)).collect();
        if !extra.is_empty() && !self.extra_said.contains(&cell.arm) {
            self.extra_said.push(cell.arm);
            let line = format!(
                "runner: arm {} runs another binary than the first cell's and prints columns the ladder file does not hold: {}; they are not stored\n",
                self.order.arms[cell.arm],
                extra.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
            );
            eprint!("{line}");
            let _ = self.log.write_all(line.as_bytes());
        }
        let rows = out
            .rows
            .iter()
            .map(|values| {
                first
                    .iter()
                    .map(|c| {
                        out.columns
                            .iter()
                            .position(|o| o == c)
                            .and_then(|i| values.get(i).cloned())
                            .unwrap_or_default()
                    })
                    .collect()
            })
            .collect();
        Ok(Some(CellOutput {
            columns: first,
            rows,
        }))
    }

    /// Every column the spec reads must be among those the engine printed.
    fn check_declared_columns(&self, columns: &[String]) -> Result<(), String> {
        let spec = &self.loaded.spec;
        if let Some(clash) = columns
            .iter()
            .find(|c| c.starts_with("ladder_") || c.starts_with("witness_"))
        {
            return Err(format!("the engine printed a column named {clash:?}; ladder_* and witness_* belong to the harness"));
        }
        let mut declared: Vec<String> = spec
            .effective_metrics()
            .into_iter()
            .map(|m| m.column)
            .collect();
        if let Some(split) = &spec.split {
            declared.extend([split.rounds.clone(), split.time.clone()]);
        }
        if let Some(identity) = &spec.identity {
            declared.push(identity.column.clone());
        }
        for column in &declared {
            if !is_measured_harness_column(column) && !columns.contains(column) {
                let line = self
                    .loaded
                    .line_of(column)
                    .map(|l| format!(":{l}"))
                    .unwrap_or_default();
                return Err(format!(
                    "{}{line}: the column {column:?} is not among the columns the engine printed in its first row: {}; fix the spec or the command",
                    self.loaded.path.display(),
                    columns.join(", ")
                ));
            }
        }
        Ok(())
    }

    fn write_header(&mut self) -> Result<(), String> {
        let mut columns: Vec<String> = HARNESS_COLUMNS.iter().map(|c| c.to_string()).collect();
        columns.push(ROW_COLUMN.into());
        columns.push(WALL_COLUMN.into());
        columns.extend(USAGE_COLUMNS.iter().map(|c| c.to_string()));
        columns.extend(self.witness.columns(WitnessSide::Before));
        columns.extend(self.witness.columns(WitnessSide::After));
        columns.extend(self.engine_columns.clone().unwrap_or_default());
        self.writer
            .as_mut()
            .expect("writer held")
            .write_header(&columns)
            .map_err(|e| format!("cannot write the ladder file: {e}"))
    }

    fn rows(
        &self,
        cell: Cell,
        result: &cell::CellRun,
        engine: Option<&CellOutput>,
        before: &[String],
        after: &[String],
    ) -> Vec<Vec<String>> {
        let width = self.engine_columns.as_ref().map_or(0, Vec::len);
        let empty = vec![vec![String::new(); width]];
        let engine_rows = engine.map_or(&empty, |e| &e.rows);
        engine_rows
            .iter()
            .enumerate()
            .map(|(i, values)| {
                let mut row = vec![
                    cell.pass.to_string(),
                    cell.slot.to_string(),
                    self.order.arms[cell.arm].clone(),
                    timestamp(result.started),
                    timestamp(result.ended),
                    result.exit.to_string(),
                    i.to_string(),
                    seconds_field(result.wall_s),
                    seconds_field(result.usage.user_s),
                    seconds_field(result.usage.sys_s),
                    result.usage.maxrss_kib.to_string(),
                ];
                row.extend(before.iter().cloned());
                row.extend(after.iter().cloned());
                row.extend(values.iter().cloned());
                row
            })
            .collect()
    }

    /// Notes every metric's value of the cell: the first metric for the summary table, all
    /// of them for the stopping rule and the reading without `analyze`.
    fn record_summary(&mut self, cell: Cell, result: &cell::CellRun, engine: Option<&CellOutput>) {
        self.summary[cell.arm].walls.push(result.wall_s);
        if cell.arm == self.loaded.spec.base_index() {
            self.base_walls[cell.pass] = harness_value(WALL_COLUMN, result);
        }
        let columns = self.engine_columns.clone().unwrap_or_default();
        for (m, metric) in self.loaded.spec.effective_metrics().into_iter().enumerate() {
            let value = harness_value(&metric.column, result).or_else(|| {
                let index = columns.iter().position(|c| *c == metric.column);
                engine
                    .and_then(|e| e.rows.get(metric.row))
                    .zip(index)
                    .and_then(|(row, i)| row[i].parse().ok())
            });
            self.values[m].values[cell.pass][cell.arm] = value;
            if let (0, Some(v)) = (m, value) {
                if cell.pass >= self.loaded.spec.warmup_passes {
                    self.summary[cell.arm].metric.push(v);
                }
            }
        }
    }
}

/// Harness columns that hold a measurement and may be named as metrics.
fn is_measured_harness_column(column: &str) -> bool {
    column == WALL_COLUMN || USAGE_COLUMNS.contains(&column)
}

/// A measured harness column's value for one cell, as the ladder file holds it (six
/// decimals), so that the runner's stopping rule reads what `verify` reads.
fn harness_value(column: &str, result: &cell::CellRun) -> Option<f64> {
    match column {
        WALL_COLUMN => as_written(result.wall_s),
        "ladder_user_s" => as_written(result.usage.user_s),
        "ladder_sys_s" => as_written(result.usage.sys_s),
        "ladder_maxrss_kib" => Some(result.usage.maxrss_kib as f64),
        _ => None,
    }
}

/// `value` rounded as a harness column writes it.
fn as_written(value: f64) -> Option<f64> {
    seconds_field(value).parse().ok()
}

/// A harness column's text: seconds with six decimals.
fn seconds_field(value: f64) -> String {
    format!("{value:.6}")
}

fn signal_name(signal: usize) -> Option<&'static str> {
    match signal as i32 {
        0 => None,
        signal_hook::consts::SIGINT => Some("SIGINT"),
        signal_hook::consts::SIGTERM => Some("SIGTERM"),
        signal_hook::consts::SIGHUP => Some("SIGHUP"),
        _ => Some("a signal"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stopping_rule_reads_harness_values_as_the_file_writes_them() {
        assert_eq!(seconds_field(0.123_456_789), "0.123457");
        assert_eq!(as_written(0.123_456_789), Some(0.123457));
        assert_eq!(as_written(2.0000004), Some(2.0));
    }
}
