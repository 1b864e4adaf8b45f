//! Across ladders: ladders of the same spec side by side (the range is the honest reading),
//! and any two arms compared in every ladder that carries both.

use crate::analysis::{metric_spread, paired_logs, Figures, LadderReport};
use crate::frames::{Grid, LoadedFile, SeriesKind};
use crate::stats::Summary;
use serde::Serialize;
use std::collections::HashMap;

/// One quantity shared by several ladders of one spec.
#[derive(Debug, Serialize)]
pub struct Replication {
    pub quantity: String,
    /// The tags of the ladders, in the order given.
    pub ladders: Vec<String>,
    pub estimates_pct: Vec<f64>,
    pub spread_pp: f64,
    pub replication_limit_pp: f64,
    pub replicates: bool,
    pub spec: String,
    pub files: Vec<String>,
    pub ci_low_pct: Vec<f64>,
    pub ci_high_pct: Vec<f64>,
    pub min_pct: f64,
    pub max_pct: f64,
    /// Whether each ladder is qualified (a disqualified one still shows its number).
    pub qualified: Vec<bool>,
    /// Each ladder's binaries, arm by arm (`arm=blake3 …`): the spread is a replication only
    /// when they agree; across binaries it includes whatever changed between them.
    pub binaries: Vec<String>,
    /// The host and the card each ladder ran on.
    pub hosts: Vec<String>,
    pub cards: Vec<String>,
    pub same_binary: bool,
    /// (column, arm, against), the parts of `quantity`.
    #[serde(skip)]
    pub key: (String, String, String),
    /// Each energy metric beside this quantity (METHOD.md "Across ladders"); empty for an
    /// energy quantity and where the ladders have none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub energy: Vec<EnergyBeside>,
}

/// One energy metric beside a quantity (`crate::energy`): its estimate in each of the
/// quantity's ladders (`None` where that ladder lacks it) and its spread.
#[derive(Debug, Serialize)]
pub struct EnergyBeside {
    pub column: String,
    pub estimates_pct: Vec<Option<f64>>,
    pub spread_pp: f64,
}

/// A quantity: (column, arm, against).
pub type Key<'a> = (&'a str, &'a str, &'a str);

/// Every quantity of one report as (column, arm, against) with its figures: arms against
/// the base first, then the contrasts not already named. Its name is `column:arm-vs-against`.
pub fn quantities(report: &LadderReport) -> Vec<(Key<'_>, &Figures)> {
    let mut out: Vec<(Key, &Figures)> = Vec::new();
    for m in &report.metrics {
        let arms = m.arms.iter().map(|a| (&a.arm, &a.against, &a.figures));
        let contrasts = m.contrasts.iter().map(|c| (&c.arm, &c.against, &c.figures));
        for (arm, against, figures) in arms.chain(contrasts) {
            let key = (m.column.as_str(), arm.as_str(), against.as_str());
            if !out.iter().any(|(k, _)| *k == key) {
                out.push((key, figures));
            }
        }
    }
    out
}

/// Ladders with statistics grouped by spec name, in first-seen order.
fn by_spec(reports: &[LadderReport]) -> Vec<(String, Vec<&LadderReport>)> {
    let mut groups: Vec<(String, Vec<&LadderReport>)> = Vec::new();
    for r in reports.iter().filter(|r| r.statistics) {
        let name = r.ladder.clone().unwrap_or_default();
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, members)) => members.push(r),
            None => groups.push((name, vec![r])),
        }
    }
    groups
}

/// Every quantity that at least two ladders of the same spec carry.
pub fn replications(reports: &[LadderReport]) -> Vec<Replication> {
    let mut out = Vec::new();
    for (spec, members) in by_spec(reports).into_iter().filter(|(_, m)| m.len() >= 2) {
        let limit = members[0]
            .run
            .as_ref()
            .map_or(ladder::spec::DEFAULT_REPLICATION_LIMIT_PP, |r| {
                r.replication_limit_pp
            });
        let mut order = Vec::new();
        let mut found: HashMap<Key, Vec<(&LadderReport, &Figures)>> = HashMap::new();
        for r in &members {
            for (key, figures) in quantities(r) {
                let entry = found.entry(key).or_default();
                if entry.is_empty() {
                    order.push(key);
                }
                entry.push((r, figures));
            }
        }
        for key in order {
            let readings = &found[&key];
            if readings.len() < 2 {
                continue;
            }
            let estimates: Vec<f64> = readings.iter().map(|(_, f)| f.estimate_pct).collect();
            let min = estimates.iter().copied().fold(f64::INFINITY, f64::min);
            let max = estimates.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let spread = max - min;
            let binaries: Vec<String> = readings
                .iter()
                .map(|(r, _)| {
                    r.run
                        .as_ref()
                        .map_or_else(String::new, |run| run.arm_binaries())
                })
                .collect();
            out.push(Replication {
                quantity: format!("{}:{}-vs-{}", key.0, key.1, key.2),
                ladders: readings
                    .iter()
                    .map(|(r, _)| r.tag.clone().unwrap_or_default())
                    .collect(),
                estimates_pct: estimates,
                spread_pp: spread,
                replication_limit_pp: limit,
                replicates: spread <= limit,
                spec: spec.clone(),
                files: readings.iter().map(|(r, _)| r.file.clone()).collect(),
                ci_low_pct: readings.iter().map(|(_, f)| f.ci_low_pct).collect(),
                ci_high_pct: readings.iter().map(|(_, f)| f.ci_high_pct).collect(),
                min_pct: min,
                max_pct: max,
                qualified: readings.iter().map(|(r, _)| r.qualified).collect(),
                hosts: readings
                    .iter()
                    .map(|(r, _)| {
                        r.run
                            .as_ref()
                            .map_or_else(String::new, |run| run.host.clone())
                    })
                    .collect(),
                cards: readings
                    .iter()
                    .map(|(r, _)| {
                        r.run
                            .as_ref()
                            .map_or_else(String::new, |run| run.card_label())
                    })
                    .collect(),
                same_binary: binaries.windows(2).all(|w| w[0] == w[1]),
                binaries,
                key: (key.0.into(), key.1.into(), key.2.into()),
                energy: Vec::new(),
            });
        }
    }
    out
}

