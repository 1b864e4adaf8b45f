//! Across ladders (METHOD.md "Across ladders"): every ladder of one spec joins its
//! replication, and an arm pair carried by ladders of two specs or more is read in each of
//! them, whichever order they declare the arms in.

mod common;

use ladder::sample::{Sample, SampleArm};
use ladder::Role;

/// A generated ladder of spec `name` whose first arm is the base, and where an arm named `on`
/// is 0.5 % faster than the others.
fn ladder(name: &str, tag: &str, seed: u64, arms: &[&str]) -> String {
    let arms = arms
        .iter()
        .enumerate()
        .map(|(i, &arm)| {
            let role = if i == 0 { Role::Base } else { Role::Arm };
            SampleArm::new(arm, role, if arm == "on" { 0.5 } else { 0.0 })
        })
        .collect();
    let mut sample = Sample::new(name, tag, arms);
    sample.seed = seed;
    sample.file_text()
}

/// Each pair compared: its arm, its reference and how many ladders read it.
fn compared(reading: &analyze::reading::Reading) -> Vec<(&str, &str, usize)> {
    reading
        .pairs
        .iter()
        .map(|p| (p.arm.as_str(), p.against.as_str(), p.readings.len()))
        .collect()
}

#[test]
fn every_ladder_of_one_spec_joins_its_replication() {
    let three: Vec<String> = (1..=3)
        .map(|k| ladder("x", &format!("t{k}"), k, &["off", "on"]))
        .collect();
    let reading = common::read("three", &three);
    let tags: Vec<Vec<String>> = reading
        .replications
        .iter()
        .map(|r| r.ladders.clone())
        .collect();
    assert!(!tags.is_empty());
    assert!(tags.iter().all(|t| t == &["t1", "t2", "t3"]), "{tags:?}");

    let alone = common::read("alone", &three[..1]);
    assert!(alone.replications.is_empty());
}

#[test]
fn a_pair_is_read_in_every_ladder_once_two_specs_carry_it() {
    let files = [
        ladder("x", "t1", 1, &["off", "on", "extra"]),
        // Another spec declaring the pair the other way round.
        ladder("y", "t2", 2, &["on", "off"]),
        ladder("x", "t3", 3, &["off", "on", "extra"]),
    ];
    let reading = common::read("pairs", &files);
    let pairs = compared(&reading);
    // `extra` is only in spec x, whose two ladders are a replication, not a comparison.
    assert_eq!(pairs, [("on", "off", 3)]);
    let on_off = &reading.pairs[0];
    let tags: Vec<&str> = on_off.readings.iter().map(|r| r.tag.as_str()).collect();
    assert_eq!(tags, ["t1", "t2", "t3"]);
    // Read as `on` against `off` in y too, so every reading estimates the same +0.5 %.
    assert!(
        on_off.readings.iter().all(|r| r.figures.estimate_pct > 0.0),
        "{:?}",
        on_off.readings
    );
}

#[test]
fn every_pair_that_two_specs_carry_is_compared() {
    let files = [
        ladder("x", "t1", 1, &["off", "on", "extra"]),
        ladder("y", "t2", 2, &["on", "off", "extra"]),
    ];
    let reading = common::read("every", &files);
    let pairs = compared(&reading);
    // In the order the first ladder declares them, each later arm against an earlier one.
    assert_eq!(
        pairs,
        [("on", "off", 2), ("extra", "off", 2), ("extra", "on", 2)]
    );
}
