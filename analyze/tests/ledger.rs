//! The live ledger (`analyze calibrate --live FILES…`, METHOD.md "The live ledger"): per host
//! and card, the inert control tests that failed, the ladders with a failed one and the
//! known-effect tests that held, counted from the files, beside simulated twins, and every
//! file it could not read named.

mod common;

use analyze::calibrate::{ledger, render_ledger};
use ladder::sample::{Sample, SampleArm};
use ladder::spec::Better;
use ladder::Role;
use std::path::PathBuf;

const TWINS: usize = 200;

fn write(name: &str, text: &str) -> PathBuf {
    common::write("ledger", name, text)
}

/// A base, a reflexive control whose cells carry `reflexive_pct`, and, when asked, a
/// known-effect arm of a true and declared −1 %.
fn sample(tag: &str, seed: u64, reflexive_pct: f64, known: bool) -> Sample {
    let mut arms = vec![
        SampleArm::new("a", Role::Base, 0.0),
        SampleArm::new("a-again", Role::Reflexive, reflexive_pct),
    ];
    if known {
        arms.push(SampleArm::known_effect("pad", -1.0, -1.0));
    }
    let mut s = Sample::new("ledger", tag, arms);
    (s.seed, s.noise_limit_pct) = (seed, None);
    s
}

#[test]
fn the_ledger_counts_each_control_and_names_what_it_could_not_read() {
    let held = write("held.csv", &sample("held", 1, 0.0, true).file_text());
    // A reflexive arm 2 % off at 0.1 % noise: its control fails.
    let failed = write("failed.csv", &sample("failed", 2, 2.0, false).file_text());
    let text = sample("cut", 3, 0.0, false).file_text();
    let cut = write("cut.csv", &text[..text.len() * 2 / 3]);
    let again = write("again.csv", &sample("again", 4, 0.0, false).file_text());

    let l = ledger(&[held, failed, cut.clone(), again], TWINS, 7).unwrap();
    assert_eq!(l.rows.len(), 1, "one host and card");
    let row = &l.rows[0];
    assert_eq!(row.ladders, 3);
    let kn = |c: &analyze::calibrate::Count| (c.k, c.n);
    assert_eq!(kn(&row.inert_failed), (1, 3));
    assert_eq!(kn(&row.ladders_failed), (1, 3));
    assert_eq!(kn(&row.known_held), (1, 1));
    // Every twin runs its ladder's design: one inert test each, one known-effect test in one.
    assert_eq!(row.simulated_inert_failed.n, 3 * TWINS);
    assert_eq!(row.simulated_ladders_failed.n, 3 * TWINS);
    assert_eq!(row.simulated_known_held.n, TWINS);
    assert!(row.simulated_inert_failed.rate < 0.15, "{row:?}");
    assert!(row.simulated_known_held.rate > 0.8, "{row:?}");
    assert_eq!(l.skipped.len(), 1);
    assert_eq!(l.skipped[0].0, cut.display().to_string());
    assert!(l.skipped[0].1.contains("NOT connected"), "{:?}", l.skipped);

    let table = render_ledger(&l);
    assert!(
        table.contains("| 3 | 33.3 % [0.8 %, 90.6 %] (1/3) |"),
        "{table}"
    );
    assert!(table.contains("(1/1)"), "{table}");
    assert!(table.contains("Not read (1):"), "{table}");
}

/// A ladder without an inert control adds to no inert count and to no ladder count (a
/// structural zero is a control, but not an inert one), and a ladder without a known-effect
/// arm reads "none" there.
#[test]
fn a_ladder_without_a_kind_of_control_adds_nothing_to_its_counts() {
    let mut plain = Sample::new(
        "plain",
        "t1",
        vec![
            SampleArm::new("a", Role::Base, 0.0),
            SampleArm::new("b", Role::Arm, 1.0),
            SampleArm::new("sz", Role::StructuralZero, 0.0),
        ],
    );
    (plain.noise_limit_pct, plain.split) = (None, true);
    let only = write("plain.csv", &plain.file_text());
    let l = ledger(&[only], TWINS, 7).unwrap();
    let row = &l.rows[0];
    assert_eq!(row.ladders, 1);
    assert_eq!(
        (row.inert_failed.n, row.ladders_failed.n, row.known_held.n),
        (0, 0, 0)
    );
    let table = render_ledger(&l);
    assert!(
        table.contains("| 1 | none | n/a | none | n/a | none | n/a |"),
        "{table}"
    );
}

