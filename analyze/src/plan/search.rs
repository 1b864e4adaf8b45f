//! The cost model of METHOD.md "Repetitions and passes" and its exact search: a cell of `r`
//! repetitions costs `c0 + r·T` device seconds, a pass's log ratio has variance
//! `v(r) = max_k (s_b,k² + s_w,k²/r)`, and the passes that reach the half-width follow.

use ladder::limits::MAX_CELLS;
use ladder::stats::t975;

/// What the search needs from a pilot ladder.
#[derive(Clone, Debug, PartialEq)]
pub struct CostModel {
    /// `c0`: a cell's seconds that are not a timed repetition.
    pub start_s: f64,
    /// `T`: one timed repetition's seconds.
    pub rep_s: f64,
    /// `N`: the arms of the ladder planned.
    pub arms: usize,
    /// `W`: its warm-up passes.
    pub warmup: usize,
    /// `(s_b², s_w²)` of every metric and arm, in log units.
    pub spreads: Vec<(f64, f64)>,
}

/// One design: `reps` a cell, `passes` in all (`analysis` of them after the warm-up).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Design {
    pub reps: usize,
    pub analysis: usize,
    pub passes: usize,
    pub seconds: f64,
}

/// The fewest analysis passes a fixed ladder may have: one degree of freedom.
pub const MIN_ANALYSIS: usize = 2;

/// The most repetitions a cell the search considers: beyond them a cell is minutes of one
/// process, and the between-cell spread alone is left to narrow.
pub const MAX_REPS: usize = 1000;

/// `z`, the normal quantile at 0.975: the limit of `t(0.975, k)` from above.
const Z975: f64 = 1.959_963_985;

impl CostModel {
    /// `v(r)`: the largest variance of a pass's log ratio at `r` repetitions a cell.
    pub fn variance(&self, reps: usize) -> f64 {
        self.spreads
            .iter()
            .map(|&(between, within)| between + within / reps as f64)
            .fold(0.0, f64::max)
    }

    /// The device seconds of `passes` passes at `reps` repetitions a cell.
    pub fn seconds(&self, reps: usize, passes: usize) -> f64 {
        (passes * self.arms) as f64 * (self.start_s + reps as f64 * self.rep_s)
    }

    /// The design at `reps` repetitions that reaches the half-width `h` (log units).
    pub fn design(&self, reps: usize, h: f64) -> Design {
        let analysis = analysis_passes(self.variance(reps), h);
        let passes = self.warmup + analysis;
        Design {
            reps,
            analysis,
            passes,
            seconds: self.seconds(reps, passes),
        }
    }

    /// The device seconds the timed repetitions alone take to reach `h` (log units), whatever
    /// the start-up costs: a bound below every design, since `m` passes of `r` repetitions
    /// need `m·r ≥ z²·max_k(r·s_b,k² + s_w,k²)/h²`, least at `r = 1`.
    pub fn repetitions_floor(&self, h: f64) -> f64 {
        self.arms as f64 * self.rep_s * Z975 * Z975 * self.variance(1) / (h * h)
    }

    /// The most analysis passes a ladder of these arms may run: the cells a ladder may have
    /// (`MAX_CELLS`), less the warm-up.
    pub fn max_analysis(&self) -> usize {
        (MAX_CELLS / self.arms.max(1)).saturating_sub(self.warmup)
    }

    /// The narrowest half-width (log units) a ladder within the limits can reach: the most
    /// passes, at the most repetitions a cell.
    pub fn narrowest(&self) -> f64 {
        let m = self.max_analysis().max(MIN_ANALYSIS);
        t975(m - 1) * (self.variance(MAX_REPS) / m as f64).sqrt()
    }

    /// The narrowest half-width (log units) a fixed design reaches within `seconds` of cells,
    /// with that design; `None` where not even the fewest passes fit. A design's cost grows
    /// with its repetitions, so the search ends at the first that cannot fit them.
    pub fn narrowest_within(&self, seconds: f64) -> Option<(f64, Design)> {
        let mut best: Option<(f64, Design)> = None;
        for reps in 1..=MAX_REPS {
            let fit = (seconds / self.seconds(reps, 1)).floor() as usize;
            let passes = fit.min(self.warmup + self.max_analysis());
            if passes < self.warmup + MIN_ANALYSIS {
                break;
            }
            let analysis = passes - self.warmup;
            let h = t975(analysis - 1) * (self.variance(reps) / analysis as f64).sqrt();
            if best.is_none_or(|(b, _)| h < b) {
                let design = Design {
                    reps,
                    analysis,
                    passes,
                    seconds: self.seconds(reps, passes),
                };
                best = Some((h, design));
            }
        }
        best
    }

