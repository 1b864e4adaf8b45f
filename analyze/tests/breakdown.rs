//! Where the time moves (METHOD.md "Breakdown") on generated ladders whose keys' true changes
//! are known: each key's delta, sign and size, the rest line, the closure that adds up and the
//! one that does not, and the breakdown in every export.

mod common;

use analyze::analysis::breakdown::{BreakdownArm, KeyLine};
use ladder::sample::{Sample, SampleArm, SampleBreakdown};
use ladder::Role;
use std::process::Command;

/// `slow` spends 50 % more in `matmul`; `gap` moves its total by 100 µs that no key holds;
/// `pad` prints a key of its own; `again` is the base again; `short` moves its total by
/// −100 µs that no key holds.
fn sample() -> Sample {
    let mut s = Sample::new(
        "where",
        "t1",
        vec![
            SampleArm::new("base", Role::Base, 0.0),
            SampleArm::new("slow", Role::Arm, -30.0),
            SampleArm::new("gap", Role::Arm, -5.0),
            SampleArm::new("pad", Role::Arm, -5.0),
            SampleArm::new("again", Role::Reflexive, 0.0),
            SampleArm::new("short", Role::Arm, 5.0),
        ],
    );
    s.noise_pct = 0.5;
    s.noise_limit_pct = None;
    s.breakdown = Some(SampleBreakdown {
        keys: [
            ("matmul", 900.0, 52.0),
            ("ffn_add", 400.0, 8.0),
            ("attention", 60.0, 2.0),
            ("embed", 3.0, 1.0),
            ("feed_next", 0.5, 1.0),
        ]
        .map(|(k, v, l)| (k.to_string(), v, l))
        .to_vec(),
        changes: vec![("slow".into(), "matmul".into(), 50.0)],
        only: vec![("pad".into(), "pad_round".into(), 80.0)],
        untimed: 20.0,
        untimed_delta: vec![("gap".into(), 100.0), ("short".into(), -100.0)],
        missing: Vec::new(),
    });
    s
}

fn arm<'a>(report: &'a analyze::analysis::LadderReport, name: &str) -> &'a BreakdownArm {
    let b = report.breakdown.as_ref().expect("a breakdown");
    b.arms.iter().find(|a| a.arm == name).unwrap()
}

fn key<'a>(a: &'a BreakdownArm, name: &str) -> &'a KeyLine {
    a.keys.iter().find(|k| k.key == name).unwrap()
}

#[test]
fn the_slowed_key_leads_with_its_size_and_sign_and_the_rest_is_folded() {
    let report = common::one("lead", sample().file_text());
    let b = report.breakdown.as_ref().unwrap();
    assert!((b.step - 1383.5).abs() < 15.0, "step {}", b.step);
    let slow = arm(&report, "slow");
    let matmul = &slow.keys[0];
    assert_eq!(matmul.key, "matmul", "the largest contribution first");
    assert!(
        matmul.delta_ci_low < 450.0 && 450.0 < matmul.delta_ci_high,
        "{matmul:?}"
    );
    assert!(
        matmul.ci_low_pct < 50.0 && 50.0 < matmul.ci_high_pct && matmul.delta_pct > 45.0,
        "{matmul:?}"
    );
    assert_eq!(matmul.holm_verdict, "more");
    assert_eq!(
        (matmul.launches_base, matmul.launches_arm),
        (Some(52.0), Some(52.0))
    );
    for other in ["ffn_add", "attention"] {
        let k = key(slow, other);
        assert!(!k.folded && k.holm_verdict != "more", "{k:?}");
    }
    // embed (3) and feed_next (0.5) lie below 1 % of the step.
    assert!(key(slow, "embed").folded && key(slow, "feed_next").folded);
    let rest = slow.rest.as_ref().unwrap();
    assert_eq!((rest.keys, rest.holm_verdict), (Some(2), "not tested"));
    assert!((rest.base_median - 3.5).abs() < 0.1, "{rest:?}");
    let c = &slow.closure;
    assert_eq!(c.adds_up, Some(true), "{c:?}");
    assert!(
        c.keys_sum.ci_low < 450.0 && 450.0 < c.keys_sum.ci_high,
        "{c:?}"
    );
}

#[test]
fn a_step_that_moved_beside_its_keys_does_not_add_up_and_a_reflexive_one_does() {
    let report = common::one("gap", sample().file_text());
    let gap = &arm(&report, "gap").closure;
    assert_eq!(gap.adds_up, Some(false), "{gap:?}");
    let g = gap.gap.unwrap();
    // The total is the keys' sum plus 100, each written with three decimals.
    assert!((g.estimate - 100.0).abs() < 0.01 && g.ci_low > 0.0, "{g:?}");
    assert!(gap.keys_sum.ci_low < 0.0 && 0.0 < gap.keys_sum.ci_high);
    let short = &arm(&report, "short").closure;
    assert_eq!(short.adds_up, Some(false), "a gap below 0 too: {short:?}");
    let again = arm(&report, "again");
    assert_eq!(again.closure.adds_up, Some(true), "{:?}", again.closure);
}

