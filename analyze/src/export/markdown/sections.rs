//! One ladder's sections: what ran, each metric's tables and figures, controls, order
//! effects, contrasts, the figures beyond METHOD.md, the round split, identity and witness.

use super::*;
use crate::model::{Adjusted, OrderEffects};
use std::fmt::Write;

pub(super) fn ladder_section(doc: &Doc, i: usize, r: &LadderReport, out: &mut String) {
    let _ = writeln!(
        out,
        "\n## {}. {} / {}: {}\n",
        i + 1,
        opt_name(r.ladder.as_deref()),
        opt_name(r.tag.as_deref()),
        status(r)
    );
    what_ran(r, out);
    if !r.defects.is_empty() {
        out.push_str("\nDefects found by the replay:\n\n");
        for d in &r.defects {
            let _ = writeln!(out, "- line {}: `{}`: {}", d.line, d.kind, name(&d.detail));
        }
        if !r.statistics {
            out.push_str(
                "\nNo statistics: the file is not one connected run. Rerun the ladder, or pass \
                 `--allow-defects` to read the cells that are there, marked as such.\n",
            );
            return;
        }
    }
    if let Some(stop) = &r.stopped {
        let spread = match (stop.fixed, stop.spread) {
            (true, _) => "the spread of the passes it ran, as a fixed ladder's",
            (false, ladder::spec::StopSpread::PerArm) => "the first look's spread `s0` with `t(0.975, m0−1)`",
            (false, ladder::spec::StopSpread::Pooled) => "the first look's spread `s0` pooled over the arms (additive model) with `t(0.975, (m0−1)(n−1))`",
        };
        let _ = writeln!(
            out,
            "\nPrecision stopping: {}. Every interval uses {spread} (METHOD.md){}.",
            stop_words(r),
            match r.metrics.iter().any(|m| m.noise_rise.is_some()) {
                true => ", unless the later passes' noise rose (each metric's test below)",
                false => "",
            }
        );
        for m in r.metrics.iter() {
            if let Some(rise) = &m.noise_rise {
                let _ = writeln!(
                    out,
                    "- Noise after the first look, {}: {}.",
                    name(&m.column),
                    rise.words()
                );
            }
        }
    }
    for (k, m) in r.metrics.iter().enumerate() {
        let svg = |all: &[Vec<String>]| {
            all.get(i)
                .and_then(|s| s.get(k))
                .cloned()
                .unwrap_or_default()
        };
        metric_section(doc, r, m, &svg(doc.metric_svgs), &svg(doc.scan_svgs), out);
    }
    if let Some(split) = &r.round_split {
        let _ = writeln!(
            out,
            "\n### Round count against round speed ({}, {})\n",
            name(&split.rounds),
            name(&split.time)
        );
        mark(r, out);
        out.push_str(
            "Per pass `T[base]/T[arm] = (R[base]/R[arm]) · ((T[base]/R[base]) / (T[arm]/R[arm]))`; \
             each column is the geometric mean over the analysis passes of that factor, as a percent.\n\n",
        );
        out.push_str(
            "| arm | total | round count | round speed | n |\n|---|---:|---:|---:|---:|\n",
        );
        for a in &split.arms {
            let _ = writeln!(
                out,
                "| {} | {} % | {} % | {} % | {} |",
                name(&a.arm),
                pct(a.total_pct),
                pct(a.count_pct),
                pct(a.speed_pct),
                a.n
            );
        }
        super::energy::split_table(split, out);
        if split.rounds_identical {
            let _ = writeln!(out, "\nRound count identical in all {} cells.", split.cells);
        } else {
            let _ = writeln!(
                out,
                "\nRound count differs from the base's in {} of {} cells: part of the figure is a change in the \
                 number of rounds, not in their speed.\n",
                split.differing_cells.len(),
                split.cells
            );
            for c in &split.differing_cells {
                let what = format!("{} rounds, base {}", c.rounds, c.base_rounds);
                cell_item(out, "", (c.pass, c.slot as usize), &c.arm, &what);
            }
        }
    }
    if let Some(identity) = &r.identity {
        identity_section(identity, out);
    }
    super::breakdown::breakdown_section(doc, i, r, out);
    if let Some(witness) = &r.witness {
        witness_section(witness, r.cells_found, out);
    }
    super::device::device_section(r, out);
}