/// Two arms compared on one metric in every ladder that carries both.
#[derive(Debug, Serialize)]
pub struct ArmPair {
    pub column: String,
    pub arm: String,
    pub against: String,
    pub readings: Vec<PairReading>,
}

#[derive(Debug, Serialize)]
pub struct PairReading {
    pub file: String,
    pub ladder: String,
    pub tag: String,
    pub qualified: bool,
    #[serde(flatten)]
    pub figures: Figures,
}

/// The pairs to compare: those asked for, or else every pair of arm names that ladders of
/// at least two different specs carry (the same spec is covered by the replications), the
/// later-declared arm against the earlier one as the first ladder carrying both declares them.
pub fn pairs_to_compare(
    files: &[LoadedFile],
    reports: &[LadderReport],
    asked: &[(String, String)],
) -> Vec<(String, String)> {
    if !asked.is_empty() {
        return asked.to_vec();
    }
    let mut pairs: Vec<((String, String), Vec<String>)> = Vec::new();
    for (file, report) in files.iter().zip(reports).filter(|(_, r)| r.statistics) {
        let Some(info) = &file.ladder else { continue };
        let names: Vec<&String> = info.start.arms.iter().map(|a| &a.name).collect();
        for j in 0..names.len() {
            for i in 0..j {
                let key = (names[j].clone(), names[i].clone());
                let reversed = (key.1.clone(), key.0.clone());
                let spec = report.ladder.clone().unwrap_or_default();
                match pairs.iter_mut().find(|(k, _)| *k == key || *k == reversed) {
                    Some((_, specs)) if !specs.contains(&spec) => specs.push(spec),
                    Some(_) => {}
                    None => pairs.push((key, vec![spec])),
                }
            }
        }
    }
    pairs
        .into_iter()
        .filter(|(_, specs)| specs.len() >= 2)
        .map(|(k, _)| k)
        .collect()
}

/// Each pair on each metric column, read from the grids of every ladder that carries both.
pub fn arm_pairs(
    files: &[LoadedFile],
    grids: &[Vec<Grid>],
    reports: &[LadderReport],
    pairs: &[(String, String)],
) -> Vec<ArmPair> {
    let mut out: Vec<ArmPair> = Vec::new();
    for (arm, against) in pairs {
        for ((file, grids), report) in files
            .iter()
            .zip(grids)
            .zip(reports)
            .filter(|(_, r)| r.statistics)
        {
            let Some(info) = &file.ladder else { continue };
            let index = |name: &str| info.start.arms.iter().position(|a| a.name == name);
            let (Some(a), Some(b)) = (index(arm), index(against)) else {
                continue;
            };
            let passes = info.analysis_passes();
            for (series, kind) in info.series.iter().enumerate() {
                let SeriesKind::Metric(m) = kind else {
                    continue;
                };
                let metric = &info.metrics[*m];
                let logs = paired_logs(&grids[series], metric.better, a, b, passes.clone());
                let reading = PairReading {
                    file: file.path.clone(),
                    ladder: info.start.ladder.clone(),
                    tag: info.start.tag.clone(),
                    qualified: report.qualified,
                    figures: Summary::of(&logs, metric_spread(info, &grids[series]).spread).into(),
                };
                match out
                    .iter_mut()
                    .find(|p| p.column == metric.column && &p.arm == arm && &p.against == against)
                {
                    Some(pair) => pair.readings.push(reading),
                    None => out.push(ArmPair {
                        column: metric.column.clone(),
                        arm: arm.clone(),
                        against: against.clone(),
                        readings: vec![reading],
                    }),
                }
            }
        }
    }
    out.retain(|p| p.readings.len() >= 2);
    out
}
