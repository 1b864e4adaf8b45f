//! Small ladders computed by hand, checked to the last digit against METHOD.md.

mod common;

use common::{close, one, Hand};
use ladder::spec::Better;
use ladder::Role;

/// Base 99, 100, 101 in the analysis passes; `on` 1 %, 2 %, 3 % above it; `null` equal.
fn three_arms() -> Hand {
    let mut hand = Hand::new(
        &[("off", Role::Base), ("on", Role::Arm), ("null", Role::Null)],
        &[("tok_s", Better::Higher)],
        4,
    );
    hand.sample.split = true;
    hand.sample.digest = true;
    hand.extra_columns = vec![
        "spec_rounds".into(),
        "decode_seconds_mean".into(),
        "output_digest".into(),
    ];
    hand
}

fn value(column: &str, pass: usize, arm: usize) -> String {
    let base = [50.0, 99.0, 100.0, 101.0][pass];
    match (column, arm) {
        ("tok_s", 0) | ("tok_s", 2) => format!("{base}"),
        ("tok_s", _) => format!("{}", base * (1.0 + 0.01 * pass as f64)),
        ("spec_rounds", 1) => "8".into(),
        ("spec_rounds", _) => "10".into(),
        ("decode_seconds_mean", 1) => "0.9".into(),
        ("decode_seconds_mean", _) => "1.0".into(),
        ("output_digest", 2) if pass == 2 => "beef".into(),
        _ => "abcd".into(),
    }
}

#[test]
fn arm_against_base_by_hand() {
    let report = one("by_hand", three_arms().text(value));
    assert!(
        report.connected && report.statistics,
        "{:?}",
        report.defects
    );
    assert_eq!(report.analysis_passes, 3);
    let m = &report.metrics[0];
    let on = &m.arms[0];
    assert_eq!((on.arm.as_str(), on.against.as_str()), ("on", "off"));
    let deltas = [
        100.0 * (99.0 * 1.01 / 99.0 - 1.0),
        100.0 * (100.0 * 1.02 / 100.0 - 1.0),
        100.0 * (101.0 * 1.03 / 101.0 - 1.0),
    ];
    for (got, want) in on.deltas_pct.iter().zip(deltas) {
        assert!(close(*got, want), "{got} {want}");
    }
    // median 2, sd 1, sem 1/√3, t(0.975, 2) = 4.302652729911275
    let f = &on.figures;
    assert!(close(f.estimate_pct, deltas[1]));
    let sd = (((deltas[0] - 2.0f64).powi(2)
        + (deltas[1] - 2.0f64).powi(2)
        + (deltas[2] - 2.0f64).powi(2))
        / 2.0)
        .sqrt();
    assert!((sd - 1.0).abs() < 1e-12);
    assert!(
        (f.sem_pct - 0.5773502691896258).abs() < 1e-12,
        "{}",
        f.sem_pct
    );
    assert!(
        (f.ci_low_pct - (2.0 - 4.302652729911275 * 0.5773502691896258)).abs() < 1e-9,
        "{}",
        f.ci_low_pct
    );
    assert!(
        (f.ci_high_pct - 4.484137711807).abs() < 1e-9,
        "{}",
        f.ci_high_pct
    );
    assert_eq!(f.n, 3);
    assert_eq!(f.verdict, "not resolved");
}

