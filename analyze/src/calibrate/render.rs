//! The calibration tables: one per spec, a row per model; then the rates pooled over specs.

use super::breakdown::SHARES;
use super::rates::{rate, BreakdownRates, Count, Rates};
use super::simulate::{NoiseModel, Scale};
use super::Options;
use ladder::stats::clopper_pearson;
use std::fmt::Write;

/// A signed percent to three places, `n/a` when there is none.
fn signed_pct(v: f64) -> String {
    if v.is_finite() {
        format!("{v:+.3} %")
    } else {
        "n/a".into()
    }
}

pub fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{:.1} %", 100.0 * v)
    } else {
        "n/a".into()
    }
}

/// `4.3 % [3.1 %, 5.7 %] (43/1000)`.
pub fn count(c: &Count) -> String {
    format!(
        "{} [{}, {}] ({}/{})",
        pct(c.rate),
        pct(c.ci.0),
        pct(c.ci.1),
        c.k,
        c.n
    )
}

/// The first line: what was simulated.
fn heading(options: &Options, scale: &Scale) -> String {
    let mut words = format!(
        "{} ladders per spec and model; cell noise {:.3} %{}; seed {}",
        options.ladders,
        100.0 * scale.sigma,
        options
            .noise_from
            .as_ref()
            .map_or(String::new(), |p| format!(" (from {})", p.display())),
        options.seed,
    );
    match options.effect_pct {
        Some(e) => {
            let _ = write!(words, ", true effect {e} % on the `arm` arms");
        }
        None => words.push_str(", no true effect"),
    }
    if let Some(e) = options.control_effect_pct {
        let _ = write!(words, ", true effect {e} % on the inert controls");
    }
    if let Some(m) = options.metrics {
        let _ = write!(
            words,
            "; {m} simulated metrics, all but the last correlated at {}",
            scale.correlation
        );
    }
    words
}

/// The tables: one per spec, a row per model; then the pooled false-positive rates.
pub fn render(options: &Options, scale: &Scale, all: &[Rates]) -> String {
    let mut out = heading(options, scale);
    out.push('\n');
    let known = all.iter().any(|r| r.known_effect_held.is_some());
    let held = options.control_effect_pct.is_some();
    let rose = all.iter().any(|r| r.noise_rose.is_some());
    let mut specs: Vec<&str> = Vec::new();
    for r in all {
        if !specs.contains(&r.spec.as_str()) {
            specs.push(&r.spec);
        }
    }
    for spec in &specs {
        let _ = writeln!(out, "\n{spec}\n");
        out.push_str("| model | false positives [95 % CI] | Holm family | disqualified [95 % CI] (gate; controls) | order-sensitive | drifts within passes | coverage | power |");
        if known {
            out.push_str(" known effect held [95 % CI] |");
        }
        if held {
            out.push_str(" inert controls held [95 % CI] |");
        }
        out.push_str(" mean estimate | carry-free bias (held [95 % CI]) | mean passes |");
        if rose {
            out.push_str(" noise rose after the first look [95 % CI] |");
        }
        out.push_str("\n|---|---|---:|---|---:|---:|---:|---:|");
        out.push_str(&"---|".repeat(usize::from(known) + usize::from(held)));
        out.push_str("---:|---:|---:|");
        out.push_str(if rose { "---|\n" } else { "\n" });
        for r in all.iter().filter(|r| r.spec == *spec) {
            spec_row(r, known, held, rose, &mut out);
        }
    }
    breakdown_table(all, &mut out);
    pooled_tables(all, scale, &mut out);
    out
}

/// The breakdown's rates, for the specs with `[breakdown]`.
fn breakdown_table(all: &[Rates], out: &mut String) {
    let rows: Vec<(&Rates, &BreakdownRates)> = all
        .iter()
        .filter_map(|r| r.breakdown.as_ref().map(|b| (r, b)))
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push_str(
        "
Breakdown (METHOD.md \"Breakdown\"; simulated keys with shares ",
    );
    let shares: Vec<String> = SHARES.iter().map(|s| format!("{s}")).collect();
    out.push_str(&shares.join(", "));
    out.push_str(", key 0 of each `arm` arm slowed by the true effect):\n\n");
    out.push_str("| spec | model | arms with a key wrongly resolved after Holm [95 % CI] | slowed key's interval held the truth [95 % CI] | slowed key resolved | closure said not to add up [95 % CI] | keys' control failed [95 % CI] |\n|---|---|---|---|---|---|---|\n");
    for (r, b) in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.spec,
            r.model,
            count(&b.false_families),
            b.covered.as_ref().map_or("n/a".into(), count),
            b.resolved.as_ref().map_or("n/a".into(), count),
            count(&b.not_adding_up),
            b.controls_failed.as_ref().map_or("n/a".into(), count),
        );
    }
}

