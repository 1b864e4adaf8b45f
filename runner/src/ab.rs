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
    let text = spec_text(request, &name, &layout)?;
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

fn spec_text(request: &AbRequest, name: &str, layout: &Layout) -> Result<String, String> {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# Generated by runner ab; run it again with runner run on this file."
    );
    for (i, command) in request.commands.iter().enumerate() {
        let _ = writeln!(text, "#   command {}: {}", i + 1, toml_string(command));
    }
    let _ = writeln!(text, "name = {}", toml_string(name));
    let _ = writeln!(text, "command = {}", toml_list(&layout.command));
    top_keys(&mut text, request)?;
    if !layout.common_env.is_empty() {
        let _ = writeln!(text, "\n[env]\n{}", env_lines(&layout.common_env));
    }
    if let Some(scan) = &layout.scan {
        let _ = writeln!(
            text,
            "\n[scan]\nparameter = {}\nvalues = {}",
            toml_string(&scan.name),
            toml_list(&scan.values)
        );
    }
    if let Some(halfwidth) = request.stop_halfwidth_pct {
        let looks: Vec<String> = STOP_LOOKS.iter().map(usize::to_string).collect();
        let _ = writeln!(
            text,
            "\n[stop]\nhalfwidth_pct = {halfwidth:?}\nlooks = [{}]",
            looks.join(", ")
        );
    }
    arm_tables(&mut text, request, layout);
    let better = if request.higher_is_better {
        "higher"
    } else {
        "lower"
    };
    for metric in &request.metrics {
        let _ = writeln!(
            text,
            "\n[[metric]]\ncolumn = {}\nbetter = \"{better}\"",
            toml_string(metric)
        );
    }
    Ok(text)
}

/// The keys before any table: the output, the passes and every cell flag.
fn top_keys(text: &mut String, request: &AbRequest) -> Result<(), String> {
    let _ = writeln!(text, "output = \"{}\"", output_name(request.output));
    if request.stop_halfwidth_pct.is_none() {
        let passes = request.passes.unwrap_or(DEFAULT_PASSES);
        let _ = writeln!(text, "passes = {passes}");
    }
    if let Some(warmup) = request.warmup {
        let _ = writeln!(text, "warmup_passes = {warmup}");
    }
    if let Some(order) = request.order {
        let _ = writeln!(text, "order = \"{order}\"");
        if order == Scheme::Shuffle {
            let _ = writeln!(text, "seed = {}", clock_seed());
        }
    }
    if let Some(limit) = request.noise_limit_pct {
        let _ = writeln!(text, "noise_limit_pct = {limit:?}");
    }
    if !request.ok_exit.is_empty() {
        let mut codes = request.ok_exit.clone();
        codes.sort_unstable();
        codes.dedup();
        let codes: Vec<String> = codes.iter().map(i32::to_string).collect();
        let _ = writeln!(text, "ok_exit = [{}]", codes.join(", "));
    }
    for (key, line) in [
        ("prepare", &request.prepare),
        ("setup", &request.setup),
        ("cleanup", &request.cleanup),
    ] {
        if let Some(line) = line {
            let argv = argv_of(request, line).map_err(|e| format!("--{key} {line:?}: {e}"))?;
            Binary::resolve(&argv[0]).map_err(|e| format!("--{key} {line:?}: {e:#}"))?;
            let _ = writeln!(text, "{key} = {}", toml_list(&argv));
        }
    }
    if request.show_output {
        let _ = writeln!(text, "show_output = true");
    }
    Ok(())
}

/// A seed for `--order shuffle`, written into the spec so that the order is on record.
fn clock_seed() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    now.as_secs() ^ u64::from(now.subsec_nanos())
}

/// The `[[arm]]` tables: each command, then the controls, which run the first command (with
/// a scan, its first value) as written.
fn arm_tables(text: &mut String, request: &AbRequest, layout: &Layout) {
    let first = &layout.first;
    let again = format!("{}-again", first.name);
    let known = format!("{}-known", first.name);
    let commands = layout
        .arms
        .iter()
        .enumerate()
        .map(|(i, a)| (a, if i == 0 { "base" } else { "arm" }, a.name.as_str()));
    let controls = std::iter::once((first, "reflexive", again.as_str())).chain(
        request
            .known_effect_pct
            .map(|_| (first, "known-effect", known.as_str())),
    );
    for (arm, role, name) in commands.chain(controls) {
        let _ = writeln!(
            text,
            "\n[[arm]]\nname = {}\nrole = \"{role}\"\ncommand = {}",
            toml_string(name),
            toml_list(&arm.argv)
        );
        if let (Some(pad), "known-effect") = (request.known_effect_pct, role) {
            // The wall time grows by pad %: base/arm = 1/(1 + pad/100).
            let expected = 100.0 * (1.0 / (1.0 + pad / 100.0) - 1.0);
            let _ = writeln!(
                text,
                "pad_pct = {pad:?}\nexpected_pct = {{ ladder_wall_s = {expected:?} }}"
            );
        }
        if !arm.env.is_empty() {
            let pairs: Vec<String> = arm
                .env
                .iter()
                .map(|(k, v)| format!("{} = {}", toml_string(k), toml_string(v)))
                .collect();
            let _ = writeln!(text, "env = {{ {} }}", pairs.join(", "));
        }
    }
}

