//! Generated ladder files for tests and benchmarks.
//!
//! [`Sample`] describes a ladder whose true effects are known (arms with roles and effects,
//! passes, noise, metric columns, optionally a round split, an output digest and witness
//! columns); [`Sample::file_text`] returns the file exactly as the runner writes it, built
//! from the same start record, timestamps and CSV quoting as [`crate::LadderWriter`].
//!
//! ```
//! use ladder::sample::{Sample, SampleArm};
//! use ladder::Role;
//! let sample = Sample::new("demo", "t1", vec![
//!     SampleArm::new("off", Role::Base, 0.0),
//!     SampleArm::new("on", Role::Arm, 1.5), // 1.5 % better on every metric
//! ]);
//! let text = sample.file_text();
//! assert!(ladder::replay(text.as_bytes()).verdict.connected);
//! ```

mod breakdown;
mod card;
mod reps;

pub use breakdown::{SampleBreakdown, KEY_COLUMN, LAUNCHES_COLUMN, TOTAL_COLUMN, VALUE_COLUMN};
pub use card::{SampleCard, ENERGY_COLUMN};
pub use reps::SampleReps;

use crate::ladder_file::{
    csv_line, timestamp, witness_column, ArmRecord, BinaryRecord, EndRecord, HostRecord,
    OrderRecord, Role, StartRecord, WitnessSide, DONE_TAG, FORMAT, HARNESS_COLUMNS, ROW_COLUMN,
    WALL_COLUMN,
};
use crate::order::{Order, Scheme};
use crate::repetitions::{REP_COLUMN, STARTUP_COLUMN, TIMED_COLUMN};
use crate::spec::{Better, Spec, StopSpec, StopSpread};
use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use std::collections::BTreeMap;

/// One arm of a generated ladder.
#[derive(Clone, Debug)]
pub struct SampleArm {
    pub name: String,
    pub role: Role,
    /// True effect in percent on every metric, positive meaning better (faster, or less time).
    pub effect_pct: f64,
    /// The value of the rounds column when a split is generated.
    pub rounds: u64,
    /// Whether the arm's output digest equals the base's.
    pub same_output: bool,
    /// A known-effect arm's `expected_pct` as the spec declares it (for every metric).
    pub expected_pct: Option<f64>,
    /// True change of the card's power in percent (positive: it draws more); with a sampled
    /// card, energy is power times time.
    pub power_pct: f64,
}

impl SampleArm {
    /// An arm with 64 rounds and the base's output.
    pub fn new(name: &str, role: Role, effect_pct: f64) -> SampleArm {
        SampleArm {
            name: name.into(),
            role,
            effect_pct,
            rounds: 64,
            same_output: true,
            expected_pct: None,
            power_pct: 0.0,
        }
    }

    /// A known-effect arm whose spec declares `expected_pct` and whose cells carry `true_pct`.
    pub fn known_effect(name: &str, expected_pct: f64, true_pct: f64) -> SampleArm {
        SampleArm {
            expected_pct: Some(expected_pct),
            ..SampleArm::new(name, Role::KnownEffect, true_pct)
        }
    }
}

/// One engine column the spec declares as a metric, with its level in the base arm.
#[derive(Clone, Debug)]
pub struct SampleMetric {
    pub column: String,
    pub better: Better,
    pub level: f64,
    /// The metric's own pre-registered noise limit; `None` leaves it to the spec's.
    pub noise_limit_pct: Option<f64>,
}

