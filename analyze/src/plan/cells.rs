//! Which cell a plan prices (METHOD.md "The pilot's cells"): the pilot's base cell must be the
//! template's, or the plan's cost and spread belong to other cells.

use ladder::spec::{ArmSpec, Spec};
use std::collections::BTreeMap;

/// An arm's cell as a plan sees it: its argv without the repetition count and the repetition
/// rows, which a plan sets or a pilot needs, and its environment.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
}

impl Cell {
    /// The base arm's cell of `spec`.
    pub fn base_of(spec: &Spec) -> Cell {
        let base = &spec.arms[spec.base_index()];
        Cell::of(spec, base)
    }

    fn of(spec: &Spec, arm: &ArmSpec) -> Cell {
        let mut env = spec.env.clone();
        env.extend(arm.env.clone());
        Cell {
            argv: priced_argv(&spec.argv_of(arm)),
            env,
        }
    }

    /// How `template` differs from `self` (the pilot's), in words; `None` when it does not.
    pub fn difference(&self, template: &Cell) -> Option<String> {
        let mut said = Vec::new();
        if self.argv != template.argv {
            said.push(format!(
                "argv `{}` (the pilot's: `{}`)",
                template.argv.join(" "),
                self.argv.join(" ")
            ));
        }
        let keys = self.env.keys().chain(template.env.keys());
        let keys: std::collections::BTreeSet<_> = keys.collect();
        for key in keys {
            let (pilot, own) = (self.env.get(key), template.env.get(key));
            if pilot != own {
                said.push(format!(
                    "env {} (the pilot's: {})",
                    setting(key, own),
                    shown(pilot)
                ));
            }
        }
        (!said.is_empty()).then(|| said.join("; "))
    }
}

/// The engine's flag of a cell that builds its model once per layout (`--layouts N`).
const LAYOUTS_FLAG: &str = "--layouts";

impl Cell {
    /// `N` where the cell runs `--layouts N` (or `--layouts=N`) with `N` other than 1: a cell
    /// whose repetitions a plan cannot price alike (METHOD.md "The pilot's cells").
    pub fn layouts(&self) -> Option<&str> {
        let mut words = self.argv.iter();
        while let Some(word) = words.next() {
            let value = match word.strip_prefix(LAYOUTS_FLAG) {
                Some("") => words.next().map(String::as_str),
                Some(rest) => rest.strip_prefix('='),
                None => None,
            };
            if let Some(n) = value.filter(|n| n.trim() != "1") {
                return Some(n);
            }
        }
        None
    }
}

/// `KEY="value"`, or `KEY unset`.
fn setting(key: &str, value: Option<&String>) -> String {
    value.map_or(format!("{key} unset"), |v| format!("{key}={v:?}"))
}

fn shown(value: Option<&String>) -> String {
    value.map_or("unset".into(), |v| format!("{v:?}"))
}

/// The flags of the engine's repetition count (`-r N`), which a plan sets.
pub const REPS_FLAGS: [&str; 2] = ["-r", "--reps"];

/// `argv` without `-r N` (or `--reps N`) and `--rows reps`: what sets a pilot's cells apart
/// from the ladder's by design.
fn priced_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut words = argv.iter().peekable();
    while let Some(word) = words.next() {
        let rows = word == "--rows" && words.peek().is_some_and(|v| *v == "reps");
        if rows || REPS_FLAGS.contains(&word.as_str()) {
            words.next();
            continue;
        }
        out.push(word.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Spec {
        Spec::parse(std::path::Path::new("t.toml"), text).unwrap()
    }

    const PILOT: &str = "name = \"p\"\ncommand = [\"e\", \"bench\", \"-r\", \"4\", \"--rows\", \"reps\", \"-pg\", \"8,8\"]\n\
        output = \"csv\"\npasses = 4\n[env]\nB = \"cuda\"\n[[arm]]\nname = \"a\"\nrole = \"base\"\n\
        [[arm]]\nname = \"a2\"\nrole = \"reflexive\"\n[[metric]]\ncolumn = \"x\"\nbetter = \"higher\"\n";

    #[test]
    fn a_cell_of_several_layouts_is_named_by_its_count() {
        let with = |words: &str| PILOT.replace("\"-pg\"", &format!("{words}, \"-pg\""));
        let layouts = |text: &str| Cell::base_of(&spec(text)).layouts().map(String::from);
        assert_eq!(layouts(&with("\"--layouts\", \"4\"")).as_deref(), Some("4"));
        assert_eq!(layouts(&with("\"--layouts=3\"")).as_deref(), Some("3"));
        assert_eq!(layouts(&with("\"--layouts\", \"1\"")), None);
        assert_eq!(layouts(&with("\"--layouts=1\"")), None);
        assert_eq!(layouts(&with("\"--layoutsx\", \"4\"")), None);
        assert_eq!(layouts(PILOT), None);
    }

    #[test]
    fn the_repetitions_and_their_rows_are_not_part_of_a_cell() {
        let template = PILOT.replace(
            "\"-r\", \"4\", \"--rows\", \"reps\", ",
            "\"--reps\", \"1\", ",
        );
        let pilot = Cell::base_of(&spec(PILOT));
        assert_eq!(pilot.argv, ["e", "bench", "-pg", "8,8"]);
        assert_eq!(pilot.difference(&Cell::base_of(&spec(&template))), None);
        // Other rows are another cell (the breakdown's rows run reps of their own), and a
        // word before `reps` that is not `--rows` stays.
        let ops = PILOT.replace("\"--rows\", \"reps\"", "\"--rows\", \"ops\"");
        assert_eq!(
            Cell::base_of(&spec(&ops)).argv,
            ["e", "bench", "--rows", "ops", "-pg", "8,8"]
        );
        let mode = PILOT.replace("\"--rows\", \"reps\"", "\"--mode\", \"reps\"");
        assert_eq!(
            Cell::base_of(&spec(&mode)).argv,
            ["e", "bench", "--mode", "reps", "-pg", "8,8"]
        );
    }

    #[test]
    fn another_environment_or_argv_is_named() {
        let padded = PILOT.replace(
            "role = \"base\"\n",
            "role = \"base\"\nenv = { PAD = \"0\" }\n",
        );
        let pilot = Cell::base_of(&spec(PILOT));
        let why = pilot.difference(&Cell::base_of(&spec(&padded))).unwrap();
        assert_eq!(why, "env PAD=\"0\" (the pilot's: unset)");
        let other = PILOT.replace("\"8,8\"", "\"8,16\"");
        let why = pilot.difference(&Cell::base_of(&spec(&other))).unwrap();
        assert!(
            why.starts_with("argv `e bench -pg 8,16` (the pilot's: `e bench -pg 8,8`)"),
            "{why}"
        );
        // The spec's [env] counts, under the arm's own.
        let cpu = PILOT.replace("B = \"cuda\"", "B = \"cpu\"");
        let why = pilot.difference(&Cell::base_of(&spec(&cpu))).unwrap();
        assert_eq!(why, "env B=\"cpu\" (the pilot's: \"cuda\")");
    }

    #[test]
    fn the_base_is_compared_not_the_first_arm() {
        let sweep = PILOT.replace(
            "[[arm]]\nname = \"a\"\nrole = \"base\"\n",
            "[[arm]]\nname = \"pad\"\nargs = [\"--pad\"]\n[[arm]]\nname = \"a\"\nrole = \"base\"\n",
        );
        let pilot = Cell::base_of(&spec(PILOT));
        assert_eq!(pilot.difference(&Cell::base_of(&spec(&sweep))), None);
    }
}
