//! Fuzzing `analyze report` through its library: mutated valid ladders (the mutations of
//! `ladder`'s fuzz target) are read as `report` reads them, with and without
//! `--allow-defects`. A reading may fail with an error naming the file; it never panics.
//!
//! A normal `cargo test` runs 64 cases; `ABAB_FUZZ_CASES=5000` runs that many.

#[path = "../../ladder/tests/fuzz/mutations.rs"]
mod mutations;

use analyze::analysis::ExtrasConfig;
use analyze::reading::{self, Options};
use ladder::sample::{Sample, SampleArm};
use ladder::Role;
use mutations::{apply, mutation};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::sync::atomic::{AtomicUsize, Ordering};

fn cases() -> u32 {
    std::env::var("ABAB_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

fn file_text(split: bool) -> String {
    let arms = vec![
        SampleArm::new("off", Role::Base, 0.0),
        SampleArm::new("on", Role::Arm, 1.0),
        SampleArm::new("null", Role::Null, 0.0),
    ];
    let mut sample = Sample::new("fuzz", "t1", arms);
    sample.passes = 5;
    sample.split = split;
    sample.file_text()
}

#[test]
fn mutated_ladders_never_panic_the_report() {
    let files = [file_text(false), file_text(true)];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzz_t1.csv");
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    };
    let strategy = (
        0usize..2,
        any::<bool>(),
        proptest::collection::vec(mutation(), 1..4),
    );
    let ran = AtomicUsize::new(0);
    TestRunner::new(config)
        .run(&strategy, |(file, allow_defects, mutations)| {
            ran.fetch_add(1, Ordering::Relaxed);
            let mut bytes = files[file].clone().into_bytes();
            for m in &mutations {
                apply(&mut bytes, m);
            }
            std::fs::write(&path, &bytes).unwrap();
            let options = Options {
                allow_defects,
                extras: ExtrasConfig {
                    resamples: 50,
                    seed: 1,
                },
                compare: Vec::new(),
                margin_pct: None,
            };
            if let Ok(reading) = reading::read(std::slice::from_ref(&path), &options) {
                prop_assert_eq!(reading.files.len(), 1);
                analyze::export::json::write(&reading, std::io::sink()).unwrap();
                let md = dir.path().join("report.md");
                analyze::export::markdown::write(&reading, &md).unwrap();
            }
            Ok(())
        })
        .unwrap();
    eprintln!("fuzz: {} mutated ladders reported", ran.into_inner());
}
