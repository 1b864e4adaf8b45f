//! One ladder read as METHOD.md says: paired deltas of every arm against the base, all
//! arm-to-arm contrasts, the noise gate, the controls, the round split and output identity,
//! with the figures of `extras` beside them.

use crate::extras;
use crate::frames::{Grid, LadderInfo, LoadedFile, SeriesKind};
use crate::identity::Identity;
use crate::stats::{self, Summary};
use crate::witness::Witness;
use ladder::spec::{Better, MetricSpec};
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
}

/// What ran: the start and end records' facts.
#[derive(Debug, Serialize)]
pub struct RunInfo {
    pub card: Option<serde_json::Value>,
    pub binary_blake3: String,
    pub spec_blake3: String,
    pub started: String,
    pub ended: Option<String>,
    pub duration_s: Option<f64>,
    pub passes: usize,
    pub warmup_passes: usize,
    pub arms: Vec<String>,
    pub order: String,
    pub replication_limit_pp: f64,
}

#[derive(Debug, Serialize)]
pub struct MetricReport {
    pub column: String,
    pub better: Better,
    pub base_spread_pct: f64,
    pub noise_limit_pct: Option<f64>,
    pub arms: Vec<ArmReading>,
    pub contrasts: Vec<Contrast>,
    pub controls: Vec<Control>,
    pub within_noise_limit: bool,
}

