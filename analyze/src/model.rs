//! The linear models of METHOD.md over one metric's analysis passes, in log space:
//! the additive model `ln x = μ[p] + α[a] + ε` (paired noise), and the order model
//! `ln x = μ[p] + α[a] + β[slot] + γ[prev] + ε` (position and carry-over F tests, and the
//! estimates with carry-over removed), and the drift within a pass, `τ[p]·slot` beside `β`.
//!
//! Every pass used is complete (each arm once), so the design is balanced in pass and arm:
//! those two terms are swept out exactly by centering each pass and each arm (Frisch–Waugh),
//! and only the slot and previous-arm columns go through least squares: a sweep of their
//! normal equations, whose pivots also give the ranks that say what the design can estimate.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, FisherSnedecor};

/// One metric's analysis passes as the models see them: `y[p·n + a]` the oriented log value
/// (`ln x`, or `−ln x` when lower is better, so that a larger α is a better arm), `slot` and
/// `prev` per cell (`prev = n` when no cell ran before it).
#[derive(Clone, Debug)]
pub struct Cells {
    pub passes: usize,
    pub arms: usize,
    pub y: Vec<f64>,
    pub slot: Vec<usize>,
    pub prev: Vec<usize>,
}

/// A rejection at this level flags the ladder `order-sensitive`.
pub const ORDER_ALPHA: f64 = 0.01;

/// The position and carry-over tests of one metric, and the adjusted estimates.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OrderEffects {
    /// F test of "every β equal"; null when the design cannot tell slots apart, or when the
    /// model leaves no residual to test against.
    pub position_p: Option<f64>,
    /// Whether the position test could be computed (a p-value above).
    pub position_testable: bool,
    /// The full model leaves no residual (the metric is the same in every cell of an arm):
    /// nothing is testable.
    pub no_residual: bool,
    /// The position test's degrees of freedom (numerator, denominator).
    pub position_df: Option<[usize; 2]>,
    /// Whether the model can separate γ from α (and β).
    pub carry_over_estimable: bool,
    /// Whether the carry-over test could be computed.
    pub carry_over_testable: bool,
    /// F test of "every γ equal"; null when γ is not estimable or nothing is left to test.
    pub carry_over_p: Option<f64>,
    /// The carry-over test's degrees of freedom (numerator, denominator).
    pub carry_over_df: Option<[usize; 2]>,
    /// Each non-base arm's estimate with carry-over removed, whenever γ is estimable, a test
    /// rejecting or not: given only after a rejection, such intervals held their truth in as
    /// few as 43 % of simulated ladders (METHOD.md "Order effects").
    pub adjusted: Vec<Adjusted>,
    /// F test of "every pass's own slope in the slot, τ[p], is 0" beside β; null when the
    /// design leaves it no degrees of freedom or no residual.
    pub drift_p: Option<f64>,
    /// The drift test's degrees of freedom (numerator, denominator).
    pub drift_df: Option<[usize; 2]>,
}

/// An arm's estimate against the base with carry-over removed, and its 95 % interval from
/// the order model.
#[derive(Clone, Debug, Serialize)]
pub struct Adjusted {
    pub arm: String,
    pub estimate_pct: f64,
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
}

impl OrderEffects {
    /// Either test rejects at 1 %.
    pub fn sensitive(&self) -> bool {
        rejects(self.position_p) || rejects(self.carry_over_p)
    }

    /// The drift test rejects at 1 %: pairing inside a pass leaves part of the drift.
    pub fn drifting(&self) -> bool {
        rejects(self.drift_p)
    }
}

/// A test with a p-value below [`ORDER_ALPHA`] rejects; one that could not be computed does not.
fn rejects(p: Option<f64>) -> bool {
    p.is_some_and(|p| p < ORDER_ALPHA)
}

/// A model's columns beyond pass and arm (raw), and their normal equations with pass and
/// arm swept out, which every nested fit shares.
struct Columns<'a> {
    raw: Vec<&'a Vec<f64>>,
    raw_ss: Vec<f64>,
    normal: Normal,
    /// `y` with pass and arm swept out.
    y: Vec<f64>,
}

