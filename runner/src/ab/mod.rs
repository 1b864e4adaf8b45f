//! `runner ab`: the one-line A/B. Each command string becomes an arm with its own argv (or,
//! with a parameter scan, one command makes an arm per value), a reflexive control repeats
//! the first, and the generated spec is written beside the ladder (hashed like any spec)
//! before the ladder runs from it. Every flag is a key of that spec, so that the spec alone
//! repeats the run.

use crate::binary::Binary;
use crate::ladder_run::{self, ExitFix, Outcome, RunOptions};
use crate::words;
use ladder::limits::MAX_ARMS;
use ladder::order::Scheme;
use ladder::scan::{arm_name, placeholder, substitute};
use ladder::spec::{OutputMode, Spec};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Passes when neither `--passes` nor `--stop` is given.
pub const DEFAULT_PASSES: usize = 10;
/// The looks of `--stop`: the first leaves 5 analysis passes for the spread.
pub const STOP_LOOKS: [usize; 5] = [6, 10, 16, 24, 32];
/// The shell `--shell` runs when it names none.
pub const DEFAULT_SHELL: &str = "sh";

/// What `runner ab` was asked to do.
pub struct AbRequest {
    pub commands: Vec<String>,
    /// `--name`: comma-separated arm names, one per command.
    pub names: Option<String>,
    /// `--env-a`, `--env-b`: `KEY=VALUE` for the first and second command.
    pub env_a: Vec<String>,
    pub env_b: Vec<String>,
    pub passes: Option<usize>,
    pub stop_halfwidth_pct: Option<f64>,
    /// `--warmup`: passes the analysis drops.
    pub warmup: Option<usize>,
    pub order: Option<Scheme>,
    pub noise_limit_pct: Option<f64>,
    pub output: OutputMode,
    /// `--known-effect-pct`: a known-effect control padding the base's command.
    pub known_effect_pct: Option<f64>,
    /// `--metric`: columns the command prints (csv/json output).
    pub metrics: Vec<String>,
    pub higher_is_better: bool,
    /// `--ok-exit`: exit codes that count as success (empty: only 0).
    pub ok_exit: Vec<i32>,
    pub prepare: Option<String>,
    pub setup: Option<String>,
    pub cleanup: Option<String>,
    /// `--shell`: run every command string as `SHELL -c STRING` instead of splitting it.
    pub shell: Option<String>,
    pub scan: Option<ScanRequest>,
    pub show_output: bool,
    pub exports: Exports,
    pub out: PathBuf,
    pub tag: String,
}

/// `-P NAME LO HI [--parameter-step D]` or `-L NAME V1,V2,...`, as given.
pub enum ScanRequest {
    Range {
        name: String,
        low: String,
        high: String,
        step: Option<String>,
    },
    List {
        name: String,
        values: String,
    },
}

/// `--export-json`, `--export-markdown`, `--export-csv`: what `analyze report` writes.
#[derive(Default, Clone)]
pub struct Exports {
    pub json: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub csv: Option<PathBuf>,
}

impl Exports {
    /// Whether any export was asked for.
    pub fn is_empty(&self) -> bool {
        self.each().is_empty()
    }

    /// `(flag, analyze report's option, path)` of each export asked for.
    fn each(&self) -> Vec<(&'static str, &'static str, &Path)> {
        [
            ("--export-json", "--json", &self.json),
            ("--export-markdown", "-o", &self.markdown),
            ("--export-csv", "--csv", &self.csv),
        ]
        .into_iter()
        .filter_map(|(flag, option, path)| Some((flag, option, path.as_deref()?)))
        .collect()
    }
}

/// One command as an arm.
#[derive(Clone)]
struct AbArm {
    name: String,
    argv: Vec<String>,
    env: BTreeMap<String, String>,
}

/// A parameter scan with its values worked out.
struct Scan {
    name: String,
    values: Vec<String>,
}

/// What the spec is written from.
struct Layout {
    /// The spec's `command`: the first command's argv, or the scan's template.
    command: Vec<String>,
    /// `[env]`: with a scan, `--env-a` (its one command is every arm's).
    common_env: BTreeMap<String, String>,
    /// One `[[arm]]` per command; none with a scan, which generates its arms.
    arms: Vec<AbArm>,
    /// What the reflexive and known-effect controls run: the first command, or the scan's
    /// first value.
    first: AbArm,
    scan: Option<Scan>,
}

