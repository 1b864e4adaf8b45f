//! The ladder spec: the TOML a person writes in `ladders/NAME.toml`.
//!
//! The same `Spec` type is read from the TOML file by the runner (with every check, and
//! errors that name the file, the line and the fix) and from the start record's `spec`
//! JSON by the analysis, where the defaults below are applied in the one place they live.

use crate::ladder_file::{Role, WALL_COLUMN};
use crate::order::Scheme;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

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
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplitSpec {
    pub rounds: String,
    pub time: String,
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

const TOP_KEYS: &[&str] = &[
    "name",
    "command",
    "output",
    "passes",
    "warmup_passes",
    "order",
    "seed",
    "timeout_s",
    "noise_limit_pct",
    "equivalence_margin_pct",
    "replication_limit_pp",
    "env",
    "arm",
    "metric",
    "split",
    "identity",
    "stop",
    "stdout",
    "ok_exit",
    "prepare",
    "setup",
    "cleanup",
    "scan",
    "output_cap_mib",
    "cards",
    "show_output",
];
const ARM_KEYS: &[&str] = &[
    "name",
    "role",
    "env",
    "command",
    "args",
    "expected_pct",
    "pad_pct",
];
const METRIC_KEYS: &[&str] = &["column", "better", "row"];
const SPLIT_KEYS: &[&str] = &["rounds", "time"];
const IDENTITY_KEYS: &[&str] = &["column"];
const STOP_KEYS: &[&str] = &["halfwidth_pct", "looks"];
const SCAN_KEYS: &[&str] = &["env", "parameter", "values", "args"];
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
            }];
        }
        self.metrics.clone()
    }

    pub fn base(&self) -> Option<&ArmSpec> {
        self.arms.iter().find(|a| a.role == Role::Base)
    }

    /// The index of the base arm (a checked spec has exactly one; 0 otherwise).
    pub fn base_index(&self) -> usize {
        self.arms
            .iter()
            .position(|a| a.role == Role::Base)
            .unwrap_or(0)
    }

    /// Reads the spec from a start record's `spec` field.
    pub fn from_json(json: &serde_json::Value) -> Result<Spec, String> {
        let mut spec =
            Spec::deserialize(json).map_err(|e| format!("the recorded spec is unusable: {e}"))?;
        spec.expand_scan();
        Ok(spec)
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

    /// Puts the arms a `[scan]` generates before the declared ones (the first is the base).
    /// Both readers of a spec (the file and the start record) call it, so they agree.
    fn expand_scan(&mut self) {
        if let Some(scan) = &self.scan {
            let mut arms = scan.arms(&self.command);
            arms.append(&mut self.arms);
            self.arms = arms;
        }
    }

    /// Reads and checks a spec file.
    pub fn load(path: &Path) -> Result<LoadedSpec, SpecError> {
        let bytes = std::fs::read(path).map_err(|e| SpecError {
            file: path.into(),
            line: None,
            message: format!("cannot read the spec: {e}"),
            fix: "pass the path of a ladder spec, e.g. ladders/quickstart.toml".into(),
        })?;
        let source = String::from_utf8(bytes.clone()).map_err(|_| SpecError {
            file: path.into(),
            line: None,
            message: "the spec is not UTF-8".into(),
            fix: "save the spec as UTF-8 text".into(),
        })?;
        let spec = Spec::parse(path, &source)?;
        let table: toml::Table = toml::from_str(&source).expect("parsed once already");
        let json = serde_json::to_value(&table).expect("TOML converts to JSON");
        let blake3 = blake3::hash(&bytes).to_hex().to_string();
        Ok(LoadedSpec {
            spec,
            path: path.into(),
            json,
            blake3,
            source,
        })
    }

    /// Parses and checks spec text; `path` only names the file in errors.
    pub fn parse(path: &Path, source: &str) -> Result<Spec, SpecError> {
        let at = Locator { path, source };
        let table: toml::Table = toml::from_str(source).map_err(|e| at.toml_error(&e))?;
        check_keys(&at, &table)?;
        let mut spec: Spec = toml::from_str(source).map_err(|e| at.toml_error(&e))?;
        check_scan(&at, &spec)?;
        spec.expand_scan();
        check(&at, &spec)?;
        check_arm_argv(&at, &spec)?;
        check_stop(&at, &spec)?;
        check_cell_keys(&at, &spec)?;
        check_parameter(&at, &spec)?;
        check_metric_columns(&at, &spec)?;
        check_known_effects(&at, &spec)?;
        Ok(spec)
    }
}