/// A ladder to generate. Every field is public; [`Sample::new`] fills the defaults.
#[derive(Clone, Debug)]
pub struct Sample {
    pub ladder: String,
    pub tag: String,
    pub arms: Vec<SampleArm>,
    pub passes: usize,
    pub warmup_passes: usize,
    pub scheme: Scheme,
    pub seed: u64,
    /// Relative noise of every value, in percent (one standard deviation).
    pub noise_pct: f64,
    pub metrics: Vec<SampleMetric>,
    /// The pre-registered noise limit; `None` registers none (no gate).
    pub noise_limit_pct: Option<f64>,
    /// The controls' pre-registered equivalence margin; `None` registers none.
    pub equivalence_margin_pct: Option<f64>,
    pub replication_limit_pp: f64,
    /// A `[stop]` table: the spec carries it, the start record's order its looks, and the file
    /// ends at the look the rule picks from its first look, as the runner's would.
    pub stop: Option<StopSpec>,
    /// Adds `spec_rounds` and `decode_seconds_mean` and a `[split]` naming them.
    pub split: bool,
    /// Adds `output_digest` and an `[identity]` naming it.
    pub digest: bool,
    /// Adds the witness columns of a GPU host.
    pub witness: bool,
    /// Cell numbers (`pass · arms + slot`) that ran beside a foreign process.
    pub foreign_cells: Vec<usize>,
    /// Cell numbers whose SM clock dropped and that report a throttle reason (with `card`,
    /// `sw_thermal_slowdown` in the sampled mask too).
    pub throttled_cells: Vec<usize>,
    /// Repetition rows and the start-up and timed columns (`engine bench --rows reps`); the
    /// metrics' noise then comes from these, not from `noise_pct`.
    pub reps: Option<SampleReps>,
    /// The spec's `command` (default `target/release/engine bench`).
    pub command: Vec<String>,
    /// Breakdown rows and a `[breakdown]` naming their columns (`engine bench --rows ops`);
    /// not with `reps`.
    pub breakdown: Option<SampleBreakdown>,
    /// The card sampled during each cell: its columns and `[card]` table.
    pub card: Option<SampleCard>,
    pub started: DateTime<Utc>,
}

/// The rounds and time columns a generated split uses.
pub const ROUNDS_COLUMN: &str = "spec_rounds";
pub const TIME_COLUMN: &str = "decode_seconds_mean";
pub const DIGEST_COLUMN: &str = "output_digest";

impl Sample {
    /// 8 passes (1 warm-up), rotate order, seed 1, 0.1 % noise, one `decode_tok_s`
    /// (higher) metric at 100 tok/s, noise limit 0.2 %, no split, digest or witness.
    pub fn new(ladder: &str, tag: &str, arms: Vec<SampleArm>) -> Sample {
        Sample {
            ladder: ladder.into(),
            tag: tag.into(),
            arms,
            passes: 8,
            warmup_passes: 1,
            scheme: Scheme::Rotate,
            seed: 1,
            noise_pct: 0.1,
            metrics: vec![SampleMetric {
                column: "decode_tok_s".into(),
                better: Better::Higher,
                level: 100.0,
                noise_limit_pct: None,
            }],
            noise_limit_pct: Some(0.2),
            equivalence_margin_pct: None,
            replication_limit_pp: 0.15,
            stop: None,
            split: false,
            digest: false,
            witness: false,
            foreign_cells: Vec::new(),
            throttled_cells: Vec::new(),
            reps: None,
            command: vec!["target/release/engine".into(), "bench".into()],
            breakdown: None,
            card: None,
            started: DateTime::parse_from_rfc3339("2026-11-29T10:00:00Z")
                .expect("constant timestamp")
                .with_timezone(&Utc),
        }
    }

