//! The card during the cell in the report: the `[card]` throttle rule end to end from the
//! sample generator through `verify` and `report`, the round split's energy, and energy
//! beside speed across ladders.

mod common;

use common::{read, read_with};
use ladder::sample::{Sample, SampleArm, SampleCard};
use ladder::Role;
use std::process::Command;

/// Base, an arm 1 % faster that draws 3 % more power, a null control; 8 passes.
fn sample(tag: &str, card: SampleCard) -> Sample {
    let mut fast = SampleArm::new("fast", Role::Arm, 1.0);
    fast.power_pct = 3.0;
    let mut s = Sample::new(
        "card",
        tag,
        vec![
            SampleArm::new("off", Role::Base, 0.0),
            fast,
            SampleArm::new("null", Role::Null, 0.0),
        ],
    );
    s.witness = true;
    s.card = Some(card);
    s
}

fn throttled(throttle_defect: bool) -> Sample {
    sample(
        "t1",
        SampleCard {
            throttle_defect,
            throttled_inside: vec![7],
            ..SampleCard::default()
        },
    )
}

#[test]
fn a_throttle_under_the_rule_is_named_by_verify_and_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("card_t1.csv");
    std::fs::write(&path, throttled(true).file_text()).unwrap();
    let analyze = env!("CARGO_BIN_EXE_analyze");
    let verify = Command::new(analyze)
        .arg("verify")
        .arg(&path)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(1));
    let said = String::from_utf8_lossy(&verify.stdout);
    assert!(said.contains("card-throttle"), "{said}");
    assert!(
        said.contains(
            "pass 2 slot 1 (arm off) ran under a power or thermal throttle: sw_power_cap"
        ),
        "{said}"
    );
    let report = Command::new(analyze)
        .arg("report")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(report.status.code(), Some(1));
    let markdown = String::from_utf8_lossy(&report.stdout);
    assert!(
        markdown.contains("`card-throttle`: <code>pass 2 slot 1 (arm off) ran under"),
        "{markdown}"
    );

    let reading = read_with("card-defect", &[throttled(true).file_text()], true);
    let r = &reading.reports[0];
    assert_eq!(r.disqualified_by, ["card-throttle"]);
    assert!(!r.qualified && r.statistics);
}

#[test]
fn a_throttle_under_report_is_listed_and_disqualifies_nothing() {
    let reading = read("card-report", &[throttled(false).file_text()]);
    let r = &reading.reports[0];
    assert!(r.qualified, "{:?}", r.disqualified_by);
    let card = r.witness.as_ref().unwrap().card.as_ref().unwrap();
    assert_eq!(
        (card.sampled_cells, card.cells, card.sample_ms),
        (24, 24, 20)
    );
    assert_eq!(card.throttled.len(), 1);
    let cell = &card.throttled[0];
    assert_eq!((cell.pass, cell.slot, cell.arm.as_str()), (2, 1, "off"));
    assert_eq!(cell.detail, "during the cell: sw_power_cap (0x5)");
    let markdown = analyze::export::markdown::render(
        &analyze::export::markdown::Doc::without_figures(&reading),
    );
    assert!(
        markdown.contains("- Power or thermal throttle during a cell (sampled every 20 ms; 24 of 24 cells sampled; `[card] throttle = \"report\"`: listed, not disqualifying): 1 cell(s)"),
        "{markdown}"
    );
}

/// A cell that ran beside another compute process is listed when the witness saw one before
/// it or after it; a cell that saw none on either side is not.
#[test]
fn a_foreign_process_before_or_after_a_cell_lists_that_cell() {
    let text = common::edit_rows(&sample("f1", SampleCard::default()).file_text(), |row| {
        match (row.get("ladder_pass"), row.get("ladder_arm")) {
            ("2", "fast") => row.set("witness_foreign_procs_before", 2),
            ("5", "null") => row.set("witness_foreign_procs_after", 1),
            _ => {}
        }
        true
    });
    let reading = read("foreign", &[text]);
    let witness = reading.reports[0].witness.as_ref().unwrap();
    let listed: Vec<(usize, &str, &str)> = witness
        .foreign_cells
        .iter()
        .map(|c| (c.pass, c.arm.as_str(), c.detail.as_str()))
        .collect();
    assert_eq!(
        listed,
        vec![
            (2, "fast", "2 foreign process(es) before, 0 after"),
            (5, "null", "0 foreign process(es) before, 1 after"),
        ]
    );
}

