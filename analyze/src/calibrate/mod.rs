//! `analyze calibrate SPEC…`: the error rates of the report's rules on simulated ladders of a
//! spec's own design (METHOD.md "Calibration"); `--live FILES…`: the same rates measured on
//! real ladders beside those of their simulated twins.
//!
//! Each simulated ladder has the spec's arms, roles, passes, order, seed, warm-up, looks and
//! metrics, and no true effect (or `--effect-pct` on the `arm` arms, each known-effect arm's
//! `expected_pct`, `--control-effect-pct` on the inert controls), under one noise model; it
//! is read by [`analysis::read_metric`], the very function the report uses, so what is
//! measured here is what a report says.

mod breakdown;
mod known_offset;
mod live;
mod rates;
mod render;
pub(crate) mod simulate;

pub use known_offset::PooledOffset;
pub use live::{ledger, render_ledger, Ledger, LedgerRow};
pub use rates::{Count, Rates};
pub use render::render;
pub use simulate::{NoiseModel, Scale};

use crate::analysis::{self, Design, MetricReport, MetricSpread};
use crate::frames::{self, Grid, SeriesKind};
use anyhow::Context;
use clap::ValueEnum;
use ladder::breakdown::BreakdownSpec;
use ladder::spec::{ArmSpec, Better, MetricSpec, Spec, StopSpec};
use ladder::stats::{sample_sd, Spread};
use ladder::stop::MetricValues;
use ladder::{Order, Role, Scheme};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rayon::prelude::*;
use std::ops::Range;
use std::path::PathBuf;

/// What `analyze calibrate` simulates.
#[derive(Clone, Debug)]
pub struct Options {
    pub specs: Vec<PathBuf>,
    /// sd of one cell's `ln x`, in percent.
    pub noise_pct: f64,
    /// Take the noise scale and drift from a real ladder instead.
    pub noise_from: Option<PathBuf>,
    /// A true effect on every `arm`-role arm.
    pub effect_pct: Option<f64>,
    /// A true effect on every inert control.
    pub control_effect_pct: Option<f64>,
    /// Simulate this many metrics instead of the spec's own.
    pub metrics: Option<usize>,
    /// The correlation of the metrics that share a factor.
    pub correlation: f64,
    pub ladders: usize,
    pub seed: u64,
    pub carry_over_pct: f64,
    /// The noise models; empty means all.
    pub models: Vec<NoiseModel>,
}

/// A design as simulated: a spec's, or a real ladder's for the live ledger.
pub struct Plan {
    design: Design,
    /// The metrics simulated, each read as `higher` (the rules are symmetric).
    metrics: Vec<MetricSpec>,
    order: Order,
    warmup: usize,
    stop: Option<StopSpec>,
    /// The true log effect of each arm on each metric: `effect[metric][arm]`.
    effect: Vec<Vec<f64>>,
    /// Each metric's noise, as a multiple of the scale's `sigma`.
    noise: Vec<f64>,
    /// The arm whose cells slow the next one under the carry-over model.
    carrier: usize,
    /// The spec's `[breakdown]`, simulated beside the metrics, and each arm's true log
    /// effect on its key 0.
    breakdown: Option<BreakdownSpec>,
    key_effects: Vec<f64>,
}

/// The true effects given to the arms, by role.
#[derive(Clone, Copy, Debug, Default)]
pub struct Effects {
    pub arm_pct: Option<f64>,
    pub control_pct: Option<f64>,
}

/// The arms and their order, as simulated.
pub struct Shape {
    pub scheme: Scheme,
    pub passes: usize,
    pub seed: Option<u64>,
    pub warmup: usize,
}

