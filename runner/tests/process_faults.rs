//! The cell's processes against the runner: a background process that keeps the cell's
//! stdout open, a cell that pours out more than a benchmark prints, and a runner killed
//! outright. None may hang the runner or outlive it.

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

#[test]
fn a_process_in_another_session_holding_stdout_does_not_hang_the_runner() {
    let dir = tempfile::tempdir().unwrap();
    // The cell waits until the sleeper is in its own session (it writes the marker after
    // setsid), so that the runner's kill of the cell's process group cannot catch it first.
    let marker = dir.path().join("detached");
    let script = format!(
        "setsid sh -c 'touch \"$0\"; exec sleep 30' {m} & while [ ! -e {m} ]; do sleep 0.01; done; echo tok_s; echo 100",
        m = marker.display()
    );
    let clock = Instant::now();
    let out = run(dir.path(), &spec(dir.path(), &script, 60));
    assert!(
        clock.elapsed() < Duration::from_secs(20),
        "the runner waited on the held pipe"
    );
    let last = aborted(dir.path(), &out);
    assert!(
        last.starts_with("#ladder-abort ") && last.contains("stdout stayed open"),
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
    let alive = || Path::new(&format!("/proc/{pid}")).exists() && !zombie(pid);
    let clock = Instant::now();
    while alive() {
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
