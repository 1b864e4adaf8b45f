//! `[scan] parameter = "NAME"`: each value replaces `{NAME}` in the command's words, and
//! `show_output`; both as a spec file and as the start record's JSON.

use ladder::spec::{Spec, SpecError, StdoutMode};
use ladder::Role;
use std::path::Path;

const SWEEP: &str = r#"name = "sweep"
command = ["sleep", "0.0{n}"]
output = "time"
passes = 4

[scan]
parameter = "n"
values = ["1", "2", "5"]

[[arm]]
name = "again"
role = "reflexive"
command = ["sleep", "0.01"]
"#;

fn parse(text: &str) -> Result<Spec, SpecError> {
    Spec::parse(Path::new("sweep.toml"), text)
}

fn refused(text: &str) -> SpecError {
    parse(text).expect_err("the spec should be refused")
}

#[test]
fn each_value_makes_an_arm_whose_argv_is_the_command_with_the_value() {
    let spec = parse(SWEEP).unwrap();
    let names: Vec<&str> = spec.arms.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["1", "2", "5", "again"]);
    assert_eq!(spec.arms[0].role, Role::Base);
    assert_eq!(spec.argv_of(&spec.arms[2]), ["sleep", "0.05"]);
    assert_eq!(spec.argv_of(&spec.arms[3]), ["sleep", "0.01"]);
    // The analysis expands the recorded spec to the same arms.
    let table: toml::Table = toml::from_str(SWEEP).unwrap();
    let json = serde_json::to_value(table).unwrap();
    assert_eq!(Spec::from_json(&json).unwrap().arms, spec.arms);
    assert_eq!(spec.default_program(), "sleep");
}

#[test]
fn the_program_itself_may_be_the_parameter_and_the_base_names_the_default() {
    let text = SWEEP
        .replace("[\"sleep\", \"0.0{n}\"]", "[\"{n}\", \"x\"]")
        .replace("[\"1\", \"2\", \"5\"]", "[\"true\", \"false\"]")
        .replace("[\"sleep\", \"0.01\"]", "[\"true\", \"x\"]");
    let spec = parse(&text).unwrap();
    assert_eq!(spec.argv_of(&spec.arms[1]), ["false", "x"]);
    assert_eq!(spec.default_program(), "true");
}

#[test]
fn a_parameter_missing_from_the_command_is_refused_at_its_line_with_the_fix() {
    let e = refused(&SWEEP.replace("0.0{n}", "0.01"));
    assert_eq!(e.line, Some(7), "{e}");
    assert!(e.message.contains("no word of command holds {n}"), "{e}");
    assert!(e.fix.contains("write {n} in command"), "{e}");
    let e = refused(&SWEEP.replace("{n}", "{m}"));
    assert!(e.message.contains("holds {n}"), "{e}");
}

#[test]
fn a_parameter_name_is_letters_digits_and_underscores() {
    let e = refused(&SWEEP.replace("parameter = \"n\"", "parameter = \"a b\""));
    assert_eq!(e.line, Some(7), "{e}");
    assert!(e.message.contains("letters, digits and _"), "{e}");
}

#[test]
fn a_declared_arm_that_would_run_the_placeholder_is_refused_with_its_argv_written_out() {
    let e = refused(&SWEEP.replace("command = [\"sleep\", \"0.01\"]\n", ""));
    assert_eq!(e.line, Some(11), "{e}");
    assert!(
        e.message.contains("arm \"again\" runs {n} unreplaced"),
        "{e}"
    );
    assert!(
        e.fix.contains("command = [\"sleep\", \"0.01\"]"),
        "the fix writes the first value out: {e}"
    );
    let e = refused(&SWEEP.replace("\"0.01\"]", "\"0.0{n}\"]"));
    assert_eq!(e.line, Some(13), "{e}");
}

#[test]
fn prepare_setup_and_cleanup_do_not_take_the_values() {
    for key in ["prepare", "setup", "cleanup"] {
        let text = SWEEP.replace(
            "passes = 4",
            &format!("passes = 4\n{key} = [\"touch\", \"{{n}}\"]"),
        );
        let e = refused(&text);
        assert_eq!(e.line, Some(5), "{key}: {e}");
        assert!(e.message.contains(&format!("{key} holds {{n}}")), "{e}");
    }
}

#[test]
fn a_parameter_scan_takes_values_and_nothing_else() {
    let e = refused(&SWEEP.replace("parameter = \"n\"", "parameter = \"n\"\nenv = \"N\""));
    assert!(e.message.contains("parameter and values"), "{e}");
    let e = refused(&SWEEP.replace("values = [\"1\", \"2\", \"5\"]", "args = [[\"1\"]]"));
    assert!(e.message.contains("parameter and values"), "{e}");
    let e = refused(&SWEEP.replace("[\"1\", \"2\", \"5\"]", "[\"1\"]"));
    assert!(e.message.contains("at least two values"), "{e}");
}

#[test]
fn show_output_keeps_stdout_unless_told_to_discard_it_which_is_refused() {
    let shown = SWEEP.replace("passes = 4", "passes = 4\nshow_output = true");
    let spec = parse(&shown).unwrap();
    assert!(spec.shows_output());
    assert_eq!(spec.stdout_mode(), StdoutMode::Keep);
    assert_eq!(parse(SWEEP).unwrap().stdout_mode(), StdoutMode::Discard);
    let e = refused(&shown.replace("passes = 4", "passes = 4\nstdout = \"discard\""));
    assert_eq!(e.line, Some(5), "{e}");
    assert!(e.message.contains("show_output"), "{e}");
}
