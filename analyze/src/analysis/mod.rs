//! One ladder read as METHOD.md (method 2.1) says: the log-ratio figures of every arm against
//! the base with Holm's verdicts, all arm-to-arm contrasts, paired noise and the gate, the
//! controls, the order effects, the round split and output identity, with the figures of
//! `extras` beside them.
//!
//! [`read_metric`] is the whole reading of one metric from its grid; `analyze calibrate`
//! calls it on simulated grids, so that what is calibrated is exactly what is reported.

pub mod breakdown;
mod controls;
mod energy_split;
mod round_split;
mod run_info;

pub use controls::Control;
pub use energy_split::{energy_factors, EnergySplit};
pub use ladder::noise_rise::{MetricSpread, NoiseRise};
pub use round_split::{split_factors, RoundCell, RoundSplit, SplitArm};
pub use run_info::{RunArm, RunInfo};

use crate::extras;
use crate::frames::{Grid, LadderInfo, LoadedFile, SeriesKind};
use crate::identity::Identity;
use crate::minute::{self, MinuteHalfwidth};
use crate::model::{Cells, OrderEffects};
use crate::stats::{self, Summary};
use crate::time_use::ArmTime;
use crate::variance::VarianceComponents;
use crate::witness::Witness;
use ladder::spec::{ArmSpec, Better, Expected, MetricSpec, ScanSpec, StopSpread};
use ladder::stats::{log_ratio, pct_of_log, LogSeries, Spread};
use ladder::{Defect, Role};
use serde::Serialize;
use std::ops::Range;

/// Settings of the figures beyond METHOD.md.
#[derive(Clone, Copy, Debug)]
pub struct ExtrasConfig {
    /// Bootstrap resamples per arm; 0 leaves the bootstrap out.
    pub resamples: usize,
    pub seed: u64,
}

/// What a reading needs to know about a ladder's arms and its pre-registered limits.
#[derive(Clone, Debug)]
pub struct Design {
    pub names: Vec<String>,
    pub roles: Vec<Role>,
    /// Each arm's known effect (known-effect arms only).
    pub expected: Vec<Option<Expected>>,
    pub base: usize,
    pub noise_limit_pct: Option<f64>,
    pub equivalence_margin_pct: Option<f64>,
    /// The control family's size `K`: every (control arm, metric) pair of the ladder.
    pub family: usize,
}

impl Design {
    /// The design of `arms` read on `metrics`; the family counts every pair in which the
    /// arm is a control (METHOD.md "Controls").
    pub fn new(
        arms: &[ArmSpec],
        metrics: &[MetricSpec],
        noise_limit_pct: Option<f64>,
        equivalence_margin_pct: Option<f64>,
    ) -> Design {
        let family = metrics
            .iter()
            .map(|m| arms.iter().filter(|a| a.controls(&m.column)).count())
            .sum();
        Design {
            names: arms.iter().map(|a| a.name.clone()).collect(),
            roles: arms.iter().map(|a| a.role).collect(),
            expected: arms.iter().map(|a| a.expected_pct.clone()).collect(),
            base: ladder::spec::base_index(arms),
            noise_limit_pct,
            equivalence_margin_pct,
            family,
        }
    }

    fn arms(&self) -> usize {
        self.names.len()
    }

    /// The level of each control's interval, `1 − 0.05/K`.
    pub fn control_level(&self) -> f64 {
        1.0 - 0.05 / self.family.max(1) as f64
    }

    /// Whether arm `a` is a control on `column`, and the effect it must show there.
    fn control_on(&self, a: usize, column: &str) -> Option<f64> {
        match self.roles[a] {
            r if r.is_inert_control() => Some(0.0),
            Role::KnownEffect => self.expected[a].as_ref().and_then(|e| e.on(column)),
            _ => None,
        }
    }
}

