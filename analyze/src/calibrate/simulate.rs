//! Simulated ladders: every cell of a design's order, in time order, under one noise model,
//! with one series per metric.

use super::Plan;
use crate::frames::Grid;
use clap::ValueEnum;
use rand::rngs::SmallRng;
use rand::RngExt;
use serde::Serialize;
use std::fmt;

/// How the simulated cells vary around the arms' true levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum NoiseModel {
    Independent,
    RandomWalk,
    Ar1,
    HeavyTails,
    SlotEffect,
    CarryOver,
    NoiseRise,
}

/// Its name as `--models` takes it and the tables print it.
impl fmt::Display for NoiseModel {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let name = self.to_possible_value().expect("every model has a name");
        f.write_str(name.get_name())
    }
}

/// How much noisier the cells are after the rise, under [`NoiseModel::NoiseRise`].
const RISE: f64 = 3.0;

impl NoiseModel {
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
            NoiseModel::NoiseRise => format!(
                "independent normal cells whose sd is {RISE}× from the first look on (a fixed ladder's middle pass)"
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
    /// The correlation of the metrics that share a factor (every metric but the last).
    pub correlation: f64,
}

/// A standard normal draw (Box–Muller).
pub fn normal(rng: &mut SmallRng) -> f64 {
    let u: f64 = 1.0 - rng.random::<f64>();
    let v: f64 = rng.random::<f64>();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// `m` standard normal draws: every one but the last shares one factor with correlation
/// `rho`, the last is independent. One metric draws exactly one normal.
fn correlated(m: usize, rho: f64, rng: &mut SmallRng) -> Vec<f64> {
    if m == 1 {
        return vec![normal(rng)];
    }
    let shared = normal(rng);
    (0..m)
        .map(|k| match k + 1 < m {
            true => rho.sqrt() * shared + (1.0 - rho).sqrt() * normal(rng),
            false => normal(rng),
        })
        .collect()
}

/// The pass from which [`NoiseModel::NoiseRise`] is noisier: the first look, or a fixed
/// ladder's middle pass.
fn rise_pass(plan: &Plan) -> usize {
    plan.stop
        .as_ref()
        .map_or(plan.order.passes / 2, |s| s.first_look())
}

/// One simulated ladder: a grid per metric, every cell of the order, in time order.
pub fn simulate(plan: &Plan, model: NoiseModel, scale: &Scale, rng: &mut SmallRng) -> Vec<Grid> {
    let (passes, n) = (plan.order.passes, plan.order.n_arms());
    let rise_pass = rise_pass(plan);
    let m = plan.metrics.len();
    let mut grids = vec![Grid::new(passes, n); m];
    let (mut walk, mut ar, mut prev) = (vec![0.0; m], vec![0.0; m], None);
    for cell in plan.order.cells() {
        let noise: Vec<f64> = match model {
            NoiseModel::Independent | NoiseModel::SlotEffect | NoiseModel::CarryOver => {
                correlated(m, scale.correlation, rng)
                    .into_iter()
                    .map(|z| scale.sigma * z)
                    .collect()
            }
            NoiseModel::NoiseRise => {
                let sigma = match cell.pass >= rise_pass {
                    true => RISE * scale.sigma,
                    false => scale.sigma,
                };
                correlated(m, scale.correlation, rng)
                    .into_iter()
                    .map(|z| sigma * z)
                    .collect()
            }
            NoiseModel::RandomWalk => {
                for w in walk.iter_mut() {
                    *w += scale.walk * normal(rng);
                }
                let z = correlated(m, scale.correlation, rng);
                (0..m).map(|k| walk[k] + scale.sigma * z[k]).collect()
            }
            NoiseModel::Ar1 => {
                const RHO: f64 = 0.7;
                let z = correlated(m, scale.correlation, rng);
                for k in 0..m {
                    ar[k] = RHO * ar[k] + (1.0 - RHO * RHO).sqrt() * scale.sigma * z[k];
                }
                ar.clone()
            }
            NoiseModel::HeavyTails => {
                // A multivariate t with 3 df: one chi-square scales every metric's normal.
                let chi2: f64 = (0..3).map(|_| normal(rng).powi(2)).sum();
                let z = correlated(m, scale.correlation, rng);
                z.iter()
                    .map(|z| scale.sigma * z / (chi2 / 3.0).sqrt() / 3f64.sqrt())
                    .collect()
            }
        };
        let order_term = match model {
            NoiseModel::SlotEffect if cell.slot == 0 => -scale.sigma,
            NoiseModel::CarryOver if prev == Some(plan.carrier) => -scale.carry,
            _ => 0.0,
        };
        let at = cell.pass * n + cell.arm;
        for (k, grid) in grids.iter_mut().enumerate() {
            let level = plan.effect[k][cell.arm] + plan.noise[k] * noise[k] + order_term;
            grid.values[at] = level.exp();
            grid.slots[at] = cell.slot as u32;
        }
        prev = Some(cell.arm);
    }
    grids
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
    use statrs::statistics::Statistics;

    /// The largest gap between the draws' empirical distribution and `cdf` (Kolmogorov's D).
    fn ks_distance(mut draws: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
        draws.sort_by(f64::total_cmp);
        let n = draws.len() as f64;
        draws
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = cdf(x);
                (f - i as f64 / n).abs().max((f - (i + 1) as f64 / n).abs())
            })
            .fold(0.0, f64::max)
    }

