//! The markdown report: a one-screen summary first (per ladder and metric, each arm's
//! estimate, interval and verdict, the controls, qualified or why not), then per ladder its
//! tables, links to the figures, and the reading across ladders. Every number is one of the
//! JSON report's, rounded for reading; every name that comes from a file goes through
//! [`name`], so that no ladder, tag, arm or column can break a table or inject HTML.

mod across;
pub(crate) mod breakdown;
mod card;
pub(crate) mod device;
mod energy;
mod sections;
mod summary;

pub use summary::summary;

use super::svg;
use crate::across::{ArmPair, Replication};
use crate::analysis::{Contrast, ExtrasConfig, Figures, LadderReport, MetricReport};
use crate::identity::Identity;
use crate::minute::MinutePool;
use crate::reading::Reading;
use crate::witness::Witness;
use anyhow::Context;
use std::fmt::Write;
use std::path::Path;

/// Everything one markdown document shows.
pub struct Doc<'a> {
    pub reports: &'a [LadderReport],
    pub replications: &'a [Replication],
    pub pairs: &'a [ArmPair],
    pub minute_pools: &'a [MinutePool],
    /// Per report, per metric: the figure's file name beside the markdown (empty: none).
    pub metric_svgs: &'a [Vec<String>],
    /// Per report, per metric: the scan figure's file name (empty: none).
    pub scan_svgs: &'a [Vec<String>],
    /// Per spec name with replications: the forest plot's file name.
    pub forest_svgs: &'a [(String, String)],
    /// Per report, per arm of its breakdown: the figure's file name.
    pub breakdown_svgs: &'a [Vec<String>],
    pub extras: ExtrasConfig,
}

impl<'a> Doc<'a> {
    /// The document without figures (markdown to stdout).
    pub fn without_figures(reading: &'a Reading) -> Doc<'a> {
        Doc {
            reports: &reading.reports,
            replications: &reading.replications,
            pairs: &reading.pairs,
            minute_pools: &reading.minute_pools,
            metric_svgs: &[],
            scan_svgs: &[],
            forest_svgs: &[],
            breakdown_svgs: &[],
            extras: reading.extras,
        }
    }
}

/// A name from a file as inline code that nothing in it can break: HTML-escaped inside
/// `<code>`, with the characters markdown reads (`|`, backtick, `*`, `_`, `[`, `]`, `\`)
/// as entities and line breaks shown as `⏎`.
pub fn name(text: &str) -> String {
    let mut out = String::from("<code>");
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '|' => out.push_str("&#124;"),
            '`' => out.push_str("&#96;"),
            '*' => out.push_str("&#42;"),
            '_' => out.push_str("&#95;"),
            '[' => out.push_str("&#91;"),
            ']' => out.push_str("&#93;"),
            '\\' => out.push_str("&#92;"),
            '\n' | '\r' => out.push('⏎'),
            c if c.is_control() => out.push('�'),
            c => out.push(c),
        }
    }
    out.push_str("</code>");
    out
}

/// A list item naming one cell and what was seen in it, each name escaped by `name`:
/// "- pass P slot S ARM: WHAT", under `indent`.
fn cell_item(out: &mut String, indent: &str, (pass, slot): (usize, usize), arm: &str, what: &str) {
    let _ = writeln!(
        out,
        "{indent}- pass {pass} slot {slot} {}: {what}",
        name(arm)
    );
}

fn opt_name(text: Option<&str>) -> String {
    name(text.unwrap_or("?"))
}

/// A signed percentage with three decimals, `n/a` when undefined.
pub fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{v:+.3}")
    } else {
        "n/a".into()
    }
}

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "n/a".into()
    }
}

fn interval(lo: f64, hi: f64) -> String {
    format!("[{}, {}]", pct(lo), pct(hi))
}

fn p_value(p: Option<f64>) -> String {
    match p {
        Some(p) if p < 0.001 => "< 0.001".into(),
        Some(p) if p.is_finite() => format!("{p:.3}"),
        _ => "n/a".into(),
    }
}

fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0);
    let (h, m) = ((s / 3600.0).floor(), ((s % 3600.0) / 60.0).floor());
    let rest = s - 3600.0 * h - 60.0 * m;
    match (h > 0.0, m > 0.0) {
        (true, _) => format!("{h} h {m} min {rest:.1} s"),
        (false, true) => format!("{m} min {rest:.1} s"),
        _ => format!("{rest:.1} s"),
    }
}

/// `QUALIFIED`, or why the ladder's figures must not be relied on (`export::status`).
pub fn status(r: &LadderReport) -> String {
    super::status::status(r, name).1
}

/// The line above every table of a ladder that is not qualified.
fn mark(r: &LadderReport, out: &mut String) {
    if r.statistics && !r.qualified {
        let _ = writeln!(
            out,
            "> **{}**: every number is kept and shown, none is to be relied on.\n",
            status(r)
        );
    }
}

/// Where a `[stop]` ladder stopped, in words; empty without `[stop]`.
fn stop_words(r: &LadderReport) -> String {
    match &r.stopped {
        Some(s) if s.fixed => format!(
            "cut off at pass {}, before its first look (pass {}): Stein's rule never ran, so it is read as a fixed ladder of the passes it ran",
            s.look, s.first_look
        ),
        Some(s) => format!(
            "stopped at look {} ({}): the first look (pass {}) set the passes needed for a ±{} % half-width",
            s.look,
            s.reason_words(),
            s.first_look,
            num(s.halfwidth_pct)
        ),
        None => String::new(),
    }
}

/// The whole document: summary, then the details.
pub fn render(doc: &Doc) -> String {
    let mut out = String::from("# Ladder report (method 2.1)\n\n");
    out.push_str(&summary(doc.reports));
    out.push_str("\n## Details\n\n");
    out.push_str(
        "Each figure is computed as `docs/METHOD.md` (abab, method 2.1) says, from the raw files listed. \
         Per pass, the log ratio of an arm against the base (positive meaning better); the estimate is the \
         geometric mean ratio `100·(exp(mean l) − 1)`, its 95 % interval `100·(exp(mean l ± t(0.975, m−1)·s/√m) − 1)`. \
         A verdict is *better* or *worse* only when the whole interval lies on one side of 0; the Holm verdict \
         holds the family of arms against the base to 5 % together.\n\n",
    );
    out.push_str("| # | ladder | tag | file | verify | status |\n|---:|---|---|---|---|---|\n");
    for (i, r) in doc.reports.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            i + 1,
            opt_name(r.ladder.as_deref()),
            opt_name(r.tag.as_deref()),
            name(&r.file),
            r.verdict,
            status(r)
        );
    }
    for (i, r) in doc.reports.iter().enumerate() {
        sections::ladder_section(doc, i, r, &mut out);
    }
    across::across_section(doc, &mut out);
    device::minute_pools_section(doc.minute_pools, &mut out);
    out
}

/// Writes the markdown and its figures beside it.
pub fn write(reading: &Reading, path: &Path) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| "report".into());
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create {}; pass -o with a writable directory",
            dir.display()
        )
    })?;
    let figures = svg::draw_report(reading, dir, &stem)?;
    let breakdown_svgs = super::breakdown_svg::draw(reading, dir, &stem)?;
    let doc = Doc {
        reports: &reading.reports,
        replications: &reading.replications,
        pairs: &reading.pairs,
        minute_pools: &reading.minute_pools,
        metric_svgs: &figures.metrics,
        scan_svgs: &figures.scans,
        forest_svgs: &figures.forests,
        breakdown_svgs: &breakdown_svgs,
        extras: reading.extras,
    };
    std::fs::write(path, render(&doc))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
