use analyze::{calibrate, report, split, verify};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Reading thousands of ladders allocates millions of small rows; mimalloc does that
/// measurably faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Verify and report A/B ladders written by `runner`.
#[derive(Parser)]
#[command(name = "analyze", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay ladder files against their legal order; exit 0 only when every file is one
    /// connected run.
    Verify(verify::VerifyArgs),
    /// Cut a file holding several runs into one file per start record.
    Split(split::SplitArgs),
    /// Paired statistics, controls, round split, identity and cross-ladder spread.
    Report(report::ReportArgs),
    /// Error rates of the report's rules on simulated ladders of a spec's own design.
    Calibrate(calibrate::CalibrateArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Verify(args) => verify::run(args),
        Command::Split(args) => split::run(args),
        Command::Report(args) => report::run(args),
        Command::Calibrate(args) => calibrate::run(args),
    };
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("analyze: {e:#}");
            ExitCode::from(2)
        }
    }
}
