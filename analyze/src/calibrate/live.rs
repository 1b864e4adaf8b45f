//! The live ledger (`analyze calibrate --live FILES…`): how often abab's controls were
//! wrong on real ladders, per host and card, beside the rates of simulated ladders of the
//! same designs at the same noise (METHOD.md "The live ledger").

use super::known_offset::{self, Offset, PooledOffset};
use super::rates::{Count, Tally};
use super::render::{count, pct};
use super::simulate::{NoiseModel, Scale};
use super::{Effects, Plan, Shape};
use crate::analysis::{ExtrasConfig, LadderReport};
use crate::frames::LadderInfo;
use crate::reading::{self, Options as ReadOptions};
use ladder::spec::{Better, MetricSpec};
use ladder::Role;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::PathBuf;

/// One host and card: the controls' record on its ladders, and its simulated twin's.
#[derive(Debug, Default, Serialize)]
pub struct LedgerRow {
    pub host: String,
    pub card: String,
    pub ladders: usize,
    /// Inert control tests (arm, metric) that failed: the measured A/A false-positive rate.
    pub inert_failed: Count,
    /// Ladders with an inert control in which one failed.
    pub ladders_failed: Count,
    /// Known-effect tests that held: the measured coverage.
    pub known_held: Count,
    /// The same three from simulated ladders of the same designs and noise.
    pub simulated_inert_failed: Count,
    pub simulated_ladders_failed: Count,
    pub simulated_known_held: Count,
    /// The known-effect tests' reading against their declared effects, pooled per plant.
    pub known_offsets: Vec<PlantOffset>,
}

/// One plant's known-effect tests on one host and card, pooled (METHOD.md "The plant or the
/// intervals?"). A plant is the known-effect arm's binary: the same mechanism rebuilt may
/// plant another effect, and pooling two plants would read their difference as scatter.
#[derive(Debug, Serialize)]
pub struct PlantOffset {
    /// The binary's blake3, its first 12 hex digits.
    pub plant: String,
    pub ladders: usize,
    pub offset: PooledOffset,
}

/// Every host and card read, and the files left out with the reason.
#[derive(Debug, Serialize)]
pub struct Ledger {
    pub rows: Vec<LedgerRow>,
    pub skipped: Vec<(String, String)>,
    pub simulated_per_ladder: usize,
}

/// What one ladder (real or simulated) adds to a row.
#[derive(Default)]
struct Record {
    inert: (usize, usize),
    ladders: (usize, usize),
    known: (usize, usize),
    /// A real ladder's known-effect tests against their declared effects, per plant: the
    /// ladders read and the tests.
    offsets: BTreeMap<String, (usize, Vec<Offset>)>,
}

impl Record {
    fn add(&mut self, inert: &[bool], known: &[bool]) {
        let failed = inert.iter().filter(|h| !**h).count();
        self.inert.0 += failed;
        self.inert.1 += inert.len();
        if !inert.is_empty() {
            self.ladders.0 += usize::from(failed > 0);
            self.ladders.1 += 1;
        }
        self.known.0 += known.iter().filter(|h| **h).count();
        self.known.1 += known.len();
    }

    fn counts(&self) -> [Count; 3] {
        [self.inert, self.ladders, self.known].map(|(k, n)| Count::of(k, n))
    }
}

/// The controls of a real ladder: per inert test whether it held; per known-effect test
/// whether it held, and its arm and offset from the declared effect.
fn controls_of(report: &LadderReport) -> (Vec<bool>, Vec<bool>, Vec<(&str, Offset)>) {
    let (mut inert, mut known, mut offsets) = (Vec::new(), Vec::new(), Vec::new());
    for c in report.metrics.iter().flat_map(|m| &m.controls) {
        let held = c.holds == Some(true);
        match c.role {
            Role::KnownEffect => {
                known.push(held);
                let s = &c.series;
                let offset = c.expected_pct.map(|e| Offset::of(s.mean, s.se(), s.df, e));
                offsets.extend(offset.map(|o| (c.arm.as_str(), o)));
            }
            r if r.is_inert_control() => inert.push(held),
            _ => {}
        }
    }
    (inert, known, offsets)
}

