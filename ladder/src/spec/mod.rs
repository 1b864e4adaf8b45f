//! The ladder spec: the TOML a person writes in `ladders/NAME.toml`.
//!
//! The same `Spec` type is read from the TOML file by the runner (with every check, and
//! errors that name the file, the line and the fix) and from the start record's `spec`
//! JSON by the analysis, where the defaults below are applied in the one place they live.

use crate::breakdown::BreakdownSpec;
use crate::ladder_file::{Role, WALL_COLUMN};
use crate::order::Scheme;
pub use card::{CardSpec, ClockRule, ThrottleRule, DEFAULT_SAMPLE_MS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

pub const DEFAULT_WARMUP_PASSES: usize = 1;
pub const DEFAULT_TIMEOUT_S: f64 = 600.0;
pub const DEFAULT_REPLICATION_LIMIT_PP: f64 = 0.15;
/// Variables the runner sets itself in every cell.
pub const RESERVED_ENV_PREFIX: &str = "LADDER_";

/// How the runner reads a cell's stdout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputMode {
    /// A CSV header and one or more rows.
    #[default]
    Csv,
    /// One JSON object per line; keys become columns.
    Json,
    /// Nothing parsed: the harness's wall time is the metric.
    Time,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Higher,
    Lower,
}

impl fmt::Display for Better {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Better::Higher => "higher",
            Better::Lower => "lower",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArmSpec {
    pub name: String,
    #[serde(default)]
    pub role: Role,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `ladder/2`: this arm's own argv (another build, another program).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// `ladder/2`: appended to the spec's command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// A known-effect arm's true effect, better-is-positive (METHOD.md "Controls").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_pct: Option<Expected>,
    /// `output = "time"`: the runner pads this arm's cells by this percent of the base's
    /// wall time in the pass before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pad_pct: Option<f64>,
}

/// `expected_pct`: one effect for every metric, or one per named metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Expected {
    Every(f64),
    PerMetric(BTreeMap<String, f64>),
}

impl Expected {
    /// The true effect on `column`, or `None` when the arm is not a control on it.
    pub fn on(&self, column: &str) -> Option<f64> {
        match self {
            Expected::Every(pct) => Some(*pct),
            Expected::PerMetric(by_column) => by_column.get(column).copied(),
        }
    }
}

/// The index of the base arm among `arms` (a checked spec has exactly one; 0 otherwise).
pub fn base_index(arms: &[ArmSpec]) -> usize {
    arms.iter().position(|a| a.role == Role::Base).unwrap_or(0)
}

impl ArmSpec {
    /// Whether this arm is a control on the metric `column`: every inert control is, and a
    /// known-effect arm on the metrics its `expected_pct` names.
    pub fn controls(&self, column: &str) -> bool {
        self.role.is_inert_control()
            || (self.role == Role::KnownEffect && self.expected_on(column).is_some())
    }

    /// The known-effect arm's true effect on `column`.
    pub fn expected_on(&self, column: &str) -> Option<f64> {
        self.expected_pct.as_ref().and_then(|e| e.on(column))
    }
}

/// `[stop]`: precision stopping by Stein's two-stage rule over the looks (METHOD.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StopSpec {
    pub halfwidth_pct: f64,
    /// Passes, warm-up included, at which the ladder may stop; increasing.
    pub looks: Vec<usize>,
    /// Whose first-look spread `s0` is: each arm's own, or one pooled over the arms.
    #[serde(default)]
    pub spread: StopSpread,
    /// The metrics whose need sets the stopping look; empty: every metric.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<String>,
    /// Seconds of cells (the sum of `ladder_wall_s`) the ladder may take: at the first look
    /// a look that would cost more at the ladder's own seconds a pass is not run to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_s: Option<f64>,
}

/// `[stop] spread`: METHOD.md "Precision stopping" and "The pooled first-look spread".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopSpread {
    /// Each arm's `s0` from its own paired log ratios, `m0 − 1` degrees of freedom.
    #[default]
    PerArm,
    /// One `s0` per metric from the additive model over every arm, `(m0 − 1)(n − 1)`.
    Pooled,
}

/// What the runner does with a cell's stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StdoutMode {
    Discard,
    Keep,
}

/// `cards`: where `runner fleet` runs by default, `"all"` or a list of card indices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Cards {
    List(Vec<u32>),
    Named(String),
}

/// `[scan]`: one generated arm per value of one variable, per value of a `{NAME}` parameter
/// of the command, or per argv tail.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScanSpec {
    pub env: Option<String>,
    /// A parameter's name: each value replaces `{NAME}` in every word of the command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter: Option<String>,
    pub values: Option<Vec<String>>,
    pub args: Option<Vec<Vec<String>>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricSpec {
    pub column: String,
    pub better: Better,
    /// Which `ladder_row` to read when the engine prints several rows.
    #[serde(default)]
    pub row: usize,
    /// This metric's own noise limit, in place of the spec's (METHOD.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_limit_pct: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplitSpec {
    pub rounds: String,
    pub time: String,
    /// An energy column over the same span as `time`, split as the time is (METHOD.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdentitySpec {
    pub column: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    pub name: String,
    pub command: Vec<String>,
    #[serde(default)]
    pub output: OutputMode,
    /// Omitted under `[stop]`: the last look. Read it with `Spec::passes()`.
    #[serde(default, rename = "passes")]
    pub declared_passes: Option<usize>,
    #[serde(default = "default_warmup")]
    pub warmup_passes: usize,
    #[serde(default)]
    pub order: Scheme,
    pub seed: Option<u64>,
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// Pre-registered limit on the paired noise; absent means no gate.
    pub noise_limit_pct: Option<f64>,
    pub equivalence_margin_pct: Option<f64>,
    #[serde(default = "default_replication")]
    pub replication_limit_pp: f64,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default, rename = "arm")]
    pub arms: Vec<ArmSpec>,
    #[serde(default, rename = "metric")]
    pub metrics: Vec<MetricSpec>,
    pub split: Option<SplitSpec>,
    pub identity: Option<IdentitySpec>,
    /// Which rows of a cell form its breakdown (METHOD.md "Breakdown").
    pub breakdown: Option<BreakdownSpec>,
    pub stop: Option<StopSpec>,
    pub stdout: Option<StdoutMode>,
    pub ok_exit: Option<Vec<i32>>,
    pub prepare: Option<Vec<String>>,
    pub setup: Option<Vec<String>>,
    pub cleanup: Option<Vec<String>>,
    pub scan: Option<ScanSpec>,
    /// Cap on each cell's captured stdout and stderr, in MiB.
    pub output_cap_mib: Option<u64>,
    pub cards: Option<Cards>,
    /// `[card]`: the card sampled during each cell, and the pre-registered throttle rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<CardSpec>,
    /// Print each cell's stdout and stderr on the runner's stderr too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub show_output: Option<bool>,
}