fn check_keys(at: &Locator, table: &toml::Table) -> Result<(), SpecError> {
    at.unknown_keys(table, TOP_KEYS, "")?;
    for (key, allowed) in [("arm", ARM_KEYS), ("metric", METRIC_KEYS)] {
        if let Some(toml::Value::Array(items)) = table.get(key) {
            for item in items.iter().filter_map(toml::Value::as_table) {
                at.unknown_keys(item, allowed, &format!("[[{key}]] "))?;
            }
        }
    }
    for (key, allowed) in [
        ("split", SPLIT_KEYS),
        ("identity", IDENTITY_KEYS),
        ("stop", STOP_KEYS),
        ("scan", SCAN_KEYS),
    ] {
        if let Some(toml::Value::Table(item)) = table.get(key) {
            at.unknown_keys(item, allowed, &format!("[{key}] "))?;
        }
    }
    Ok(())
}

fn check(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    if spec.command.is_empty() {
        return Err(at.error(
            "command",
            None,
            "command is empty",
            "give the argv, e.g. command = [\"target/release/engine\", \"bench\"]",
        ));
    }
    if let Some(r) = crate::refusals::first(spec) {
        return Err(at
            .error(&r.key, r.value.as_deref(), &r.message, &r.fix)
            .nth_line(at, &r.key, r.value.as_deref(), r.nth));
    }
    check_arms(at, spec)?;
    if spec.passes() < spec.warmup_passes + 2 {
        let message = format!(
            "passes = {} with warmup_passes = {} leaves {} analysis passes; at least 2 are needed",
            spec.passes(),
            spec.warmup_passes,
            spec.passes().saturating_sub(spec.warmup_passes)
        );
        let fix = format!("set passes to at least {}", spec.warmup_passes + 2);
        return Err(at.error("passes", None, &message, &fix));
    }
    if spec.order == Scheme::Shuffle && spec.seed.is_none() {
        return Err(at.error(
            "order",
            None,
            "order = \"shuffle\" needs a seed",
            "add seed = 1 (any unsigned integer)",
        ));
    }
    for (key, value) in [
        ("noise_limit_pct", spec.noise_limit_pct.unwrap_or(1.0)),
        (
            "equivalence_margin_pct",
            spec.equivalence_margin_pct.unwrap_or(1.0),
        ),
        ("replication_limit_pp", spec.replication_limit_pp),
        ("timeout_s", spec.timeout_s),
    ] {
        if !(value.is_finite() && value > 0.0) {
            return Err(at.error(
                key,
                None,
                &format!("{key} = {value} is not a positive number"),
                &format!("set {key} to a positive number"),
            ));
        }
    }
    if let Some(Cards::Named(name)) = &spec.cards {
        if name != "all" {
            return Err(at.error(
                "cards",
                None,
                &format!("cards = {name:?} is neither \"all\" nor a list"),
                "write cards = \"all\" or cards = [0, 1]",
            ));
        }
    }
    if spec.effective_metrics().is_empty() {
        return Err(at.error(
            "name",
            None,
            "no [[metric]] is declared",
            "add [[metric]] column = \"...\" better = \"higher\" (or \"lower\")",
        ));
    }
    Ok(())
}

fn check_arms(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    if spec.arms.len() < 2 {
        return Err(at.error(
            "name",
            None,
            "a ladder needs at least two [[arm]] entries",
            "add a base arm and at least one more",
        ));
    }
    let bases: Vec<&ArmSpec> = spec.arms.iter().filter(|a| a.role == Role::Base).collect();
    match bases.as_slice() {
        [] => {
            return Err(at.error(
                "arm",
                None,
                "no arm has role = \"base\"",
                "mark the arm the others are read against with role = \"base\"",
            ));
        }
        [_] => {}
        [_, second, ..] => {
            let message = format!("two base arms: {:?} and {:?}", bases[0].name, second.name);
            return Err(at
                .error(
                    "role",
                    Some("base"),
                    &message,
                    "keep role = \"base\" on exactly one arm",
                )
                .nth_line(at, "role", Some("base"), 1));
        }
    }
    for (i, arm) in spec.arms.iter().enumerate() {
        if arm.name.trim().is_empty() {
            return Err(at.error(
                "name",
                Some(&arm.name),
                "an arm has an empty name",
                "give every [[arm]] a name",
            ));
        }
        if let Some(first) = spec.arms[..i].iter().find(|a| a.name == arm.name) {
            let message = format!("two arms are named {:?}", first.name);
            return Err(at
                .error(
                    "name",
                    Some(&arm.name),
                    &message,
                    "give every [[arm]] a distinct name",
                )
                .nth_line(at, "name", Some(&arm.name), 1));
        }
        for var in arm.env.keys() {
            if spec.env.contains_key(var) {
                let message = format!(
                    "arm {:?} sets {var}, which the common [env] also sets",
                    arm.name
                );
                return Err(at
                    .error(
                        var,
                        None,
                        &message,
                        &format!("set {var} in the arms only, or only in [env]"),
                    )
                    .nth_line(at, var, None, 1));
            }
        }
        for var in arm.env.keys().chain(spec.env.keys()) {
            if var.starts_with(RESERVED_ENV_PREFIX) {
                let message = format!("{var} is set by the runner in every cell");
                return Err(at.error(
                    var,
                    None,
                    &message,
                    &format!("rename it; {RESERVED_ENV_PREFIX}* variables are reserved"),
                ));
            }
        }
    }
    Ok(())
}

