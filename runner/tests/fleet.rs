//! `runner fleet` on CPU slots, against the stand-in engine in `examples/test_engine.rs`.

mod common;

use common::{runner, write_test_engine_spec};
use ladder::verify::replay;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Writes `fleet.toml`: two arms of the test engine on cards 0 and 1, each cell sleeping `sleep_ms`.
fn spec(dir: &Path, sleep_ms: u32, passes: usize) -> PathBuf {
    write_test_engine_spec(
        dir,
        "fleet",
        passes,
        "cards = [0, 1]\n",
        &format!("TEST_SLEEP_MS = \"{sleep_ms}\""),
    )
}

fn fleet(dir: &Path, spec: &Path) -> Command {
    let mut command = Command::new(runner());
    command
        .args(["fleet"])
        .arg(spec)
        .args(["--cpus-per-ladder", "1", "--tag", "t", "--out"])
        .arg(dir.join("raw"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// The two files of a 2-slot fleet, card 0 then card 1.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir.join("raw")) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    files.sort();
    files
}

/// The first cell's start and the last cell's end of a ladder file, as text timestamps.
fn span(path: &Path) -> (String, String) {
    let text = std::fs::read_to_string(path).unwrap();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .collect();
    let field = |row: &str, i: usize| row.split(',').nth(i).unwrap().to_string();
    (field(rows[0], 3), field(rows[rows.len() - 1], 4))
}

#[test]
fn two_cpu_slots_write_two_connected_ladders_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), 150, 3);
    let out = fleet(dir.path(), &spec).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = files(dir.path());
    assert_eq!(files.len(), 2, "{files:?}");
    let host = runner::fleet::host_name();
    for (card, file) in files.iter().enumerate() {
        assert!(
            file.ends_with(format!("fleet_t-{host}-card{card}.csv")),
            "{}",
            file.display()
        );
        assert!(
            replay(&std::fs::read(file).unwrap()).verdict.connected,
            "{}",
            file.display()
        );
        assert!(stdout.contains(&file.display().to_string()), "{stdout}");
    }
    assert!(stdout.contains("one connected run"), "{stdout}");
    // Concurrent: each ladder started before the other ended.
    let (a, b) = (span(&files[0]), span(&files[1]));
    assert!(
        a.0 < b.1 && b.0 < a.1,
        "the ladders ran one after the other: {a:?} {b:?}"
    );
}

#[test]
fn sigint_ends_every_ladder_with_an_abort_record() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), 400, 20);
    let child = fleet(dir.path(), &spec).spawn().unwrap();
    let clock = Instant::now();
    // Wait until both ladders have written a cell, then interrupt the fleet alone.
    while files(dir.path())
        .iter()
        .filter(|f| std::fs::read_to_string(f).unwrap().lines().count() > 2)
        .count()
        < 2
    {
        assert!(
            clock.elapsed() < Duration::from_secs(30),
            "the ladders never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for file in files(dir.path()) {
        let text = std::fs::read_to_string(&file).unwrap();
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with("#ladder-abort ") && last.contains("SIGINT"),
            "{}: {last}",
            file.display()
        );
        let verdict = replay(text.as_bytes()).verdict;
        assert!(verdict.cells_found >= 1 && !verdict.connected);
    }
    assert!(
        clock.elapsed() < Duration::from_secs(20),
        "the fleet did not stop promptly"
    );
}
