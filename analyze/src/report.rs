//! `analyze report`: read ladder files as METHOD.md says ([`crate::reading`]) and write the
//! outputs asked for with `export` (markdown with SVG figures beside it, JSON, CSV, the
//! one-screen summary as plain text).

use crate::export::{csv, json, markdown, terminal};
use crate::reading::{read, Options};
use anyhow::Context;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Where a report goes.
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    /// The markdown, with the SVG figures beside it.
    pub markdown: Option<PathBuf>,
    /// The JSON report (`-` for stdout).
    pub json: Option<PathBuf>,
    /// The CSV summary (`-` for stdout).
    pub csv: Option<PathBuf>,
    /// The one-screen summary, as plain text on stdout.
    pub summary: bool,
}

/// Opens `path` for writing, `-` meaning stdout.
fn output(path: &Path, flag: &str) -> anyhow::Result<Box<dyn std::io::Write>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdout().lock()));
    }
    let file = std::fs::File::create(path).with_context(|| {
        format!(
            "cannot create {}; pass {flag} with a writable path",
            path.display()
        )
    })?;
    Ok(Box::new(std::io::BufWriter::new(file)))
}

/// What `analyze report` prints on stdout besides a `-` output.
#[derive(Clone, Copy, Debug, PartialEq)]
enum StdoutForm {
    Summary,
    Markdown,
}

/// The summary when asked for; with no output asked for, the summary on a terminal (plain
/// text for a reader) and the markdown into a pipe or a file (text for a document).
fn stdout_form(outputs: &Outputs, terminal: bool) -> Option<StdoutForm> {
    let nothing_asked =
        outputs.markdown.is_none() && outputs.json.is_none() && outputs.csv.is_none();
    match (outputs.summary, nothing_asked, terminal) {
        (true, _, _) | (false, true, true) => Some(StdoutForm::Summary),
        (false, true, false) => Some(StdoutForm::Markdown),
        (false, false, _) => None,
    }
}

/// Reads `files` and writes every output asked for; without any, the summary goes to a
/// terminal and the markdown to a pipe. 1 when a file is not one connected run and defects
/// were not allowed.
pub fn run(files: &[PathBuf], outputs: &Outputs, options: &Options) -> anyhow::Result<i32> {
    let reading = read(files, options)?;
    if let Some(path) = &outputs.json {
        json::write(&reading, output(path, "--json")?)?;
    }
    if let Some(path) = &outputs.csv {
        csv::write(&reading.reports, output(path, "--csv")?)?;
    }
    if let Some(path) = &outputs.markdown {
        markdown::write(&reading, path)?;
    }
    match stdout_form(outputs, std::io::stdout().is_terminal()) {
        Some(StdoutForm::Summary) => {
            let pools = terminal::minute_pool_lines(&reading.minute_pools);
            terminal::print(&(terminal::summary(&reading.reports) + &pools))?;
        }
        Some(StdoutForm::Markdown) => print!(
            "{}",
            markdown::render(&markdown::Doc::without_figures(&reading))
        ),
        None => {}
    }
    let unconnected: Vec<&str> = reading
        .reports
        .iter()
        .filter(|r| !r.connected)
        .map(|r| r.file.as_str())
        .collect();
    if !unconnected.is_empty() && !options.allow_defects {
        eprintln!(
            "analyze report: {} file(s) not one connected run, reported with their defects and no statistics: {}\n  fix: rerun those ladders, or pass --allow-defects to read them, marked as such",
            unconnected.len(),
            unconnected.join(", ")
        );
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_gets_plain_text_and_a_pipe_the_markdown() {
        let nothing = Outputs::default();
        assert_eq!(stdout_form(&nothing, true), Some(StdoutForm::Summary));
        assert_eq!(stdout_form(&nothing, false), Some(StdoutForm::Markdown));
        let summary = Outputs {
            summary: true,
            ..Outputs::default()
        };
        assert_eq!(stdout_form(&summary, false), Some(StdoutForm::Summary));
        let json = Outputs {
            json: Some("-".into()),
            ..Outputs::default()
        };
        assert_eq!(stdout_form(&json, true), None);
    }
}