fn what_ran(r: &LadderReport, out: &mut String) {
    out.push_str("| what ran | |\n|---|---|\n");
    let _ = writeln!(out, "| file | {} |", name(&r.file));
    if let Some(run) = &r.run {
        let card = match &run.card {
            None | Some(serde_json::Value::Null) => "none recorded".to_string(),
            Some(c) => name(&c.to_string()),
        };
        let _ = writeln!(out, "| spec | {} |", opt_name(r.ladder.as_deref()));
        let _ = writeln!(out, "| tag | {} |", opt_name(r.tag.as_deref()));
        let _ = writeln!(out, "| card | {card} |");
        let _ = writeln!(out, "| spec blake3 | {} |", name(&run.spec_blake3));
        let _ = writeln!(out, "| started | {} |", name(&run.started));
        let _ = writeln!(
            out,
            "| ended | {} |",
            run.ended.as_deref().map_or("no end record".into(), name)
        );
        let _ = writeln!(
            out,
            "| duration | {} |",
            run.duration_s.map_or("unknown".into(), duration)
        );
        let _ = writeln!(
            out,
            "| cells | {} of {}: {} passes × {} arms ({} order), {} warm-up, {} analysis passes |",
            r.cells_found,
            r.cells_expected,
            run.passes,
            run.arms.len(),
            run.order,
            run.warmup_passes,
            r.analysis_passes
        );
    }
    let _ = writeln!(out, "| verify | {} |", r.verdict);
    if let Some(run) = &r.run {
        out.push_str("\n| arm | role | binary that ran | blake3 |\n|---|---|---|---|\n");
        for a in &run.arms {
            let (path, blake3) = a
                .binary
                .as_ref()
                .map_or((&run.binary_path, &run.binary_blake3), |b| {
                    (&b.path, &b.blake3)
                });
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                name(&a.name),
                a.role,
                name(path),
                name(blake3)
            );
        }
    }
}

pub(super) fn figures_cells(f: &Figures) -> String {
    format!(
        "{} % | {} | {} | {} | {}",
        pct(f.estimate_pct),
        num(f.sem_pct),
        interval(f.ci_low_pct, f.ci_high_pct),
        f.n,
        f.verdict
    )
}

fn noise_lines(m: &MetricReport, out: &mut String) {
    let gate = match m.noise_limit_pct {
        None => "no noise limit was registered, so there is no gate".to_string(),
        Some(limit) if m.within_noise_limit => {
            format!("within the pre-registered noise limit {} %", num(limit))
        }
        Some(limit) => format!(
            "**above the pre-registered noise limit {} %: the ladder is disqualified**",
            num(limit)
        ),
    };
    let _ = writeln!(
        out,
        "- Paired noise {} % (the sd of one paired delta, `100·√2·σ̂` from the additive model `ln x = μ[p] + α[a] + ε`): {gate}.",
        num(m.paired_noise_pct)
    );
    let _ = writeln!(
        out,
        "- Drift: base spread {} % (sd/mean of the base), largest pass-to-pass step of `μ[p]` {} %. Pairing inside a pass removes the drift between passes (the drift within one is tested under the order effects); it never disqualifies.\n",
        num(m.drift_pct),
        num(m.drift_step_pct)
    );
}

fn metric_section(
    doc: &Doc,
    r: &LadderReport,
    m: &MetricReport,
    svg: &str,
    scan_svg: &str,
    out: &mut String,
) {
    let _ = writeln!(out, "\n### {} ({} is better)\n", name(&m.column), m.better);
    mark(r, out);
    noise_lines(m, out);
    out.push_str("| arm | role | against | estimate | sem | 95 % interval | n | verdict | median | Holm | MDE |\n|---|---|---|---:|---:|---|---:|---|---:|---|---:|\n");
    for a in &m.arms {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} % | {} | ±{} % |",
            name(&a.arm),
            a.role,
            name(&a.against),
            figures_cells(&a.figures),
            pct(a.figures.median_pct),
            a.holm_verdict,
            num(a.mde_pct)
        );
    }
    out.push_str("\nMDE: the smallest true effect, either way, that this ladder resolves in four of five runs of its length and spread (80 % power at the 95 % level).\n");
    for a in m.arms.iter().filter(|a| a.figures.pulled()) {
        let _ = writeln!(
            out,
            "\n{}: the median {} % lies outside the interval: a few passes pull the mean.",
            name(&a.arm),
            pct(a.figures.median_pct)
        );
    }
    if !svg.is_empty() {
        let _ = writeln!(
            out,
            "\n![per-pass paired deltas of every arm against the base]({svg})\n"
        );
        out.push_str("Dots: one paired delta per analysis pass; red bar: the geometric-mean estimate; whisker: its 95 % interval.\n");
    }
    if !scan_svg.is_empty() {
        let _ = writeln!(out, "\n![estimate against the scanned value]({scan_svg})\n");
        out.push_str("Each column: one scanned value, in scan order (the first is the base); red bar: the estimate against it; whisker: the 95 % interval.\n");
    }
    controls_section(r, m, out);
    order_section(r, m, out);
    out.push_str(
        "\nAll arm-to-arm contrasts (each later-declared arm against each earlier one):\n\n",
    );
    mark(r, out);
    contrast_table(&m.contrasts, out);
    extras_section(doc, r, m, out);
}

