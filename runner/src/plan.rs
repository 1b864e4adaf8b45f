//! `runner plan`: the legal order of a spec, its looks and each arm's argv, without
//! running anything.

use crate::words;
use anyhow::Context;
use comfy_table::{presets, Table};
use ladder::ladder_file::parse_timestamp;
use ladder::order::Order;
use ladder::spec::Spec;
use ladder::stats::{pct_of_log, sample_sd, t975, t_quantile};
use std::path::Path;

/// The pass × slot grid in words.
pub fn describe(spec: &Spec, order: &Order) -> String {
    let width = order.arms.iter().map(String::len).max().unwrap_or(4).max(6);
    let mut text = format!("{:>6}", "pass");
    for slot in 0..order.n_arms() {
        text.push_str(&format!("  {:<width$}", format!("slot {slot}")));
    }
    text.push('\n');
    let looks = spec
        .stop
        .as_ref()
        .map(|s| s.looks.clone())
        .unwrap_or_default();
    for pass in 0..order.passes {
        if looks.contains(&pass) {
            text.push_str(&format!(
                "{:>6}  -- look: may stop here ({pass} passes)\n",
                ""
            ));
        }
        let warm = if pass < spec.warmup_passes { "w" } else { " " };
        text.push_str(&format!("{:>5}{warm}", pass));
        for &arm in order.pass(pass) {
            text.push_str(&format!("  {:<width$}", order.arms[arm]));
        }
        text.push('\n');
    }
    text.push_str(&format!(
        "{} cells: {} passes × {} arms, order {}{}; the first {} pass(es) (w) are warm-up, {} are analysed\n",
        order.n_cells(),
        order.passes,
        order.n_arms(),
        order.scheme,
        order.seed.map(|s| format!(" (seed {s})")).unwrap_or_default(),
        spec.warmup_passes,
        order.passes - spec.warmup_passes
    ));
    if let Some(stop) = &spec.stop {
        let set_by = match stop.metrics.is_empty() {
            true => "every metric".to_string(),
            false => stop.metrics.join(", "),
        };
        let within = stop.within_s.map_or(String::new(), |w| {
            format!(", and to no look that its first look's seconds a pass price above within_s = {w} s of cells")
        });
        text.push_str(&format!(
            "[stop]: after the first look ({} passes) the ladder runs to the first look whose analysis passes reach a {} % half-width for {set_by}, at most {} passes{within}\n",
            stop.first_look(),
            stop.halfwidth_pct,
            order.passes
        ));
    }
    for arm in &spec.arms {
        text.push_str(&format!(
            "arm {} ({}): {}\n",
            arm.name,
            arm.role,
            words::join(&spec.argv_of(arm))
        ));
    }
    text
}

/// What a real ladder says about a metric's noise and a cell's time.
struct Noise {
    /// The sd of one paired log ratio, per spec metric (`None` where the file lacks it).
    sd: Vec<Option<f64>>,
    /// The mean seconds a cell took.
    cell_seconds: f64,
}

/// Reads `file`'s paired log ratios of every arm against its base, pooled over arms, for
/// each of `spec`'s metrics, and the mean time of its cells.
fn noise_of(spec: &Spec, file: &Path) -> anyhow::Result<Noise> {
    let bytes = ladder::limits::read_ladder_file(file).map_err(anyhow::Error::msg)?;
    let replayed = ladder::replay(&bytes);
    let ladder = replayed.ladder.with_context(|| {
        format!(
            "{}: {}; --noise-from needs a ladder file",
            file.display(),
            replayed.verdict.summary()
        )
    })?;
    let start = &ladder.start;
    let passes = replayed.verdict.cells_found / start.arms.len().max(1);
    let base = start.base_index();
    let sd = spec
        .effective_metrics()
        .iter()
        .map(|m| {
            let values = ladder.metric_values(m, passes);
            let variances: Vec<f64> = (0..start.arms.len())
                .filter(|&a| a != base)
                .map(|a| sample_sd(&values.log_ratios(a, base, start.warmup_passes..passes)))
                .filter(|s| s.is_finite())
                .map(|s| s * s)
                .collect();
            (!variances.is_empty())
                .then(|| (variances.iter().sum::<f64>() / variances.len() as f64).sqrt())
        })
        .collect();
    let mut spans: Vec<f64> = ladder
        .rows
        .iter()
        .filter(|r| r.row == 0)
        .filter_map(|r| {
            let field = |name: &str| ladder.column(name).and_then(|i| r.fields.get(i));
            let started = parse_timestamp(field("ladder_started")?)?;
            let ended = parse_timestamp(field("ladder_ended")?)?;
            Some((ended - started) as f64 / 1e6)
        })
        .collect();
    spans.retain(|s| s.is_finite() && *s >= 0.0);
    anyhow::ensure!(
        !spans.is_empty(),
        "{}: no cell with its times; --noise-from needs a ladder that ran",
        file.display()
    );
    Ok(Noise {
        sd,
        cell_seconds: spans.iter().sum::<f64>() / spans.len() as f64,
    })
}

