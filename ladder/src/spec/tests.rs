use super::*;
use std::path::Path;

const GOOD: &str = r#"
name = "demo"
command = ["engine", "bench"]
passes = 4
noise_limit_pct = 0.5

[env]
COMMON = "1"

[[arm]]
name = "off"
role = "base"
env = { MODE = "off" }

[[arm]]
name = "on"
env = { MODE = "on" }

[[metric]]
column = "tok_s"
better = "higher"
"#;

fn parse(text: &str) -> Result<Spec, SpecError> {
    Spec::parse(Path::new("ladders/demo.toml"), text)
}

#[test]
fn a_good_spec_parses_with_defaults() {
    let spec = parse(GOOD).unwrap();
    assert_eq!(spec.warmup_passes, 1);
    assert_eq!(spec.order, Scheme::Rotate);
    assert_eq!(spec.replication_limit_pp, 0.15);
    assert_eq!(spec.arms[1].role, Role::Arm);
    assert_eq!(spec.base().unwrap().name, "off");
}

fn error_of(text: &str) -> SpecError {
    parse(text).expect_err("the spec should be refused")
}

#[test]
fn an_unknown_key_names_its_line_and_a_suggestion() {
    let e = error_of(&GOOD.replace("passes = 4", "pases = 4"));
    assert_eq!(e.line, Some(4));
    assert!(e.message.contains("pases"), "{e}");
    assert!(e.fix.contains("`passes`"), "{e}");
    let e = error_of(&GOOD.replace("better = \"higher\"", "beter = \"higher\""));
    assert!(
        e.message.contains("[[metric]]") && e.fix.contains("`better`"),
        "{e}"
    );
}

#[test]
fn base_arms_must_be_exactly_one() {
    let e = error_of(&GOOD.replace("role = \"base\"\n", ""));
    assert!(e.message.contains("no arm has role"), "{e}");
    let e = error_of(&GOOD.replace("name = \"on\"", "name = \"on\"\nrole = \"base\""));
    assert!(e.message.contains("two base arms"), "{e}");
    assert_eq!(e.line, Some(17));
}

#[test]
fn duplicate_arm_names_point_at_the_second() {
    let e = error_of(&GOOD.replace("name = \"on\"", "name = \"off\""));
    assert!(e.message.contains("two arms are named \"off\""), "{e}");
    assert_eq!(e.line, Some(16));
}

#[test]
fn an_arm_may_not_shadow_the_common_env() {
    let e = error_of(&GOOD.replace("MODE = \"on\"", "COMMON = \"2\""));
    assert!(e.message.contains("COMMON"), "{e}");
    assert_eq!(e.line, Some(17));
}

#[test]
fn two_analysis_passes_are_needed() {
    let e = error_of(&GOOD.replace("passes = 4", "passes = 2"));
    assert!(e.message.contains("leaves 1 analysis passes"), "{e}");
    assert!(e.fix.contains("at least 3"), "{e}");
}

#[test]
fn an_unknown_order_is_refused_with_its_line() {
    let e = error_of(&GOOD.replace("passes = 4", "passes = 4\norder = \"random\""));
    assert_eq!(e.line, Some(5));
    assert!(e.message.contains("random"), "{e}");
}

#[test]
fn reserved_variables_are_refused() {
    let e = error_of(&GOOD.replace("MODE = \"on\"", "LADDER_ARM = \"x\""));
    assert!(e.message.contains("LADDER_ARM"), "{e}");
}

#[test]
fn time_output_reads_the_wall_time_by_default() {
    let text = GOOD
        .replace("[[metric]]\ncolumn = \"tok_s\"\nbetter = \"higher\"\n", "")
        .replace("passes = 4", "passes = 4\noutput = \"time\"");
    let spec = parse(&text).unwrap();
    assert_eq!(spec.effective_metrics()[0].column, WALL_COLUMN);
    assert_eq!(spec.effective_metrics()[0].better, Better::Lower);
}

#[test]
fn the_spec_round_trips_through_json() {
    let spec = parse(GOOD).unwrap();
    let table: toml::Table = toml::from_str(GOOD).unwrap();
    let json = serde_json::to_value(&table).unwrap();
    assert_eq!(Spec::from_json(&json).unwrap(), spec);
}

#[test]
fn an_arm_with_command_and_args_is_refused_at_its_args_line() {
    let e = error_of(&GOOD.replace(
        "env = { MODE = \"on\" }",
        "env = { MODE = \"on\" }\ncommand = [\"b\"]\nargs = [\"-x\"]",
    ));
    assert!(e.message.contains("both `command` and `args`"), "{e}");
    assert_eq!(e.line, Some(19));
}

