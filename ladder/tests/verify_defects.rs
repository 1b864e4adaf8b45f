//! Every defect kind of LADDER-FORMAT.md, produced by mutating a clean file, is reported at
//! the right line; and no input at all makes the verifier panic.

mod common;

use ladder::ladder_file::{EndRecord, LadderWriter, Role, StartRecord};
use ladder::verify::{replay, DefectKind};
use proptest::prelude::*;

const ARMS: [&str; 3] = ["off", "on", "null"];
const PASSES: usize = 3;

/// The demo start record: arms `off` (the base), `on` and `null`, over three passes.
fn start() -> StartRecord {
    let roles = [Role::Base, Role::Arm, Role::Null];
    common::start_record(&ARMS.into_iter().zip(roles).collect::<Vec<_>>(), PASSES)
}

/// A clean ladder written by the real writer: 9 cells on lines 3..=11, done on line 12.
fn clean() -> String {
    static CLEAN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CLEAN.get_or_init(write_clean).clone()
}

fn write_clean() -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo_t1.csv");
    let mut writer = LadderWriter::create(&path, &start()).unwrap();
    writer
        .write_header(
            &common::HEADER
                .split(',')
                .map(String::from)
                .collect::<Vec<_>>(),
        )
        .unwrap();
    for p in 0..PASSES {
        for s in 0..ARMS.len() {
            let k = p * ARMS.len() + s;
            let row = vec![
                p.to_string(),
                s.to_string(),
                ARMS[(s + p) % ARMS.len()].to_string(),
                format!("2026-11-29T10:00:{:02}.000000Z", 2 * k),
                format!("2026-11-29T10:00:{:02}.500000Z", 2 * k + 1),
                "0".into(),
                "100.0".into(),
            ];
            writer.write_cell(&[row]).unwrap();
        }
    }
    writer
        .finish_done(&EndRecord {
            ended: "2026-11-29T10:01:00.000000Z".into(),
            cells: 9,
            reason: None,
            passes: Some(3),
            stopped: None,
        })
        .unwrap();
    std::fs::read_to_string(&path).unwrap()
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(String::from).collect()
}

fn join(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The (kind, line) of every defect of a mutated file.
fn defects(text: &str) -> Vec<(DefectKind, usize)> {
    replay(text.as_bytes())
        .verdict
        .defects
        .iter()
        .map(|d| (d.kind, d.line))
        .collect()
}

fn mutate(f: impl FnOnce(&mut Vec<String>)) -> Vec<(DefectKind, usize)> {
    let mut l = lines(&clean());
    f(&mut l);
    defects(&join(&l))
}

/// Replaces field `i` of line `n` (1-based).
fn set_field(l: &mut [String], n: usize, i: usize, value: &str) {
    let mut fields: Vec<&str> = l[n - 1].split(',').collect();
    fields[i] = value;
    l[n - 1] = fields.join(",");
}

#[test]
fn the_clean_file_is_connected() {
    let verdict = replay(clean().as_bytes()).verdict;
    assert!(verdict.connected, "{:?}", verdict.defects);
    assert_eq!((verdict.cells_expected, verdict.cells_found), (9, 9));
    assert_eq!(
        verdict.summary(),
        "one connected run, 9 of 9 cells, no gaps, no repeats, monotone timestamps"
    );
}

#[test]
fn missing_start() {
    assert_eq!(
        mutate(|l| {
            l.remove(0);
        }),
        vec![(DefectKind::MissingStart, 1)]
    );
    assert_eq!(defects(""), vec![(DefectKind::MissingStart, 1)]);
    assert_eq!(
        mutate(|l| l[0] = l[0].replace("ladder/2", "ladder/9")),
        vec![(DefectKind::MissingStart, 1)]
    );
}

#[test]
fn extra_start() {
    assert_eq!(
        mutate(|l| {
            let s = l[0].clone();
            l.insert(6, s);
        }),
        vec![(DefectKind::ExtraStart, 7)]
    );
}

#[test]
fn bad_header() {
    assert_eq!(
        mutate(|l| l[1] = l[1].replace("ladder_exit", "exit")),
        vec![(DefectKind::BadHeader, 2)]
    );
    assert_eq!(
        mutate(|l| l[1] = l[1].replace("tok_s", "ladder_arm")),
        vec![(DefectKind::BadHeader, 2)]
    );
}

#[test]
fn bad_row() {
    let unreadable_cell = vec![
        (DefectKind::BadRow, 5),
        (DefectKind::Gap, 6),
        (DefectKind::CountMismatch, 12),
    ];
    assert_eq!(mutate(|l| l[4] = "1,2".into()), unreadable_cell);
    assert_eq!(mutate(|l| set_field(l, 5, 3, "noon")), unreadable_cell);
}

#[test]
fn gap() {
    assert_eq!(
        mutate(|l| {
            l.remove(5);
        }),
        vec![(DefectKind::Gap, 6), (DefectKind::CountMismatch, 11)]
    );
}

/// The detail of every defect of a mutated file.
fn details(f: impl FnOnce(&mut Vec<String>)) -> Vec<String> {
    let mut l = lines(&clean());
    f(&mut l);
    let text = join(&l);
    replay(text.as_bytes())
        .verdict
        .defects
        .into_iter()
        .map(|d| d.detail)
        .collect()
}

#[test]
fn a_gap_names_the_cell_expected_or_that_none_was_left() {
    // Cell 4 (pass 1 slot 1, line 7) moved to the end: the cell after it is not the one
    // expected, and when it comes no legal cell is left (and its clock runs backwards).
    let found = details(|l| {
        let moved = l.remove(6);
        l.insert(10, moved);
    });
    assert_eq!(
        found,
        vec![
            "expected pass 1 slot 1, found pass 1 slot 2".to_string(),
            "pass 1 slot 1 comes after the last legal cell".to_string(),
            "ladder_started is earlier than the previous cell's ladder_ended".to_string(),
        ]
    );
}

#[test]
fn repeat() {
    assert_eq!(
        mutate(|l| {
            let r = l[5].clone();
            l.insert(6, r);
        }),
        vec![(DefectKind::Repeat, 7)]
    );
}

#[test]
fn wrong_arm() {
    assert_eq!(
        mutate(|l| set_field(l, 4, 2, "null")),
        vec![(DefectKind::WrongArm, 4)]
    );
}

#[test]
fn non_monotone_time() {
    // The cell on line 6 starts before the cell on line 5 ended.
    assert_eq!(
        mutate(|l| set_field(l, 6, 3, "2026-11-29T10:00:01.000000Z")),
        vec![(DefectKind::NonMonotoneTime, 6)]
    );
    // A cell that ends before it starts.
    assert_eq!(
        mutate(|l| set_field(l, 3, 4, "2026-11-29T09:00:00.000000Z")),
        vec![(DefectKind::NonMonotoneTime, 3)]
    );
    // At the clock's resolution a cell may take no time, and the next may start the
    // microsecond the last one ended: neither is a defect.
    assert_eq!(
        mutate(|l| set_field(l, 3, 4, "2026-11-29T10:00:00.000000Z")),
        vec![]
    );
    assert_eq!(
        mutate(|l| set_field(l, 4, 3, "2026-11-29T10:00:01.500000Z")),
        vec![]
    );
    // A done record (line 12) dated before the last cell ended (10:00:17.5) was not written
    // where it stands; one dated the microsecond that cell ended was.
    let done_at = |at: &'static str| {
        mutate(move |l| l[11] = l[11].replace("2026-11-29T10:01:00.000000Z", at))
    };
    assert_eq!(
        done_at("2026-11-29T10:00:17.499999Z"),
        vec![(DefectKind::NonMonotoneTime, 12)]
    );
    assert_eq!(done_at("2026-11-29T10:00:17.500000Z"), vec![]);
}

