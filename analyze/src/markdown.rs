//! The markdown report: a header per ladder, its tables, links to the figures, and the
//! reading across ladders. Every number is one of the JSON report's, rounded for reading.

use crate::across::{ArmPair, Replication};
use crate::analysis::{Contrast, ExtrasConfig, Figures, LadderReport, MetricReport};
use crate::identity::Identity;
use crate::witness::Witness;
use std::fmt::Write;

/// Everything one markdown document shows.
pub struct Doc<'a> {
    pub reports: &'a [LadderReport],
    pub replications: &'a [Replication],
    pub pairs: &'a [ArmPair],
    /// Per report, per metric: the figure's file name beside the markdown (empty: none).
    pub metric_svgs: &'a [Vec<String>],
    /// Per spec name with replications: the forest plot's file name.
    pub forest_svgs: &'a [(String, String)],
    pub extras: ExtrasConfig,
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
        Some(p) => format!("{p:.3}"),
        None => "n/a".into(),
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

/// `QUALIFIED`, or why the ladder's figures must not be relied on.
pub fn status(r: &LadderReport) -> String {
    if !r.statistics {
        return "NOT CONNECTED (no statistics)".into();
    }
    if r.qualified {
        return "QUALIFIED".into();
    }
    let mut words = Vec::new();
    if !r.connected {
        words.push("NOT CONNECTED, read with --allow-defects".to_string());
    }
    let reasons: Vec<&str> = r
        .disqualified_by
        .iter()
        .map(String::as_str)
        .filter(|d| *d != "not-connected")
        .collect();
    if !reasons.is_empty() {
        words.push(format!("DISQUALIFIED by {}", reasons.join(", ")));
    }
    words.join("; ")
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

pub fn render(doc: &Doc) -> String {
    let mut out = String::from("# Ladder report\n\n");
    out.push_str(
        "Each figure is computed as `docs/METHOD.md` (abab) says, from the raw files listed: paired \
         deltas inside one pass, in percent, positive meaning better (`higher`: `100·(x_arm/x_base − 1)`, \
         `lower`: `100·(x_base/x_arm − 1)`); estimate = median over the analysis passes; sem = sd/√n; \
         95 % interval = estimate ± t(0.975, n−1)·sem. A verdict is *better* or *worse* only when the \
         whole interval lies on one side of 0.\n\n",
    );
    out.push_str("| # | ladder | tag | file | verify | status |\n|---:|---|---|---|---|---|\n");
    for (i, r) in doc.reports.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {} | `{}` | `{}` | `{}` | {} | {} |",
            i + 1,
            r.ladder.as_deref().unwrap_or("?"),
            r.tag.as_deref().unwrap_or("?"),
            r.file,
            r.verdict,
            status(r)
        );
    }
    for (i, r) in doc.reports.iter().enumerate() {
        ladder_section(doc, i, r, &mut out);
    }
    across_section(doc, &mut out);
    out
}

fn ladder_section(doc: &Doc, i: usize, r: &LadderReport, out: &mut String) {
    let _ = writeln!(
        out,
        "\n## {}. `{}` / `{}`: {}\n",
        i + 1,
        r.ladder.as_deref().unwrap_or("?"),
        r.tag.as_deref().unwrap_or("?"),
        status(r)
    );
    what_ran(r, out);
    if !r.defects.is_empty() {
        out.push_str("\nDefects found by the replay:\n\n");
        for d in &r.defects {
            let _ = writeln!(out, "- line {}: `{}`: {}", d.line, d.kind, d.detail);
        }
        if !r.statistics {
            out.push_str(
                "\nNo statistics: the file is not one connected run. Rerun the ladder, or pass \
                          `--allow-defects` to read the cells that are there, marked as such.\n",
            );
            return;
        }
    }
    for (k, m) in r.metrics.iter().enumerate() {
        let svg = doc
            .metric_svgs
            .get(i)
            .and_then(|s| s.get(k))
            .map(String::as_str);
        metric_section(doc, r, m, svg, out);
    }
    if let Some(split) = &r.round_split {
        let _ = writeln!(
            out,
            "\n### Round count against round speed (`{}`, `{}`)\n",
            split.rounds, split.time
        );
        mark(r, out);
        out.push_str("Per pass `T[base]/T[arm] = (R[base]/R[arm]) · ((T[base]/R[base]) / (T[arm]/R[arm]))`; \
                      each column is the median over the analysis passes of that factor, as a percent.\n\n");
        out.push_str(
            "| arm | total | round count | round speed | n |\n|---|---:|---:|---:|---:|\n",
        );
        for a in &split.arms {
            let _ = writeln!(
                out,
                "| `{}` | {} % | {} % | {} % | {} |",
                a.arm,
                pct(a.total_pct),
                pct(a.count_pct),
                pct(a.speed_pct),
                a.n
            );
        }
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
                let _ = writeln!(
                    out,
                    "- pass {} slot {} `{}`: {} rounds, base {}",
                    c.pass, c.slot, c.arm, c.rounds, c.base_rounds
                );
            }
        }
    }
    if let Some(identity) = &r.identity {
        identity_section(identity, out);
    }
    if let Some(witness) = &r.witness {
        witness_section(witness, r.cells_found, out);
    }
}

