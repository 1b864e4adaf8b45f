//! The runner end to end, against the stand-in engine in `examples/test_engine.rs`.

mod common;

use common::{copy_test_engine, runner, stderr, RunDir};
use ladder::verify::{replay, DefectKind};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A spec in a fresh folder, with three arms whose speeds differ; `extra` goes into `[env]`.
struct Ladder {
    run_dir: RunDir,
    engine: PathBuf,
}

impl std::ops::Deref for Ladder {
    type Target = RunDir;

    fn deref(&self) -> &RunDir {
        &self.run_dir
    }
}

impl Ladder {
    fn new() -> Ladder {
        let run_dir = RunDir::new("e2e");
        // A private copy, so that a test may replace it without touching the others.
        let engine = copy_test_engine(run_dir.dir.path());
        Ladder { run_dir, engine }
    }

    fn spec(&self, top: &str, env: &str) -> PathBuf {
        let text = format!(
            r#"name = "e2e"
command = ["{engine}"]
passes = 3
noise_limit_pct = 1.0
{top}

[env]
{env}

[[arm]]
name = "off"
role = "base"
env = {{ TEST_SPEED = "100" }}

[[arm]]
name = "fast"
env = {{ TEST_SPEED = "110", SOMETHING_LONGER = "to change the environment's size" }}

[[arm]]
name = "null"
role = "null"
env = {{ TEST_SPEED = "100" }}

[[metric]]
column = "tok_s"
better = "higher"

[identity]
column = "digest"
"#,
            engine = self.engine.display()
        );
        let path = self.dir.path().join("e2e.toml");
        std::fs::write(&path, text).unwrap();
        path
    }
}

#[test]
fn a_clean_ladder_is_one_connected_run() {
    let ladder = Ladder::new();
    let spec = ladder.spec("", "COMMON = \"yes\"");
    let out = ladder.run(&spec);
    assert!(out.status.success(), "{}", stderr(&out));
    let replayed = replay(ladder.text().as_bytes());
    assert!(replayed.verdict.connected, "{:?}", replayed.verdict.defects);
    assert_eq!(replayed.verdict.cells_found, 9);
    let parsed = replayed.ladder.unwrap();
    let start = &parsed.start;
    assert_eq!(
        start.spec_blake3,
        blake3::hash(&std::fs::read(&spec).unwrap())
            .to_hex()
            .to_string()
    );
    assert_eq!(
        start.binary.blake3,
        blake3::hash(&std::fs::read(&ladder.engine).unwrap())
            .to_hex()
            .to_string()
    );
    assert_eq!(start.spec["arm"][1]["name"], "fast");
    assert_eq!(start.extra["common_env"]["COMMON"], "yes");
    // The parent environment is never recorded.
    assert!(!ladder.text().contains("\"PATH\""));
    let tok = parsed.column("tok_s").unwrap();
    let arm_speed = |arm: &str| {
        let i = start.arms.iter().position(|a| a.name == arm).unwrap();
        parsed
            .rows
            .iter()
            .find(|r| r.arm == i)
            .unwrap()
            .fields
            .get(tok)
            .unwrap()
            .parse::<f64>()
            .unwrap()
    };
    assert!(arm_speed("fast") > 109.0 && arm_speed("off") < 101.0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("fast") && stdout.contains("tok_s mean"),
        "{stdout}"
    );
    let log = std::fs::read_to_string(ladder.out().join("e2e_t.stderr.log")).unwrap();
    assert_eq!(log.matches("test engine: arm").count(), 9);
}

#[test]
fn every_cell_sees_an_environment_of_the_same_size() {
    let ladder = Ladder::new();
    let out = ladder.run(&ladder.spec("", ""));
    assert!(out.status.success(), "{}", stderr(&out));
    let parsed = replay(ladder.text().as_bytes()).ladder.unwrap();
    let column = parsed.column("env_bytes").unwrap();
    let sizes: Vec<&str> = parsed
        .rows
        .iter()
        .map(|r| r.fields.get(column).unwrap())
        .collect();
    assert!(sizes.iter().all(|s| *s == sizes[0]), "{sizes:?}");
}

#[test]
fn a_failing_cell_ends_the_ladder_with_its_row_and_an_abort_record() {
    let ladder = Ladder::new();
    let out = ladder.run(&ladder.spec("", "TEST_FAIL_AT = \"1:1\""));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("exited with status 3"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        ladder.defect_kinds(),
        vec![DefectKind::FailedCell, DefectKind::Aborted]
    );
    assert!(ladder
        .text()
        .lines()
        .last()
        .unwrap()
        .contains("\"cells\":5"));
}

