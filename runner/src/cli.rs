//! The command line: every clap type of `runner`, turned into the plain options the library
//! takes, and what each command prints and exits with.

use crate::ab::{self, AbRequest, Exports, ScanRequest};
use crate::fleet::{self, FleetOptions};
use crate::ladder_run::{self, ExitFix, Outcome, RunOptions};
use crate::sbatch::{self, SbatchOptions};
use crate::{summary, terminal};
use clap::{Parser, Subcommand, ValueEnum};
use ladder::order::Scheme;
use ladder::spec::{OutputMode, Spec};
use std::path::PathBuf;
use std::process::ExitCode;

/// Run A/B ladders: every arm in rotated passes, one fresh process per cell.
#[derive(Parser)]
#[command(name = "runner", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run every cell of a ladder spec and write raw/LADDER_TAG.csv.
    Run(RunArgs),
    /// One complete ladder per card of this host, concurrently, each in its own file
    /// raw/LADDER_TAG-HOST-cardN.csv.
    Fleet(FleetArgs),
    /// Replicate a ladder on a Slurm cluster: a job array of N ladders, then a dependent job
    /// that verifies them and writes one across-ladder report.
    Sbatch(SbatchArgs),
    /// Print the legal order (pass × slot grid), the looks and each arm's argv; runs nothing.
    Plan(PlanArgs),
    /// A one-line A/B: each command (split like shell words, or with --shell run by a shell)
    /// is an arm, the first the base; a reflexive control repeats it. Writes raw/NAME_TAG.toml
    /// and .csv.
    Ab(Box<AbArgs>),
}

#[derive(clap::Args)]
pub struct RunArgs {
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
    /// Play the card's readings during each cell back from this recorded series instead of
    /// reading NVML: for tests, and for measuring the sampler's own cost without a card.
    #[arg(long, value_name = "FILE")]
    card_playback: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct FleetArgs {
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
}

#[derive(clap::Args)]
pub struct SbatchArgs {
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
}

#[derive(clap::Args)]
pub struct PlanArgs {
    /// The ladder spec (TOML).
    spec: PathBuf,
    /// A ladder file of this program on this machine: print, look by look, the smallest
    /// effect the spec can detect at its noise, and the time each look takes.
    #[arg(long, value_name = "FILE")]
    noise_from: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct AbArgs {
    /// The commands, each one quoted string, e.g. 'gzip -1 -c FILE': two or more, or one
    /// holding {NAME} with -P or -L.
    #[arg(required = true, num_args = 1..)]
    commands: Vec<String>,
    /// Arm names, comma-separated, one per command (default a,b,c,...).
    #[arg(long)]
    name: Option<String>,
    /// KEY=VALUE set for the first command only (repeatable; with a scan, for every arm).
    #[arg(long = "env-a", value_name = "KEY=VALUE")]
    env_a: Vec<String>,
    /// KEY=VALUE set for the second command only (repeatable).
    #[arg(long = "env-b", value_name = "KEY=VALUE")]
    env_b: Vec<String>,
    /// Passes, warm-up passes included (default 10).
    #[arg(long, conflicts_with = "stop")]
    passes: Option<usize>,
    /// Stop at the first look (6, 10, 16, 24, 32 passes) that reaches this interval
    /// half-width in percent (Stein's rule).
    #[arg(long, value_name = "HALFWIDTH_PCT")]
    stop: Option<f64>,
    /// Warm-up passes: run like the others, left out of the analysis (default 1).
    #[arg(short = 'w', long, value_name = "N")]
    warmup: Option<usize>,
    /// The order of the arms in each pass (default rotate; shuffle gets a seed).
    #[arg(long, value_enum)]
    order: Option<OrderArg>,
    /// A pre-registered limit on the paired noise, in percent: a noisier ladder is
    /// disqualified.
    #[arg(long, value_name = "PCT")]
    noise_limit: Option<f64>,
    /// Exit codes that count as success, comma-separated (default 0), e.g. 0,1 for grep.
    #[arg(short = 'i', long, value_name = "CODES", value_delimiter = ',')]
    ok_exit: Vec<u8>,
    /// A command run before every cell, untimed (split like the commands).
    #[arg(long, value_name = "CMD")]
    prepare: Option<String>,
    /// A command run once before the first cell.
    #[arg(long, value_name = "CMD")]
    setup: Option<String>,
    /// A command run once after the last cell, also after an abort.
    #[arg(long, value_name = "CMD")]
    cleanup: Option<String>,
    /// Run each command string as SHELL -c STRING (default sh) instead of splitting it.
    #[arg(long, value_name = "SHELL", num_args = 0..=1, require_equals = true, default_missing_value = ab::DEFAULT_SHELL)]
    shell: Option<String>,
    /// Scan a parameter over a range: {NAME} in the command takes LO, LO+1, ... HI.
    #[arg(short = 'P', long, num_args = 3, value_names = ["NAME", "LO", "HI"], allow_negative_numbers = true, conflicts_with = "parameter_list")]
    parameter_scan: Option<Vec<String>>,
    /// The step of -P (default 1; decimals allowed).
    #[arg(
        short = 'D',
        long,
        visible_alias = "parameter-step-size",
        value_name = "D",
        requires = "parameter_scan",
        allow_negative_numbers = true
    )]
    parameter_step: Option<String>,
    /// Scan a parameter over a list: {NAME} in the command takes each value.
    #[arg(short = 'L', long, num_args = 2, value_names = ["NAME", "VALUES"])]
    parameter_list: Option<Vec<String>>,
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
    /// Print each cell's stdout and stderr on stderr as well as keeping them in the side log.
    #[arg(long)]
    show_output: bool,
    /// Write analyze's JSON report of the ladder here.
    #[arg(long, value_name = "FILE")]
    export_json: Option<PathBuf>,
    /// Write analyze's markdown report of the ladder here (its figures beside it).
    #[arg(long, value_name = "FILE")]
    export_markdown: Option<PathBuf>,
    /// Write analyze's CSV summary of the ladder here.
    #[arg(long, value_name = "FILE")]
    export_csv: Option<PathBuf>,
    /// Folder for the spec, the ladder file and its side log.
    #[arg(long, default_value = "raw")]
    out: PathBuf,
    /// Names this run in the file names (default: the UTC start time).
    #[arg(long)]
    tag: Option<String>,
    /// The GPU index the witness watches (NVML numbering).
    #[arg(long, default_value_t = 0)]
    card: u32,
}

