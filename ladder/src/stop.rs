//! Precision stopping: Stein's two-stage rule over the spec's looks (METHOD.md).
//!
//! The ladder's length is fixed from its first look alone: the spread of the paired log
//! ratios there says how many analysis passes reach the `[stop]` half-width, and the ladder
//! runs to the first look with that many (or to the last). The runner decides with it and
//! `verify` checks the file against it, so the rule lives here once.

use crate::spec::{StopSpec, StopSpread};
use crate::stats::{sample_sd, t975};
use serde::{Deserialize, Serialize};

/// Why a `[stop]` ladder ended where it did, as the done record writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stopped {
    /// A look's analysis passes reached the largest need.
    Precision,
    /// No look did: the ladder ran to its last look.
    MaxPasses,
    /// `[stop] within_s`: the look the spread gives would cost more seconds of cells than
    /// given, at the ladder's own seconds a pass; it stopped at the latest look that fits.
    Within,
}

impl Stopped {
    pub fn as_str(self) -> &'static str {
        match self {
            Stopped::Precision => "precision",
            Stopped::MaxPasses => "max-passes",
            Stopped::Within => "within",
        }
    }
}

impl StopSpec {
    /// `m* = (t(0.975, m0−1) · s0 / ln(1 + halfwidth/100))²`: the analysis passes one series
    /// of paired log ratios needs, from its `m0` values at the first look.
    pub fn passes_needed(&self, first_look_log_ratios: &[f64]) -> f64 {
        let m0 = first_look_log_ratios.len();
        self.need(sample_sd(first_look_log_ratios), m0.saturating_sub(1))
    }

    /// `(t(0.975, df) · s0 / ln(1 + halfwidth/100))²`: the analysis passes a spread `s0` with
    /// `df` degrees of freedom needs.
    pub fn need(&self, s0: f64, df: usize) -> f64 {
        let target = (1.0 + self.halfwidth_pct / 100.0).ln();
        (t975(df) * s0 / target).powi(2)
    }

    /// The look a ladder runs to, given the largest need over every metric and arm: the
    /// first look whose analysis passes (`look − warmup`) reach it, else the last look.
    /// A need that cannot be computed (NaN) runs to the last look.
    pub fn stopping_look(&self, warmup: usize, need: f64) -> (usize, Stopped) {
        let last = self.looks.last().copied().unwrap_or(0);
        self.looks
            .iter()
            .find(|&&look| need.is_finite() && look.saturating_sub(warmup) as f64 >= need)
            .map_or((last, Stopped::MaxPasses), |&look| {
                (look, Stopped::Precision)
            })
    }

    pub fn first_look(&self) -> usize {
        self.looks.first().copied().unwrap_or(0)
    }

    /// Whether `column`'s need sets the stopping look: every metric's, unless `metrics`
    /// names some.
    pub fn sets_stop(&self, column: &str) -> bool {
        self.metrics.is_empty() || self.metrics.iter().any(|m| m == column)
    }
}

/// One metric's values at the first look: `values[pass][arm]`, `None` where a cell printed
/// nothing usable.
#[derive(Clone, Debug)]
pub struct MetricValues {
    pub metric: String,
    pub values: Vec<Vec<Option<f64>>>,
}

impl MetricValues {
    /// The paired log ratios `ln(x_arm / x_base)` over `passes`, skipping passes where a
    /// value is missing or not positive.
    pub fn log_ratios(&self, arm: usize, base: usize, passes: std::ops::Range<usize>) -> Vec<f64> {
        passes
            .filter_map(|p| {
                let row = self.values.get(p)?;
                let (x, b) = ((*row.get(arm)?)?, (*row.get(base)?)?);
                (x > 0.0 && b > 0.0).then(|| (x / b).ln())
            })
            .collect()
    }
}

/// The quantity whose spread asks for the most passes.
#[derive(Clone, Debug, PartialEq)]
pub struct Need {
    /// Analysis passes needed (`m*`); NaN where a ratio could not be formed.
    pub passes: f64,
    pub metric: String,
    pub arm: String,
}

/// Where a `[stop]` ladder ends, decided at its first look.
#[derive(Clone, Debug, PartialEq)]
pub struct StopPlan {
    pub look: usize,
    pub stopped: Stopped,
    pub need: Need,
}

