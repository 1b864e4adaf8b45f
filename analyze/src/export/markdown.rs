//! The markdown report: a one-screen summary first (per ladder and metric, each arm's
//! estimate, interval and verdict, the controls, qualified or why not), then per ladder its
//! tables, links to the figures, and the reading across ladders. Every number is one of the
//! JSON report's, rounded for reading; every name that comes from a file goes through
//! [`name`], so that no ladder, tag, arm or column can break a table or inject HTML.

use super::svg::{self, DeltaColumn, ForestRow};
use crate::across::{ArmPair, Replication};
use crate::analysis::{Contrast, ExtrasConfig, Figures, LadderReport, MetricReport};
use crate::identity::Identity;
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
    /// Per report, per metric: the figure's file name beside the markdown (empty: none).
    pub metric_svgs: &'a [Vec<String>],
    /// Per report, per metric: the scan figure's file name (empty: none).
    pub scan_svgs: &'a [Vec<String>],
    /// Per spec name with replications: the forest plot's file name.
    pub forest_svgs: &'a [(String, String)],
    pub extras: ExtrasConfig,
}

impl<'a> Doc<'a> {
    /// The document without figures (markdown to stdout).
    pub fn without_figures(reading: &'a Reading) -> Doc<'a> {
        Doc {
            reports: &reading.reports,
            replications: &reading.replications,
            pairs: &reading.pairs,
            metric_svgs: &[],
            scan_svgs: &[],
            forest_svgs: &[],
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
    let reasons: Vec<String> = r
        .disqualified_by
        .iter()
        .filter(|d| *d != "not-connected")
        .map(|d| match d.split_once(':') {
            Some((kind, arm)) => format!("{kind}:{}", name(arm)),
            None => d.clone(),
        })
        .collect();
    if !reasons.is_empty() {
        words.push(format!("DISQUALIFIED by {}", reasons.join(", ")));
    }
    words.join("; ")
}

/// The same, as plain text for a figure's title (drawn, not parsed as markdown).
pub fn status_plain(r: &LadderReport) -> String {
    if r.qualified {
        "QUALIFIED".into()
    } else {
        format!("DISQUALIFIED by {}", r.disqualified_by.join(", "))
    }
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
        Some(s) => format!(
            "stopped at look {} ({}): the first look (pass {}) set the passes needed for a ±{} % half-width",
            s.look,
            match s.reason.as_str() {
                "precision" => "precision reached",
                "max-passes" => "the last look, precision not reached",
                other => other,
            },
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
        ladder_section(doc, i, r, &mut out);
    }
    across_section(doc, &mut out);
    out
}

/// The one-screen summary: per ladder and metric, each arm's estimate [interval] and
/// verdict, the controls, and qualified or why not.
pub fn summary(reports: &[LadderReport]) -> String {
    let mut out = String::from("## Summary\n\n");
    for r in reports {
        // A file whose start record did not parse has no ladder or tag: name the file.
        let title = match (&r.ladder, &r.tag) {
            (Some(ladder), Some(tag)) => format!("{} / {}", name(ladder), name(tag)),
            _ => name(&r.file),
        };
        let _ = write!(out, "**{title}: {}**", status(r));
        if r.statistics {
            let _ = write!(out, " ({} analysis passes", r.analysis_passes);
            if r.stopped.is_some() {
                let _ = write!(out, "; {}", stop_words(r));
            }
            out.push(')');
            if r.order_sensitive {
                out.push_str("; **order-sensitive**");
            }
        }
        out.push_str("\n\n");
        if !r.statistics {
            continue;
        }
        out.push_str(
            "| metric | arm | estimate [95 % interval] | verdict | Holm |\n|---|---|---|---|---|\n",
        );
        for m in &r.metrics {
            for a in &m.arms {
                let f = &a.figures;
                let _ = writeln!(
                    out,
                    "| {} | {} | {} % {} | {} | {} |",
                    name(&m.column),
                    name(&a.arm),
                    pct(f.estimate_pct),
                    interval(f.ci_low_pct, f.ci_high_pct),
                    f.verdict,
                    a.holm_verdict
                );
            }
        }
        let controls: Vec<String> = r
            .metrics
            .iter()
            .flat_map(|m| m.controls.iter().map(move |c| (m, c)))
            .filter_map(|(m, c)| {
                let (head, _) = c.reading(m.equivalence_margin_pct);
                let reading = match c.holds? {
                    true => head.to_string(),
                    false => format!("**{head}**"),
                };
                Some(format!(
                    "{} on {} {reading} ({} at level {:.4}, {})",
                    name(&c.arm),
                    name(&m.column),
                    interval(c.ci_low_pct, c.ci_high_pct),
                    c.level,
                    c.rule
                ))
            })
            .collect();
        let _ = writeln!(
            out,
            "\nControls: {}.\n",
            if controls.is_empty() {
                "none".to_string()
            } else {
                controls.join("; ")
            }
        );
    }
    out
}

fn ladder_section(doc: &Doc, i: usize, r: &LadderReport, out: &mut String) {
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
    if r.stopped.is_some() {
        let _ = writeln!(
            out,
            "\nPrecision stopping: {}. Every interval uses the first look's spread `s0` with `t(0.975, m0−1)` (METHOD.md).",
            stop_words(r)
        );
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
                    "- pass {} slot {} {}: {} rounds, base {}",
                    c.pass,
                    c.slot,
                    name(&c.arm),
                    c.rounds,
                    c.base_rounds
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
        "- Drift: base spread {} % (sd/mean of the base), largest pass-to-pass step of `μ[p]` {} %. Pairing inside a pass removes drift; it never disqualifies.\n",
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
        let adjusted: Vec<String> = e
            .adjusted
            .iter()
            .map(|a| {
                format!(
                    "{} {} % {}",
                    name(&a.arm),
                    pct(a.estimate_pct),
                    interval(a.ci_low_pct, a.ci_high_pct)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "- Estimates with carry-over removed (α from the model, 95 % interval from the model): {}.",
            adjusted.join(", ")
        );
    }
    if r.run.as_ref().is_some_and(|run| run.order == "rotate") {
        out.push_str(
            "- Under `rotate` an arm follows the same arm except across pass boundaries, so the carry-over test has \
             little power (about 44 % for a 1 % carry-over at 0.5 % noise, 3 arms, 12 passes, against about 77 % under \
             `williams`): use `order = \"williams\"` with three or more arms (a reflexive arm makes three).\n",
        );
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
            let _ = writeln!(
                out,
                "- pass {} slot {} {}: {}, base {}",
                d.pass,
                d.slot,
                name(&d.arm),
                name(&d.digest),
                name(&d.base_digest)
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
                        "  - pass {} slot {} {}: {}",
                        c.pass,
                        c.slot,
                        name(&c.arm),
                        name(&c.detail)
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
            .map(|r| format!("{} {}–{}", name(&r.quantity), r.min, r.max))
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
            "\n### {}: the same spec in several ladders\n\nA single ladder's sem understates the real uncertainty; \
             the range across ladders is the honest reading. Spread = max − min of the estimates, against \
             `replication_limit_pp` = {}.\n",
            name(spec),
            rows[0].replication_limit_pp
        );
        if rows.iter().any(|q| !q.same_binary) {
            out.push_str(
                "> **Different binaries**: these ladders did not all run the same executable (blake3 in each \
                 ladder's table above), so a spread here includes whatever changed between them; it is a \
                 replication only among ladders of one binary.\n\n",
            );
        }
        out.push_str("| quantity | estimates (tag, host, card: %) | range | spread (pp) | reading |\n|---|---|---|---:|---|\n");
        for q in rows {
            let estimates: Vec<String> = (0..q.ladders.len())
                .map(|i| {
                    format!(
                        "{} ({}, {}): {}{}",
                        name(&q.ladders[i]),
                        name(&q.hosts[i]),
                        name(&q.cards[i]),
                        pct(q.estimates_pct[i]),
                        if q.qualified[i] {
                            ""
                        } else {
                            " (not qualified)"
                        }
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
                "| {} | {} | {} | {} | {reading} |",
                name(&q.quantity),
                estimates.join("; "),
                interval(q.min_pct, q.max_pct),
                num(q.spread_pp)
            );
        }
        if let Some((_, svg)) = doc.forest_svgs.iter().find(|(s, _)| s == spec) {
            let _ = writeln!(
                out,
                "\n![estimate and interval of every shared quantity per ladder]({svg})\n"
            );
            out.push_str("Each row: one quantity in one ladder; dot: the estimate (hollow: not qualified); line: its 95 % interval.\n");
        }
    }
    if !doc.pairs.is_empty() {
        out.push_str("\n### Two arms across ladders\n\nThe same two arms, read in every ladder that carries both (paired inside each pass of each ladder).\n");
        for p in doc.pairs {
            let _ = writeln!(
                out,
                "\n{} against {} on {}:\n",
                name(&p.arm),
                name(&p.against),
                name(&p.column)
            );
            out.push_str("| ladder | tag | estimate | sem | 95 % interval | n | verdict | qualified |\n|---|---|---:|---:|---|---:|---|---|\n");
            for r in &p.readings {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    name(&r.ladder),
                    name(&r.tag),
                    figures_cells(&r.figures),
                    if r.qualified { "yes" } else { "no" }
                );
            }
        }
    }
}

/// `name` with every character a file name should not hold replaced by `_`.
fn file_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
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
    let mut used = std::collections::HashSet::new();
    let mut metric_svgs = Vec::new();
    let mut scan_svgs = Vec::new();
    for r in &reading.reports {
        let mut names = Vec::new();
        let mut scans = Vec::new();
        for m in &r.metrics {
            let base = format!(
                "{stem}_{}_{}_{}",
                file_part(r.ladder.as_deref().unwrap_or("")),
                file_part(r.tag.as_deref().unwrap_or("")),
                file_part(&m.column)
            );
            let mut name = format!("{base}.svg");
            let mut k = 2;
            while !used.insert(name.clone()) {
                name = format!("{base}_{k}.svg");
                k += 1;
            }
            let columns: Vec<DeltaColumn> = m
                .arms
                .iter()
                .map(|a| DeltaColumn {
                    arm: &a.arm,
                    deltas: &a.deltas_pct,
                    estimate: a.figures.estimate_pct,
                    ci: (a.figures.ci_low_pct, a.figures.ci_high_pct),
                })
                .collect();
            let title = format!(
                "{} / {}: {} ({} is better){}",
                r.ladder.as_deref().unwrap_or("?"),
                r.tag.as_deref().unwrap_or("?"),
                m.column,
                m.better,
                if r.qualified {
                    String::new()
                } else {
                    format!(" [{}]", status_plain(r))
                }
            );
            svg::deltas_svg(&dir.join(&name), &title, &columns)?;
            names.push(name);
            if let Some(values) = r.scan.as_ref().filter(|v| v.len() == m.arms.len() + 1) {
                let scan_name = format!("{base}_scan.svg");
                // The first scanned value is the base: its estimate against itself is 0.
                let columns: Vec<DeltaColumn> = values
                    .iter()
                    .enumerate()
                    .map(|(i, value)| {
                        let (estimate, ci) = match i.checked_sub(1).map(|k| &m.arms[k].figures) {
                            Some(f) => (f.estimate_pct, (f.ci_low_pct, f.ci_high_pct)),
                            None => (0.0, (0.0, 0.0)),
                        };
                        DeltaColumn {
                            arm: value,
                            deltas: &[],
                            estimate,
                            ci,
                        }
                    })
                    .collect();
                let title = format!(
                    "{}: estimate [95 % interval] against the scanned value",
                    m.column
                );
                svg::deltas_svg(&dir.join(&scan_name), &title, &columns)?;
                scans.push(scan_name);
            } else {
                scans.push(String::new());
            }
        }
        metric_svgs.push(names);
        scan_svgs.push(scans);
    }
    let mut forest_svgs = Vec::new();
    for q in &reading.replications {
        if forest_svgs
            .iter()
            .any(|(s, _): &(String, String)| *s == q.spec)
        {
            continue;
        }
        let rows: Vec<ForestRow> = reading
            .replications
            .iter()
            .filter(|r| r.spec == q.spec)
            .flat_map(|r| {
                (0..r.ladders.len()).map(move |i| ForestRow {
                    label: format!("{} · {}", r.quantity, r.ladders[i]),
                    estimate: r.estimates_pct[i],
                    ci: (r.ci_low_pct[i], r.ci_high_pct[i]),
                    marked: !r.qualified[i],
                })
            })
            .collect();
        let name = format!("{stem}_across_{}.svg", file_part(&q.spec));
        svg::forest_svg(
            &dir.join(&name),
            &format!("{}: each quantity per ladder", q.spec),
            &rows,
        )?;
        forest_svgs.push((q.spec.clone(), name));
    }
    let doc = Doc {
        reports: &reading.reports,
        replications: &reading.replications,
        pairs: &reading.pairs,
        metric_svgs: &metric_svgs,
        scan_svgs: &scan_svgs,
        forest_svgs: &forest_svgs,
        extras: reading.extras,
    };
    std::fs::write(path, render(&doc))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