#[derive(Clone, Copy, ValueEnum)]
enum Output {
    Time,
    Csv,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum OrderArg {
    Rotate,
    Shuffle,
    Williams,
}

/// Runs the command; the exit code says how it ended.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Run(args) => run_spec(args),
        Command::Ab(args) => run_ab(*args),
        Command::Plan(args) => plan(args),
        Command::Fleet(args) => run_fleet(args),
        Command::Sbatch(args) => match run_sbatch(&sbatch_options(args)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&format!("{e:#}")),
        },
    }
}

fn run_spec(args: RunArgs) -> ExitCode {
    let options = RunOptions {
        spec: args.spec,
        tag: args.tag,
        out_dir: args.out,
        card: args.card,
        card_playback: args.card_playback,
        exit_fix: ExitFix::SpecKey,
    };
    match ladder_run::run_ladder(&options) {
        Ok(outcome) => {
            terminal::print(&summary::run_summary(&outcome));
            finish(&outcome)
        }
        Err(e) => fail(&format!("{e:#}")),
    }
}

fn ab_request(args: AbArgs) -> AbRequest {
    let scan = match (args.parameter_scan, args.parameter_list) {
        (Some(range), _) => {
            let [name, low, high] = <[String; 3]>::try_from(range).expect("clap takes 3 values");
            Some(ScanRequest::Range {
                name,
                low,
                high,
                step: args.parameter_step,
            })
        }
        (None, Some(list)) => {
            let [name, values] = <[String; 2]>::try_from(list).expect("clap takes 2 values");
            Some(ScanRequest::List { name, values })
        }
        (None, None) => None,
    };
    AbRequest {
        commands: args.commands,
        names: args.name,
        env_a: args.env_a,
        env_b: args.env_b,
        passes: args.passes,
        stop_halfwidth_pct: args.stop,
        warmup: args.warmup,
        order: args.order.map(|o| match o {
            OrderArg::Rotate => Scheme::Rotate,
            OrderArg::Shuffle => Scheme::Shuffle,
            OrderArg::Williams => Scheme::Williams,
        }),
        noise_limit_pct: args.noise_limit,
        output: match args.output {
            Output::Time => OutputMode::Time,
            Output::Csv => OutputMode::Csv,
            Output::Json => OutputMode::Json,
        },
        known_effect_pct: args.known_effect_pct,
        metrics: args.metric,
        higher_is_better: args.higher,
        ok_exit: args.ok_exit.into_iter().map(i32::from).collect(),
        prepare: args.prepare,
        setup: args.setup,
        cleanup: args.cleanup,
        shell: args.shell,
        scan,
        show_output: args.show_output,
        exports: Exports {
            json: args.export_json,
            markdown: args.export_markdown,
            csv: args.export_csv,
        },
        out: args.out,
        tag: args.tag.unwrap_or_else(ladder_run::default_tag),
    }
}