#[test]
fn a_cell_past_its_timeout_is_killed() {
    let ladder = Ladder::new();
    let clock = Instant::now();
    let out = ladder.run(&ladder.spec("timeout_s = 1", "TEST_SLEEP_AT = \"0:2\""));
    assert!(clock.elapsed() < Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("timed out after 1 s"),
        "{}",
        stderr(&out)
    );
    assert!(ladder.text().contains(",signal:9,"));
    assert_eq!(
        ladder.defect_kinds(),
        vec![DefectKind::FailedCell, DefectKind::Aborted]
    );
}

#[test]
fn a_binary_replaced_mid_run_stops_the_ladder() {
    let ladder = Ladder::new();
    let out = ladder.run(&ladder.spec("", "TEST_REPLACE_AT = \"0:1\""));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("changed"), "{}", stderr(&out));
    let text = ladder.text();
    assert!(text.lines().last().unwrap().starts_with("#ladder-abort "));
    assert!(text.contains("before pass 0 slot 2"), "{text}");
    assert_eq!(ladder.defect_kinds(), vec![DefectKind::Aborted]);
}

/// Waits until the ladder file holds `cells` rows.
fn wait_for_rows(ladder: &Ladder, cells: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let rows = std::fs::read_to_string(ladder.file())
            .map(|t| t.lines().skip(2).count())
            .unwrap_or(0);
        if rows >= cells {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the ladder never reached {cells} rows");
}

#[test]
fn a_killed_runner_leaves_a_valid_prefix() {
    let ladder = Ladder::new();
    let spec = ladder.spec("", "TEST_SLEEP_MS = \"200\"");
    let mut child = ladder
        .command(&spec)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_rows(&ladder, 2);
    child.kill().unwrap();
    child.wait().unwrap();
    let verdict = replay(ladder.text().as_bytes()).verdict;
    let kinds: Vec<DefectKind> = verdict.defects.iter().map(|d| d.kind).collect();
    assert_eq!(kinds, vec![DefectKind::MissingDone]);
    assert!(verdict.cells_found >= 2 && verdict.cells_found < 9);
}

#[test]
fn sigint_writes_an_abort_record() {
    let ladder = Ladder::new();
    let spec = ladder.spec("", "TEST_SLEEP_MS = \"300\"");
    let child = ladder
        .command(&spec)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_rows(&ladder, 1);
    // SAFETY: sends a signal to our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let last = ladder.text().lines().last().unwrap().to_string();
    assert!(
        last.starts_with("#ladder-abort ") && last.contains("SIGINT"),
        "{last}"
    );
    assert!(ladder.defect_kinds().contains(&DefectKind::Aborted));
}

#[test]
fn json_output_with_several_rows_per_cell() {
    let ladder = Ladder::new();
    let out = ladder.run(&ladder.spec("output = \"json\"", "TEST_JSON = \"1\"\nTEST_ROWS = \"2\""));
    assert!(out.status.success(), "{}", stderr(&out));
    let replayed = replay(ladder.text().as_bytes());
    assert!(replayed.verdict.connected, "{:?}", replayed.verdict.defects);
    let rows = replayed.ladder.unwrap().rows;
    assert_eq!(rows.len(), 18);
    assert_eq!((rows[0].row, rows[1].row), (0, 1));
}

#[test]
fn a_metric_the_engine_does_not_print_names_the_spec_line() {
    let ladder = Ladder::new();
    let spec = ladder.spec("", "");
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("column = \"tok_s\"", "column = \"tokens_per_s\"");
    std::fs::write(&spec, text).unwrap();
    let out = ladder.run(&spec);
    assert_eq!(out.status.code(), Some(1));
    let message = stderr(&out);
    assert!(
        message.contains("e2e.toml:25")
            && message.contains("tokens_per_s")
            && message.contains("tok_s"),
        "{message}"
    );
}

#[test]
fn an_existing_ladder_file_is_never_overwritten() {
    let ladder = Ladder::new();
    let spec = ladder.spec("", "");
    assert!(ladder.run(&spec).status.success());
    let before = ladder.text();
    let out = ladder.run(&spec);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert_eq!(ladder.text(), before);
}

#[test]
fn a_bad_spec_is_refused_with_file_line_and_fix() {
    let ladder = Ladder::new();
    let spec = ladder.spec("pases = 3", "");
    let out = ladder.run(&spec);
    assert_eq!(out.status.code(), Some(2));
    let message = stderr(&out);
    assert!(
        message.contains("e2e.toml:5") && message.contains("did you mean `passes`"),
        "{message}"
    );
    assert!(!ladder.file().exists());
}

#[test]
fn plan_prints_the_grid() {
    let ladder = Ladder::new();
    let spec = ladder.spec("order = \"williams\"", "");
    let out = Command::new(runner())
        .arg("plan")
        .arg(&spec)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("9 cells: 3 passes × 3 arms, order williams"),
        "{text}"
    );
    let rows: Vec<&str> = text.lines().skip(1).take(3).collect();
    assert!(
        rows[0].contains("off") && rows[0].starts_with("    0w"),
        "{text}"
    );
}
