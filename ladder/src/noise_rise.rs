//! Noise that rose after the first look (METHOD.md "Noise that rose after the first look"):
//! a stopped ladder's intervals use the first look's spread, which is honest only while the
//! later passes are as noisy. One F test per metric, and the spread its intervals then use;
//! the report, `analyze calibrate` and the runner's own reading all take it from here.

use crate::pooled::pooled_spread;
use crate::spec::{StopSpec, StopSpread};
use crate::stats::Spread;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, FisherSnedecor};
use std::ops::Range;

/// The level below which the later passes' noise is said to have risen.
pub const LEVEL: f64 = 0.05;

/// The later passes' noise against the first look's, for one metric.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NoiseRise {
    /// `s1/s0`: the later passes' spread of one paired log ratio over the first look's.
    pub ratio: f64,
    pub df_first: usize,
    pub df_later: usize,
    /// One-sided: `P(F(df_later, df_first) ≥ (s1/s0)²)`.
    pub p: f64,
    /// `p < LEVEL`: the metric's intervals are read from the ladder's own spread.
    pub rose: bool,
}

impl NoiseRise {
    /// The test over `values[pass][arm]` (`None` where missing), the first look's analysis
    /// passes `first` against the later ones `later`; `None` without two complete passes
    /// on each side.
    pub fn test(
        values: &[Vec<Option<f64>>],
        first: Range<usize>,
        later: Range<usize>,
    ) -> Option<NoiseRise> {
        let (s0, df_first) = pooled_spread(values, first);
        let (s1, df_later) = pooled_spread(values, later);
        // Fewer than two complete passes on a side leave it no degrees of freedom, and no test.
        let f = FisherSnedecor::new(df_later as f64, df_first as f64).ok()?;
        // A first look of identical cells against noisy later ones is a rise without bound
        // (p = 0); later cells all alike are none, a first look's too (0/0 has no p).
        let ratio = s1 / s0;
        let p = if s1 > 0.0 { f.sf(ratio * ratio) } else { 1.0 };
        Some(NoiseRise {
            ratio,
            df_first,
            df_later,
            p,
            rose: p < LEVEL,
        })
    }
}

impl NoiseRise {
    /// `×2.16`: how much the spread rose (`×∞` after a first look whose ratios did not vary).
    pub fn factor(&self) -> String {
        match self.ratio.is_infinite() {
            true => "×∞".into(),
            false => format!("×{:.2}", self.ratio),
        }
    }

    /// The test in words, for the report's details.
    pub fn words(&self) -> String {
        let verdict = match self.rose {
            true => "the noise rose: every interval of this metric is read from the spread of all the analysis passes (each series' own, or pooled under `spread = \"pooled\"`), and the half-width target no longer holds",
            false => "no rise at the 5 % level: the first look's spread stands",
        };
        let (later, first) = (self.df_later, self.df_first);
        // s0 = 0 makes the ratio infinite (s1 > 0) or 0/0 (s1 = 0): no number to print.
        let measured = match (self.ratio.is_nan(), self.ratio.is_infinite()) {
            (true, _) => format!("the paired log ratios do not vary, in the first look ({first} df) or after it ({later} df)"),
            (_, true) => format!("the paired log ratios do not vary in the first look ({first} df) but do after it ({later} df)"),
            _ => format!(
                "the later passes' spread is {:.2}× the first look's (F = {:.2} on {later} and {first} df, one-sided p = {:.2e})",
                self.ratio,
                self.ratio * self.ratio,
                self.p
            ),
        };
        format!("{measured}: {verdict}")
    }
}

/// The spread one metric's intervals use, and the test that chose it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MetricSpread {
    pub spread: Spread,
    pub noise_rise: Option<NoiseRise>,
}

impl MetricSpread {
    /// A fixed ladder's (or one cut off before its first look): each series' own spread.
    pub const OWN: MetricSpread = MetricSpread {
        spread: Spread::Own,
        noise_rise: None,
    };

