//! A careful user and a broken engine against the runner: whatever it would only find out
//! mid-run is refused before the ladder file exists, and every bad cell ends the ladder
//! with an abort record that names it.

mod common;

use common::{runner, stderr, test_engine_path, RunDir};
use ladder::verify::{replay, DefectKind};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

struct Case {
    run_dir: RunDir,
}

impl std::ops::Deref for Case {
    type Target = RunDir;

    fn deref(&self) -> &RunDir {
        &self.run_dir
    }
}

impl Case {
    fn new() -> Case {
        Case {
            run_dir: RunDir::new("h"),
        }
    }

    /// A spec running `program` over two arms; `top` and `metric` are added to it.
    fn spec(
        &self,
        program: &Path,
        passes: usize,
        top: &str,
        off_env: &str,
        on_env: &str,
        metric: &str,
    ) -> PathBuf {
        let text = format!(
            r#"name = "h"
command = ["{program}"]
passes = {passes}
{top}

[[arm]]
name = "off"
role = "base"
env = {{ TEST_SPEED = "100"{off_env} }}

[[arm]]
name = "on"
env = {{ TEST_SPEED = "110"{on_env} }}

[[metric]]
column = "tok_s"
better = "higher"
{metric}
"#,
            program = program.display()
        );
        let path = self.dir.path().join("h.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn engine_spec(&self, off_env: &str, on_env: &str, metric: &str) -> PathBuf {
        self.spec(&test_engine_path(), 3, "", off_env, on_env, metric)
    }

    fn kinds(&self) -> Vec<DefectKind> {
        self.defect_kinds()
    }

    fn last_line(&self) -> String {
        self.text().lines().last().unwrap().to_string()
    }
}

/// A refusal before the run: exit 2, the message holds every `words`, and no file is left.
fn assert_refused_before_the_file(case: &Case, out: &Output, words: &[&str]) {
    let message = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{message}");
    for word in words {
        assert!(message.contains(word), "{word:?} missing from: {message}");
    }
    assert!(
        !case.file().exists(),
        "a ladder file was created: {message}"
    );
}

#[test]
fn a_directory_as_the_command_is_called_a_directory_with_the_spec_line() {
    let case = Case::new();
    let spec = case.spec(case.dir.path(), 3, "", "", "", "");
    let out = case.run(&spec);
    assert_refused_before_the_file(&case, &out, &["h.toml:2", "is a directory"]);
}

#[test]
fn a_non_executable_command_is_refused_with_the_spec_line() {
    let case = Case::new();
    let engine = case.dir.path().join("engine");
    std::fs::copy(test_engine_path(), &engine).unwrap();
    std::fs::set_permissions(&engine, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = case.run(&case.spec(&engine, 3, "", "", "", ""));
    assert_refused_before_the_file(&case, &out, &["h.toml:2", "not executable"]);
}

#[test]
fn spec_mistakes_found_only_mid_run_before_are_refused_before_the_file() {
    let case = Case::new();
    let engine = test_engine_path();
    let refusals: [(&str, &str, &[&str]); 4] = [
        ("timeout_s = 1e20", "", &["h.toml:4", "7 days"]),
        ("", ", \"A=B\" = \"1\"", &["h.toml:9", "'='"]),
        ("", ", X = \"a\\u0000b\"", &["h.toml:9", "NUL"]),
        ("", ", \"\" = \"1\"", &["h.toml:9", "empty name"]),
    ];
    for (top, env, words) in refusals {
        let out = case.run(&case.spec(&engine, 3, top, env, "", ""));
        assert_refused_before_the_file(&case, &out, words);
    }
    let out = case.run(&case.spec(&engine, 1_000_000_000_000, "", "", "", ""));
    assert_refused_before_the_file(&case, &out, &["h.toml:3", "100000 cells"]);
    let text = std::fs::read_to_string(case.spec(&engine, 3, "", "", "", "")).unwrap();
    for name in ["../escape", "/tmp/abs", ""] {
        std::fs::write(
            case.dir.path().join("h.toml"),
            text.replace("name = \"h\"", &format!("name = \"{name}\"")),
        )
        .unwrap();
        let out = case.run(&case.dir.path().join("h.toml"));
        assert_refused_before_the_file(&case, &out, &["h.toml:1", "letters, digits"]);
        assert_eq!(
            std::fs::read_dir(case.dir.path()).unwrap().count(),
            1,
            "something was written"
        );
    }
}

#[test]
fn plan_refuses_absurd_passes_instead_of_aborting() {
    let case = Case::new();
    let spec = case.spec(
        &test_engine_path(),
        9_223_372_036_854_775_807,
        "",
        "",
        "",
        "",
    );
    let out = Command::new(runner())
        .arg("plan")
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("100000 cells"), "{}", stderr(&out));
}

#[test]
fn a_stray_side_log_is_refused_before_the_ladder_file_is_created() {
    let case = Case::new();
    std::fs::create_dir_all(case.out()).unwrap();
    std::fs::write(case.out().join("h_t.stderr.log"), "old\n").unwrap();
    let out = case.run(&case.engine_spec("", "", ""));
    assert_refused_before_the_file(&case, &out, &["h_t.stderr.log", "already exists"]);
}

#[test]
fn an_unsafe_tag_is_refused() {
    let case = Case::new();
    let spec = case.engine_spec("", "", "");
    let out = Command::new(runner())
        .arg("run")
        .arg(&spec)
        .args(["--tag", "../t", "--out"])
        .arg(case.out())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--tag"), "{}", stderr(&out));
    assert!(!case.out().exists() || std::fs::read_dir(case.out()).unwrap().count() == 0);
}

#[test]
fn a_metric_that_is_not_a_finite_positive_number_fails_its_cell() {
    for bad in ["nan", "inf", "-5", "0"] {
        let case = Case::new();
        let spec = case.engine_spec("", "", "");
        let text = std::fs::read_to_string(&spec)
            .unwrap()
            .replace("TEST_SPEED = \"110\"", &format!("TEST_SPEED = \"{bad}\""));
        std::fs::write(&spec, text).unwrap();
        let out = case.run(&spec);
        assert_eq!(out.status.code(), Some(1), "{bad}: {}", stderr(&out));
        let last = case.last_line();
        assert!(
            last.starts_with("#ladder-abort ") && last.contains("pass 0 slot 1 (arm on)"),
            "{bad}: {last}"
        );
        assert!(
            last.contains("not a finite positive number"),
            "{bad}: {last}"
        );
        // The failed cell's row is written before the abort record.
        assert_eq!(
            replay(case.text().as_bytes()).verdict.cells_found,
            2,
            "{bad}"
        );
        assert_eq!(case.kinds(), vec![DefectKind::Aborted], "{bad}");
    }
}

#[test]
fn cells_with_different_row_counts_end_the_ladder() {
    let case = Case::new();
    let out = case.run(&case.engine_spec("", ", TEST_ROWS = \"2\"", ""));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let last = case.last_line();
    assert!(
        last.contains("pass 0 slot 1 (arm on) printed 2 rows, the first cell printed 1"),
        "{last}"
    );
}

#[test]
fn a_metric_row_the_engine_never_prints_is_caught_at_the_first_cell() {
    let case = Case::new();
    let out = case.run(&case.engine_spec("", "", "row = 5"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let last = case.last_line();
    assert!(
        last.contains("h.toml:18") && last.contains("row = 5") && last.contains("pass 0 slot 0"),
        "{last}"
    );
    assert!(last.contains("\"cells\":1"), "{last}");
}

#[test]
fn sighup_writes_an_abort_record() {
    let case = Case::new();
    let spec = case.engine_spec(", TEST_SLEEP_MS = \"300\"", ", TEST_SLEEP_MS = \"300\"", "");
    let child = case
        .command(&spec)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(case.file())
        .map(|t| t.lines().count())
        .unwrap_or(0)
        < 3
    {
        assert!(Instant::now() < deadline, "no cell was written");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: sends a signal to our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGHUP) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let last = case.last_line();
    assert!(
        last.starts_with("#ladder-abort ") && last.contains("SIGHUP"),
        "{last}"
    );
}

#[test]
fn a_full_disk_stops_the_runner_with_the_file_name_and_no_torn_row() {
    let case = Case::new();
    let spec = case.spec(&test_engine_path(), 40, "", "", "", "");
    let limit: u64 = 6_000;
    let mut command = case.command(&spec);
    // SAFETY: only async-signal-safe libc calls between fork and exec. SIGXFSZ ignored (the
    // disposition survives exec), so a write past the limit fails with EFBIG like ENOSPC.
    unsafe {
        command.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let rlimit = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &rlimit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = command.output().unwrap();
    let message = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{message}");
    assert!(
        message.contains(&case.file().display().to_string()),
        "{message}"
    );
    let bytes = std::fs::read(case.file()).unwrap();
    assert!(bytes.ends_with(b"\n"), "a torn last line");
    let verdict = replay(&bytes).verdict;
    assert!(
        verdict.cells_found >= 1 && verdict.cells_found < 80,
        "{}",
        verdict.cells_found
    );
    let bad: Vec<_> = verdict
        .defects
        .iter()
        .filter(|d| !matches!(d.kind, DefectKind::MissingDone | DefectKind::Aborted))
        .collect();
    assert!(bad.is_empty(), "{bad:?}");
}
