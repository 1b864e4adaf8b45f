//! "Where the time moves" (METHOD.md "Breakdown"): per arm against the base a table of its
//! keys by contribution, the keys below 1 % of the step in one rest line, the closure in
//! words, and the contributions' bar chart beside it.

use super::{name, Doc};
use crate::analysis::breakdown::{BreakdownArm, BreakdownReport, Closure, Interval, KeyLine};
use crate::analysis::LadderReport;
use std::fmt::Write;

/// A signed amount in the value's unit, with as many decimals as its size needs.
pub fn amount(v: f64) -> String {
    amount_as(v, v)
}

/// `v` with the decimals `scale`'s size needs, so that an interval reads in one precision.
pub fn amount_as(v: f64, scale: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    match scale.abs() {
        a if a >= 100.0 => format!("{v:+.1}"),
        a if a >= 1.0 => format!("{v:+.2}"),
        _ => format!("{v:+.3}"),
    }
}

/// An unsigned level (a median), as [`amount`] without the sign.
fn level(v: f64) -> String {
    amount(v).trim_start_matches('+').to_string()
}

/// An estimate and its interval, in the precision of the largest of the three.
pub fn ci(estimate: f64, lo: f64, hi: f64) -> String {
    let scale = [estimate, lo, hi]
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    let at = |v: f64| amount_as(v, scale);
    format!("{} [{}, {}]", at(estimate), at(lo), at(hi))
}

fn launches(line: &KeyLine) -> String {
    let show = |l: Option<f64>| {
        l.map_or("—".to_string(), |v| {
            format!("{v:.4}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        })
    };
    match (line.launches_base, line.launches_arm) {
        (None, None) => "—".into(),
        (b, a) if b == a => show(b),
        (b, a) => format!("{} → {}", show(b), show(a)),
    }
}

fn row(line: &KeyLine, shown: String) -> String {
    let pct = if line.delta_pct.is_finite() {
        format!(
            "{} [{}, {}]",
            super::pct(line.delta_pct),
            super::pct(line.ci_low_pct),
            super::pct(line.ci_high_pct)
        )
    } else {
        "n/a".into()
    };
    format!(
        "| {shown} | {} | {} | {} | {} | {pct} | {} |",
        launches(line),
        level(line.base_median),
        level(line.arm_median),
        ci(line.delta, line.delta_ci_low, line.delta_ci_high),
        line.holm_verdict
    )
}

/// The closure in words: the keys' sum against the step's own delta.
pub fn closure_words(c: &Closure, total: Option<&str>) -> String {
    let of = |i: &Interval| ci(i.estimate, i.ci_low, i.ci_high);
    let keys = format!("the keys' deltas sum to {}", of(&c.keys_sum));
    match (&c.total, &c.gap, c.adds_up, total) {
        (Some(t), Some(g), Some(true), Some(column)) => format!(
            "{keys} against the step's own delta {} (`{column}`); the gap {} contains 0: the breakdown adds up",
            of(t),
            of(g)
        ),
        (Some(t), Some(g), Some(false), Some(column)) => format!(
            "{keys} against the step's own delta {} (`{column}`): **the breakdown does not add up**, the step moved {} beside its keys (time between them, the timing's own cost, or reps that moved otherwise)",
            of(t),
            of(g)
        ),
        (Some(t), _, _, _) => format!(
            "{keys} against the step's own delta {}; the gap cannot be read (fewer than two passes)",
            of(t)
        ),
        _ => format!("{keys}; the spec names no total (`[breakdown] total`), so the closure is not checked"),
    }
}

fn arm_section(b: &BreakdownReport, a: &BreakdownArm, svg: Option<&String>, out: &mut String) {
    let _ = writeln!(
        out,
        "\n#### {} against {}\n",
        name(&a.arm),
        name(&a.against)
    );
    out.push_str("| key | launches (base → arm) | base | arm | Δ [95 %] | Δ % [95 %] | after Holm |\n|---|---:|---:|---:|---:|---:|---|\n");
    for line in a.keys.iter().filter(|l| !l.folded) {
        let shown = match line.only_in {
            Some(side) => format!("{} (only in the {side})", name(&line.key)),
            None => name(&line.key),
        };
        let _ = writeln!(out, "{}", row(line, shown));
    }
    if let Some(rest) = &a.rest {
        let folded = rest.keys.unwrap_or(0);
        let resolved = a
            .keys
            .iter()
            .filter(|l| l.folded && l.holm_verdict != "not resolved")
            .count();
        let _ = writeln!(
            out,
            "{}",
            row(rest, format!("rest ({folded} keys, {resolved} resolved)"))
        );
    }
    let _ = writeln!(
        out,
        "\nClosure: {}.",
        closure_words(&a.closure, b.total.as_deref())
    );
    if let Some(control) = &a.control {
        let _ = writeln!(out, "\nThe keys' control: {}.", control.reading(name));
    }
    if let Some(svg) = svg.filter(|s| !s.is_empty()) {
        let _ = writeln!(out, "\n![where the time moves: {}]({svg})", name(&a.arm));
    }
}

/// The section, after the ladder's other readings; `i` is the report's index in `doc`.
pub(super) fn breakdown_section(doc: &Doc, i: usize, r: &LadderReport, out: &mut String) {
    let Some(b) = &r.breakdown else {
        return;
    };
    let _ = writeln!(
        out,
        "\n### Where the time moves ({} by {})\n",
        name(&b.value),
        name(&b.key)
    );
    super::mark(r, out);
    let _ = writeln!(
        out,
        "Per analysis pass the delta `x[arm] − x[base]` of each key, in {}: its mean with the 95 % t \
         interval (deltas add: the keys' deltas sum to the delta of their sum); `Δ %` is the geometric \
         mean ratio with its t interval, positive when the arm spends more; Holm over the arm's keys. \
         Sorted by contribution; keys below 1 % of the base's step ({}) in both arms are folded into \
         *rest*. A key only one side prints counts 0 on the other.",
        name(&b.value),
        level(b.step)
    );
    let svgs = doc.breakdown_svgs.get(i);
    for (k, a) in b.arms.iter().enumerate() {
        arm_section(b, a, svgs.and_then(|s| s.get(k)), out);
    }
}
