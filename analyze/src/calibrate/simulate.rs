//! Simulated ladders: every cell of a design's order, in time order, under one noise model,
//! with one series per metric.

use super::Plan;
use crate::frames::Grid;
use rand::rngs::SmallRng;
use rand::RngExt;
use serde::Serialize;

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
    NoiseRise,
}

/// How much noisier the cells are after the rise, under [`NoiseModel::NoiseRise`].
const RISE: f64 = 3.0;

impl NoiseModel {
    pub const ALL: [NoiseModel; 7] = [
        NoiseModel::Independent,
        NoiseModel::RandomWalk,
        NoiseModel::Ar1,
        NoiseModel::HeavyTails,
        NoiseModel::SlotEffect,
        NoiseModel::CarryOver,
        NoiseModel::NoiseRise,
    ];

    pub fn name(self) -> &'static str {
        match self {
            NoiseModel::Independent => "independent",
            NoiseModel::RandomWalk => "random-walk",
            NoiseModel::Ar1 => "ar1",
            NoiseModel::HeavyTails => "heavy-tails",
            NoiseModel::SlotEffect => "slot-effect",
            NoiseModel::CarryOver => "carry-over",
            NoiseModel::NoiseRise => "noise-rise",
        }
    }

    /// The model named `name`, or an error listing the names.
    pub fn parse(name: &str) -> Result<NoiseModel, String> {
        NoiseModel::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = NoiseModel::ALL.iter().map(|m| m.name()).collect();
                format!(
                    "unknown noise model {name:?}; use some of {}",
                    names.join(", ")
                )
            })
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
