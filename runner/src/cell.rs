//! Running one cell: a fresh process of the command, with its own environment, its stdout
//! captured or discarded, its stderr captured for the side log, a timeout, the runner's
//! signals obeyed, and the child's resource usage read when it is reaped. Whatever the cell
//! started is killed before the next one starts ([`crate::reaper`]).

use crate::capture::Captured;
use crate::reaper::{self, Leftover};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

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

    /// Whether the exit counts as success: an exit code among `ok` (a signal never does).
    pub fn is_ok(self, ok: &[i32]) -> bool {
        matches!(self, Exit::Code(code) if ok.contains(&code))
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

/// What the child used, from `wait4`'s rusage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub user_s: f64,
    pub sys_s: f64,
    pub maxrss_kib: i64,
}

/// What happens to the cell's stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdoutTo {
    /// `/dev/null`: nothing is read (time mode with `stdout = "discard"`).
    Null,
    /// Read whole, to be parsed.
    Whole,
    /// Read, keeping a head and a tail of at most the output cap.
    Capped,
}

/// A busy-wait the runner adds inside a cell's timed span, after its process has ended:
/// the known-effect control of a `time` ladder (`pad_pct`, LADDER-FORMAT.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pad {
    /// This long.
    Fixed(Duration),
    /// This fraction of the cell's own process time (when no base cell has run yet).
    OfOwn(f64),
}

impl Pad {
    fn length(self, process: Duration) -> Duration {
        match self {
            Pad::Fixed(d) => d,
            Pad::OfOwn(fraction) => process.mul_f64(fraction),
        }
    }
}

/// Spins (never sleeps) until `deadline`: the pad must cost what a slower program would. No
/// `spin_loop` (PAUSE) hint: in a virtual machine a PAUSE loop lets the hypervisor take the
/// vCPU away (pause-loop exiting), and the pad would end late.
fn busy_wait_until(deadline: Instant) {
    while Instant::now() < deadline {}
}

/// One cell's process: what to run and how.
pub struct Launch<'a> {
    pub program: &'a Path,
    pub args: &'a [String],
    pub env: &'a BTreeMap<String, String>,
    pub stdout: StdoutTo,
    /// The most bytes of stdout (when capped) and of stderr that are kept.
    pub cap: usize,
    pub timeout: Duration,
    /// The number of a signal the runner received, 0 while none.
    pub signal: &'a AtomicUsize,
    /// A busy-wait added inside the timed span after the process ends.
    pub pad: Option<Pad>,
}

/// One finished cell process.
pub struct CellRun {
    pub started: DateTime<Utc>,
    pub ended: DateTime<Utc>,
    pub wall_s: f64,
    pub exit: Exit,
    pub stdout: Captured,
    pub stderr: Captured,
    pub usage: Usage,
    pub cut: Option<Cut>,
    /// Processes the cell started that were still running after it ended, now killed.
    pub leftovers: Vec<Leftover>,
}

/// How often a waiting runner looks at its signal flag.
const POLL: Duration = Duration::from_millis(50);

/// The most stdout the runner holds to parse: a benchmark's rows are small, and a cell that
/// pours out more is refused by name instead of filling the runner's memory.
pub const PARSED_STDOUT_LIMIT: usize = 16 << 20;

/// How long the runner waits, after the cell's process has ended and every process it
/// started was killed, for its stdout and stderr to close. Longer means a process that is
/// not the runner's descendant holds them (one the cell handed the pipe to).
const PIPES_GRACE: Duration = Duration::from_secs(2);

