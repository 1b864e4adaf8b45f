//! The cell's processes against the runner: a daemon a cell starts, a background process
//! that keeps the cell's stdout open, a process outside the runner that holds it, a cell
//! that pours out more than a benchmark prints, and a runner killed outright. None may hang
//! the runner, and nothing a cell started outlives the cell.

mod common;

use common::{run_command, runner, stderr};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A two-arm csv spec whose cells run `sh -c SCRIPT`.
fn spec(dir: &Path, script: &str, timeout_s: u32) -> PathBuf {
    let text = format!(
        r#"name = "faults"
command = ["/bin/sh", "-c", {script:?}]
passes = 3
timeout_s = {timeout_s}

[[arm]]
name = "off"
role = "base"

[[arm]]
name = "on"
env = {{ ARM_ON = "1" }}

[[metric]]
column = "tok_s"
better = "higher"
"#
    );
    let path = dir.join("faults.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn run(dir: &Path, spec: &Path) -> Output {
    run_command(spec, dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The ladder file's last line, once the runner has exited with status 1 (an abort).
fn aborted(dir: &Path, out: &Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    let text = std::fs::read_to_string(dir.join("faults_t.csv")).unwrap();
    text.lines().last().unwrap().to_string()
}

/// Whether `pid` is a process that has not ended (a zombie has ended).
fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists() && !zombie(pid)
}

/// The pids written one per line into `file`.
fn pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// The ladder file, replayed: one connected run.
fn connected(dir: &Path, out: &Output) -> ladder::verify::Ladder {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    let replayed = ladder::verify::replay(&std::fs::read(dir.join("faults_t.csv")).unwrap());
    assert!(replayed.verdict.connected, "{:?}", replayed.verdict.defects);
    replayed.ladder.unwrap()
}

#[test]
fn a_daemon_a_cell_starts_is_killed_when_the_cell_ends_and_never_overlaps_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let (events, daemons) = (dir.path().join("events"), dir.path().join("daemons"));
    // Double fork and setsid: the daemon leaves the cell's process group and session, and
    // its parent exits, so that it is nobody's child but the subreaper's (or init's). It
    // notes the cell it came from until it is killed (or, should the runner fail to, for
    // ten seconds or so).
    let script = format!(
        "echo start $LADDER_PASS.$LADDER_SLOT >> {e}; \
         ( setsid sh -c 'echo $$ >> {d}; for i in $(seq 2000); do echo alive $0 >> {e}; sleep 0.005; done' \
           $LADDER_PASS.$LADDER_SLOT < /dev/null > /dev/null 2>&1 & ); \
         sleep 0.05; echo tok_s; echo 100",
        e = events.display(),
        d = daemons.display()
    );
    let out = run(dir.path(), &spec(dir.path(), &script, 60));
    let ladder = connected(dir.path(), &out);
    assert_eq!(ladder.rows.len(), 6);
    let started = pids(&daemons);
    assert_eq!(started.len(), 6, "one daemon per cell");
    for pid in &started {
        assert!(!alive(*pid), "the daemon {pid} outlived its cell");
    }
    // After a cell starts, only its own daemon is ever heard from.
    let mut cell = String::new();
    for line in std::fs::read_to_string(&events).unwrap().lines() {
        match line.split_once(' ') {
            Some(("start", id)) => cell = id.to_string(),
            Some(("alive", id)) => {
                assert_eq!(id, cell, "cell {id}'s daemon overlapped cell {cell}")
            }
            _ => panic!("{line}"),
        }
    }
    let log = std::fs::read_to_string(dir.path().join("faults_t.stderr.log")).unwrap();
    // The daemon, and the sleep it may be running.
    assert_eq!(log.matches("--- killed ").count(), 6, "{log}");
    for pid in &started {
        assert!(
            log.contains(&format!("pid {pid} (sh -c echo $$ >> ")),
            "{pid}: {log}"
        );
    }
}

#[test]
fn a_process_in_another_session_holding_stdout_is_killed_and_the_ladder_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    // The cell waits until its own sleeper is in its own session (it writes its pid after
    // setsid; the marker of the cell before is removed first), so that the kill of the
    // cell's process group cannot be what ends it.
    let marker = dir.path().join("detached");
    let script = format!(
        "rm -f {m}; setsid sh -c 'echo $$ > \"$0\"; exec sleep 30' {m} & while [ ! -s {m} ]; do sleep 0.01; done; echo tok_s; echo 100",
        m = marker.display()
    );
    let clock = Instant::now();
    let out = run(dir.path(), &spec(dir.path(), &script, 60));
    assert!(
        clock.elapsed() < Duration::from_secs(20),
        "the runner waited on the held pipe"
    );
    connected(dir.path(), &out);
    let sleeper = pids(&marker)[0];
    assert!(!alive(sleeper), "the sleeper {sleeper} outlived its cell");
    let log = std::fs::read_to_string(dir.path().join("faults_t.stderr.log")).unwrap();
    assert!(log.contains(&format!("pid {sleeper} (sleep 30)")), "{log}");
}

