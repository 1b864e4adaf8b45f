use super::spec_text::toml_string;
use super::*;

fn request(commands: &[&str]) -> AbRequest {
    AbRequest {
        commands: commands.iter().map(|c| c.to_string()).collect(),
        names: None,
        env_a: Vec::new(),
        env_b: Vec::new(),
        passes: None,
        stop_halfwidth_pct: None,
        warmup: None,
        order: None,
        noise_limit_pct: None,
        output: OutputMode::Time,
        known_effect_pct: None,
        metrics: Vec::new(),
        higher_is_better: false,
        ok_exit: Vec::new(),
        prepare: None,
        setup: None,
        cleanup: None,
        shell: None,
        scan: None,
        show_output: false,
        exports: Exports::default(),
        out: PathBuf::from("raw"),
        tag: "t".into(),
    }
}

fn spec_of(r: &AbRequest) -> Spec {
    let spec = generate(r).unwrap();
    Spec::parse(&spec.path, &spec.text).unwrap()
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
    r.warmup = Some(3);
    let parsed = spec_of(&r);
    assert_eq!(parsed.stop.unwrap().looks, STOP_LOOKS);
    assert_eq!(parsed.name, "ab-one-two");
    assert_eq!(parsed.warmup_passes, 3);
}

#[test]
fn every_flag_is_a_key_of_the_spec() {
    let mut r = request(&["true x", "false"]);
    r.ok_exit = vec![1, 0, 1];
    r.prepare = Some("true prepare".into());
    r.setup = Some("true setup".into());
    r.cleanup = Some("true 'clean up'".into());
    r.warmup = Some(2);
    r.order = Some(Scheme::Shuffle);
    r.noise_limit_pct = Some(2.5);
    r.show_output = true;
    let spec = spec_of(&r);
    assert_eq!(spec.ok_exit, Some(vec![0, 1]));
    assert_eq!(spec.prepare.as_deref().unwrap(), ["true", "prepare"]);
    assert_eq!(spec.setup.as_deref().unwrap(), ["true", "setup"]);
    assert_eq!(spec.cleanup.as_deref().unwrap(), ["true", "clean up"]);
    assert_eq!(spec.warmup_passes, 2);
    assert_eq!(spec.order, Scheme::Shuffle);
    assert!(spec.seed.is_some());
    assert_eq!(spec.noise_limit_pct, Some(2.5));
    assert!(spec.shows_output());
}

#[test]
fn a_shell_runs_the_string_unsplit() {
    let mut r = request(&["true | true", "true $HOME"]);
    r.shell = Some(DEFAULT_SHELL.into());
    r.setup = Some("true > /dev/null".into());
    let spec = spec_of(&r);
    assert_eq!(spec.argv_of(&spec.arms[0]), ["sh", "-c", "true | true"]);
    assert_eq!(spec.argv_of(&spec.arms[1]), ["sh", "-c", "true $HOME"]);
    assert_eq!(spec.setup.unwrap(), ["sh", "-c", "true > /dev/null"]);
}

#[test]
fn a_parameter_scan_is_a_scan_of_the_one_command() {
    let mut r = request(&["sleep 0.0{n}"]);
    r.scan = Some(ScanRequest::Range {
        name: "n".into(),
        low: "1".into(),
        high: "3".into(),
        step: None,
    });
    r.known_effect_pct = Some(10.0);
    let spec = generate(&r).unwrap();
    assert_eq!(spec.path, Path::new("raw/ab-n_t.toml"));
    let parsed = Spec::parse(&spec.path, &spec.text).unwrap();
    let names: Vec<&str> = parsed.arms.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["1", "2", "3", "1-again", "1-known"]);
    assert_eq!(parsed.command, ["sleep", "0.0{n}"]);
    assert_eq!(parsed.argv_of(&parsed.arms[2]), ["sleep", "0.03"]);
    assert_eq!(parsed.argv_of(&parsed.arms[3]), ["sleep", "0.01"]);
    r.scan = Some(ScanRequest::List {
        name: "n".into(),
        values: "5,1".into(),
    });
    r.env_a = vec!["K=V".into()];
    let parsed = spec_of(&r);
    assert_eq!(parsed.argv_of(&parsed.arms[0]), ["sleep", "0.05"]);
    assert_eq!(parsed.env["K"], "V");
}

