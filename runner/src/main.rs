use clap::{Parser, Subcommand, ValueEnum};
use ladder::spec::{OutputMode, Spec};
use runner::ab::{self, AbRequest};
use runner::ladder_run::{self, Outcome, RunOptions};
use std::path::PathBuf;
use std::process::ExitCode;

/// Run A/B ladders: every arm in rotated passes, one fresh process per cell.
#[derive(Parser)]
#[command(name = "runner", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run every cell of a ladder spec and write raw/<ladder>_<tag>.csv.
    Run {
        /// The ladder spec (TOML), e.g. ladders/quickstart.toml.
        spec: PathBuf,
        /// Names this run in the file name (default: the UTC start time).
        #[arg(long)]
        tag: Option<String>,
        /// Folder for the ladder file and its side log.
        #[arg(long, default_value = "raw")]
        out: PathBuf,
        /// The GPU index the witness watches (NVML numbering).
        #[arg(long, default_value_t = 0)]
        card: u32,
    },
    /// One complete ladder per card of this host, concurrently, each in its own file
    /// raw/<name>_<tag>-<host>-card<N>.csv.
    Fleet {
        /// The ladder spec (TOML).
        spec: PathBuf,
        /// Cards to run on, e.g. 0,1,2,3 (default: the spec's `cards`, else every card). On a
        /// host without GPUs, or with --cpus-per-ladder, these are CPU slots.
        #[arg(long, value_delimiter = ',')]
        cards: Option<Vec<u32>>,
        /// CPUs pinned to each ladder: slot N gets CPUs N·k … N·k+k−1.
        #[arg(long)]
        cpus_per_ladder: Option<usize>,
        /// Names this fleet in the file names (default: the UTC start time).
        #[arg(long)]
        tag: Option<String>,
        /// Folder for the ladder files and their side logs.
        #[arg(long, default_value = "raw")]
        out: PathBuf,
    },
    /// Replicate a ladder on a Slurm cluster: a job array of N ladders, then a dependent job
    /// that verifies them and writes one across-ladder report.
    Sbatch {
        /// The ladder spec (TOML).
        spec: PathBuf,
        /// Ladders to run, one per array task.
        #[arg(long)]
        replicas: usize,
        /// Slurm partition.
        #[arg(long)]
        partition: Option<String>,
        /// Generic resources per task, e.g. gpu:1.
        #[arg(long)]
        gres: Option<String>,
        /// Time limit per task, HH:MM:SS.
        #[arg(long)]
        time: Option<String>,
        /// Names the replicates (default: the UTC submission time).
        #[arg(long)]
        tag: Option<String>,
        /// Folder for the ladder files, their logs and the batch scripts.
        #[arg(long, default_value = "raw")]
        out: PathBuf,
        /// Folder for the report the dependent job writes.
        #[arg(long, default_value = "reports")]
        reports: PathBuf,
        /// Print the batch scripts; write and submit nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Print the legal order (pass × slot grid), the looks and each arm's argv; runs nothing.
    Plan {
        /// The ladder spec (TOML).
        spec: PathBuf,
        /// A ladder file of this program on this machine: print, look by look, the smallest
        /// effect the spec can detect at its noise, and the time each look takes.
        #[arg(long, value_name = "FILE")]
        noise_from: Option<PathBuf>,
    },
    /// A one-line A/B: each command (split like shell words, no shell run) is an arm, the
    /// first the base; a reflexive control repeats it. Writes raw/<name>_<tag>.toml and .csv.
    Ab {
        /// Two or more commands, each one quoted string, e.g. 'gzip -1 -c FILE'.
        #[arg(required = true, num_args = 2..)]
        commands: Vec<String>,
        /// Arm names, comma-separated, one per command (default a,b,c,...).
        #[arg(long)]
        name: Option<String>,
        /// KEY=VALUE set for the first command only (repeatable).
        #[arg(long = "env-a", value_name = "KEY=VALUE")]
        env_a: Vec<String>,
        /// KEY=VALUE set for the second command only (repeatable).
        #[arg(long = "env-b", value_name = "KEY=VALUE")]
        env_b: Vec<String>,
        /// Passes, warm-up pass included (default 10).
        #[arg(long, conflicts_with = "stop")]
        passes: Option<usize>,
        /// Stop at the first look (6, 10, 16, 24, 32 passes) that reaches this interval
        /// half-width in percent (Stein's rule).
        #[arg(long, value_name = "HALFWIDTH_PCT")]
        stop: Option<f64>,
        /// What the commands print: time (nothing read; wall time), csv or json.
        #[arg(long, value_enum, default_value_t = Output::Time)]
        output: Output,
        /// Add a known-effect control: the first command again, its wall time padded by this
        /// percent of the base's (output time only).
        #[arg(long, value_name = "PCT")]
        known_effect_pct: Option<f64>,
        /// A column the commands print, read as a metric (csv/json; repeatable).
        #[arg(long)]
        metric: Vec<String>,
        /// The metrics are better when higher (default: lower, as times are).
        #[arg(long)]
        higher: bool,
        /// Folder for the spec, the ladder file and its side log.
        #[arg(long, default_value = "raw")]
        out: PathBuf,
        /// Names this run in the file names (default: the UTC start time).
        #[arg(long)]
        tag: Option<String>,
        /// The GPU index the witness watches (NVML numbering).
        #[arg(long, default_value_t = 0)]
        card: u32,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Output {
    Time,
    Csv,
    Json,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Plan { spec, noise_from } => match Spec::load(&spec) {
            Ok(loaded) => {
                let order = ladder_run::order_of(&loaded.spec);
                print!("{}", runner::plan::describe(&loaded.spec, &order));
                match noise_from.map(|f| runner::plan::precision(&loaded.spec, &order, &f)) {
                    Some(Err(e)) => fail(&format!("{e:#}")),
                    Some(Ok(text)) => {
                        print!("{text}");
                        ExitCode::SUCCESS
                    }
                    None => ExitCode::SUCCESS,
                }
            }
            Err(e) => fail(&e),
        },
        Command::Ab {
            commands,
            name,
            env_a,
            env_b,
            passes,
            stop,
            output,
            known_effect_pct,
            metric,
            higher,
            out,
            tag,
            card,
        } => {
            let output = match output {
                Output::Time => OutputMode::Time,
                Output::Csv => OutputMode::Csv,
                Output::Json => OutputMode::Json,
            };
            let tag = tag.unwrap_or_else(ladder_run::default_tag);
            let request = AbRequest {
                commands,
                names: name,
                env_a,
                env_b,
                passes,
                stop_halfwidth_pct: stop,
                output,
                known_effect_pct,
                metrics: metric,
                higher_is_better: higher,
                out,
                tag: tag.clone(),
            };
            run_ab(&request, card)
        }
        Command::Fleet {
            spec,
            cards,
            cpus_per_ladder,
            tag,
            out,
        } => {
            match runner::fleet::run_fleet(&runner::fleet::FleetOptions {
                spec,
                cards,
                tag,
                out_dir: out,
                cpus_per_ladder,
            }) {
                Ok(members) => fleet_report(&members),
                Err(e) => fail(&format!("{e:#}")),
            }
        }
        Command::Sbatch {
            spec,
            replicas,
            partition,
            gres,
            time,
            tag,
            out,
            reports,
            dry_run,
        } => {
            let options = runner::sbatch::SbatchOptions {
                spec,
                replicas,
                partition,
                gres,
                time,
                tag,
                out_dir: out,
                reports_dir: reports,
                dry_run,
            };
            match sbatch(&options) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&format!("{e:#}")),
            }
        }
        Command::Run {
            spec,
            tag,
            out,
            card,
        } => {
            match ladder_run::run_ladder(&RunOptions {
                spec,
                tag,
                out_dir: out,
                card,
            }) {
                Ok(outcome) => report(&outcome),
                Err(e) => fail(&format!("{e:#}")),
            }
        }
    }
}