fn controls_section(r: &LadderReport, m: &MetricReport, out: &mut String) {
    if m.controls.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nControls: this ladder's family holds {k} (control arm, metric) test{}, each interval at level 1 − 0.05/{k} = {:.4}; {}.\n",
        if r.control_family == 1 { "" } else { "s" },
        1.0 - 0.05 / r.control_family.max(1) as f64,
        match m.equivalence_margin_pct {
            Some(margin) if r.margin_registered => format!("an inert control holds when that interval lies within the pre-registered margin ±{} %", num(margin)),
            Some(margin) => format!("an inert control holds when that interval lies within ±{} %, a margin given to the report after the run (not pre-registered)", num(margin)),
            None => "an inert control (null, reflexive) holds when it contains 0".to_string(),
        },
        k = r.control_family
    );
    mark(r, out);
    out.push_str(
        "| control | role | estimate | interval | level | reading |\n|---|---|---:|---|---:|---|\n",
    );
    for c in &m.controls {
        let (head, why) = c.reading(m.equivalence_margin_pct);
        let reading = match (c.holds, why.is_empty()) {
            (Some(false), _) => format!("**{head}**: {why}"),
            (_, true) => head.to_string(),
            _ => format!("{head}: {why}"),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} % | {} | {} | {reading} |",
            name(&c.arm),
            c.role,
            pct(c.estimate_pct),
            interval(c.ci_low_pct, c.ci_high_pct),
            c.level
        );
    }
    for c in m.controls.iter().filter(|c| !c.gains.is_empty()) {
        let _ = writeln!(out, "\nEach real arm against the structural zero {} (the gain from where the mechanism points):\n", name(&c.arm));
        contrast_table(&c.gains, out);
    }
}

fn order_section(r: &LadderReport, m: &MetricReport, out: &mut String) {
    let e = &m.order_effects;
    out.push_str("\nOrder effects (`ln x = μ[p] + α[arm] + β[slot] + γ[prev] + ε`, F tests by nested least squares):\n\n");
    if e.no_residual {
        out.push_str("- Not testable: the metric is the same in every cell of an arm, so the model leaves no residual to test against; it never flags the ladder.\n");
        return;
    }
    let _ = writeln!(
        out,
        "- Position (all β equal): p = {}{}.",
        p_value(e.position_p),
        e.position_df
            .map_or(String::new(), |[a, b]| format!(", F({a}, {b})"))
    );
    if e.carry_over_estimable {
        let _ = writeln!(
            out,
            "- Carry-over (all γ equal): p = {}{}.",
            p_value(e.carry_over_p),
            e.carry_over_df
                .map_or(String::new(), |[a, b]| format!(", F({a}, {b})"))
        );
    } else {
        out.push_str(
            "- Carry-over: not estimable in this design (γ cannot be told apart from α and β).\n",
        );
    }
    if e.sensitive() {
        out.push_str("- **Order-sensitive**: a test rejects at 1 %; the ladder stays qualified, but where a cell sits or what ran before it moves the metric.\n");
    } else {
        out.push_str("- Neither test rejects at 1 %.\n");
    }
    if !e.adjusted.is_empty() {
        let _ = writeln!(
            out,
            "- Estimates with carry-over removed (α from the model, 95 % interval from the model; given whenever the design estimates carry-over, the test rejecting or not): {}.",
            adjusted_list(&e.adjusted)
        );
    }
    drift_lines(e, out);
    if r.run.as_ref().is_some_and(|run| run.order == "rotate") {
        out.push_str(
            "- Under `rotate` an arm follows the same arm except across pass boundaries, so the carry-over test has \
             little power (about 44 % for a 1 % carry-over at 0.5 % noise, 3 arms, 12 passes, against about 77 % under \
             `williams`): use `order = \"williams\"` with three or more arms (a reflexive arm makes three).\n",
        );
    }
}

/// `arm +1.2 % [+0.8, +1.6]`, one per arm.
fn adjusted_list(adjusted: &[Adjusted]) -> String {
    let each = adjusted.iter().map(|a| {
        format!(
            "{} {} % {}",
            name(&a.arm),
            pct(a.estimate_pct),
            interval(a.ci_low_pct, a.ci_high_pct)
        )
    });
    each.collect::<Vec<_>>().join(", ")
}

/// The drift within a pass (METHOD.md "Order effects"): its test and, when it rejects, what
/// it means for the intervals.
fn drift_lines(e: &OrderEffects, out: &mut String) {
    let Some(p) = e.drift_p else {
        out.push_str("- Drift within a pass: not testable in this design (each pass's slope would take its every difference).\n");
        return;
    };
    let df = e
        .drift_df
        .map_or(String::new(), |[a, b]| format!(", F({a}, {b})"));
    let _ = writeln!(out, "- Drift within a pass (each pass its own slope in the slot, `τ[p]`, beside β): p = {}{df}.", p_value(Some(p)));
    if e.drifting() {
        out.push_str("- **Drifts within its passes**: the test rejects at 1 %; pairing inside a pass does not remove this drift, which widens the intervals (fewer arms a pass, or shorter cells, pair closer in time). No estimate with the drift removed is given: a straight line in each pass does not remove a real drift (METHOD.md \"Drift within a pass\").\n");
    }
}