impl Cells {
    fn at(&self, p: usize, a: usize) -> usize {
        p * self.arms + a
    }

    /// `v` with each pass's mean and then each arm's mean removed.
    fn double_centered(&self, v: &[f64]) -> Vec<f64> {
        let mut out = self.pass_centered(v);
        for a in 0..self.arms {
            let mean =
                (0..self.passes).map(|p| out[self.at(p, a)]).sum::<f64>() / self.passes as f64;
            for p in 0..self.passes {
                out[self.at(p, a)] -= mean;
            }
        }
        out
    }

    fn pass_centered(&self, v: &[f64]) -> Vec<f64> {
        let mut out = v.to_vec();
        for row in out.chunks_mut(self.arms) {
            let mean = row.iter().sum::<f64>() / row.len() as f64;
            row.iter_mut().for_each(|x| *x -= mean);
        }
        out
    }

    /// Residual variance of the additive model, `RSS / ((m−1)(n−1))`.
    pub fn additive_sigma2(&self) -> f64 {
        let rss: f64 = self.double_centered(&self.y).iter().map(|r| r * r).sum();
        rss / ((self.passes - 1) * (self.arms - 1)) as f64
    }

    /// Paired noise in percent: `100 · √2 · σ̂`.
    pub fn paired_noise_pct(&self) -> f64 {
        if self.passes < 2 || self.arms < 2 {
            return f64::NAN;
        }
        100.0 * (2.0 * self.additive_sigma2()).sqrt()
    }

    /// The largest step of `μ[p]` (each pass's mean log value) between consecutive passes,
    /// as a percent.
    pub fn largest_step_pct(&self) -> f64 {
        let mu: Vec<f64> = self
            .y
            .chunks(self.arms)
            .map(|row| row.iter().sum::<f64>() / row.len() as f64)
            .collect();
        let step = mu
            .windows(2)
            .map(|w| (w[1] - w[0]).abs())
            .fold(f64::NAN, f64::max);
        100.0 * step.exp_m1()
    }