#[test]
fn an_empty_arm_command_is_refused() {
    let e = error_of(&GOOD.replace(
        "env = { MODE = \"on\" }",
        "env = { MODE = \"on\" }\ncommand = []",
    ));
    assert!(e.message.contains("empty `command`"), "{e}");
    assert_eq!(e.line, Some(18));
}

#[test]
fn arms_have_their_own_argv() {
    let spec = parse(
        &GOOD
            .replace("env = { MODE = \"on\" }", "args = [\"--fast\"]")
            .replace("env = { MODE = \"off\" }", "command = [\"other\", \"x\"]"),
    )
    .unwrap();
    assert_eq!(spec.argv_of(&spec.arms[0]), ["other", "x"]);
    assert_eq!(spec.argv_of(&spec.arms[1]), ["engine", "bench", "--fast"]);
}

const STOP: &str = "\n[stop]\nhalfwidth_pct = 0.5\nlooks = [4, 6]\n";

#[test]
fn stop_looks_must_increase() {
    let e = error_of(&format!(
        "{}{}",
        GOOD.replace("passes = 4\n", ""),
        STOP.replace("[4, 6]", "[6, 4]")
    ));
    assert!(e.message.contains("not increasing: 6 then 4"), "{e}");
    assert_eq!(e.line, Some(24));
}

#[test]
fn stop_looks_must_leave_three_analysis_passes() {
    let e = error_of(&format!(
        "{}{}",
        GOOD.replace("passes = 4\n", ""),
        STOP.replace("[4, 6]", "[3, 6]")
    ));
    assert!(
        e.message
            .contains("look 3 is not above warmup_passes + 2 = 3"),
        "{e}"
    );
    assert!(e.fix.contains("at 4"), "{e}");
    assert_eq!(e.line, Some(24));
}

#[test]
fn stop_passes_if_given_is_the_last_look() {
    let e = error_of(&format!("{GOOD}{STOP}"));
    assert!(
        e.message.contains("passes = 4, but the last look is 6"),
        "{e}"
    );
    assert_eq!(e.line, Some(4));
    let spec = parse(&format!("{}{}", GOOD.replace("passes = 4\n", ""), STOP)).unwrap();
    assert_eq!(spec.passes(), 6);
}

#[test]
fn stop_metrics_must_be_metrics_of_the_spec() {
    let base = GOOD.replace("passes = 4\n", "");
    let e = error_of(&format!("{base}{STOP}metrics = [\"tok\"]\n"));
    assert!(
        e.message
            .contains("[stop] metrics names \"tok\", which is not a [[metric]] column"),
        "{e}"
    );
    assert!(e.fix.contains("[\"tok_s\"]"), "{e}");
    assert_eq!(e.line, Some(25));
    let spec = parse(&format!("{base}{STOP}metrics = [\"tok_s\"]\n")).unwrap();
    let stop = spec.stop.unwrap();
    assert!(stop.sets_stop("tok_s") && !stop.sets_stop("other"));
}

#[test]
fn stop_needs_a_positive_halfwidth() {
    let e = error_of(&format!(
        "{}{}",
        GOOD.replace("passes = 4\n", ""),
        STOP.replace("0.5", "0")
    ));
    assert!(e.message.contains("halfwidth_pct = 0"), "{e}");
    assert_eq!(e.line, Some(23));
    let e = error_of(&format!(
        "{}{}",
        GOOD.replace("passes = 4\n", ""),
        STOP.replace("looks", "loks")
    ));
    assert!(e.fix.contains("`looks`"), "{e}");
}

#[test]
fn stop_within_s_is_a_positive_number_of_seconds() {
    let base = GOOD.replace("passes = 4\n", "");
    for bad in ["0", "-5", "nan"] {
        let e = error_of(&format!("{base}{STOP}within_s = {bad}\n"));
        assert!(e.message.contains("within_s"), "{e}");
        assert!(e.fix.contains("within_s = 240"), "{e}");
        assert_eq!(e.line, Some(25), "{e}");
    }
    let spec = parse(&format!("{base}{STOP}within_s = 240\n")).unwrap();
    assert_eq!(spec.stop.unwrap().within_s, Some(240.0));
    assert_eq!(
        parse(&format!("{base}{STOP}"))
            .unwrap()
            .stop
            .unwrap()
            .within_s,
        None
    );
}

#[test]
fn noise_limit_is_optional() {
    let spec = parse(&GOOD.replace("noise_limit_pct = 0.5\n", "")).unwrap();
    assert_eq!(spec.noise_limit_pct, None);
}

