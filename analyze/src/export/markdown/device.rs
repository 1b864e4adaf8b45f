//! A ladder's device time and variance components (METHOD.md "Precision per device-minute").

use super::*;
use std::fmt::Write;

/// A share as a percent with one decimal, `n/a` when there is none.
fn share(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{:.1} %", 100.0 * v))
}

/// `v` with the decimals that give `scale` three significant digits (one to four), so that a
/// half-width of ±0.0113 % and one of ±4.35 % each read in their own precision.
pub(crate) fn width(v: f64, scale: f64) -> String {
    let magnitude = scale.abs().log10().floor();
    let decimals = if magnitude.is_finite() {
        (2.0 - magnitude).clamp(1.0, 4.0) as usize
    } else {
        4
    };
    format!("{v:.decimals$}")
}

/// `±H % [lo, hi]`, each in `H`'s precision.
pub(crate) fn half_width(h: f64, lo: f64, hi: f64) -> String {
    format!("±{} % [{}, {}]", width(h, h), width(lo, h), width(hi, h))
}

/// Two table cells, `±H %` and `[lo, hi]`, each in `H`'s precision.
fn half_width_cells(h: f64, lo: f64, hi: f64) -> String {
    format!("±{} % | [{}, {}]", width(h, h), width(lo, h), width(hi, h))
}

fn seconds(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{v:.1}"))
}

/// "Where the time goes" and, with repetition rows, "Variance components".
pub(super) fn device_section(r: &LadderReport, out: &mut String) {
    let Some(device) = r.device_seconds else {
        return;
    };
    let _ = writeln!(
        out,
        "\n### Where the time goes\n\nDevice time {} ({device:.1} s): the sum of every cell's wall time, warm-up included.",
        duration(device)
    );
    match r.time_use.iter().any(|a| a.efficiency.is_some()) {
        true => split_table(r, out),
        false => wall_table(r, out),
    }
    minute_section(r, out);
    variance_section(r, out);
}

/// `H₆₀` of every metric and arm: what one device-minute of this design buys.
fn minute_section(r: &LadderReport, out: &mut String) {
    let Some(first) = r.minute_halfwidths.first() else {
        return;
    };
    let _ = writeln!(
        out,
        "\n### What a device-minute buys\n\n\
         The 95 % half-width one device-minute of these passes ({:.1} s a pass, every arm's cells) gives at many \
         passes, from each arm's sd of a pass's log ratio: two designs run on one card compare by it, the device \
         time to one half-width standing as the square of theirs (METHOD.md \"What a device-minute buys\").\n\n\
         | metric | arm | against | passes | sd of a pass | ± a device-minute | 95 % interval |\n|---|---|---|---:|---:|---:|---|",
        first.pass_seconds
    );
    for h in &r.minute_halfwidths {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} % | {} |",
            name(&h.column),
            name(&h.arm),
            name(&h.against),
            h.passes,
            width(h.sd_pct, h.sd_pct),
            half_width_cells(h.halfwidth_pct, h.ci_low_pct, h.ci_high_pct)
        );
    }
}

/// Each arm's wall time alone, where the engine printed no split of it.
fn wall_table(r: &LadderReport, out: &mut String) {
    out.push_str("The engine printed no `startup_seconds` and `timed_seconds`, so the wall time is not split.\n\n| arm | cells | wall s |\n|---|---:|---:|\n");
    for a in &r.time_use {
        let _ = writeln!(out, "| {} | {} | {:.1} |", name(&a.arm), a.cells, a.wall_s);
    }
}

/// Each arm's wall time split into start-up, timed repetitions and the rest.
fn split_table(r: &LadderReport, out: &mut String) {
    out.push_str(
        "Efficiency is the share of an arm's wall time spent in timed repetitions (`timed_seconds`); \
         start-up is `startup_seconds`, process start to the first timed repetition.\n\n\
         | arm | cells | wall s | start-up s | timed s | efficiency | start-up share |\n|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for a in &r.time_use {
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {} | {} | {} | {} |",
            name(&a.arm),
            a.cells,
            a.wall_s,
            seconds(a.startup_s),
            seconds(a.timed_s),
            share(a.efficiency),
            share(a.startup_share)
        );
    }
}

