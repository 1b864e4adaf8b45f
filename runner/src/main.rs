use clap::{Parser, Subcommand};
use ladder::spec::Spec;
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
    /// Print the legal order (pass × slot grid) and the cell count; runs nothing.
    Plan {
        /// The ladder spec (TOML).
        spec: PathBuf,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Plan { spec } => match Spec::load(&spec) {
            Ok(loaded) => {
                print!("{}", runner::plan::describe(&loaded.spec, &ladder_run::order_of(&loaded.spec)));
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        },
        Command::Run { spec, tag, out, card } => {
            match ladder_run::run_ladder(&RunOptions { spec, tag, out_dir: out, card }) {
                Ok(outcome) => report(&outcome),
                Err(e) => fail(&format!("{e:#}")),
            }
        }
    }
}

fn fail(message: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("runner: {message}");
    ExitCode::from(2)
}

/// The short summary table, then where the file is and how it ended.
fn report(outcome: &Outcome) -> ExitCode {
    println!("{:<20} {:>6} {:>12} {:>16}", "arm", "cells", "wall s/cell", format!("{} mean", outcome.metric));
    for arm in &outcome.summary {
        let mean = |v: &[f64]| if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
        println!("{:<20} {:>6} {:>12.3} {:>16.4}", arm.name, arm.walls.len(), mean(&arm.walls), mean(&arm.metric));
    }
    println!("(metric mean over the analysis passes; read the paired deltas with `analyze report`)");
    match &outcome.aborted {
        None => {
            println!("wrote {} ({} cells)", outcome.path.display(), outcome.cells);
            ExitCode::SUCCESS
        }
        Some(reason) => {
            eprintln!("runner: ladder aborted after {} cells: {reason}", outcome.cells);
            eprintln!("runner: {} keeps every cell written so far and an abort record", outcome.path.display());
            ExitCode::from(1)
        }
    }
}