    /// The raw indicator columns: one per slot, then one per previous arm (and "none").
    fn indicators(&self) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
        let cells = self.y.len();
        let column =
            |pick: &dyn Fn(usize) -> bool| (0..cells).map(|i| f64::from(pick(i) as u8)).collect();
        let slots = (0..self.arms)
            .map(|s| column(&|i| self.slot[i] == s))
            .collect();
        let prevs = (0..=self.arms)
            .map(|g| column(&|i| self.prev[i] == g))
            .collect();
        (slots, prevs)
    }

    /// The tests and adjusted estimates; `names` and `base` name the arms for `adjusted`.
    pub fn order_effects(&self, names: &[String], base: usize) -> OrderEffects {
        let (slots, prevs) = self.indicators();
        let n_slot = slots.len();
        let columns = self.columns(slots.iter().chain(&prevs).collect());
        let all: Vec<usize> = (0..columns.raw.len()).collect();
        let full = columns.normal.fit(&all);
        let only_s = columns.normal.fit(&all[..n_slot]);
        let only_g = columns.normal.fit(&all[n_slot..]);
        let carry_over_estimable = full.rank > only_s.rank;
        let position = self.f_test(&full, &only_g);
        let carry_over = self.f_test(&full, &only_s).filter(|_| carry_over_estimable);
        let mut effects = OrderEffects {
            position_p: position.map(|t| t.0),
            position_testable: position.is_some(),
            position_df: position.map(|t| t.1),
            carry_over_estimable,
            carry_over_testable: carry_over.is_some(),
            carry_over_p: carry_over.map(|t| t.0),
            carry_over_df: carry_over.map(|t| t.1),
            no_residual: !self.has_residual(&full),
            ..OrderEffects::default()
        };
        if carry_over_estimable {
            effects.adjusted = self.adjusted(&columns, &full, names, base);
        }
        self.drift(&slots, &mut effects);
        effects
    }

    /// The drift test (METHOD.md "Drift within a pass"): each pass's own slope in the slot,
    /// beside β. No estimate with the slopes removed is given: a real drift is no straight
    /// line in each pass, and such intervals held their truth too rarely (METHOD.md).
    fn drift(&self, slots: &[Vec<f64>], effects: &mut OrderEffects) {
        // The slot itself: the pass term takes any offset, so `slot − (n − 1)/2` fits the same.
        let slopes: Vec<Vec<f64>> = (0..self.passes)
            .map(|p| {
                (0..self.y.len())
                    .map(|i| match i / self.arms == p {
                        true => self.slot[i] as f64,
                        false => 0.0,
                    })
                    .collect()
            })
            .collect();
        let columns = self.columns(slots.iter().chain(&slopes).collect());
        let all: Vec<usize> = (0..columns.raw.len()).collect();
        let full = columns.normal.fit(&all);
        let test = self.f_test(&full, &columns.normal.fit(&all[..slots.len()]));
        effects.drift_p = test.map(|t| t.0);
        effects.drift_df = test.map(|t| t.1);
    }

    fn columns<'a>(&self, raw: Vec<&'a Vec<f64>>) -> Columns<'a> {
        let raw_ss: Vec<f64> = raw.iter().map(|c| c.iter().map(|v| v * v).sum()).collect();
        let centred: Vec<Vec<f64>> = raw.iter().map(|c| self.double_centered(c)).collect();
        let y = self.double_centered(&self.y);
        let normal = Normal::new(&centred, &y, &raw_ss);
        Columns {
            raw,
            raw_ss,
            normal,
            y,
        }
    }

    /// The residual degrees of freedom of a fit beside pass and arm.
    fn residual_df(&self, full: &Fit) -> isize {
        self.y.len() as isize - self.passes as isize - (self.arms as isize - 1) - full.rank as isize
    }

    /// A fit with something left to test against: a metric the same in every cell of an arm
    /// would give F = 0/0.
    fn has_residual(&self, full: &Fit) -> bool {
        self.residual_df(full) > 0
            && full.rss / self.y.len() as f64 > NO_RESIDUAL_SD * NO_RESIDUAL_SD
    }

    /// The F test of `reduced` against `full`: its p-value and degrees of freedom, or `None`
    /// when the columns dropped add no rank or nothing is left to test against.
    fn f_test(&self, full: &Fit, reduced: &Fit) -> Option<(f64, [usize; 2])> {
        let df1 = full.rank.checked_sub(reduced.rank).filter(|&d| d > 0)?;
        if !self.has_residual(full) {
            return None;
        }
        let df = self.residual_df(full) as usize;
        let f = ((reduced.rss - full.rss) / df1 as f64) / (full.rss / df as f64);
        let dist = FisherSnedecor::new(df1 as f64, df as f64).ok()?;
        Some((dist.sf(f.max(0.0)), [df1, df]))
    }

    /// Each non-base arm's α against the base from the `full` fit of `columns`, with its 95 %
    /// interval from that model (METHOD.md "Order effects"); empty when the arms are not
    /// identified beside the columns or no residual is left.
    fn adjusted(
        &self,
        columns: &Columns,
        full: &Fit,
        names: &[String],
        base: usize,
    ) -> Vec<Adjusted> {
        // α is identified beside the columns when centering on the pass alone leaves them no
        // more room than centering on pass and arm did.
        let all: Vec<usize> = (0..columns.raw.len()).collect();
        let rc: Vec<Vec<f64>> = columns.raw.iter().map(|c| self.pass_centered(c)).collect();
        let identified = Normal::new(&rc, &columns.y, &columns.raw_ss).fit(&all).rank == full.rank;
        let df = self.residual_df(full);
        if !identified || df <= 0 {
            return Vec::new();
        }
        let sigma2 = full.rss / df as f64;
        let t = ladder::stats::t_quantile(0.975, df as usize);
        let arm_mean = |v: &[f64], a: usize| {
            (0..self.passes).map(|p| v[self.at(p, a)]).sum::<f64>() / self.passes as f64
        };
        (0..self.arms)
            .filter(|&a| a != base)
            .map(|a| {
                let c: Vec<f64> = columns
                    .raw
                    .iter()
                    .map(|z| arm_mean(z, a) - arm_mean(z, base))
                    .collect();
                let mean = arm_mean(&self.y, a) - arm_mean(&self.y, base) - full.dot_coef(&c);
                let var = sigma2 * (2.0 / self.passes as f64 + full.quadratic(&c));
                let half = t * var.max(0.0).sqrt();
                Adjusted {
                    arm: names[a].clone(),
                    estimate_pct: ladder::stats::pct_of_log(mean),
                    ci_low_pct: ladder::stats::pct_of_log(mean - half),
                    ci_high_pct: ladder::stats::pct_of_log(mean + half),
                }
            })
            .collect()
    }
}