/// `H₆₀` pooled per design over the ladders, each against the first file's spec's of its arm.
pub(super) fn minute_pools_section(pools: &[MinutePool], out: &mut String) {
    if pools.is_empty() {
        return;
    }
    out.push_str(
        "\n## What a device-minute buys, per design\n\n\
         Each design's sd of a pass's log ratio pooled over its ladders (degrees of freedom added), its mean \
         device seconds a pass, and the half-width a device-minute of it buys. A design of another spec than \
         the first file's is compared with the first spec's design of its metric and arm by the device time it \
         needs for one half-width, with Fisher's F interval (METHOD.md \"Across ladders\"). Cards differ: \
         compare designs run side by side on the same cards.\n\n\
         | spec | metric | arm | ladders | df | a pass | sd of a pass | ± a device-minute | 95 % interval | device time to one half-width |\n\
         |---|---|---|---|---:|---:|---:|---:|---|---|\n",
    );
    for p in pools {
        let unmatched = match p.spec == pools[0].spec {
            true => "the reference",
            false => "n/a: no such arm in the reference",
        };
        let ratio = p.time_ratio.as_ref().map_or(unmatched.into(), |t| {
            format!(
                "×{:.2} [{:.2}, {:.2}] against {} ({})",
                t.ratio,
                t.ci_low,
                t.ci_high,
                name(&t.spec),
                t.reading()
            )
        });
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.2} s | {} % | {} | {ratio} |",
            name(&p.spec),
            name(&p.column),
            name(&p.arm),
            p.ladders
                .iter()
                .map(|t| name(t))
                .collect::<Vec<_>>()
                .join(", "),
            p.df,
            p.pass_seconds,
            width(p.sd_pct, p.sd_pct),
            half_width_cells(p.halfwidth_pct, p.ci_low_pct, p.ci_high_pct)
        );
    }
}

/// The variance components, or why the repetition rows could not be read.
fn variance_section(r: &LadderReport, out: &mut String) {
    if let Some(note) = &r.variance_note {
        let _ = writeln!(
            out,
            "\nThe repetition rows could not be read, so there are no variance components: {}.",
            name(note)
        );
    }
    let Some(v) = &r.variance_components else {
        return;
    };
    let _ = writeln!(
        out,
        "\n### Variance components ({} repetitions a cell, {} analysis passes)\n\n\
         A one-way random-effects ANOVA of the per-repetition log ratios, paired within the pass and by \
         repetition number, the passes as groups: a pass's log ratio at `r` repetitions a cell has variance \
         `s_b² + s_w²/r`; more repetitions shrink only the within-cell part, more passes both.\n",
        v.reps, v.passes
    );
    out.push_str("| metric | arm | against | between cells (sd) | within a cell, one repetition (sd) | a pass (sd) | between share |\n|---|---|---|---:|---:|---:|---:|\n");
    for a in &v.arms {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} % | {} % | {} % | {:.1} % |",
            name(&a.column),
            name(&a.arm),
            name(&a.against),
            num(a.between_sd_pct),
            num(a.within_sd_pct),
            num(a.pass_sd_pct),
            100.0 * a.between_share
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_width_reads_in_three_significant_digits_of_its_scale() {
        assert_eq!(width(0.0113, 0.0113), "0.0113");
        assert_eq!(width(0.0082, 0.0082), "0.0082", "four decimals at most");
        assert_eq!(width(4.3483, 4.3483), "4.35");
        assert_eq!(width(123.44, 123.44), "123.4", "one decimal at least");
        assert_eq!(width(0.02, 0.0113), "0.0200", "in the scale's precision");
        assert_eq!(
            half_width(0.0113, 0.009, 0.0151),
            "±0.0113 % [0.0090, 0.0151]"
        );
    }
}