/// `[scan]`: exactly one of `env` with `values`, or `args`; at least two distinct names.
fn check_scan(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    let Some(scan) = &spec.scan else {
        return Ok(());
    };
    let fix = "write [scan] env = \"VAR\", values = [\"1\", \"3\"]; or [scan] parameter = \"NAME\", values = [\"1\", \"3\"] with {NAME} in the command; or [scan] args = [[\"-1\"], [\"-3\"]]";
    let count = match (&scan.env, &scan.parameter, &scan.values, &scan.args) {
        (Some(_), None, Some(values), None) | (None, Some(_), Some(values), None) => values.len(),
        (None, None, None, Some(args)) => args.len(),
        _ => {
            return Err(at
                .error(
                    "scan",
                    None,
                    "[scan] needs one of: env and values, parameter and values, or args",
                    fix,
                )
                .at_table(at, "scan"))
        }
    };
    if count < 2 {
        return Err(at
            .error("values", None, "[scan] needs at least two values", fix)
            .at_table(at, "scan"));
    }
    if let Some(var) = &scan.env {
        if spec.env.contains_key(var) {
            let message = format!("[scan] varies {var}, which the common [env] also sets");
            return Err(at.error(var, None, &message, &format!("remove {var} from [env]")));
        }
    }
    if let Some(base) = spec.arms.iter().find(|a| a.role == Role::Base) {
        let message = format!(
            "arm {:?} has role = \"base\", but with [scan] the first value is the base",
            base.name
        );
        return Err(at.error(
            "role",
            Some("base"),
            &message,
            "drop role = \"base\" from the declared arms",
        ));
    }
    let names: Vec<String> = scan
        .arms(&spec.command)
        .into_iter()
        .map(|a| a.name)
        .collect();
    if let Some((i, name)) = names
        .iter()
        .enumerate()
        .find(|(i, n)| names[..*i].contains(n))
    {
        let message = format!(
            "[scan] values {} and {} both make the arm name {name:?}",
            names.iter().position(|n| n == name).unwrap_or(0) + 1,
            i + 1
        );
        return Err(at
            .error(
                "scan",
                None,
                &message,
                "make the values differ in letters or digits",
            )
            .at_table(at, "scan"));
    }
    Ok(())
}

/// `[scan] parameter`: a plain name, written as `{NAME}` in the command; the declared arms,
/// `prepare`, `setup` and `cleanup` are taken as written, so none may hold it.
fn check_parameter(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    let Some(scan) = &spec.scan else {
        return Ok(());
    };
    let (Some(name), Some(mark)) = (&scan.parameter, scan.placeholder()) else {
        return Ok(());
    };
    let holds = |argv: &[String]| argv.iter().any(|w| w.contains(&mark));
    let error = |message: String, fix: String| {
        at.error("parameter", None, &message, &fix)
            .at_table(at, "scan")
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(error(
            format!("[scan] parameter = {name:?} is not a name of letters, digits and _"),
            "name it e.g. parameter = \"level\" and write {level} in the command".into(),
        ));
    }
    if !holds(&spec.command) {
        return Err(error(
            format!("[scan] parameter = {name:?}, but no word of command holds {mark}"),
            format!("write {mark} in command where each value goes, e.g. command = [\"zstd\", \"-{mark}\", \"data.bin\"]"),
        ));
    }
    let first = scan
        .values
        .as_ref()
        .and_then(|v| v.first())
        .cloned()
        .unwrap_or_default();
    let generated = scan.arms(&spec.command).len();
    for arm in spec.arms.iter().skip(generated) {
        let argv = spec.argv_of(arm);
        if holds(&argv) {
            let written = crate::scan::substitute(&argv, name, &first);
            let key = if arm.command.is_some() {
                "command"
            } else {
                "name"
            };
            return Err(SpecError {
                file: at.path.into(),
                line: at.line_in_arm(&arm.name, key),
                message: format!("arm {:?} runs {mark} unreplaced: only the arms [scan] generates take its values", arm.name),
                fix: format!("give the arm its own argv with the value written out, e.g. command = {}", toml_list(&written)),
            });
        }
    }
    for (key, argv) in [
        ("prepare", &spec.prepare),
        ("setup", &spec.setup),
        ("cleanup", &spec.cleanup),
    ] {
        if argv.as_deref().is_some_and(holds) {
            return Err(at.error(
                key,
                None,
                &format!("{key} holds {mark}, but only the command's words take the values of [scan]"),
                "write the value out; prepare runs with LADDER_ARM set to the cell's arm, which is named after its value",
            ));
        }
    }
    Ok(())
}