/// Look by look: the analysis passes, the expected time, and each metric's minimum
/// detectable effect (80 % power at the 95 % level, METHOD.md) at the noise of `file`.
pub fn precision(spec: &Spec, order: &Order, file: &Path) -> anyhow::Result<String> {
    let noise = noise_of(spec, file)?;
    let looks = spec
        .stop
        .as_ref()
        .map_or_else(|| vec![order.passes], |s| s.looks.clone());
    let metrics = spec.effective_metrics();
    let mut table = Table::new();
    table.load_preset(presets::NOTHING);
    let mut header = vec![
        "look".to_string(),
        "analysis passes".into(),
        "expected time".into(),
    ];
    header.extend(metrics.iter().map(|m| format!("MDE {}", m.column)));
    table.set_header(header);
    // Under `[stop]` every interval takes the first look's spread and its degrees of freedom.
    let df = |m: usize| match &spec.stop {
        Some(stop) => stop.interval_df(spec.warmup_passes, order.n_arms()),
        None => m.saturating_sub(1),
    };
    for look in looks {
        let m = look.saturating_sub(spec.warmup_passes);
        let seconds = (look * order.n_arms()) as f64 * noise.cell_seconds;
        let mut row = vec![look.to_string(), m.to_string(), duration(seconds)];
        for sd in &noise.sd {
            row.push(match sd {
                Some(s) if m >= 2 && df(m) >= 1 => {
                    format!("±{:.3} %", pct_of_log(mde_log(*s, m, df(m))))
                }
                _ => "n/a".into(),
            });
        }
        table.add_row(row);
    }
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    let lines: String = table
        .lines()
        .map(|l| format!("  {}\n", l.trim_end()))
        .collect();
    let sds: Vec<String> = metrics
        .iter()
        .zip(&noise.sd)
        .map(|(m, sd)| match sd {
            Some(s) => format!("{} {:.3} %", m.column, 100.0 * s),
            None => format!("{} not in the file", m.column),
        })
        .collect();
    Ok(format!(
        "At the noise of {} (the sd of one paired delta: {}; {:.2} s a cell), the smallest effect each look detects with 80 % power at the 95 % level:\n{lines}",
        file.display(),
        sds.join(", "),
        noise.cell_seconds
    ))
}

/// The minimum detectable effect, in log units, of `m` paired deltas of sd `sd` read with a
/// t interval of `df` degrees of freedom: 80 % power at the 95 % level.
fn mde_log(sd: f64, m: usize, df: usize) -> f64 {
    (t975(df) + t_quantile(0.80, df)) * sd / (m as f64).sqrt()
}

/// `45 s`, `12 min`, `3.4 h`.
fn duration(seconds: f64) -> String {
    match seconds {
        s if s < 120.0 => format!("about {s:.0} s"),
        s if s < 7200.0 => format!("about {:.0} min", s / 60.0),
        s => format!("about {:.1} h", s / 3600.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mde_is_the_two_quantiles_times_the_standard_error() {
        // t(0.975, 6) = 2.4469, t(0.80, 6) = 0.9057: 3.3526 · 0.01 / √7.
        let mde = mde_log(0.01, 7, 6);
        assert!((mde - 3.352_6 * 0.01 / 7f64.sqrt()).abs() < 1e-5, "{mde}");
        // More degrees of freedom at the same passes (a pooled first-look spread): smaller.
        assert!(mde_log(0.01, 7, 18) < mde - 0.001);
    }

    #[test]
    fn the_plan_names_the_metrics_that_set_the_stop() {
        let text = |stop: &str| {
            let source = format!(
                "name = \"s\"\ncommand = [\"engine\"]\n\
                 [[arm]]\nname = \"a\"\nrole = \"base\"\n[[arm]]\nname = \"b\"\n\
                 [[metric]]\ncolumn = \"tok_s\"\nbetter = \"higher\"\n\
                 [[metric]]\ncolumn = \"j\"\nbetter = \"lower\"\n\
                 [stop]\nhalfwidth_pct = 0.5\nlooks = [5, 8]\n{stop}"
            );
            let spec = Spec::parse(Path::new("s.toml"), &source).unwrap();
            describe(&spec, &crate::ladder_run::order_of(&spec))
        };
        assert!(text("").contains("0.5 % half-width for every metric, at most 8 passes"));
        let named = text("metrics = [\"tok_s\"]\n");
        assert!(
            named.contains("0.5 % half-width for tok_s, at most"),
            "{named}"
        );
    }
}
