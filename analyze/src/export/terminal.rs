//! The one-screen summary as plain text for a terminal: aligned columns, no markup; times
//! and other lower-is-better metrics as ratios (`regex ran 2.69× faster than fixed
//! [2.47, 2.92]`), higher-is-better ones as percents, each with its verdict, its Holm
//! verdict and the controls in words. Colour is written as ANSI styles and kept only where
//! [`print`] finds a terminal that wants it (not under `NO_COLOR`).

use super::markdown::breakdown::{amount, ci};
use super::markdown::device::{half_width, width};
use crate::analysis::{ArmReading, LadderReport, MetricReport};
use crate::minute::MinutePool;
use anstyle::{AnsiColor, Style};
use comfy_table::{presets, ContentArrangement, Table};
use ladder::sentence;
use std::fmt::Write as _;
use std::io::Write as _;

const GOOD: Style = AnsiColor::Green.on_default().bold();
const BAD: Style = AnsiColor::Red.on_default().bold();
const DIM: Style = Style::new().dimmed();

/// `text` in `style` (the styles are stripped on output where no colour is wanted).
fn styled(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

/// Writes `text` to stdout, colour kept only on a terminal that wants it.
pub fn print(text: &str) -> std::io::Result<()> {
    let mut out = anstream::stdout();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// A name from a file, on one line: control characters shown as `?`.
pub fn plain(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

fn verdict(text: &str) -> String {
    match text {
        "better" => styled(GOOD, text),
        "worse" => styled(BAD, text),
        _ => text.to_string(),
    }
}

fn table() -> Table {
    let mut t = Table::new();
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    t
}

/// The table's lines, each indented by two spaces, columns two spaces apart, no trailing
/// blanks.
fn render(mut t: Table) -> String {
    for column in t.column_iter_mut() {
        column.set_padding((0, 2));
    }
    t.lines()
        .map(|line| format!("  {}\n", line.trim_end()))
        .collect()
}

/// The status line: QUALIFIED, or what disqualified the ladder.
fn status(r: &LadderReport) -> String {
    let (qualified, words) = super::status::status(r, plain);
    styled(if qualified { GOOD } else { BAD }, &words)
}

fn heading(r: &LadderReport) -> String {
    let title = super::status::title(r, plain);
    let mut line = format!("{title}: {}", status(r));
    if r.statistics {
        let _ = write!(line, " ({} analysis passes", r.analysis_passes);
        if let Some(s) = &r.stopped {
            let _ = write!(line, "; stopped at pass {}: {}", s.look, s.reason_words());
        }
        line.push(')');
        for w in super::status::warnings(r, plain) {
            line.push_str("; ");
            line.push_str(w.head);
            if let Some(detail) = w.detail {
                let _ = write!(line, " ({detail})");
            }
        }
    }
    line
}

/// One row per arm against the base.
fn arm_row(m: &MetricReport, a: &ArmReading) -> Vec<String> {
    let f = &a.figures;
    let reading = sentence::estimate(
        m.better,
        &m.column,
        &plain(&a.against),
        f.estimate_pct,
        f.ci_low_pct,
        f.ci_high_pct,
    );
    vec![
        plain(&a.arm),
        reading,
        verdict(f.verdict),
        verdict(a.holm_verdict),
    ]
}

fn metric_table(m: &MetricReport) -> String {
    let mut t = table();
    t.set_header(vec![
        "arm",
        "against the base (95 % interval)",
        "verdict",
        "after Holm",
    ]);
    for a in &m.arms {
        t.add_row(arm_row(m, a));
    }
    render(t)
}

fn controls_table(r: &LadderReport) -> Option<String> {
    let mut t = table();
    t.set_header(vec!["control", "metric", "interval", "reading"]);
    let mut any = false;
    for m in &r.metrics {
        for c in m.controls.iter().filter(|c| c.holds.is_some()) {
            any = true;
            let (head, why) = c.reading(m.equivalence_margin_pct);
            let head = match c.holds {
                Some(true) => styled(GOOD, head),
                _ => styled(BAD, head),
            };
            t.add_row(vec![
                plain(&c.arm),
                plain(&m.column),
                sentence::percent(c.estimate_pct, c.ci_low_pct, c.ci_high_pct),
                format!("{head}: {why}"),
            ]);
        }
    }
    let margin = r
        .metrics
        .iter()
        .find_map(|m| m.equivalence_margin_pct)
        .filter(|_| !r.margin_registered)
        .map_or(String::new(), |m| {
            format!("; the margin ±{m} % was given to the report after the run, not pre-registered")
        });
    any.then(|| {
        format!(
            "Controls ({} together, each interval at level {:.4}{margin}):\n{}",
            match r.control_family {
                1 => "1 test".to_string(),
                k => format!("{k} tests"),
            },
            1.0 - 0.05 / r.control_family.max(1) as f64,
            render(t)
        )
    })
}

/// Per metric, what a device-minute of this design buys: the arm's `H₆₀` and its interval, or
/// with several arms the narrowest and the widest.
fn minute_lines(r: &LadderReport) -> String {
    let mut out = String::new();
    let mut columns: Vec<&str> = r
        .minute_halfwidths
        .iter()
        .map(|h| h.column.as_str())
        .collect();
    columns.dedup();
    for column in columns {
        let arms: Vec<_> = r
            .minute_halfwidths
            .iter()
            .filter(|h| h.column == column)
            .collect();
        let widths = arms.iter().map(|h| h.halfwidth_pct);
        let (least, most) = widths.fold((f64::INFINITY, 0.0f64), |(l, m), w| (l.min(w), m.max(w)));
        let _ = match arms.as_slice() {
            [h] => writeln!(
                out,
                "A device-minute buys {}: {} ({} against {}, {:.1} s a pass)",
                plain(column),
                half_width(h.halfwidth_pct, h.ci_low_pct, h.ci_high_pct),
                plain(&h.arm),
                plain(&h.against),
                h.pass_seconds
            ),
            _ => writeln!(
                out,
                "A device-minute buys {}: ±{} to ±{} % over {} arms ({:.1} s a pass)",
                plain(column),
                width(least, least),
                width(most, least),
                arms.len(),
                arms[0].pass_seconds
            ),
        };
    }
    out
}

/// Each design's pooled `H₆₀` on a line, with its device time to one half-width against the
/// first file's spec's design of its metric and arm.
pub fn minute_pool_lines(pools: &[MinutePool]) -> String {
    let mut out = String::new();
    if !pools.is_empty() {
        out.push_str("What a device-minute buys, per design (pooled over its ladders):\n");
    }
    for p in pools {
        let _ = write!(
            out,
            "  {} {} ({} ladder{}, df {}, {:.2} s a pass): {}",
            plain(&p.spec),
            plain(&p.arm),
            p.ladders.len(),
            if p.ladders.len() == 1 { "" } else { "s" },
            p.df,
            p.pass_seconds,
            half_width(p.halfwidth_pct, p.ci_low_pct, p.ci_high_pct)
        );
        let _ = match &p.time_ratio {
            Some(t) => writeln!(
                out,
                "; device time to one half-width ×{:.2} [{:.2}, {:.2}] of {}'s: {}",
                t.ratio,
                t.ci_low,
                t.ci_high,
                plain(&t.spec),
                t.reading()
            ),
            None => writeln!(out),
        };
    }
    out
}

/// The device time and each arm's efficiency on one line, then the variance components.
fn device_lines(r: &LadderReport) -> String {
    let Some(device) = r.device_seconds else {
        return String::new();
    };
    let cells: usize = r.time_use.iter().map(|a| a.cells).sum();
    let mut out = format!("Device time {device:.1} s ({cells} cells)");
    let efficiency: Vec<String> = r
        .time_use
        .iter()
        .filter_map(|a| Some(format!("{} {:.1} %", plain(&a.arm), 100.0 * a.efficiency?)))
        .collect();
    if !efficiency.is_empty() {
        let _ = write!(out, "; timed/wall: {}", efficiency.join(", "));
    }
    out.push('\n');
    out.push_str(&minute_lines(r));
    if let Some(note) = &r.variance_note {
        let _ = writeln!(out, "Variance components: none, {}", plain(note));
    }
    if let Some(v) = &r.variance_components {
        let _ = writeln!(
            out,
            "Variance components, {} repetitions a cell ({} analysis passes):",
            v.reps, v.passes
        );
        let mut t = table();
        t.set_header(vec![
            "metric",
            "arm",
            "between cells",
            "within a cell (one rep)",
            "a pass",
            "between share",
        ]);
        for a in &v.arms {
            t.add_row(vec![
                plain(&a.column),
                plain(&a.arm),
                // Three decimals, as `analyze plan` prints them: a card's spread is hundredths.
                format!("{:.3} %", a.between_sd_pct),
                format!("{:.3} %", a.within_sd_pct),
                format!("{:.3} %", a.pass_sd_pct),
                format!("{:.0} %", 100.0 * a.between_share),
            ]);
        }
        out.push_str(&render(t));
    }
    out
}

/// Keys shown per arm in the summary; the markdown has them all.
const BREAKDOWN_KEYS: usize = 3;

/// Where the time moves, in short: per arm its largest changes and whether they add up.
fn breakdown_lines(r: &LadderReport) -> Option<String> {
    let b = r.breakdown.as_ref()?;
    let mut t = table();
    t.set_header(vec!["arm", "key", "delta [95 %]", "delta %", "after Holm"]);
    let mut closures = String::new();
    for a in &b.arms {
        let lines = a.keys.iter().filter(|l| !l.folded).take(BREAKDOWN_KEYS);
        for (i, l) in lines.enumerate() {
            let holm = match l.holm_verdict {
                "more" => styled(BAD, "more"),
                "less" => styled(GOOD, "less"),
                other => other.to_string(),
            };
            let pct = match l.delta_pct.is_finite() {
                true => format!("{:+.1} %", l.delta_pct),
                false => "n/a".into(),
            };
            t.add_row(vec![
                if i == 0 { plain(&a.arm) } else { String::new() },
                plain(&l.key),
                ci(l.delta, l.delta_ci_low, l.delta_ci_high),
                pct,
                holm,
            ]);
        }
        let c = &a.closure;
        let reading = match (c.total, c.adds_up) {
            (Some(step), Some(true)) => {
                format!(
                    "against the step's {}: {}",
                    amount(step.estimate),
                    styled(GOOD, "adds up")
                )
            }
            (Some(step), Some(false)) => format!(
                "against the step's {}: {}",
                amount(step.estimate),
                styled(BAD, "does not add up")
            ),
            _ => "(no total: not checked)".into(),
        };
        let _ = writeln!(
            closures,
            "  {}: the keys' deltas sum to {} {reading}",
            plain(&a.arm),
            ci(c.keys_sum.estimate, c.keys_sum.ci_low, c.keys_sum.ci_high)
        );
        if let Some(control) = &a.control {
            let reading = control.reading(plain);
            let shown = match control.holds {
                true => styled(GOOD, &reading),
                false => styled(BAD, &reading),
            };
            let _ = writeln!(closures, "  {}: the keys' control {shown}", plain(&a.arm));
        }
    }
    Some(format!(
        "Where the time moves ({} by {}, the {BREAKDOWN_KEYS} largest changes an arm):\n{}{closures}",
        plain(&b.value),
        plain(&b.key),
        render(t)
    ))
}

/// The one-screen summary of every ladder, as plain text (with ANSI styles for [`print`]).
pub fn summary(reports: &[LadderReport]) -> String {
    let mut out = String::new();
    for r in reports {
        let _ = writeln!(out, "{}", heading(r));
        if !r.statistics {
            let _ = writeln!(out, "{}", styled(DIM, &format!("  {}", plain(&r.verdict))));
            out.push('\n');
            continue;
        }
        for m in &r.metrics {
            let _ = writeln!(out, "\n{} ({} is better)", plain(&m.column), m.better);
            out.push_str(&metric_table(m));
        }
        if let Some(controls) = controls_table(r) {
            out.push('\n');
            out.push_str(&controls);
        }
        if let Some(breakdown) = breakdown_lines(r) {
            out.push('\n');
            out.push_str(&breakdown);
        }
        let device = device_lines(r);
        if !device.is_empty() {
            out.push('\n');
            out.push_str(&device);
        }
        out.push('\n');
    }
    out
}