/// A full model whose residual sd (log units) is below this has nothing left to test.
const NO_RESIDUAL_SD: f64 = 1e-9;

/// The normal equations of `y` on some columns, as the augmented cross-product matrix
/// `[[XᵀX, Xᵀy], [yᵀX, yᵀy]]`. Every nested fit sweeps some of its pivots, so the columns
/// are multiplied out once.
struct Normal {
    /// Row-major, `(q + 1) × (q + 1)`; row and column `q` are `y`'s.
    a: Vec<f64>,
    q: usize,
    /// Each column's raw (uncentred) sum of squares, the scale its rank is judged against.
    raw_ss: Vec<f64>,
}

/// A pivot whose remaining variance is below this fraction of its raw column's sum of
/// squares is a linear combination of what was swept before it: it adds no rank. Judged
/// against the centred column instead, a column in the span of pass and arm (which centres
/// to round-off) would pass for rank.
const RANK_TOLERANCE: f64 = 1e-9;

/// A least-squares fit: its rank, residual sum of squares, one set of coefficients (zero on
/// the columns that add nothing; the fitted values are the same for any set) and the
/// generalized inverse of the cross products that goes with them.
struct Fit {
    rank: usize,
    rss: f64,
    coef: Vec<f64>,
    /// `(XᵀX)⁻` on the swept columns, zero elsewhere; row-major `q × q`.
    inverse: Vec<f64>,
}

impl Fit {
    fn dot_coef(&self, c: &[f64]) -> f64 {
        c.iter().zip(&self.coef).map(|(c, b)| c * b).sum()
    }

    /// `cᵀ (XᵀX)⁻ c`: the variance of `cᵀθ̂` in units of σ².
    fn quadratic(&self, c: &[f64]) -> f64 {
        let q = c.len();
        (0..q)
            .map(|i| c[i] * (0..q).map(|j| self.inverse[i * q + j] * c[j]).sum::<f64>())
            .sum()
    }
}

impl Normal {
    fn new(cols: &[Vec<f64>], y: &[f64], raw_ss: &[f64]) -> Normal {
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
        let q = cols.len();
        let column = |i: usize| if i < q { &cols[i][..] } else { y };
        let mut a = vec![0.0; (q + 1) * (q + 1)];
        for i in 0..=q {
            for j in i..=q {
                let v = dot(column(i), column(j));
                a[i * (q + 1) + j] = v;
                a[j * (q + 1) + i] = v;
            }
        }
        Normal {
            a,
            q,
            raw_ss: raw_ss.to_vec(),
        }
    }