/// The spec `runner ab` writes: where, and its text. Nothing is written yet.
pub struct GeneratedSpec {
    pub path: PathBuf,
    pub ladder_file: PathBuf,
    pub text: String,
}

/// Checks the request and builds the spec; every error comes before any file exists.
pub fn generate(request: &AbRequest) -> Result<GeneratedSpec, String> {
    check_flags(request)?;
    let layout = match &request.scan {
        Some(scan) => scan_layout(request, scan_of(scan)?)?,
        None => commands_layout(request)?,
    };
    let name = match &layout.scan {
        Some(scan) => format!("ab-{}", arm_name(&scan.name)),
        None => format!(
            "ab-{}",
            layout
                .arms
                .iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join("-")
        ),
    };
    let path = request.out.join(format!("{name}_{}.toml", request.tag));
    let ladder_file = request.out.join(format!("{name}_{}.csv", request.tag));
    crate::preflight::file_names(&request.tag, &ladder_file).map_err(|e| format!("{e:#}"))?;
    for existing in [&path, &ladder_file] {
        if existing.exists() {
            return Err(format!(
                "{} already exists; pick another --tag or --out",
                existing.display()
            ));
        }
    }
    let text = spec_text::spec_text(request, &name, &layout)?;
    Spec::parse(&path, &text).map_err(|e| format!("the generated spec is refused: {e}"))?;
    Ok(GeneratedSpec {
        path,
        ladder_file,
        text,
    })
}

/// The flags that stand alone: numbers in range, and what the exports need.
fn check_flags(request: &AbRequest) -> Result<(), String> {
    if request.output != OutputMode::Time && request.metrics.is_empty() {
        return Err("--output csv or json reads the columns the commands print: name at least one with --metric COLUMN".into());
    }
    if let Some(pad) = request.known_effect_pct {
        if request.output != OutputMode::Time {
            return Err("--known-effect-pct pads the wall time, which only --output time measures; for a metric the program prints, make the effect in the program (e.g. ENGINE_DECODE_PAD_PCT)".into());
        }
        if !(pad.is_finite() && pad > 0.0 && pad <= 1000.0) {
            return Err(format!("--known-effect-pct {pad} is not a percent between 0 and 1000; give e.g. --known-effect-pct 10"));
        }
    }
    if let Some(limit) = request.noise_limit_pct {
        if !(limit.is_finite() && limit > 0.0) {
            return Err(format!(
                "--noise-limit {limit} is not a positive percent; give e.g. --noise-limit 2"
            ));
        }
    }
    check_warmup(request)?;
    check_exports(&request.exports)
}

/// `--warmup` leaves at least two analysis passes, and under `--stop` three at the first
/// look.
fn check_warmup(request: &AbRequest) -> Result<(), String> {
    let Some(warmup) = request.warmup else {
        return Ok(());
    };
    match request.stop_halfwidth_pct {
        Some(_) if STOP_LOOKS[0] <= warmup + 2 => Err(format!(
            "--warmup {warmup} with --stop: the first look, at {} passes, would leave {} analysis passes; give --warmup {} or less",
            STOP_LOOKS[0],
            STOP_LOOKS[0].saturating_sub(warmup),
            STOP_LOOKS[0] - 3
        )),
        Some(_) => Ok(()),
        None => {
            let passes = request.passes.unwrap_or(DEFAULT_PASSES);
            if passes < warmup + 2 {
                return Err(format!(
                    "--warmup {warmup} leaves {} analysis passes of {passes}; give --passes {} or more, or fewer warm-up passes",
                    passes.saturating_sub(warmup),
                    warmup + 2
                ));
            }
            Ok(())
        }
    }
}

/// Exports are written by `analyze`, into folders that exist.
fn check_exports(exports: &Exports) -> Result<(), String> {
    let wanted = exports.each();
    if let Some((flag, _, _)) = wanted.first() {
        if analyze_beside_runner().is_none() {
            return Err(format!("{flag} is written by analyze, which was not found beside the runner; build it (cargo build --release -p analyze) or drop {flag}"));
        }
    }
    for (flag, _, path) in wanted {
        let folder = path.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(missing) = folder.filter(|f| !f.is_dir()) {
            return Err(format!(
                "{flag} {}: the folder {} does not exist; create it or pick another path",
                path.display(),
                missing.display()
            ));
        }
    }
    Ok(())
}