fn what_ran(r: &LadderReport, out: &mut String) {
    out.push_str("| what ran | |\n|---|---|\n");
    let _ = writeln!(out, "| file | `{}` |", r.file);
    if let Some(run) = &r.run {
        let card = match &run.card {
            None | Some(serde_json::Value::Null) => "none recorded".to_string(),
            Some(c) => format!("`{c}`"),
        };
        let _ = writeln!(out, "| spec | `{}` |", r.ladder.as_deref().unwrap_or("?"));
        let _ = writeln!(out, "| tag | `{}` |", r.tag.as_deref().unwrap_or("?"));
        let _ = writeln!(out, "| card | {card} |");
        let _ = writeln!(out, "| binary blake3 | `{}` |", run.binary_blake3);
        let _ = writeln!(out, "| spec blake3 | `{}` |", run.spec_blake3);
        let _ = writeln!(out, "| started | {} |", run.started);
        let _ = writeln!(
            out,
            "| ended | {} |",
            run.ended.as_deref().unwrap_or("no end record")
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
}

fn figures_cells(f: &Figures) -> String {
    format!(
        "{} % | {} | {} | {} | {}",
        pct(f.estimate_pct),
        num(f.sem_pct),
        interval(f.ci_low_pct, f.ci_high_pct),
        f.n,
        f.verdict
    )
}

fn metric_section(
    doc: &Doc,
    r: &LadderReport,
    m: &MetricReport,
    svg: Option<&str>,
    out: &mut String,
) {
    let _ = writeln!(out, "\n### `{}` ({} is better)\n", m.column, m.better);
    mark(r, out);
    let gate = if m.within_noise_limit {
        "within the limit"
    } else {
        "**exceeds the limit: the ladder is disqualified**"
    };
    let _ = writeln!(
        out,
        "Base spread {} % (sd/mean of the base over the analysis passes) against the pre-registered noise limit {} %: {gate}.\n",
        num(m.base_spread_pct),
        m.noise_limit_pct.map_or("none registered".into(), num)
    );
    out.push_str("| arm | role | against | estimate | sem | 95 % interval | n | verdict |\n|---|---|---|---:|---:|---|---:|---|\n");
    for a in &m.arms {
        let _ = writeln!(
            out,
            "| `{}` | {} | `{}` | {} |",
            a.arm,
            a.role,
            a.against,
            figures_cells(&a.figures)
        );
    }
    if let Some(svg) = svg.filter(|s| !s.is_empty()) {
        let _ = writeln!(
            out,
            "\n![{}: per-pass paired deltas of every arm against the base]({svg})\n",
            m.column
        );
        out.push_str("Dots: one paired delta per analysis pass; red bar: the median; whisker: its 95 % interval.\n");
    }
    if !m.controls.is_empty() {
        out.push_str("\nControls:\n\n");
        mark(r, out);
        out.push_str("| control | role | estimate | reading |\n|---|---|---:|---|\n");
        for c in &m.controls {
            let reading = match c.holds {
                Some(true) => format!("holds: \\|{}\\| ≤ base spread {}", pct(c.estimate_pct), num(m.base_spread_pct)),
                Some(false) => format!("**does not hold**: \\|{}\\| > base spread {}; the ladder is disqualified by its own control", pct(c.estimate_pct), num(m.base_spread_pct)),
                None => "the cost of the mechanism alone".to_string(),
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} % | {reading} |",
                c.arm,
                c.role,
                pct(c.estimate_pct)
            );
        }
        for c in m.controls.iter().filter(|c| !c.gains.is_empty()) {
            let _ = writeln!(out, "\nEach real arm against the structural zero `{}` (the gain from where the mechanism points):\n", c.arm);
            contrast_table(&c.gains, out);
        }
    }
    out.push_str(
        "\nAll arm-to-arm contrasts (each later-declared arm against each earlier one):\n\n",
    );
    mark(r, out);
    contrast_table(&m.contrasts, out);
    extras_section(doc, r, m, out);
}

/// One row per pair: arm, the arm it is read against, and its figures.
fn contrast_table(pairs: &[Contrast], out: &mut String) {
    out.push_str("| arm | against | estimate | sem | 95 % interval | n | verdict |\n|---|---|---:|---:|---|---:|---|\n");
    for c in pairs {
        let _ = writeln!(out, "| `{}` | `{}` | {} |", c.arm, c.against, figures_cells(&c.figures));
    }
}

fn extras_section(doc: &Doc, r: &LadderReport, m: &MetricReport, out: &mut String) {
    out.push_str("\nBeyond METHOD.md (arms against the base):\n\n");
    mark(r, out);
    out.push_str("| arm | bootstrap 95 % interval of the median | Wilcoxon p | order r (p) | order effect |\n|---|---|---:|---|---|\n");
    for a in &m.arms {
        let e = &a.extras;
        let boot = match (e.bootstrap_ci_low_pct, e.bootstrap_ci_high_pct) {
            (Some(lo), Some(hi)) => interval(lo, hi),
            _ => "n/a".into(),
        };
        let order = match (e.order_r, e.order_p) {
            (Some(r), p) => format!("{r:+.3} ({})", p_value(p)),
            _ => "n/a".into(),
        };
        let flag = if e.order_effect { "**yes**" } else { "no" };
        let _ = writeln!(
            out,
            "| `{}` | {boot} | {} | {order} | {flag} |",
            a.arm,
            p_value(e.wilcoxon_p)
        );
    }
    let _ = writeln!(
        out,
        "\n- *Bootstrap interval*: the 2.5th and 97.5th percentiles of the median over {} resamples of the \
         analysis passes (seeded from {} and the quantity's name): an interval that does not assume normal deltas.\n\
         - *Wilcoxon p*: how likely signs and ranks at least this lopsided are if the arm changed nothing; \
         small means the shift is not noise.\n\
         - *Order r*: correlation of the delta with the slot the arm ran in; an order effect (p < 0.05) means \
         the position in the pass, not only the arm, moves the delta.",
        doc.extras.resamples,
        doc.extras.seed
    );
}

fn identity_section(identity: &Identity, out: &mut String) {
    let _ = writeln!(out, "\n### Output identity (`{}`)\n", identity.column);
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
            let _ = writeln!(
                out,
                "- pass {} slot {} `{}`: `{}`, base `{}`",
                d.pass, d.slot, d.arm, d.digest, d.base_digest
            );
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
                    let _ = writeln!(
                        out,
                        "  - pass {} slot {} `{}`: {}",
                        c.pass, c.slot, c.arm, c.detail
                    );
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
    if !w.ranges.is_empty() {
        let ranges: Vec<String> = w
            .ranges
            .iter()
            .map(|r| format!("{} {}–{}", r.quantity, r.min, r.max))
            .collect();
        let _ = writeln!(out, "- Ranges over all cells: {}", ranges.join("; "));
    }
}

fn across_section(doc: &Doc, out: &mut String) {
    if doc.replications.is_empty() && doc.pairs.is_empty() {
        return;
    }
    out.push_str("\n## Across ladders\n");
    let mut specs: Vec<&str> = Vec::new();
    for q in doc.replications {
        if !specs.contains(&q.spec.as_str()) {
            specs.push(&q.spec);
        }
    }
    for spec in specs {
        let rows: Vec<&Replication> = doc.replications.iter().filter(|q| q.spec == spec).collect();
        let _ = writeln!(
            out,
            "\n### `{spec}`: the same spec in several ladders\n\nA single ladder's sem understates the real uncertainty; \
             the range across ladders is the honest reading. Spread = max − min of the estimates, against \
             `replication_limit_pp` = {}.\n",
            rows[0].replication_limit_pp
        );
        if rows.iter().any(|q| !q.same_binary) {
            out.push_str(
                "> **Different binaries**: these ladders did not all run the same executable (blake3 in each \
                 ladder's table above), so a spread here includes whatever changed between them; it is a \
                 replication only among ladders of one binary.\n\n",
            );
        }
        out.push_str("| quantity | estimates (tag: %) | range | spread (pp) | reading |\n|---|---|---|---:|---|\n");
        for q in rows {
            let estimates: Vec<String> = q
                .ladders
                .iter()
                .zip(&q.estimates_pct)
                .zip(&q.qualified)
                .map(|((tag, e), ok)| {
                    format!(
                        "`{tag}`: {}{}",
                        pct(*e),
                        if *ok { "" } else { " (not qualified)" }
                    )
                })
                .collect();
            let reading = match (q.same_binary, q.replicates) {
                (false, _) => "binaries differ: a change, not a replication",
                (true, true) => "replicates: within the limit",
                (true, false) => "**a range, not a point**",
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {reading} |",
                q.quantity,
                estimates.join("; "),
                interval(q.min_pct, q.max_pct),
                num(q.spread_pp)
            );
        }
        if let Some((_, svg)) = doc.forest_svgs.iter().find(|(s, _)| s == spec) {
            let _ = writeln!(
                out,
                "\n![`{spec}`: estimate and interval of every shared quantity per ladder]({svg})\n"
            );
            out.push_str("Each row: one quantity in one ladder; dot: the estimate (hollow: not qualified); line: its 95 % interval.\n");
        }
    }
    if !doc.pairs.is_empty() {
        out.push_str("\n### Two arms across ladders\n\nThe same two arms, read in every ladder that carries both (paired inside each pass of each ladder).\n");
        for p in doc.pairs {
            let _ = writeln!(
                out,
                "\n`{}` against `{}` on `{}`:\n",
                p.arm, p.against, p.column
            );
            out.push_str("| ladder | tag | estimate | sem | 95 % interval | n | verdict | qualified |\n|---|---|---:|---:|---|---:|---|---|\n");
            for r in &p.readings {
                let _ = writeln!(
                    out,
                    "| `{}` | `{}` | {} | {} |",
                    r.ladder,
                    r.tag,
                    figures_cells(&r.figures),
                    if r.qualified { "yes" } else { "no" }
                );
            }
        }
    }
}
