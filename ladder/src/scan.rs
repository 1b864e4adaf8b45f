//! `[scan]`: one generated arm per value of one variable, per argv tail, or per value of a
//! parameter written as `{NAME}` in the command, so that a sweep such as compression levels
//! 1, 3, 5 is one spec line instead of three arms.

use crate::ladder_file::Role;
use crate::spec::{ArmSpec, ScanSpec};
use std::collections::BTreeMap;

impl ScanSpec {
    /// The arms the scan generates from the spec's `command`, in the order of its values;
    /// the first is the base.
    pub fn arms(&self, command: &[String]) -> Vec<ArmSpec> {
        let arm = |i: usize, name: String| ArmSpec {
            name,
            role: if i == 0 { Role::Base } else { Role::Arm },
            env: BTreeMap::new(),
            command: None,
            args: None,
            expected_pct: None,
            pad_pct: None,
        };
        match (&self.env, &self.parameter, &self.values, &self.args) {
            (Some(var), _, Some(values), _) => values
                .iter()
                .enumerate()
                .map(|(i, v)| ArmSpec {
                    env: BTreeMap::from([(var.clone(), v.clone())]),
                    ..arm(i, arm_name(v))
                })
                .collect(),
            (None, Some(name), Some(values), _) => values
                .iter()
                .enumerate()
                .map(|(i, v)| ArmSpec {
                    command: Some(substitute(command, name, v)),
                    ..arm(i, arm_name(v))
                })
                .collect(),
            (_, _, _, Some(tails)) => tails
                .iter()
                .enumerate()
                .map(|(i, tail)| ArmSpec {
                    args: Some(tail.clone()),
                    ..arm(i, arm_name(&tail.join(" ")))
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The scanned values in arm order, as the spec writes them (an argv tail as its words
    /// joined by spaces): what a report labels each arm with.
    pub fn labels(&self) -> Option<Vec<String>> {
        match (&self.values, &self.args) {
            (Some(values), _) => Some(values.clone()),
            (None, Some(tails)) => Some(tails.iter().map(|tail| tail.join(" ")).collect()),
            (None, None) => None,
        }
    }

    /// `{NAME}` of a parameter scan: what its values replace in the command's words.
    pub fn placeholder(&self) -> Option<String> {
        self.parameter.as_ref().map(|name| placeholder(name))
    }
}

/// `{name}`, as it is written in a command.
pub fn placeholder(name: &str) -> String {
    format!("{{{name}}}")
}

/// `argv` with `{name}` replaced by `value` wherever it occurs in every word.
pub fn substitute(argv: &[String], name: &str, value: &str) -> Vec<String> {
    let mark = placeholder(name);
    argv.iter().map(|word| word.replace(&mark, value)).collect()
}

/// A value as an arm name: letters, digits and `. - + =` kept, every other run of
/// characters one `_` (file names, CSV fields and report headings all stay plain).
pub fn arm_name(value: &str) -> String {
    let mut name = String::new();
    for c in value.chars() {
        if c.is_ascii_alphanumeric() || ".-+=".contains(c) {
            name.push(c);
        } else if !name.ends_with('_') {
            name.push('_');
        }
    }
    let name = name.trim_matches('_');
    if name.is_empty() {
        "empty".to_string()
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised() {
        assert_eq!(arm_name("3"), "3");
        assert_eq!(arm_name("--level 3"), "--level_3");
        assert_eq!(arm_name("a/b, c"), "a_b_c");
        assert_eq!(arm_name("  "), "empty");
    }

    #[test]
    fn env_values_make_one_arm_each_the_first_the_base() {
        let scan = ScanSpec {
            env: Some("LEVEL".into()),
            parameter: None,
            values: Some(vec!["1".into(), "9".into()]),
            args: None,
        };
        let arms = scan.arms(&["zstd".into()]);
        assert_eq!(arms.len(), 2);
        assert_eq!((arms[0].name.as_str(), arms[0].role), ("1", Role::Base));
        assert_eq!((arms[1].name.as_str(), arms[1].role), ("9", Role::Arm));
        assert_eq!(arms[1].env["LEVEL"], "9");
        assert_eq!(scan.labels(), Some(vec!["1".into(), "9".into()]));
    }

    #[test]
    fn argv_tails_become_args() {
        let scan = ScanSpec {
            env: None,
            parameter: None,
            values: None,
            args: Some(vec![vec!["-1".into()], vec!["-9".into(), "-e".into()]]),
        };
        let arms = scan.arms(&["zstd".into()]);
        assert_eq!(arms[1].name, "-9_-e");
        assert_eq!(scan.labels(), Some(vec!["-1".into(), "-9 -e".into()]));
        assert_eq!(
            arms[1].args.as_deref(),
            Some(&["-9".to_string(), "-e".to_string()][..])
        );
    }

    #[test]
    fn a_parameter_is_replaced_in_every_word_of_the_command() {
        let scan = ScanSpec {
            env: None,
            parameter: Some("n".into()),
            values: Some(vec!["1".into(), "0.5".into()]),
            args: None,
        };
        let command: Vec<String> = ["sleep", "{n}", "--x={n}{n}", "{m}"]
            .iter()
            .map(|w| w.to_string())
            .collect();
        let arms = scan.arms(&command);
        assert_eq!((arms[0].name.as_str(), arms[0].role), ("1", Role::Base));
        assert_eq!(
            arms[1].command.as_deref().unwrap(),
            ["sleep", "0.5", "--x=0.50.5", "{m}"]
        );
        assert!(arms[1].env.is_empty() && arms[1].args.is_none());
        assert_eq!(scan.placeholder().as_deref(), Some("{n}"));
    }
}
