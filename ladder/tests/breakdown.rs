//! `[breakdown]`: the spec's table and its refusals, and the replay's check that every cell of
//! an arm printed the same keys (LADDER-FORMAT.md), on generated ladders (`ladder::sample`).

mod common;

use common::DEMO_SPEC;
use ladder::sample::{Sample, SampleArm, SampleBreakdown};
use ladder::spec::Spec;
use ladder::verify::{replay, DefectKind};
use ladder::Role;
use std::path::Path;

/// Three arms; the base and `slow` print four keys, `pad` a fifth of its own.
fn sample() -> Sample {
    let mut s = Sample::new(
        "breakdown",
        "t1",
        vec![
            SampleArm::new("base", Role::Base, 0.0),
            SampleArm::new("slow", Role::Arm, -10.0),
            SampleArm::new("pad", Role::KnownEffect, -5.0),
        ],
    );
    s.breakdown = Some(SampleBreakdown {
        keys: [
            ("matmul", 900.0),
            ("ffn_add", 400.0),
            ("attention", 60.0),
            ("embed", 3.0),
        ]
        .map(|(k, v)| (k.to_string(), v, 2.0))
        .to_vec(),
        only: vec![("pad".into(), "pad_round".into(), 80.0)],
        untimed: 20.0,
        ..SampleBreakdown::default()
    });
    s
}

fn defects(text: &str) -> Vec<(DefectKind, usize, String)> {
    replay(text.as_bytes())
        .verdict
        .defects
        .into_iter()
        .map(|d| (d.kind, d.line, d.detail))
        .collect()
}

#[test]
fn a_breakdown_ladder_is_one_connected_run_though_its_arms_print_other_keys() {
    let text = sample().file_text();
    let replayed = replay(text.as_bytes());
    assert!(replayed.verdict.connected, "{:?}", replayed.verdict.defects);
    let ladder = replayed.ladder.unwrap();
    // 8 passes × (base 5 rows + slow 5 rows + pad 6 rows).
    assert_eq!(ladder.rows.len(), 8 * 16);
    let spec = Spec::from_json(&ladder.start.spec).unwrap();
    let b = spec.breakdown.unwrap();
    assert_eq!(
        (b.key.as_str(), b.value.as_str(), b.total.as_deref()),
        ("kernel", "us_per_token", Some("decode_us_per_token"))
    );
}

#[test]
fn a_cell_missing_a_kernel_row_is_a_defect_that_names_the_cell_and_the_kernel() {
    let mut s = sample();
    // Cell 4 is pass 1 slot 1: under rotate, arm (1 + 1) mod 3 = pad.
    s.breakdown.as_mut().unwrap().missing = vec![(4, "ffn_add".into())];
    let text = s.file_text();
    let found = defects(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    let (kind, line, detail) = &found[0];
    assert_eq!(*kind, DefectKind::BreakdownKey);
    assert!(
        text.lines().nth(line - 1).unwrap().starts_with("1,1,pad,"),
        "line {line} is the cell's first row"
    );
    assert!(
        detail.contains("pass 1 slot 1 (arm pad)")
            && detail.contains("key \"ffn_add\" missing")
            && detail.contains("7 of the arm's 8 cells print the 5 keys"),
        "{detail}"
    );
    assert_eq!(kind.to_string(), "breakdown-key");
}

#[test]
fn a_key_printed_twice_or_without_a_number_is_a_defect_at_its_row() {
    let text = sample().file_text();
    let lines: Vec<&str> = text.lines().collect();
    // Line 4 is the base's first key row (pass 0 slot 0, ladder_row 1).
    let row = lines[3];
    assert!(
        row.starts_with("0,0,base,") && row.contains(",matmul,"),
        "{row}"
    );
    let twice = text.replacen(lines[4], &lines[4].replace(",ffn_add,", ",matmul,"), 1);
    let found = defects(&twice);
    assert!(
        found.iter().any(|(k, l, d)| *k == DefectKind::BreakdownKey
            && *l == 5
            && d.contains("prints key \"matmul\" twice")),
        "{found:?}"
    );
    let value = row.rsplit(',').next().unwrap();
    let nan = text.replacen(
        row,
        &format!("{},NaN", &row[..row.len() - value.len() - 1]),
        1,
    );
    let found = defects(&nan);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].1 == 4 && found[0].2.contains("key \"matmul\" has the value \"NaN\""),
        "{found:?}"
    );
}

#[test]
fn a_header_without_the_named_columns_is_a_defect_at_line_2() {
    let text = sample()
        .file_text()
        .replacen(",us_per_token", ",us_per_call", 1);
    let found = defects(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].0, found[0].1), (DefectKind::BreakdownKey, 2));
    assert!(found[0].2.contains("value = \"us_per_token\""), "{found:?}");
}

/// Without `[breakdown]` a cell that prints another number of rows is a bad row, as ever.
#[test]
fn without_the_table_every_cell_prints_the_same_number_of_rows() {
    let text = sample().file_text();
    let start = text.lines().next().unwrap();
    let bare = start.replace(
        r#","breakdown":{"key":"kernel","launches":"launches_per_token","total":"decode_us_per_token","value":"us_per_token"}"#,
        "",
    );
    assert_ne!(bare, start, "the start record holds the table");
    let found = defects(&text.replacen(start, &bare, 1));
    assert!(
        !found.is_empty()
            && found
                .iter()
                .all(|(k, _, d)| *k == DefectKind::BadRow
                    && d.contains("rows, the first cell has 5")),
        "{found:?}"
    );
}

fn refused(text: &str) -> ladder::spec::SpecError {
    Spec::parse(Path::new("ladders/demo.toml"), text).expect_err("the spec should be refused")
}

#[test]
fn the_spec_table_is_read_and_refused_at_its_line() {
    let good = format!("{DEMO_SPEC}\n[breakdown]\nkey = \"kernel\"\nvalue = \"us_per_token\"\n");
    let spec = Spec::parse(Path::new("ladders/demo.toml"), &good).unwrap();
    assert_eq!(spec.breakdown.unwrap().total, None);
    let e = refused(&good.replace("value = ", "values = "));
    assert!(e.message.contains("values") && e.line == Some(23), "{e}");
    let e = refused(&good.replace("\"us_per_token\"", "\"kernel\""));
    assert!(
        e.message.contains("\"kernel\" as both key and value") && e.line == Some(23),
        "{e}"
    );
    let e = refused(&good.replace("\"us_per_token\"", "\"\""));
    assert!(
        e.message.contains("value is empty") && e.line == Some(23),
        "{e}"
    );
    let e = refused(&good.replace("passes = 4", "passes = 4\noutput = \"time\""));
    assert!(
        e.message.contains("output = \"time\" reads none") && e.line == Some(22),
        "{e}"
    );
    let e = refused(&good.replace("value = \"us_per_token\"\n", ""));
    assert!(e.message.contains("value"), "{e}");
}
