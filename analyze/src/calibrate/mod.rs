//! `analyze calibrate SPEC…`: the error rates of the report's rules on simulated ladders of a
//! spec's own design (METHOD.md "Calibration").
//!
//! Each simulated ladder has the spec's arms, roles, passes, order, seed, warm-up and looks,
//! and no true effect (or `--effect-pct` on the `arm` arms), under one noise model; it is
//! read by [`analysis::read_metric`], the very function the report uses, so what is measured
//! here is what a report says.

use crate::analysis::{self, Design, MetricReport};
use crate::frames::{self, Grid, SeriesKind};
use crate::stats::Spread;
use anyhow::Context;
use ladder::spec::{Better, MetricSpec, Spec};
use ladder::stop::sample_sd;
use ladder::{Order, Role};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use rayon::prelude::*;
use serde::Serialize;
use statrs::distribution::{Beta, ContinuousCDF};
use std::fmt::Write;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// Ladder specs (TOML) whose design is simulated; several are also pooled.
    #[arg(required = true)]
    pub specs: Vec<PathBuf>,
    /// Noise of one cell, in percent (one standard deviation of `ln x`, ×100).
    #[arg(long, default_value_t = 1.0)]
    pub noise_pct: f64,
    /// Take the noise scale and the drift from a real ladder's residuals instead.
    #[arg(long, value_name = "FILE")]
    pub noise_from: Option<PathBuf>,
    /// A true effect on every `arm`-role arm, in percent: adds coverage and power.
    #[arg(long)]
    pub effect_pct: Option<f64>,
    /// Simulated ladders per spec and noise model.
    #[arg(long, default_value_t = 1000)]
    pub ladders: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The carry-over model's effect: a cell after the carrying arm is this much slower.
    #[arg(long, default_value_t = 1.0)]
    pub carry_over_pct: f64,
    /// Only these noise models (comma-separated names, as printed).
    #[arg(long, value_delimiter = ',')]
    pub models: Vec<String>,
    /// Print the results as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// How the simulated cells vary around the arms' true levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoiseModel {
    Independent,
    RandomWalk,
    Ar1,
    HeavyTails,
    SlotEffect,
    CarryOver,
}

impl NoiseModel {
    pub const ALL: [NoiseModel; 6] = [
        NoiseModel::Independent,
        NoiseModel::RandomWalk,
        NoiseModel::Ar1,
        NoiseModel::HeavyTails,
        NoiseModel::SlotEffect,
        NoiseModel::CarryOver,
    ];

    pub fn name(self) -> &'static str {
        match self {
            NoiseModel::Independent => "independent",
            NoiseModel::RandomWalk => "random-walk",
            NoiseModel::Ar1 => "ar1",
            NoiseModel::HeavyTails => "heavy-tails",
            NoiseModel::SlotEffect => "slot-effect",
            NoiseModel::CarryOver => "carry-over",
        }
    }

    /// In words, for the tables.
    pub fn words(self, scale: &Scale) -> String {
        match self {
            NoiseModel::Independent => "independent normal cells".into(),
            NoiseModel::RandomWalk => format!(
                "random-walk drift, step {:.3} % a cell, plus independent noise",
                100.0 * scale.walk
            ),
            NoiseModel::Ar1 => "AR(1) over the cells in time order, ρ 0.7".into(),
            NoiseModel::HeavyTails => "t with 3 df, scaled to the same sd".into(),
            NoiseModel::SlotEffect => {
                "slot 0 slower by one noise sd, plus independent noise".into()
            }
            NoiseModel::CarryOver => format!(
                "a cell after the carrying arm {:.2} % slower, plus independent noise",
                100.0 * scale.carry
            ),
        }
    }

    /// The models the false-positive targets are set for.
    pub fn targeted(self) -> bool {
        matches!(
            self,
            NoiseModel::Independent
                | NoiseModel::RandomWalk
                | NoiseModel::Ar1
                | NoiseModel::HeavyTails
        )
    }
}

/// The noise scales, in log units.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Scale {
    /// sd of one cell.
    pub sigma: f64,
    /// sd of one random-walk step between consecutive cells.
    pub walk: f64,
    /// The carry-over model's slowdown.
    pub carry: f64,
}

/// A spec's design, as simulated.
struct Plan {
    design: Design,
    order: Order,
    warmup: usize,
    stop: Option<ladder::spec::StopSpec>,
    /// The true log effect of each arm.
    effect: Vec<f64>,
    /// The arm whose cells slow the next one under the carry-over model.
    carrier: usize,
}