#[test]
fn spread_controls_and_contrasts_by_hand() {
    let report = one("controls", three_arms().text(value));
    let m = &report.metrics[0];
    // sd of 99, 100, 101 is 1, the mean 100.
    assert!(close(m.base_spread_pct, 1.0), "{}", m.base_spread_pct);
    // The noise limit (0.2 %) is exceeded: disqualified, every number kept.
    assert!(!m.within_noise_limit);
    assert_eq!(report.disqualified_by, vec!["noise-limit"]);
    assert!(!report.qualified);
    let null = &m.controls[0];
    assert_eq!(
        (null.arm.as_str(), null.estimate_pct, null.holds),
        ("null", 0.0, Some(true))
    );
    // Contrasts i < j: on-vs-off, null-vs-off, null-vs-on.
    let names: Vec<(&str, &str)> = m
        .contrasts
        .iter()
        .map(|c| (c.arm.as_str(), c.against.as_str()))
        .collect();
    assert_eq!(names, [("on", "off"), ("null", "off"), ("null", "on")]);
    let null_on = &m.contrasts[2].figures;
    assert!(
        close(null_on.estimate_pct, 100.0 * (100.0 / 102.0 - 1.0)),
        "{}",
        null_on.estimate_pct
    );
    assert_eq!(null_on.verdict, "not resolved");
    assert_eq!(
        m.contrasts[0].figures.estimate_pct,
        m.arms[0].figures.estimate_pct
    );
}

#[test]
fn round_split_and_identity_by_hand() {
    let report = one("split", three_arms().text(value));
    let split = report.round_split.as_ref().unwrap();
    let on = &split.arms[0];
    assert!(close(on.total_pct, 100.0 * (1.0 / 0.9 - 1.0)));
    assert!(close(on.count_pct, 25.0));
    assert!(close(
        on.speed_pct,
        100.0 * ((1.0 / 10.0) / (0.9 / 8.0) - 1.0)
    ));
    assert!(!split.rounds_identical);
    assert_eq!(split.differing_cells.len(), 3);
    assert_eq!(split.cells, 9);
    let identity = report.identity.as_ref().unwrap();
    assert_eq!(
        (identity.comparisons, identity.identical, identity.distinct),
        (6, 5, 2)
    );
    assert_eq!(identity.differing[0].pass, 2);
    assert_eq!(identity.differing[0].arm, "null");
}

#[test]
fn a_control_outside_the_noise_floor_disqualifies() {
    let drifting = |column: &str, pass: usize, arm: usize| match (column, arm) {
        ("tok_s", 2) => format!("{}", [100.0, 100.0, 100.0, 100.0][pass] * 1.05),
        ("tok_s", _) => format!("{}", [100.0, 100.0, 100.1, 99.9][pass]),
        _ => value(column, pass, arm),
    };
    let mut hand = three_arms();
    hand.sample.noise_limit_pct = 5.0;
    let report = one("control", hand.text(drifting));
    assert_eq!(report.disqualified_by, vec!["control:null"]);
    assert_eq!(report.metrics[0].controls[0].holds, Some(false));
}

/// The start record's binary blake3 replaced, as if another build had run the same spec.
fn with_binary(text: &str, blake3: &str) -> String {
    let at = text.find("\"binary\"").expect("start record names its binary");
    let key = "\"blake3\":\"";
    let from = at + text[at..].find(key).expect("binary blake3") + key.len();
    let to = from + text[from..].find('"').unwrap();
    format!("{}{blake3}{}", &text[..from], &text[to..])
}

#[test]
fn ladders_of_different_binaries_are_not_called_replications() {
    let text = three_arms().text(value);
    let same = common::read("same_binary", &[text.clone(), text.clone()]);
    assert!(!same.replications.is_empty());
    assert!(same.replications.iter().all(|q| q.same_binary && q.replicates), "one binary twice replicates");

    let other = with_binary(&text, &"0".repeat(64));
    let differ = common::read("two_binaries", &[text, other]);
    assert!(!differ.replications.is_empty());
    for q in &differ.replications {
        assert!(!q.same_binary, "{}: two binaries read as one", q.quantity);
        assert_eq!(q.binaries[1], "0".repeat(64));
    }
    let dir = std::env::temp_dir().join(format!("analyze_binaries_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let md = dir.join("report.md");
    analyze::report::write_markdown(&differ, &md).unwrap();
    let text = std::fs::read_to_string(&md).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(text.contains("**Different binaries**") && text.contains("binaries differ: a change, not a replication"), "{text}");
    assert!(!text.contains("replicates: within the limit"), "{text}");
}