/// The ladder's own design at each metric's own noise (σ̂ of the additive model).
fn twin(info: &LadderInfo, report: &LadderReport) -> Option<Plan> {
    let metrics: Vec<MetricSpec> = info
        .metrics
        .iter()
        .map(|m| MetricSpec {
            better: Better::Higher,
            ..m.clone()
        })
        .collect();
    let shape = Shape {
        scheme: info.start.order.scheme,
        passes: info.start.order.passes,
        seed: info.start.order.seed,
        warmup: info.start.warmup_passes,
    };
    let mut plan = Plan::new(
        &info.spec,
        &info.spec.arms,
        shape,
        metrics,
        Effects::default(),
    )
    .ok()?;
    plan.noise = report
        .metrics
        .iter()
        .map(|m| m.paired_noise_pct / 100.0 / 2f64.sqrt())
        .collect();
    plan.noise.iter().all(|s| s.is_finite()).then_some(plan)
}

/// Reads every file and pools the controls' record per host and card.
pub fn ledger(files: &[PathBuf], simulated: usize, seed: u64) -> anyhow::Result<Ledger> {
    let options = ReadOptions {
        allow_defects: false,
        extras: ExtrasConfig { resamples: 0, seed },
        compare: Vec::new(),
        margin_pct: None,
    };
    let reading = reading::read(files, &options)?;
    let scale = Scale {
        sigma: 1.0,
        walk: 0.0,
        carry: 0.0,
        correlation: 0.0,
    };
    let mut rows: BTreeMap<(String, String), (usize, Record, Record)> = BTreeMap::new();
    let mut skipped = Vec::new();
    for (i, (file, report)) in reading.files.iter().zip(&reading.reports).enumerate() {
        // Read without defects allowed, a connected file is one with statistics.
        let (Some(info), Some(run), true) =
            (file.ladder.as_ref(), report.run.as_ref(), report.connected)
        else {
            skipped.push((report.file.clone(), report.verdict.clone()));
            continue;
        };
        let row = rows
            .entry((run.host.clone(), run.card_label()))
            .or_default();
        row.0 += 1;
        let (inert, known, offsets) = controls_of(report);
        row.1.add(&inert, &known);
        add_offsets(&mut row.1, info, offsets);
        if let Some(plan) = twin(info, report) {
            for t in plan.tallies(
                NoiseModel::Independent,
                &scale,
                simulated,
                seed ^ (i as u64) << 20,
            ) {
                add_tally(&mut row.2, &t);
            }
        }
    }
    let rows = rows
        .into_iter()
        .map(|((host, card), (ladders, real, sim))| {
            let [inert_failed, ladders_failed, known_held] = real.counts();
            let [simulated_inert_failed, simulated_ladders_failed, simulated_known_held] =
                sim.counts();
            LedgerRow {
                host,
                card,
                ladders,
                inert_failed,
                ladders_failed,
                known_held,
                simulated_inert_failed,
                simulated_ladders_failed,
                simulated_known_held,
                known_offsets: real
                    .offsets
                    .into_iter()
                    .filter_map(|(plant, (ladders, tests))| {
                        let offset = known_offset::pool(&tests, seed)?;
                        Some(PlantOffset {
                            plant,
                            ladders,
                            offset,
                        })
                    })
                    .collect(),
            }
        })
        .collect();
    Ok(Ledger {
        rows,
        skipped,
        simulated_per_ladder: simulated,
    })
}