    /// The design with the least device seconds (the fewer repetitions on a tie), among
    /// those within the limits; `None` when none of them reaches `h`. The search stops where
    /// even the fewest passes cost more than the best found: that bound grows with `r`, so
    /// the result is the cost model's exact optimum.
    pub fn best(&self, h: f64) -> Option<Design> {
        // Out of reach: answered at once, not by pricing every repetition count's design.
        if self.narrowest() > h {
            return None;
        }
        let mut best: Option<Design> = None;
        for reps in 1..=MAX_REPS {
            let floor = self.seconds(reps, self.warmup + MIN_ANALYSIS);
            if best.is_some_and(|b| floor > b.seconds) {
                break;
            }
            let design = self.design(reps, h);
            let within = design.analysis <= self.max_analysis();
            if within && best.is_none_or(|b| design.seconds < b.seconds) {
                best = Some(design);
            }
        }
        best
    }
}

/// The least `m ≥ 2` with `t(0.975, m−1)·√(v/m) ≤ h`.
pub fn analysis_passes(v: f64, h: f64) -> usize {
    let fits = |m: usize| t975(m - 1) * (v / m as f64).sqrt() <= h;
    // t(0.975, ·) exceeds the normal quantile, so no m below z²·v/h² fits: start there.
    let mut m = ((Z975 * Z975 * v / (h * h)).floor() as usize).max(MIN_ANALYSIS);
    while !fits(m) {
        m += 1;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> CostModel {
        CostModel {
            start_s: 4.0,
            rep_s: 0.5,
            arms: 3,
            warmup: 1,
            spreads: vec![(0.004f64.powi(2), 0.012f64.powi(2)), (0.0, 0.02f64.powi(2))],
        }
    }

    /// Every (r, m) of the cost model up to generous bounds: the cheapest one that reaches
    /// the half-width, by enumeration alone.
    fn brute_force(model: &CostModel, h: f64) -> (usize, usize, f64) {
        let mut best = (0, 0, f64::INFINITY);
        for reps in 1..=400 {
            let v = model.variance(reps);
            for m in 2..=2000 {
                if t975(m - 1) * (v / m as f64).sqrt() <= h {
                    let cost = model.seconds(reps, model.warmup + m);
                    if cost < best.2 {
                        best = (reps, m, cost);
                    }
                    break;
                }
            }
        }
        best
    }

    #[test]
    fn a_ladder_costs_its_cells_start_up_and_repetitions() {
        // 10 passes × 3 arms × (4 s + 2 × 0.5 s).
        assert_eq!(model().seconds(2, 10), 150.0);
    }

    #[test]
    fn the_search_finds_what_enumeration_finds() {
        for (start_s, rep_s, halfwidth) in [
            (4.0, 0.5, 0.5),
            (4.0, 0.5, 0.2),
            (30.0, 0.1, 0.3),
            (0.1, 2.0, 1.0),
            (10.0, 1.0, 0.05),
        ] {
            let mut m = model();
            (m.start_s, m.rep_s) = (start_s, rep_s);
            let h = (1.0 + halfwidth / 100.0f64).ln();
            let best = m.best(h).unwrap();
            let (reps, analysis, seconds) = brute_force(&m, h);
            assert_eq!(
                (best.reps, best.analysis, best.seconds),
                (reps, analysis, seconds),
                "c0 {start_s} T {rep_s} ±{halfwidth}"
            );
            assert_eq!(best.passes, analysis + m.warmup);
        }
    }

    #[test]
    fn a_half_width_beyond_the_limits_is_no_design_and_answers_at_once() {
        let m = model();
        assert_eq!(m.max_analysis(), 100_000 / 3 - 1);
        // At 1,000 repetitions a cell the larger variance is arm one's 1.6e-5 + 1.44e-7.
        let at_most = 1.959_964 * ((1.6e-5 + 1.44e-7) / 33_332f64).sqrt();
        assert!((m.narrowest() - at_most).abs() < 1e-8, "{}", m.narrowest());
        // ±0.005 % fits (h above the narrowest, 0.0043 %), within the cell limit.
        let fits = m.best((1.0 + 0.005f64 / 100.0).ln()).unwrap();
        assert!(fits.analysis <= m.max_analysis(), "{fits:?}");
        assert!(
            fits.reps > 1,
            "one repetition needs more passes than the limit: {fits:?}"
        );
        // Where repetitions are dear, one a cell would be cheapest, with more passes than a
        // ladder may hold: the cheapest design within the limit is chosen instead.
        let mut dear = model();
        (dear.start_s, dear.rep_s) = (0.1, 2.0);
        let within = dear.best((1.0 + 0.005f64 / 100.0).ln()).unwrap();
        assert!(within.analysis <= dear.max_analysis(), "{within:?}");
        assert!(dear.design(1, (1.0 + 0.005f64 / 100.0).ln()).seconds < within.seconds);
        // ±0.004 % does not fit at all.
        assert_eq!(m.best((1.0 + 0.004f64 / 100.0).ln()), None);
        // 7 % a pass, a busy CPU's spread, at ±0.005 %: refused at once, not searched for hours.
        let mut noisy = model();
        noisy.spreads = vec![(0.07f64.powi(2), 0.07f64.powi(2))];
        assert_eq!(noisy.best((1.0 + 0.005f64 / 100.0).ln()), None);
    }

    #[test]
    fn the_narrowest_within_a_time_is_what_enumeration_finds() {
        let m = model();
        for seconds in [60.0, 240.0, 1000.0] {
            let (h, design) = m.narrowest_within(seconds).unwrap();
            let mut want = (f64::INFINITY, 0, 0);
            for reps in 1..=400 {
                for passes in m.warmup + MIN_ANALYSIS..=5000 {
                    if m.seconds(reps, passes) > seconds {
                        break;
                    }
                    let a = passes - m.warmup;
                    let width = t975(a - 1) * (m.variance(reps) / a as f64).sqrt();
                    if width < want.0 {
                        want = (width, reps, passes);
                    }
                }
            }
            assert_eq!((h, design.reps, design.passes), want, "{seconds} s");
            assert!(design.seconds <= seconds);
        }
        // Less than the fewest passes of one repetition: nothing fits; exactly them: they do.
        assert_eq!(m.narrowest_within(m.seconds(1, 3) - 0.01), None);
        let fewest = m.narrowest_within(m.seconds(1, 3)).unwrap().1;
        assert_eq!((fewest.reps, fewest.passes), (1, 3));
        // More time than a ladder may use: the cell limit caps the passes.
        let capped = m.narrowest_within(1e12).unwrap().1;
        assert_eq!(capped.passes, m.warmup + m.max_analysis());
        // No spread within a cell: every repetition count reaches the same width at the cap,
        // and the fewest repetitions are kept, as `best` keeps them on a tie.
        let mut between = model();
        between.spreads = vec![(1e-4, 0.0)];
        assert_eq!(between.narrowest_within(1e12).unwrap().1.reps, 1);
    }

    #[test]
    fn no_design_takes_less_than_the_repetitions_floor_and_a_free_start_up_nears_it() {
        for (start_s, halfwidth) in [(4.0, 0.2), (0.0, 0.05), (30.0, 0.5), (0.5, 0.1)] {
            let mut m = model();
            m.start_s = start_s;
            let h = (1.0 + halfwidth / 100.0f64).ln();
            let floor = m.repetitions_floor(h);
            let (_, _, seconds) = brute_force(&m, h);
            assert!(
                floor < seconds,
                "c0 {start_s} ±{halfwidth}: {floor} ≥ {seconds}"
            );
        }
        // Nothing but repetitions to pay for, all of the spread within a cell and many passes:
        // t nears z and the cheapest design nears the floor, so the bound is the cost itself.
        let mut free = model();
        (free.start_s, free.spreads) = (0.0, vec![(0.0, 0.02f64.powi(2))]);
        let h = (1.0 + 0.05 / 100.0f64).ln();
        let (_, _, seconds) = brute_force(&free, h);
        let floor = free.repetitions_floor(h);
        assert!(
            floor < seconds && seconds < 1.01 * floor,
            "{seconds} against {floor}"
        );
        // 3 arms × 0.5 s × z² × 4e-4 / h², at h = 0.001: 2304.9 s.
        let floor = model().repetitions_floor(0.001);
        assert!((floor / 2304.875 - 1.0).abs() < 1e-5, "{floor}");
    }

    #[test]
    fn on_a_tie_the_fewer_repetitions_win() {
        // Repetitions that cost nothing and buy nothing: every r is the same design.
        let mut free = model();
        (free.rep_s, free.spreads) = (0.0, vec![(1e-4, 0.0)]);
        let best = free.best(1.005f64.ln()).unwrap();
        assert_eq!(best.reps, 1, "{best:?}");
    }

    #[test]
    fn the_narrowest_reads_t_at_the_passes_a_ladder_may_hold() {
        // 50,000 arms leave one analysis pass under the cell limit: the floor of two passes,
        // and t(0.975, 1).
        let mut wide = model();
        wide.arms = 50_000;
        let v = wide.variance(MAX_REPS);
        assert_eq!(wide.narrowest(), t975(1) * (v / 2.0).sqrt());
    }

    #[test]
    fn the_passes_are_the_least_that_reach_the_half_width() {
        // v = 1e-4, h = 0.01: t(0.975, m−1)/√m ≤ 1 first at m = 7 (2.447/√7 = 0.925;
        // m = 6: 2.571/√6 = 1.050).
        assert_eq!(analysis_passes(1e-4, 0.01), 7);
        assert_eq!(analysis_passes(0.0, 0.01), MIN_ANALYSIS);
        // The larger spread of the two arms decides: at r = 1 arm two's 4e-4 beats arm one's
        // 1.6e-5 + 1.44e-4.
        assert_eq!(model().variance(1), 4e-4);
        assert!((model().variance(100) - (1.6e-5 + 1.44e-6)).abs() < 1e-18);
    }
}
