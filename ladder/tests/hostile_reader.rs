//! Hostile ladder files and a failing disk: the reader bounds everything by what the file
//! holds, and the writer never leaves a torn row.

mod common;

use common::HEADER;
use ladder::ladder_file::{LadderWriter, Role, StartRecord};
use ladder::verify::{replay, DefectKind};
use std::path::Path;

/// The demo start record for `arms`, the first the base, the others plain arms.
fn start(arms: &[String], passes: usize) -> StartRecord {
    let arms: Vec<(&str, Role)> = arms
        .iter()
        .enumerate()
        .map(|(i, name)| (name.as_str(), if i == 0 { Role::Base } else { Role::Arm }))
        .collect();
    common::start_record(&arms, passes)
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("arm{i}")).collect()
}

fn row(pass: usize, slot: usize, arm: &str, k: usize) -> Vec<String> {
    vec![
        pass.to_string(),
        slot.to_string(),
        arm.to_string(),
        format!("2026-11-29T10:{:02}:{:02}.000000Z", k / 30, 2 * (k % 30)),
        format!(
            "2026-11-29T10:{:02}:{:02}.500000Z",
            k / 30,
            2 * (k % 30) + 1
        ),
        "0".into(),
        "100.5".into(),
    ]
}

/// A small file whose start record claims `passes` passes of `arms` arms.
fn claiming(arms: usize, passes: usize) -> Vec<u8> {
    let arms = names(arms);
    let mut text = format!("{}\n{HEADER}\n", start(&arms, passes).to_line());
    for (s, arm) in arms.iter().enumerate().take(3) {
        text.push_str(&ladder::ladder_file::csv_line(&row(0, s, arm, s)));
        text.push('\n');
    }
    text.into_bytes()
}

#[test]
fn huge_claimed_passes_are_a_defect_naming_the_limit_not_a_panic() {
    for passes in [10_000_000, 1 << 40, usize::MAX] {
        let verdict = replay(&claiming(2, passes)).verdict;
        assert!(!verdict.connected);
        let d = &verdict.defects[0];
        assert_eq!((d.kind, d.line), (DefectKind::MissingStart, 1));
        assert!(d.detail.contains("limit of 100000 cells"), "{}", d.detail);
    }
}

#[test]
fn a_hundred_thousand_arms_are_a_defect_naming_the_limit() {
    let verdict = replay(&claiming(100_000, 1)).verdict;
    assert!(
        verdict.defects[0].detail.contains("limit of 128 arms"),
        "{:?}",
        verdict.defects
    );
}

#[test]
fn a_header_at_the_limits_is_read_without_sizing_by_its_claim() {
    // 128 arms × 781 passes: legal, and the file holds only 3 cells.
    let replayed = replay(&claiming(128, 781));
    assert_eq!(replayed.verdict.cells_expected, 99_968);
    assert_eq!(replayed.verdict.cells_found, 3);
    let kinds: Vec<DefectKind> = replayed.verdict.defects.iter().map(|d| d.kind).collect();
    assert_eq!(kinds, vec![DefectKind::MissingDone]);
}

#[test]
fn arm_names_with_commas_and_quotes_round_trip_through_the_file() {
    let arms = vec!["off".to_string(), "a,\"b\" | `c`".to_string()];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo_t1.csv");
    let mut writer = LadderWriter::create(&path, &start(&arms, 2)).unwrap();
    writer
        .write_header(&HEADER.split(',').map(String::from).collect::<Vec<_>>())
        .unwrap();
    for (k, (p, s)) in [(0, 0), (0, 1), (1, 0), (1, 1)].into_iter().enumerate() {
        writer
            .write_cell(&[row(p, s, &arms[(s + p) % 2], k)])
            .unwrap();
    }
    let end = ladder::ladder_file::EndRecord {
        ended: "2026-11-29T11:00:00.000000Z".into(),
        cells: 4,
        reason: None,
        passes: Some(2),
        stopped: None,
    };
    writer.finish_done(&end).unwrap();
    let verdict = replay(&std::fs::read(&path).unwrap()).verdict;
    assert!(verdict.connected, "{:?}", verdict.defects);
}

/// The child half of the full-disk test: writes cells under a file size limit until the
/// writer fails, then prints the error. Runs only when the parent test starts it.
#[test]
fn child_writes_under_a_file_size_limit() {
    let Ok(path) = std::env::var("ABAB_FSIZE_CHILD") else {
        return;
    };
    let path = Path::new(&path);
    let arms = names(2);
    let start = start(&arms, 500);
    let limit = (start.to_line().len() + HEADER.len() + 2 + 250) as u64;
    // SAFETY: plain libc calls on this process only; SIGXFSZ ignored so that the write
    // fails with EFBIG, as a full disk fails with ENOSPC.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let rlimit = libc::rlimit {
            rlim_cur: limit,
            rlim_max: limit,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &rlimit), 0);
    }
    let mut writer = LadderWriter::create(path, &start).unwrap();
    writer
        .write_header(&HEADER.split(',').map(String::from).collect::<Vec<_>>())
        .unwrap();
    for k in 0..1000 {
        let (p, s) = (k / 2, k % 2);
        if let Err(e) = writer.write_cell(&[row(p, s, &arms[(s + p) % 2], k)]) {
            eprintln!("WRITE ERROR: {e}");
            return;
        }
    }
    panic!("the file size limit never stopped the writer");
}

#[test]
fn a_failed_write_names_the_file_and_leaves_no_torn_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo_t1.csv");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_writes_under_a_file_size_limit",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("ABAB_FSIZE_CHILD", &path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let message = stderr
        .lines()
        .find(|l| l.starts_with("WRITE ERROR"))
        .expect("the writer failed");
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(
        message.contains("ends at its last complete line"),
        "{message}"
    );
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.ends_with(b"\n"));
    let verdict = replay(&bytes).verdict;
    let kinds: Vec<DefectKind> = verdict.defects.iter().map(|d| d.kind).collect();
    assert_eq!(
        kinds,
        vec![DefectKind::MissingDone],
        "{:?}",
        verdict.defects
    );
    assert!(verdict.cells_found >= 1);
}