#[test]
fn a_process_outside_the_runner_holding_stdout_does_not_hang_it() {
    let dir = tempfile::tempdir().unwrap();
    // The cell writes its pid, then waits until this test (no descendant of the runner) has
    // opened the cell's stdout through /proc, as a program handed the pipe would hold it.
    let (pid_file, go) = (dir.path().join("cell.pid"), dir.path().join("go"));
    let script = format!(
        "echo $$ > {p}.tmp; mv {p}.tmp {p}; while [ ! -e {g} ]; do sleep 0.01; done; echo tok_s; echo 100",
        p = pid_file.display(),
        g = go.display()
    );
    let spec = spec(dir.path(), &script, 60);
    let child = run_command(&spec, dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let clock = Instant::now();
    while !pid_file.exists() {
        assert!(
            clock.elapsed() < Duration::from_secs(20),
            "the cell never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let cell = pids(&pid_file)[0];
    let held = std::fs::OpenOptions::new()
        .write(true)
        .open(format!("/proc/{cell}/fd/1"))
        .unwrap();
    std::fs::write(&go, "").unwrap();
    let clock = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        clock.elapsed() < Duration::from_secs(20),
        "the runner waited on the held pipe"
    );
    drop(held);
    let last = aborted(dir.path(), &out);
    assert!(
        last.starts_with("#ladder-abort ") && last.contains("stdout stayed open"),
        "{last}"
    );
    assert!(
        last.contains("a process outside the cell holds it"),
        "{last}"
    );
}

#[test]
fn a_cell_printing_more_than_the_parse_limit_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let script = "echo tok_s; head -c 20000000 /dev/zero | tr '\\0' 1; echo";
    let out = run(dir.path(), &spec(dir.path(), script, 60));
    let last = aborted(dir.path(), &out);
    assert!(
        last.contains("more than the 16 MiB the runner parses"),
        "{last}"
    );
}

#[test]
fn a_runner_killed_outright_leaves_no_cell_behind() {
    let dir = tempfile::tempdir().unwrap();
    // The cell writes its pid, then sleeps far past the test.
    let pid_file = dir.path().join("cell.pid");
    let script = format!("echo $$ > {}; exec sleep 60", pid_file.display());
    let spec = spec(dir.path(), &script, 120);
    let mut child = Command::new(runner())
        .arg("run")
        .arg(&spec)
        .args(["--tag", "t", "--out"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let clock = Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(
            clock.elapsed() < Duration::from_secs(20),
            "the cell never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap(); // SIGKILL: no handler runs
    child.wait().unwrap();
    let clock = Instant::now();
    while alive(pid) {
        assert!(
            clock.elapsed() < Duration::from_secs(5),
            "the cell {pid} outlived the runner"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true)
}
