//! `analyze report` as a command: exit codes, defects, and errors that name the file.

use ladder::sample::{Sample, SampleArm};
use ladder::Role;
use std::path::PathBuf;
use std::process::{Command, Output};

fn sample_text() -> String {
    let arms = vec![
        SampleArm::new("off", Role::Base, 0.0),
        SampleArm::new("on", Role::Arm, 1.0),
    ];
    Sample::new("cli", "t1", arms).file_text()
}

/// Writes a file into a directory of its own (removed by the test that made it).
fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("analyze_cli_{}_{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn report(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_analyze"))
        .arg("report")
        .args(args)
        .env_remove("CLICOLOR_FORCE")
        .output()
        .unwrap()
}

/// The summary as a terminal gets it, colour forced on or off.
fn summary(path: &std::path::Path, colour: bool) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_analyze"));
    command.args(["report", path.to_str().unwrap(), "--summary"]);
    match colour {
        true => command.env("CLICOLOR_FORCE", "1").env_remove("NO_COLOR"),
        false => command.env("NO_COLOR", "1").env_remove("CLICOLOR_FORCE"),
    };
    let out = command.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_connected_file_reports_with_exit_0() {
    let path = write("good.csv", &sample_text());
    let out = report(&[path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("## 1. <code>cli</code> / <code>t1</code>: QUALIFIED"),
        "{text}"
    );
    assert!(
        text.contains("| <code>on</code> | arm | <code>off</code> |"),
        "{text}"
    );
    // The summary comes first, with the arm's estimate, interval and verdict.
    let summary = text.find("## Summary").unwrap();
    assert!(summary < text.find("## Details").unwrap());
    assert!(
        text.contains("| <code>decode&#95;tok&#95;s</code> | <code>on</code> | +"),
        "{text}"
    );
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// A file with a cell cut out: defects and no statistics, exit 1; with --allow-defects the
/// figures come back, marked on every table.
#[test]
fn a_file_with_a_gap_is_reported_with_its_defects() {
    let text = sample_text();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.remove(7);
    let path = write("gap.csv", &(lines.join("\n") + "\n"));
    let json = path.with_extension("json");
    let out = report(&[path.to_str().unwrap(), "--json", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-defects"));
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ladder = &value["ladders"][0];
    assert_eq!(ladder["connected"], false);
    assert_eq!(ladder["metrics"].as_array().unwrap().len(), 0);
    assert!(ladder["defects"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["kind"] == "gap"));

    let out = report(&[path.to_str().unwrap(), "--allow-defects"]);
    assert_eq!(out.status.code(), Some(0));
    let md = String::from_utf8(out.stdout).unwrap();
    let marks = md
        .matches("> **NOT CONNECTED, read with --allow-defects")
        .count();
    // The metric table, the contrasts and the extras.
    assert_eq!(marks, 3, "{marks} marks in\n{md}");
    assert!(
        md.contains("<code>gap</code>") || md.contains("`gap`"),
        "{md}"
    );
    // The terminal's summary and the figures' titles say the same status as the markdown.
    let out = report(&[path.to_str().unwrap(), "--allow-defects", "--summary"]);
    let summary = String::from_utf8(out.stdout).unwrap();
    assert!(
        summary.contains(": NOT CONNECTED, read with --allow-defects"),
        "{summary}"
    );
    let md_path = path.with_extension("md");
    let out = report(&[
        path.to_str().unwrap(),
        "--allow-defects",
        "-o",
        md_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let svgs: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(!svgs.is_empty());
    assert!(
        svgs.iter()
            .all(|svg| svg.contains("[NOT CONNECTED, read with --allow-defects]")),
        "{svgs:?}"
    );
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn unusable_input_exits_2_naming_the_file() {
    let out = report(&["/nonexistent/x_t1.csv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x_t1.csv"));

    let text = sample_text().replacen("decode_tok_s\n", "decode_tok_z\n", 1);
    let path = write("renamed.csv", &text);
    let out = report(&[path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("renamed.csv") && err.contains("decode_tok_s") && err.contains("header lacks"),
        "{err}"
    );
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// Names from a file (ladder, tag, arm, column) cannot break a code span, a table or the HTML.
#[test]
fn names_from_the_file_are_escaped() {
    let hostile = [
        "a`b|c",
        "<script>alert(1)</script>",
        "plain",
        "x*y_[z]\ntwo\nlines",
    ];
    let arms = vec![
        SampleArm::new("off", Role::Base, 0.0),
        SampleArm::new(hostile[0], Role::Arm, 1.0),
        SampleArm::new(hostile[1], Role::Null, 0.0),
        SampleArm::new(hostile[2], Role::Arm, 0.0),
    ];
    let mut sample = Sample::new(hostile[3], "t`1", arms);
    sample.metrics[0].column = "tok|s".into();
    let path = write("hostile.csv", &sample.file_text());
    let out = report(&[path.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(!md.contains("<script>"), "{md}");
    assert!(md.contains("&lt;script&gt;"), "{md}");
    assert!(
        !md.contains("a`b") && !md.contains("tok|s") && !md.contains("[z]\ntwo"),
        "{md}"
    );
    // Every table row keeps its column count: the arms table has 11 columns (12 bars).
    let rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with("| <code>a&#96;b&#124;c</code> | arm | <code>off</code> |"))
        .collect();
    assert_eq!(rows.len(), 1, "{md}");
    assert_eq!(rows[0].matches('|').count(), 12, "{}", rows[0]);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn summary_prints_only_the_summary_and_csv_has_a_row_per_arm() {
    let path = write("summary.csv", &sample_text());
    let text = summary(&path, false);
    assert!(
        text.starts_with("cli / t1: QUALIFIED (7 analysis passes)"),
        "{text}"
    );
    assert!(!text.contains("Details"), "{text}");
    // Plain text: no markup, no HTML entities, no escape sequences without colour.
    for markup in ["<", "&#", "`", "|", "**", "\x1b"] {
        assert!(!text.contains(markup), "{markup:?} in {text}");
    }
    // With colour forced on, the same text with styles around some words.
    let coloured = summary(&path, true);
    assert!(coloured.contains("\x1b["), "{coloured}");
    for markup in ["<", "&#", "`", "|", "**"] {
        assert!(!coloured.contains(markup), "{markup:?} in {coloured}");
    }
    let stripped: String = strip_ansi(&coloured);
    assert_eq!(stripped, text);
    let csv = path.with_extension("out.csv");
    let out = report(&[path.to_str().unwrap(), "--csv", csv.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let rows: Vec<String> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows[0].starts_with("file,ladder,tag,qualified"),
        "{}",
        rows[0]
    );
    assert!(
        rows[1].contains(",decode_tok_s,higher,on,arm,off,"),
        "{}",
        rows[1]
    );
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// `text` without its ANSI style sequences (`ESC [ … m`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A time reads as a ratio with its interval, the same interval as the JSON's percent.
#[test]
fn a_time_reads_as_the_ratio_of_the_json_interval() {
    let arms = vec![
        SampleArm::new("fixed", Role::Base, 0.0),
        SampleArm::new("regex", Role::Arm, 40.0),
    ];
    let mut sample = Sample::new("times", "t1", arms);
    sample.metrics[0].column = "run_s".into();
    sample.metrics[0].better = ladder::spec::Better::Lower;
    sample.metrics[0].level = 2.0;
    sample.noise_pct = 2.0;
    sample.noise_limit_pct = None;
    let path = write("times.csv", &sample.file_text());
    let text = summary(&path, false);
    let json_path = path.with_extension("json");
    let out = report(&[
        path.to_str().unwrap(),
        "--json",
        json_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let arm = &json["ladders"][0]["metrics"][0]["arms"][0];
    let ratio = |key: &str| 1.0 + arm[key].as_f64().unwrap() / 100.0;
    let (r, lo, hi) = (
        ratio("estimate_pct"),
        ratio("ci_low_pct"),
        ratio("ci_high_pct"),
    );
    assert!(r > 1.3 && lo > 1.0, "{arm}");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("regex"))
        .unwrap();
    // "regex  ran 1.376× faster than fixed [1.340, 1.413]  better  better"
    let numbers: Vec<f64> = line
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(
        line.contains("× faster than fixed [") && numbers.len() == 3,
        "{line:?}"
    );
    for (shown, exact) in numbers.iter().zip([r, lo, hi]) {
        assert!(
            (shown - exact).abs() <= 0.0005 + 1e-12,
            "{line:?}: {shown} against {exact}"
        );
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words[words.len() - 2..], ["better", "better"], "{line}");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// A spec with `[scan]` gets a figure of the estimate against the scanned value, linked
/// from the markdown.
#[test]
fn a_scan_gets_its_figure() {
    let text = sample_text().replacen(
        "\"spec\":{",
        "\"spec\":{\"scan\":{\"env\":\"MODE\",\"values\":[\"off\",\"on\"]},",
        1,
    );
    let path = write("scan.csv", &text);
    let md = path.with_file_name("scan_report.md");
    let out = report(&[path.to_str().unwrap(), "-o", md.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&md).unwrap();
    let svg = path.with_file_name("scan_report_cli_t1_decode_tok_s_scan.svg");
    assert!(
        text.contains("(scan_report_cli_t1_decode_tok_s_scan.svg)"),
        "{text}"
    );
    let drawn = std::fs::read_to_string(svg).unwrap();
    assert!(
        drawn.contains("scanned value") && drawn.contains("\non\n"),
        "{drawn}"
    );
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}