#[test]
fn ranges_count_from_the_low_end_with_the_decimals_given() {
    assert_eq!(range_values("1", "3", None).unwrap(), ["1", "2", "3"]);
    assert_eq!(
        range_values("0.1", "0.3", Some("0.1")).unwrap(),
        ["0.1", "0.2", "0.3"]
    );
    assert_eq!(
        range_values("0", "1", Some("0.25")).unwrap(),
        ["0.00", "0.25", "0.50", "0.75", "1.00"]
    );
    assert_eq!(range_values("-2", "0", None).unwrap(), ["-2", "-1", "0"]);
    assert!(range_values("0.5", "2", None)
        .unwrap_err()
        .contains("--parameter-step"));
    assert!(range_values("3", "1", None).unwrap_err().contains("swap"));
    assert!(range_values("1", "2", Some("0"))
        .unwrap_err()
        .contains("not positive"));
    assert!(range_values("1", "1000", None)
        .unwrap_err()
        .contains("at most 128"));
    assert!(range_values("x", "2", None)
        .unwrap_err()
        .contains("\"x\" is not a number"));
}

#[test]
fn bad_requests_say_which_command_or_flag() {
    let e = |cmds: &[&str]| generate(&request(cmds)).err().unwrap();
    assert!(e(&["true", "true 'x"]).starts_with("command 2 (\"true 'x\"): unbalanced single quote"));
    assert!(e(&["true", "  "]).contains("command 2 (\"  \") is empty"));
    assert!(e(&["no-such-program-abab", "true"]).contains("\"no-such-program-abab\" was not found"));
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
fn bad_flags_name_the_flag_and_the_fix() {
    let refused = |edit: &dyn Fn(&mut AbRequest)| {
        let mut r = request(&["true", "true"]);
        edit(&mut r);
        generate(&r).err().unwrap()
    };
    assert!(refused(&|r| r.warmup = Some(9)).contains("--warmup 9 leaves 1 analysis passes"));
    assert!(refused(&|r| {
        r.warmup = Some(4);
        r.stop_halfwidth_pct = Some(1.0);
    })
    .contains("give --warmup 3 or less"));
    assert!(refused(&|r| r.noise_limit_pct = Some(-1.0)).contains("--noise-limit -1"));
    assert!(refused(&|r| r.prepare = Some("no-such-program-abab".into())).contains("--prepare"));
    assert!(
        refused(&|r| r.exports.csv = Some("/no/such/folder/x.csv".into())).contains("--export-csv")
    );
    let scan = || ScanRequest::List {
        name: "n".into(),
        values: "1,2".into(),
    };
    assert!(refused(&|r| r.scan = Some(scan())).contains("takes one command"));
    let mut r = request(&["sleep 1"]);
    r.scan = Some(scan());
    assert!(generate(&r).err().unwrap().contains("does not hold {n}"));
    r.commands = vec!["sleep {n}".into()];
    r.names = Some("x".into());
    assert!(generate(&r).err().unwrap().contains("--name"));
    r.names = None;
    r.scan = Some(ScanRequest::List {
        name: "n".into(),
        values: "1,,2".into(),
    });
    assert!(generate(&r).err().unwrap().contains("value 2 is empty"));
    r.scan = Some(ScanRequest::List {
        name: "a b".into(),
        values: "1,2".into(),
    });
    assert!(generate(&r)
        .err()
        .unwrap()
        .contains("letters, digits and _"));
}

#[test]
fn toml_strings_escape() {
    assert_eq!(toml_string("a\"b\\c\u{7f}"), "\"a\\\"b\\\\c\\u007F\"");
}
