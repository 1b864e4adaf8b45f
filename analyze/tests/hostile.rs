//! Hostile inputs to `analyze verify`, `report` and `split`: no panic, no abort, no hang,
//! and an aborted ladder read with `--allow-defects`.

use ladder::sample::{Sample, SampleArm};
use ladder::Role;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn sample() -> Sample {
    let arms = vec![
        SampleArm::new("off", Role::Base, 0.0),
        SampleArm::new("on", Role::Arm, 1.0),
    ];
    let mut sample = Sample::new("hostile", "t1", arms);
    sample.passes = 6;
    sample
}

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("analyze_hostile_{}_{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `analyze <args>`, failing the test if it takes longer than 60 s (a hang).
fn analyze(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_analyze"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Drained in a thread, so that a large report cannot fill the pipe and look like a hang.
    let (done, output) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output().unwrap()));
    match output.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out,
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("analyze {args:?} hung");
        }
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit 0, 1 or 2: a verdict or an error, never a panic (101) or a signal.
fn assert_no_crash(out: &Output, what: &str) {
    assert!(
        matches!(out.status.code(), Some(0..=2)),
        "{what}: {:?}\n{}",
        out.status,
        stderr(out)
    );
    assert!(!stderr(out).contains("panicked"), "{what}: {}", stderr(out));
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_fifo_a_directory_and_a_device_are_refused_without_a_hang() {
    let dir = dir("fifo");
    let fifo = dir.join("ladder.csv");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let fifo = fifo.display().to_string();
    let shown_dir = dir.display().to_string();
    for path in [fifo.as_str(), shown_dir.as_str(), "/dev/zero"] {
        for args in [
            vec!["verify", path],
            vec!["report", path],
            vec!["split", path, "--out-dir", &shown_dir],
        ] {
            let out = analyze(&args);
            assert_no_crash(&out, &format!("{args:?}"));
            assert_ne!(out.status.code(), Some(0), "{args:?}");
            let words = format!("{}{}", stderr(&out), String::from_utf8_lossy(&out.stdout));
            assert!(
                words.contains("not a regular file") || words.contains("is a directory"),
                "{args:?}: {words}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A valid file whose start record claims `passes` passes of `arms` arms.
fn claiming(arms: usize, passes: usize) -> String {
    let text = sample().file_text();
    let mut start: serde_json::Value = serde_json::from_str(
        text.lines()
            .next()
            .unwrap()
            .strip_prefix("#ladder-start ")
            .unwrap(),
    )
    .unwrap();
    let names: Vec<String> = (0..arms)
        .map(|i| {
            if i == 0 {
                "off".into()
            } else if i == 1 {
                "on".into()
            } else {
                format!("a{i}")
            }
        })
        .collect();
    start["order"]["passes"] = passes.into();
    start["order"]["arms"] = names.clone().into();
    start["arms"] = names
        .iter()
        .enumerate()
        .map(|(i, n)| serde_json::json!({"name": n, "role": if i == 0 { "base" } else { "arm" }, "env": {}}))
        .collect();
    let rest: Vec<&str> = text.lines().skip(1).collect();
    format!("#ladder-start {start}\n{}\n", rest.join("\n"))
}

#[test]
fn huge_claims_in_the_start_record_do_not_crash_verify_or_report() {
    let dir = dir("claims");
    for (i, (arms, passes)) in [(2, 10_000_000), (2, usize::MAX), (100_000, 6), (128, 781)]
        .into_iter()
        .enumerate()
    {
        let path = write(&dir, &format!("{i}.csv"), &claiming(arms, passes));
        for args in [
            vec!["verify", "--json", &path],
            vec!["report", &path],
            vec!["report", "--allow-defects", &path],
        ] {
            let out = analyze(&args);
            assert_no_crash(&out, &format!("{arms} arms {passes} passes {args:?}"));
            // Not connected: exit 1, unless the defects are allowed.
            let allowed = if args.contains(&"--allow-defects") {
                0..=1
            } else {
                1..=1
            };
            assert!(
                allowed.contains(&out.status.code().unwrap()),
                "{args:?}: {}",
                stderr(&out)
            );
        }
    }
    let out = analyze(&["verify", &write(&dir, "big.csv", &claiming(2, 10_000_000))]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("limit of 100000 cells"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A ladder that ran 5 cells, failed the 6th (exit 3, empty metric) and was aborted.
fn aborted(failed_value: &str, exit: &str) -> String {
    let text = sample().file_text();
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = lines[..7].iter().map(|l| l.to_string()).collect();
    let mut failed: Vec<String> = lines[7].split(',').map(String::from).collect();
    failed[5] = exit.into();
    *failed.last_mut().unwrap() = failed_value.into();
    out.push(failed.join(","));
    out.push("#ladder-abort {\"ended\":\"2099-01-01T00:00:00.000000Z\",\"cells\":6,\"reason\":\"pass 2 slot 1 failed\"}".into());
    out.join("\n") + "\n"
}

#[test]
fn allow_defects_reads_an_aborted_ladder_with_a_failed_cell() {
    let dir = dir("aborted");
    for (value, exit) in [("", "3"), ("NaN", "0"), ("-1", "0")] {
        let path = write(&dir, "a.csv", &aborted(value, exit));
        let out = analyze(&["report", &path]);
        assert_eq!(out.status.code(), Some(1), "{value:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("--allow-defects"), "{}", stderr(&out));
        let out = analyze(&["report", "--allow-defects", &path]);
        assert_no_crash(&out, value);
        assert_ne!(out.status.code(), Some(2), "{value:?}: {}", stderr(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("hostile"),
            "{value:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