/// A command string as an argv: through the shell with `--shell`, else split into words.
fn argv_of(request: &AbRequest, line: &str) -> Result<Vec<String>, String> {
    if let Some(shell) = &request.shell {
        return Ok(vec![shell.clone(), "-c".into(), line.into()]);
    }
    let argv = words::split(line)?;
    if argv.is_empty() {
        return Err("is empty; give the program and its arguments".into());
    }
    Ok(argv)
}

/// The argv of command `i` (0-based), its program found and executable.
fn command_argv(request: &AbRequest, i: usize) -> Result<Vec<String>, String> {
    let command = &request.commands[i];
    let at = format!("command {} ({command:?})", i + 1);
    let argv = argv_of(request, command).map_err(|e| match e.starts_with("is empty") {
        true => format!("{at} {e}"),
        false => format!("{at}: {e}"),
    })?;
    Binary::resolve(&argv[0]).map_err(|e| format!("{at}: {e:#}"))?;
    Ok(argv)
}

fn commands_layout(request: &AbRequest) -> Result<Layout, String> {
    if request.commands.len() < 2 {
        return Err("runner ab needs at least two commands, e.g. runner ab 'gzip -1 -c FILE' 'gzip -9 -c FILE', or one with a parameter scan (-P or -L)".into());
    }
    let names = names_of(request)?;
    let mut arms = Vec::new();
    for (i, name) in names.into_iter().enumerate() {
        let argv = command_argv(request, i)?;
        let env_args = match i {
            0 => &request.env_a,
            1 => &request.env_b,
            _ => &Vec::new(),
        };
        let env = env_args
            .iter()
            .map(|kv| key_value(kv, i))
            .collect::<Result<_, _>>()?;
        arms.push(AbArm { name, argv, env });
    }
    Ok(Layout {
        command: arms[0].argv.clone(),
        common_env: BTreeMap::new(),
        first: arms[0].clone(),
        arms,
        scan: None,
    })
}

/// With a scan, the one command is the spec's command, with `{NAME}` where the values go.
fn scan_layout(request: &AbRequest, scan: Scan) -> Result<Layout, String> {
    if request.commands.len() != 1 {
        return Err(format!(
            "a parameter scan (-P or -L) takes one command, with {{{}}} where each value goes; {} were given",
            scan.name,
            request.commands.len()
        ));
    }
    for (flag, given) in [
        ("--name", request.names.is_some()),
        ("--env-b", !request.env_b.is_empty()),
    ] {
        if given {
            return Err(format!("{flag} names a second command, and a parameter scan has one; its arms are named after the values"));
        }
    }
    let template = argv_of(request, &request.commands[0])
        .map_err(|e| format!("command 1 ({:?}): {e}", request.commands[0]))?;
    let mark = placeholder(&scan.name);
    if !template.iter().any(|w| w.contains(&mark)) {
        return Err(format!(
            "command 1 ({:?}) does not hold {mark}; write {mark} where each value of the scan goes, e.g. 'sleep 0.{mark}'",
            request.commands[0]
        ));
    }
    // The program may itself be the parameter: each value's is found before anything runs.
    let mut programs: Vec<String> = scan
        .values
        .iter()
        .map(|v| substitute(&template[..1], &scan.name, v).remove(0))
        .collect();
    programs.dedup();
    for program in &programs {
        Binary::resolve(program).map_err(|e| format!("command 1: {e:#}"))?;
    }
    let first = substitute(&template, &scan.name, &scan.values[0]);
    let common_env = request
        .env_a
        .iter()
        .map(|kv| key_value(kv, 0))
        .collect::<Result<_, _>>()?;
    Ok(Layout {
        command: template,
        common_env,
        arms: Vec::new(),
        first: AbArm {
            name: arm_name(&scan.values[0]),
            argv: first,
            env: BTreeMap::new(),
        },
        scan: Some(scan),
    })
}