#[test]
fn an_arm_of_no_effect_checks_the_keys_and_names_what_moved_in_it() {
    // As sampled, `again` is the base again: its keys' control holds; a plain arm has none.
    let report = common::one("control", sample().file_text());
    let again = arm(&report, "again")
        .control
        .as_ref()
        .expect("a reflexive arm's check");
    assert!(again.holds && again.resolved.is_empty(), "{again:?}");
    assert_eq!(again.largest_pct, 0.0);
    assert!(arm(&report, "slow").control.is_none());
    // `again` spending 3 % more in `ffn_add`, which no control may: the check fails, naming it.
    let mut moved = sample();
    let b = moved.breakdown.as_mut().unwrap();
    b.changes.push(("again".into(), "ffn_add".into(), 3.0));
    let text = moved.file_text();
    let report = common::one("control-fails", text.clone());
    let again = arm(&report, "again").control.as_ref().unwrap();
    assert!(!again.holds, "{again:?}");
    assert_eq!(again.resolved, vec!["ffn_add".to_string()]);
    let ffn = key(arm(&report, "again"), "ffn_add");
    assert_eq!(again.largest_pct, ffn.delta_pct.abs());
    assert!(ffn.ci_low_pct < 3.0 && 3.0 < ffn.ci_high_pct, "{ffn:?}");
    let path = std::env::temp_dir().join(format!("control_{}.csv", std::process::id()));
    std::fs::write(&path, text).unwrap();
    for args in [vec!["--summary"], vec![]] {
        let out = Command::new(env!("CARGO_BIN_EXE_analyze"))
            .arg("report")
            .args(&args)
            .arg(&path)
            .output()
            .unwrap();
        let shown = String::from_utf8(out.stdout).unwrap();
        assert!(
            shown.contains("the keys' control") || shown.contains("The keys' control"),
            "{shown}"
        );
        assert!(shown.contains("fails") && shown.contains("ffn"), "{shown}");
    }
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_key_of_one_side_counts_zero_on_the_other() {
    let report = common::one("only", sample().file_text());
    let pad = arm(&report, "pad");
    let own = key(pad, "pad_round");
    assert_eq!(own.only_in, Some("arm"));
    assert_eq!(own.base_median, 0.0);
    assert!((own.delta - 80.0).abs() < 2.0, "{own:?}");
    assert!(own.delta_pct.is_nan(), "no ratio against nothing: {own:?}");
    assert_eq!(
        (pad.keys[0].key.as_str(), own.holm_verdict),
        ("pad_round", "more"),
        "tested on its deltas"
    );
    assert_eq!(pad.closure.adds_up, Some(true), "{:?}", pad.closure);
}

/// A key the base alone prints counts zero in the arm, and says so.
#[test]
fn a_key_of_the_base_alone_is_marked_as_the_bases() {
    let mut s = sample();
    let b = s.breakdown.as_mut().unwrap();
    b.only.push(("base".into(), "warm_cache".into(), 40.0));
    let report = common::one("base_only", s.file_text());
    let slow = arm(&report, "slow");
    let own = key(slow, "warm_cache");
    assert_eq!(own.only_in, Some("base"));
    assert_eq!(own.arm_median, 0.0);
    assert!((own.base_median - 40.0).abs() < 1.0, "{own:?}");
    assert_eq!(slow.closure.adds_up, Some(true), "{:?}", slow.closure);
}

/// "Below 1 % of the step" (METHOD.md "Breakdown"): a key at exactly 1 % is shown, one below it
/// folded.
#[test]
fn a_key_at_one_percent_of_the_step_is_shown_and_one_below_it_folded() {
    let mut s = Sample::new(
        "edge",
        "t1",
        vec![
            SampleArm::new("base", Role::Base, 0.0),
            SampleArm::new("other", Role::Arm, 0.0),
        ],
    );
    (s.noise_pct, s.noise_limit_pct) = (0.0, None);
    s.breakdown = Some(SampleBreakdown {
        keys: [("big", 98.5), ("at", 1.0), ("below", 0.5)]
            .map(|(k, v)| (k.to_string(), v, 1.0))
            .to_vec(),
        ..SampleBreakdown::default()
    });
    let report = common::one("edge", s.file_text());
    let other = arm(&report, "other");
    assert!(!key(other, "at").folded, "{:?}", key(other, "at"));
    assert!(key(other, "below").folded, "{:?}", key(other, "below"));
}

#[test]
fn without_a_total_the_closure_is_not_checked() {
    let text = sample()
        .file_text()
        .replacen(r#""total":"decode_us_per_token","#, "", 1);
    let report = common::one("nototal", text);
    let c = &arm(&report, "gap").closure;
    assert!(
        c.total.is_none() && c.gap.is_none() && c.adds_up.is_none(),
        "{c:?}"
    );
}

/// The markdown (table, closure and figure), the JSON, the CSV and the terminal summary.
#[test]
fn every_export_says_where_the_time_moves() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("where_t1.csv");
    std::fs::write(&raw, sample().file_text()).unwrap();
    let md = dir.path().join("r.md");
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
    let out = Command::new(env!("CARGO_BIN_EXE_analyze"))
        .arg("report")
        .arg(&raw)
        .arg("-o")
        .arg(&md)
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.contains(
            "### Where the time moves (<code>us&#95;per&#95;token</code> by <code>kernel</code>)"
        ),
        "{text}"
    );
    assert!(text.contains("| <code>matmul</code> | 52 |"), "{text}");
    assert!(text.contains("| rest (2 keys, "), "{text}");
    assert!(text.contains("**the breakdown does not add up**"), "{text}");
    assert!(text.contains("(only in the arm)"), "{text}");
    let svg = dir.path().join("r_where_t1_breakdown_slow.svg");
    assert!(text.contains("(r_where_t1_breakdown_slow.svg)"), "{text}");
    assert!(std::fs::read_to_string(svg).unwrap().contains("matmul"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let arms = &json["ladders"][0]["breakdown"]["arms"];
    assert_eq!(arms[0]["arm"], "slow");
    assert_eq!(arms[0]["keys"][0]["key"], "matmul");
    assert_eq!(arms[1]["closure"]["adds_up"], false);
    let csv = std::fs::read_to_string(&csv).unwrap();
    let row = csv
        .lines()
        .find(|l| l.contains(",us_per_token[matmul],lower,slow,"))
        .unwrap_or_else(|| panic!("{csv}"));
    let fields: Vec<&str> = row.split(',').collect();
    let estimate: f64 = fields[10].parse().unwrap();
    assert!(
        (estimate - 100.0 * (1.0 / 1.5 - 1.0)).abs() < 2.0 && fields[16] == "worse",
        "better-is-positive, as every row: {row}"
    );
    let delta: f64 = fields[18].parse().unwrap();
    assert!((delta - 450.0).abs() < 20.0, "{row}");
    let summary = Command::new(env!("CARGO_BIN_EXE_analyze"))
        .args(["report", "--summary"])
        .arg(&raw)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let summary = String::from_utf8(summary.stdout).unwrap();
    assert!(
        summary.contains("Where the time moves (us_per_token by kernel")
            && summary.contains("gap: the keys' deltas sum to")
            && summary.contains("does not add up"),
        "{summary}"
    );
}

/// A cell that failed (a non-zero exit) printed no breakdown: its pass is left out of its
/// arm's pairs, not read as keys of 0.
#[test]
fn a_cell_that_failed_leaves_its_pass_out_of_the_keys() {
    let failed = common::edit_rows(&sample().file_text(), |row| {
        if row.get("ladder_pass") == "3" && row.get("ladder_arm") == "slow" {
            row.set("ladder_exit", 1);
        }
        true
    });
    let reading = common::read_with("failed_cell", &[failed], true);
    let report = &reading.reports[0];
    let matmul = key(arm(report, "slow"), "matmul");
    assert_eq!(matmul.n, report.analysis_passes - 1, "{matmul:?}");
    assert!((matmul.delta_pct - 50.0).abs() < 2.0, "{matmul:?}");
    let again = key(arm(report, "again"), "matmul");
    assert_eq!(again.n, report.analysis_passes, "{again:?}");
}

/// An arm that launches a key's kernel twice as often shows both sides' launches.
#[test]
fn each_side_shows_its_own_launches() {
    let doubled = common::edit_rows(&sample().file_text(), |row| {
        if row.get("ladder_arm") == "slow" && row.get("kernel") == "matmul" {
            row.set("launches_per_token", 104);
        }
        true
    });
    let report = common::one("launches", doubled);
    let matmul = key(arm(&report, "slow"), "matmul");
    assert_eq!(
        (matmul.launches_base, matmul.launches_arm),
        (Some(52.0), Some(104.0))
    );
    let again = key(arm(&report, "again"), "matmul");
    assert_eq!(
        (again.launches_base, again.launches_arm),
        (Some(52.0), Some(52.0))
    );
}

/// Under `[stop]` a key's interval uses its own spread over the first look's passes, whether
/// the metrics' spread is each arm's or pooled (METHOD.md): a key is no metric, so no
/// metric's pooled spread is its spread.
#[test]
fn under_stop_a_keys_interval_keeps_its_own_first_look_spread() {
    let read = |spread: Option<ladder::spec::StopSpread>, looks: Vec<usize>| {
        let mut s = sample();
        s.stop = spread.map(|spread| ladder::spec::StopSpec {
            halfwidth_pct: 0.0001,
            looks,
            spread,
            metrics: Vec::new(),
            within_s: None,
        });
        let report = common::one("stop", s.file_text());
        let m = key(arm(&report, "slow"), "matmul");
        (m.delta_ci_low, m.delta_ci_high)
    };
    let per_arm = read(Some(ladder::spec::StopSpread::PerArm), vec![4, 8]);
    assert_eq!(
        read(Some(ladder::spec::StopSpread::Pooled), vec![4, 8]),
        per_arm
    );
    let fixed = read(None, Vec::new());
    assert_ne!(fixed, per_arm, "a fixed ladder reads every pass's spread");
    assert_eq!(
        read(Some(ladder::spec::StopSpread::PerArm), vec![20, 30]),
        fixed,
        "cut off before its first look, a ladder is read as a fixed one"
    );
}
