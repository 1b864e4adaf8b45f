//! The command line: every clap type of `analyze`, turned into the plain options the
//! library takes, so that a library user never needs clap.

use crate::analysis::ExtrasConfig;
use crate::calibrate::{self, NoiseModel};
use crate::reading;
use crate::report::{self, Outputs};
use crate::{plan, split, verify};
use clap::{Parser, Subcommand};
use ladder::spec::Spec;
use std::path::PathBuf;

/// Verify and report A/B ladders written by `runner`.
#[derive(Parser)]
#[command(name = "analyze", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Replay ladder files against their legal order; exit 0 only when every file is one
    /// connected run.
    Verify(VerifyArgs),
    /// Cut a file holding several runs into one file per start record.
    Split(SplitArgs),
    /// Paired statistics, controls, round split, identity and cross-ladder spread.
    Report(ReportArgs),
    /// Error rates of the report's rules on simulated ladders of a spec's own design, or
    /// (--live) on real ladder files.
    Calibrate(CalibrateArgs),
    /// The repetitions a cell and the passes that reach a half-width in the least device
    /// time, from a pilot ladder run with `engine bench --rows reps`.
    Plan(PlanArgs),
}

#[derive(clap::Args, Debug)]
pub struct PlanArgs {
    /// The pilot ladder file.
    pub pilot: PathBuf,
    /// The 95 % interval's half-width to reach, in percent.
    #[arg(long, value_name = "PCT", value_parser = positive_pct)]
    pub halfwidth: f64,
    /// Arms of the ladder planned (default: the template's, else the pilot's).
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..))]
    pub arms: Option<u64>,
    /// A spec to apply the plan to: its engine `-r` and a pooled `[stop]` are set from the
    /// plan, everything else is kept; written to --write.
    #[arg(long, value_name = "SPEC.toml", requires = "write")]
    pub template: Option<PathBuf>,
    /// Where the planned spec goes.
    #[arg(long, value_name = "OUT.toml", requires = "template")]
    pub write: Option<PathBuf>,
    /// The device seconds of cells the ladder may take (a device call's limit): a plan
    /// that needs more is refused with the narrowest half-width that fits, and a written
    /// `[stop]` keeps only the looks that fit.
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds)]
    pub within: Option<f64>,
    /// Where the half-width does not fit --within, plan instead of refusing: at the
    /// narrowest half-width a fixed design reaches within it, widened until a written
    /// `[stop]`'s first look fits too (said above the plan).
    #[arg(long, requires = "within")]
    pub or_narrowest: bool,
    /// Plan from a pilot whose base cell is not the template's (another environment or
    /// argv): the plan prices the pilot's cells and says so.
    #[arg(long, requires = "template")]
    pub other_cells: bool,
}

#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// Ladder files to replay.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print one JSON object per file (an array) instead of words.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct SplitArgs {
    /// The file to cut.
    pub file: PathBuf,
    /// Where the parts go (default: beside the file).
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Ladder files to report on.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write the markdown report here (e.g. reports/NAME.md); the SVG figures go beside it.
    /// Without -o, --json, --csv and --summary a terminal gets the summary, a pipe the
    /// markdown without figures.
    #[arg(short = 'o', long = "out")]
    pub out: Option<PathBuf>,
    /// Write the JSON report here (`-` for stdout).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write a CSV summary here: one row per ladder × metric × arm (`-` for stdout).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Print only the one-screen summary, as plain text, to stdout.
    #[arg(long)]
    pub summary: bool,
    /// Compute statistics from files that are not one connected run, marked as such.
    #[arg(long)]
    pub allow_defects: bool,
    /// Bootstrap resamples per arm for the interval of the median (0 leaves it out).
    #[arg(long, default_value_t = 2000)]
    pub bootstrap: usize,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Read the controls with this equivalence margin (percent) where the spec registered
    /// none; the report says it was given after the run.
    #[arg(long, value_name = "PCT", value_parser = positive_pct)]
    pub margin_pct: Option<f64>,
    /// Compare two arms in every ladder that carries both, as ARM:AGAINST (repeatable).
    /// Without it, every pair of arms carried by ladders of two or more specs is compared.
    #[arg(long = "compare", value_name = "ARM:AGAINST", value_parser = parse_pair)]
    pub compare: Vec<(String, String)>,
}

#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// Ladder specs (TOML) whose design is simulated (several are also pooled); with --live,
    /// ladder files.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Read real ladder files and print abab's own error rates on them, per host and card.
    #[arg(long)]
    pub live: bool,
    /// Noise of one cell, in percent (one standard deviation of `ln x`, ×100).
    #[arg(long, default_value_t = 1.0)]
    pub noise_pct: f64,
    /// Take the noise scale and the drift from a real ladder's residuals instead.
    #[arg(long, value_name = "FILE")]
    pub noise_from: Option<PathBuf>,
    /// A true effect on every `arm`-role arm, in percent: adds coverage and power.
    #[arg(long)]
    pub effect_pct: Option<f64>,
    /// A true effect on every inert control (null, reflexive), in percent: how often a
    /// control still holds.
    #[arg(long)]
    pub control_effect_pct: Option<f64>,
    /// Simulate this many metrics instead of the spec's own: every one but the last
    /// correlated at --correlation, the last independent.
    #[arg(long)]
    pub metrics: Option<usize>,
    /// The correlation of the metrics that share a factor.
    #[arg(long, default_value_t = 0.5)]
    pub correlation: f64,
    /// Simulated ladders per spec and noise model (with --live: per real ladder).
    #[arg(long, default_value_t = 1000)]
    pub ladders: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The carry-over model's effect: a cell after the carrying arm is this much slower.
    #[arg(long, default_value_t = 1.0)]
    pub carry_over_pct: f64,
    /// Only these noise models (comma-separated names, as printed).
    #[arg(long, value_delimiter = ',', value_enum)]
    pub models: Vec<NoiseModel>,
    /// Print the results as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