impl Plan {
    /// The design of `arms` in `shape`, read on `metrics` with the spec's limits.
    pub fn new(
        spec: &Spec,
        arms: &[ArmSpec],
        shape: Shape,
        metrics: Vec<MetricSpec>,
        effects: Effects,
    ) -> anyhow::Result<Plan> {
        anyhow::ensure!(
            arms.iter().any(|a| a.role == Role::Base),
            "the spec has no base arm"
        );
        let log = |pct: f64| (1.0 + pct / 100.0).ln();
        let effect = metrics
            .iter()
            .map(|m| {
                arms.iter()
                    .map(|a| match a.role {
                        Role::Arm => effects.arm_pct.map_or(0.0, log),
                        Role::KnownEffect => a.expected_on(&m.column).map_or(0.0, log),
                        r if r.is_inert_control() => effects.control_pct.map_or(0.0, log),
                        _ => 0.0,
                    })
                    .collect()
            })
            .collect();
        let carrier = arms
            .iter()
            .rposition(|a| a.role == Role::Arm)
            .unwrap_or(arms.len() - 1);
        let names = arms.iter().map(|a| a.name.clone()).collect();
        Ok(Plan {
            design: Design::new(
                arms,
                &metrics,
                spec.noise_limit_pct,
                spec.equivalence_margin_pct,
            ),
            noise: vec![1.0; metrics.len()],
            metrics,
            order: Order::new(shape.scheme, names, shape.passes, shape.seed),
            warmup: shape.warmup,
            stop: spec.stop.clone(),
            effect,
            carrier,
            breakdown: spec.breakdown.clone(),
            key_effects: breakdown::key_effects(
                &arms.iter().map(|a| a.role).collect::<Vec<_>>(),
                effects.arm_pct,
            ),
        })
    }

    /// A spec's own design; `metrics` replaces its metrics with that many simulated ones.
    fn of_spec(spec: &Spec, metrics: Option<usize>, effects: Effects) -> anyhow::Result<Plan> {
        let simulated = |column| MetricSpec {
            column,
            better: Better::Higher,
            row: 0,
            noise_limit_pct: None,
        };
        let metrics = match metrics {
            Some(m) => (1..=m)
                .map(|k| simulated(format!("simulated-{k}")))
                .collect(),
            // The spec's own metrics keep their noise limits.
            None => spec
                .effective_metrics()
                .into_iter()
                .map(|m| MetricSpec {
                    better: Better::Higher,
                    row: 0,
                    ..m
                })
                .collect(),
        };
        let shape = Shape {
            scheme: spec.order,
            passes: spec.passes(),
            seed: spec.seed,
            warmup: spec.warmup_passes,
        };
        Plan::new(spec, &spec.arms, shape, metrics, effects)
    }

    /// The passes a `[stop]` ladder runs: the runner's rule on the simulated first look.
    fn passes_run(&self, grids: &[Grid]) -> usize {
        let Some(stop) = &self.stop else {
            return self.order.passes;
        };
        let first = stop.first_look().min(self.order.passes);
        let metrics: Vec<MetricValues> = self
            .metrics
            .iter()
            .zip(grids)
            .map(|(m, g)| MetricValues {
                metric: m.column.clone(),
                values: (0..first)
                    .map(|p| (0..g.arms).map(|a| Some(g.value(p, a))).collect())
                    .collect(),
            })
            .collect();
        let plan = stop.plan(self.warmup, self.design.base, &self.design.names, &metrics);
        plan.look.min(self.order.passes)
    }

    /// The spread of one metric's intervals over the analysis passes `passes`, as the report
    /// takes it from its grid.
    fn spread(&self, grid: &Grid, passes: Range<usize>) -> MetricSpread {
        match &self.stop {
            Some(stop) => {
                MetricSpread::stopped(stop, self.warmup, &analysis::grid_values(grid), passes)
            }
            None => MetricSpread::OWN,
        }
    }

    /// One simulated ladder, read metric by metric as the report reads it.
    fn read_one(&self, model: NoiseModel, scale: &Scale, seed: u64) -> rates::Tally {
        let mut rng = SmallRng::seed_from_u64(seed);
        let grids = simulate::simulate(self, model, scale, &mut rng);
        let passes = self.passes_run(&grids);
        let reports: Vec<MetricReport> = self
            .metrics
            .iter()
            .zip(&grids)
            .map(|(m, g)| {
                analysis::read_metric(
                    &self.design,
                    m,
                    g,
                    self.warmup..passes,
                    self.spread(g, self.warmup..passes),
                    None,
                )
            })
            .collect();
        let mut tally = rates::tally(self, &reports, passes);
        if let Some(spec) = &self.breakdown {
            let cells = breakdown::simulate(self, spec, &grids[0], scale, &mut rng);
            let spread = self
                .stop
                .as_ref()
                .map_or(Spread::Own, |stop| stop.first_look_spread(self.warmup));
            tally.breakdown = Some(breakdown::tally(
                self,
                &cells,
                &self.key_effects,
                self.warmup..passes,
                spread,
            ));
        }
        tally
    }