    /// The fit on the columns `which`, by Goodnight's sweep of their pivots in that order.
    fn fit(&self, which: &[usize]) -> Fit {
        let w = self.q + 1;
        let mut a = self.a.clone();
        let mut swept = Vec::new();
        for &k in which {
            let d = a[k * w + k];
            if d <= RANK_TOLERANCE * self.raw_ss[k] || d <= 0.0 {
                continue;
            }
            sweep(&mut a, w, k);
            swept.push(k);
        }
        let q = self.q;
        let mut coef = vec![0.0; q];
        let mut inverse = vec![0.0; q * q];
        for &i in &swept {
            coef[i] = a[i * w + q];
            for &j in &swept {
                inverse[i * q + j] = a[i * w + j];
            }
        }
        Fit {
            rank: swept.len(),
            rss: a[q * w + q].max(0.0),
            coef,
            inverse,
        }
    }
}

/// Sweeps pivot `k` of the symmetric `w × w` matrix `a` in place.
fn sweep(a: &mut [f64], w: usize, k: usize) {
    let d = a[k * w + k];
    for j in 0..w {
        a[k * w + j] /= d;
    }
    for i in (0..w).filter(|&i| i != k) {
        let b = a[i * w + k];
        if b == 0.0 {
            continue;
        }
        for j in 0..w {
            a[i * w + j] -= b * a[k * w + j];
        }
        a[i * w + k] = -b / d;
    }
    a[k * w + k] = 1.0 / d;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_rejects_below_one_percent_not_at_it() {
        let at = |position: Option<f64>, carry: Option<f64>| OrderEffects {
            position_p: position,
            carry_over_p: carry,
            ..OrderEffects::default()
        };
        assert!(!at(Some(ORDER_ALPHA), Some(0.5)).sensitive());
        assert!(!at(None, Some(ORDER_ALPHA)).sensitive());
        assert!(at(Some(0.009_9), None).sensitive());
        assert!(at(Some(0.5), Some(0.009_9)).sensitive());
        let drift = |p: Option<f64>| OrderEffects {
            drift_p: p,
            ..OrderEffects::default()
        };
        assert!(!drift(Some(ORDER_ALPHA)).drifting() && !drift(None).drifting());
        assert!(drift(Some(0.009_9)).drifting() && !drift(Some(0.009_9)).sensitive());
    }

    #[test]
    fn too_few_passes_or_arms_have_no_noise_figure() {
        for (passes, arms) in [(0, 3), (1, 3), (3, 1), (0, 0)] {
            let cells = Cells {
                passes,
                arms,
                y: vec![0.01; passes * arms],
                slot: vec![0; passes * arms],
                prev: vec![0; passes * arms],
            };
            assert!(cells.paired_noise_pct().is_nan(), "{passes} × {arms}");
        }
        // Two passes of two arms are enough: one degree of freedom.
        let two = Cells {
            passes: 2,
            arms: 2,
            y: vec![0.0, 0.01, 0.02, 0.0],
            slot: vec![0, 1, 1, 0],
            prev: vec![2, 0, 1, 2],
        };
        // Residuals ±0.0075: RSS 4 · 0.0075² over 1 df, paired noise 100·√2·0.015.
        let want = 100.0 * (2.0f64).sqrt() * 0.015;
        assert!(
            (two.paired_noise_pct() - want).abs() < 1e-9,
            "{}",
            two.paired_noise_pct()
        );
    }

    /// A rotate design of `arms` × `passes` with `prev` from the cell before.
    fn rotate(
        arms: usize,
        passes: usize,
        value: impl Fn(usize, usize, usize, usize) -> f64,
    ) -> Cells {
        let mut cells = Cells {
            passes,
            arms,
            y: vec![0.0; arms * passes],
            slot: vec![0; arms * passes],
            prev: vec![0; arms * passes],
        };
        let arm_at = |p: usize, s: usize| (s + p) % arms;
        for p in 0..passes {
            for s in 0..arms {
                let a = arm_at(p, s);
                let prev = if s > 0 {
                    arm_at(p, s - 1)
                } else if p > 0 {
                    arm_at(p - 1, arms - 1)
                } else {
                    arms
                };
                cells.slot[p * arms + a] = s;
                cells.prev[p * arms + a] = prev;
                cells.y[p * arms + a] = value(p, a, s, prev);
            }
        }
        cells
    }

    /// The full order model's residual sum of squares, as `order_effects` fits it.
    fn full_rss(cells: &Cells) -> f64 {
        let (slots, prevs) = cells.indicators();
        let columns = cells.columns(slots.iter().chain(&prevs).collect());
        let all: Vec<usize> = (0..columns.raw.len()).collect();
        columns.normal.fit(&all).rss
    }

    #[test]
    fn a_residual_below_its_threshold_is_not_tested_and_one_above_it_is() {
        let noise = |p: usize, a: usize| (((p * 31 + a * 17) % 11) as f64 - 5.0) * 1e-4;
        let shape =
            |scale: f64| rotate(3, 9, move |p, a, _, _| 0.2 * p as f64 + scale * noise(p, a));
        let unit = full_rss(&shape(1.0)) / 27.0;
        // Scales at which the residual's sd per cell is half and four times the threshold.
        for (sd, tested) in [(0.5, false), (4.0, true)] {
            let scale = sd * NO_RESIDUAL_SD / unit.sqrt();
            let cells = shape(scale);
            let got = (full_rss(&cells) / 27.0).sqrt() / NO_RESIDUAL_SD;
            assert!(
                (got - sd).abs() < 0.01 * sd,
                "residual sd {got} thresholds, not {sd}"
            );
            let e = cells.order_effects(&names(3), 0);
            assert_eq!(e.no_residual, !tested, "{sd} × the threshold: {e:?}");
            assert_eq!(e.position_testable, tested, "{e:?}");
        }
    }

    #[test]
    fn carry_over_that_only_repeats_the_slots_is_not_estimable() {
        // Each cell's previous arm made equal to its slot: the previous-arm columns add
        // nothing beyond the slot columns, so carry-over cannot be told apart from position.
        let noise = |p: usize, a: usize| (((p * 31 + a * 17) % 11) as f64 - 5.0) * 1e-3;
        let mut cells = rotate(3, 9, |p, a, s, _| {
            noise(p, a) + if s == 0 { -0.02 } else { 0.0 }
        });
        cells.prev = cells.slot.clone();
        let e = cells.order_effects(&names(3), 0);
        assert!(!e.carry_over_estimable, "{e:?}");
        assert_eq!(e.carry_over_p, None);
        assert!(e.adjusted.is_empty(), "{e:?}");
        // Nor position beside it: each test's reduced model fits as well as the full one.
        assert_eq!(e.position_p, None, "{e:?}");
    }

    #[test]
    fn carry_over_removed_estimates_need_the_arms_identified_and_a_residual() {
        let noise =
            |p: usize, a: usize, s: usize| (((p * 31 + a * 17 + s * 5) % 11) as f64 - 5.0) * 1e-3;
        // (arms, passes): rotate designs whose carry-over is estimable, and whether the
        // arms are identified beside it with a residual left (METHOD.md "Order effects").
        for (arms, passes, estimates) in [(4, 6, true), (2, 3, false), (5, 4, false), (4, 3, false)]
        {
            let cells = rotate(arms, passes, |p, a, s, _| noise(p, a, s));
            let e = cells.order_effects(&names(arms), 0);
            assert!(e.carry_over_estimable, "{arms} × {passes}: {e:?}");
            assert_eq!(
                !e.adjusted.is_empty(),
                estimates,
                "{arms} × {passes}: {e:?}"
            );
        }
    }

    #[test]
    fn rank_is_judged_against_each_raw_column_s_own_scale() {
        // c2 = c1 + 1e-4·e1 with |c1|² = 1e6: what is left of c2 after c1 (about 1e-8) is a
        // 1e-14 fraction of its raw sum of squares, below the tolerance: no rank of its own.
        let n = 6;
        let c1: Vec<f64> = (0..n).map(|i| if i == 0 { 1e3 } else { 0.0 }).collect();
        let mut c2 = c1.clone();
        c2[1] = 1e-4;
        let y: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let ss = |c: &[f64]| c.iter().map(|v| v * v).sum::<f64>();
        let normal = Normal::new(&[c1.clone(), c2.clone()], &y, &[ss(&c1), ss(&c2)]);
        assert_eq!(normal.fit(&[0, 1]).rank, 1);
        // The same remainder in a column of unit scale is real: rank 2.
        let u1 = vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let u2 = vec![1.0, 1e-4, 0.0, 0.0, 0.0, 0.0];
        let normal = Normal::new(&[u1.clone(), u2.clone()], &y, &[ss(&u1), ss(&u2)]);
        assert_eq!(normal.fit(&[0, 1]).rank, 2);
    }

    #[test]
    fn paired_noise_by_hand() {
        // 4 passes × 2 arms: y = μ[p] + α[a] + e with e = ±0.01 in a checkerboard, whose
        // pass and arm means are 0: the residuals are exactly e, RSS = 8e-4, σ² = 8e-4 / (3·1).
        let cells = rotate(2, 4, |p, a, _, _| {
            p as f64 * 0.3 + a as f64 * 0.1 + if (p + a) % 2 == 0 { 0.01 } else { -0.01 }
        });
        assert!((cells.additive_sigma2() - 8e-4 / 3.0).abs() < 1e-15);
        assert!((cells.paired_noise_pct() - 100.0 * (2.0 * 8e-4 / 3.0f64).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn a_pure_slot_effect_is_found_and_an_additive_ladder_is_not() {
        let noise = |p: usize, a: usize| (((p * 31 + a * 17) % 11) as f64 - 5.0) * 1e-4;
        let slot = rotate(3, 9, |p, a, s, _| {
            noise(p, a) + if s == 0 { -0.01 } else { 0.0 }
        });
        let e = slot.order_effects(&names(3), 0);
        assert!(e.position_p.unwrap() < 1e-6, "{e:?}");
        let clean = rotate(3, 9, |p, a, _, _| noise(p, a) + 0.2 * p as f64);
        let e = clean.order_effects(&names(3), 0);
        assert!(e.position_p.unwrap() > 0.01, "{e:?}");
    }

    #[test]
    fn a_drift_within_passes_is_found_and_a_slot_effect_is_not_drift() {
        let noise = |p: usize, a: usize| (((p * 31 + a * 17) % 11) as f64 - 5.0) * 1e-4;
        let arm = |a: usize| 0.001 * a as f64;
        // Each pass drifts its own way: +0.1 % a slot in even passes, −0.1 % in odd ones.
        let slope = |p: usize| if p.is_multiple_of(2) { 1e-3 } else { -1e-3 };
        let drifting = rotate(8, 10, |p, a, s, _| {
            noise(p, a) + arm(a) + slope(p) * s as f64 + 0.2 * p as f64
        });
        let e = drifting.order_effects(&names(8), 0);
        assert!(e.drift_p.unwrap() < 1e-6 && e.drifting(), "{e:?}");
        assert_eq!(e.drift_df.unwrap()[0], 9, "ten slopes, one of them β's");
        // The same slope in every pass is a position effect (β), not a drift.
        let slot = rotate(8, 10, |p, a, s, _| noise(p, a) + arm(a) + 1e-3 * s as f64);
        let e = slot.order_effects(&names(8), 0);
        assert!(e.position_p.unwrap() < 1e-6, "{e:?}");
        assert!(e.drift_p.unwrap() > 0.01 && !e.drifting(), "{e:?}");
        // Nothing but noise: no drift.
        let clean = rotate(8, 10, |p, a, _, _| noise(p, a) + arm(a));
        assert!(!clean.order_effects(&names(8), 0).drifting());
        // Two arms: each pass's slope takes its difference, nothing is left to test.
        let two = rotate(2, 10, |p, a, s, _| noise(p, a) + slope(p) * s as f64);
        assert_eq!(two.order_effects(&names(2), 0).drift_p, None);
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|a| format!("a{a}")).collect()
    }
}