    /// Under `stop`, a ladder that ran the analysis passes `passes`: the first look's spread
    /// (each arm's, or pooled), or where the noise rose after it the same rule over every
    /// analysis pass (each series' own spread, or the pooled spread of them all); a ladder
    /// cut off before its first look reads as a fixed one.
    pub fn stopped(
        stop: &StopSpec,
        warmup: usize,
        values: &[Vec<Option<f64>>],
        passes: Range<usize>,
    ) -> MetricSpread {
        let first_look = stop.first_look();
        // Cut off before its first look, Stein's rule never ran: a fixed ladder's reading.
        if passes.end < first_look {
            return MetricSpread::OWN;
        }
        let noise_rise = NoiseRise::test(values, warmup..first_look, first_look..passes.end);
        let spread = match (noise_rise, stop.spread) {
            (Some(r), StopSpread::PerArm) if r.rose => Spread::Own,
            (Some(r), StopSpread::Pooled) if r.rose => {
                let (sd, df) = pooled_spread(values, warmup..passes.end);
                Spread::Pooled { sd, df }
            }
            _ => stop.interval_spread(warmup, values),
        };
        MetricSpread { spread, noise_rise }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stop() -> StopSpec {
        StopSpec {
            halfwidth_pct: 1.0,
            looks: vec![5, 12],
            spread: Default::default(),
            metrics: Vec::new(),
            within_s: None,
        }
    }

    /// Two arms whose paired log ratio alternates ±`d` around 0 in each pass.
    fn alternating(ds: &[f64]) -> Vec<Vec<Option<f64>>> {
        ds.iter()
            .enumerate()
            .map(|(p, d)| {
                let d = if p % 2 == 0 { *d } else { -*d };
                vec![Some(100.0), Some(100.0 * d.exp())]
            })
            .collect()
    }

    #[test]
    fn the_ratio_and_p_by_hand() {
        // First look: ±0.001 over 4 passes; later: ±0.003 over 4 passes. Each side's log
        // ratios are ±d with mean 0: var = 4d²/3, df 3, so s1/s0 = 3 and F = 9 on (3, 3).
        let values = alternating(&[0.001, 0.001, 0.001, 0.001, 0.003, 0.003, 0.003, 0.003]);
        let r = NoiseRise::test(&values, 0..4, 4..8).unwrap();
        assert!((r.ratio - 3.0).abs() < 1e-9, "{r:?}");
        assert_eq!((r.df_first, r.df_later), (3, 3));
        // P(F(3, 3) ≥ 9) = I_0.1(1.5, 1.5) = 0.05204 (by quadrature): not below 1 %.
        assert!((r.p - 0.05204).abs() < 1e-5, "{r:?}");
        assert!(!r.rose);
    }

    #[test]
    fn a_rise_reads_the_series_own_spread_and_a_steady_ladder_the_first_looks() {
        let stop = stop();
        // One warm-up pass, a first look of 4 analysis passes, then 7 later ones.
        let mut ds = vec![0.001; 5];
        ds.extend([0.01; 7]);
        let rose = MetricSpread::stopped(&stop, 1, &alternating(&ds), 1..12);
        assert_eq!(rose.spread, Spread::Own);
        let r = rose.noise_rise.unwrap();
        assert!(r.rose && r.p < LEVEL && r.ratio > 5.0, "{r:?}");
        assert_eq!((r.df_first, r.df_later), (3, 6));

        let steady = MetricSpread::stopped(&stop, 1, &alternating(&[0.001; 12]), 1..12);
        assert_eq!(steady.spread, Spread::FirstLook(4));
        assert!(!steady.noise_rise.unwrap().rose);
        // Noise that fell is no rise: the first look's spread stays.
        let mut fell = vec![0.01; 5];
        fell.extend([0.001; 7]);
        let fell = MetricSpread::stopped(&stop, 1, &alternating(&fell), 1..12);
        assert_eq!(fell.spread, Spread::FirstLook(4));
    }

    #[test]
    fn a_pooled_stop_falls_back_to_the_pooled_spread_of_every_pass() {
        let mut stop = stop();
        stop.spread = StopSpread::Pooled;
        let mut ds = vec![0.001; 5];
        ds.extend([0.01; 7]);
        let values = alternating(&ds);
        let rose = MetricSpread::stopped(&stop, 1, &values, 1..12);
        let (sd, df) = pooled_spread(&values, 1..12);
        assert_eq!(df, 10);
        assert_eq!(rose.spread, Spread::Pooled { sd, df });
        // Steady: the first look's pooled spread.
        let steady = alternating(&[0.001; 12]);
        let (sd, df) = pooled_spread(&steady, 1..5);
        assert_eq!(df, 3);
        let read = MetricSpread::stopped(&stop, 1, &steady, 1..12);
        assert_eq!(read.spread, Spread::Pooled { sd, df });
    }

    #[test]
    fn a_quiet_first_look_against_noisy_later_passes_is_a_rise_and_steady_silence_is_none() {
        let mut ds = vec![0.0; 4];
        ds.extend([0.01; 4]);
        let r = NoiseRise::test(&alternating(&ds), 0..4, 4..8).unwrap();
        assert!(r.rose && r.p == 0.0, "{r:?}");
        let silent = NoiseRise::test(&alternating(&[0.0; 8]), 0..4, 4..8).unwrap();
        assert!(!silent.rose, "{silent:?}");
    }

    #[test]
    fn the_words_give_the_ratio_the_test_and_what_was_done() {
        let rise = |p: f64| NoiseRise {
            ratio: 2.16,
            df_first: 12,
            df_later: 27,
            p,
            rose: p < LEVEL,
        };
        let rose = rise(0.0037).words();
        for part in [
            "2.16× the first look's",
            "F = 4.67 on 27 and 12 df",
            "p = 3.70e-3",
            "the noise rose",
        ] {
            assert!(rose.contains(part), "{part:?} in {rose}");
        }
        let held = rise(0.3).words();
        assert!(held.contains("the first look's spread stands"), "{held}");
        assert_eq!(rise(0.0037).factor(), "×2.16");
    }

    #[test]
    fn the_words_of_ratios_that_do_not_vary_print_no_ratio() {
        let test = |ds: &[f64]| NoiseRise::test(&alternating(ds), 0..4, 4..8).unwrap();
        let constant = test(&[0.0; 8]).words();
        assert!(
            constant.starts_with("the paired log ratios do not vary, in the first look (3 df) or after it (3 df): no rise"),
            "{constant}"
        );
        let mut ds = vec![0.0; 4];
        ds.extend([0.01; 4]);
        let quiet_first = test(&ds);
        assert_eq!(quiet_first.factor(), "×∞");
        let quiet_first = quiet_first.words();
        assert!(
            quiet_first.starts_with("the paired log ratios do not vary in the first look (3 df) but do after it (3 df): the noise rose"),
            "{quiet_first}"
        );
        for w in [constant, quiet_first] {
            assert!(!w.contains("NaN") && !w.contains("inf"), "{w}");
        }
    }

    #[test]
    fn a_ladder_cut_off_before_its_first_look_reads_as_a_fixed_one() {
        let values = alternating(&[0.001; 4]);
        assert_eq!(
            MetricSpread::stopped(&stop(), 1, &values, 1..4),
            MetricSpread::OWN
        );
    }

    #[test]
    fn a_ladder_stopped_at_its_first_look_has_no_test() {
        let values = alternating(&[0.001; 6]);
        assert_eq!(NoiseRise::test(&values, 1..5, 5..6), None);
        let stop = stop();
        let at_first = MetricSpread::stopped(&stop, 1, &values, 1..5);
        assert_eq!(at_first.spread, Spread::FirstLook(4));
        assert_eq!(at_first.noise_rise, None);
    }
}
