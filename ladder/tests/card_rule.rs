//! The pre-registered `[card]` rule, end to end: generated ladders whose card was sampled
//! during each cell, replayed by `verify`; and the refusals of a bad `[card]` table.

mod common;

use common::DEMO_SPEC;
use ladder::card::THROTTLE_SEEN;
use ladder::sample::{Sample, SampleArm, SampleCard};
use ladder::spec::{Spec, ThrottleRule};
use ladder::{DefectKind, Role};
use std::path::Path;
use std::time::Duration;

/// Three arms over 4 passes; cell 5 (pass 1, slot 2) ran under a power cap that only the
/// sampler saw, cell 9 (pass 3, slot 0) under a thermal slowdown the readings after it saw too.
fn sample(throttle_defect: bool) -> Sample {
    let mut s = Sample::new(
        "card",
        "t1",
        vec![
            SampleArm::new("off", Role::Base, 0.0),
            SampleArm::new("on", Role::Arm, 1.0),
            SampleArm::new("null", Role::Null, 0.0),
        ],
    );
    s.passes = 4;
    s.witness = true;
    s.throttled_cells = vec![9];
    s.card = Some(SampleCard {
        throttle_defect,
        throttled_inside: vec![5],
        ..SampleCard::default()
    });
    s
}

#[test]
fn a_throttled_cell_is_a_defect_only_where_the_spec_says_so() {
    let reported = ladder::replay(sample(false).file_text().as_bytes());
    assert!(reported.verdict.connected, "{:?}", reported.verdict.defects);
    let replay = ladder::replay(sample(true).file_text().as_bytes());
    let defects = &replay.verdict.defects;
    assert!(!replay.verdict.connected);
    assert_eq!(defects.len(), 2, "{defects:?}");
    assert!(defects.iter().all(|d| d.kind == DefectKind::CardThrottle));
    // Lines: start record, header, then one row per cell.
    assert_eq!(defects[0].line, 2 + 5 + 1);
    assert!(
        defects[0]
            .detail
            .starts_with("pass 1 slot 2 (arm off) ran under a power or thermal throttle: sw_power_cap (witness_throttle_seen 0x5)"),
        "{}",
        defects[0].detail
    );
    assert!(defects[0].detail.contains("rerun the ladder"));
    assert_eq!(defects[1].line, 2 + 9 + 1);
    assert!(
        defects[1]
            .detail
            .contains("sw_thermal_slowdown (witness_throttle_seen 0x21)"),
        "{}",
        defects[1].detail
    );
    assert_eq!(defects[0].kind.to_string(), "card-throttle");
}

#[test]
fn an_unreadable_mask_or_a_missing_column_is_a_defect_under_the_rule() {
    let text = sample(true).file_text().replace(",0x1,", ",idle,");
    let replay = ladder::replay(text.as_bytes());
    let unreadable: Vec<_> = replay
        .verdict
        .defects
        .iter()
        .filter(|d| d.detail.contains("not a 0x mask"))
        .collect();
    assert_eq!(unreadable.len(), 12 - 2, "{:?}", replay.verdict.defects);
    let text = sample(true)
        .file_text()
        .replace(THROTTLE_SEEN, "witness_throttle_other");
    let replay = ladder::replay(text.as_bytes());
    assert_eq!(replay.verdict.defects.len(), 1);
    assert_eq!(replay.verdict.defects[0].line, 2);
    assert!(replay.verdict.defects[0].detail.contains("lacks"));
}

#[test]
fn an_empty_reading_is_a_cell_that_was_not_sampled() {
    let mut text = String::new();
    for (i, line) in sample(true).file_text().lines().enumerate() {
        let line = if i >= 2 && !line.starts_with('#') {
            // No NVML: every sampled column empty.
            let mut fields: Vec<&str> = line.split(',').collect();
            let at = sample(true)
                .columns()
                .iter()
                .position(|c| c == THROTTLE_SEEN)
                .unwrap();
            fields[at] = "";
            fields.join(",")
        } else {
            line.to_string()
        };
        text.push_str(&line);
        text.push('\n');
    }
    let replay = ladder::replay(text.as_bytes());
    assert!(replay.verdict.connected, "{:?}", replay.verdict.defects);
}

#[test]
fn the_card_table_is_read_with_its_defaults() {
    let spec = Spec::parse(Path::new("ladders/demo.toml"), DEMO_SPEC).unwrap();
    assert_eq!(spec.sample_every(), Duration::from_millis(20));
    assert_eq!(spec.throttle_rule(), ThrottleRule::Report);
    let text =
        format!("{DEMO_SPEC}\n[card]\nsample_ms = 5\nthrottle = \"defect\"\nclocks = \"report\"\n");
    let spec = Spec::parse(Path::new("ladders/demo.toml"), &text).unwrap();
    assert_eq!(spec.sample_every(), Duration::from_millis(5));
    assert_eq!(spec.throttle_rule(), ThrottleRule::Defect);
}

#[test]
fn a_bad_card_table_is_refused_at_its_line() {
    let refused = |table: &str| {
        let text = format!("{DEMO_SPEC}\n[card]\n{table}\n");
        Spec::parse(Path::new("ladders/demo.toml"), &text).unwrap_err()
    };
    let card_line = DEMO_SPEC.lines().count() + 2;
    for ms in ["0", "60001"] {
        let e = refused(&format!("sample_ms = {ms}"));
        assert_eq!(e.line, Some(card_line + 1), "{e}");
        assert!(e.message.contains("not from 1 to 60000"), "{e}");
        assert!(e.fix.contains("sample_ms = 20"), "{e}");
    }
    let e = refused("throttle = \"sometimes\"");
    assert_eq!(e.line, Some(card_line + 1), "{e}");
    assert!(e.message.contains("expected `report` or `defect`"), "{e}");
    let e = refused("clocks = \"defect\"");
    assert!(e.message.contains("expected `report`"), "{e}");
    let text = format!(
        "{DEMO_SPEC}\n[split]\nrounds = \"r\"\ntime = \"t\"\nenergy = \"witness_energy_j\"\n"
    );
    let e = Spec::parse(Path::new("ladders/demo.toml"), &text).unwrap_err();
    assert_eq!(e.line, Some(card_line + 3), "{e}");
    assert!(e.message.contains("the whole cell's energy"), "{e}");
    assert!(e.fix.contains("[[metric]]"), "{e}");
    let e = refused("sample_msec = 20");
    assert!(e.fix.contains("did you mean `sample_ms`?"), "{e}");
}