/// An argv as a TOML list, for a fix to copy.
fn toml_list(argv: &[String]) -> String {
    let words: Vec<String> = argv
        .iter()
        .map(|w| serde_json::to_string(w).expect("a string serializes"))
        .collect();
    format!("[{}]", words.join(", "))
}

/// `ladder/2` arms: `command` or `args`, never both, and neither empty.
fn check_arm_argv(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    for arm in &spec.arms {
        let line = |key: &str| at.line_in_arm(&arm.name, key);
        if arm.command.is_some() && arm.args.is_some() {
            let message = format!("arm {:?} has both `command` and `args`", arm.name);
            let fix = "keep `command` (this arm's whole argv) or `args` (appended to the spec's command), not both";
            return Err(SpecError {
                file: at.path.into(),
                line: line("args"),
                message,
                fix: fix.into(),
            });
        }
        if arm
            .command
            .as_ref()
            .is_some_and(|c| c.is_empty() || c[0].is_empty())
        {
            let message = format!("arm {:?} has an empty `command`", arm.name);
            let fix = "give the arm's argv, e.g. command = [\".bin/after/engine\", \"bench\"], or drop the key";
            return Err(SpecError {
                file: at.path.into(),
                line: line("command"),
                message,
                fix: fix.into(),
            });
        }
    }
    Ok(())
}

/// `[stop]`: a positive half-width and increasing looks, each leaving at least three
/// analysis passes, the last one equal to `passes` when that is given.
fn check_stop(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    let Some(stop) = &spec.stop else {
        return Ok(());
    };
    let error = |key: &str, message: String, fix: String| {
        at.error(key, None, &message, &fix).at_table(at, "stop")
    };
    if !(stop.halfwidth_pct.is_finite() && stop.halfwidth_pct > 0.0) {
        return Err(error(
            "halfwidth_pct",
            format!(
                "halfwidth_pct = {} is not a positive number",
                stop.halfwidth_pct
            ),
            "set the half-width you need, in percent, e.g. halfwidth_pct = 0.5".into(),
        ));
    }
    if stop.looks.is_empty() {
        return Err(error(
            "looks",
            "[stop] has no looks".into(),
            "list the passes at which the ladder may stop, e.g. looks = [8, 12, 16]".into(),
        ));
    }
    if let Some(w) = stop.looks.windows(2).find(|w| w[1] <= w[0]) {
        return Err(error(
            "looks",
            format!("looks are not increasing: {} then {}", w[0], w[1]),
            "list the looks in increasing order, e.g. looks = [8, 12, 16]".into(),
        ));
    }
    let floor = spec.warmup_passes + 2;
    if let Some(look) = stop.looks.iter().find(|&&l| l <= floor) {
        let message = format!("the look {look} is not above warmup_passes + 2 = {floor}: its first-look spread would rest on {} analysis passes", look.saturating_sub(spec.warmup_passes));
        return Err(error(
            "looks",
            message,
            format!("start the looks at {} or later", floor + 1),
        ));
    }
    let last = *stop.looks.last().expect("checked non-empty");
    if let Some(passes) = spec.declared_passes.filter(|&p| p != last) {
        let message = format!("passes = {passes}, but the last look is {last}");
        return Err(at.error(
            "passes",
            None,
            &message,
            &format!("set passes = {last} or omit it (under [stop] it is the last look)"),
        ));
    }
    Ok(())
}

/// Every `[[metric]]` names a column.
fn check_metric_columns(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    if spec.metrics.iter().any(|m| m.column.trim().is_empty()) {
        return Err(at.error(
            "column",
            Some(""),
            "a [[metric]] has an empty column",
            "name the column the program prints, e.g. column = \"decode_tok_s\", or ladder_wall_s for the wall time",
        ));
    }
    Ok(())
}