/// One simulated ladder's reading, boiled down to what is counted.
struct Tally {
    /// Verdicts of arms with no true effect, and how many were resolved.
    null_verdicts: usize,
    false_verdicts: usize,
    /// Any Holm verdict resolved among the arms with no true effect.
    holm_false: bool,
    gate: bool,
    /// Per control (in design order): did it fail.
    controls: Vec<bool>,
    disqualified: bool,
    order_sensitive: bool,
    /// For each `arm` arm with a true effect: (covered, resolved better).
    effect: Vec<(bool, bool)>,
    /// Estimates of the arms with no true effect, and with carry-over removed (when estimable).
    estimates: Vec<f64>,
    carry_free: Vec<f64>,
    passes: usize,
}

/// The rates of one spec under one model.
#[derive(Debug, Serialize)]
pub struct Rates {
    pub spec: String,
    pub model: NoiseModel,
    pub ladders: usize,
    pub verdicts: usize,
    pub false_positives: usize,
    pub false_positive_rate: f64,
    pub false_positive_ci: (f64, f64),
    pub holm_familywise_rate: f64,
    pub disqualified_rate: f64,
    pub gate_rate: f64,
    pub control_rates: Vec<(String, f64)>,
    /// Ladders where any control failed.
    pub control_failure_rate: f64,
    pub order_sensitive_rate: f64,
    pub coverage: Option<f64>,
    pub power: Option<f64>,
    pub mean_estimate_pct: f64,
    /// Mean carry-over-free estimate of the arms with no true effect (its bias), and how
    /// many ladders could estimate it.
    pub carry_free_bias_pct: Option<f64>,
    pub mean_passes: f64,
}

/// The 95 % Clopper–Pearson interval of `k` successes in `n`.
pub fn clopper_pearson(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let (kf, nf) = (k as f64, n as f64);
    let lo = if k == 0 {
        0.0
    } else {
        Beta::new(kf, nf - kf + 1.0).map_or(f64::NAN, |b| b.inverse_cdf(0.025))
    };
    let hi = if k == n {
        1.0
    } else {
        Beta::new(kf + 1.0, nf - kf).map_or(f64::NAN, |b| b.inverse_cdf(0.975))
    };
    (lo, hi)
}