impl StopPlan {
    /// `[stop] within_s` applied to this plan: where its look costs more than `within_s` at
    /// `first_look_seconds` (the cells through the first look, warm-up included) over the
    /// first look's passes, the latest earlier look that fits, else the first look (it has
    /// run). Without `within_s`, or without a finite cost a pass, the plan as it is.
    pub fn within(self, stop: &StopSpec, first_look_seconds: f64) -> StopPlan {
        let pass_seconds = first_look_seconds / stop.first_look().max(1) as f64;
        let Some(limit) = stop.within_s.filter(|_| pass_seconds.is_finite()) else {
            return self;
        };
        let fits = |look: usize| look as f64 * pass_seconds <= limit;
        if fits(self.look) {
            return self;
        }
        // A look costs its passes times the pass's seconds, so every look that fits lies
        // before this plan's.
        let look = stop
            .looks
            .iter()
            .copied()
            .rev()
            .find(|&l| fits(l))
            .unwrap_or(stop.first_look());
        StopPlan {
            look,
            stopped: Stopped::Within,
            ..self
        }
    }

    /// The plan in words, for the progress line and the summary: what the half-width needs,
    /// what that costs at `pass_seconds` a pass, and where the ladder stops instead.
    pub fn describe(&self, stop: &StopSpec, warmup: usize, pass_seconds: f64) -> String {
        let analysis = self.look.saturating_sub(warmup);
        let h = stop.halfwidth_pct;
        let set_by = format!("set by {} of arm {}", self.need.metric, self.need.arm);
        if !self.need.passes.is_finite() {
            return format!(
                "±{h} %: the need could not be computed (a missing or non-positive value at the first look); the ladder runs to its last look, {} passes",
                self.look
            );
        }
        let need = format!(
            "±{h} % needs about {} analysis passes ({})",
            thousands(self.need.passes.ceil()),
            cost(self.need.passes.ceil() + warmup as f64, pass_seconds)
        );
        match self.stopped {
            Stopped::Precision => format!(
                "{need}, {set_by}; look {} ({analysis} analysis passes) reaches it",
                self.look
            ),
            Stopped::MaxPasses => format!(
                "{need}, {set_by}; the last look is {} passes ({analysis} analysis), which should give about ±{:.2} %",
                self.look,
                self.halfwidth_at(stop, analysis)
            ),
            Stopped::Within => format!(
                "{need}, {set_by}; within_s = {} s of cells ends it at look {} ({analysis} analysis passes), which should give about ±{:.2} %",
                stop.within_s.unwrap_or(f64::NAN),
                self.look,
                self.halfwidth_at(stop, analysis)
            ),
        }
    }

    /// The half-width (percent) the plan's largest need gives at `analysis` passes: the
    /// first look's `t · s0` over `√m`.
    pub fn halfwidth_at(&self, stop: &StopSpec, analysis: usize) -> f64 {
        let scale = (self.need.passes / analysis.max(1) as f64).sqrt();
        100.0 * ((1.0 + stop.halfwidth_pct / 100.0).ln() * scale).exp_m1()
    }
}