/// Known-effect arms carry their true effect, and only they carry one; the runner's pad is
/// for `time` output, where the runner measures the wall time itself.
fn check_known_effects(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    let metrics: Vec<String> = spec
        .effective_metrics()
        .into_iter()
        .map(|m| m.column)
        .collect();
    for arm in &spec.arms {
        let line = |key: &str| at.line_in_arm(&arm.name, key);
        let error = |key: &str, message: String, fix: &str| SpecError {
            file: at.path.into(),
            line: line(key),
            message,
            fix: fix.into(),
        };
        let known = arm.role == Role::KnownEffect;
        if known && arm.expected_pct.is_none() {
            return Err(error(
                "name",
                format!("arm {:?} has role = \"known-effect\" but no expected_pct", arm.name),
                "add the true effect in percent, better-is-positive, e.g. expected_pct = -4.762 for a 5 % decode pad",
            ));
        }
        for (key, present) in [
            ("expected_pct", arm.expected_pct.is_some()),
            ("pad_pct", arm.pad_pct.is_some()),
        ] {
            if present && !known {
                return Err(error(
                    key,
                    format!("arm {:?} has {key} but role = \"{}\"", arm.name, arm.role),
                    "only a known-effect arm has a known effect: set role = \"known-effect\" or drop the key",
                ));
            }
        }
        if let Some(pad) = arm.pad_pct {
            if spec.output != OutputMode::Time {
                return Err(error(
                    "pad_pct",
                    format!("arm {:?} has pad_pct, which needs output = \"time\"", arm.name),
                    "let the program make the effect itself (e.g. ENGINE_DECODE_PAD_PCT in the arm's env), or use output = \"time\"",
                ));
            }
            if !(pad.is_finite() && pad > 0.0 && pad <= 1000.0) {
                return Err(error(
                    "pad_pct",
                    format!("pad_pct = {pad} is not a percent between 0 and 1000"),
                    "set the pad in percent of the base's wall time, e.g. pad_pct = 10",
                ));
            }
        }
        check_expected(arm, &metrics)
            .map_err(|(message, fix)| error("expected_pct", message, &fix))?;
    }
    Ok(())
}

/// An `expected_pct` is a possible effect (above −100 %) on metrics the spec reads.
fn check_expected(arm: &ArmSpec, metrics: &[String]) -> Result<(), (String, String)> {
    let pairs: Vec<(Option<&String>, f64)> = match &arm.expected_pct {
        None => return Ok(()),
        Some(Expected::Every(pct)) => vec![(None, *pct)],
        Some(Expected::PerMetric(map)) if map.is_empty() => {
            return Err((
                format!("arm {:?} has an empty expected_pct table", arm.name),
                format!(
                    "name a metric and its effect, e.g. expected_pct = {{ {} = -4.762 }}",
                    metrics.first().map_or("decode_tok_s", String::as_str)
                ),
            ))
        }
        Some(Expected::PerMetric(map)) => map.iter().map(|(k, v)| (Some(k), *v)).collect(),
    };
    for (column, pct) in pairs {
        if let Some(column) = column.filter(|c| !metrics.contains(c)) {
            return Err((
                format!("expected_pct names {column:?}, which is not a metric of this spec"),
                format!("name one of the metrics: {}", metrics.join(", ")),
            ));
        }
        if !(pct.is_finite() && pct > -100.0) {
            return Err((
                format!("expected_pct = {pct} is not an effect a ratio can have (above -100 %)"),
                "give the true effect in percent, better-is-positive, e.g. -4.762".into(),
            ));
        }
    }
    Ok(())
}

/// The cell keys of version 2: argvs that are not empty, a positive output cap.
fn check_cell_keys(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    for (key, argv) in [
        ("prepare", &spec.prepare),
        ("setup", &spec.setup),
        ("cleanup", &spec.cleanup),
    ] {
        if argv
            .as_ref()
            .is_some_and(|a| a.is_empty() || a[0].is_empty())
        {
            let message = format!("{key} is an empty argv");
            return Err(at.error(
                key,
                None,
                &message,
                &format!(
                    "give the program and its arguments, e.g. {key} = [\"sync\"], or drop the key"
                ),
            ));
        }
    }
    if spec.ok_exit.as_ref().is_some_and(Vec::is_empty) {
        return Err(at.error(
            "ok_exit",
            None,
            "ok_exit is empty: no cell could succeed",
            "list the exit codes that count as success, e.g. ok_exit = [0, 1]",
        ));
    }
    if spec.shows_output() && spec.stdout == Some(StdoutMode::Discard) {
        return Err(at.error(
            "stdout",
            None,
            "stdout = \"discard\" with show_output = true: the output shown is kept in the side log as well",
            "drop stdout = \"discard\" (show_output keeps stdout), or drop show_output",
        ));
    }
    if spec.output_cap_mib == Some(0) {
        return Err(at.error(
            "output_cap_mib",
            None,
            "output_cap_mib = 0 keeps nothing of a cell's output",
            "set it to 1 or more, or omit it (default 1)",
        ));
    }
    Ok(())
}

/// Finds lines in the spec text, for errors that point at them.
struct Locator<'a> {
    path: &'a Path,
    source: &'a str,
}

