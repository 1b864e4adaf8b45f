//! Nothing a cell started outlives it. The runner is a child subreaper, so a process that
//! leaves the cell's process group or session (a daemon: double fork and `setsid`) is
//! re-parented to the runner instead of to init, and stays its descendant. At the end of
//! every cell the runner kills each descendant still alive and reaps it, before the next
//! cell starts.
//!
//! The runner must then have no children of its own besides the cells: every descendant
//! found is taken for something a cell left behind.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How long killed descendants may take to die (SIGKILL cannot be caught; only a process
/// stuck in the kernel takes longer).
const DEATH_GRACE: Duration = Duration::from_secs(2);

/// Makes orphans of every process this one starts its children, not init's.
pub fn become_subreaper() -> std::io::Result<()> {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag of this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A process a cell left running, as the side log names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    pub pid: i32,
    /// Its command line (or, where that is gone, its name).
    pub command: String,
}

impl std::fmt::Display for Leftover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pid {} ({})", self.pid, self.command)
    }
}

/// One entry of `/proc`.
struct Process {
    pid: i32,
    parent: i32,
    zombie: bool,
}

/// Kills every descendant of this process and reaps those re-parented to it, until none is
/// left; returns the ones it killed. `Err` names those that would not die.
pub fn kill_descendants() -> Result<Vec<Leftover>, String> {
    let me = std::process::id() as i32;
    let clock = Instant::now();
    let mut killed: Vec<Leftover> = Vec::new();
    loop {
        let left = descendants(me);
        if left.is_empty() {
            return Ok(killed);
        }
        if clock.elapsed() > DEATH_GRACE {
            let pids: Vec<String> = left.iter().map(|p| p.pid.to_string()).collect();
            return Err(format!(
                "processes the cell started did not die within {} s of SIGKILL: pid {}",
                DEATH_GRACE.as_secs(),
                pids.join(", ")
            ));
        }
        for process in &left {
            if !process.zombie && !killed.iter().any(|k| k.pid == process.pid) {
                killed.push(Leftover {
                    pid: process.pid,
                    command: command_of(process.pid),
                });
                // SAFETY: kill only sends a signal, to a descendant of this process.
                unsafe { libc::kill(process.pid, libc::SIGKILL) };
            }
            if process.parent == me {
                reap(process.pid);
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Every process below `root`, found by walking `/proc`'s parent links.
fn descendants(root: i32) -> Vec<Process> {
    let mut by_parent: BTreeMap<i32, Vec<Process>> = BTreeMap::new();
    for process in all_processes() {
        by_parent.entry(process.parent).or_default().push(process);
    }
    let mut found = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for child in by_parent.remove(&parent).unwrap_or_default() {
            parents.push(child.pid);
            found.push(child);
        }
    }
    found
}

fn all_processes() -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(process)
        .collect()
}

/// `/proc/PID/stat`'s parent and state; `None` when the process is already gone.
fn process(pid: i32) -> Option<Process> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name in parentheses may hold spaces and parentheses: the fields follow the last ')'.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    Some(Process {
        pid,
        parent,
        zombie: state == "Z",
    })
}

/// The most of a command line the side log names a process by.
const COMMAND_CHARS: usize = 200;

/// The command line of `pid`, its words joined by spaces (cut at `COMMAND_CHARS`), or its
/// name.
fn command_of(pid: i32) -> String {
    let words = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let line: Vec<String> = words
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    if !line.is_empty() {
        return line.join(" ").chars().take(COMMAND_CHARS).collect();
    }
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|_| "gone".into())
}

/// Collects a dead child's status, if it has died.
fn reap(pid: i32) {
    let mut status = 0;
    // SAFETY: waitpid on a child of this process, without blocking.
    unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_found_below_its_parent_with_its_command_line() {
        let me = std::process::id() as i32;
        let parent = process(me).unwrap().parent;
        assert!(descendants(parent).iter().any(|p| p.pid == me));
        assert!(!command_of(me).is_empty());
        assert!(process(-1).is_none());
    }
}