/// Writes the generated spec, runs it, and prints the report's summary and how to repeat it.
fn run_ab(request: &AbRequest, card: u32) -> ExitCode {
    let generated = match ab::generate(request) {
        Ok(generated) => generated,
        Err(e) => return fail(&e),
    };
    let written = std::fs::create_dir_all(&request.out).and_then(|_| {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&generated.path)?
            .write_all(generated.text.as_bytes())
    });
    if let Err(e) = written {
        return fail(&format!("cannot write {}: {e}", generated.path.display()));
    }
    let options = RunOptions {
        spec: generated.path.clone(),
        tag: Some(request.tag.clone()),
        out_dir: request.out.clone(),
        card,
    };
    let outcome = match ladder_run::run_ladder(&options) {
        Ok(outcome) => outcome,
        Err(e) => return fail(&format!("{e:#}")),
    };
    if outcome.aborted.is_none() {
        match ab::analyze_summary(ab::analyze_beside_runner().as_deref(), &outcome.path) {
            Ok(summary) => print!("{summary}"),
            Err(why) => {
                println!("({why}; the runner's own reading follows, without the report's checks)");
                print!("{}", runner::reading::describe(&outcome));
            }
        }
        if let Some(words) = &outcome.plan_words {
            println!("{words}");
        }
    }
    println!("spec:      {}", generated.path.display());
    println!(
        "reproduce: runner run {} --out {}",
        generated.path.display(),
        request.out.display()
    );
    println!("re-read:   analyze report {}", outcome.path.display());
    finish(&outcome)
}