/// Everything the report says about one file; its JSON form is METHOD.md's, keys added beside.
#[derive(Debug, Serialize)]
pub struct LadderReport {
    pub file: String,
    pub ladder: Option<String>,
    pub tag: Option<String>,
    pub connected: bool,
    pub qualified: bool,
    pub disqualified_by: Vec<String>,
    pub analysis_passes: usize,
    pub stopped: Option<StopPoint>,
    pub order_sensitive: bool,
    /// A metric's drift-within-passes test rejects at 1 % (METHOD.md "Order effects").
    pub drifting: bool,
    pub metrics: Vec<MetricReport>,
    pub round_split: Option<RoundSplit>,
    pub identity: Option<Identity>,
    /// False when the file is not connected and defects were not allowed: no figures.
    pub statistics: bool,
    pub verdict: String,
    pub cells_found: usize,
    pub cells_expected: usize,
    pub defects: Vec<Defect>,
    pub run: Option<RunInfo>,
    pub witness: Option<Witness>,
    /// The spec's `[scan]`: the scanned values in arm order, when there is one.
    pub scan: Option<Vec<String>>,
    /// `K`, the (control arm, metric) pairs tested together (METHOD.md "Controls").
    pub control_family: usize,
    /// False when the equivalence margin was given to the report, not registered in the spec.
    pub margin_registered: bool,
    /// Where the time moves (METHOD.md "Breakdown"), with `[breakdown]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<breakdown::BreakdownReport>,
    /// `Σ w` over every cell (METHOD.md "Where a ladder's time goes").
    pub device_seconds: Option<f64>,
    pub time_use: Vec<ArmTime>,
    /// METHOD.md "What a device-minute buys": per metric and non-base arm.
    pub minute_halfwidths: Vec<MinuteHalfwidth>,
    /// METHOD.md "Variance components"; `None` without repetition rows.
    pub variance_components: Option<VarianceComponents>,
    /// Why the repetition rows could not be read.
    pub variance_note: Option<String>,
}

impl LadderReport {
    /// The metrics whose noise rose after the first look, with their tests.
    pub fn noise_rose(&self) -> Vec<(&str, NoiseRise)> {
        self.metrics
            .iter()
            .filter_map(|m| {
                m.noise_rise
                    .filter(|r| r.rose)
                    .map(|r| (m.column.as_str(), r))
            })
            .collect()
    }
}

/// Where a `[stop]` ladder ended, and why.
#[derive(Clone, Debug, Serialize)]
pub struct StopPoint {
    pub look: usize,
    pub reason: String,
    /// The first look, whose spread every interval uses.
    pub first_look: usize,
    pub halfwidth_pct: f64,
    /// Whose spread: each arm's own, or pooled over the arms.
    pub spread: StopSpread,
    /// Cut off before its first look: read as a fixed ladder of the passes it ran.
    pub fixed: bool,
}