impl Locator<'_> {
    /// The 1-based lines where `key = ...` is assigned, with `value` in it if given.
    fn lines_of(&self, key: &str, value: Option<&str>) -> Vec<usize> {
        self.source
            .lines()
            .enumerate()
            .filter(|(_, text)| {
                let text = text.split('#').next().unwrap_or_default();
                let assigns = text.match_indices(key).any(|(i, _)| {
                    let before = text[..i].chars().next_back();
                    let after = text[i + key.len()..].trim_start();
                    !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                        && (after.starts_with('=')
                            || after.starts_with("\" =")
                            || after.starts_with('.'))
                });
                let table = matches!(text.trim().trim_matches(['[', ']']), t if t == key);
                (assigns || table) && value.is_none_or(|v| text.contains(&format!("\"{v}\"")))
            })
            .map(|(i, _)| i + 1)
            .collect()
    }

    /// The line of `key` inside the `[[arm]]` named `arm` (the first after its name).
    fn line_in_arm(&self, arm: &str, key: &str) -> Option<usize> {
        let named = self.lines_of("name", Some(arm)).first().copied()?;
        let table_start = self
            .source
            .lines()
            .take(named)
            .enumerate()
            .filter(|(_, l)| l.trim_start().starts_with("[[arm]]"))
            .map(|(i, _)| i + 1)
            .last()
            .unwrap_or(named);
        let next_table = self
            .source
            .lines()
            .enumerate()
            .skip(named)
            .find(|(_, l)| l.trim_start().starts_with('['))
            .map_or(usize::MAX, |(i, _)| i + 1);
        self.lines_of(key, None)
            .into_iter()
            .find(|&l| l >= table_start && l < next_table)
            .or(Some(named))
    }

    /// The first line of `[table]`.
    fn table_line(&self, table: &str) -> Option<usize> {
        let header = format!("[{table}]");
        self.source
            .lines()
            .position(|l| l.trim_start().starts_with(&header))
            .map(|i| i + 1)
    }

    fn error(&self, key: &str, value: Option<&str>, message: &str, fix: &str) -> SpecError {
        SpecError {
            file: self.path.into(),
            line: self.lines_of(key, value).first().copied(),
            message: message.into(),
            fix: fix.into(),
        }
    }

    fn toml_error(&self, e: &toml::de::Error) -> SpecError {
        let line = e.span().map(|span| {
            self.source[..span.start.min(self.source.len())]
                .lines()
                .count()
                .max(1)
        });
        let message = e.message().trim().to_string();
        let fix = if message.contains("unknown variant") {
            "use one of the values the message lists".to_string()
        } else if message.contains("missing field") {
            "add the missing key (see the spec reference in the README)".to_string()
        } else {
            "correct the value to the type the key takes (see the spec reference in the README)"
                .to_string()
        };
        SpecError {
            file: self.path.into(),
            line,
            message,
            fix,
        }
    }

    fn unknown_keys(
        &self,
        table: &toml::Table,
        allowed: &[&str],
        within: &str,
    ) -> Result<(), SpecError> {
        if let Some(key) = table.keys().find(|k| !allowed.contains(&k.as_str())) {
            let closest = allowed
                .iter()
                .map(|a| (strsim::jaro_winkler(a, key), *a))
                .max_by(|x, y| x.0.total_cmp(&y.0))
                .filter(|(score, _)| *score > 0.7);
            let fix = match closest {
                Some((_, name)) => format!("did you mean `{name}`?"),
                None => format!("the keys here are: {}", allowed.join(", ")),
            };
            return Err(self.error(key, None, &format!("unknown key {within}`{key}`"), &fix));
        }
        Ok(())
    }
}

impl SpecError {
    /// Points an error whose key has no line of its own at the `[table]` header; a key
    /// written inline (`[scan] env = ...` or `stop = { ... }`) keeps the line found.
    fn at_table(mut self, at: &Locator, table: &str) -> SpecError {
        if self.line.is_none() {
            self.line = at
                .table_line(table)
                .or_else(|| at.lines_of(table, None).first().copied());
        }
        self
    }

