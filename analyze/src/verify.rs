//! `analyze verify`: replay files against their legal order and print the verdicts, as
//! plain text in aligned columns (colour only where the terminal wants it) or as JSON.

use crate::export::terminal::{self, plain};
use anstyle::{AnsiColor, Style};
use comfy_table::{presets, ContentArrangement, Table};
use ladder::Verdict;
use rayon::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};

const CONNECTED: Style = AnsiColor::Green.on_default().bold();
const NOT_CONNECTED: Style = AnsiColor::Red.on_default().bold();
const HEADER: Style = Style::new().bold();

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
            let binary = start.binary_of(arm);
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
        let text: String = verdicts.iter().map(words).collect();
        terminal::print(&text)?;
    }
    Ok(if verdicts.iter().all(|v| v.verdict.connected) {
        0
    } else {
        1
    })
}

/// The verdict in words, then a table of the defects, each with its line, and a table of
/// the binary each arm ran (with ANSI styles for [`terminal::print`]).
pub fn words(v: &FileVerdict) -> String {
    let style = match v.verdict.connected {
        true => CONNECTED,
        false => NOT_CONNECTED,
    };
    let summary = v.verdict.summary();
    let mut text = format!("{}: {style}{}{style:#}\n", plain(&v.file), plain(&summary));
    if !v.verdict.defects.is_empty() {
        let rows = v
            .verdict
            .defects
            .iter()
            .map(|d| vec![d.line.to_string(), d.kind.to_string(), plain(&d.detail)]);
        text.push_str(&listing(&["line", "defect", "detail"], rows));
    }
    if !v.binaries.is_empty() {
        let rows = v.binaries.iter().map(|b| {
            vec![
                plain(&b.arm),
                plain(&b.path),
                plain(&b.blake3.chars().take(16).collect::<String>()),
            ]
        });
        text.push_str(&listing(&["arm", "ran", "blake3"], rows));
    }
    text
}

/// Rows under a bold header, columns two spaces apart, indented by two, no trailing blanks.
fn listing(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut t = Table::new();
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.iter().map(|h| format!("{HEADER}{h}{HEADER:#}")));
    for row in rows {
        t.add_row(row);
    }
    for column in t.column_iter_mut() {
        column.set_padding((0, 2));
    }
    t.lines()
        .map(|line| format!("  {}\n", line.trim_end()))
        .collect()
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
        let text = anstream::adapter::strip_str(&words(&v)).to_string();
        assert!(text.starts_with("raw/x_t.csv: one connected run"), "{text}");
        assert!(
            text.contains("\n  arm     ran                 blake3\n"),
            "{text}"
        );
        assert!(
            text.contains("\n  before  .bin/before/engine  0123456789abcdef\n"),
            "{text}"
        );
        assert!(
            text.contains("\n  after   .bin/after/engine   fedcba9876543210\n"),
            "{text}"
        );
    }
}