/// Writes the generated spec, runs it, and prints the report's summary and how to repeat it.
fn run_ab(args: AbArgs) -> ExitCode {
    let card = args.card;
    let request = ab_request(args);
    let run = match ab::run(&request, card, terminal::stdout_wants_colour()) {
        Ok(run) => run,
        Err(e) => return fail(&e),
    };
    terminal::print(&summary::ab_report(&run, &request.out));
    let code = finish(&run.outcome);
    match (&run.summary, request.exports.is_empty()) {
        (Some(Err(why)), false) => {
            terminal::eprint(&format!("runner: the exports were not written: {why}\n"));
            ExitCode::from(1)
        }
        _ => code,
    }
}

fn plan(args: PlanArgs) -> ExitCode {
    let loaded = match Spec::load(&args.spec) {
        Ok(loaded) => loaded,
        Err(e) => return fail(&e),
    };
    let order = ladder_run::order_of(&loaded.spec);
    print!("{}", crate::plan::describe(&loaded.spec, &order));
    match args
        .noise_from
        .map(|f| crate::plan::precision(&loaded.spec, &order, &f))
    {
        Some(Err(e)) => fail(&format!("{e:#}")),
        Some(Ok(text)) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        None => ExitCode::SUCCESS,
    }
}

fn run_fleet(args: FleetArgs) -> ExitCode {
    let options = FleetOptions {
        spec: args.spec,
        cards: args.cards,
        tag: args.tag,
        out_dir: args.out,
        cpus_per_ladder: args.cpus_per_ladder,
    };
    match fleet::run_fleet(&options) {
        Ok(members) => {
            terminal::print(&summary::fleet_report(&members));
            if members.iter().all(|m| m.connected) {
                ExitCode::SUCCESS
            } else {
                terminal::eprint(
                    "runner: not every ladder of the fleet is one connected run (see above)\n",
                );
                ExitCode::from(1)
            }
        }
        Err(e) => fail(&format!("{e:#}")),
    }
}

fn sbatch_options(args: SbatchArgs) -> SbatchOptions {
    SbatchOptions {
        spec: args.spec,
        replicas: args.replicas,
        partition: args.partition,
        gres: args.gres,
        time: args.time,
        tag: args.tag,
        out_dir: args.out,
        reports_dir: args.reports,
        dry_run: args.dry_run,
    }
}

fn run_sbatch(options: &SbatchOptions) -> anyhow::Result<()> {
    if options.dry_run {
        let runner = std::env::current_exe()?;
        let analyze = runner.with_file_name("analyze");
        let tag = options.tag.clone().unwrap_or_else(ladder_run::default_tag);
        let scripts = sbatch::scripts(options, &runner, &analyze, &tag)?;
        println!(
            "# {} (not written: --dry-run)\n{}",
            scripts.ladders_path.display(),
            scripts.ladders
        );
        println!(
            "# {} (not written: --dry-run; submitted with --dependency=afterany: the array's job id)\n{}",
            scripts.report_path.display(),
            scripts.report
        );
        return Ok(());
    }
    let done = sbatch::submit(options)?;
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

/// Says why nothing could be run; exit 2.
fn fail(message: &dyn std::fmt::Display) -> ExitCode {
    terminal::eprint(&format!("runner: {message}\n"));
    ExitCode::from(2)
}

/// Where the file is and how the ladder ended, as the exit code says it.
fn finish(outcome: &Outcome) -> ExitCode {
    let (out, err) = summary::ending(outcome);
    terminal::print(&out);
    terminal::eprint(&err);
    match outcome.aborted {
        None => ExitCode::SUCCESS,
        Some(_) => ExitCode::from(1),
    }
}
