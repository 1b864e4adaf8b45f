//! Simulated breakdown rows (METHOD.md "Calibration"): a spec with `[breakdown]` gets, in
//! every simulated ladder, each cell's per-key values and its total, read by
//! [`analysis::breakdown::read`], the report's own function, and counted.
//!
//! A cell's keys share one factor (a slow process is slow in every kernel): the simulated
//! headline's own deviation in that cell, so that the breakdown has the noise model's drift,
//! autocorrelation, tails and order terms. Each key adds normal noise of its own; the total
//! comes from other repetitions than the keys (the timed ones), so it shares the cell's factor
//! but not the keys' own noise. A true effect (`--effect-pct`) slows
//! key 0 of every `arm` arm, and so the total by key 0's share of it.

use super::simulate::{normal, Scale};
use super::Plan;
use crate::analysis::breakdown::{self, BreakdownReport};
use crate::breakdown_cells::BreakdownCells;
use crate::frames::Grid;
use ladder::breakdown::BreakdownSpec;
use ladder::stats::Spread;
use ladder::Role;
use rand::rngs::SmallRng;
use std::ops::Range;

/// The simulated keys' shares of the step: a few large kernels, a tail, and two keys below
/// the rest line's 1 %.
pub const SHARES: [f64; 9] = [0.40, 0.20, 0.14, 0.10, 0.07, 0.05, 0.032, 0.004, 0.004];
/// The base's step, in the value's unit.
const STEP: f64 = 1000.0;
/// Each key's own noise, and the total's (repetitions of its own), as multiples of a cell's.
const KEY_NOISE: f64 = 1.0;
const TOTAL_NOISE: f64 = 0.5;

/// The log effect on key 0 of each arm: `--effect-pct` on the `arm` arms, none elsewhere.
pub fn key_effects(roles: &[Role], effect_pct: Option<f64>) -> Vec<f64> {
    let effect = effect_pct.map_or(0.0, |e| (1.0 + e / 100.0).ln());
    roles
        .iter()
        .map(|&r| if r == Role::Arm { effect } else { 0.0 })
        .collect()
}

/// Every cell of the plan's order: its keys and its total, around `headline`, the first
/// metric's simulated grid.
pub fn simulate(
    plan: &Plan,
    spec: &BreakdownSpec,
    headline: &Grid,
    scale: &Scale,
    rng: &mut SmallRng,
) -> BreakdownCells {
    let effects = &plan.key_effects;
    let arms = plan.order.n_arms();
    let mut cells = BreakdownCells::empty(spec.clone(), plan.order.passes, arms);
    let sigma = scale.sigma;
    for cell in plan.order.cells() {
        let factor = headline.value(cell.pass, cell.arm).ln() - plan.effect[0][cell.arm];
        let slowed = |k: usize| if k == 0 { effects[cell.arm] } else { 0.0 };
        for (k, share) in SHARES.iter().enumerate() {
            let noise = factor + KEY_NOISE * sigma * normal(rng);
            let value = STEP * share * (slowed(k) + noise).exp();
            cells.record(cell.pass, cell.arm, &format!("k{k}"), value, 1.0);
        }
        let step: f64 = (0..SHARES.len()).map(|k| SHARES[k] * slowed(k).exp()).sum();
        let noise = factor + TOTAL_NOISE * sigma * normal(rng);
        cells.record_total(cell.pass, cell.arm, STEP * step * noise.exp());
    }
    cells
}

/// One ladder's breakdown, counted per arm against the base.
#[derive(Clone, Copy, Debug, Default)]
pub struct BreakdownTally {
    /// Arms read, and those in which a key with no true effect was resolved after Holm.
    pub families: usize,
    pub false_families: usize,
    /// Slowed keys, those whose interval held the true effect, and those resolved `more`.
    pub slowed: usize,
    pub covered: usize,
    pub resolved: usize,
    /// Arms whose closure was read, and those said not to add up.
    pub closures: usize,
    pub not_adding_up: usize,
    /// Arms of no true effect whose keys' control was read, and those in which it failed.
    pub controls: usize,
    pub controls_failed: usize,
}