#[test]
fn the_round_split_splits_the_energy_into_count_per_round_speed_and_power() {
    let mut s = sample(
        "t1",
        SampleCard {
            split_energy: true,
            ..SampleCard::default()
        },
    );
    s.split = true;
    // The arm also runs fewer rounds: the round count's factor is not 0.
    s.arms[1].rounds = 60;
    let reading = read("card-split", &[s.file_text()]);
    let split = reading.reports[0].round_split.as_ref().unwrap();
    assert_eq!(split.energy.as_deref(), Some("decode_j"));
    let fast = &split.arms[0];
    let energy = fast.energy.as_ref().unwrap();
    assert!(
        (fast.count_pct - 100.0 * (64.0 / 60.0 - 1.0)).abs() < 1e-9,
        "{}",
        fast.count_pct
    );
    // The energy is time × power exactly: the power factor is the arm's, 1/1.03.
    assert!(
        (energy.power_pct - 100.0 * (1.0 / 1.03 - 1.0)).abs() < 1e-4,
        "{}",
        energy.power_pct
    );
    let f = |pct: f64| 1.0 + pct / 100.0;
    // energy = count · energy per round; energy per round = speed · power.
    assert!((f(energy.energy_pct) - f(fast.count_pct) * f(energy.j_per_round_pct)).abs() < 1e-12);
    assert!((f(energy.j_per_round_pct) - f(fast.speed_pct) * f(energy.power_pct)).abs() < 1e-12);
    let markdown = analyze::export::markdown::render(
        &analyze::export::markdown::Doc::without_figures(&reading),
    );
    assert!(
        markdown
            .contains("| arm | energy | round count | energy per round | round speed | power |"),
        "{markdown}"
    );
    // A cell without its energy leaves its pass out of the energy's factors only. A file
    // reads a missing value as a gap only with its defects: one cell of `null` failed.
    let gap = common::edit_rows(&s.file_text(), |row| {
        match (row.get("ladder_pass"), row.get("ladder_arm")) {
            ("3", "fast") => row.set("decode_j", ""),
            ("5", "null") => row.set("ladder_exit", 1),
            _ => {}
        }
        true
    });
    let reading = read_with("card-split-gap", &[gap], true);
    let gapped = &reading.reports[0].round_split.as_ref().unwrap().arms[0];
    let energy = gapped.energy.as_ref().unwrap();
    assert!(
        (energy.power_pct - 100.0 * (1.0 / 1.03 - 1.0)).abs() < 1e-4,
        "{}",
        energy.power_pct
    );
    assert!(energy.energy_pct.is_finite() && energy.j_per_round_pct.is_finite());
    assert_eq!(gapped.n, fast.n);
    // Without an energy column the split has no energy.
    let mut plain = sample("t2", SampleCard::default());
    plain.split = true;
    let split = read("card-split-plain", &[plain.file_text()]).reports[0]
        .round_split
        .take()
        .unwrap();
    assert!(split.energy.is_none() && split.arms[0].energy.is_none());
}

#[test]
fn across_ladders_energy_stands_beside_speed() {
    let card = SampleCard {
        energy_metric: true,
        ..SampleCard::default()
    };
    let mut rb1 = sample("rb1", card.clone());
    rb1.seed = 2;
    let reading = read(
        "card-across",
        &[sample("a8", card).file_text(), rb1.file_text()],
    );
    let speed = reading
        .replications
        .iter()
        .find(|q| q.quantity == "decode_tok_s:fast-vs-off")
        .unwrap();
    assert_eq!(
        speed.energy.len(),
        1,
        "one energy metric, once: {:?}",
        speed.energy
    );
    let beside = &speed.energy[0];
    assert_eq!(beside.column, "witness_energy_j");
    // 1 % faster at 3 % more power: the energy per cell is 1.03/1.01 of the base's.
    for estimate in &beside.estimates_pct {
        let e = estimate.unwrap();
        assert!((e - 100.0 * (1.01 / 1.03 - 1.0)).abs() < 0.2, "{e}");
    }
    let [a, b] = [0, 1].map(|i| beside.estimates_pct[i].unwrap());
    assert_eq!(
        beside.spread_pp,
        (a - b).abs(),
        "max − min of the two ladders' estimates"
    );
    assert!(beside.spread_pp > 0.0);
    // The energy's own quantities stand beside, not as rows of their own.
    assert!(!reading
        .replications
        .iter()
        .any(|q| q.quantity.starts_with("witness_energy_j:")));
    let markdown = analyze::export::markdown::render(
        &analyze::export::markdown::Doc::without_figures(&reading),
    );
    assert!(
        markdown.contains("| reading | energy beside it (%) |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("<code>witness&#95;energy&#95;j</code>: -1.9"),
        "{markdown}"
    );
}

#[test]
fn a_spec_whose_only_metric_is_energy_keeps_its_energy_rows() {
    let card = SampleCard {
        energy_metric: true,
        ..SampleCard::default()
    };
    let energy_only = |tag: &str, seed: u64| {
        let mut s = sample(tag, card.clone());
        s.metrics.clear();
        s.seed = seed;
        s.file_text()
    };
    let reading = read("energy-only", &[energy_only("e1", 1), energy_only("e2", 2)]);
    let energy = reading
        .replications
        .iter()
        .find(|q| q.quantity == "witness_energy_j:fast-vs-off")
        .expect("with nothing to stand beside, the energy is a row of its own");
    assert!(energy.energy.is_empty(), "{:?}", energy.energy);
}