    /// The spec as the start record carries it (TOML keys, defaults not filled in).
    pub fn spec_json(&self) -> serde_json::Value {
        let arms: Vec<_> = self
            .arms
            .iter()
            .map(|a| {
                let mut arm = json!({"name": a.name, "role": a.role, "env": {"MODE": a.name}});
                if let Some(expected) = a.expected_pct {
                    arm["expected_pct"] = json!(expected);
                }
                arm
            })
            .collect();
        let metrics: Vec<_> = self
            .metrics
            .iter()
            .map(|m| {
                let mut metric = json!({"column": m.column, "better": m.better});
                if let Some(limit) = m.noise_limit_pct {
                    metric["noise_limit_pct"] = json!(limit);
                }
                metric
            })
            .collect();
        let mut spec = json!({
            "name": self.ladder,
            "command": self.command,
            "passes": self.passes,
            "warmup_passes": self.warmup_passes,
            "order": self.scheme,
            "seed": self.seed,
            "noise_limit_pct": self.noise_limit_pct,
            "replication_limit_pp": self.replication_limit_pp,
            "arm": arms,
            "metric": metrics,
        });
        if self.noise_limit_pct.is_none() {
            spec.as_object_mut()
                .expect("an object")
                .remove("noise_limit_pct");
        }
        if let Some(margin) = self.equivalence_margin_pct {
            spec["equivalence_margin_pct"] = json!(margin);
        }
        if let Some(stop) = &self.stop {
            spec["stop"] = json!({"halfwidth_pct": stop.halfwidth_pct, "looks": stop.looks});
            if stop.spread == StopSpread::Pooled {
                spec["stop"]["spread"] = json!(stop.spread);
            }
        }
        if self.split {
            spec["split"] = json!({"rounds": ROUNDS_COLUMN, "time": TIME_COLUMN});
        }
        if self.digest {
            spec["identity"] = json!({"column": DIGEST_COLUMN});
        }
        if self.breakdown.is_some() {
            spec["breakdown"] = SampleBreakdown::spec_json();
        }
        if let Some(card) = &self.card {
            card.spec(&mut spec);
        }
        spec
    }

    /// The start record the runner would write for this ladder.
    pub fn start_record(&self) -> StartRecord {
        let spec = self.spec_json();
        let toml_text = toml::to_string(&spec).expect("a JSON object converts to TOML");
        let names: Vec<String> = self.arms.iter().map(|a| a.name.clone()).collect();
        StartRecord {
            format: FORMAT.into(),
            ladder: self.ladder.clone(),
            tag: self.tag.clone(),
            started: timestamp(self.started),
            order: OrderRecord {
                scheme: self.scheme,
                arms: names,
                passes: self.passes,
                seed: Some(self.seed),
                looks: self.stop.as_ref().map(|s| s.looks.clone()),
            },
            warmup_passes: self.warmup_passes,
            arms: self
                .arms
                .iter()
                .map(|a| ArmRecord {
                    name: a.name.clone(),
                    role: a.role,
                    env: BTreeMap::from([("MODE".to_string(), a.name.clone())]),
                    argv: None,
                    binary: None,
                })
                .collect(),
            spec,
            spec_blake3: blake3::hash(toml_text.as_bytes()).to_hex().to_string(),
            command: self.command.clone(),
            binary: BinaryRecord {
                path: "target/release/engine".into(),
                blake3: blake3::hash(b"engine").to_hex().to_string(),
            },
            host: HostRecord {
                hostname: "sample-host".into(),
                os: "linux".into(),
                cpus: 2,
                extra: Default::default(),
            },
            card: self
                .witness
                .then(|| json!({"name": "NVIDIA H200", "index": 0})),
            extra: Default::default(),
        }
    }

    /// The column header: harness, wall time, witness, then the engine's columns.
    pub fn columns(&self) -> Vec<String> {
        let mut columns: Vec<String> = HARNESS_COLUMNS.iter().map(|c| c.to_string()).collect();
        if self.reps.is_some() || self.breakdown.is_some() {
            columns.push(ROW_COLUMN.into());
        }
        columns.push(WALL_COLUMN.into());
        if self.witness {
            for name in crate::ladder_file::witness::CARD {
                columns.push(witness_column(name, WitnessSide::Before));
                columns.push(witness_column(name, WitnessSide::After));
            }
        }
        columns.extend(self.card.iter().flat_map(SampleCard::columns));
        columns.extend(self.metrics.iter().map(|m| m.column.clone()));
        if self.split {
            columns.push(ROUNDS_COLUMN.into());
            columns.push(TIME_COLUMN.into());
            if self.card.as_ref().is_some_and(|c| c.split_energy) {
                columns.push(ENERGY_COLUMN.into());
            }
        }
        if self.digest {
            columns.push(DIGEST_COLUMN.into());
        }
        if self.reps.is_some() {
            columns.extend([STARTUP_COLUMN, TIMED_COLUMN, REP_COLUMN].map(String::from));
        }
        if self.breakdown.is_some() {
            columns.extend(SampleBreakdown::columns().map(String::from));
        }
        columns
    }