/// A ladder's known-effect offsets, each under its plant: the arm's binary, or the ladder's
/// where the arm recorded none.
fn add_offsets(record: &mut Record, info: &LadderInfo, offsets: Vec<(&str, Offset)>) {
    let start = &info.start;
    let plant_of = |arm: &str| {
        let record = start.arms.iter().find(|a| a.name == arm);
        let binary = record.map_or(&start.binary, |a| start.binary_of(a));
        binary.blake3.chars().take(12).collect::<String>()
    };
    let mut this_ladder = BTreeSet::new();
    for (arm, offset) in offsets {
        let plant = plant_of(arm);
        let entry = record.offsets.entry(plant.clone()).or_default();
        entry.0 += usize::from(this_ladder.insert(plant));
        entry.1.push(offset);
    }
}

/// The known-effect tests read against their declared effects, where a row has any.
fn render_offsets(out: &mut String, rows: &[LedgerRow]) {
    let read: Vec<(&LedgerRow, &PlantOffset)> = rows
        .iter()
        .flat_map(|r| r.known_offsets.iter().map(move |o| (r, o)))
        .collect();
    if read.is_empty() {
        return;
    }
    out.push_str(
        "\nKnown-effect controls against their declared effects: is a failure the planted \
         effect's or the intervals'? The offset pooled by inverse variance, and the Birge ratio, \
         the tests' scatter about it in units of their own standard errors, per plant: the \
         known-effect arm's binary (its blake3), since a rebuilt mechanism may plant another \
         effect.\n\n\
         | host | card | plant | ladders | tests | read − declared [95 % CI] | Birge ratio | honest intervals give | reading |\n\
         |---|---|---|---:|---:|---|---:|---|---|\n",
    );
    for (r, p) in read {
        let o = &p.offset;
        let (birge, range) = match (o.birge, o.birge_range) {
            (Some(b), Some((lo, hi))) => (format!("{b:.2}"), format!("{lo:.2} to {hi:.2}")),
            _ => ("n/a".to_string(), "n/a".to_string()),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:+.4} % [{:+.4} %, {:+.4} %] | {birge} | {range} | {} |",
            r.host,
            r.card,
            p.plant,
            p.ladders,
            o.tests,
            o.pct,
            o.low_pct,
            o.high_pct,
            offset_reading(o)
        );
    }
}

/// METHOD.md "The plant or the intervals?" in words.
fn offset_reading(o: &PooledOffset) -> &'static str {
    let off = o.low_pct > 0.0 || o.high_pct < 0.0;
    match (o.birge.zip(o.birge_range), off) {
        (Some((b, (_, hi))), _) if b > hi => {
            "the estimates scatter more than their intervals allow"
        }
        (Some((b, (lo, _))), true) if b >= lo => {
            "the planted effect is off by this much; the intervals scatter as they say"
        }
        (Some((b, (lo, _))), false) if b >= lo => "as declared; the intervals scatter as they say",
        (Some(_), true) => {
            "the planted effect is off by this much; the estimates scatter less than their intervals allow"
        }
        (Some(_), false) => "as declared; the estimates scatter less than their intervals allow",
        (None, true) => "the planted effect is off by this much (one test: no scatter to read)",
        (None, false) => "as declared (one test: no scatter to read)",
    }
}

fn add_tally(record: &mut Record, t: &Tally) {
    let inert: Vec<bool> = t.inert.iter().map(|i| i.1).collect();
    record.add(&inert, &t.known);
}