    fn correlation(x: &[f64], y: &[f64]) -> f64 {
        x.covariance(y) / (x.std_dev() * y.std_dev())
    }

    /// σ of 1 % a cell and nothing else.
    const PLAIN: Scale = Scale {
        sigma: 0.01,
        walk: 0.0,
        carry: 0.0,
        correlation: 0.0,
    };

    /// The plan of the calibration design `ladders/calibrate/{design}.toml`, no true effects.
    fn plan(design: &str) -> Plan {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let path = root.join(format!("ladders/calibrate/{design}.toml"));
        let spec = ladder::spec::Spec::load(&path).unwrap().spec;
        Plan::of_spec(&spec, None, super::super::Effects::default()).unwrap()
    }

    /// Every cell of `ladders` simulated ladders with its log value, in time order.
    fn log_cells(
        plan: &Plan,
        model: NoiseModel,
        scale: Scale,
        ladders: usize,
    ) -> Vec<(ladder::order::Cell, f64)> {
        let mut rng = SmallRng::seed_from_u64(5);
        (0..ladders)
            .flat_map(|_| {
                let grid = simulate(plan, model, &scale, &mut rng).remove(0);
                plan.order
                    .cells()
                    .map(move |c| (c, grid.value(c.pass, c.arm).ln()))
            })
            .collect()
    }

    /// The mean of the log values of the cells `pick` takes, less that of the others.
    fn mean_gap(cells: &[(ladder::order::Cell, f64)], pick: impl Fn(usize) -> bool) -> f64 {
        let (mut on, mut off) = ((0.0, 0.0), (0.0, 0.0));
        for (i, (_, v)) in cells.iter().enumerate() {
            let side = if pick(i) { &mut on } else { &mut off };
            *side = (side.0 + v, side.1 + 1.0);
        }
        on.0 / on.1 - off.0 / off.1
    }

    /// Each pass's cell sd in log units over `ladders` simulated ladders of the calibration
    /// design `design` under `model`, its arms' variances averaged.
    fn cell_sd_by_pass(design: &str, model: NoiseModel, scale: Scale, ladders: usize) -> Vec<f64> {
        let plan = plan(design);
        let cells = log_cells(&plan, model, scale, ladders);
        let arms = plan.order.n_arms();
        (0..plan.order.passes)
            .map(|p| {
                let variance = (0..arms)
                    .map(|a| {
                        let values = cells.iter().filter(|(c, _)| (c.pass, c.arm) == (p, a));
                        values.map(|(_, v)| *v).variance()
                    })
                    .sum::<f64>()
                    / arms as f64;
                variance.sqrt()
            })
            .collect()
    }

    #[test]
    fn the_noise_rises_threefold_at_the_first_look_or_a_fixed_ladders_middle_pass() {
        // aa-rotate-12: 12 passes, no [stop]: the middle pass is 6. stop-per-arm: looks at 6,
        // 9, 12 and 16 passes: the first look is pass 6, not its 16 passes' middle, 8.
        for design in ["aa-rotate-12", "stop-per-arm"] {
            let sd = cell_sd_by_pass(design, NoiseModel::NoiseRise, PLAIN, 400);
            for (p, sd) in sd.iter().enumerate() {
                let want = if p >= 6 { 0.03 } else { 0.01 };
                assert!((sd / want - 1.0).abs() < 0.1, "{design} pass {p}: {sd}");
            }
        }
    }