#[test]
fn failed_cell() {
    assert_eq!(
        mutate(|l| set_field(l, 8, 5, "signal:9")),
        vec![(DefectKind::FailedCell, 8)]
    );
}

#[test]
fn aborted() {
    assert_eq!(
        mutate(|l| {
            l.truncate(6);
            l.push("#ladder-abort {\"ended\":\"2026-11-29T10:01:00.000000Z\",\"cells\":4,\"reason\":\"SIGINT\"}".into());
        }),
        vec![(DefectKind::Aborted, 7)]
    );
}

#[test]
fn missing_done() {
    assert_eq!(
        mutate(|l| {
            l.truncate(7);
        }),
        vec![(DefectKind::MissingDone, 7)]
    );
}

#[test]
fn cells_after_done() {
    assert_eq!(
        mutate(|l| {
            let r = l[4].clone();
            l.push(r);
        }),
        vec![(DefectKind::CellsAfterDone, 13)]
    );
}

#[test]
fn count_mismatch() {
    assert_eq!(
        mutate(|l| l[11] = l[11].replace("\"cells\":9", "\"cells\":8")),
        vec![(DefectKind::CountMismatch, 12)]
    );
    // The last cell gone and the done record agreeing: still fewer cells than the order.
    let cut = |l: &mut Vec<String>| {
        l.remove(10);
        l[10] = l[10].replace("\"cells\":9", "\"cells\":8");
    };
    assert_eq!(mutate(cut), vec![(DefectKind::CountMismatch, 11)]);
    assert_eq!(details(cut), vec!["8 cells, the order has 9".to_string()]);
}

#[test]
fn comments_are_ignored() {
    assert_eq!(mutate(|l| l.insert(4, "# the card got hot".into())), vec![]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = replay(&bytes);
    }

    #[test]
    fn mutated_ladders_never_panic(cut in 0usize..2000, at in 0usize..2000, byte in any::<u8>(), prefix in any::<bool>()) {
        let mut bytes = clean().into_bytes();
        let at = at % bytes.len();
        bytes[at] = byte;
        if prefix {
            bytes.truncate(cut % bytes.len());
        }
        let verdict = replay(&bytes).verdict;
        prop_assert_eq!(verdict.connected, verdict.defects.is_empty());
    }
}

#[test]
fn a_clean_ladder_reads_its_metric_by_pass_and_arm() {
    let ladder = replay(clean().as_bytes()).ladder.unwrap();
    assert_eq!(ladder.column("tok_s"), Some(6));
    assert_eq!(ladder.column("decode_tok_s"), None);
    let metric = ladder::spec::MetricSpec {
        column: "tok_s".into(),
        better: ladder::spec::Better::Higher,
        row: 0,
        noise_limit_pct: None,
    };
    // The first two passes, every arm in the start record's order.
    let values = ladder.metric_values(&metric, 2);
    assert_eq!(values.values, vec![vec![Some(100.0); ARMS.len()]; 2]);
    let other_row = ladder::spec::MetricSpec { row: 1, ..metric };
    assert_eq!(
        ladder.metric_values(&other_row, 2).values,
        vec![vec![None; ARMS.len()]; 2]
    );
}

#[test]
fn a_defect_kind_is_named_as_the_format_names_it() {
    assert_eq!(DefectKind::CountMismatch.to_string(), "count-mismatch");
    assert_eq!(DefectKind::Gap.to_string(), "gap");
}