/// A twin reads a lower-is-better metric's known effect as the ladder does (better is
/// positive): its known-effect control holds about as often as one of a higher-is-better metric.
#[test]
fn a_twin_of_a_lower_is_better_metric_recovers_its_known_effect() {
    let mut s = sample("lower", 5, 0.0, true);
    s.metrics[0].better = Better::Lower;
    let file = write("lower.csv", &s.file_text());
    let l = ledger(&[file], TWINS, 7).unwrap();
    let row = &l.rows[0];
    assert_eq!(
        row.known_held.k, 1,
        "the real ladder's control holds: {row:?}"
    );
    assert_eq!(row.simulated_known_held.n, TWINS);
    assert!(row.simulated_known_held.rate > 0.8, "{row:?}");
}

/// Ladders whose known-effect arm is planted at `truths` % and declared at −1 %.
fn planted(name: &str, truths: &[f64]) -> Vec<PathBuf> {
    truths
        .iter()
        .enumerate()
        .map(|(i, &truth)| {
            let mut s = sample(&format!("{name}{i}"), 10 + i as u64, 0.0, false);
            s.arms.push(SampleArm::known_effect("pad", -1.0, truth));
            write(&format!("{name}{i}.csv"), &s.file_text())
        })
        .collect()
}

/// A plant that is off its declared effect alike in every ladder reads as that offset, with
/// a scatter its intervals explain: the failures are the plant's, not the intervals'.
#[test]
fn a_plant_off_its_declared_effect_reads_as_the_plants_offset() {
    let l = ledger(&planted("off", &[-0.9; 4]), 20, 7).unwrap();
    let o = &l.rows[0].known_offsets[0].offset;
    assert_eq!(o.tests, 4);
    // 100·(0.991/0.99 − 1) = +0.101 %.
    assert!(o.low_pct > 0.0 && o.low_pct < 0.101, "{o:?}");
    assert!(o.high_pct > 0.101 && o.high_pct < 0.25, "{o:?}");
    let (b, (_, hi)) = (o.birge.unwrap(), o.birge_range.unwrap());
    assert!(b < hi, "{o:?}");
    let table = render_ledger(&l);
    assert!(
        table.contains("| 4 | 4 | +0.1")
            && table.contains("the planted effect is off by this much"),
        "{table}"
    );

    let l = ledger(&planted("true", &[-1.0; 4]), 20, 7).unwrap();
    let o = &l.rows[0].known_offsets[0].offset;
    assert!(o.low_pct < 0.0 && o.high_pct > 0.0, "{o:?}");
    assert!(render_ledger(&l).contains("| as declared"), "{o:?}");
}

