use analyze::cli::{self, Cli};
use clap::Parser;
use std::process::ExitCode;

/// Reading thousands of ladders allocates millions of small rows; mimalloc does that
/// measurably faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    match cli::run(&Cli::parse()) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("analyze: {e:#}");
            ExitCode::from(2)
        }
    }
}
