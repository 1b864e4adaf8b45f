//! `[scan]`: one generated arm per value of one variable (or per argv tail), so that a
//! sweep such as compression levels 1, 3, 5 is one spec line instead of three arms.

use crate::ladder_file::Role;
use crate::spec::{ArmSpec, ScanSpec};
use std::collections::BTreeMap;

impl ScanSpec {
    /// The arms the scan generates, in the order of its values; the first is the base.
    pub fn arms(&self) -> Vec<ArmSpec> {
        let arm = |i: usize,
                   name: String,
                   env: BTreeMap<String, String>,
                   args: Option<Vec<String>>| ArmSpec {
            name,
            role: if i == 0 { Role::Base } else { Role::Arm },
            env,
            command: None,
            args,
            expected_pct: None,
            pad_pct: None,
        };
        match (&self.env, &self.values, &self.args) {
            (Some(var), Some(values), _) => values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    arm(
                        i,
                        arm_name(v),
                        BTreeMap::from([(var.clone(), v.clone())]),
                        None,
                    )
                })
                .collect(),
            (_, _, Some(tails)) => tails
                .iter()
                .enumerate()
                .map(|(i, tail)| {
                    arm(
                        i,
                        arm_name(&tail.join(" ")),
                        BTreeMap::new(),
                        Some(tail.clone()),
                    )
                })
                .collect(),
            _ => Vec::new(),
        }
    }
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
            values: Some(vec!["1".into(), "9".into()]),
            args: None,
        };
        let arms = scan.arms();
        assert_eq!(arms.len(), 2);
        assert_eq!((arms[0].name.as_str(), arms[0].role), ("1", Role::Base));
        assert_eq!((arms[1].name.as_str(), arms[1].role), ("9", Role::Arm));
        assert_eq!(arms[1].env["LEVEL"], "9");
    }

    #[test]
    fn argv_tails_become_args() {
        let scan = ScanSpec {
            env: None,
            values: None,
            args: Some(vec![vec!["-1".into()], vec!["-9".into(), "-e".into()]]),
        };
        let arms = scan.arms();
        assert_eq!(arms[1].name, "-9_-e");
        assert_eq!(
            arms[1].args.as_deref(),
            Some(&["-9".to_string(), "-e".to_string()][..])
        );
    }
}