fn plan(spec: &Spec, effect_pct: Option<f64>) -> anyhow::Result<Plan> {
    let names: Vec<String> = spec.arms.iter().map(|a| a.name.clone()).collect();
    let roles: Vec<Role> = spec.arms.iter().map(|a| a.role).collect();
    let base = roles
        .iter()
        .position(|r| *r == Role::Base)
        .context("the spec has no base arm")?;
    let effect = roles
        .iter()
        .map(|r| match (r, effect_pct) {
            (Role::Arm, Some(e)) => (1.0 + e / 100.0).ln(),
            _ => 0.0,
        })
        .collect();
    let carrier = roles
        .iter()
        .rposition(|r| *r == Role::Arm)
        .unwrap_or(names.len() - 1);
    Ok(Plan {
        order: Order::new(spec.order, names.clone(), spec.passes(), spec.seed),
        design: Design {
            names,
            roles,
            base,
            noise_limit_pct: spec.noise_limit_pct,
            equivalence_margin_pct: spec.equivalence_margin_pct,
        },
        warmup: spec.warmup_passes,
        stop: spec.stop.clone(),
        effect,
        carrier,
    })
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut SmallRng) -> f64 {
    let u: f64 = 1.0 - rng.random::<f64>();
    let v: f64 = rng.random::<f64>();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// A t draw with 3 df, scaled to unit variance.
fn heavy(rng: &mut SmallRng) -> f64 {
    let chi2: f64 = (0..3).map(|_| normal(rng).powi(2)).sum();
    normal(rng) / (chi2 / 3.0).sqrt() / 3f64.sqrt()
}

/// One simulated ladder's grid: every cell of the order, in time order.
fn simulate(plan: &Plan, model: NoiseModel, scale: &Scale, rng: &mut SmallRng) -> Grid {
    let (passes, n) = (plan.order.passes, plan.order.n_arms());
    let mut grid = Grid::new(passes, n);
    let (mut walk, mut ar, mut prev) = (0.0, 0.0, None);
    for cell in plan.order.cells() {
        let sigma = scale.sigma;
        let noise = match model {
            NoiseModel::Independent | NoiseModel::SlotEffect | NoiseModel::CarryOver => {
                sigma * normal(rng)
            }
            NoiseModel::RandomWalk => {
                walk += scale.walk * normal(rng);
                walk + sigma * normal(rng)
            }
            NoiseModel::Ar1 => {
                const RHO: f64 = 0.7;
                ar = RHO * ar + (1.0 - RHO * RHO).sqrt() * sigma * normal(rng);
                ar
            }
            NoiseModel::HeavyTails => sigma * heavy(rng),
        };
        let order_term = match model {
            NoiseModel::SlotEffect if cell.slot == 0 => -sigma,
            NoiseModel::CarryOver if prev == Some(plan.carrier) => -scale.carry,
            _ => 0.0,
        };
        let at = cell.pass * n + cell.arm;
        grid.values[at] = (plan.effect[cell.arm] + noise + order_term).exp();
        grid.slots[at] = cell.slot as u32;
        prev = Some(cell.arm);
    }
    grid
}

/// The passes a `[stop]` ladder runs, by the runner's rule on the simulated first look.
fn passes_run(plan: &Plan, grid: &Grid, metric: &MetricSpec) -> usize {
    let Some(stop) = &plan.stop else {
        return plan.order.passes;
    };
    let first = plan.warmup..stop.first_look().min(plan.order.passes);
    let base = plan.design.base;
    let need = (0..plan.design.names.len())
        .filter(|&a| a != base)
        .map(|a| {
            stop.passes_needed(&analysis::paired_logs(
                grid,
                metric.better,
                a,
                base,
                first.clone(),
            ))
        })
        .fold(f64::NAN, f64::max);
    stop.stopping_look(plan.warmup, need)
        .0
        .min(plan.order.passes)
}

fn read_one(plan: &Plan, model: NoiseModel, scale: &Scale, seed: u64) -> Tally {
    let mut rng = SmallRng::seed_from_u64(seed);
    let metric = MetricSpec {
        column: "simulated".into(),
        better: Better::Higher,
        row: 0,
    };
    let grid = simulate(plan, model, scale, &mut rng);
    let passes = passes_run(plan, &grid, &metric);
    let spread = match &plan.stop {
        Some(stop) => Spread::FirstLook(stop.first_look().saturating_sub(plan.warmup)),
        None => Spread::Own,
    };
    let m = analysis::read_metric(
        &plan.design,
        &metric,
        &grid,
        plan.warmup..passes,
        spread,
        None,
    );
    tally(plan, &m, passes)
}

fn tally(plan: &Plan, m: &MetricReport, passes: usize) -> Tally {
    let index = |name: &str| {
        plan.design
            .names
            .iter()
            .position(|n| n == name)
            .unwrap_or(0)
    };
    let mut t = Tally {
        null_verdicts: 0,
        false_verdicts: 0,
        holm_false: false,
        gate: !m.within_noise_limit,
        controls: m
            .controls
            .iter()
            .filter(|c| c.holds.is_some())
            .map(|c| c.holds == Some(false))
            .collect(),
        disqualified: !analysis::disqualifications(std::slice::from_ref(m)).is_empty(),
        order_sensitive: m.order_effects.sensitive(),
        effect: Vec::new(),
        estimates: Vec::new(),
        carry_free: Vec::new(),
        passes,
    };
    for a in &m.arms {
        let truth = plan.effect[index(&a.arm)];
        if truth == 0.0 {
            t.null_verdicts += 1;
            t.false_verdicts += usize::from(a.figures.verdict != "not resolved");
            t.holm_false |= a.holm_verdict != "not resolved";
            t.estimates.push(a.figures.estimate_pct);
        } else {
            let truth_pct = 100.0 * truth.exp_m1();
            let f = &a.figures;
            t.effect.push((
                f.ci_low_pct <= truth_pct && truth_pct <= f.ci_high_pct,
                f.verdict == "better",
            ));
        }
    }
    for c in &m.order_effects.carry_free {
        if plan.effect[index(&c.arm)] == 0.0 {
            t.carry_free.push(c.estimate_pct);
        }
    }
    t
}

fn rate(k: usize, n: usize) -> f64 {
    k as f64 / n.max(1) as f64
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, count) = values.fold((0.0, 0usize), |(s, c), v| (s + v, c + 1));
    (count > 0).then(|| sum / count as f64)
}

