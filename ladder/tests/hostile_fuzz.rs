//! Fuzzing the reader and the spec parser with proptest: mutated valid ladders
//! (truncations, byte flips, edited lines and fields, bad encodings, splices) through
//! `replay`, and mutated specs through `Spec::parse`. Neither may panic, and a verdict is
//! connected exactly when it lists no defect.
//!
//! A normal `cargo test` runs 512 cases of each; `ABAB_FUZZ_CASES=200000` runs that many.

use ladder::sample::{Sample, SampleArm};
use ladder::spec::Spec;
use ladder::verify::replay;
use ladder::Role;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::path::Path;

fn cases() -> u32 {
    std::env::var("ABAB_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512)
}

fn runner() -> TestRunner {
    TestRunner::new(Config { cases: cases(), failure_persistence: None, ..Config::default() })
}

fn ladder_text(scheme: usize) -> String {
    let arms = vec![
        SampleArm::new("off", Role::Base, 0.0),
        SampleArm::new("on,\"x\"", Role::Arm, 1.0),
        SampleArm::new("null", Role::Null, 0.0),
    ];
    let mut sample = Sample::new("fuzz", "t1", arms);
    sample.passes = 4;
    sample.scheme = [ladder::Scheme::Rotate, ladder::Scheme::Shuffle, ladder::Scheme::Williams][scheme % 3];
    sample.split = scheme % 2 == 0;
    sample.file_text()
}

/// One way of breaking a file, applied at positions drawn as fractions of its length.
#[derive(Clone, Debug)]
enum Mutation {
    Truncate(f64),
    Flip(f64, u8),
    /// Replaces the `n`-th field (counting commas and JSON separators) of a line.
    EditField(f64, usize, String),
    DeleteLine(f64),
    DuplicateLine(f64, f64),
    /// Invalid UTF-8 or a NUL byte.
    BadEncoding(f64, Vec<u8>),
    /// Moves a span of the file somewhere else.
    Splice(f64, f64, f64),
    /// A number in the start record replaced by a huge one.
    HugeNumber(f64, u64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = 0.0..1.0f64;
    prop_oneof![
        at.clone().prop_map(Mutation::Truncate),
        (at.clone(), any::<u8>()).prop_map(|(a, b)| Mutation::Flip(a, b)),
        (at.clone(), 0usize..40, prop_oneof![Just(String::new()), "[0-9]{1,25}", "-?[0-9.e+]{1,12}", ".{0,8}", Just("NaN".to_string())])
            .prop_map(|(a, n, v)| Mutation::EditField(a, n, v)),
        at.clone().prop_map(Mutation::DeleteLine),
        (at.clone(), at.clone()).prop_map(|(a, b)| Mutation::DuplicateLine(a, b)),
        (at.clone(), prop_oneof![Just(vec![0xff]), Just(vec![0xc3]), Just(vec![0]), Just(vec![0xed, 0xa0, 0x80])])
            .prop_map(|(a, b)| Mutation::BadEncoding(a, b)),
        (at.clone(), at.clone(), at.clone()).prop_map(|(a, b, c)| Mutation::Splice(a, b, c)),
        (at, prop_oneof![Just(u64::MAX), Just(1 << 40), Just(10_000_000), any::<u64>()])
            .prop_map(|(a, n)| Mutation::HugeNumber(a, n)),
    ]
}

fn index(fraction: f64, len: usize) -> usize {
    ((fraction * len as f64) as usize).min(len.saturating_sub(1))
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    let len = bytes.len();
    let line_bounds = |b: &[u8], at: usize| {
        let start = b[..at].iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
        let end = b[at..].iter().position(|&c| c == b'\n').map_or(b.len(), |i| at + i + 1);
        (start, end)
    };
    match m {
        Mutation::Truncate(a) => bytes.truncate(index(*a, len)),
        Mutation::Flip(a, b) => bytes[index(*a, len)] = *b,
        Mutation::EditField(a, n, value) => {
            let (start, end) = line_bounds(bytes, index(*a, len));
            let line = bytes[start..end].to_vec();
            let seps: Vec<usize> = line.iter().enumerate().filter(|(_, &c)| matches!(c, b',' | b':')).map(|(i, _)| i).collect();
            if seps.is_empty() {
                return;
            }
            let from = seps[n % seps.len()] + 1;
            let to = seps.get(n % seps.len() + 1).copied().unwrap_or(line.len().saturating_sub(1)).max(from);
            bytes.splice(start + from..start + to, value.bytes());
        }
        Mutation::DeleteLine(a) => {
            let (start, end) = line_bounds(bytes, index(*a, len));
            bytes.drain(start..end);
        }
        Mutation::DuplicateLine(a, b) => {
            let (start, end) = line_bounds(bytes, index(*a, len));
            let line = bytes[start..end].to_vec();
            let (to, _) = line_bounds(bytes, index(*b, len));
            bytes.splice(to..to, line);
        }
        Mutation::BadEncoding(a, b) => {
            let at = index(*a, len);
            bytes.splice(at..at, b.iter().copied());
        }
        Mutation::Splice(a, b, c) => {
            let (x, y) = (index(*a, len), index(*b, len));
            let (from, to) = (x.min(y), x.max(y));
            let span: Vec<u8> = bytes.drain(from..to).collect();
            let at = index(*c, bytes.len().max(1)).min(bytes.len());
            bytes.splice(at..at, span);
        }
        Mutation::HugeNumber(a, n) => {
            let first_line = bytes.iter().position(|&c| c == b'\n').unwrap_or(len);
            let text = String::from_utf8_lossy(&bytes[..first_line]).into_owned();
            let numbers: Vec<(usize, usize)> = text
                .match_indices(|c: char| c.is_ascii_digit())
                .map(|(i, _)| i)
                .fold(Vec::new(), |mut runs: Vec<(usize, usize)>, i| {
                    match runs.last_mut() {
                        Some((_, end)) if *end == i => *end = i + 1,
                        _ => runs.push((i, i + 1)),
                    }
                    runs
                });
            if let Some(&(s, e)) = numbers.get(index(*a, numbers.len().max(1))) {
                bytes.splice(s..e, n.to_string().bytes());
            }
        }
    }
}

#[test]
fn mutated_ladders_never_panic_the_reader() {
    let files: Vec<Vec<u8>> = (0..3).map(|s| ladder_text(s).into_bytes()).collect();
    let strategy = (0usize..3, proptest::collection::vec(mutation(), 1..4));
    runner()
        .run(&strategy, |(file, mutations)| {
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
}

const SPEC: &str = r#"name = "demo"
command = ["engine", "bench"]
passes = 4
warmup_passes = 1
order = "shuffle"
seed = 3
timeout_s = 60

[env]
COMMON = "1"

[[arm]]
name = "off"
role = "base"
env = { MODE = "off" }

[[arm]]
name = "on"
env = { MODE = "on" }

[[metric]]
column = "tok_s"
better = "higher"
row = 0
"#;

#[test]
fn mutated_specs_never_panic_the_parser() {
    Spec::parse(Path::new("demo.toml"), SPEC).unwrap();
    runner()
        .run(&proptest::collection::vec(mutation(), 1..4), |mutations| {
            let mut bytes = SPEC.as_bytes().to_vec();
            for m in &mutations {
                apply(&mut bytes, m);
            }
            if let Ok(text) = std::str::from_utf8(&bytes) {
                if let Err(e) = Spec::parse(Path::new("demo.toml"), text) {
                    prop_assert!(!e.message.is_empty() && !e.fix.is_empty());
                    prop_assert!(e.line.is_none_or(|l| l >= 1 && l <= text.lines().count().max(1)), "{}", e);
                }
            }
            Ok(())
        })
        .unwrap();
}
