use analyze::cli::{self, Cli};
use clap::Parser;
use std::process::ExitCode;

/// Reading thousands of ladders allocates millions of small rows; mimalloc does that
/// measurably faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `analyze … | head` ends quietly when the reader closes the pipe, as other Unix tools do,
/// instead of panicking on the failed write (Rust starts programs ignoring SIGPIPE).
fn end_quietly_on_a_closed_pipe() {
    // SAFETY: first thing in main, before any thread starts; it only restores one signal's
    // default disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    end_quietly_on_a_closed_pipe();
    match cli::run(&Cli::parse()) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("analyze: {e:#}");
            ExitCode::from(2)
        }
    }
}
