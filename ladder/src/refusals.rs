//! What a spec may not ask for, beyond its types: names that would escape the output
//! folder or break a line of the file, variables and argv words the OS would change, sizes
//! past the limits, and a metric declared twice.
//!
//! Each refusal names the spec key (and value) it is about, so that `Spec::parse` can point
//! the error at the spec's line.

use crate::limits;
use crate::names;
use crate::spec::Spec;

/// Why a spec is refused, and where: the `nth` line that assigns `key` (holding `value`).
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub key: String,
    pub value: Option<String>,
    pub nth: usize,
    pub message: String,
    pub fix: String,
}

impl Refusal {
    fn new(key: &str, value: Option<&str>, message: String, fix: &str) -> Refusal {
        Refusal {
            key: key.into(),
            value: value.map(Into::into),
            nth: 0,
            message,
            fix: fix.into(),
        }
    }
}

/// The first refusal of `spec`, or `None` when the spec asks for nothing it may not.
pub fn first(spec: &Spec) -> Option<Refusal> {
    [names_of, sizes, envs, argvs, metrics]
        .iter()
        .find_map(|check| check(spec))
}

fn names_of(spec: &Spec) -> Option<Refusal> {
    if let Err(e) = names::file_part("the ladder name", &spec.name) {
        return Some(Refusal::new(
            "name",
            Some(&as_written(&spec.name)),
            e,
            "rename the ladder, e.g. name = \"l2-window\"",
        ));
    }
    spec.arms.iter().find_map(|arm| {
        let fix = "give the [[arm]] a name such as \"off\" or \"window-4\"";
        names::arm(&arm.name)
            .err()
            .map(|e| Refusal::new("name", Some(&as_written(&arm.name)), e, fix))
    })
}

/// A name as a TOML basic string spells it (`\n` for a newline), to find its line.
fn as_written(name: &str) -> String {
    let json = serde_json::to_string(name).expect("a string serializes");
    json[1..json.len() - 1].to_string()
}

fn sizes(spec: &Spec) -> Option<Refusal> {
    if let Err(e) = limits::cells(spec.passes(), spec.arms.len()) {
        return Some(Refusal::new(
            "passes",
            None,
            e,
            "run fewer passes or arms, or split the ladder in two",
        ));
    }
    limits::timeout_s(spec.timeout_s).err().map(|e| {
        Refusal::new(
            "timeout_s",
            None,
            e,
            "set timeout_s to the seconds a cell may take, e.g. timeout_s = 600",
        )
    })
}

fn envs(spec: &Spec) -> Option<Refusal> {
    let all = spec
        .env
        .iter()
        .chain(spec.arms.iter().flat_map(|a| a.env.iter()));
    for (name, value) in all {
        // An empty name has no line of its own to point at; the table's line is next best.
        let key = if name.is_empty() {
            "env"
        } else {
            name.as_str()
        };
        if let Err(e) = names::env_var(name) {
            return Some(Refusal::new(key, None, e, "rename the variable"));
        }
        if let Err(e) = names::no_nul(&format!("the value of {name}"), value) {
            return Some(Refusal::new(
                key,
                Some(&as_written(value)),
                e,
                "remove the NUL (\\u0000) from the value",
            ));
        }
    }
    None
}

fn argvs(spec: &Spec) -> Option<Refusal> {
    let mut lists: Vec<(&str, &[String], bool)> = vec![("command", &spec.command, true)];
    for arm in &spec.arms {
        lists.extend(arm.command.as_deref().map(|c| ("command", c, true)));
        lists.extend(arm.args.as_deref().map(|a| ("args", a, false)));
    }
    for (key, list) in [
        ("prepare", &spec.prepare),
        ("setup", &spec.setup),
        ("cleanup", &spec.cleanup),
    ] {
        lists.extend(list.as_deref().map(|c| (key, c, true)));
    }
    for (key, argv, is_command) in lists {
        if is_command
            && argv
                .first()
                .is_some_and(|program| program.trim().is_empty())
        {
            let message = format!("{key} starts with an empty program name");
            return Some(Refusal::new(
                key,
                None,
                message,
                "give the program first, e.g. [\"target/release/engine\", \"bench\"]",
            ));
        }
        if let Some(e) = argv
            .iter()
            .find_map(|word| names::no_nul(&format!("the {key} word"), word).err())
        {
            return Some(Refusal::new(
                key,
                None,
                e,
                "remove the NUL (\\u0000) from the word",
            ));
        }
    }
    None
}

fn metrics(spec: &Spec) -> Option<Refusal> {
    spec.metrics.iter().enumerate().find_map(|(i, metric)| {
        let twice = spec.metrics[..i]
            .iter()
            .any(|m| m.column == metric.column && m.row == metric.row);
        twice.then(|| {
            let message = format!(
                "[[metric]] column = {:?} (row {}) is declared twice",
                metric.column, metric.row
            );
            let mut refusal = Refusal::new(
                "column",
                Some(&metric.column),
                message,
                "remove the second [[metric]]",
            );
            refusal.nth = 1;
            refusal
        })
    })
}
