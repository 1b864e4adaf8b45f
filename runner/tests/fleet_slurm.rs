//! `runner sbatch` on a real Slurm cluster: a 4-task array of the stand-in engine, one task
//! made to fail, and the dependent report job. Needs `sbatch` and a running cluster, which
//! `.ci/slurm-up` starts on one machine; `.ci/run` runs these with `--ignored`.

mod common;

use common::{runner, write_test_engine_spec};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Writes `replica.toml`: two arms of the test engine over 3 passes; array task 2 fails.
fn write_spec(dir: &Path) -> PathBuf {
    write_test_engine_spec(
        dir,
        "replica",
        3,
        "",
        "TEST_FAIL_IF = \"SLURM_ARRAY_TASK_ID=2\"",
    )
}

/// Waits until Slurm no longer lists `job`.
fn wait_for(job: &str) {
    let clock = Instant::now();
    loop {
        let out = Command::new("squeue")
            .args(["-h", "-j", job])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout).trim().is_empty() {
            return;
        }
        assert!(
            clock.elapsed() < Duration::from_secs(180),
            "job {job} still queued after 3 minutes"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
#[ignore = "needs Slurm: start a cluster with .ci/slurm-up, then cargo test --release -p runner --test fleet_slurm -- --ignored"]
fn a_job_array_of_ladders_is_read_as_one_by_its_report_job() {
    let analyze = Path::new(runner()).with_file_name("analyze");
    assert!(
        analyze.is_file(),
        "build analyze first: cargo build --release -p analyze"
    );
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path());
    let out = Command::new(runner())
        .current_dir(dir.path())
        .arg("sbatch")
        .arg(&spec)
        .args(["--replicas", "4", "--tag", "ci", "--time", "00:05:00"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job = |word: &str| -> String {
        let line = stdout
            .lines()
            .find(|l| l.contains(word))
            .unwrap_or_else(|| panic!("{stdout}"));
        line.split_whitespace().nth(3).unwrap().to_string()
    };
    let (array, report) = (job("job array"), job("report job"));
    assert!(dir.path().join("raw/replica_ci.sbatch").is_file());
    wait_for(&array);
    wait_for(&report);
    let raw = dir.path().join("raw");
    let mut connected = 0;
    let mut aborted = Vec::new();
    for task in 0..4 {
        let host = runner::fleet::host_name();
        let file = raw.join(format!("replica_ci-{array}_{task}-{host}.csv"));
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        match ladder::replay(text.as_bytes()).verdict.connected {
            true => connected += 1,
            false => aborted.push((task, text.lines().last().unwrap().to_string())),
        }
    }
    assert_eq!(connected, 3, "{aborted:?}");
    assert_eq!(aborted.len(), 1);
    assert_eq!(aborted[0].0, 2);
    assert!(aborted[0].1.starts_with("#ladder-abort "), "{aborted:?}");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/replica_ci.json")).unwrap(),
    )
    .unwrap();
    let ladders = json["ladders"].as_array().unwrap();
    assert_eq!(ladders.len(), 4);
    let failed: Vec<&serde_json::Value> =
        ladders.iter().filter(|l| l["connected"] == false).collect();
    assert_eq!(failed.len(), 1);
    assert!(
        failed[0]["defects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["kind"] == "aborted"),
        "{}",
        failed[0]
    );
    let across = json["across"].as_array().unwrap();
    assert!(!across.is_empty(), "no across-ladder reading in {json}");
    assert_eq!(
        across[0]["ladders"].as_array().unwrap().len(),
        3,
        "{}",
        across[0]
    );
    // Which host and card each replicate's estimate came from, and one binary per arm.
    let host = runner::fleet::host_name();
    let hosts = across[0]["hosts"].as_array().unwrap();
    assert!(
        hosts.len() == 3 && hosts.iter().all(|h| h.as_str().unwrap().starts_with(&host)),
        "{}",
        across[0]
    );
    assert_eq!(
        across[0]["cards"].as_array().unwrap().len(),
        3,
        "{}",
        across[0]
    );
    assert_eq!(across[0]["same_binary"], true, "{}", across[0]);
    assert!(dir.path().join("reports/replica_ci.md").is_file());
}

#[test]
fn a_missing_sbatch_is_a_clear_error_and_dry_run_needs_none() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path());
    let run = |extra: &[&str]| {
        Command::new(runner())
            .current_dir(dir.path())
            .env("PATH", "/nonexistent")
            .arg("sbatch")
            .arg(&spec)
            .args(["--replicas", "2", "--tag", "x"])
            .args(extra)
            .output()
            .unwrap()
    };
    let dry = run(&["--dry-run", "--gres", "gpu:1"]);
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert!(
        text.contains("#SBATCH --array=0-1") && text.contains("#SBATCH --gres=gpu:1"),
        "{text}"
    );
    assert!(text.contains("--dependency=afterany"), "{text}");
    assert!(!dir.path().join("raw").exists(), "--dry-run wrote files");
    let real = run(&[]);
    let err = String::from_utf8_lossy(&real.stderr);
    assert_eq!(real.status.code(), Some(2));
    assert!(err.contains("sbatch is not on PATH"), "{err}");
    assert!(
        !dir.path().join("raw").exists(),
        "a refused submission wrote files"
    );
}
