//! `analyze verify` and `analyze split` as a user runs them.

use ladder::sample::{Sample, SampleArm};
use ladder::Role;
use std::path::Path;
use std::process::{Command, Output};

fn analyze(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_analyze"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn clean_text(tag: &str) -> String {
    Sample::new(
        "demo",
        tag,
        vec![
            SampleArm::new("off", Role::Base, 0.0),
            SampleArm::new("on", Role::Arm, 1.0),
        ],
    )
    .file_text()
}

#[test]
fn verify_exits_zero_only_when_every_file_is_connected() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.csv"), clean_text("a")).unwrap();
    let out = analyze(&["verify", "good.csv"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "good.csv: one connected run, 16 of 16 cells, no gaps, no repeats, monotone timestamps"
        ),
        "{text}"
    );

    let truncated: String = clean_text("b")
        .lines()
        .take(7)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.path().join("cut.csv"), truncated).unwrap();
    let out = analyze(&["verify", "good.csv", "cut.csv", "absent.csv"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("cut.csv: NOT connected"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("  7 ") && l.contains("  missing-done  ")),
        "{text}"
    );
    assert!(
        text.contains("absent.csv: NOT connected") && text.contains("cannot read absent.csv"),
        "{text}"
    );
}

#[test]
fn verify_json_has_the_format_keys() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.csv"), clean_text("a")).unwrap();
    let out = analyze(&["verify", "--json", "good.csv"], dir.path());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let file = &json[0];
    assert_eq!(file["file"], "good.csv");
    assert_eq!(file["connected"], true);
    assert_eq!(file["cells_expected"], 16);
    assert_eq!(file["cells_found"], 16);
    assert_eq!(file["defects"], serde_json::json!([]));
}

#[test]
fn split_cuts_a_file_of_two_runs_into_two_connected_parts() {
    let dir = tempfile::tempdir().unwrap();
    let both = format!("{}{}", clean_text("a"), clean_text("b"));
    std::fs::write(dir.path().join("both.csv"), &both).unwrap();
    let out = analyze(&["verify", "both.csv"], dir.path());
    assert!(String::from_utf8_lossy(&out.stdout).contains("extra-start"));
    let out = analyze(&["split", "both.csv"], dir.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let one = std::fs::read_to_string(dir.path().join("both.part1.csv")).unwrap();
    let two = std::fs::read_to_string(dir.path().join("both.part2.csv")).unwrap();
    assert_eq!(format!("{one}{two}"), both);
    let out = analyze(&["verify", "both.part1.csv", "both.part2.csv"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    // Parts are never overwritten.
    let out = analyze(&["split", "both.csv"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("never overwritten"));
}

/// Lines before any start record are a part of their own, which is no connected run: `split`
/// says where they came from and exits 1.
#[test]
fn split_names_the_lines_before_any_start_and_exits_1_when_a_part_is_not_connected() {
    let dir = tempfile::tempdir().unwrap();
    let stray = format!("a stray line\n{}", clean_text("a"));
    std::fs::write(dir.path().join("stray.csv"), &stray).unwrap();
    let out = analyze(&["split", "stray.csv"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines.len(), 2, "{said}");
    assert!(
        lines[0].starts_with(
            "stray.part0.csv: lines 1..1 of stray.csv (lines before any start record): "
        ),
        "{said}"
    );
    assert!(lines[1].starts_with("stray.part1.csv: lines 2.."), "{said}");
    assert!(!lines[1].contains("before any start"), "{said}");
}

#[test]
fn verify_prints_plain_text_in_columns_with_colour_only_when_forced() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.csv"), clean_text("a")).unwrap();
    let cut: String = clean_text("b")
        .lines()
        .take(7)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.path().join("cut.csv"), cut).unwrap();
    for (colour, coloured) in [("NO_COLOR", false), ("CLICOLOR_FORCE", true)] {
        let out = Command::new(env!("CARGO_BIN_EXE_analyze"))
            .args(["verify", "good.csv", "cut.csv"])
            .current_dir(dir.path())
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE")
            .env(colour, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for markup in ["<", "&#", "`"] {
            assert!(!text.contains(markup), "{colour}: {markup:?} in:\n{text}");
        }
        assert_eq!(text.contains('\u{1b}'), coloured, "{colour}: {text}");
        if !coloured {
            // The defects and the binaries line up in columns under their headers.
            let lines: Vec<&str> = text.lines().collect();
            let header = lines
                .iter()
                .position(|l| l.starts_with("  line  defect"))
                .unwrap();
            let detail = lines[header].find("detail").unwrap();
            assert!(lines[header + 1].starts_with("  7 "), "{text}");
            assert_eq!(
                lines[header + 1].find("no done record"),
                Some(detail),
                "{text}"
            );
            assert!(lines.iter().any(|l| l.starts_with("  arm  ran")), "{text}");
        }
    }
}
