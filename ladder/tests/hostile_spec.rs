//! Specs that ask for what the runner could only find out mid-run, or never: each is refused
//! by `Spec::parse`, before any file exists, with the spec's line and the rule.

mod common;

use common::DEMO_SPEC as GOOD;
use ladder::spec::{Spec, SpecError};
use std::path::Path;

fn refused(text: &str) -> SpecError {
    Spec::parse(Path::new("ladders/demo.toml"), text).expect_err("the spec should be refused")
}

#[test]
fn the_good_spec_parses() {
    Spec::parse(Path::new("ladders/demo.toml"), GOOD).unwrap();
}

#[test]
fn absurd_passes_are_refused_with_the_limit() {
    for passes in ["1000000000000", "9223372036854775807", "50001"] {
        let e = refused(&GOOD.replace("passes = 4", &format!("passes = {passes}")));
        assert_eq!(e.line, Some(3), "{e}");
        assert!(e.message.contains("limit of 100000 cells"), "{e}");
    }
}

#[test]
fn absurd_timeouts_are_refused_with_the_limit() {
    for timeout in ["1e20", "604801", "inf", "nan"] {
        let e = refused(&GOOD.replace("passes = 4", &format!("passes = 4\ntimeout_s = {timeout}")));
        assert_eq!(e.line, Some(4), "{e}");
        assert!(e.message.contains("7 days"), "{e}");
    }
}

#[test]
fn a_ladder_name_is_a_safe_file_name_part() {
    for name in ["../x", "/tmp/x", "", "a/b", "..", ".x", "a\\u0001b"] {
        let e = refused(&GOOD.replace("name = \"demo\"", &format!("name = \"{name}\"")));
        assert_eq!(e.line, Some(1), "{name}: {e}");
        assert!(
            e.message.contains("letters, digits, '.', '_' and '-'"),
            "{e}"
        );
    }
}

#[test]
fn arm_names_stay_on_one_line() {
    for name in ["a\\nb", "  ", "tab\\there", "nul\\u0000"] {
        let e = refused(&GOOD.replace("name = \"on\"", &format!("name = \"{name}\"")));
        assert_eq!(e.line, Some(14), "{name}: {e}");
        assert!(e.message.contains("one line"), "{e}");
    }
}

#[test]
fn environment_names_and_values_reach_the_engine_unchanged() {
    let e = refused(&GOOD.replace("COMMON = \"1\"", "\"A=B\" = \"1\""));
    assert!(e.message.contains("'='") && e.line == Some(6), "{e}");
    let e = refused(&GOOD.replace("COMMON = \"1\"", "\"\" = \"1\""));
    assert!(e.message.contains("empty name") && e.line == Some(5), "{e}");
    let e = refused(&GOOD.replace("MODE = \"on\"", "MODE = \"o\\u0000n\""));
    assert!(e.message.contains("NUL") && e.line == Some(15), "{e}");
}

#[test]
fn argv_words_have_no_nul_and_the_program_is_named() {
    let e = refused(&GOOD.replace("[\"engine\", \"bench\"]", "[\"engine\", \"be\\u0000nch\"]"));
    assert!(e.message.contains("NUL") && e.line == Some(2), "{e}");
    let e = refused(&GOOD.replace("[\"engine\", \"bench\"]", "[\"\"]"));
    assert!(
        e.message.contains("empty program name") && e.line == Some(2),
        "{e}"
    );
}

#[test]
fn a_metric_declared_twice_is_refused_at_its_second_line() {
    let e = refused(&format!(
        "{GOOD}\n[[metric]]\ncolumn = \"tok_s\"\nbetter = \"lower\"\n"
    ));
    assert!(e.message.contains("declared twice"), "{e}");
    assert_eq!(e.line, Some(22), "{e}");
}

#[test]
fn unknown_tables_missing_bases_and_blank_arm_names_get_lines() {
    let e = refused(&format!("{GOOD}\n[surprise]\nx = 1\n"));
    assert!(e.message.contains("surprise"), "{e}");
    assert_eq!(e.line, Some(21), "{e}");
    let e = refused(&GOOD.replace("role = \"base\"\n", ""));
    assert!(e.message.contains("no arm has role"), "{e}");
    assert_eq!(e.line, Some(8), "{e}");
    let e = refused(&GOOD.replace("name = \"on\"", "name = \"   \""));
    assert_eq!(e.line, Some(14), "{e}");
}