fn default_warmup() -> usize {
    DEFAULT_WARMUP_PASSES
}
fn default_timeout() -> f64 {
    DEFAULT_TIMEOUT_S
}
fn default_replication() -> f64 {
    DEFAULT_REPLICATION_LIMIT_PP
}

/// The side log keeps at most this much of a cell's stdout and of its stderr by default.
pub const DEFAULT_OUTPUT_CAP_MIB: u64 = 1;

/// A spec that cannot be run, with where and how to fix it.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub message: String,
    pub fix: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.message)?,
            None => write!(f, "{}: {}", self.file.display(), self.message)?,
        }
        write!(f, "\n  fix: {}", self.fix)
    }
}

impl std::error::Error for SpecError {}

/// A spec read from its file, with what the start record must carry about it.
#[derive(Clone, Debug)]
pub struct LoadedSpec {
    pub spec: Spec,
    pub path: PathBuf,
    /// The spec as written, TOML turned into JSON key for key.
    pub json: serde_json::Value,
    pub blake3: String,
    pub source: String,
}

impl LoadedSpec {
    /// The first line of the spec that holds `"value"`, for errors found after loading.
    pub fn line_of(&self, value: &str) -> Option<usize> {
        let quoted = format!("\"{value}\"");
        self.source
            .lines()
            .position(|l| l.contains(&quoted))
            .map(|i| i + 1)
    }
}

impl Spec {
    /// The most passes the ladder runs: `passes`, or under `[stop]` without it, the last look.
    pub fn passes(&self) -> usize {
        self.declared_passes
            .or_else(|| self.stop.as_ref().and_then(|s| s.looks.last().copied()))
            .unwrap_or(0)
    }

    /// The metrics the analysis reads; `time` output with none declared reads the wall time.
    pub fn effective_metrics(&self) -> Vec<MetricSpec> {
        if self.metrics.is_empty() && self.output == OutputMode::Time {
            return vec![MetricSpec {
                column: WALL_COLUMN.into(),
                better: Better::Lower,
                row: 0,
                noise_limit_pct: None,
            }];
        }
        self.metrics.clone()
    }

    pub fn base(&self) -> Option<&ArmSpec> {
        self.arms.iter().find(|a| a.role == Role::Base)
    }

    /// The index of the base arm (a checked spec has exactly one; 0 otherwise).
    pub fn base_index(&self) -> usize {
        base_index(&self.arms)
    }

    /// The full argv of `arm`: its own `command`, or the spec's command plus its `args`.
    pub fn argv_of(&self, arm: &ArmSpec) -> Vec<String> {
        match (&arm.command, &arm.args) {
            (Some(command), _) => command.clone(),
            (None, Some(args)) => self.command.iter().chain(args).cloned().collect(),
            (None, None) => self.command.clone(),
        }
    }

    /// The program the spec's own `command` runs: its first word, or where a `[scan]`
    /// parameter stands in for the program (`command = ["{cc}", ...]`), the base arm's.
    pub fn default_program(&self) -> String {
        let program = self.command.first().cloned().unwrap_or_default();
        let placeholder = self.scan.as_ref().and_then(ScanSpec::placeholder);
        match (placeholder, self.base()) {
            (Some(mark), Some(base)) if program.contains(&mark) => {
                self.argv_of(base).first().cloned().unwrap_or(program)
            }
            _ => program,
        }
    }

    /// Exit codes that count as a successful cell (`ok_exit`, default `[0]`).
    pub fn ok_exit_codes(&self) -> Vec<i32> {
        self.ok_exit.clone().unwrap_or_else(|| vec![0])
    }

    /// What the runner does with stdout: `time` mode never parses it, and by default no
    /// mode copies it to the side log, unless `show_output` shows it (and so keeps it).
    pub fn stdout_mode(&self) -> StdoutMode {
        let default = if self.shows_output() {
            StdoutMode::Keep
        } else {
            StdoutMode::Discard
        };
        self.stdout.unwrap_or(default)
    }

    /// `show_output = true`: each cell's output is printed on the runner's stderr as well.
    pub fn shows_output(&self) -> bool {
        self.show_output.unwrap_or(false)
    }

    /// The most bytes of one cell's stdout, and of its stderr, that the side log keeps.
    pub fn output_cap_bytes(&self) -> usize {
        (self.output_cap_mib.unwrap_or(DEFAULT_OUTPUT_CAP_MIB) as usize).saturating_mul(1 << 20)
    }
}

mod card;
mod check;
mod locate;
mod parse;
#[cfg(test)]
mod tests;