/// One row per pair: arm, the arm it is read against, and its figures.
fn contrast_table(pairs: &[Contrast], out: &mut String) {
    out.push_str("| arm | against | estimate | sem | 95 % interval | n | verdict |\n|---|---|---:|---:|---|---:|---|\n");
    for c in pairs {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            name(&c.arm),
            name(&c.against),
            figures_cells(&c.figures)
        );
    }
}

fn extras_section(doc: &Doc, r: &LadderReport, m: &MetricReport, out: &mut String) {
    if m.arms.iter().all(|a| a.extras.is_none()) {
        return;
    }
    out.push_str("\nBeyond METHOD.md (arms against the base):\n\n");
    mark(r, out);
    out.push_str("| arm | bootstrap 95 % interval of the median | Wilcoxon p |\n|---|---|---:|\n");
    for a in &m.arms {
        let Some(e) = &a.extras else { continue };
        let boot = match (e.bootstrap_ci_low_pct, e.bootstrap_ci_high_pct) {
            (Some(lo), Some(hi)) => interval(lo, hi),
            _ => "n/a".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {boot} | {} |",
            name(&a.arm),
            p_value(e.wilcoxon_p)
        );
    }
    let _ = writeln!(
        out,
        "\n- *Bootstrap interval*: the 2.5th and 97.5th percentiles of the median over {} resamples of the \
         analysis passes (seeded from {} and the quantity's name): an interval that does not assume normal deltas.\n\
         - *Wilcoxon p*: how likely signs and ranks at least this lopsided are if the arm changed nothing; \
         small means the shift is not noise.",
        doc.extras.resamples, doc.extras.seed
    );
}

fn identity_section(identity: &Identity, out: &mut String) {
    let _ = writeln!(out, "\n### Output identity ({})\n", name(&identity.column));
    if identity.differing.is_empty() {
        let _ = writeln!(
            out,
            "{} of {} comparisons IDENTICAL; {} distinct digests.",
            identity.identical, identity.comparisons, identity.distinct
        );
    } else {
        let _ = writeln!(
            out,
            "{} of {} comparisons identical; {} distinct digests. Differing cells:\n",
            identity.identical, identity.comparisons, identity.distinct
        );
        for d in &identity.differing {
            let what = format!("{}, base {}", name(&d.digest), name(&d.base_digest));
            cell_item(out, "", (d.pass, d.slot), &d.arm, &what);
        }
    }
}

fn witness_section(w: &Witness, cells: usize, out: &mut String) {
    out.push_str("\n### Witness\n\n");
    let list =
        |title: &str, none: &str, items: &[crate::witness::WitnessCell], out: &mut String| {
            if items.is_empty() {
                let _ = writeln!(out, "- {title}: {none}");
            } else {
                let _ = writeln!(out, "- {title}: {} cell(s)", items.len());
                for c in items {
                    cell_item(out, "  ", (c.pass, c.slot), &c.arm, &name(&c.detail));
                }
            }
        };
    list(
        "Beside a foreign process",
        &format!("none in {cells} cells"),
        &w.foreign_cells,
        out,
    );
    list("Clock changes", "none", &w.clock_changes, out);
    list("Throttling", "none", &w.throttle_cells, out);
    if let Some(card) = &w.card {
        super::card::card_lines(card, out);
    }
    if !w.ranges.is_empty() {
        let ranges: Vec<String> = w
            .ranges
            .iter()
            .map(|r| format!("{} {}–{}", name(&r.quantity), r.min, r.max))
            .collect();
        let _ = writeln!(out, "- Ranges over all cells: {}", ranges.join("; "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drift(p: f64) -> String {
        let e = OrderEffects {
            drift_p: Some(p),
            drift_df: Some([7, 83]),
            ..OrderEffects::default()
        };
        let mut out = String::new();
        drift_lines(&e, &mut out);
        out
    }

    #[test]
    fn a_drifting_ladder_is_flagged_with_no_drift_removed_estimates() {
        let drifting = drift(0.001);
        assert!(drifting.contains("p = 0.001, F(7, 83)"), "{drifting}");
        assert!(
            drifting.contains("**Drifts within its passes**"),
            "{drifting}"
        );
        assert!(drifting.contains("No estimate with the drift removed"));
        let steady = drift(0.2);
        assert!(!steady.contains("Drifts within"), "{steady}");
    }
}
