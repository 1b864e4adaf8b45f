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

/// `[scan]`: one generated arm per value of one variable, or per argv tail.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScanSpec {
    pub env: Option<String>,
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
];
const ARM_KEYS: &[&str] = &["name", "role", "env", "command", "args"];
const METRIC_KEYS: &[&str] = &["column", "better", "row"];
const SPLIT_KEYS: &[&str] = &["rounds", "time"];
const IDENTITY_KEYS: &[&str] = &["column"];

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
        self.source.lines().position(|l| l.contains(&quoted)).map(|i| i + 1)
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
            return vec![MetricSpec { column: WALL_COLUMN.into(), better: Better::Lower, row: 0 }];
        }
        self.metrics.clone()
    }

    pub fn base(&self) -> Option<&ArmSpec> {
        self.arms.iter().find(|a| a.role == Role::Base)
    }

    /// Reads the spec from a start record's `spec` field.
    pub fn from_json(json: &serde_json::Value) -> Result<Spec, String> {
        Spec::deserialize(json).map_err(|e| format!("the recorded spec is unusable: {e}"))
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
        Ok(LoadedSpec { spec, path: path.into(), json, blake3, source })
    }

    /// Parses and checks spec text; `path` only names the file in errors.
    pub fn parse(path: &Path, source: &str) -> Result<Spec, SpecError> {
        let at = Locator { path, source };
        let table: toml::Table = toml::from_str(source).map_err(|e| at.toml_error(&e))?;
        check_keys(&at, &table)?;
        let spec: Spec = toml::from_str(source).map_err(|e| at.toml_error(&e))?;
        check(&at, &spec)?;
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
    for (key, allowed) in [("split", SPLIT_KEYS), ("identity", IDENTITY_KEYS)] {
        if let Some(toml::Value::Table(item)) = table.get(key) {
            at.unknown_keys(item, allowed, &format!("[{key}] "))?;
        }
    }
    Ok(())
}

fn check(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    if spec.command.is_empty() {
        return Err(at.error("command", None, "command is empty", "give the argv, e.g. command = [\"target/release/engine\", \"bench\"]"));
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
        return Err(at.error("order", None, "order = \"shuffle\" needs a seed", "add seed = 1 (any unsigned integer)"));
    }
    for (key, value) in [
        ("noise_limit_pct", spec.noise_limit_pct.unwrap_or(1.0)),
        ("equivalence_margin_pct", spec.equivalence_margin_pct.unwrap_or(1.0)),
        ("replication_limit_pp", spec.replication_limit_pp),
        ("timeout_s", spec.timeout_s),
    ] {
        if !(value.is_finite() && value > 0.0) {
            return Err(at.error(key, None, &format!("{key} = {value} is not a positive number"), &format!("set {key} to a positive number")));
        }
    }
    if let Some(Cards::Named(name)) = &spec.cards {
        if name != "all" {
            return Err(at.error("cards", None, &format!("cards = {name:?} is neither \"all\" nor a list"), "write cards = \"all\" or cards = [0, 1]"));
        }
    }
    if spec.effective_metrics().is_empty() {
        return Err(at.error("name", None, "no [[metric]] is declared", "add [[metric]] column = \"...\" better = \"higher\" (or \"lower\")"));
    }
    Ok(())
}

fn check_arms(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    if spec.arms.len() < 2 {
        return Err(at.error("name", None, "a ladder needs at least two [[arm]] entries", "add a base arm and at least one more"));
    }
    let bases: Vec<&ArmSpec> = spec.arms.iter().filter(|a| a.role == Role::Base).collect();
    match bases.as_slice() {
        [] => {
            return Err(at.error("role", None, "no arm has role = \"base\"", "mark the arm the others are read against with role = \"base\""));
        }
        [_] => {}
        [_, second, ..] => {
            let message = format!("two base arms: {:?} and {:?}", bases[0].name, second.name);
            return Err(at.error("role", Some("base"), &message, "keep role = \"base\" on exactly one arm").nth_line(at, "role", Some("base"), 1));
        }
    }
    for (i, arm) in spec.arms.iter().enumerate() {
        if arm.name.trim().is_empty() {
            return Err(at.error("name", Some(""), "an arm has an empty name", "give every [[arm]] a name"));
        }
        if let Some(first) = spec.arms[..i].iter().find(|a| a.name == arm.name) {
            let message = format!("two arms are named {:?}", first.name);
            return Err(at.error("name", Some(&arm.name), &message, "give every [[arm]] a distinct name").nth_line(at, "name", Some(&arm.name), 1));
        }
        for var in arm.env.keys() {
            if spec.env.contains_key(var) {
                let message = format!("arm {:?} sets {var}, which the common [env] also sets", arm.name);
                return Err(at.error(var, None, &message, &format!("set {var} in the arms only, or only in [env]")).nth_line(at, var, None, 1));
            }
        }
        for var in arm.env.keys().chain(spec.env.keys()) {
            if var.starts_with(RESERVED_ENV_PREFIX) {
                let message = format!("{var} is set by the runner in every cell");
                return Err(at.error(var, None, &message, &format!("rename it; {RESERVED_ENV_PREFIX}* variables are reserved")));
            }
        }
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
                        && (after.starts_with('=') || after.starts_with("\" =") || after.starts_with('.'))
                });
                assigns && value.is_none_or(|v| text.contains(&format!("\"{v}\"")))
            })
            .map(|(i, _)| i + 1)
            .collect()
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
        let line = e.span().map(|span| self.source[..span.start.min(self.source.len())].lines().count().max(1));
        let message = e.message().trim().to_string();
        let fix = if message.contains("unknown variant") {
            "use one of the values the message lists".to_string()
        } else if message.contains("missing field") {
            "add the missing key (see the spec reference in the README)".to_string()
        } else {
            "correct the value to the type the key takes (see the spec reference in the README)".to_string()
        };
        SpecError { file: self.path.into(), line, message, fix }
    }

    fn unknown_keys(&self, table: &toml::Table, allowed: &[&str], within: &str) -> Result<(), SpecError> {
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
        assert!(e.message.contains("[[metric]]") && e.fix.contains("`better`"), "{e}");
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
        let text = GOOD.replace("[[metric]]\ncolumn = \"tok_s\"\nbetter = \"higher\"\n", "")
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
}