fn scan_of(request: &ScanRequest) -> Result<Scan, String> {
    let (flag, name, values) = match request {
        ScanRequest::Range {
            name,
            low,
            high,
            step,
        } => ("-P", name, range_values(low, high, step.as_deref())?),
        ScanRequest::List { name, values } => ("-L", name, list_values(values)?),
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "{flag} {name:?}: a parameter's name is letters, digits and _, e.g. {flag} level ..."
        ));
    }
    if values.len() < 2 {
        return Err(format!(
            "{flag} {name} gives {} value; a scan needs at least two",
            values.len()
        ));
    }
    // One arm per value, the reflexive control and a known-effect control.
    if values.len() > MAX_ARMS - 2 {
        return Err(format!(
            "{flag} {name} gives {} values; a ladder holds at most {MAX_ARMS} arms with its controls: scan fewer values or a coarser --parameter-step",
            values.len()
        ));
    }
    Ok(Scan {
        name: name.clone(),
        values,
    })
}

/// `-P NAME LO HI [--parameter-step D]`: LO, LO+D, ... up to HI, written with as many
/// decimals as the three numbers have; integers without a step.
fn range_values(low: &str, high: &str, step: Option<&str>) -> Result<Vec<String>, String> {
    let number = |text: &str, what: &str| {
        text.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("-P: the {what} {text:?} is not a number"))
    };
    let (lo, hi) = (number(low, "low end")?, number(high, "high end")?);
    let d = match step {
        Some(text) => number(text, "--parameter-step")?,
        None if lo.fract() != 0.0 || hi.fract() != 0.0 => {
            return Err(format!("-P {low} {high}: without --parameter-step the ends are integers; give e.g. --parameter-step 0.1 for decimals"));
        }
        None => 1.0,
    };
    if d <= 0.0 {
        return Err(format!(
            "--parameter-step {d} is not positive; give e.g. --parameter-step 1"
        ));
    }
    if hi < lo {
        return Err(format!(
            "-P {low} {high}: the high end is below the low end; swap them"
        ));
    }
    let count = ((hi - lo) / d + 1e-9).floor() + 1.0;
    if count > MAX_ARMS as f64 {
        return Err(format!("-P {low} {high} makes {count} values; a ladder holds at most {MAX_ARMS} arms: scan a shorter range or a coarser --parameter-step"));
    }
    let decimals = [low, high, step.unwrap_or("1")]
        .iter()
        .map(|t| t.split_once('.').map_or(0, |(_, f)| f.len()))
        .max()
        .unwrap_or(0);
    // Each value from its index, so that no rounding error adds up along the range.
    Ok((0..count as usize)
        .map(|i| format!("{:.decimals$}", lo + i as f64 * d))
        .collect())
}

/// `-L NAME V1,V2,...`: the values as given, none empty.
fn list_values(values: &str) -> Result<Vec<String>, String> {
    let list: Vec<String> = values.split(',').map(str::to_string).collect();
    if let Some(i) = list.iter().position(String::is_empty) {
        return Err(format!(
            "-L {values:?}: value {} is empty; list the values comma-separated, e.g. -L level 1,3,5",
            i + 1
        ));
    }
    Ok(list)
}

fn names_of(request: &AbRequest) -> Result<Vec<String>, String> {
    let n = request.commands.len();
    let names: Vec<String> = match &request.names {
        Some(list) => list.split(',').map(arm_name).collect(),
        None => (0..n)
            .map(|i| char::from(b'a' + (i % 26) as u8).to_string())
            .collect(),
    };
    if names.len() != n {
        return Err(format!(
            "--name gives {} names for {n} commands; give one per command, comma-separated",
            names.len()
        ));
    }
    if let Some((i, dup)) = names
        .iter()
        .enumerate()
        .find(|(i, name)| names[..*i].contains(name))
    {
        return Err(format!(
            "--name: the name {dup:?} is given twice (position {}); names must differ",
            i + 1
        ));
    }
    Ok(names)
}

fn key_value(text: &str, arm: usize) -> Result<(String, String), String> {
    let flag = if arm == 0 { "--env-a" } else { "--env-b" };
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("{flag} {text:?} is not KEY=VALUE")),
    }
}

mod run;
mod spec_text;
#[cfg(test)]
mod tests;

pub use run::{analyze_beside_runner, analyze_report, run, AbRun};