fn env_lines(env: &BTreeMap<String, String>) -> String {
    env.iter()
        .map(|(k, v)| format!("{} = {}", toml_string(k), toml_string(v)))
        .collect::<Vec<_>>()
        .join("\n")
}

fn output_name(mode: OutputMode) -> &'static str {
    match mode {
        OutputMode::Csv => "csv",
        OutputMode::Json => "json",
        OutputMode::Time => "time",
    }
}

fn toml_list(items: &[String]) -> String {
    format!(
        "[{}]",
        items
            .iter()
            .map(|s| toml_string(s))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A TOML basic string: quotes, backslashes and control characters escaped.
fn toml_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// What `runner ab` did: the spec it wrote, the ladder, and what `analyze` said of it.
pub struct AbRun {
    pub spec: PathBuf,
    pub outcome: Outcome,
    /// For a complete ladder, `analyze report --summary`'s output, or why there is none.
    pub summary: Option<Result<String, String>>,
}

/// Writes the generated spec and runs it; then, for a complete ladder, `analyze report`
/// prints its summary and writes the exports.
pub fn run(request: &AbRequest, card: u32, colour: bool) -> Result<AbRun, String> {
    let generated = generate(request)?;
    write_new(&request.out, &generated)?;
    let options = RunOptions {
        spec: generated.path.clone(),
        tag: Some(request.tag.clone()),
        out_dir: request.out.clone(),
        card,
        exit_fix: ExitFix::AbFlag,
    };
    let outcome = ladder_run::run_ladder(&options).map_err(|e| format!("{e:#}"))?;
    let summary = outcome.aborted.is_none().then(|| {
        analyze_report(
            analyze_beside_runner().as_deref(),
            &outcome.path,
            &request.exports,
            colour,
        )
    });
    Ok(AbRun {
        spec: generated.path,
        outcome,
        summary,
    })
}

/// Creates the spec file; an existing one is never overwritten.
fn write_new(folder: &Path, generated: &GeneratedSpec) -> Result<(), String> {
    use std::io::Write;
    std::fs::create_dir_all(folder)
        .and_then(|_| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&generated.path)?
                .write_all(generated.text.as_bytes())
        })
        .map_err(|e| format!("cannot write {}: {e}", generated.path.display()))
}

/// The `analyze` executable beside this `runner`, when there is one.
pub fn analyze_beside_runner() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.join("analyze");
    path.is_file().then_some(path)
}

