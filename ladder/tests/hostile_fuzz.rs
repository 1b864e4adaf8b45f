//! Fuzzing the reader and the spec parser with proptest: mutated valid ladders
//! (truncations, byte flips, edited lines and fields, bad encodings, splices) through
//! `replay`, and mutated specs through `Spec::parse`. Neither may panic, and a verdict is
//! connected exactly when it lists no defect.
//!
//! A normal `cargo test` runs 512 cases of each; `ABAB_FUZZ_CASES=200000` runs that many.

mod common;

use ladder::sample::{Sample, SampleArm};
use ladder::spec::Spec;
use ladder::verify::replay;
use ladder::Role;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::LazyLock;

fn cases() -> u32 {
    std::env::var("ABAB_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    })
}

fn ladder_text(scheme: usize) -> String {
    let arms = vec![
        SampleArm::new("off", Role::Base, 0.0),
        SampleArm::new("on,\"x\"", Role::Arm, 1.0),
        SampleArm::new("null", Role::Null, 0.0),
    ];
    let mut sample = Sample::new("fuzz", "t1", arms);
    sample.passes = 4;
    sample.scheme = [
        ladder::Scheme::Rotate,
        ladder::Scheme::Shuffle,
        ladder::Scheme::Williams,
    ][scheme % 3];
    sample.split = scheme.is_multiple_of(2);
    sample.file_text()
}

#[path = "fuzz/mutations.rs"]
mod mutations;
use mutations::{apply, mutation};

#[test]
fn mutated_ladders_never_panic_the_reader() {
    let files: Vec<Vec<u8>> = (0..3).map(|s| ladder_text(s).into_bytes()).collect();
    let strategy = (0usize..3, proptest::collection::vec(mutation(), 1..4));
    let ran = AtomicUsize::new(0);
    runner()
        .run(&strategy, |(file, mutations)| {
            ran.fetch_add(1, Ordering::Relaxed);
            let mut bytes = files[file].clone();
            for m in &mutations {
                apply(&mut bytes, m);
            }
            let verdict = replay(&bytes).verdict;
            prop_assert_eq!(verdict.connected, verdict.defects.is_empty());
            prop_assert!(verdict.cells_found <= verdict.cells_expected.max(bytes.len()));
            Ok(())
        })
        .unwrap();
    eprintln!("fuzz: {} mutated ladders replayed", ran.into_inner());
}

/// The demo spec with an order, a seed, a timeout and a metric row added.
static SPEC: LazyLock<String> = LazyLock::new(|| {
    common::DEMO_SPEC.replacen(
        "passes = 4\n",
        "passes = 4\nwarmup_passes = 1\norder = \"shuffle\"\nseed = 3\ntimeout_s = 60\n",
        1,
    ) + "row = 0\n"
});

#[test]
fn mutated_specs_never_panic_the_parser() {
    Spec::parse(Path::new("demo.toml"), &SPEC).unwrap();
    let ran = AtomicUsize::new(0);
    runner()
        .run(&proptest::collection::vec(mutation(), 1..4), |mutations| {
            ran.fetch_add(1, Ordering::Relaxed);
            let mut bytes = SPEC.as_bytes().to_vec();
            for m in &mutations {
                apply(&mut bytes, m);
            }
            if let Ok(text) = std::str::from_utf8(&bytes) {
                if let Err(e) = Spec::parse(Path::new("demo.toml"), text) {
                    prop_assert!(!e.message.is_empty() && !e.fix.is_empty());
                    prop_assert!(
                        e.line
                            .is_none_or(|l| l >= 1 && l <= text.lines().count().max(1)),
                        "{}",
                        e
                    );
                }
            }
            Ok(())
        })
        .unwrap();
    eprintln!("fuzz: {} mutated specs parsed", ran.into_inner());
}