    #[test]
    fn a_random_walk_adds_one_steps_variance_a_cell() {
        // The walk takes a step before every cell: the t-th cell in time order has variance
        // σ² + t·w², and a pass of 3 arms holds cells 3p + 1 to 3p + 3.
        let scale = Scale {
            walk: 0.005,
            ..PLAIN
        };
        let sd = cell_sd_by_pass("aa-rotate-12", NoiseModel::RandomWalk, scale, 400);
        for (p, sd) in sd.iter().enumerate() {
            let steps = 3.0 * p as f64 + 2.0;
            let want = (0.01f64.powi(2) + steps * 0.005f64.powi(2)).sqrt();
            assert!((sd / want - 1.0).abs() < 0.1, "pass {p}: {sd}, not {want}");
        }
    }

    #[test]
    fn an_ar1_series_starts_at_zero_and_settles_at_the_cells_variance() {
        // From 0, the t-th cell has variance σ²·(1 − ρ^(2t)), ρ = 0.7.
        let sd = cell_sd_by_pass("aa-rotate-12", NoiseModel::Ar1, PLAIN, 400);
        for (p, sd) in sd.iter().enumerate() {
            let cells = (3 * p + 1..=3 * p + 3).map(|t| 1.0 - 0.49f64.powi(t as i32));
            let want = 0.01 * (cells.sum::<f64>() / 3.0).sqrt();
            assert!((sd / want - 1.0).abs() < 0.1, "pass {p}: {sd}, not {want}");
        }
    }

    #[test]
    fn heavy_tails_are_a_t_with_3_degrees_of_freedom_at_the_cells_sd() {
        let plan = plan("aa-rotate-12");
        let cells = log_cells(&plan, NoiseModel::HeavyTails, PLAIN, 400);
        let t3 = StudentsT::new(0.0, 0.01 / 3f64.sqrt(), 3.0).unwrap();
        let values: Vec<f64> = cells.iter().map(|(_, v)| *v).collect();
        // 14 400 cells: Kolmogorov's D exceeds 0.0163 with probability 0.1 %.
        let d = ks_distance(values, |x| t3.cdf(x));
        assert!(d < 0.0163, "D = {d}");
    }

    #[test]
    fn the_slot_effect_slows_slot_0_by_one_sd() {
        let cells = log_cells(&plan("aa-rotate-12"), NoiseModel::SlotEffect, PLAIN, 400);
        let gap = mean_gap(&cells, |i| cells[i].0.slot == 0);
        assert!((gap + 0.01).abs() < 0.001, "{gap}");
    }

    #[test]
    fn carry_over_slows_the_cell_after_the_carrying_arm_only() {
        let plan = plan("aa-williams-8");
        let scale = Scale {
            carry: 0.02,
            ..PLAIN
        };
        let cells = log_cells(&plan, NoiseModel::CarryOver, scale, 400);
        let per_ladder = plan.order.cells().count();
        let after_carrier =
            |i: usize| !i.is_multiple_of(per_ladder) && cells[i - 1].0.arm == plan.carrier;
        let gap = mean_gap(&cells, after_carrier);
        assert!((gap + 0.02).abs() < 0.001, "{gap}");
    }

    #[test]
    fn normal_draws_are_standard_normal() {
        let mut rng = SmallRng::seed_from_u64(7);
        let draws: Vec<f64> = (0..100_000).map(|_| normal(&mut rng)).collect();
        let phi = Normal::standard();
        // At 100 000 draws Kolmogorov's D exceeds 0.0062 with probability 0.1 %.
        let d = ks_distance(draws, |x| phi.cdf(x));
        assert!(d < 0.0062, "D = {d}");
    }

    #[test]
    fn correlated_draws_share_one_factor_and_leave_the_last_metric_independent() {
        let mut rng = SmallRng::seed_from_u64(11);
        let (n, rho) = (100_000, 0.6);
        let draws: Vec<Vec<f64>> = (0..n).map(|_| correlated(3, rho, &mut rng)).collect();
        let metric = |k: usize| -> Vec<f64> { draws.iter().map(|d| d[k]).collect() };
        let (a, b, last) = (metric(0), metric(1), metric(2));
        let phi = Normal::standard();
        for (k, values) in [&a, &b, &last].into_iter().enumerate() {
            let d = ks_distance(values.clone(), |x| phi.cdf(x));
            assert!(d < 0.0062, "metric {k}: D = {d}");
        }
        // The sampling sd of a correlation near ρ at n draws is (1 − ρ²)/√n: 0.002 and 0.003.
        let shared = correlation(&a, &b);
        assert!((shared - rho).abs() < 0.01, "{shared}");
        for other in [&a, &b] {
            let r = correlation(other, &last);
            assert!(r.abs() < 0.015, "{r}");
        }
        assert_eq!(correlated(1, rho, &mut rng).len(), 1);
    }
}