/// The ledger as tables.
pub fn render_ledger(ledger: &Ledger) -> String {
    let mut out = String::from(
        "abab's own error rates on these ladders, per host and card. Inert controls (null, \
         reflexive) should fail rarely; known-effect controls should hold. Beside each, the \
         rate of simulated ladders of the same designs at the same noise.\n\n",
    );
    out.push_str("| host | card | ladders | inert control tests failed [95 % CI] | simulated | ladders with a failed inert control [95 % CI] | simulated | known-effect tests held [95 % CI] | simulated |\n|---|---|---:|---|---:|---|---:|---|---:|\n");
    for r in &ledger.rows {
        let sim = |c: &Count| pct(c.rate);
        let real = |c: &Count| {
            if c.n == 0 {
                "none".to_string()
            } else {
                count(c)
            }
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.host,
            r.card,
            r.ladders,
            real(&r.inert_failed),
            sim(&r.simulated_inert_failed),
            real(&r.ladders_failed),
            sim(&r.simulated_ladders_failed),
            real(&r.known_held),
            sim(&r.simulated_known_held),
        );
    }
    let _ = writeln!(
        out,
        "\n{} simulated ladders per real ladder (independent normal cells at each metric's σ̂).",
        ledger.simulated_per_ladder
    );
    render_offsets(&mut out, &ledger.rows);
    if !ledger.skipped.is_empty() {
        let _ = writeln!(out, "\nNot read ({}):", ledger.skipped.len());
        for (file, why) in &ledger.skipped {
            let _ = writeln!(out, "- {file}: {why}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ladder::sample::{Sample, SampleArm};

    /// Each reading of METHOD.md "The plant or the intervals?", at its edges: an interval that
    /// touches 0 contains it, and a ratio on either end of its range is inside it.
    #[test]
    fn the_offset_reads_in_words_by_its_interval_and_ratio() {
        let read = |low_pct, high_pct, birge: Option<f64>| {
            offset_reading(&PooledOffset {
                tests: 3,
                pct: (low_pct + high_pct) / 2.0,
                low_pct,
                high_pct,
                birge,
                birge_range: birge.map(|_| (0.5, 2.0)),
            })
        };
        let more = "the estimates scatter more than their intervals allow";
        let off = "the planted effect is off by this much; the intervals scatter as they say";
        let declared = "as declared; the intervals scatter as they say";
        let off_less = "the planted effect is off by this much; the estimates scatter less than \
                        their intervals allow";
        let less = "as declared; the estimates scatter less than their intervals allow";
        assert_eq!(read(0.1, 0.3, Some(2.01)), more);
        assert_eq!(read(-0.1, 0.1, Some(2.01)), more);
        assert_eq!(read(0.1, 0.3, Some(2.0)), off);
        assert_eq!(read(-0.3, -0.1, Some(0.5)), off);
        assert_eq!(read(0.0, 0.3, Some(1.0)), declared);
        assert_eq!(read(-0.3, 0.0, Some(1.0)), declared);
        assert_eq!(read(0.1, 0.3, Some(0.49)), off_less);
        assert_eq!(read(-0.1, 0.1, Some(0.49)), less);
        assert_eq!(
            read(0.1, 0.3, None),
            "the planted effect is off by this much (one test: no scatter to read)"
        );
        assert_eq!(
            read(-0.1, 0.1, None),
            "as declared (one test: no scatter to read)"
        );
    }

    /// The twin draws its cells at the ladder's own noise: σ̂ of a cell, relative, near the
    /// noise the sample's values were drawn at (0.4 %), not a multiple of it.
    #[test]
    fn a_twin_draws_its_cells_at_the_ladders_own_noise() {
        let arms = vec![
            SampleArm::new("a", Role::Base, 0.0),
            SampleArm::new("a-again", Role::Reflexive, 0.0),
        ];
        let mut sample = Sample::new("twin", "t1", arms);
        (sample.noise_pct, sample.passes, sample.noise_limit_pct) = (0.4, 40, None);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("twin.csv");
        std::fs::write(&file, sample.file_text()).unwrap();
        let options = ReadOptions {
            allow_defects: false,
            extras: ExtrasConfig {
                resamples: 0,
                seed: 1,
            },
            compare: Vec::new(),
            margin_pct: None,
        };
        let reading = reading::read(&[file], &options).unwrap();
        let info = reading.files[0].ladder.as_ref().unwrap();
        let plan = twin(info, &reading.reports[0]).unwrap();
        assert_eq!(plan.noise.len(), 1);
        assert!(
            (0.003..0.005).contains(&plan.noise[0]),
            "σ̂ {} where the cells were drawn at 0.004",
            plan.noise[0]
        );
    }
}