fn spec_row(r: &Rates, known: bool, held: bool, rose: bool, out: &mut String) {
    let controls: Vec<String> = r
        .control_rates
        .iter()
        .map(|(n, v)| format!("{n} {}", pct(*v)))
        .collect();
    let _ = write!(
        out,
        "| {} | {} [{}, {}] ({}/{}) | {} | {} ({}; {}) | {} | {} | {} | {} |",
        r.model,
        pct(r.false_positive_rate),
        pct(r.false_positive_ci.0),
        pct(r.false_positive_ci.1),
        r.false_positives,
        r.verdicts,
        pct(r.holm_familywise_rate),
        count(&r.disqualified),
        pct(r.gate_rate),
        if controls.is_empty() {
            "none".into()
        } else {
            controls.join(", ")
        },
        pct(r.order_sensitive_rate),
        pct(r.drifting_rate),
        r.coverage.map_or("n/a".into(), pct),
        r.power.map_or("n/a".into(), pct),
    );
    if known {
        let _ = write!(
            out,
            " {} |",
            r.known_effect_held.as_ref().map_or("n/a".into(), count)
        );
    }
    if held {
        let _ = write!(out, " {} |", count(&r.inert_held));
    }
    let _ = write!(
        out,
        " {} | {} | {:.1} |",
        signed_pct(r.mean_estimate_pct),
        carry_free(r),
        r.mean_passes
    );
    if rose {
        let _ = write!(
            out,
            " {} |",
            r.noise_rose.as_ref().map_or("n/a".into(), count)
        );
    }
    out.push('\n');
}

/// The carry-over-free estimates' bias, and how often their intervals held the truth.
fn carry_free(r: &Rates) -> String {
    let bias = signed_pct(r.carry_free_bias_pct.unwrap_or(f64::NAN));
    match &r.carry_free_held {
        Some(held) => format!("{bias} (held {})", count(held)),
        None => bias,
    }
}

fn pooled_tables(all: &[Rates], scale: &Scale, out: &mut String) {
    out.push_str("\nPooled over the specs:\n\n| model | false positives [95 % CI] | worst spec | disqualified | control failures | order-sensitive | coverage |\n|---|---|---:|---:|---:|---:|---:|\n");
    let mut models: Vec<NoiseModel> = Vec::new();
    for r in all {
        if !models.contains(&r.model) {
            models.push(r.model);
        }
    }
    for model in &models {
        pooled(
            all.iter().filter(|r| r.model == *model).collect(),
            &model.to_string(),
            out,
        );
    }
    // The models the false-positive targets are set for, pooled, when more than one ran.
    let names: Vec<String> = models
        .iter()
        .filter(|m| m.targeted())
        .map(|m| m.to_string())
        .collect();
    if names.len() > 1 {
        let targeted = all.iter().filter(|r| r.model.targeted()).collect();
        pooled(targeted, &names.join(", "), out);
    }
    out.push_str("\nModels: ");
    let words: Vec<String> = models
        .iter()
        .map(|m| format!("`{m}`: {}", m.words(scale)))
        .collect();
    out.push_str(&words.join("; "));
    out.push_str(".\n");
}

fn pooled(rows: Vec<&Rates>, label: &str, out: &mut String) {
    let (k, n): (usize, usize) = rows
        .iter()
        .fold((0, 0), |(k, n), r| (k + r.false_positives, n + r.verdicts));
    let ladders: usize = rows.iter().map(|r| r.ladders).sum();
    let weighted = |f: &dyn Fn(&Rates) -> f64| {
        rows.iter().map(|r| f(r) * r.ladders as f64).sum::<f64>() / ladders.max(1) as f64
    };
    let coverage = match rows.iter().all(|r| r.coverage.is_some()) {
        true => pct(weighted(&|r| r.coverage.unwrap_or(f64::NAN))),
        false => "n/a".into(),
    };
    let worst = rows
        .iter()
        .map(|r| r.false_positive_rate)
        .fold(f64::NAN, f64::max);
    let ci = clopper_pearson(k, n);
    let _ = writeln!(
        out,
        "| {label} | {} [{}, {}] ({k}/{n}) | {} | {} | {} | {} | {coverage} |",
        pct(rate(k, n)),
        pct(ci.0),
        pct(ci.1),
        pct(worst),
        pct(weighted(&|r| r.disqualified_rate)),
        pct(weighted(&|r| r.control_failure_rate)),
        pct(weighted(&|r| r.order_sensitive_rate))
    );
}
