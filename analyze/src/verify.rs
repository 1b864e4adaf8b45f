//! `analyze verify`: replay files against their legal order and print the verdicts.

use ladder::Verdict;
use rayon::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One file's verdict, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct FileVerdict {
    pub file: String,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// The executable each arm ran (a `ladder/1` file: the one command's, for every arm).
    pub binaries: Vec<ArmBinary>,
}

#[derive(Debug, Serialize)]
pub struct ArmBinary {
    pub arm: String,
    pub path: String,
    pub blake3: String,
}

fn binaries(ladder: &ladder::Ladder) -> Vec<ArmBinary> {
    let start = &ladder.start;
    start
        .arms
        .iter()
        .map(|arm| {
            let binary = arm.binary.as_ref().unwrap_or(&start.binary);
            ArmBinary {
                arm: arm.name.clone(),
                path: binary.path.clone(),
                blake3: binary.blake3.clone(),
            }
        })
        .collect()
}

/// Replays one file. A file that cannot be read gets a verdict saying so, not an error,
/// so that one bad path does not hide the others' verdicts.
pub fn verify_file(path: &Path) -> FileVerdict {
    let (verdict, binaries) = match ladder::limits::read_ladder_file(path) {
        Ok(bytes) => {
            let replayed = ladder::replay(&bytes);
            (
                replayed.verdict,
                replayed.ladder.as_ref().map(binaries).unwrap_or_default(),
            )
        }
        Err(e) => (
            Verdict {
                connected: false,
                cells_expected: 0,
                cells_found: 0,
                defects: vec![ladder::Defect {
                    kind: ladder::DefectKind::MissingStart,
                    line: 0,
                    detail: e,
                }],
            },
            Vec::new(),
        ),
    };
    FileVerdict {
        file: path.display().to_string(),
        verdict,
        binaries,
    }
}

/// Replays many files in parallel; the verdicts come back in the order given.
pub fn verify_files(paths: &[PathBuf]) -> Vec<FileVerdict> {
    paths.par_iter().map(|p| verify_file(p)).collect()
}

/// Prints every file's verdict (as JSON with `json`); 0 when every file is connected.
pub fn run(files: &[PathBuf], json: bool) -> anyhow::Result<i32> {
    let verdicts = verify_files(files);
    if json {
        println!("{}", serde_json::to_string_pretty(&verdicts)?);
    } else {
        for v in &verdicts {
            print!("{}", words(v));
        }
    }
    Ok(if verdicts.iter().all(|v| v.verdict.connected) {
        0
    } else {
        1
    })
}

/// The verdict in words, every defect on its own line, then the binary each arm ran.
pub fn words(v: &FileVerdict) -> String {
    let mut text = format!("{}: {}\n", v.file, v.verdict.summary());
    for d in &v.verdict.defects {
        text.push_str(&format!("  line {}: {}: {}\n", d.line, d.kind, d.detail));
    }
    for b in &v.binaries {
        text.push_str(&format!(
            "  arm {} ran {} (blake3 {})\n",
            b.arm,
            b.path,
            &b.blake3[..b.blake3.len().min(16)]
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_name_the_binary_of_every_arm() {
        let v = FileVerdict {
            file: "raw/x_t.csv".into(),
            verdict: Verdict {
                connected: true,
                cells_expected: 4,
                cells_found: 4,
                defects: Vec::new(),
            },
            binaries: vec![
                ArmBinary {
                    arm: "before".into(),
                    path: ".bin/before/engine".into(),
                    blake3: "0123456789abcdef0123".into(),
                },
                ArmBinary {
                    arm: "after".into(),
                    path: ".bin/after/engine".into(),
                    blake3: "fedcba9876543210fedc".into(),
                },
            ],
        };
        let text = words(&v);
        assert!(
            text.contains("  arm before ran .bin/before/engine (blake3 0123456789abcdef)\n"),
            "{text}"
        );
        assert!(
            text.contains("  arm after ran .bin/after/engine (blake3 fedcba9876543210)\n"),
            "{text}"
        );
    }
}