    /// Points the error at the `nth` (0-based) matching line instead of the first.
    fn nth_line(mut self, at: &Locator, key: &str, value: Option<&str>, nth: usize) -> SpecError {
        if let Some(line) = at.lines_of(key, value).get(nth) {
            self.line = Some(*line);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "demo"
command = ["engine", "bench"]
passes = 4
noise_limit_pct = 0.5

[env]
COMMON = "1"

[[arm]]
name = "off"
role = "base"
env = { MODE = "off" }

[[arm]]
name = "on"
env = { MODE = "on" }

[[metric]]
column = "tok_s"
better = "higher"
"#;

    fn parse(text: &str) -> Result<Spec, SpecError> {
        Spec::parse(Path::new("ladders/demo.toml"), text)
    }

    #[test]
    fn a_good_spec_parses_with_defaults() {
        let spec = parse(GOOD).unwrap();
        assert_eq!(spec.warmup_passes, 1);
        assert_eq!(spec.order, Scheme::Rotate);
        assert_eq!(spec.replication_limit_pp, 0.15);
        assert_eq!(spec.arms[1].role, Role::Arm);
        assert_eq!(spec.base().unwrap().name, "off");
    }

    fn error_of(text: &str) -> SpecError {
        parse(text).expect_err("the spec should be refused")
    }

    #[test]
    fn an_unknown_key_names_its_line_and_a_suggestion() {
        let e = error_of(&GOOD.replace("passes = 4", "pases = 4"));
        assert_eq!(e.line, Some(4));
        assert!(e.message.contains("pases"), "{e}");
        assert!(e.fix.contains("`passes`"), "{e}");
        let e = error_of(&GOOD.replace("better = \"higher\"", "beter = \"higher\""));
        assert!(
            e.message.contains("[[metric]]") && e.fix.contains("`better`"),
            "{e}"
        );
    }

    #[test]
    fn base_arms_must_be_exactly_one() {
        let e = error_of(&GOOD.replace("role = \"base\"\n", ""));
        assert!(e.message.contains("no arm has role"), "{e}");
        let e = error_of(&GOOD.replace("name = \"on\"", "name = \"on\"\nrole = \"base\""));
        assert!(e.message.contains("two base arms"), "{e}");
        assert_eq!(e.line, Some(17));
    }

    #[test]
    fn duplicate_arm_names_point_at_the_second() {
        let e = error_of(&GOOD.replace("name = \"on\"", "name = \"off\""));
        assert!(e.message.contains("two arms are named \"off\""), "{e}");
        assert_eq!(e.line, Some(16));
    }

    #[test]
    fn an_arm_may_not_shadow_the_common_env() {
        let e = error_of(&GOOD.replace("MODE = \"on\"", "COMMON = \"2\""));
        assert!(e.message.contains("COMMON"), "{e}");
        assert_eq!(e.line, Some(17));
    }

    #[test]
    fn two_analysis_passes_are_needed() {
        let e = error_of(&GOOD.replace("passes = 4", "passes = 2"));
        assert!(e.message.contains("leaves 1 analysis passes"), "{e}");
        assert!(e.fix.contains("at least 3"), "{e}");
    }

    #[test]
    fn an_unknown_order_is_refused_with_its_line() {
        let e = error_of(&GOOD.replace("passes = 4", "passes = 4\norder = \"random\""));
        assert_eq!(e.line, Some(5));
        assert!(e.message.contains("random"), "{e}");
    }

    #[test]
    fn reserved_variables_are_refused() {
        let e = error_of(&GOOD.replace("MODE = \"on\"", "LADDER_ARM = \"x\""));
        assert!(e.message.contains("LADDER_ARM"), "{e}");
    }

    #[test]
    fn time_output_reads_the_wall_time_by_default() {
        let text = GOOD
            .replace("[[metric]]\ncolumn = \"tok_s\"\nbetter = \"higher\"\n", "")
            .replace("passes = 4", "passes = 4\noutput = \"time\"");
        let spec = parse(&text).unwrap();
        assert_eq!(spec.effective_metrics()[0].column, WALL_COLUMN);
        assert_eq!(spec.effective_metrics()[0].better, Better::Lower);
    }

    #[test]
    fn the_spec_round_trips_through_json() {
        let spec = parse(GOOD).unwrap();
        let table: toml::Table = toml::from_str(GOOD).unwrap();
        let json = serde_json::to_value(&table).unwrap();
        assert_eq!(Spec::from_json(&json).unwrap(), spec);
    }

    #[test]
    fn an_arm_with_command_and_args_is_refused_at_its_args_line() {
        let e = error_of(&GOOD.replace(
            "env = { MODE = \"on\" }",
            "env = { MODE = \"on\" }\ncommand = [\"b\"]\nargs = [\"-x\"]",
        ));
        assert!(e.message.contains("both `command` and `args`"), "{e}");
        assert_eq!(e.line, Some(19));
    }

    #[test]
    fn an_empty_arm_command_is_refused() {
        let e = error_of(&GOOD.replace(
            "env = { MODE = \"on\" }",
            "env = { MODE = \"on\" }\ncommand = []",
        ));
        assert!(e.message.contains("empty `command`"), "{e}");
        assert_eq!(e.line, Some(18));
    }

    #[test]
    fn arms_have_their_own_argv() {
        let spec = parse(
            &GOOD
                .replace("env = { MODE = \"on\" }", "args = [\"--fast\"]")
                .replace("env = { MODE = \"off\" }", "command = [\"other\", \"x\"]"),
        )
        .unwrap();
        assert_eq!(spec.argv_of(&spec.arms[0]), ["other", "x"]);
        assert_eq!(spec.argv_of(&spec.arms[1]), ["engine", "bench", "--fast"]);
    }

    const STOP: &str = "\n[stop]\nhalfwidth_pct = 0.5\nlooks = [4, 6]\n";

    #[test]
    fn stop_looks_must_increase() {
        let e = error_of(&format!(
            "{}{}",
            GOOD.replace("passes = 4\n", ""),
            STOP.replace("[4, 6]", "[6, 4]")
        ));
        assert!(e.message.contains("not increasing: 6 then 4"), "{e}");
        assert_eq!(e.line, Some(24));
    }

    #[test]
    fn stop_looks_must_leave_three_analysis_passes() {
        let e = error_of(&format!(
            "{}{}",
            GOOD.replace("passes = 4\n", ""),
            STOP.replace("[4, 6]", "[3, 6]")
        ));
        assert!(
            e.message
                .contains("look 3 is not above warmup_passes + 2 = 3"),
            "{e}"
        );
        assert!(e.fix.contains("at 4"), "{e}");
        assert_eq!(e.line, Some(24));
    }

    #[test]
    fn stop_passes_if_given_is_the_last_look() {
        let e = error_of(&format!("{GOOD}{STOP}"));
        assert!(
            e.message.contains("passes = 4, but the last look is 6"),
            "{e}"
        );
        assert_eq!(e.line, Some(4));
        let spec = parse(&format!("{}{}", GOOD.replace("passes = 4\n", ""), STOP)).unwrap();
        assert_eq!(spec.passes(), 6);
    }

    #[test]
    fn stop_needs_a_positive_halfwidth() {
        let e = error_of(&format!(
            "{}{}",
            GOOD.replace("passes = 4\n", ""),
            STOP.replace("0.5", "0")
        ));
        assert!(e.message.contains("halfwidth_pct = 0"), "{e}");
        assert_eq!(e.line, Some(23));
        let e = error_of(&format!(
            "{}{}",
            GOOD.replace("passes = 4\n", ""),
            STOP.replace("looks", "loks")
        ));
        assert!(e.fix.contains("`looks`"), "{e}");
    }

    #[test]
    fn noise_limit_is_optional() {
        let spec = parse(&GOOD.replace("noise_limit_pct = 0.5\n", "")).unwrap();
        assert_eq!(spec.noise_limit_pct, None);
    }

    #[test]
    fn cell_keys_refuse_empty_values_with_their_line() {
        for (line, key) in [
            ("prepare = []", "prepare"),
            ("setup = [\"\"]", "setup"),
            ("cleanup = []", "cleanup"),
            ("ok_exit = []", "ok_exit"),
            ("output_cap_mib = 0", "output_cap_mib"),
        ] {
            let e = error_of(&GOOD.replace("passes = 4", &format!("passes = 4\n{line}")));
            assert!(e.message.contains(key), "{e}");
            assert_eq!(e.line, Some(5), "{key}: {e}");
        }
        let spec = parse(&GOOD.replace("passes = 4", "passes = 4\nok_exit = [0, 1]")).unwrap();
        assert_eq!(spec.ok_exit_codes(), [0, 1]);
        assert_eq!(parse(GOOD).unwrap().ok_exit_codes(), [0]);
    }

    const SCAN: &str = r#"
name = "sweep"
command = ["zstd", "-c", "data"]
passes = 4

[scan]
env = "ZSTD_CLEVEL"
values = ["1", "3", "5"]

[[arm]]
name = "again"
role = "reflexive"
env = { ZSTD_CLEVEL = "1" }
"#;

    #[test]
    fn a_scan_makes_one_arm_per_value_the_first_the_base() {
        let text = SCAN.replace("passes = 4", "passes = 4\noutput = \"time\"");
        let spec = parse(&text).unwrap();
        let names: Vec<&str> = spec.arms.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["1", "3", "5", "again"]);
        assert_eq!(spec.base().unwrap().name, "1");
        assert_eq!(spec.arms[2].env["ZSTD_CLEVEL"], "5");
        // The analysis reads the same arms from the recorded spec.
        let json = serde_json::to_value(toml::from_str::<toml::Table>(&text).unwrap()).unwrap();
        assert_eq!(Spec::from_json(&json).unwrap().arms, spec.arms);
    }

    #[test]
    fn scan_refusals_name_their_line() {
        let time = |t: &str| t.replace("passes = 4", "passes = 4\noutput = \"time\"");
        let e = error_of(&time(
            &SCAN.replace("values = [\"1\", \"3\", \"5\"]", "args = [[\"-1\"]]"),
        ));
        assert!(
            e.message
                .contains("one of: env and values, parameter and values, or args"),
            "{e}"
        );
        assert_eq!(e.line, Some(7));
        let e = error_of(&time(&SCAN.replace("[\"1\", \"3\", \"5\"]", "[\"1\"]")));
        assert!(e.message.contains("at least two values"), "{e}");
        assert_eq!(e.line, Some(9));
        let e = error_of(&time(
            &SCAN.replace("[\"1\", \"3\", \"5\"]", "[\"a b\", \"a/b\"]"),
        ));
        assert!(
            e.message
                .contains("values 1 and 2 both make the arm name \"a_b\""),
            "{e}"
        );
        assert_eq!(e.line, Some(7));
        let e = error_of(&time(&SCAN.replace("reflexive", "base")));
        assert!(e.message.contains("the first value is the base"), "{e}");
        assert_eq!(e.line, Some(13));
    }
}