    /// The whole file, `\n`-terminated, exactly as the runner writes it.
    pub fn file_text(&self) -> String {
        let mut text = self.start_record().to_line();
        text.push('\n');
        text.push_str(&csv_line(&self.columns()));
        text.push('\n');
        let head = text.len();
        let cells = self.cells();
        for cell in &cells {
            text.push_str(&cell.lines);
        }
        let (passes, stopped) = self.run_length(&text);
        let ran = &cells[..passes * self.arms.len()];
        text.truncate(head + ran.iter().map(|c| c.lines.len()).sum::<usize>());
        let end = EndRecord {
            ended: timestamp(
                ran.last().map_or(self.started, |c| c.ended) + Duration::microseconds(500),
            ),
            cells: ran.len(),
            reason: None,
            passes: Some(passes),
            stopped,
        };
        text.push_str(DONE_TAG);
        text.push_str(&serde_json::to_string(&end).expect("end record serializes"));
        text.push('\n');
        text
    }

    /// The passes the runner would run and why it stopped: under `[stop]`, the plan that the
    /// first look of `unfinished` (every cell, no done record) sets, as `verify` recomputes it
    /// from the file; else every pass.
    fn run_length(&self, unfinished: &str) -> (usize, Option<String>) {
        if self.stop.is_none() {
            return (self.passes, None);
        }
        let ladder = crate::replay(unfinished.as_bytes())
            .ladder
            .expect("a generated ladder replays");
        let spec = Spec::from_json(&ladder.start.spec).expect("a generated spec parses");
        let plan = ladder.stop_plan(&spec).expect("a [stop] spec has a plan");
        let passes = plan.look.min(self.passes);
        (passes, Some(plan.stopped.as_str().to_string()))
    }

    /// Every cell of the order, each its rows as text, whatever `[stop]` will keep.
    fn cells(&self) -> Vec<CellText> {
        let order = Order::new(
            self.scheme,
            self.arms.iter().map(|a| a.name.clone()).collect(),
            self.passes,
            Some(self.seed),
        );
        let mut noise = Noise::new(self.seed);
        let mut clock = self.started;
        let mut cells = Vec::with_capacity(order.n_cells());
        for cell in order.cells() {
            let arm = &self.arms[cell.arm];
            let number = cell.pass * self.arms.len() + cell.slot;
            let gain = 1.0 + arm.effect_pct / 100.0;
            let reps = self
                .reps
                .as_ref()
                .map(|r| (r, r.draw(&mut noise, &self.metrics, gain)));
            let wall_us = match &reps {
                Some((r, _)) => r.wall_us(),
                None => 10_000_000 + (noise.uniform() * 100_000.0) as i64,
            };
            let started = clock + Duration::microseconds(1_000);
            let ended = started + Duration::microseconds(wall_us);
            clock = ended;
            let mut row = vec![
                cell.pass.to_string(),
                cell.slot.to_string(),
                arm.name.clone(),
                timestamp(started),
                timestamp(ended),
                "0".to_string(),
            ];
            if reps.is_some() || self.breakdown.is_some() {
                row.push("0".to_string());
            }
            row.push(format!("{:.6}", wall_us as f64 / 1e6));
            if self.witness {
                row.extend(self.witness_fields(number));
            }
            if let Some(card) = &self.card {
                let throttled = self.throttled_cells.contains(&number);
                row.extend(card.fields(arm, gain, number, throttled, &mut noise));
            }
            let first_metric = row.len();
            for (k, metric) in self.metrics.iter().enumerate() {
                let value = match &reps {
                    Some((_, values)) => SampleReps::summary(&values[k]),
                    None => {
                        let jitter = 1.0 + self.noise_pct / 100.0 * noise.gaussian();
                        match metric.better {
                            Better::Higher => metric.level * gain * jitter,
                            Better::Lower => metric.level / gain * jitter,
                        }
                    }
                };
                row.push(format!("{value:.6}"));
            }
            if self.split {
                let per_round = 0.01 / gain * (1.0 + self.noise_pct / 100.0 * noise.gaussian());
                row.push(arm.rounds.to_string());
                let seconds = per_round * arm.rounds as f64;
                row.push(format!("{seconds:.9}"));
                row.extend(
                    self.card
                        .as_ref()
                        .and_then(|c| c.split_energy(seconds, arm)),
                );
            }
            if self.digest {
                let output = if arm.same_output {
                    "base"
                } else {
                    arm.name.as_str()
                };
                row.push(blake3::hash(output.as_bytes()).to_hex()[..16].to_string());
            }
            let rows = match (&reps, &self.breakdown) {
                (Some((r, values)), _) => r.rows(row, HARNESS_COLUMNS.len(), first_metric, values),
                (None, Some(b)) => b.rows(
                    row,
                    HARNESS_COLUMNS.len(),
                    (&arm.name, number),
                    &mut noise,
                    self.noise_pct,
                ),
                (None, None) => vec![row],
            };
            let lines = rows.iter().map(|row| csv_line(row) + "\n").collect();
            cells.push(CellText { lines, ended });
        }
        cells
    }

