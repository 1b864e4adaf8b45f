//! `analyze split`: cut a file holding several runs into one file per start record.

use ladder::ladder_file::START_TAG;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One part of a cut file: `lines` are whole lines, each ending in `\n`.
#[derive(Debug, PartialEq)]
pub struct Part {
    /// 1 for the first start record; 0 for lines that come before any start record.
    pub number: usize,
    pub first_line: usize,
    pub text: String,
}

/// Cuts `text` before every start record. Nothing is dropped: lines before the first start
/// record become part 0.
pub fn cut(text: &str) -> Vec<Part> {
    let mut parts: Vec<Part> = Vec::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if line.starts_with(START_TAG) || parts.is_empty() {
            let number = if line.starts_with(START_TAG) {
                parts.iter().filter(|p| p.number > 0).count() + 1
            } else {
                0
            };
            parts.push(Part {
                number,
                first_line: i + 1,
                text: String::new(),
            });
        }
        parts
            .last_mut()
            .expect("a part was pushed")
            .text
            .push_str(line);
    }
    parts
}

/// `<dir>/<stem>.part<N>.csv`.
pub fn part_path(file: &Path, dir: &Path, number: usize) -> PathBuf {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "ladder".into());
    dir.join(format!("{stem}.part{number}.csv"))
}

/// Cuts `file` into parts in `out_dir` (default: beside it) and prints each part's verdict;
/// 0 when every part is connected.
pub fn run(file: &Path, out_dir: Option<&Path>) -> anyhow::Result<i32> {
    let bytes = ladder::limits::read_ladder_file(file).map_err(anyhow::Error::msg)?;
    let text = String::from_utf8(bytes).map_err(|_| {
        anyhow::anyhow!(
            "{} is not UTF-8, so it is not a ladder file",
            file.display()
        )
    })?;
    let dir = match out_dir {
        Some(dir) => dir.to_path_buf(),
        None => file.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    let parts = cut(&text);
    let mut all_connected = true;
    for part in &parts {
        let path = part_path(file, &dir, part.number);
        let mut written = OpenOptions::new().write(true).create_new(true).open(&path).map_err(|e| {
            anyhow::anyhow!("cannot create {}: {e} (parts are never overwritten: remove it or pass --out-dir)", path.display())
        })?;
        written.write_all(part.text.as_bytes())?;
        let verdict = ladder::replay(part.text.as_bytes()).verdict;
        all_connected &= verdict.connected;
        let origin = if part.number == 0 {
            " (lines before any start record)"
        } else {
            ""
        };
        println!(
            "{}: lines {}..{} of {}{origin}: {}",
            path.display(),
            part.first_line,
            part.first_line + part.text.lines().count() - 1,
            file.display(),
            verdict.summary()
        );
    }
    Ok(if all_connected { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_before_every_start_record_and_keeps_every_line() {
        let text = "stray\n#ladder-start {}\na\n#ladder-start {}\nb\nc\n";
        let parts = cut(text);
        let numbers: Vec<usize> = parts.iter().map(|p| p.number).collect();
        assert_eq!(numbers, vec![0, 1, 2]);
        assert_eq!(parts[2].text, "#ladder-start {}\nb\nc\n");
        assert_eq!(parts[2].first_line, 4);
        let joined: String = parts.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(joined, text);
    }

    #[test]
    fn a_single_run_is_one_part() {
        let parts = cut("#ladder-start {}\nx\n");
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].number, 1);
    }
}