fn parse_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once(':') {
        Some((a, b)) if !a.is_empty() && !b.is_empty() => Ok((a.into(), b.into())),
        _ => Err(format!(
            "{text:?} is not ARM:AGAINST; write e.g. --compare window:null"
        )),
    }
}

fn positive(text: &str) -> Option<f64> {
    text.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
}

fn positive_pct(text: &str) -> Result<f64, String> {
    positive(text).ok_or_else(|| format!("{text:?} is not a positive percent; write e.g. 0.5"))
}

fn positive_seconds(text: &str) -> Result<f64, String> {
    positive(text)
        .ok_or_else(|| format!("{text:?} is not a positive number of seconds; write e.g. 540"))
}

/// Runs the command; the exit code on success.
pub fn run(cli: &Cli) -> anyhow::Result<i32> {
    match &cli.command {
        Command::Verify(args) => verify::run(&args.files, args.json),
        Command::Split(args) => split::run(&args.file, args.out_dir.as_deref()),
        Command::Report(args) => report::run(&args.files, &outputs(args), &read_options(args)),
        Command::Calibrate(args) => calibrate_run(args),
        Command::Plan(args) => plan_run(args),
    }
}

/// `analyze plan`: the plan in words, and with `--template` the planned spec written.
fn plan_run(args: &PlanArgs) -> anyhow::Result<i32> {
    let pilot = plan::pilot(&args.pilot)?;
    let template = match &args.template {
        Some(path) => Some(Spec::load(path).map_err(|e| anyhow::anyhow!("{e}"))?.spec),
        None => None,
    };
    if let Some(template) = &template {
        if let Some(why) = pilot.check_cells(template, args.other_cells)? {
            println!("--other-cells: the template's base cells are not the pilot's ({why}); this plan prices the pilot's\n");
        }
    }
    let arms = match (args.arms, &template) {
        (Some(n), _) => n as usize,
        (None, Some(spec)) => spec.arms.len(),
        (None, None) => pilot.arms,
    };
    let asked = plan::Goal {
        halfwidth_pct: args.halfwidth,
        arms,
        within_s: args.within,
        stop: args.template.is_some(),
    };
    let (goal, plan) = plan::fitted(&pilot, asked, args.or_narrowest)?;
    print!("{plan}");
    if let (Some(template), Some(out)) = (&args.template, &args.write) {
        let within = args
            .within
            .map_or(String::new(), |s| format!(" --within {s}"));
        let narrowest = match args.or_narrowest {
            true => " --or-narrowest",
            false => "",
        };
        let origin = format!(
            "analyze plan {} --halfwidth {} --arms {arms}{within}{narrowest} --template {}",
            args.pilot.display(),
            args.halfwidth,
            template.display()
        );
        let applied = plan::applied(&pilot, &goal)?;
        plan::write(template, out, &applied, &origin)?;
        let within = applied
            .within_s
            .map_or(String::new(), |w| format!(", within_s = {w}"));
        println!(
            "wrote {}: -r {}, [stop] halfwidth_pct = {}, spread = \"pooled\", looks {:?}{within}",
            out.display(),
            applied.reps,
            applied.halfwidth_pct,
            applied.looks
        );
    }
    Ok(0)
}

fn outputs(args: &ReportArgs) -> Outputs {
    Outputs {
        markdown: args.out.clone(),
        json: args.json.clone(),
        csv: args.csv.clone(),
        summary: args.summary,
    }
}

fn read_options(args: &ReportArgs) -> reading::Options {
    reading::Options {
        allow_defects: args.allow_defects,
        extras: ExtrasConfig {
            resamples: args.bootstrap,
            seed: args.seed,
        },
        compare: args.compare.clone(),
        margin_pct: args.margin_pct,
    }
}

fn calibrate_run(args: &CalibrateArgs) -> anyhow::Result<i32> {
    let clock = std::time::Instant::now();
    if args.live {
        let ledger = calibrate::ledger(&args.inputs, args.ladders, args.seed)?;
        match args.json {
            true => println!("{}", serde_json::to_string_pretty(&ledger)?),
            false => print!("{}", calibrate::render_ledger(&ledger)),
        }
        return Ok(0);
    }
    anyhow::ensure!(
        (0.0..1.0).contains(&args.correlation),
        "--correlation {} is not in [0, 1); give e.g. --correlation 0.5",
        args.correlation
    );
    let options = calibrate::Options {
        specs: args.inputs.clone(),
        noise_pct: args.noise_pct,
        noise_from: args.noise_from.clone(),
        effect_pct: args.effect_pct,
        control_effect_pct: args.control_effect_pct,
        metrics: args.metrics.filter(|&m| m > 0),
        correlation: args.correlation,
        ladders: args.ladders,
        seed: args.seed,
        carry_over_pct: args.carry_over_pct,
        models: args.models.clone(),
    };
    let (scale, all) = calibrate::calibrate(&options)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"scale": scale, "rates": all}))?
        );
    } else {
        print!("{}", calibrate::render(&options, &scale, &all));
        println!("\n{:.1} s", clock.elapsed().as_secs_f64());
    }
    Ok(0)
}
