//! Running one cell: a fresh process of the command, with its own environment, its stdout
//! captured, its stderr sent to the side log, a timeout, and the runner's signals obeyed.

use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use wait_timeout::ChildExt;

/// How a cell's process ended, as `ladder_exit` writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    fn of(status: ExitStatus) -> Exit {
        match (status.code(), status.signal()) {
            (Some(code), _) => Exit::Code(code),
            (None, Some(signal)) => Exit::Signal(signal),
            (None, None) => Exit::Code(-1),
        }
    }

    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exit::Code(code) => write!(f, "{code}"),
            Exit::Signal(signal) => write!(f, "signal:{signal}"),
        }
    }
}

/// Why the runner itself cut a cell short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    TimedOut,
    /// The runner received this signal (SIGINT, SIGTERM).
    Signal(usize),
}

/// One finished cell process.
pub struct CellRun {
    pub started: DateTime<Utc>,
    pub ended: DateTime<Utc>,
    pub wall_s: f64,
    pub exit: Exit,
    pub stdout: Vec<u8>,
    pub cut: Option<Cut>,
}

/// How often a waiting runner looks at its signal flag.
const POLL: Duration = Duration::from_millis(50);

/// Runs `program` with `args` and exactly `env` (nothing inherited beyond it), never
/// through a shell. `signal` holds the number of a signal the runner received, 0 while none.
pub fn run(
    program: &Path,
    args: &[String],
    env: &BTreeMap<String, String>,
    stderr: File,
    timeout: Duration,
    signal: &AtomicUsize,
) -> std::io::Result<CellRun> {
    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        // Its own process group: a timeout or a signal ends the cell and all it started.
        .process_group(0);
    let started = Utc::now();
    let clock = Instant::now();
    let mut child = command.spawn().map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot start {}: {e}", program.display()))
    })?;
    let mut pipe = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = pipe.read_to_end(&mut out);
        out
    });
    let mut cut = None;
    let status = loop {
        let left = timeout.saturating_sub(clock.elapsed());
        if let Some(status) = child.wait_timeout(left.min(POLL))? {
            break status;
        }
        let received = signal.load(Ordering::SeqCst);
        if received != 0 {
            cut = Some(Cut::Signal(received));
        } else if clock.elapsed() >= timeout {
            cut = Some(Cut::TimedOut);
        }
        if cut.is_some() {
            kill_group(child.id());
            break child.wait()?;
        }
    };
    let wall_s = clock.elapsed().as_secs_f64();
    let ended = Utc::now();
    let stdout = reader.join().unwrap_or_default();
    Ok(CellRun { started, ended, wall_s, exit: Exit::of(status), stdout, cut })
}

fn kill_group(pid: u32) {
    // The group id is the child's pid (process_group(0)), so this reaches all it started.
    // SAFETY: killpg only sends a signal; the group is the still unreaped child's.
    unsafe {
        libc::killpg(pid as libc::pid_t, libc::SIGKILL);
    }
}