/// `12,345`.
fn thousands(n: f64) -> String {
    let digits = format!("{n:.0}");
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `about 16 min at 0.9 s a pass`.
fn cost(passes: f64, pass_seconds: f64) -> String {
    if !(pass_seconds.is_finite() && pass_seconds > 0.0) {
        return "no pass timed yet".into();
    }
    let seconds = passes * pass_seconds;
    let total = match seconds {
        s if s < 120.0 => format!("{s:.0} s"),
        s if s < 7200.0 => format!("{:.0} min", s / 60.0),
        s if s < 172_800.0 => format!("{:.1} h", s / 3600.0),
        s => format!("{:.1} days", s / 86_400.0),
    };
    let d = if pass_seconds < 0.1 { 3 } else { 2 };
    format!("about {total} of cells at {pass_seconds:.d$} s a pass")
}

impl StopSpec {
    /// The plan from the first look: for every metric and every non-base arm, the need of
    /// its paired log ratios `ln(x_arm / x_base)` over the first look's analysis passes; the
    /// largest need picks the look. `arms[base]` is the base.
    pub fn plan(
        &self,
        warmup: usize,
        base: usize,
        arms: &[String],
        metrics: &[MetricValues],
    ) -> StopPlan {
        let passes = warmup..self.first_look();
        let mut largest: Option<Need> = None;
        for metric in metrics.iter().filter(|m| self.sets_stop(&m.metric)) {
            let pooled = (self.spread == StopSpread::Pooled)
                .then(|| crate::pooled::pooled_spread(&metric.values, passes.clone()));
            for arm in (0..arms.len()).filter(|&a| a != base) {
                let ratios = metric.log_ratios(arm, base, passes.clone());
                // A need from fewer passes than the first look's cannot be trusted: NaN.
                let need = match (ratios.len() == passes.len(), pooled) {
                    (false, _) => f64::NAN,
                    (true, Some((s0, df))) => self.need(s0, df),
                    (true, None) => self.passes_needed(&ratios),
                };
                let candidate = Need {
                    passes: need,
                    metric: metric.metric.clone(),
                    arm: arms[arm].clone(),
                };
                // NaN beats every number: a need that cannot be computed runs to the last look.
                let larger = largest
                    .as_ref()
                    .is_none_or(|l| !l.passes.is_nan() && (need.is_nan() || need > l.passes));
                if larger {
                    largest = Some(candidate);
                }
            }
        }
        let need = largest.unwrap_or(Need {
            passes: f64::NAN,
            metric: String::new(),
            arm: String::new(),
        });
        let (look, stopped) = self.stopping_look(warmup, need.passes);
        StopPlan {
            look,
            stopped,
            need,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stop(halfwidth_pct: f64, looks: &[usize]) -> StopSpec {
        StopSpec {
            halfwidth_pct,
            looks: looks.to_vec(),
            spread: Default::default(),
            metrics: Vec::new(),
            within_s: None,
        }
    }

    #[test]
    fn the_done_record_says_why_in_the_words_of_the_format() {
        assert_eq!(Stopped::Precision.as_str(), "precision");
        assert_eq!(Stopped::MaxPasses.as_str(), "max-passes");
        assert_eq!(Stopped::Within.as_str(), "within");
        for stopped in [Stopped::Precision, Stopped::MaxPasses, Stopped::Within] {
            let json = serde_json::to_string(&stopped).unwrap();
            assert_eq!(json, format!("\"{}\"", stopped.as_str()));
        }
    }

    #[test]
    fn a_pass_with_a_value_that_is_not_positive_gives_no_ratio() {
        let v = values(
            "tok_s",
            &[[2.0, 4.0, 1.0], [0.0, 4.0, 1.0], [2.0, 0.0, -1.0]],
        );
        assert_eq!(v.log_ratios(1, 0, 0..3), vec![2f64.ln()]);
        assert_eq!(v.log_ratios(2, 0, 0..3), vec![0.5f64.ln()]);
    }

    #[test]
    fn the_plan_in_words_groups_thousands_and_says_the_cost() {
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(thousands(1_234_567.0), "1,234,567");
        assert_eq!(cost(200.0, 0.05), "about 10 s of cells at 0.050 s a pass");
        assert_eq!(cost(1000.0, 0.9), "about 15 min of cells at 0.90 s a pass");
        assert_eq!(cost(10_000.0, 1.8), "about 5.0 h of cells at 1.80 s a pass");
        assert_eq!(
            cost(200_000.0, 1.8),
            "about 4.2 days of cells at 1.80 s a pass"
        );
        // Each unit from its lower bound on.
        assert_eq!(cost(120.0, 1.0), "about 2 min of cells at 1.00 s a pass");
        assert_eq!(cost(7200.0, 1.0), "about 2.0 h of cells at 1.00 s a pass");
        assert_eq!(
            cost(172_800.0, 1.0),
            "about 2.0 days of cells at 1.00 s a pass"
        );
        assert_eq!(cost(1000.0, 0.1), "about 100 s of cells at 0.10 s a pass");
        assert_eq!(cost(10.0, 0.0), "no pass timed yet");
        assert_eq!(cost(10.0, -1.0), "no pass timed yet");
        assert_eq!(cost(10.0, f64::INFINITY), "no pass timed yet");
    }

    #[test]
    fn the_need_follows_the_formula() {
        // l = ln ratios with sd 0.01 over 4 values: m* = (t(0.975, 3) · 0.01 / ln 1.01)².
        let l = [0.01, 0.02, 0.0, 0.01 + 0.01 * 2f64.sqrt() * 0.0];
        let s0 = sample_sd(&l);
        let expected = (3.182446305284263 * s0 / 1.01f64.ln()).powi(2);
        let got = stop(1.0, &[5, 8]).passes_needed(&l);
        assert!((got - expected).abs() < 1e-9, "{got} vs {expected}");
    }

    #[test]
    fn it_stops_at_the_first_look_that_reaches_the_need() {
        let s = stop(0.5, &[6, 10, 16]);
        assert_eq!(s.stopping_look(1, 4.0), (6, Stopped::Precision));
        assert_eq!(s.stopping_look(1, 5.0), (6, Stopped::Precision));
        assert_eq!(s.stopping_look(1, 5.5), (10, Stopped::Precision));
        assert_eq!(s.stopping_look(1, 15.0), (16, Stopped::Precision));
        assert_eq!(s.stopping_look(1, 15.1), (16, Stopped::MaxPasses));
        assert_eq!(s.stopping_look(1, f64::NAN), (16, Stopped::MaxPasses));
    }

    fn planned(look: usize, stopped: Stopped) -> StopPlan {
        StopPlan {
            look,
            stopped,
            need: Need {
                passes: 30.0,
                metric: "x".into(),
                arm: "a".into(),
            },
        }
    }

    #[test]
    fn within_s_ends_the_ladder_at_the_latest_look_its_own_cells_can_pay_for() {
        let mut s = stop(0.5, &[6, 10, 16]);
        s.within_s = Some(100.0);
        // 6 passes took 48 s: 8 s a pass, so look 10 costs 80 s and look 16 costs 128 s.
        let to = |look, stopped| {
            let plan = planned(look, stopped).within(&s, 48.0);
            (plan.look, plan.stopped)
        };
        assert_eq!(to(16, Stopped::MaxPasses), (10, Stopped::Within));
        assert_eq!(to(16, Stopped::Precision), (10, Stopped::Within));
        assert_eq!(to(10, Stopped::Precision), (10, Stopped::Precision));
        assert_eq!(to(6, Stopped::Precision), (6, Stopped::Precision));
        // A look that costs exactly the limit fits.
        let exact = planned(16, Stopped::MaxPasses).within(&s, 100.0 * 6.0 / 16.0);
        assert_eq!((exact.look, exact.stopped), (16, Stopped::MaxPasses));
        // Past every look: the first look, which has run.
        let slow = planned(16, Stopped::MaxPasses).within(&s, 120.0);
        assert_eq!((slow.look, slow.stopped), (6, Stopped::Within));
        // No cost a pass, or no within_s: the plan as the spread gave it.
        let unknown = planned(16, Stopped::MaxPasses).within(&s, f64::NAN);
        assert_eq!((unknown.look, unknown.stopped), (16, Stopped::MaxPasses));
        let free = planned(16, Stopped::MaxPasses).within(&stop(0.5, &[6, 10, 16]), 1e9);
        assert_eq!((free.look, free.stopped), (16, Stopped::MaxPasses));
    }

    fn values(metric: &str, rows: &[[f64; 3]]) -> MetricValues {
        MetricValues {
            metric: metric.into(),
            values: rows
                .iter()
                .map(|r| r.iter().map(|&v| Some(v)).collect())
                .collect(),
        }
    }

    #[test]
    fn of_two_equal_needs_the_plan_names_the_first() {
        let arms = ["base".to_string(), "a".into(), "b".into()];
        let twins = values(
            "x",
            &[
                [1.0, 1.0, 1.0],
                [100.0, 101.0, 101.0],
                [100.0, 99.0, 99.0],
                [100.0, 100.0, 100.0],
            ],
        );
        let plan = stop(0.5, &[4, 8]).plan(1, 0, &arms, &[twins]);
        assert_eq!(plan.need.arm, "a");
    }

    /// Three arms; pass 0 is warm-up, so a first look at 4 gives 3 analysis passes. `quiet`
    /// moves each arm by 0.1 % at most, `noisy` moves arm b by 3 %.
    fn quiet_and_noisy() -> ([String; 3], MetricValues, MetricValues) {
        let arms = ["base".to_string(), "a".into(), "b".into()];
        let quiet = values(
            "quiet",
            &[
                [9.0, 1.0, 1.0],
                [100.0, 101.0, 100.0],
                [100.0, 101.0, 100.1],
                [100.0, 101.0, 99.9],
            ],
        );
        let noisy = values(
            "noisy",
            &[
                [1.0, 1.0, 1.0],
                [100.0, 100.0, 103.0],
                [100.0, 100.0, 97.0],
                [100.0, 100.0, 100.0],
            ],
        );
        (arms, quiet, noisy)
    }

    #[test]
    fn the_plan_takes_the_largest_need_over_metrics_and_arms() {
        let (arms, quiet, noisy) = quiet_and_noisy();
        let s = stop(0.5, &[4, 8, 40]);
        let plan = s.plan(1, 0, &arms, &[quiet, noisy]);
        let l = [1.03f64.ln(), 0.97f64.ln(), 0.0];
        assert!((plan.need.passes - s.passes_needed(&l)).abs() < 1e-9);
        assert_eq!(
            (plan.need.metric.as_str(), plan.need.arm.as_str()),
            ("noisy", "b")
        );
        assert_eq!(plan.stopped, s.stopping_look(1, plan.need.passes).1);
        let words = plan.describe(&s, 1, 2.0);
        assert!(words.contains("set by noisy of arm b"), "{words}");
        // m* = 670.2 here: 671 analysis passes and the warm-up, at 2 s a pass.
        assert!(
            words.contains(
                "±0.5 % needs about 671 analysis passes (about 22 min of cells at 2.00 s a pass)"
            ),
            "{words}"
        );
        // The last look's 39 passes give √(670.2/39) times the target half-width.
        let at_40 = 100.0 * (1.005f64.ln() * (670.247_669 / 39.0f64).sqrt()).exp_m1();
        assert!((plan.halfwidth_at(&s, 39) - at_40).abs() < 1e-6);
        assert!(
            words.ends_with(&format!(
                "the last look is 40 passes (39 analysis), which should give about ±{at_40:.2} %"
            )),
            "{words}"
        );
    }

    /// `[stop] metrics` names the metrics whose need sets the look: the noisy one's is left
    /// out, and the quiet one's stops the ladder at its first look.
    #[test]
    fn only_the_named_metrics_set_the_stopping_look() {
        let (arms, quiet, noisy) = quiet_and_noisy();
        let mut s = stop(0.5, &[4, 8, 40]);
        s.metrics = vec!["quiet".into()];
        assert!(s.sets_stop("quiet") && !s.sets_stop("noisy"));
        let plan = s.plan(1, 0, &arms, &[quiet, noisy]);
        assert_eq!(plan.need.metric, "quiet");
        assert_eq!((plan.look, plan.stopped), (4, Stopped::Precision));
    }

    /// The need of a fixed ladder, worked out by hand: the base moves from pass to pass, so
    /// only the ratio `x / base` gives these log ratios.
    #[test]
    fn the_need_of_a_fixed_ladder_by_hand() {
        let arms = ["base".to_string(), "a".into()];
        let v = MetricValues {
            metric: "m".into(),
            values: [[9.0, 1.0], [100.0, 101.0], [110.0, 110.0], [90.0, 91.8]]
                .iter()
                .map(|r| r.iter().map(|&v| Some(v)).collect())
                .collect(),
        };
        // l = 0.009950331, 0, 0.019802627; s0 = 0.009901354; t(0.975, 2) = 4.302652730;
        // m* = (4.302652730 · 0.009901354 / ln 1.01)² = 18.331024.
        let s = stop(1.0, &[4, 12, 19, 20]);
        let plan = s.plan(1, 0, &arms, std::slice::from_ref(&v));
        assert!(
            (plan.need.passes - 18.331_024_237).abs() < 1e-6,
            "{}",
            plan.need.passes
        );
        assert_eq!((plan.look, plan.stopped), (20, Stopped::Precision));
        // A need that lands exactly on a look's analysis passes stops there.
        let exact = stop(1.0, &[4, 19, 20]);
        assert_eq!(exact.stopping_look(1, 18.0), (19, Stopped::Precision));
        assert_eq!(exact.stopping_look(1, 18.000_001), (20, Stopped::Precision));
        // The largest need wins, whichever arm comes first; NaN is larger than any.
        let arms3 = ["base".to_string(), "a".into(), "b".into()];
        let mut three = v.clone();
        for (row, b) in three.values.iter_mut().zip([1.0, 100.1, 110.11, 90.09]) {
            row.push(Some(b));
        }
        let plan = s.plan(1, 0, &arms3, std::slice::from_ref(&three));
        assert!((plan.need.passes - 18.331_024_237).abs() < 1e-6);
        assert_eq!(plan.need.arm, "a");
        three.values[2][2] = None;
        let plan = s.plan(1, 0, &arms3, std::slice::from_ref(&three));
        assert!(
            plan.need.passes.is_nan() && plan.need.arm == "b",
            "{plan:?}"
        );
        assert_eq!((plan.look, plan.stopped), (20, Stopped::MaxPasses));
    }

    #[test]
    fn a_missing_value_runs_to_the_last_look() {
        let arms = ["base".to_string(), "a".into()];
        let mut v = values(
            "m",
            &[
                [1.0, 1.0, 0.0],
                [1.0, 1.0, 0.0],
                [1.0, 1.0, 0.0],
                [1.0, 1.0, 0.0],
            ],
        );
        v.values[2][1] = None;
        let plan = stop(0.5, &[4, 8]).plan(1, 0, &arms, &[v]);
        assert_eq!((plan.look, plan.stopped), (8, Stopped::MaxPasses));
        assert_eq!(plan.need.arm, "a");
    }
}