/// Runs the launch with exactly its environment (nothing inherited beyond it), never
/// through a shell. Afterwards every descendant of the runner still alive is killed: the
/// caller runs no other children while cells run.
pub fn run(launch: &Launch) -> std::io::Result<CellRun> {
    let mut command = Command::new(launch.program);
    command
        .args(launch.args)
        .env_clear()
        .envs(launch.env)
        .stdin(Stdio::null())
        .stdout(if launch.stdout == StdoutTo::Null {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .stderr(Stdio::piped())
        // Its own process group: a timeout or a signal ends the cell and all it started.
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; it only asks the kernel to kill the cell if the
    // runner dies first (SIGKILL included), so that a dead runner leaves no engine behind.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let started = Utc::now();
    let clock = Instant::now();
    let mut child = command.spawn().map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot start {}: {e}", launch.program.display()),
        )
    })?;
    let cap = launch.cap;
    let stdout_reader = child.stdout.take().map(|pipe| {
        let whole = launch.stdout == StdoutTo::Whole;
        let cap = if whole { PARSED_STDOUT_LIMIT } else { cap };
        reader(move || drain(pipe, cap))
    });
    let stderr = child.stderr.take().expect("stderr is piped");
    let stderr_reader = reader(move || drain(stderr, cap));
    let pid = child.id() as libc::pid_t;
    // A thread blocked in wait4 notes the end the moment the child exits; polling would
    // add up to one poll interval to every wall time.
    let (done, reaped) = mpsc::channel();
    std::thread::spawn(move || {
        let _ =
            done.send(reap(pid).map(|(status, usage)| (Instant::now(), Utc::now(), status, usage)));
    });
    let mut cut = None;
    let (end, ended, status, usage) = loop {
        match reaped.recv_timeout(POLL) {
            Ok(result) => break result?,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(std::io::Error::other(
                    "the thread waiting for the cell ended without its status",
                ));
            }
        }
        if cut.is_some() {
            continue; // killed already; wait for the reap
        }
        let received = launch.signal.load(Ordering::SeqCst);
        if received != 0 {
            cut = Some(Cut::Signal(received));
        } else if clock.elapsed() >= launch.timeout {
            cut = Some(Cut::TimedOut);
        }
        if cut.is_some() {
            kill_group(pid);
        }
    };
    let (end, ended) = match launch.pad.filter(|_| cut.is_none()) {
        Some(pad) => {
            busy_wait_until(end + pad.length(end.duration_since(clock)));
            (Instant::now(), Utc::now())
        }
        None => (end, ended),
    };
    let wall_s = end.duration_since(clock).as_secs_f64();
    // Whatever the cell left behind goes with it: its group at once, then every process
    // that left the group (re-parented to the runner, a subreaper).
    kill_group(pid);
    let leftovers = reaper::kill_descendants().map_err(std::io::Error::other)?;
    let stdout = match stdout_reader {
        Some(r) => closed(r, "stdout")?,
        None => Captured::default(),
    };
    let stderr = closed(stderr_reader, "stderr")?;
    Ok(CellRun {
        started,
        ended,
        wall_s,
        exit: Exit::of(ExitStatus::from_raw(status)),
        stdout,
        stderr,
        usage,
        cut,
        leftovers,
    })
}

/// Reads one pipe on its own thread; the receiver gets what was read once the pipe closes.
fn reader(read: impl FnOnce() -> Captured + Send + 'static) -> mpsc::Receiver<Captured> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || send.send(read()));
    receive
}

/// What a pipe held, once it closed; an error, not a hang, when a process that is not the
/// runner's descendant keeps it open.
fn closed(pipe: mpsc::Receiver<Captured>, name: &str) -> std::io::Result<Captured> {
    pipe.recv_timeout(PIPES_GRACE).map_err(|_| {
        std::io::Error::other(format!(
            "the cell's {name} stayed open after its process ended and every process it \
             started was killed: a process outside the cell holds it; do not hand {name} to \
             another program (redirect that program's output to a file)"
        ))
    })
}

fn drain(mut pipe: impl Read, cap: usize) -> Captured {
    let mut captured = Captured::new(cap);
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = pipe.read(&mut buf) {
        if n == 0 {
            break;
        }
        captured.push(&buf[..n]);
    }
    captured
}

/// Waits for `pid` and returns its raw status and resource usage.
fn reap(pid: libc::pid_t) -> std::io::Result<(i32, Usage)> {
    let mut status = 0;
    // SAFETY: rusage is plain old data; wait4 fills it and the status for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: as above; pid is our unreaped child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok((
        status,
        Usage {
            user_s: seconds(usage.ru_utime),
            sys_s: seconds(usage.ru_stime),
            maxrss_kib: usage.ru_maxrss,
        },
    ))
}

fn kill_group(pid: libc::pid_t) {
    // The group id is the child's pid (process_group(0)), so this reaches all it started.
    // SAFETY: killpg only sends a signal; the group is the still unreaped child's.
    unsafe {
        libc::killpg(pid, libc::SIGKILL);
    }
}