/// Two builds of a plant are two plants: a build that plants its effect right is read apart
/// from one that does not, and neither reads the other's offset as scatter. The plant is the
/// known-effect arm's own binary where it recorded one (a build arm), else the ladder's.
#[test]
fn each_build_of_a_plant_is_read_on_its_own() {
    let engine = blake3::hash(b"engine").to_hex().to_string();
    let rebuilt = blake3::hash(b"engine, rebuilt").to_hex().to_string();
    let pad = r#"{"name":"pad","role":"known-effect","env":{"MODE":"pad"}"#;
    let mut files = planted("old", &[-0.9; 3]);
    files.extend(planted("new", &[-1.0; 3]).iter().map(|f| {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(text.contains(pad) && text.contains(&engine), "{text:.2000}");
        let own = format!(r#"{pad},"binary":{{"path":"rebuilt/engine","blake3":"{rebuilt}"}}"#);
        write(
            &format!("rebuilt-{}", f.file_name().unwrap().to_string_lossy()),
            &text.replacen(pad, &own, 1),
        )
    }));
    let l = ledger(&files, 0, 7).unwrap();
    assert_eq!(l.skipped, [], "every file read");
    let mut plants: Vec<(&str, usize, usize)> = l.rows[0]
        .known_offsets
        .iter()
        .map(|p| (p.plant.as_str(), p.ladders, p.offset.tests))
        .collect();
    plants.sort();
    let mut want = [(&engine[..12], 3, 3), (&rebuilt[..12], 3, 3)];
    want.sort();
    assert_eq!(plants, want);
    let by_plant = |hash: &str| {
        let p = l.rows[0]
            .known_offsets
            .iter()
            .find(|p| hash.starts_with(&p.plant));
        &p.unwrap().offset
    };
    let (old, new) = (by_plant(&engine), by_plant(&rebuilt));
    assert!(old.low_pct > 0.0, "{old:?}");
    assert!(new.low_pct < 0.0 && new.high_pct > 0.0, "{new:?}");
    for o in [old, new] {
        assert!(o.birge.unwrap() <= o.birge_range.unwrap().1, "{o:?}");
    }
    let table = render_ledger(&l);
    assert!(
        table.contains(&format!("| {} | 3 | 3 |", &rebuilt[..12])),
        "{table}"
    );
}

/// Plants that differ from ladder to ladder by far more than the ladders' noise scatter more
/// than their intervals allow, and the ledger says so.
#[test]
fn plants_that_differ_between_ladders_scatter_more_than_their_intervals_allow() {
    let l = ledger(&planted("wide", &[-0.6, -1.4, -0.8, -1.2]), 20, 7).unwrap();
    let o = &l.rows[0].known_offsets[0].offset;
    let (b, (_, hi)) = (o.birge.unwrap(), o.birge_range.unwrap());
    assert!(b > hi, "{o:?}");
    let lo = o.birge_range.unwrap().0;
    let table = render_ledger(&l);
    assert!(
        table.contains(&format!(
            "| {b:.2} | {lo:.2} to {hi:.2} | the estimates scatter more than their intervals allow |"
        )),
        "{table}"
    );
}

/// How often an honest plant reads as off, or as scattering more than its intervals allow:
/// 300 hosts of six ladders of 7 analysis passes each, every plant its declared −1 %
/// (nominally 5 % and 2.5 %; METHOD.md "The plant or the intervals?" quotes this measurement).
#[test]
fn an_honest_plant_rarely_reads_as_off_or_too_scattered() {
    let (mut off, mut scattered, sets) = (0, 0, 300);
    for set in 0..sets {
        let files: Vec<PathBuf> = (0..6)
            .map(|i| {
                let mut s = sample(&format!("h{set}-{i}"), 1000 + 6 * set + i, 0.0, false);
                s.arms.push(SampleArm::known_effect("pad", -1.0, -1.0));
                write(&format!("honest-{set}-{i}.csv"), &s.file_text())
            })
            .collect();
        let l = ledger(&files, 0, 7).unwrap();
        let o = &l.rows[0].known_offsets[0].offset;
        off += usize::from(o.low_pct > 0.0 || o.high_pct < 0.0);
        scattered += usize::from(o.birge.unwrap() > o.birge_range.unwrap().1);
    }
    let rate = |k: usize| k as f64 / sets as f64;
    println!(
        "honest plants: offset's interval missed 0 in {:.1} %, Birge above its range in {:.1} %",
        100.0 * rate(off),
        100.0 * rate(scattered)
    );
    assert!(rate(off) < 0.09, "{off} of {sets}");
    assert!(rate(scattered) < 0.05, "{scattered} of {sets}");
}

/// The same under `[stop]`, as the quick known-effect ladders run: 300 hosts of six ladders
/// planned from their first look (looks at 6, 9 and 12 passes, ±0.12 % at 0.1 % noise, so that
/// they stop at every look), each interval on that look's spread or, where the later passes'
/// noise rose, on every pass's. The Birge ratio leaves its range on either side about as often
/// as the range says (METHOD.md "The plant or the intervals?" quotes this measurement).
#[test]
fn under_stop_an_honest_plant_rarely_reads_as_off_or_out_of_its_range() {
    let (mut off, mut above, mut below, sets) = (0, 0, 0, 300);
    let mut looks = std::collections::BTreeSet::new();
    for set in 0..sets {
        let files: Vec<PathBuf> = (0..6)
            .map(|i| {
                let mut s = sample(&format!("s{set}-{i}"), 5000 + 6 * set + i, 0.0, true);
                s.passes = 12;
                s.stop = Some(ladder::spec::StopSpec {
                    halfwidth_pct: 0.12,
                    looks: vec![6, 9, 12],
                    spread: Default::default(),
                    metrics: Vec::new(),
                    within_s: None,
                });
                let text = s.file_text();
                // One line a cell, and the start, header and done lines: the look it stopped at.
                looks.insert(text.lines().count());
                write(&format!("stop-{set}-{i}.csv"), &text)
            })
            .collect();
        let l = ledger(&files, 0, 7).unwrap();
        assert!(l.skipped.is_empty(), "{:?}", l.skipped);
        let o = &l.rows[0].known_offsets[0].offset;
        let (b, (lo, hi)) = (o.birge.unwrap(), o.birge_range.unwrap());
        off += usize::from(o.low_pct > 0.0 || o.high_pct < 0.0);
        above += usize::from(b > hi);
        below += usize::from(b < lo);
    }
    assert_eq!(looks.len(), 3, "the ladders stop at every look");
    let rate = |k: usize| k as f64 / sets as f64;
    println!(
        "honest plants under [stop]: offset's interval missed 0 in {:.1} %, Birge above its \
         range in {:.1} %, below it in {:.1} %",
        100.0 * rate(off),
        100.0 * rate(above),
        100.0 * rate(below)
    );
    assert!(rate(off) < 0.09, "{off} of {sets}");
    assert!(rate(above) < 0.05, "{above} of {sets}");
    assert!(rate(below) < 0.05, "{below} of {sets}");
}
