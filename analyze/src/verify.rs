//! `analyze verify`: replay files against their legal order and print the verdicts.

use ladder::Verdict;
use rayon::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// Ladder files to replay.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print one JSON object per file (an array) instead of words.
    #[arg(long)]
    pub json: bool,
}

/// One file's verdict, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct FileVerdict {
    pub file: String,
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// Replays one file. A file that cannot be read gets a verdict saying so, not an error,
/// so that one bad path does not hide the others' verdicts.
pub fn verify_file(path: &Path) -> FileVerdict {
    let verdict = match std::fs::read(path) {
        Ok(bytes) => ladder::replay(&bytes).verdict,
        Err(e) => Verdict {
            connected: false,
            cells_expected: 0,
            cells_found: 0,
            defects: vec![ladder::Defect {
                kind: ladder::DefectKind::MissingStart,
                line: 0,
                detail: format!("cannot read the file: {e}"),
            }],
        },
    };
    FileVerdict {
        file: path.display().to_string(),
        verdict,
    }
}

/// Replays many files in parallel; the verdicts come back in the order given.
pub fn verify_files(paths: &[PathBuf]) -> Vec<FileVerdict> {
    paths.par_iter().map(|p| verify_file(p)).collect()
}

pub fn run(args: &VerifyArgs) -> anyhow::Result<i32> {
    let verdicts = verify_files(&args.files);
    if args.json {
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

/// The verdict in words, every defect on its own line.
pub fn words(v: &FileVerdict) -> String {
    let mut text = format!("{}: {}\n", v.file, v.verdict.summary());
    for d in &v.verdict.defects {
        text.push_str(&format!("  line {}: {}: {}\n", d.line, d.kind, d.detail));
    }
    text
}
