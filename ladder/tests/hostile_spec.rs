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

/// A known-effect arm (METHOD.md "Controls") appended to the demo spec.
fn with_known(arm: &str) -> String {
    GOOD.replace("[[metric]]", &format!("{arm}\n[[metric]]"))
}

#[test]
fn a_known_effect_arm_carries_its_expected_effect_and_only_it_does() {
    let good =
        with_known("[[arm]]\nname = \"pad\"\nrole = \"known-effect\"\nexpected_pct = -4.762\n");
    let spec = Spec::parse(Path::new("ladders/demo.toml"), &good).unwrap();
    assert_eq!(spec.arms[2].expected_on("tok_s"), Some(-4.762));
    let per_metric = with_known(
        "[[arm]]\nname = \"pad\"\nrole = \"known-effect\"\nexpected_pct = { tok_s = -4.762 }\n",
    );
    let spec = Spec::parse(Path::new("ladders/demo.toml"), &per_metric).unwrap();
    assert!(spec.arms[2].controls("tok_s") && !spec.arms[2].controls("other"));

    let e = refused(&with_known(
        "[[arm]]\nname = \"pad\"\nrole = \"known-effect\"\n",
    ));
    assert_eq!(e.line, Some(18), "{e}");
    assert!(
        e.message.contains("no expected_pct") && e.fix.contains("expected_pct = -4.762"),
        "{e}"
    );
    let e = refused(&with_known("[[arm]]\nname = \"pad\"\nexpected_pct = 1.0\n"));
    assert_eq!(e.line, Some(19), "{e}");
    assert!(
        e.message.contains("has expected_pct but role = \"arm\""),
        "{e}"
    );
    let e = refused(&with_known(
        "[[arm]]\nname = \"pad\"\nrole = \"known-effect\"\nexpected_pct = { prefill = 1.0 }\n",
    ));
    assert!(
        e.message.contains("\"prefill\", which is not a metric") && e.fix.contains("tok_s"),
        "{e}"
    );
    let e = refused(&with_known(
        "[[arm]]\nname = \"pad\"\nrole = \"known-effect\"\nexpected_pct = -100.0\n",
    ));
    assert!(e.message.contains("above -100 %"), "{e}");
    let e = refused(&with_known(
        "[[arm]]\nname = \"pad\"\nrole = \"known-effect\"\nexpected_pct = -9.0\npad_pct = 10\n",
    ));
    assert_eq!(e.line, Some(21), "{e}");
    assert!(e.message.contains("needs output = \"time\""), "{e}");
}

#[test]
fn a_runner_pad_is_a_positive_percent_of_a_time_ladder() {
    let time = GOOD
        .replace("passes = 4", "passes = 4\noutput = \"time\"")
        .replace(
        "[[metric]]\ncolumn = \"tok_s\"\nbetter = \"higher\"\n",
        "[[arm]]\nname = \"pad\"\nrole = \"known-effect\"\nexpected_pct = -9.0909\npad_pct = 10\n",
    );
    let spec = Spec::parse(Path::new("ladders/demo.toml"), &time).unwrap();
    assert_eq!(spec.arms[2].pad_pct, Some(10.0));
    for bad in ["0", "-1", "inf", "1001"] {
        let e = refused(&time.replace("pad_pct = 10", &format!("pad_pct = {bad}")));
        assert!(
            e.message.contains("not a percent between 0 and 1000"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn an_empty_metric_column_is_refused_at_its_line() {
    let e = refused(&GOOD.replace("column = \"tok_s\"", "column = \"\""));
    assert_eq!(e.line, Some(18), "{e}");
    assert!(
        e.message.contains("empty column") && e.fix.contains("ladder_wall_s"),
        "{e}"
    );
}