    fn witness_fields(&self, cell: usize) -> Vec<String> {
        let foreign = if self.foreign_cells.contains(&cell) {
            "1"
        } else {
            "0"
        };
        let throttled = self.throttled_cells.contains(&cell);
        let (sm_after, reason) = if throttled {
            ("1755", "sw_thermal")
        } else {
            ("1980", "none")
        };
        [
            [foreign, foreign],
            ["1980", sm_after],
            ["2619", "2619"],
            ["41", "44"],
            ["118.5", "690.2"],
            ["none", reason],
        ]
        .iter()
        .flatten()
        .map(|s| s.to_string())
        .collect()
    }
}

/// One generated cell: its rows as the file holds them, and when it ended.
struct CellText {
    lines: String,
    ended: DateTime<Utc>,
}

/// A small seeded generator (splitmix64) so that a sample is the same on every machine.
struct Noise {
    state: u64,
}

impl Noise {
    fn new(seed: u64) -> Noise {
        Noise {
            state: seed ^ 0x9e37_79b9_7f4a_7c15,
        }
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    fn gaussian(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;

    fn full() -> Sample {
        let mut sample = Sample::new(
            "demo",
            "t1",
            vec![
                SampleArm::new("off", Role::Base, 0.0),
                SampleArm::new("on", Role::Arm, 2.0),
                SampleArm::new("null", Role::Null, 0.0),
            ],
        );
        sample.split = true;
        sample.digest = true;
        sample.witness = true;
        sample.scheme = Scheme::Williams;
        sample
    }

    #[test]
    fn a_sample_is_one_connected_run_with_its_spec() {
        let replay = crate::replay(full().file_text().as_bytes());
        assert!(replay.verdict.connected, "{:?}", replay.verdict.defects);
        let ladder = replay.ladder.unwrap();
        assert_eq!(ladder.rows.len(), 24);
        let spec = Spec::from_json(&ladder.start.spec).unwrap();
        assert_eq!(spec.split.unwrap().rounds, ROUNDS_COLUMN);
        assert_eq!(spec.identity.unwrap().column, DIGEST_COLUMN);
        assert!(ladder.column("witness_throttle_after").is_some());
    }

    #[test]
    fn the_same_seed_gives_the_same_file() {
        assert_eq!(full().file_text(), full().file_text());
        let mut other = full();
        other.seed = 2;
        assert_ne!(full().file_text(), other.file_text());
    }
}