fn fail(message: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("runner: {message}");
    ExitCode::from(2)
}

/// The short summary table, then where the file is and how it ended.
fn report(outcome: &Outcome) -> ExitCode {
    println!(
        "{:<20} {:>6} {:>12} {:>16}",
        "arm",
        "cells",
        "wall s/cell",
        format!("{} mean", outcome.metric)
    );
    for arm in &outcome.summary {
        let mean = |v: &[f64]| {
            if v.is_empty() {
                f64::NAN
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        println!(
            "{:<20} {:>6} {:>12.3} {:>16.4}",
            arm.name,
            arm.walls.len(),
            mean(&arm.walls),
            mean(&arm.metric)
        );
    }
    println!(
        "(metric mean over the analysis passes; read the paired deltas with `analyze report`)"
    );
    if let Some(words) = &outcome.plan_words {
        println!("{words}");
    }
    finish(outcome)
}

/// Where the file is and how the ladder ended, as the exit code says it.
fn finish(outcome: &Outcome) -> ExitCode {
    match &outcome.aborted {
        None => {
            println!("wrote {} ({} cells)", outcome.path.display(), outcome.cells);
            ExitCode::SUCCESS
        }
        Some(reason) => {
            eprintln!(
                "runner: ladder aborted after {} cells: {reason}",
                outcome.cells
            );
            eprintln!(
                "runner: {} keeps every cell written so far and an abort record",
                outcome.path.display()
            );
            ExitCode::from(1)
        }
    }
}

/// Each ladder of the fleet: its file and whether it is one connected run.
fn fleet_report(members: &[runner::fleet::Member]) -> ExitCode {
    println!("{:<8} {:<6} file: verify", "card", "exit");
    for m in members {
        let exit = m.exit.map_or("?".into(), |c| c.to_string());
        println!(
            "{:<8} {:<6} {}: {}",
            m.slot.index(),
            exit,
            m.path.display(),
            m.verdict
        );
    }
    let files: Vec<String> = members
        .iter()
        .map(|m| m.path.display().to_string())
        .collect();
    println!(
        "read them as one: analyze report {} -o reports/NAME.md",
        files.join(" ")
    );
    if members.iter().all(|m| m.connected) {
        ExitCode::SUCCESS
    } else {
        eprintln!("runner: not every ladder of the fleet is one connected run (see above)");
        ExitCode::from(1)
    }
}

fn sbatch(options: &runner::sbatch::SbatchOptions) -> anyhow::Result<()> {
    if options.dry_run {
        let runner = std::env::current_exe()?;
        let analyze = runner.with_file_name("analyze");
        let tag = options.tag.clone().unwrap_or_else(ladder_run::default_tag);
        let scripts = runner::sbatch::scripts(options, &runner, &analyze, &tag)?;
        println!(
            "# {} (not written: --dry-run)\n{}",
            scripts.ladders_path.display(),
            scripts.ladders
        );
        println!("# {} (not written: --dry-run; submitted with --dependency=afterany:<the array's job id>)\n{}", scripts.report_path.display(), scripts.report);
        return Ok(());
    }
    let done = runner::sbatch::submit(options)?;
    println!(
        "submitted job array {} ({} ladders): {}",
        done.array_job,
        options.replicas,
        done.scripts.ladders_path.display()
    );
    println!(
        "submitted report job {} after it: {}",
        done.report_job,
        done.scripts.report_path.display()
    );
    println!(
        "the report will be {}; follow with: squeue -j {},{}",
        done.scripts.report_md.display(),
        done.array_job,
        done.report_job
    );
    Ok(())
}
