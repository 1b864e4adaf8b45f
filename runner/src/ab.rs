//! `runner ab`: the one-line A/B. Each command string becomes an arm with its own argv, a
//! reflexive control repeats the first, and the generated spec is written beside the
//! ladder (hashed like any spec) before the ladder runs from it.

use crate::binary::Binary;
use crate::words;
use ladder::scan::arm_name;
use ladder::spec::{OutputMode, Spec};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Passes when neither `--passes` nor `--stop` is given.
pub const DEFAULT_PASSES: usize = 10;
/// The looks of `--stop`: the first leaves 5 analysis passes for the spread.
pub const STOP_LOOKS: [usize; 5] = [6, 10, 16, 24, 32];

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
    pub output: OutputMode,
    /// `--known-effect-pct`: a known-effect control padding the base's command.
    pub known_effect_pct: Option<f64>,
    /// `--metric`: columns the command prints (csv/json output).
    pub metrics: Vec<String>,
    pub higher_is_better: bool,
    pub out: PathBuf,
    pub tag: String,
}

/// One command as an arm.
struct AbArm {
    name: String,
    argv: Vec<String>,
    env: BTreeMap<String, String>,
}

/// The spec `runner ab` writes: where, and its text. Nothing is written yet.
pub struct GeneratedSpec {
    pub path: PathBuf,
    pub ladder_file: PathBuf,
    pub text: String,
}

/// Checks the request and builds the spec; every error comes before any file exists.
pub fn generate(request: &AbRequest) -> Result<GeneratedSpec, String> {
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
    let arms = arms_of(request)?;
    let name = format!(
        "ab-{}",
        arms.iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join("-")
    );
    let path = request.out.join(format!("{name}_{}.toml", request.tag));
    let ladder_file = request.out.join(format!("{name}_{}.csv", request.tag));
    for existing in [&path, &ladder_file] {
        if existing.exists() {
            return Err(format!(
                "{} already exists; pick another --tag or --out",
                existing.display()
            ));
        }
    }
    let text = spec_text(request, &name, &arms);
    Spec::parse(&path, &text).map_err(|e| format!("the generated spec is refused: {e}"))?;
    Ok(GeneratedSpec {
        path,
        ladder_file,
        text,
    })
}

fn arms_of(request: &AbRequest) -> Result<Vec<AbArm>, String> {
    if request.commands.len() < 2 {
        return Err("runner ab needs at least two commands, e.g. runner ab 'gzip -1 -c FILE' 'gzip -9 -c FILE'".into());
    }
    let names = names_of(request)?;
    let mut arms = Vec::new();
    for (i, (command, name)) in request.commands.iter().zip(names).enumerate() {
        let at = format!("command {} ({command:?})", i + 1);
        let argv = words::split(command).map_err(|e| format!("{at}: {e}"))?;
        if argv.is_empty() {
            return Err(format!("{at} is empty; give the program and its arguments"));
        }
        Binary::resolve(&argv[0]).map_err(|e| format!("{at}: {e:#}"))?;
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
    Ok(arms)
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

fn spec_text(request: &AbRequest, name: &str, arms: &[AbArm]) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# Generated by `runner ab`; run it again with `runner run` on this file."
    );
    for (i, arm) in arms.iter().enumerate() {
        let _ = writeln!(text, "#   {}: {}", arm.name, request.commands[i]);
    }
    let _ = writeln!(text, "name = {}", toml_string(name));
    let _ = writeln!(text, "command = {}", toml_list(&arms[0].argv));
    let _ = writeln!(text, "output = \"{}\"", output_name(request.output));
    match request.stop_halfwidth_pct {
        Some(halfwidth) => {
            let looks: Vec<String> = STOP_LOOKS.iter().map(usize::to_string).collect();
            let _ = writeln!(
                text,
                "\n[stop]\nhalfwidth_pct = {halfwidth:?}\nlooks = [{}]",
                looks.join(", ")
            );
        }
        None => {
            let _ = writeln!(
                text,
                "passes = {}",
                request.passes.unwrap_or(DEFAULT_PASSES)
            );
        }
    }
    let again = format!("{}-again", arms[0].name);
    let known = format!("{}-known", arms[0].name);
    let roles = arms
        .iter()
        .enumerate()
        .map(|(i, a)| (a, if i == 0 { "base" } else { "arm" }, a.name.as_str()));
    let controls = std::iter::once((&arms[0], "reflexive", again.as_str())).chain(
        request
            .known_effect_pct
            .map(|_| (&arms[0], "known-effect", known.as_str())),
    );
    for (arm, role, name) in roles.chain(controls) {
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
    text
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

/// The `analyze` executable beside this `runner`, when there is one.
pub fn analyze_beside_runner() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.join("analyze");
    path.is_file().then_some(path)
}

/// `analyze report FILE --summary`'s output, or why it could not be had.
pub fn analyze_summary(analyze: Option<&Path>, ladder_file: &Path) -> Result<String, String> {
    let analyze = analyze.ok_or("analyze was not found beside the runner")?;
    let out = std::process::Command::new(analyze)
        .arg("report")
        .arg(ladder_file)
        .arg("--summary")
        .output()
        .map_err(|e| format!("{} could not be started: {e}", analyze.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if stdout.trim().is_empty() {
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
            output: OutputMode::Time,
            known_effect_pct: None,
            metrics: Vec::new(),
            higher_is_better: false,
            out: PathBuf::from("raw"),
            tag: "t".into(),
        }
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
        let spec = generate(&r).unwrap();
        let parsed = Spec::parse(&spec.path, &spec.text).unwrap();
        assert_eq!(parsed.stop.unwrap().looks, STOP_LOOKS);
        assert_eq!(parsed.name, "ab-one-two");
    }

    #[test]
    fn bad_requests_say_which_command() {
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
    fn toml_strings_escape() {
        assert_eq!(toml_string("a\"b\\c\u{7f}"), "\"a\\\"b\\\\c\\u007F\"");
    }
}