/// Reads `cells` as the report does and counts against the truth in `effects`.
pub fn tally(
    plan: &Plan,
    cells: &BreakdownCells,
    effects: &[f64],
    passes: Range<usize>,
    spread: Spread,
) -> BreakdownTally {
    let names = &plan.design.names;
    let report: BreakdownReport = breakdown::read(cells, &plan.design, passes, spread);
    let mut t = BreakdownTally::default();
    for arm in &report.arms {
        let a = names.iter().position(|n| *n == arm.arm).unwrap_or(0);
        t.families += 1;
        let false_key = arm
            .keys
            .iter()
            .filter(|l| !(l.key == "k0" && effects[a] != 0.0))
            .any(|l| l.holm_verdict != "not resolved");
        t.false_families += usize::from(false_key);
        if effects[a] != 0.0 {
            let truth = 100.0 * effects[a].exp_m1();
            if let Some(l) = arm.keys.iter().find(|l| l.key == "k0") {
                t.slowed += 1;
                t.covered += usize::from(l.ci_low_pct <= truth && truth <= l.ci_high_pct);
                t.resolved += usize::from(l.holm_verdict == "more");
            }
        }
        if let Some(control) = &arm.control {
            t.controls += 1;
            t.controls_failed += usize::from(!control.holds);
        }
        if let Some(adds_up) = arm.closure.adds_up {
            t.closures += 1;
            t.not_adding_up += usize::from(!adds_up);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::Effects;
    use ladder::spec::Spec;
    use rand::SeedableRng;

    /// The committed breakdown design (base, reflexive, arm), its `arm` arm 25 % slower.
    fn plan() -> Plan {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let path = root.join("ladders/calibrate/breakdown.toml");
        let spec = Spec::load(&path).unwrap().spec;
        let effects = Effects {
            arm_pct: Some(25.0),
            control_pct: None,
        };
        Plan::of_spec(&spec, None, effects).unwrap()
    }

    /// The cells' shared deviation in pass `p`: 1 % more each pass.
    fn deviation(p: usize) -> f64 {
        100.0 * (1.0 + 0.01 * p as f64)
    }

    /// A headline grid: each cell its pass's deviation with its arm's true effect on it.
    fn headline(plan: &Plan) -> Grid {
        let (passes, arms) = (plan.order.passes, plan.order.n_arms());
        let mut grid = Grid::new(passes, arms);
        for p in 0..passes {
            for a in 0..arms {
                grid.values[p * arms + a] = deviation(p) * plan.effect[0][a].exp();
            }
        }
        grid
    }

    fn cells(plan: &Plan, sigma: f64) -> BreakdownCells {
        let scale = Scale {
            sigma,
            walk: 0.0,
            carry: 0.0,
            correlation: 0.0,
        };
        let spec = plan.breakdown.clone().unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        simulate(plan, &spec, &headline(plan), &scale, &mut rng)
    }

    #[test]
    fn without_noise_each_key_is_its_share_of_the_step_moved_by_the_cells_deviation() {
        let plan = plan();
        let cells = cells(&plan, 0.0);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b;
        for p in 0..plan.order.passes {
            for a in 0..plan.order.n_arms() {
                let slow = plan.key_effects[a].exp();
                for (k, share) in SHARES.iter().enumerate() {
                    let key_slow = if k == 0 { slow } else { 1.0 };
                    let want = STEP * share * key_slow * deviation(p);
                    assert!(close(cells.value(k, p, a), want), "k{k} {p} {a}");
                }
                // The total is the step, key 0 slowed by its share of the effect.
                let step = 1.0 + SHARES[0] * (slow - 1.0);
                assert!(
                    close(cells.total(p, a), STEP * step * deviation(p)),
                    "{p} {a}"
                );
            }
        }
    }

    #[test]
    fn a_key_resolved_without_a_true_effect_counts_its_arm_even_where_key_0_is_slowed() {
        let plan = plan();
        let mut cells = cells(&plan, 0.001);
        let read = |cells: &BreakdownCells| {
            let passes = plan.warmup..plan.order.passes;
            tally(&plan, cells, &plan.key_effects, passes, Spread::Own)
        };
        let clean = read(&cells);
        assert_eq!((clean.families, clean.false_families), (2, 0));
        assert_eq!((clean.slowed, clean.covered, clean.resolved), (1, 1, 1));
        assert_eq!((clean.controls, clean.controls_failed), (1, 0));
        assert_eq!((clean.closures, clean.not_adding_up), (2, 0));
        // Key 3 of the slowed arm 10 % slower in every cell: resolved with no true effect.
        let slow_key_3 = |cells: &mut BreakdownCells, arm: usize| {
            for p in 0..plan.order.passes {
                let value = cells.value(3, p, arm);
                cells.record(p, arm, "k3", value * 1.1, 1.0);
            }
        };
        slow_key_3(&mut cells, 2);
        let wrong = read(&cells);
        assert_eq!((wrong.false_families, wrong.controls_failed), (1, 0));
        // The keys now add up to 1 % more than the step that was timed.
        assert_eq!((wrong.closures, wrong.not_adding_up), (2, 1));
        // The same in the reflexive arm: its keys' control fails as well.
        slow_key_3(&mut cells, 1);
        let failed = read(&cells);
        assert_eq!((failed.false_families, failed.controls_failed), (2, 1));
    }

    #[test]
    fn the_shares_make_the_whole_step_and_two_fall_below_the_rest_line() {
        assert!((SHARES.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let folded = SHARES
            .iter()
            .filter(|&&s| s < breakdown::REST_BELOW)
            .count();
        assert_eq!(folded, 2);
    }

    #[test]
    fn only_arm_arms_are_slowed() {
        let roles = [Role::Base, Role::Reflexive, Role::Arm, Role::Null];
        let e = key_effects(&roles, Some(25.0));
        assert_eq!(e[..2], [0.0, 0.0]);
        assert!((e[2] - 1.25f64.ln()).abs() < 1e-15);
        assert_eq!(e[3], 0.0);
        assert!(key_effects(&roles, None).iter().all(|&x| x == 0.0));
    }
}
