//! The committed golden report: `analyze/tests/fixtures/golden_fixture.md` (and `.json`) is
//! exactly what `analyze report` writes for the committed `golden_fixture_*.csv` beside it. After an intended
//! change, regenerate all of them with `UPDATE_GOLDEN=1 cargo test --release -p analyze --test report_golden`.

use ladder::sample::{Sample, SampleArm};
use ladder::Role;
use std::path::{Path, PathBuf};
use std::process::Command;

const RAW: [&str; 2] = [
    "analyze/tests/fixtures/golden_fixture_a8.csv",
    "analyze/tests/fixtures/golden_fixture_rb1.csv",
];

/// Two ladders of one spec: a real arm, a null control and a structural zero, with a round
/// split, an output digest and witness columns (a foreign process, a throttled cell).
fn fixtures() -> Vec<Sample> {
    let arms = |effect: f64, rounds: u64| {
        let mut window = SampleArm::new("window", Role::Arm, effect);
        window.rounds = rounds;
        let mut sz = SampleArm::new("sz", Role::StructuralZero, -0.3);
        sz.same_output = rounds == 64;
        vec![
            SampleArm::new("off", Role::Base, 0.0),
            window,
            SampleArm::new("null", Role::Null, 0.0),
            sz,
        ]
    };
    let mut a8 = Sample::new("golden-fixture", "a8", arms(0.8, 64));
    let mut rb1 = Sample::new("golden-fixture", "rb1", arms(0.5, 63));
    rb1.seed = 2;
    rb1.noise_pct = 0.08;
    for s in [&mut a8, &mut rb1] {
        s.split = true;
        s.digest = true;
        s.witness = true;
    }
    a8.foreign_cells = vec![9];
    a8.throttled_cells = vec![14, 15];
    vec![a8, rb1]
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn report(out_dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_analyze"))
        .current_dir(root())
        .arg("report")
        .args(RAW)
        .arg("-o")
        .arg(out_dir.join("golden_fixture.md"))
        .arg("--json")
        .arg(out_dir.join("golden_fixture.json"))
        .args(["--compare", "window:null"])
        .output()
        .unwrap()
}

#[test]
fn the_report_of_the_committed_files_is_the_committed_report() {
    let root = root();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        for (path, sample) in RAW.iter().zip(fixtures()) {
            std::fs::write(root.join(path), sample.file_text()).unwrap();
        }
        let out = report(&fixtures_dir());
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    // The committed raw files are what the generator writes: the format lives in one place.
    for (path, sample) in RAW.iter().zip(fixtures()) {
        assert_eq!(
            std::fs::read_to_string(root.join(path)).unwrap(),
            sample.file_text(),
            "{path} differs from its generator"
        );
    }
    let dir = std::env::temp_dir().join(format!("analyze_golden_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = report(&dir);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in ["golden_fixture.md", "golden_fixture.json"] {
        let got = std::fs::read_to_string(dir.join(name)).unwrap();
        let want = std::fs::read_to_string(fixtures_dir().join(name)).unwrap();
        assert!(got == want, "{name} differs from analyze/tests/fixtures/{name}; if the change is intended, rerun with UPDATE_GOLDEN=1");
    }
    let svg =
        std::fs::read_to_string(dir.join("golden_fixture_golden-fixture_a8_decode_tok_s.svg"))
            .unwrap();
    assert!(svg.contains("<svg") && svg.contains("window"));
    std::fs::remove_dir_all(&dir).unwrap();
}
