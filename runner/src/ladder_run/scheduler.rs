//! Running the cells: setup, every cell in the legal order with its prepare and pad, the
//! stopping rule at the first look, cleanup, and an abort reason for whatever stops the run.

use super::columns::harness_value;
use super::*;
use ladder::order::cell_words;

impl Run<'_> {
    /// Runs every cell; `Err` is the abort reason.
    pub(super) fn all_cells(&mut self) -> Result<(), String> {
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
        let plan = stop
            .plan(warmup, base, &self.order.arms, &self.values)
            .within(stop, self.cell_seconds);
        let short = format!(
            "{} passes planned, set by {} of {}",
            plan.look, plan.need.metric, plan.need.arm
        );
        let pass_s = self.cell_seconds / stop.first_look().max(1) as f64;
        self.progress.replan(
            plan.look * self.order.n_arms(),
            short,
            format!("runner: {}", plan.describe(stop, warmup, pass_s)),
        );
        self.plan = Some(plan);
    }

    /// Runs `setup` once before the first cell; its failure aborts the ladder.
    pub(super) fn setup(&mut self) -> Result<(), String> {
        match self.loaded.spec.setup.clone() {
            Some(argv) => self.auxiliary("setup", &argv, &self.ladder_env()),
            None => Ok(()),
        }
    }

    /// Runs `cleanup` once after the last cell, also after an abort; a failure is reported
    /// but changes nothing in the ladder file, whose cells are complete.
    pub(super) fn cleanup(&mut self) {
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
        let at = cell_words(cell.pass, cell.slot, arm);
        if let Some(name) = crate::stop_signal::name(self.signal.load(Ordering::SeqCst)) {
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
        let (result, card) = self.sampler.around(|| cell::run(&launch));
        let result = result.map_err(|e| format!("{e} at {at}"))?;
        let mut after = self.witness.sample();
        after.extend(card.fields());
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
        self.record_summary(cell, &result, engine.as_ref(), &card);
        self.progress.end_cell(result.wall_s);
        engine.as_ref().map_or(Ok(()), |out| {
            self.checks.cell(self.loaded, out, cell.arm, &at)
        })?;
        if ok && result.cut.is_none() {
            card.check_metrics(self.loaded, &at)?;
        }
        match result.cut {
            Some(Cut::TimedOut) => Err(format!(
                "{at} timed out after {} s and was killed (timeout_s in the spec)",
                self.loaded.spec.timeout_s
            )),
            Some(Cut::Signal(sig)) => Err(format!(
                "interrupted by {} during {at}; the cell was killed",
                crate::stop_signal::name(sig).unwrap_or("a signal")
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

    /// Notes every metric's value of the cell: the first metric for the summary table, all
    /// of them for the stopping rule and the reading without `analyze`.
    fn record_summary(
        &mut self,
        cell: Cell,
        result: &cell::CellRun,
        engine: Option<&CellOutput>,
        card: &CellCard,
    ) {
        self.summary[cell.arm].walls.push(result.wall_s);
        let wall = harness_value(WALL_COLUMN, result);
        self.cell_seconds += wall.unwrap_or(f64::NAN);
        if cell.arm == self.loaded.spec.base_index() {
            self.base_walls[cell.pass] = wall;
        }
        let columns = self.engine_columns.clone().unwrap_or_default();
        for (m, metric) in self.loaded.spec.effective_metrics().into_iter().enumerate() {
            let value = harness_value(&metric.column, result)
                .or_else(|| card.value(&metric.column))
                .or_else(|| {
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