/// `analyze report FILE --summary`'s output (with the exports written), or why it could not
/// be had. With `colour`, analyze is told to keep its colour although its stdout is a pipe.
pub fn analyze_report(
    analyze: Option<&Path>,
    ladder_file: &Path,
    exports: &Exports,
    colour: bool,
) -> Result<String, String> {
    let analyze = analyze.ok_or("analyze was not found beside the runner")?;
    let mut command = std::process::Command::new(analyze);
    command.arg("report").arg(ladder_file).arg("--summary");
    for (_, option, path) in exports.each() {
        command.arg(option).arg(path);
    }
    if colour {
        command.env("CLICOLOR_FORCE", "1");
    }
    let out = command
        .output()
        .map_err(|e| format!("{} could not be started: {e}", analyze.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() || stdout.trim().is_empty() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why = stderr.lines().next().unwrap_or("no output");
        return Err(format!(
            "{} report --summary failed ({}): {why}",
            analyze.display(),
            out.status
        ));
    }
    Ok(stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(commands: &[&str]) -> AbRequest {
        AbRequest {
            commands: commands.iter().map(|c| c.to_string()).collect(),
            names: None,
            env_a: Vec::new(),
            env_b: Vec::new(),
            passes: None,
            stop_halfwidth_pct: None,
            warmup: None,
            order: None,
            noise_limit_pct: None,
            output: OutputMode::Time,
            known_effect_pct: None,
            metrics: Vec::new(),
            higher_is_better: false,
            ok_exit: Vec::new(),
            prepare: None,
            setup: None,
            cleanup: None,
            shell: None,
            scan: None,
            show_output: false,
            exports: Exports::default(),
            out: PathBuf::from("raw"),
            tag: "t".into(),
        }
    }

    fn spec_of(r: &AbRequest) -> Spec {
        let spec = generate(r).unwrap();
        Spec::parse(&spec.path, &spec.text).unwrap()
    }

    #[test]
    fn two_commands_make_a_spec_with_a_reflexive_control() {
        let mut r = request(&["true 'a b'", "true -x"]);
        r.env_a = vec!["K=V \"q\"".into()];
        let spec = generate(&r).unwrap();
        assert_eq!(spec.path, Path::new("raw/ab-a-b_t.toml"));
        let parsed = Spec::parse(&spec.path, &spec.text).unwrap();
        let names: Vec<&str> = parsed.arms.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "a-again"]);
        assert_eq!(parsed.arms[0].command.as_ref().unwrap()[1], "a b");
        assert_eq!(parsed.arms[0].env["K"], "V \"q\"");
        assert_eq!(parsed.arms[2].role, ladder::Role::Reflexive);
        assert_eq!(parsed.passes(), DEFAULT_PASSES);
    }

    #[test]
    fn stop_writes_looks() {
        let mut r = request(&["true", "true"]);
        r.stop_halfwidth_pct = Some(1.0);
        r.names = Some("one,two".into());
        r.warmup = Some(3);
        let parsed = spec_of(&r);
        assert_eq!(parsed.stop.unwrap().looks, STOP_LOOKS);
        assert_eq!(parsed.name, "ab-one-two");
        assert_eq!(parsed.warmup_passes, 3);
    }

    #[test]
    fn every_flag_is_a_key_of_the_spec() {
        let mut r = request(&["true x", "false"]);
        r.ok_exit = vec![1, 0, 1];
        r.prepare = Some("true prepare".into());
        r.setup = Some("true setup".into());
        r.cleanup = Some("true 'clean up'".into());
        r.warmup = Some(2);
        r.order = Some(Scheme::Shuffle);
        r.noise_limit_pct = Some(2.5);
        r.show_output = true;
        let spec = spec_of(&r);
        assert_eq!(spec.ok_exit, Some(vec![0, 1]));
        assert_eq!(spec.prepare.as_deref().unwrap(), ["true", "prepare"]);
        assert_eq!(spec.setup.as_deref().unwrap(), ["true", "setup"]);
        assert_eq!(spec.cleanup.as_deref().unwrap(), ["true", "clean up"]);
        assert_eq!(spec.warmup_passes, 2);
        assert_eq!(spec.order, Scheme::Shuffle);
        assert!(spec.seed.is_some());
        assert_eq!(spec.noise_limit_pct, Some(2.5));
        assert!(spec.shows_output());
    }

    #[test]
    fn a_shell_runs_the_string_unsplit() {
        let mut r = request(&["true | true", "true $HOME"]);
        r.shell = Some(DEFAULT_SHELL.into());
        r.setup = Some("true > /dev/null".into());
        let spec = spec_of(&r);
        assert_eq!(spec.argv_of(&spec.arms[0]), ["sh", "-c", "true | true"]);
        assert_eq!(spec.argv_of(&spec.arms[1]), ["sh", "-c", "true $HOME"]);
        assert_eq!(spec.setup.unwrap(), ["sh", "-c", "true > /dev/null"]);
    }

    #[test]
    fn a_parameter_scan_is_a_scan_of_the_one_command() {
        let mut r = request(&["sleep 0.0{n}"]);
        r.scan = Some(ScanRequest::Range {
            name: "n".into(),
            low: "1".into(),
            high: "3".into(),
            step: None,
        });
        r.known_effect_pct = Some(10.0);
        let spec = generate(&r).unwrap();
        assert_eq!(spec.path, Path::new("raw/ab-n_t.toml"));
        let parsed = Spec::parse(&spec.path, &spec.text).unwrap();
        let names: Vec<&str> = parsed.arms.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["1", "2", "3", "1-again", "1-known"]);
        assert_eq!(parsed.command, ["sleep", "0.0{n}"]);
        assert_eq!(parsed.argv_of(&parsed.arms[2]), ["sleep", "0.03"]);
        assert_eq!(parsed.argv_of(&parsed.arms[3]), ["sleep", "0.01"]);
        r.scan = Some(ScanRequest::List {
            name: "n".into(),
            values: "5,1".into(),
        });
        r.env_a = vec!["K=V".into()];
        let parsed = spec_of(&r);
        assert_eq!(parsed.argv_of(&parsed.arms[0]), ["sleep", "0.05"]);
        assert_eq!(parsed.env["K"], "V");
    }

    #[test]
    fn ranges_count_from_the_low_end_with_the_decimals_given() {
        assert_eq!(range_values("1", "3", None).unwrap(), ["1", "2", "3"]);
        assert_eq!(
            range_values("0.1", "0.3", Some("0.1")).unwrap(),
            ["0.1", "0.2", "0.3"]
        );
        assert_eq!(
            range_values("0", "1", Some("0.25")).unwrap(),
            ["0.00", "0.25", "0.50", "0.75", "1.00"]
        );
        assert_eq!(range_values("-2", "0", None).unwrap(), ["-2", "-1", "0"]);
        assert!(range_values("0.5", "2", None)
            .unwrap_err()
            .contains("--parameter-step"));
        assert!(range_values("3", "1", None).unwrap_err().contains("swap"));
        assert!(range_values("1", "2", Some("0"))
            .unwrap_err()
            .contains("not positive"));
        assert!(range_values("1", "1000", None)
            .unwrap_err()
            .contains("at most 128"));
        assert!(range_values("x", "2", None)
            .unwrap_err()
            .contains("\"x\" is not a number"));
    }

    #[test]
    fn bad_requests_say_which_command_or_flag() {
        let e = |cmds: &[&str]| generate(&request(cmds)).err().unwrap();
        assert!(
            e(&["true", "true 'x"]).starts_with("command 2 (\"true 'x\"): unbalanced single quote")
        );
        assert!(e(&["true", "  "]).contains("command 2 (\"  \") is empty"));
        assert!(
            e(&["no-such-program-abab", "true"]).contains("\"no-such-program-abab\" was not found")
        );
        assert!(e(&["true"]).contains("at least two commands"));
        let mut r = request(&["true", "true"]);
        r.names = Some("x".into());
        assert!(generate(&r)
            .err()
            .unwrap()
            .contains("1 names for 2 commands"));
        r.names = Some("x,x".into());
        assert!(generate(&r).err().unwrap().contains("given twice"));
        r.names = None;
        r.output = OutputMode::Csv;
        assert!(generate(&r).err().unwrap().contains("--metric COLUMN"));
        r.output = OutputMode::Time;
        r.env_b = vec!["novalue".into()];
        assert!(generate(&r)
            .err()
            .unwrap()
            .contains("--env-b \"novalue\" is not KEY=VALUE"));
    }

    #[test]
    fn bad_flags_name_the_flag_and_the_fix() {
        let refused = |edit: &dyn Fn(&mut AbRequest)| {
            let mut r = request(&["true", "true"]);
            edit(&mut r);
            generate(&r).err().unwrap()
        };
        assert!(refused(&|r| r.warmup = Some(9)).contains("--warmup 9 leaves 1 analysis passes"));
        assert!(refused(&|r| {
            r.warmup = Some(4);
            r.stop_halfwidth_pct = Some(1.0);
        })
        .contains("give --warmup 3 or less"));
        assert!(refused(&|r| r.noise_limit_pct = Some(-1.0)).contains("--noise-limit -1"));
        assert!(
            refused(&|r| r.prepare = Some("no-such-program-abab".into())).contains("--prepare")
        );
        assert!(
            refused(&|r| r.exports.csv = Some("/no/such/folder/x.csv".into()))
                .contains("--export-csv")
        );
        let scan = || ScanRequest::List {
            name: "n".into(),
            values: "1,2".into(),
        };
        assert!(refused(&|r| r.scan = Some(scan())).contains("takes one command"));
        let mut r = request(&["sleep 1"]);
        r.scan = Some(scan());
        assert!(generate(&r).err().unwrap().contains("does not hold {n}"));
        r.commands = vec!["sleep {n}".into()];
        r.names = Some("x".into());
        assert!(generate(&r).err().unwrap().contains("--name"));
        r.names = None;
        r.scan = Some(ScanRequest::List {
            name: "n".into(),
            values: "1,,2".into(),
        });
        assert!(generate(&r).err().unwrap().contains("value 2 is empty"));
        r.scan = Some(ScanRequest::List {
            name: "a b".into(),
            values: "1,2".into(),
        });
        assert!(generate(&r)
            .err()
            .unwrap()
            .contains("letters, digits and _"));
    }

    #[test]
    fn toml_strings_escape() {
        assert_eq!(toml_string("a\"b\\c\u{7f}"), "\"a\\\"b\\\\c\\u007F\"");
    }
}
