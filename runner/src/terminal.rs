//! Plain text for a person: aligned columns, no markup. Colour is written as ANSI styles and
//! kept only where anstream finds a terminal that wants it (never under `NO_COLOR`;
//! `CLICOLOR_FORCE=1` forces it).

use anstyle::{AnsiColor, Style};
use comfy_table::{presets, ContentArrangement, Table};
use std::io::Write as _;

pub const GOOD: Style = AnsiColor::Green.on_default().bold();
pub const BAD: Style = AnsiColor::Red.on_default().bold();
const HEADER: Style = Style::new().bold();

/// `text` in `style` (stripped on output where no colour is wanted).
pub fn styled(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

/// Whether the runner's stdout is to carry colour: a terminal that wants it, or forced.
pub fn stdout_wants_colour() -> bool {
    let stdout = std::io::stdout();
    anstream::AutoStream::choice(&stdout) != anstream::ColorChoice::Never
}

/// Writes `text` to stdout, colour kept only where it is wanted.
pub fn print(text: &str) {
    let mut out = anstream::stdout();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Writes `text` to stderr, colour kept only where it is wanted.
pub fn eprint(text: &str) {
    let mut err = anstream::stderr();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

/// A table without borders whose columns are as wide as their content.
pub fn table() -> Table {
    let mut t = Table::new();
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    t
}

/// The table's lines, each indented by two spaces, columns two spaces apart, no trailing
/// blanks.
pub fn render(mut t: Table) -> String {
    for column in t.column_iter_mut() {
        column.set_padding((0, 2));
    }
    t.lines()
        .map(|line| format!("  {}\n", line.trim_end()))
        .collect()
}

/// A table's header, in bold.
pub fn header(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| styled(HEADER, n)).collect()
}