    /// `ladders` simulated ladders under `model`, in parallel.
    fn tallies(
        &self,
        model: NoiseModel,
        scale: &Scale,
        ladders: usize,
        seed: u64,
    ) -> Vec<rates::Tally> {
        (0..ladders)
            .into_par_iter()
            .map(|i| {
                self.read_one(
                    model,
                    scale,
                    seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i as u64,
                )
            })
            .collect()
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
    let (series, k) = info
        .series
        .iter()
        .enumerate()
        .find_map(|(i, s)| match s {
            SeriesKind::Metric(k) => Some((i, *k)),
            _ => None,
        })
        .context("the ladder has no metric")?;
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

/// The scale every spec is simulated at.
fn scale_of(options: &Options) -> anyhow::Result<Scale> {
    let (sigma, walk) = match &options.noise_from {
        Some(path) => scale_from(path)?,
        None => (options.noise_pct / 100.0, options.noise_pct / 200.0),
    };
    Ok(Scale {
        sigma,
        walk,
        carry: options.carry_over_pct / 100.0,
        correlation: options.correlation,
    })
}

/// Every spec under every model asked for.
pub fn calibrate(options: &Options) -> anyhow::Result<(Scale, Vec<Rates>)> {
    let scale = scale_of(options)?;
    let models = if options.models.is_empty() {
        NoiseModel::value_variants().to_vec()
    } else {
        options.models.clone()
    };
    let effects = Effects {
        arm_pct: options.effect_pct,
        control_pct: options.control_effect_pct,
    };
    let mut out = Vec::new();
    for (s, path) in options.specs.iter().enumerate() {
        let loaded = Spec::load(path).map_err(|e| anyhow::anyhow!("{e}"))?;
        let plan = Plan::of_spec(&loaded.spec, options.metrics, effects)
            .with_context(|| path.display().to_string())?;
        for (k, &model) in models.iter().enumerate() {
            let seed = options.seed ^ ((s as u64) << 40) ^ ((k as u64) << 32);
            let tallies = plan.tallies(model, &scale, options.ladders, seed);
            out.push(rates::rates(
                &path.display().to_string(),
                &plan,
                model,
                &tallies,
            ));
        }
    }
    Ok((scale, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A simulated ladder is read with the spread the report would take from its grid.
    #[test]
    fn a_pooled_design_reads_its_intervals_with_the_pooled_spread() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for (design, pooled) in [("stop-pooled", true), ("stop-per-arm", false)] {
            let path = root.join(format!("ladders/calibrate/{design}.toml"));
            let spec = Spec::load(&path).unwrap().spec;
            let plan = Plan::of_spec(&spec, None, Effects::default()).unwrap();
            let scale = scale_of(&Options {
                specs: vec![path],
                noise_pct: 1.0,
                noise_from: None,
                effect_pct: None,
                control_effect_pct: None,
                metrics: None,
                correlation: 0.5,
                ladders: 1,
                seed: 1,
                carry_over_pct: 1.0,
                models: Vec::new(),
            })
            .unwrap();
            let mut rng = SmallRng::seed_from_u64(1);
            let grid = &simulate::simulate(&plan, NoiseModel::Independent, &scale, &mut rng)[0];
            let want = match pooled {
                true => {
                    let values = analysis::grid_values(grid);
                    let (sd, df) = ladder::pooled::pooled_spread(&values, 1..6);
                    assert_eq!(df, 8);
                    Spread::Pooled { sd, df }
                }
                false => Spread::FirstLook(5),
            };
            assert_eq!(plan.spread(grid, 1..6).spread, want, "{design}");
        }
    }
}
