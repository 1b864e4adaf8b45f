use clap::Parser;
use runner::cli::{self, Cli};
use std::process::ExitCode;

fn main() -> ExitCode {
    cli::run(Cli::parse())
}