impl StopPoint {
    /// Why the ladder ended, in words.
    pub fn reason_words(&self) -> &str {
        if self.fixed {
            return "cut off before its first look, read as a fixed ladder";
        }
        match self.reason.as_str() {
            "precision" => "precision reached",
            "max-passes" => "the last look, precision not reached",
            "within" => "the seconds of [stop] within_s, precision not reached",
            other => other,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct MetricReport {
    pub column: String,
    pub better: Better,
    pub paired_noise_pct: f64,
    /// Method 1's base spread, `100 · sd / mean` of the base: reported, never disqualifying.
    pub drift_pct: f64,
    /// The largest pass-to-pass step of `μ[p]`, as a percent.
    pub drift_step_pct: f64,
    pub noise_limit_pct: Option<f64>,
    pub within_noise_limit: bool,
    pub equivalence_margin_pct: Option<f64>,
    pub arms: Vec<ArmReading>,
    pub contrasts: Vec<Contrast>,
    pub controls: Vec<Control>,
    pub order_effects: OrderEffects,
    /// Under `[stop]`, the later passes' noise against the first look's (METHOD.md "Noise
    /// that rose after the first look"); `None` without a test.
    pub noise_rise: Option<NoiseRise>,
}

/// METHOD.md's estimate, sem, interval and median of one quantity, with its verdict in words.
#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    pub estimate_pct: f64,
    pub sem_pct: f64,
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    pub median_pct: f64,
    pub n: usize,
    pub verdict: &'static str,
}

impl From<Summary> for Figures {
    fn from(s: Summary) -> Figures {
        Figures {
            estimate_pct: s.estimate,
            sem_pct: s.sem,
            ci_low_pct: s.ci_low,
            ci_high_pct: s.ci_high,
            median_pct: s.median,
            n: s.n,
            verdict: s.verdict(),
        }
    }
}

impl Figures {
    /// The median lies outside the interval: a few passes pull the mean.
    pub fn pulled(&self) -> bool {
        self.median_pct < self.ci_low_pct || self.median_pct > self.ci_high_pct
    }
}

#[derive(Debug, Serialize)]
pub struct ArmReading {
    pub arm: String,
    pub role: Role,
    pub against: String,
    #[serde(flatten)]
    pub figures: Figures,
    pub holm_verdict: &'static str,
    /// Two-sided p of the one-sample t test of the log ratios, and Holm's adjusted p.
    pub p_value: f64,
    pub holm_p: f64,
    /// The smallest effect this ladder could have detected with 80 % power (METHOD.md).
    pub mde_pct: f64,
    pub deltas_pct: Vec<f64>,
    pub extras: Option<Extras>,
}

/// The figures beyond METHOD.md for one arm against the base.
#[derive(Debug, Serialize)]
pub struct Extras {
    pub bootstrap_ci_low_pct: Option<f64>,
    pub bootstrap_ci_high_pct: Option<f64>,
    pub bootstrap_resamples: usize,
    pub bootstrap_seed: u64,
    pub wilcoxon_p: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Contrast {
    pub arm: String,
    pub against: String,
    #[serde(flatten)]
    pub figures: Figures,
}

/// The log ratios of arm `a` against arm `b` over `passes`, skipping passes where either
/// cell is missing.
pub fn paired_logs(
    grid: &Grid,
    better: Better,
    a: usize,
    b: usize,
    passes: Range<usize>,
) -> Vec<f64> {
    passes
        .filter_map(|p| {
            let (xa, xb) = (grid.value(p, a), grid.value(p, b));
            (xa.is_finite() && xb.is_finite()).then(|| log_ratio(better, xa, xb))
        })
        .collect()
}

/// Reads one loaded file. `grids` and `spreads` are its series' grids and base spreads;
/// `margin_pct` is an equivalence margin given after the run, used only where the spec
/// registered none.
pub fn read(
    file: &LoadedFile,
    grids: &[Grid],
    spreads: &[f64],
    extras: ExtrasConfig,
    margin_pct: Option<f64>,
) -> LadderReport {
    let verdict = &file.verdict;
    let mut report = LadderReport {
        file: file.path.clone(),
        ladder: None,
        tag: None,
        connected: verdict.connected,
        qualified: false,
        disqualified_by: Vec::new(),
        analysis_passes: 0,
        stopped: None,
        order_sensitive: false,
        drifting: false,
        metrics: Vec::new(),
        round_split: None,
        identity: None,
        statistics: false,
        verdict: verdict.summary(),
        cells_found: verdict.cells_found,
        cells_expected: verdict.cells_expected,
        defects: verdict.defects.clone(),
        run: None,
        witness: None,
        scan: None,
        control_family: 0,
        margin_registered: true,
        breakdown: None,
        device_seconds: None,
        time_use: Vec::new(),
        minute_halfwidths: Vec::new(),
        variance_components: None,
        variance_note: None,
    };
    report.disqualified_by = crate::witness::card::defect_reasons(&verdict.defects);
    let Some(info) = &file.ladder else {
        return report;
    };
    report.ladder = Some(info.start.ladder.clone());
    report.tag = Some(info.start.tag.clone());
    report.run = Some(run_info::run_info(info));
    report.witness = info.witness.clone();
    report.scan = info.spec.scan.as_ref().and_then(ScanSpec::labels);
    if !info.analyzed {
        return report;
    }
    report.statistics = true;
    let passes = info.analysis_passes();
    report.analysis_passes = passes.len();
    report.stopped = stop_point(info);
    let design = design(info, margin_pct);
    report.control_family = design.family;
    report.margin_registered = info.spec.equivalence_margin_pct.is_some() || margin_pct.is_none();
    for (series, kind) in info.series.iter().enumerate() {
        if let SeriesKind::Metric(i) = kind {
            let metric = &info.metrics[*i];
            let seeds = SeedNames {
                ladder: &info.start.ladder,
                tag: &info.start.tag,
            };
            let mut m = read_metric(
                &design,
                metric,
                &grids[series],
                passes.clone(),
                metric_spread(info, &grids[series]),
                Some((extras, seeds)),
            );
            m.drift_pct = spreads[series];
            report.metrics.push(m);
        }
    }
    report.round_split = round_split::round_split(info, grids, passes.clone());
    report.identity = info.identity.clone();
    report.breakdown = info
        .breakdown
        .as_ref()
        .map(|cells| breakdown::read(cells, &design, passes.clone(), breakdown_spread(info)));
    if let Some(time) = &info.time_use {
        report.device_seconds = Some(time.device_seconds);
        report.time_use = time.arms.clone();
        report.minute_halfwidths = minute_halfwidths(info, grids, &design, &time.pass_seconds);
    }
    match &info.variance {
        Ok(components) => report.variance_components = components.clone(),
        Err(why) => report.variance_note = Some(why.clone()),
    }
    report.order_sensitive = report.metrics.iter().any(|m| m.order_effects.sensitive());
    report.drifting = report.metrics.iter().any(|m| m.order_effects.drifting());
    report
        .disqualified_by
        .extend(disqualifications(&report.metrics));
    report.qualified = report.disqualified_by.is_empty();
    report
}

/// Every metric's non-base arms' `H₆₀`, at the mean device seconds of an analysis pass.
fn minute_halfwidths(
    info: &LadderInfo,
    grids: &[Grid],
    design: &Design,
    pass_seconds: &[f64],
) -> Vec<MinuteHalfwidth> {
    let passes = info.analysis_passes();
    let Some(c) = minute::mean_pass_seconds(pass_seconds, passes.clone()) else {
        return Vec::new();
    };
    let metrics = info
        .series
        .iter()
        .zip(grids)
        .filter_map(|(kind, grid)| match kind {
            SeriesKind::Metric(i) => Some((&info.metrics[*i], grid)),
            _ => None,
        });
    let mut out = Vec::new();
    for (metric, grid) in metrics {
        for a in (0..design.arms()).filter(|&a| a != design.base) {
            let logs = paired_logs(grid, metric.better, a, design.base, passes.clone());
            let (arm, base) = (&design.names[a], &design.names[design.base]);
            out.extend(minute::minute_halfwidth(
                &metric.column,
                arm,
                base,
                &logs,
                c,
            ));
        }
    }
    out
}

/// The arms, roles and limits of a loaded ladder.
pub fn design(info: &LadderInfo, margin_pct: Option<f64>) -> Design {
    let mut design = Design::new(
        &info.spec.arms,
        &info.metrics,
        info.spec.noise_limit_pct,
        info.spec.equivalence_margin_pct.or(margin_pct),
    );
    // The start record's arms are the ones that ran (a `[scan]` spec's arms included).
    design.names = info.start.arms.iter().map(|a| a.name.clone()).collect();
    design.roles = info.start.arms.iter().map(|a| a.role).collect();
    design.base = info.start.base_index();
    design
}

/// Under `[stop]` a breakdown's keys keep the first look's spread (METHOD.md). A ladder cut
/// off before its first look has fewer passes than that look, and a first look no shorter
/// than a series is the series' own spread.
fn breakdown_spread(info: &LadderInfo) -> Spread {
    match &info.spec.stop {
        Some(stop) => stop.first_look_spread(info.start.warmup_passes),
        None => Spread::Own,
    }
}

/// The spread of one metric's intervals (`MetricSpread::stopped` under `[stop]`).
pub fn metric_spread(info: &LadderInfo, grid: &Grid) -> MetricSpread {
    match &info.spec.stop {
        Some(stop) => MetricSpread::stopped(
            stop,
            info.start.warmup_passes,
            &grid_values(grid),
            info.analysis_passes(),
        ),
        None => MetricSpread::OWN,
    }
}

/// A grid as the stopping rule reads a metric: `values[pass][arm]`, `None` where missing.
pub fn grid_values(grid: &Grid) -> Vec<Vec<Option<f64>>> {
    (0..grid.passes)
        .map(|p| {
            (0..grid.arms)
                .map(|a| Some(grid.value(p, a)).filter(|v| v.is_finite()))
                .collect()
        })
        .collect()
}

fn stop_point(info: &LadderInfo) -> Option<StopPoint> {
    let looks = info.stop_looks()?;
    let end = info.end.as_ref();
    let reason = end
        .and_then(|e| e.stopped.clone())
        .unwrap_or_else(|| match end {
            Some(_) => "unknown".into(),
            None => "interrupted: no done record".into(),
        });
    Some(StopPoint {
        look: info.passes_run,
        reason,
        fixed: info.cut_before_first_look(),
        first_look: looks.first().copied().unwrap_or(0),
        halfwidth_pct: info
            .spec
            .stop
            .as_ref()
            .map_or(f64::NAN, |s| s.halfwidth_pct),
        spread: info
            .spec
            .stop
            .as_ref()
            .map(|s| s.spread)
            .unwrap_or_default(),
    })
}

/// The names a quantity's bootstrap seed is made from.
#[derive(Clone, Copy)]
pub struct SeedNames<'a> {
    pub ladder: &'a str,
    pub tag: &'a str,
}

/// Every figure of one metric from its grid over `passes`. `extras` (None in calibration)
/// adds the bootstrap and Wilcoxon figures. The base spread is a group-by over the whole
/// frame and is filled in by the caller (NaN here).
pub fn read_metric(
    design: &Design,
    metric: &MetricSpec,
    grid: &Grid,
    passes: Range<usize>,
    metric_spread: MetricSpread,
    extras: Option<(ExtrasConfig, SeedNames)>,
) -> MetricReport {
    let spread = metric_spread.spread;
    let names = &design.names;
    let base = design.base;
    let logs = |a: usize, b: usize| paired_logs(grid, metric.better, a, b, passes.clone());
    let contrast = |a: usize, b: usize| Contrast {
        arm: names[a].clone(),
        against: names[b].clone(),
        figures: Summary::of(&logs(a, b), spread).into(),
    };
    let others: Vec<usize> = (0..design.arms()).filter(|&a| a != base).collect();
    let mut readings: Vec<ArmReading> = others
        .iter()
        .map(|&a| {
            let l = logs(a, base);
            let deltas: Vec<f64> = l.iter().map(|&x| pct_of_log(x)).collect();
            let extras = extras.map(|(config, seeds)| {
                let names = [
                    seeds.ladder,
                    seeds.tag,
                    metric.column.as_str(),
                    names[a].as_str(),
                ];
                extras_of(&deltas, config, extras::quantity_seed(config.seed, &names))
            });
            let series = LogSeries::of(&l, spread);
            ArmReading {
                arm: names[a].clone(),
                role: design.roles[a],
                against: names[base].clone(),
                figures: Summary::of(&l, spread).into(),
                p_value: series.p_value(),
                mde_pct: series.mde_pct(),
                holm_verdict: "not resolved",
                holm_p: f64::NAN,
                deltas_pct: deltas,
                extras,
            }
        })
        .collect();
    let adjusted = stats::holm(&readings.iter().map(|r| r.p_value).collect::<Vec<_>>());
    for (r, p) in readings.iter_mut().zip(adjusted) {
        r.holm_p = p;
        r.holm_verdict = stats::holm_verdict(r.figures.estimate_pct, p);
    }
    let contrasts = (0..design.arms())
        .flat_map(|i| (i + 1..design.arms()).map(move |j| (j, i)))
        .map(|(j, i)| contrast(j, i))
        .collect();
    let controls = others
        .iter()
        .filter(|&&a| {
            design.control_on(a, &metric.column).is_some()
                || design.roles[a] == Role::StructuralZero
        })
        .map(|&a| controls::control(design, a, &metric.column, &logs(a, base), spread, &contrast))
        .collect();
    let cells = model_cells(grid, metric.better, passes.clone());
    let paired_noise_pct = cells.as_ref().map_or(f64::NAN, Cells::paired_noise_pct);
    let drift_step_pct = cells.as_ref().map_or(f64::NAN, Cells::largest_step_pct);
    let noise_limit_pct = metric.noise_limit_pct.or(design.noise_limit_pct);
    let order_effects = cells
        .map(|c| c.order_effects(names, base))
        .unwrap_or_default();
    MetricReport {
        column: metric.column.clone(),
        better: metric.better,
        paired_noise_pct,
        drift_pct: f64::NAN,
        drift_step_pct,
        noise_limit_pct,
        // Noise that cannot be computed (under two complete passes) exceeds nothing.
        within_noise_limit: noise_limit_pct
            .is_none_or(|limit| paired_noise_pct.is_nan() || paired_noise_pct <= limit),
        equivalence_margin_pct: design.equivalence_margin_pct,
        arms: readings,
        contrasts,
        controls,
        order_effects,
        noise_rise: metric_spread.noise_rise,
    }
}

/// The complete analysis passes of a grid as the models read them, oriented so that a
/// larger value is better; `prev` of slot 0 is the last cell of the pass before (from the
/// grid's slots, which the warm-up passes also fill). None below two complete passes.
pub fn model_cells(grid: &Grid, better: Better, passes: Range<usize>) -> Option<Cells> {
    let n = grid.arms;
    let arm_in = |p: usize, s: usize| (0..n).find(|&a| grid.slot(p, a) as usize == s);
    let complete: Vec<usize> = passes
        .filter(|&p| (0..n).all(|a| grid.value(p, a).is_finite() && (grid.slot(p, a) as usize) < n))
        .collect();
    if complete.len() < 2 || n < 2 {
        return None;
    }
    let sign = match better {
        Better::Higher => 1.0,
        Better::Lower => -1.0,
    };
    let mut cells = Cells {
        passes: complete.len(),
        arms: n,
        y: Vec::new(),
        slot: Vec::new(),
        prev: Vec::new(),
    };
    for &p in &complete {
        for a in 0..n {
            let s = grid.slot(p, a) as usize;
            let prev = if s > 0 {
                arm_in(p, s - 1)
            } else {
                p.checked_sub(1).and_then(|q| arm_in(q, n - 1))
            };
            cells.y.push(sign * grid.value(p, a).ln());
            cells.slot.push(s);
            cells.prev.push(prev.unwrap_or(n));
        }
    }
    Some(cells)
}

fn extras_of(deltas: &[f64], config: ExtrasConfig, seed: u64) -> Extras {
    let ci = extras::bootstrap_median_ci(deltas, config.resamples, seed);
    Extras {
        bootstrap_ci_low_pct: ci.map(|c| c.0),
        bootstrap_ci_high_pct: ci.map(|c| c.1),
        bootstrap_resamples: config.resamples,
        bootstrap_seed: seed,
        wilcoxon_p: extras::wilcoxon_p(deltas),
    }
}

/// `noise-limit` when a metric's paired noise exceeds the pre-registered limit, and once for
/// each control arm that fails on some metric: `control:<arm>`, or `control-unreadable:<arm>`
/// when its interval could not be computed.
pub fn disqualifications(metrics: &[MetricReport]) -> Vec<String> {
    let mut reasons = Vec::new();
    if metrics.iter().any(|m| !m.within_noise_limit) {
        reasons.push("noise-limit".to_string());
    }
    for m in metrics {
        for c in m.controls.iter().filter(|c| c.holds == Some(false)) {
            let kind = if c.readable {
                "control"
            } else {
                "control-unreadable"
            };
            let reason = format!("{kind}:{}", c.arm);
            if !reasons.contains(&reason) {
                reasons.push(reason);
            }
        }
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_pulls_only_from_outside_the_interval() {
        let at = |median: f64| -> Figures {
            Summary {
                estimate: 1.0,
                sem: 0.5,
                ci_low: 0.0,
                ci_high: 2.0,
                median,
                n: 8,
            }
            .into()
        };
        for (median, pulled) in [
            (1.0, false),
            (0.0, false),
            (2.0, false),
            (-0.1, true),
            (2.1, true),
        ] {
            assert_eq!(at(median).pulled(), pulled, "median {median} in [0, 2]");
        }
    }

    #[test]
    fn a_stop_reason_reads_in_words_and_a_cut_off_ladder_says_so() {
        let at = |reason: &str, fixed: bool| StopPoint {
            look: 12,
            reason: reason.into(),
            first_look: 6,
            halfwidth_pct: 0.02,
            spread: StopSpread::default(),
            fixed,
        };
        let words = |reason, fixed| at(reason, fixed).reason_words().to_string();
        assert_eq!(words("precision", false), "precision reached");
        assert_eq!(
            words("max-passes", false),
            "the last look, precision not reached"
        );
        assert_eq!(
            words("within", false),
            "the seconds of [stop] within_s, precision not reached"
        );
        assert_eq!(words("unknown", false), "unknown");
        assert_eq!(
            words("precision", true),
            "cut off before its first look, read as a fixed ladder"
        );
    }

    #[test]
    fn a_pass_missing_either_cell_is_left_out_of_the_pairs() {
        // Three passes of two arms: pass 1 lacks arm 0's cell, pass 2 arm 1's.
        let mut grid = Grid::new(3, 2);
        grid.values = vec![100.0, 101.0, f64::NAN, 102.0, 100.0, f64::NAN];
        let logs = paired_logs(&grid, Better::Higher, 1, 0, 0..3);
        assert_eq!(logs, vec![(101.0f64 / 100.0).ln()]);
        let lower = paired_logs(&grid, Better::Lower, 1, 0, 0..3);
        assert_eq!(lower, vec![(100.0f64 / 101.0).ln()]);
    }

    /// A grid of `values` and `slots`, pass-major, `arms` wide.
    fn grid_of(arms: usize, values: &[f64], slots: &[u32]) -> Grid {
        let mut grid = Grid::new(values.len() / arms, arms);
        grid.values = values.to_vec();
        grid.slots = slots.to_vec();
        grid
    }

    #[test]
    fn the_models_read_only_passes_whose_every_cell_has_a_value_and_a_slot() {
        // Pass 2 lacks arm 0's value (its slot is known), pass 3 has arm 1 in no slot.
        let values = [100.0, 101.0, 102.0, 103.0, f64::NAN, 105.0, 106.0, 107.0];
        let grid = grid_of(2, &values, &[0, 1, 1, 0, 0, 1, 1, 2]);
        let cells = model_cells(&grid, Better::Lower, 0..4).expect("passes 0 and 1");
        assert_eq!((cells.passes, cells.arms), (2, 2));
        let y: Vec<f64> = values[..4].iter().map(|v| -v.ln()).collect();
        assert_eq!(cells.y, y, "lower is better: the logs are negated");
        assert_eq!(cells.slot, vec![0, 1, 1, 0]);
        // Pass 0's first cell follows nothing (2 = none); pass 1's arm 1 ran first, after
        // pass 0's last cell (arm 1), and arm 0 after it.
        assert_eq!(cells.prev, vec![2, 0, 1, 1]);
    }

    #[test]
    fn the_models_need_two_complete_passes_of_two_arms() {
        let two_by_two = grid_of(2, &[1.0, 2.0, 3.0, 4.0], &[0, 1, 1, 0]);
        assert!(model_cells(&two_by_two, Better::Higher, 0..2).is_some());
        assert!(model_cells(&two_by_two, Better::Higher, 0..1).is_none());
        assert!(model_cells(&two_by_two, Better::Higher, 1..2).is_none());
        let one_arm = grid_of(1, &[1.0, 2.0, 3.0], &[0, 0, 0]);
        assert!(model_cells(&one_arm, Better::Higher, 0..3).is_none());
    }
}