#[test]
fn cell_keys_refuse_empty_values_with_their_line() {
    for (line, key) in [
        ("prepare = []", "prepare"),
        ("setup = [\"\"]", "setup"),
        ("cleanup = []", "cleanup"),
        ("ok_exit = []", "ok_exit"),
        ("output_cap_mib = 0", "output_cap_mib"),
    ] {
        let e = error_of(&GOOD.replace("passes = 4", &format!("passes = 4\n{line}")));
        assert!(e.message.contains(key), "{e}");
        assert_eq!(e.line, Some(5), "{key}: {e}");
    }
    let spec = parse(&GOOD.replace("passes = 4", "passes = 4\nok_exit = [0, 1]")).unwrap();
    assert_eq!(spec.ok_exit_codes(), [0, 1]);
    assert_eq!(parse(GOOD).unwrap().ok_exit_codes(), [0]);
}

const SCAN: &str = r#"
name = "sweep"
command = ["zstd", "-c", "data"]
passes = 4

[scan]
env = "ZSTD_CLEVEL"
values = ["1", "3", "5"]

[[arm]]
name = "again"
role = "reflexive"
env = { ZSTD_CLEVEL = "1" }
"#;

#[test]
fn a_scan_makes_one_arm_per_value_the_first_the_base() {
    let text = SCAN.replace("passes = 4", "passes = 4\noutput = \"time\"");
    let spec = parse(&text).unwrap();
    let names: Vec<&str> = spec.arms.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["1", "3", "5", "again"]);
    assert_eq!(spec.base().unwrap().name, "1");
    assert_eq!(spec.arms[2].env["ZSTD_CLEVEL"], "5");
    // The analysis reads the same arms from the recorded spec.
    let json = serde_json::to_value(toml::from_str::<toml::Table>(&text).unwrap()).unwrap();
    assert_eq!(Spec::from_json(&json).unwrap().arms, spec.arms);
}

#[test]
fn scan_refusals_name_their_line() {
    let time = |t: &str| t.replace("passes = 4", "passes = 4\noutput = \"time\"");
    let e = error_of(&time(
        &SCAN.replace("values = [\"1\", \"3\", \"5\"]", "args = [[\"-1\"]]"),
    ));
    assert!(
        e.message
            .contains("one of: env and values, parameter and values, or args"),
        "{e}"
    );
    assert_eq!(e.line, Some(7));
    let e = error_of(&time(&SCAN.replace("[\"1\", \"3\", \"5\"]", "[\"1\"]")));
    assert!(e.message.contains("at least two values"), "{e}");
    assert_eq!(e.line, Some(9));
    let e = error_of(&time(
        &SCAN.replace("[\"1\", \"3\", \"5\"]", "[\"a b\", \"a/b\"]"),
    ));
    assert!(
        e.message
            .contains("values 1 and 2 both make the arm name \"a_b\""),
        "{e}"
    );
    assert_eq!(e.line, Some(7));
    let e = error_of(&time(&SCAN.replace("reflexive", "base")));
    assert!(e.message.contains("the first value is the base"), "{e}");
    assert_eq!(e.line, Some(13));
}

#[test]
fn stop_spread_is_per_arm_or_pooled() {
    let spec = format!("{}{}", GOOD.replace("passes = 4\n", ""), STOP);
    assert_eq!(
        parse(&spec).unwrap().stop.unwrap().spread,
        StopSpread::PerArm
    );
    let pooled = parse(&format!("{spec}spread = \"pooled\"\n")).unwrap();
    assert_eq!(pooled.stop.unwrap().spread, StopSpread::Pooled);
    let e = error_of(&format!("{spec}spread = \"pool\"\n"));
    assert_eq!(e.line, Some(25), "{e}");
    assert!(
        e.message.contains("per-arm") && e.message.contains("pooled"),
        "{e}"
    );
}

#[test]
fn a_metrics_own_noise_limit_parses_and_must_be_positive() {
    let own = GOOD.replace(
        "better = \"higher\"\n",
        "better = \"higher\"\nnoise_limit_pct = 5.0\n",
    );
    assert_eq!(parse(&own).unwrap().metrics[0].noise_limit_pct, Some(5.0));
    assert_eq!(parse(GOOD).unwrap().metrics[0].noise_limit_pct, None);
    let e = error_of(&own.replace("noise_limit_pct = 5.0", "noise_limit_pct = -1.0"));
    assert!(
        e.message.contains("\"tok_s\"") && e.message.contains("-1"),
        "{e}"
    );
    // The metric's line, not the spec's own noise_limit_pct on line 5.
    assert_eq!(e.line, Some(22), "{e}");
}