fn rates(spec: &str, plan: &Plan, model: NoiseModel, tallies: &[Tally]) -> Rates {
    let n = tallies.len();
    let verdicts: usize = tallies.iter().map(|t| t.null_verdicts).sum();
    let false_positives: usize = tallies.iter().map(|t| t.false_verdicts).sum();
    let count = |f: &dyn Fn(&Tally) -> bool| tallies.iter().filter(|t| f(t)).count();
    let controls: Vec<String> = (0..plan.design.names.len())
        .filter(|&a| plan.design.roles[a].is_inert_control())
        .map(|a| plan.design.names[a].clone())
        .collect();
    let effects: Vec<(bool, bool)> = tallies
        .iter()
        .flat_map(|t| t.effect.iter().copied())
        .collect();
    Rates {
        spec: spec.to_string(),
        model,
        ladders: n,
        verdicts,
        false_positives,
        false_positive_rate: rate(false_positives, verdicts),
        false_positive_ci: clopper_pearson(false_positives, verdicts),
        holm_familywise_rate: rate(count(&|t| t.holm_false), n),
        disqualified_rate: rate(count(&|t| t.disqualified), n),
        gate_rate: rate(count(&|t| t.gate), n),
        control_rates: controls
            .iter()
            .enumerate()
            .map(|(i, name)| {
                (
                    name.clone(),
                    rate(count(&|t| t.controls.get(i) == Some(&true)), n),
                )
            })
            .collect(),
        control_failure_rate: rate(count(&|t| t.controls.iter().any(|&f| f)), n),
        order_sensitive_rate: rate(count(&|t| t.order_sensitive), n),
        coverage: (!effects.is_empty())
            .then(|| rate(effects.iter().filter(|e| e.0).count(), effects.len())),
        power: (!effects.is_empty())
            .then(|| rate(effects.iter().filter(|e| e.1).count(), effects.len())),
        mean_estimate_pct: mean(tallies.iter().flat_map(|t| t.estimates.iter().copied()))
            .unwrap_or(f64::NAN),
        carry_free_bias_pct: mean(tallies.iter().flat_map(|t| t.carry_free.iter().copied())),
        mean_passes: mean(tallies.iter().map(|t| t.passes as f64)).unwrap_or(f64::NAN),
    }
}

/// The noise scale and drift of a real ladder: `σ̂` of the additive model over its first
/// metric, and the sd of the steps of `μ[p]` spread over the cells of a pass.
fn scale_from(path: &PathBuf) -> anyhow::Result<(f64, f64)> {
    let loaded = frames::load(&[path], false)?;
    let grids = frames::grids(&loaded)?;
    let file = &loaded.files[0];
    let info = file
        .ladder
        .as_ref()
        .filter(|i| i.analyzed)
        .with_context(|| {
            format!(
                "{}: {}; --noise-from needs one connected ladder",
                path.display(),
                file.verdict.summary()
            )
        })?;
    let series = info
        .series
        .iter()
        .position(|s| matches!(s, SeriesKind::Metric(_)))
        .context("the ladder has no metric")?;
    let SeriesKind::Metric(k) = info.series[series] else {
        unreachable!("position found a metric")
    };
    let cells = analysis::model_cells(
        &grids[0][series],
        info.metrics[k].better,
        info.analysis_passes(),
    )
    .with_context(|| {
        format!(
            "{}: fewer than two complete analysis passes",
            path.display()
        )
    })?;
    let sigma = cells.additive_sigma2().sqrt();
    let mu: Vec<f64> = cells
        .y
        .chunks(cells.arms)
        .map(|row| row.iter().sum::<f64>() / row.len() as f64)
        .collect();
    let steps: Vec<f64> = mu.windows(2).map(|w| w[1] - w[0]).collect();
    let step_sd = if steps.len() >= 2 {
        sample_sd(&steps)
    } else {
        0.0
    };
    Ok((sigma, step_sd / (cells.arms as f64).sqrt()))
}

/// Every spec under every model asked for.
pub fn calibrate(args: &CalibrateArgs) -> anyhow::Result<(Scale, Vec<Rates>)> {
    let scale = match &args.noise_from {
        Some(path) => {
            let (sigma, walk) = scale_from(path)?;
            Scale {
                sigma,
                walk,
                carry: args.carry_over_pct / 100.0,
            }
        }
        None => {
            let sigma = args.noise_pct / 100.0;
            Scale {
                sigma,
                walk: sigma / 2.0,
                carry: args.carry_over_pct / 100.0,
            }
        }
    };
    let models: Vec<NoiseModel> = if args.models.is_empty() {
        NoiseModel::ALL.to_vec()
    } else {
        args.models
            .iter()
            .map(|m| {
                NoiseModel::ALL
                    .into_iter()
                    .find(|x| x.name() == m)
                    .with_context(|| {
                        let names: Vec<&str> = NoiseModel::ALL.iter().map(|x| x.name()).collect();
                        format!(
                            "--models: unknown noise model {m:?}; use some of {}",
                            names.join(", ")
                        )
                    })
            })
            .collect::<anyhow::Result<_>>()?
    };
    let mut out = Vec::new();
    for (s, path) in args.specs.iter().enumerate() {
        let loaded = Spec::load(path).map_err(|e| anyhow::anyhow!("{e}"))?;
        let plan =
            plan(&loaded.spec, args.effect_pct).with_context(|| path.display().to_string())?;
        for (k, &model) in models.iter().enumerate() {
            let base_seed = args.seed ^ ((s as u64) << 40) ^ ((k as u64) << 32);
            let tallies: Vec<Tally> = (0..args.ladders)
                .into_par_iter()
                .map(|i| {
                    read_one(
                        &plan,
                        model,
                        &scale,
                        base_seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i as u64,
                    )
                })
                .collect();
            out.push(rates(&path.display().to_string(), &plan, model, &tallies));
        }
    }
    Ok((scale, out))
}

fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{:.1} %", 100.0 * v)
    } else {
        "n/a".into()
    }
}

/// The tables: one per spec, a row per model; then the pooled false-positive rates.
pub fn render(args: &CalibrateArgs, scale: &Scale, all: &[Rates]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ladders per spec and model; cell noise {:.3} %{}; seed {}{}",
        args.ladders,
        100.0 * scale.sigma,
        args.noise_from
            .as_ref()
            .map_or(String::new(), |p| format!(" (from {})", p.display())),
        args.seed,
        args.effect_pct
            .map_or(", no true effect".into(), |e| format!(
                ", true effect {e} % on the `arm` arms"
            ))
    );
    let mut specs: Vec<&str> = Vec::new();
    for r in all {
        if !specs.contains(&r.spec.as_str()) {
            specs.push(&r.spec);
        }
    }
    for spec in &specs {
        let _ = writeln!(out, "\n{spec}\n");
        out.push_str("| model | false positives [95 % CI] | Holm family | disqualified (gate; controls) | order-sensitive | coverage | power | mean estimate | carry-free bias | mean passes |\n");
        out.push_str("|---|---|---:|---|---:|---:|---:|---:|---:|---:|\n");
        for r in all.iter().filter(|r| r.spec == *spec) {
            let controls: Vec<String> = r
                .control_rates
                .iter()
                .map(|(n, v)| format!("{n} {}", pct(*v)))
                .collect();
            let _ = writeln!(
                out,
                "| {} | {} [{}, {}] ({}/{}) | {} | {} ({}; {}) | {} | {} | {} | {:+.3} % | {} | {:.1} |",
                r.model.name(),
                pct(r.false_positive_rate),
                pct(r.false_positive_ci.0),
                pct(r.false_positive_ci.1),
                r.false_positives,
                r.verdicts,
                pct(r.holm_familywise_rate),
                pct(r.disqualified_rate),
                pct(r.gate_rate),
                if controls.is_empty() { "none".into() } else { controls.join(", ") },
                pct(r.order_sensitive_rate),
                r.coverage.map_or("n/a".into(), pct),
                r.power.map_or("n/a".into(), pct),
                r.mean_estimate_pct,
                r.carry_free_bias_pct.map_or("n/a".into(), |b| format!("{b:+.3} %")),
                r.mean_passes
            );
        }
    }
    out.push_str("\nPooled over the specs:\n\n| model | false positives [95 % CI] | worst spec | disqualified | control failures | order-sensitive | coverage |\n|---|---|---:|---:|---:|---:|---:|\n");
    let pooled = |rows: Vec<&Rates>, label: &str, out: &mut String| {
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
    };
    let mut models: Vec<NoiseModel> = Vec::new();
    for r in all {
        if !models.contains(&r.model) {
            models.push(r.model);
        }
    }
    for model in &models {
        pooled(
            all.iter().filter(|r| r.model == *model).collect(),
            model.name(),
            &mut out,
        );
    }
    // The models the false-positive targets are set for, pooled, when more than one ran.
    let targeted: Vec<&Rates> = all.iter().filter(|r| r.model.targeted()).collect();
    let names: Vec<&str> = models
        .iter()
        .filter(|m| m.targeted())
        .map(|m| m.name())
        .collect();
    if names.len() > 1 {
        pooled(targeted, &names.join(", "), &mut out);
    }
    out.push_str("\nModels: ");
    let words: Vec<String> = models
        .iter()
        .map(|m| format!("`{}`: {}", m.name(), m.words(scale)))
        .collect();
    out.push_str(&words.join("; "));
    out.push_str(".\n");
    out
}

pub fn run(args: &CalibrateArgs) -> anyhow::Result<i32> {
    let clock = std::time::Instant::now();
    let (scale, all) = calibrate(args)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"scale": scale, "rates": all}))?
        );
    } else {
        print!("{}", render(args, &scale, &all));
        println!("\n{:.1} s", clock.elapsed().as_secs_f64());
    }
    Ok(0)
}