/// METHOD.md's estimate, sem and interval of one quantity, with its verdict in words.
#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    pub estimate_pct: f64,
    pub sem_pct: f64,
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
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
            n: s.n,
            verdict: s.verdict(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct ArmReading {
    pub arm: String,
    pub role: Role,
    pub against: String,
    #[serde(flatten)]
    pub figures: Figures,
    pub deltas_pct: Vec<f64>,
    pub extras: Extras,
}

/// The figures beyond METHOD.md for one arm against the base.
#[derive(Debug, Serialize)]
pub struct Extras {
    pub bootstrap_ci_low_pct: Option<f64>,
    pub bootstrap_ci_high_pct: Option<f64>,
    pub bootstrap_resamples: usize,
    pub bootstrap_seed: u64,
    pub wilcoxon_p: Option<f64>,
    /// Correlation of the delta with the arm's slot in the pass, and its p-value.
    pub order_r: Option<f64>,
    pub order_p: Option<f64>,
    /// `order_p < 0.05`.
    pub order_effect: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Contrast {
    pub arm: String,
    pub against: String,
    #[serde(flatten)]
    pub figures: Figures,
}

#[derive(Debug, Serialize)]
pub struct Control {
    pub arm: String,
    pub role: Role,
    pub estimate_pct: f64,
    /// Null and reflexive controls: whether `|estimate| ≤ base spread`. None for a
    /// structural zero, which measures a cost instead.
    pub holds: Option<bool>,
    /// Structural zero: every real arm against it, the gain from where the mechanism points.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gains: Vec<Contrast>,
}

#[derive(Debug, Serialize)]
pub struct RoundSplit {
    pub rounds: String,
    pub time: String,
    pub arms: Vec<SplitArm>,
    pub rounds_identical: bool,
    pub differing_cells: Vec<RoundCell>,
    /// Cells of the analysis passes whose round count was compared.
    pub cells: usize,
}

#[derive(Debug, Serialize)]
pub struct SplitArm {
    pub arm: String,
    pub total_pct: f64,
    pub count_pct: f64,
    pub speed_pct: f64,
    pub n: usize,
}

#[derive(Debug, Serialize)]
pub struct RoundCell {
    pub pass: usize,
    pub slot: u32,
    pub arm: String,
    pub rounds: f64,
    pub base_rounds: f64,
}

/// The paired deltas of arm `a` against arm `b` over `passes` (skipping passes where either
/// cell is missing), with the slot `a` ran in for each.
pub fn paired_deltas(
    grid: &Grid,
    better: Better,
    a: usize,
    b: usize,
    passes: Range<usize>,
) -> (Vec<f64>, Vec<f64>) {
    passes
        .filter_map(|p| {
            let (xa, xb) = (grid.value(p, a), grid.value(p, b));
            (xa.is_finite() && xb.is_finite())
                .then(|| (stats::delta_pct(better, xa, xb), grid.slot(p, a) as f64))
        })
        .unzip()
}

/// The three factors of one pass, each as a ratio: total `T[b]/T[a]`, count `R[b]/R[a]`,
/// speed `(T[b]/R[b]) / (T[a]/R[a])`; `total = count · speed`.
pub fn split_factors(t_base: f64, t_arm: f64, r_base: f64, r_arm: f64) -> (f64, f64, f64) {
    (
        t_base / t_arm,
        r_base / r_arm,
        (t_base / r_base) / (t_arm / r_arm),
    )
}

/// Reads one loaded file. `grids` and `spreads` are its series' grids and base spreads.
pub fn read(
    file: &LoadedFile,
    grids: &[Grid],
    spreads: &[f64],
    extras: ExtrasConfig,
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
    };
    if !verdict.connected {
        report.disqualified_by.push("not-connected".into());
    }
    let Some(info) = &file.ladder else {
        return report;
    };
    report.ladder = Some(info.start.ladder.clone());
    report.tag = Some(info.start.tag.clone());
    report.run = Some(run_info(info));
    report.witness = info.witness.clone();
    if !info.analyzed {
        return report;
    }
    report.statistics = true;
    let passes = info.analysis_passes();
    report.analysis_passes = passes.len();
    for (series, kind) in info.series.iter().enumerate() {
        if let SeriesKind::Metric(i) = kind {
            let metric = read_metric(
                info,
                &info.metrics[*i],
                &grids[series],
                spreads[series],
                passes.clone(),
                extras,
            );
            report.metrics.push(metric);
        }
    }
    report.round_split = round_split(info, grids, passes.clone());
    report.identity = info.identity.clone();
    report
        .disqualified_by
        .extend(disqualifications(&report.metrics));
    report.qualified = report.disqualified_by.is_empty();
    report
}

fn run_info(info: &LadderInfo) -> RunInfo {
    let start = &info.start;
    let ended = info.end.as_ref().map(|e| e.ended.clone());
    let duration_s = ended
        .as_deref()
        .and_then(ladder::ladder_file::parse_timestamp)
        .zip(ladder::ladder_file::parse_timestamp(&start.started))
        .map(|(e, s)| (e - s) as f64 / 1e6);
    RunInfo {
        card: start.card.clone(),
        binary_blake3: start.binary.blake3.clone(),
        spec_blake3: start.spec_blake3.clone(),
        started: start.started.clone(),
        ended,
        duration_s,
        passes: start.order.passes,
        warmup_passes: start.warmup_passes,
        arms: start.arms.iter().map(|a| a.name.clone()).collect(),
        order: start.order.scheme.to_string(),
        replication_limit_pp: info.spec.replication_limit_pp,
    }
}

fn read_metric(
    info: &LadderInfo,
    metric: &MetricSpec,
    grid: &Grid,
    spread: f64,
    passes: Range<usize>,
    extras: ExtrasConfig,
) -> MetricReport {
    let arms = &info.start.arms;
    let base = info.start.base_index();
    let contrast = |a: usize, b: usize| -> Contrast {
        let (deltas, _) = paired_deltas(grid, metric.better, a, b, passes.clone());
        Contrast {
            arm: arms[a].name.clone(),
            against: arms[b].name.clone(),
            figures: Summary::of(&deltas).into(),
        }
    };
    let readings: Vec<ArmReading> = (0..arms.len())
        .filter(|&a| a != base)
        .map(|a| {
            let (deltas, slots) = paired_deltas(grid, metric.better, a, base, passes.clone());
            let names = [
                info.start.ladder.as_str(),
                info.start.tag.as_str(),
                metric.column.as_str(),
                arms[a].name.as_str(),
            ];
            ArmReading {
                arm: arms[a].name.clone(),
                role: arms[a].role,
                against: arms[base].name.clone(),
                figures: Summary::of(&deltas).into(),
                extras: extras_of(
                    &deltas,
                    &slots,
                    extras,
                    extras::quantity_seed(extras.seed, &names),
                ),
                deltas_pct: deltas,
            }
        })
        .collect();
    let contrasts = (0..arms.len())
        .flat_map(|i| (i + 1..arms.len()).map(move |j| (j, i)))
        .map(|(j, i)| contrast(j, i))
        .collect();
    let controls = readings
        .iter()
        .filter(|r| r.role.is_inert_control() || r.role == Role::StructuralZero)
        .map(|r| {
            let estimate = r.figures.estimate_pct;
            let (holds, gains) = if r.role == Role::StructuralZero {
                let sz = arms.iter().position(|a| a.name == r.arm).unwrap_or(base);
                let real = (0..arms.len()).filter(|&a| arms[a].role == Role::Arm);
                (None, real.map(|a| contrast(a, sz)).collect())
            } else {
                (Some(stats::control_holds(estimate, spread)), Vec::new())
            };
            Control {
                arm: r.arm.clone(),
                role: r.role,
                estimate_pct: estimate,
                holds,
                gains,
            }
        })
        .collect();
    MetricReport {
        column: metric.column.clone(),
        better: metric.better,
        base_spread_pct: spread,
        noise_limit_pct: info.spec.noise_limit_pct,
        arms: readings,
        contrasts,
        controls,
        // A spread that cannot be computed (under two passes) exceeds nothing.
        within_noise_limit: info.spec.noise_limit_pct.is_none_or(|limit| spread.is_nan() || spread <= limit),
    }
}

fn extras_of(deltas: &[f64], slots: &[f64], config: ExtrasConfig, seed: u64) -> Extras {
    let ci = extras::bootstrap_median_ci(deltas, config.resamples, seed);
    let order = extras::order_effect(deltas, slots);
    Extras {
        bootstrap_ci_low_pct: ci.map(|c| c.0),
        bootstrap_ci_high_pct: ci.map(|c| c.1),
        bootstrap_resamples: config.resamples,
        bootstrap_seed: seed,
        wilcoxon_p: extras::wilcoxon_p(deltas),
        order_r: order.map(|o| o.0),
        order_p: order.map(|o| o.1),
        order_effect: order.is_some_and(|o| o.1 < 0.05),
    }
}

/// `noise-limit` when a metric's base spread exceeds the pre-registered limit, and
/// `control:<arm>` once for each null or reflexive arm that does not hold on some metric.
fn disqualifications(metrics: &[MetricReport]) -> Vec<String> {
    let mut reasons = Vec::new();
    if metrics.iter().any(|m| !m.within_noise_limit) {
        reasons.push("noise-limit".to_string());
    }
    for m in metrics {
        for c in m.controls.iter().filter(|c| c.holds == Some(false)) {
            let reason = format!("control:{}", c.arm);
            if !reasons.contains(&reason) {
                reasons.push(reason);
            }
        }
    }
    reasons
}

fn round_split(info: &LadderInfo, grids: &[Grid], passes: Range<usize>) -> Option<RoundSplit> {
    let split = info.spec.split.as_ref()?;
    let find = |kind| {
        info.series
            .iter()
            .position(|s| *s == kind)
            .map(|i| &grids[i])
    };
    let (rounds, time) = (find(SeriesKind::Rounds)?, find(SeriesKind::Time)?);
    let base = info.start.base_index();
    let arms = &info.start.arms;
    let mut split_arms = Vec::new();
    for a in (0..arms.len()).filter(|&a| a != base) {
        let (mut total, mut count, mut speed) = (Vec::new(), Vec::new(), Vec::new());
        for p in passes.clone() {
            let (tb, ta, rb, ra) = (
                time.value(p, base),
                time.value(p, a),
                rounds.value(p, base),
                rounds.value(p, a),
            );
            if [tb, ta, rb, ra].iter().all(|v| v.is_finite()) {
                let (t, c, s) = split_factors(tb, ta, rb, ra);
                total.push(stats::ratio_pct(t));
                count.push(stats::ratio_pct(c));
                speed.push(stats::ratio_pct(s));
            }
        }
        let n = total.len();
        split_arms.push(SplitArm {
            arm: arms[a].name.clone(),
            total_pct: stats::median(&mut total),
            count_pct: stats::median(&mut count),
            speed_pct: stats::median(&mut speed),
            n,
        });
    }
    let mut differing_cells = Vec::new();
    let mut cells = 0;
    for p in passes {
        for (a, arm) in arms.iter().enumerate() {
            let (r, rb) = (rounds.value(p, a), rounds.value(p, base));
            if !(r.is_finite() && rb.is_finite()) {
                continue;
            }
            cells += 1;
            if r != rb {
                differing_cells.push(RoundCell {
                    pass: p,
                    slot: rounds.slot(p, a),
                    arm: arm.name.clone(),
                    rounds: r,
                    base_rounds: rb,
                });
            }
        }
    }
    Some(RoundSplit {
        rounds: split.rounds.clone(),
        time: split.time.clone(),
        arms: split_arms,
        rounds_identical: differing_cells.is_empty(),
        differing_cells,
        cells,
    })
}
