//! What a spec may not ask for beyond its types, each refusal pointing at its line with a fix.

use super::locate::Locator;
use super::{
    ArmSpec, Cards, Expected, OutputMode, Spec, SpecError, StdoutMode, RESERVED_ENV_PREFIX,
};
use crate::ladder_file::Role;
use crate::order::Scheme;

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
    "breakdown",
    "stop",
    "stdout",
    "ok_exit",
    "prepare",
    "setup",
    "cleanup",
    "scan",
    "output_cap_mib",
    "cards",
    "card",
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
const METRIC_KEYS: &[&str] = &["column", "better", "row", "noise_limit_pct"];
const SPLIT_KEYS: &[&str] = &["rounds", "time", "energy"];
const IDENTITY_KEYS: &[&str] = &["column"];
const BREAKDOWN_KEYS: &[&str] = &["key", "value", "total", "launches"];
const STOP_KEYS: &[&str] = &["halfwidth_pct", "looks", "spread", "metrics", "within_s"];
const SCAN_KEYS: &[&str] = &["env", "parameter", "values", "args"];
/// Every key is one the spec knows, at the top and in each table.
pub(super) fn keys(at: &Locator, table: &toml::Table) -> Result<(), SpecError> {
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
        ("breakdown", BREAKDOWN_KEYS),
        ("stop", STOP_KEYS),
        ("card", super::card::CARD_KEYS),
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
        if !positive(value) {
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
pub(super) fn scan(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
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

/// `[stop]`: a positive half-width, a positive `within_s` when given, and increasing looks,
/// each leaving at least three analysis passes, the last one equal to `passes` when that is
/// given.
fn check_stop(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    let Some(stop) = &spec.stop else {
        return Ok(());
    };
    let error = |key: &str, message: String, fix: String| {
        at.error(key, None, &message, &fix).at_table(at, "stop")
    };
    if !positive(stop.halfwidth_pct) {
        return Err(error(
            "halfwidth_pct",
            format!(
                "halfwidth_pct = {} is not a positive number",
                stop.halfwidth_pct
            ),
            "set the half-width you need, in percent, e.g. halfwidth_pct = 0.5".into(),
        ));
    }
    if let Some(within) = stop.within_s.filter(|&w| !positive(w)) {
        return Err(error(
            "within_s",
            format!("within_s = {within} is not a positive number of seconds"),
            "set the seconds of cells the ladder may take, e.g. within_s = 240, or remove it"
                .into(),
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
    let metrics = spec.effective_metrics();
    let columns: Vec<&str> = metrics.iter().map(|m| m.column.as_str()).collect();
    if let Some(unknown) = stop.metrics.iter().find(|m| !columns.contains(&m.as_str())) {
        return Err(error(
            "metrics",
            format!("[stop] metrics names {unknown:?}, which is not a [[metric]] column"),
            format!("name metrics of this spec: one or more of {columns:?}"),
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

/// Every check of a spec whose `[scan]` arms have been added.
pub(super) fn expanded(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    check(at, spec)?;
    check_arm_argv(at, spec)?;
    check_stop(at, spec)?;
    super::card::check(at, spec)?;
    check_cell_keys(at, spec)?;
    check_parameter(at, spec)?;
    check_metric_columns(at, spec)?;
    check_breakdown(at, spec)?;
    check_known_effects(at, spec)
}

/// `[breakdown]` names its columns, each once, and reads rows the program prints.
fn check_breakdown(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    let Some(breakdown) = &spec.breakdown else {
        return Ok(());
    };
    let error = |key: &str, message: String, fix: &str| {
        at.error(key, None, &message, fix).at_table(at, "breakdown")
    };
    if spec.output == OutputMode::Time {
        return Err(error(
            "breakdown",
            "[breakdown] reads rows the program prints, and output = \"time\" reads none".into(),
            "use output = \"csv\" with a program that prints its breakdown rows (engine bench --rows ops), or drop [breakdown]",
        ));
    }
    let columns = breakdown.columns();
    for (i, (key, column)) in columns.iter().enumerate() {
        if column.trim().is_empty() {
            return Err(error(
                key,
                format!("[breakdown] {key} is empty"),
                "name a column the program prints, e.g. key = \"kernel\", value = \"us_per_token\"",
            ));
        }
        if let Some((other, _)) = columns[..i].iter().find(|(_, c)| c == column) {
            return Err(error(
                key,
                format!("[breakdown] names {column:?} as both {other} and {key}"),
                "give each of key, value, total and launches its own column",
            ));
        }
    }
    Ok(())
}

/// Every `[[metric]]` names a column, and its own noise limit, if any, is a positive number.
fn check_metric_columns(at: &Locator, spec: &Spec) -> Result<(), SpecError> {
    if spec.metrics.iter().any(|m| m.column.trim().is_empty()) {
        return Err(at.error(
            "column",
            Some(""),
            "a [[metric]] has an empty column",
            "name the column the program prints, e.g. column = \"decode_tok_s\", or ladder_wall_s for the wall time",
        ));
    }
    for m in &spec.metrics {
        if let Some(limit) = m.noise_limit_pct.filter(|&l| !positive(l)) {
            return Err(SpecError {
                file: at.path.into(),
                line: at.line_in_metric(&m.column, "noise_limit_pct"),
                message: format!(
                    "the [[metric]] {:?} has noise_limit_pct = {limit}, not a positive number",
                    m.column
                ),
                fix: "set it to a positive number of percent, or remove it to use the spec's"
                    .into(),
            });
        }
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
            if !(positive(pad) && pad <= 1000.0) {
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

/// A number a limit, a half-width or a pad can be: finite and above zero.
fn positive(value: f64) -> bool {
    value.is_finite() && value > 0.0
}
