//! `ladder/2` end to end, against the stand-in engine in `examples/test_engine.rs`: arms that
//! are builds or carry their own arguments, cells as a user needs them, scans, `runner ab`
//! and precision stopping.

mod common;

use common::{copy_test_engine, runner, stderr, test_engine, RunDir};
use ladder::stop::Stopped;
use ladder::verify::{replay, DefectKind, Ladder};
use ladder::Spec;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh folder holding a copy of the test engine.
struct Bench {
    run_dir: RunDir,
    engine: PathBuf,
}

impl std::ops::Deref for Bench {
    type Target = RunDir;

    fn deref(&self) -> &RunDir {
        &self.run_dir
    }
}

impl Bench {
    fn new() -> Bench {
        let run_dir = RunDir::new("e2e");
        let engine = copy_test_engine(run_dir.dir.path());
        Bench { run_dir, engine }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A second build of the engine at `rel`: the same code, another built-in speed.
    fn build(&self, rel: &str, speed: u32) -> PathBuf {
        let bytes = std::fs::read(test_engine()).unwrap();
        let mark = b"SPEED_MARK:00100";
        let at = bytes
            .windows(mark.len())
            .position(|w| w == mark)
            .expect("the speed mark is in the binary");
        let mut patched = bytes.clone();
        patched[at..at + mark.len()].copy_from_slice(format!("SPEED_MARK:{speed:05}").as_bytes());
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, patched).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        path
    }

    /// Writes `body` as the spec `e2e.toml`; `{engine}` stands for the engine's path.
    fn spec(&self, body: &str) -> PathBuf {
        let path = self.path("e2e.toml");
        let text = format!(
            "name = \"e2e\"\n{}",
            body.replace("{engine}", &self.engine.display().to_string())
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    fn ladder(&self) -> Ladder {
        let replayed = replay(self.text().as_bytes());
        assert!(replayed.verdict.connected, "{:?}", replayed.verdict.defects);
        replayed.ladder.unwrap()
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const TOK_S: &str = "\n[[metric]]\ncolumn = \"tok_s\"\nbetter = \"higher\"\n";

#[test]
fn two_builds_are_two_arms_each_hashed_into_the_start_record() {
    let bench = Bench::new();
    let before = bench.build(".bin/before/engine", 100);
    let after = bench.build(".bin/after/engine", 150);
    let body = format!(
        "command = [\"{b}\", \"bench\"]\npasses = 3\n\n[[arm]]\nname = \"before\"\nrole = \"base\"\ncommand = [\"{b}\", \"bench\"]\n\n[[arm]]\nname = \"after\"\ncommand = [\"{a}\", \"bench\"]\n{TOK_S}",
        b = before.display(),
        a = after.display()
    );
    let out = bench.run(&bench.spec(&body));
    assert!(out.status.success(), "{}", stderr(&out));
    let ladder = bench.ladder();
    assert_eq!(ladder.start.format, "ladder/2");
    let arm = |i: usize| ladder.start.arms[i].binary.clone().unwrap();
    assert_eq!(arm(0).blake3, common::hash(&before));
    assert_eq!(arm(1).blake3, common::hash(&after));
    assert_ne!(arm(0).blake3, arm(1).blake3);
    assert_eq!(ladder.start.arms[1].argv.as_ref().unwrap()[1], "bench");
    let speed = |arm: &str| {
        common::column(&ladder, "tok_s", arm)[0]
            .parse::<f64>()
            .unwrap()
    };
    assert!((speed("before") - 100.0).abs() < 1.0 && (speed("after") - 150.0).abs() < 1.0);
}

/// A shell script at `rel` that prints a one-row CSV (`printf` format `csv`).
fn script(bench: &Bench, rel: &str, csv: &str) -> PathBuf {
    let path = bench.path(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, format!("#!/bin/sh\nprintf '{csv}'\n")).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

fn builds_spec(before: &Path, after: &Path) -> String {
    format!(
        "command = [\"{b}\"]\noutput = \"csv\"\npasses = 3\n\n[[arm]]\nname = \"before\"\nrole = \"base\"\ncommand = [\"{b}\"]\n\n[[arm]]\nname = \"after\"\ncommand = [\"{a}\"]\n{TOK_S}",
        b = before.display(),
        a = after.display()
    )
}

#[test]
fn a_build_whose_output_gained_and_lost_columns_is_stored_by_column_name() {
    let bench = Bench::new();
    let before = script(&bench, "before.sh", "tok_s,old\\n100,x\\n");
    let after = script(&bench, "after.sh", "new,tok_s,more\\ny,150,z\\n");
    let out = bench.run(&bench.spec(&builds_spec(&before, &after)));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("arm after runs another binary")
            && stderr(&out).contains("new, more")
            && stderr(&out).matches("arm after runs").count() == 1,
        "{}",
        stderr(&out)
    );
    let ladder = bench.ladder();
    assert_eq!(common::column(&ladder, "tok_s", "after"), ["150"; 3]);
    assert_eq!(common::column(&ladder, "tok_s", "before"), ["100"; 3]);
    assert_eq!(common::column(&ladder, "old", "after"), [""; 3]);
    assert!(ladder.column("new").is_none());
}

#[test]
fn one_binary_that_changes_its_columns_aborts_and_a_build_must_print_the_metric() {
    let bench = Bench::new();
    let moody = bench.path("moody.sh");
    std::fs::write(
        &moody,
        "#!/bin/sh\nif [ \"$LADDER_ARM\" = b ]; then printf 'x,tok_s\\n1,2\\n'; else printf 'tok_s\\n2\\n'; fi\n",
    )
    .unwrap();
    std::fs::set_permissions(&moody, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let body = format!(
        "command = [\"{m}\"]\noutput = \"csv\"\npasses = 3\n\n[[arm]]\nname = \"a\"\nrole = \"base\"\n\n[[arm]]\nname = \"b\"\n{TOK_S}",
        m = moody.display()
    );
    let out = bench.run(&bench.spec(&body));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "(arm b) printed the columns [\"x\", \"tok_s\"], the first cell printed [\"tok_s\"]"
        ),
        "{}",
        stderr(&out)
    );
    let bench = Bench::new();
    let before = script(&bench, "before.sh", "tok_s\\n100\\n");
    let after = script(&bench, "after.sh", "speed\\n150\\n");
    let out = bench.run(&bench.spec(&builds_spec(&before, &after)));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("(arm after)")
            && stderr(&out).contains("the column \"tok_s\" is not among"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn args_arms_append_to_the_command_and_start_up_bytes_stay_equal() {
    let bench = Bench::new();
    let longer = bench.build("a/much/longer/folder/name/engine", 100);
    let body = format!(
        "command = [\"{{engine}}\", \"bench\"]\npasses = 3\n\n[[arm]]\nname = \"plain\"\nrole = \"base\"\n\n[[arm]]\nname = \"flagged\"\nargs = [\"--a-much-longer-flag\", \"with a value\"]\n\n[[arm]]\nname = \"elsewhere\"\ncommand = [\"{}\", \"x\"]\n{TOK_S}\n[[metric]]\ncolumn = \"ladder_maxrss_kib\"\nbetter = \"lower\"\n",
        longer.display()
    );
    let out = bench.run(&bench.spec(&body));
    assert!(out.status.success(), "{}", stderr(&out));
    let ladder = bench.ladder();
    assert_eq!(
        common::column(&ladder, "args", "flagged")[0],
        "bench+--a-much-longer-flag+with a value"
    );
    assert_eq!(common::column(&ladder, "args", "plain")[0], "bench");
    assert_eq!(common::column(&ladder, "args", "elsewhere")[0], "x");
    let c = ladder.column("start_bytes").unwrap();
    let sizes: Vec<&str> = ladder
        .rows
        .iter()
        .map(|r| r.fields.get(c).unwrap())
        .collect();
    assert!(
        sizes.iter().all(|s| *s == sizes[0]),
        "argv plus environment differ in size: {sizes:?}"
    );
    // The child's resource usage is in every row, and can be a metric.
    for name in ["ladder_user_s", "ladder_sys_s"] {
        assert!(
            common::column(&ladder, name, "plain")[0]
                .parse::<f64>()
                .unwrap()
                >= 0.0
        );
    }
    assert!(
        common::column(&ladder, "ladder_maxrss_kib", "plain")[0]
            .parse::<i64>()
            .unwrap()
            > 0
    );
}

#[test]
fn an_arm_binary_replaced_mid_run_aborts_with_binary_changed() {
    let bench = Bench::new();
    let after = bench.build("after/engine", 120);
    let body = format!(
        "command = [\"{{engine}}\"]\npasses = 3\n\n[[arm]]\nname = \"before\"\nrole = \"base\"\n\n[[arm]]\nname = \"after\"\ncommand = [\"{}\"]\nenv = {{ TEST_REPLACE_AT = \"0:1\" }}\n{TOK_S}",
        after.display()
    );
    let out = bench.run(&bench.spec(&body));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let last = bench.text().lines().last().unwrap().to_string();
    assert!(
        last.starts_with("#ladder-abort ") && last.contains("binary-changed"),
        "{last}"
    );
    assert!(
        last.contains("after/engine") && last.contains("before pass 1 slot 0"),
        "{last}"
    );
}

#[test]
fn binary_stdout_in_time_mode_is_discarded_or_kept_capped() {
    let bench = Bench::new();
    let body = "command = [\"{engine}\"]\noutput = \"time\"\npasses = 3\n\n[env]\nTEST_BINARY_STDOUT = \"3000000\"\n\n[[arm]]\nname = \"a\"\nrole = \"base\"\n\n[[arm]]\nname = \"b\"\n";
    let spec = bench.spec(body);
    let out = bench.run(&spec);
    assert!(out.status.success(), "{}", stderr(&out));
    bench.ladder();
    let log = bench.out().join("e2e_t.stderr.log");
    assert!(
        std::fs::metadata(&log).unwrap().len() < 10_000,
        "discarded stdout reached the side log"
    );
    std::fs::remove_dir_all(bench.out()).unwrap();
    std::fs::write(
        &spec,
        std::fs::read_to_string(&spec)
            .unwrap()
            .replace("passes = 3", "passes = 3\nstdout = \"keep\""),
    )
    .unwrap();
    let out = bench.run(&spec);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read(&log).unwrap();
    let text = String::from_utf8_lossy(&log);
    assert_eq!(text.matches("--- stdout (3000000 bytes):").count(), 6);
    assert_eq!(text.matches("bytes left out").count(), 6);
    assert!(log.len() < 6 * (1 << 20) + 10_000, "{} bytes", log.len());
}

#[test]
fn ok_exit_lets_a_legitimate_exit_code_count_as_success() {
    let bench = Bench::new();
    let body = "command = [\"{engine}\"]\noutput = \"time\"\npasses = 3\nok_exit = [0, 1]\n\n[env]\nTEST_EXIT = \"1\"\n\n[[arm]]\nname = \"a\"\nrole = \"base\"\n\n[[arm]]\nname = \"b\"\n";
    let spec = bench.spec(body);
    let out = bench.run(&spec);
    assert!(out.status.success(), "{}", stderr(&out));
    let ladder = bench.ladder();
    assert_eq!(common::column(&ladder, "ladder_exit", "b"), ["1", "1", "1"]);
    std::fs::remove_dir_all(bench.out()).unwrap();
    std::fs::write(
        &spec,
        std::fs::read_to_string(&spec)
            .unwrap()
            .replace("ok_exit = [0, 1]\n", ""),
    )
    .unwrap();
    let out = bench.run(&spec);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "exited with status 1 (ok_exit: [0]); if 1 means success for this program, add ok_exit = [0, 1] to the spec"
        ),
        "{}",
        stderr(&out)
    );
}

fn steps_spec(bench: &Bench, extra_env: &str) -> PathBuf {
    let log = bench.path("steps.log");
    bench.spec(&format!(
        "command = [\"{{engine}}\"]\npasses = 3\nprepare = [\"{{engine}}\", \"prepare\"]\nsetup = [\"{{engine}}\", \"setup\"]\ncleanup = [\"{{engine}}\", \"cleanup\"]\n\n[env]\nTEST_STEP_LOG = \"{}\"\nTEST_STEP_MS = \"300\"\n{extra_env}\n[[arm]]\nname = \"a\"\nrole = \"base\"\n\n[[arm]]\nname = \"b\"\n{TOK_S}",
        log.display()
    ))
}

#[test]
fn prepare_runs_before_every_cell_untimed_and_setup_and_cleanup_once() {
    let bench = Bench::new();
    let out = bench.run(&steps_spec(&bench, ""));
    assert!(out.status.success(), "{}", stderr(&out));
    let ladder = bench.ladder();
    let (step, wall) = (
        ladder.column("step").unwrap(),
        ladder.column("ladder_wall_s").unwrap(),
    );
    for row in &ladder.rows {
        assert_eq!(
            row.fields.get(step).unwrap(),
            format!("prepare {}:{}", row.pass, row.slot)
        );
        let wall_s: f64 = row.fields.get(wall).unwrap().parse().unwrap();
        assert!(
            wall_s < 0.3,
            "the prepare step's 300 ms were timed: {wall_s}"
        );
    }
    let steps = std::fs::read_to_string(bench.path("steps.log")).unwrap();
    let names: Vec<&str> = steps
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(names.first(), Some(&"setup"));
    assert_eq!(names.last(), Some(&"cleanup"));
    assert_eq!(names.iter().filter(|n| **n == "prepare").count(), 6);
}

#[test]
fn cleanup_runs_after_an_abort() {
    let bench = Bench::new();
    let out = bench.run(&steps_spec(&bench, "TEST_FAIL_AT = \"1:0\"\n"));
    assert_eq!(out.status.code(), Some(1));
    let steps = std::fs::read_to_string(bench.path("steps.log")).unwrap();
    assert!(
        steps.lines().last().unwrap().starts_with("cleanup"),
        "{steps}"
    );
}

#[test]
fn a_failing_prepare_aborts_the_ladder() {
    let bench = Bench::new();
    let body = "command = [\"{engine}\"]\npasses = 3\nprepare = [\"false\"]\n\n[[arm]]\nname = \"a\"\nrole = \"base\"\n\n[[arm]]\nname = \"b\"\n".to_string() + TOK_S;
    let out = bench.run(&bench.spec(&body));
    assert_eq!(out.status.code(), Some(1));
    let last = bench.text().lines().last().unwrap().to_string();
    assert!(
        last.contains("prepare before pass 0 slot 0") && last.contains("ended with 1"),
        "{last}"
    );
}

#[test]
fn a_scan_runs_one_arm_per_value() {
    let bench = Bench::new();
    let body = format!("command = [\"{{engine}}\"]\npasses = 3\n\n[scan]\nenv = \"TEST_SPEED\"\nvalues = [\"100\", \"125\", \"150.5\"]\n\n[[arm]]\nname = \"again\"\nrole = \"reflexive\"\nenv = {{ TEST_SPEED = \"100\" }}\n{TOK_S}");
    let out = bench.run(&bench.spec(&body));
    assert!(out.status.success(), "{}", stderr(&out));
    let ladder = bench.ladder();
    let names: Vec<&str> = ladder.start.arms.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["100", "125", "150.5", "again"]);
    assert_eq!(ladder.start.arms[0].role, ladder::Role::Base);
    assert!(common::column(&ladder, "tok_s", "125")[0].starts_with("125"));
}

fn ab(dir: &Path, runner: &Path, args: &[&str]) -> Output {
    Command::new(runner)
        .arg("ab")
        .args(args)
        .args(["--tag", "t", "--out"])
        .arg(dir.join("raw"))
        .output()
        .unwrap()
}

#[test]
fn runner_ab_with_two_commands_writes_spec_and_ladder_and_prints_how_to_repeat() {
    let bench = Bench::new();
    let engine = bench.engine.display().to_string();
    let (a, b) = (format!("{engine} 'one arg'"), format!("{engine} -x"));
    let out = ab(
        bench.dir.path(),
        Path::new(runner()),
        &[
            &a,
            &b,
            "--passes",
            "3",
            "--name",
            "one,two",
            "--env-b",
            "TEST_SPEED=90",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let spec = bench.path("raw/ab-one-two_t.toml");
    let file = bench.path("raw/ab-one-two_t.csv");
    let ladder = replay(&std::fs::read(&file).unwrap()).ladder.unwrap();
    assert!(replay(&std::fs::read(&file).unwrap()).verdict.connected);
    assert_eq!(ladder.start.spec_blake3, common::hash(&spec));
    let names: Vec<&str> = ladder.start.arms.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["one", "two", "one-again"]);
    assert_eq!(ladder.start.arms[0].argv.as_ref().unwrap()[1], "one arg");
    assert_eq!(ladder.start.arms[1].env["TEST_SPEED"], "90");
    assert_eq!(ladder.start.arms[2].role, ladder::Role::Reflexive);
    let text = stdout(&out);
    assert!(
        text.lines().any(|l| l.starts_with("reproduce:")
            && l.ends_with(&format!(
                " runner run {} --out {}",
                spec.display(),
                bench.out().display()
            ))),
        "{text}"
    );
    // The spec it wrote runs again as it is.
    assert!(Spec::load(&spec).is_ok());
}

#[test]
fn runner_ab_with_three_commands_reads_the_ladder_itself_without_analyze() {
    let bench = Bench::new();
    // A runner with no `analyze` beside it.
    let lone = bench.path("bin/runner");
    std::fs::create_dir_all(lone.parent().unwrap()).unwrap();
    std::fs::copy(runner(), &lone).unwrap();
    let engine = bench.engine.display().to_string();
    let commands = [
        format!("{engine} a"),
        format!("{engine} bb"),
        format!("{engine} ccc"),
    ];
    let out = ab(
        bench.dir.path(),
        &lone,
        &[
            &commands[0],
            &commands[1],
            &commands[2],
            "--output",
            "csv",
            "--metric",
            "tok_s",
            "--higher",
            "--passes",
            "3",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("analyze was not found beside the runner"),
        "{text}"
    );
    assert!(
        text.contains("tok_s (higher is better; paired, geometric mean, 95 % t interval)"),
        "{text}"
    );
    for arm in ["b ", "c ", "a-again "] {
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(arm) && l.contains("+0.0 % [+0.0, +0.0]")),
            "{arm}: {text}"
        );
    }
    let ladder = replay(&std::fs::read(bench.path("raw/ab-a-b-c_t.csv")).unwrap())
        .ladder
        .unwrap();
    assert_eq!(ladder.start.arms.len(), 4);
}

#[test]
fn a_bad_runner_ab_says_what_is_wrong_and_writes_nothing() {
    let bench = Bench::new();
    let engine = bench.engine.display().to_string();
    for (args, expected) in [
        (vec![format!("{engine} 'open"), engine.clone()], "command 1"),
        (
            vec![engine.clone(), "   ".to_string()],
            "command 2 (\"   \") is empty",
        ),
        (
            vec![engine.clone(), "no-such-program-abab -x".to_string()],
            "\"no-such-program-abab\" was not found",
        ),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = ab(bench.dir.path(), Path::new(runner()), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(expected), "{}", stderr(&out));
        assert!(!bench.out().exists(), "a file was written for {args:?}");
    }
    let out = ab(
        bench.dir.path(),
        Path::new(runner()),
        &[&format!("{engine} 'open"), &engine],
    );
    assert!(
        stderr(&out).contains("unbalanced single quote"),
        "{}",
        stderr(&out)
    );
}

fn stop_spec(bench: &Bench, noise_pct: f64, halfwidth: f64) -> PathBuf {
    bench.spec(&format!(
        "command = [\"{{engine}}\"]\n\n[env]\nTEST_NOISE_PCT = \"{noise_pct}\"\n\n[stop]\nhalfwidth_pct = {halfwidth}\nlooks = [4, 6, 8]\n\n[[arm]]\nname = \"a\"\nrole = \"base\"\n\n[[arm]]\nname = \"b\"\nenv = {{ TEST_SPEED = \"105\" }}\n{TOK_S}"
    ))
}

fn done_record(text: &str) -> serde_json::Value {
    let last = text.lines().last().unwrap();
    serde_json::from_str(last.strip_prefix("#ladder-done ").expect("a done record")).unwrap()
}

#[test]
fn a_stop_ladder_ends_at_the_first_look_that_meets_the_width() {
    let bench = Bench::new();
    let out = bench.run(&stop_spec(&bench, 0.2, 1.0));
    assert!(out.status.success(), "{}", stderr(&out));
    let done = done_record(&bench.text());
    assert_eq!(
        (
            done["passes"].as_u64(),
            done["cells"].as_u64(),
            done["stopped"].as_str()
        ),
        (Some(4), Some(8), Some("precision"))
    );
    let ladder = bench.ladder();
    let spec = Spec::from_json(&ladder.start.spec).unwrap();
    let plan = ladder.stop_plan(&spec).unwrap();
    assert_eq!((plan.look, plan.stopped), (4, Stopped::Precision));
    assert_eq!(ladder.start.order.looks, Some(vec![4, 6, 8]));
    assert!(
        stdout(&out).contains("look 4 (3 analysis passes) reaches it"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("set by tok_s of arm b"),
        "{}",
        stderr(&out)
    );
    // The same cells with a half-width that needs 4 analysis passes: the first look's 3 do
    // not reach it, the second look's 5 do.
    let halfwidth = 100.0 * ((1.01f64.ln() * (plan.need.passes / 4.0).sqrt()).exp() - 1.0);
    let bench = Bench::new();
    let out = bench.run(&stop_spec(&bench, 0.2, halfwidth));
    assert!(out.status.success(), "{}", stderr(&out));
    let done = done_record(&bench.text());
    assert_eq!(
        (done["passes"].as_u64(), done["stopped"].as_str()),
        (Some(6), Some("precision")),
        "half-width {halfwidth}"
    );
    assert!(
        stderr(&out).contains("pass 4 slot 0 (arm a) [6 passes planned, set by tok_s of b]"),
        "{}",
        stderr(&out)
    );
    bench.ladder();
}

#[test]
fn a_stop_ladder_whose_width_is_never_met_runs_to_the_last_look() {
    let bench = Bench::new();
    let out = bench.run(&stop_spec(&bench, 10.0, 0.1));
    assert!(out.status.success(), "{}", stderr(&out));
    let done = done_record(&bench.text());
    assert_eq!(
        (done["passes"].as_u64(), done["stopped"].as_str()),
        (Some(8), Some("max-passes"))
    );
    bench.ladder();
}

/// `stop_spec` with `within_s` under its `[stop]`.
fn stop_spec_within(bench: &Bench, noise_pct: f64, halfwidth: f64, within_s: &str) -> PathBuf {
    let spec = stop_spec(bench, noise_pct, halfwidth);
    let text = std::fs::read_to_string(&spec).unwrap().replace(
        "looks = [4, 6, 8]\n",
        &format!("looks = [4, 6, 8]\nwithin_s = {within_s}\n"),
    );
    std::fs::write(&spec, text).unwrap();
    spec
}

#[test]
fn within_s_ends_a_stop_ladder_at_the_look_its_own_cells_can_pay_for() {
    // Never precise (10 % noise, ±0.1 %): without a limit it runs to its last look, 8.
    let bench = Bench::new();
    let out = bench.run(&stop_spec_within(&bench, 10.0, 0.1, "1e6"));
    assert!(out.status.success(), "{}", stderr(&out));
    let done = done_record(&bench.text());
    assert_eq!(
        (done["passes"].as_u64(), done["stopped"].as_str()),
        (Some(8), Some("max-passes"))
    );
    // A microsecond of cells: no look after the first fits, so it stops there.
    let bench = Bench::new();
    let out = bench.run(&stop_spec_within(&bench, 10.0, 0.1, "0.000001"));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = bench.text();
    let done = done_record(&text);
    assert_eq!(
        (
            done["passes"].as_u64(),
            done["cells"].as_u64(),
            done["stopped"].as_str()
        ),
        (Some(4), Some(8), Some("within"))
    );
    assert!(
        stderr(&out).contains("within_s = 0.000001 s of cells ends it at look 4"),
        "{}",
        stderr(&out)
    );
    let ladder = bench.ladder();
    let spec = Spec::from_json(&ladder.start.spec).unwrap();
    let plan = ladder.stop_plan(&spec).unwrap();
    assert_eq!((plan.look, plan.stopped), (4, Stopped::Within));
    // The words price a pass as within_s does: the first look's cell walls as written, not
    // the runner's clock (which counts the runner's own time between cells too).
    let wall = ladder.column("ladder_wall_s").unwrap();
    let cells: f64 = ladder
        .rows
        .iter()
        .map(|r| r.fields.get(wall).unwrap().parse::<f64>().unwrap())
        .sum();
    let err = stderr(&out);
    let said: f64 = err
        .split_once("of cells at ")
        .and_then(|(_, rest)| rest.split_once(" s a pass"))
        .map(|(n, _)| n.parse().unwrap())
        .unwrap_or_else(|| panic!("no pass price in {err}"));
    assert!(
        (said - cells / 4.0).abs() < 6e-4,
        "{said} against {cells} / 4"
    );
    // The same file with the limit taken out of its recorded spec: the rule gives look 8,
    // and verify says the file ended early.
    let (first, rest) = text.split_once('\n').unwrap();
    let mut start: serde_json::Value =
        serde_json::from_str(first.strip_prefix("#ladder-start ").unwrap()).unwrap();
    let stop = start["spec"]["stop"].as_object_mut().unwrap();
    assert!(stop.remove("within_s").is_some(), "{stop:?}");
    let unlimited = format!("#ladder-start {start}\n{rest}");
    let verdict = replay(unlimited.as_bytes()).verdict;
    assert_eq!(verdict.defects.len(), 1, "{:?}", verdict.defects);
    assert_eq!(verdict.defects[0].kind, DefectKind::CountMismatch);
    assert!(
        verdict.defects[0].detail.contains("gives look 8"),
        "{}",
        verdict.defects[0].detail
    );
}

#[test]
fn verify_rejects_a_stop_ladder_cut_before_the_rules_look() {
    let bench = Bench::new();
    assert!(bench.run(&stop_spec(&bench, 10.0, 0.1)).status.success());
    // Cut after look 6 as if the rule had said so.
    let text = bench.text();
    let mut lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') || l.starts_with("#ladder-start"))
        .collect();
    lines.truncate(2 + 12);
    // Dated when the last cell kept ended, as the runner would have dated it.
    let ended = lines[lines.len() - 1].split(',').nth(4).unwrap();
    let cut = format!("{}\n#ladder-done {{\"ended\":\"{ended}\",\"cells\":12,\"passes\":6,\"stopped\":\"precision\"}}\n", lines.join("\n"));
    let verdict = replay(cut.as_bytes()).verdict;
    let mismatch: Vec<_> = verdict
        .defects
        .iter()
        .filter(|d| d.kind == DefectKind::CountMismatch)
        .collect();
    assert_eq!(verdict.defects.len(), 1, "{:?}", verdict.defects);
    assert!(
        mismatch[0].detail.contains("says 6 passes") && mismatch[0].detail.contains("gives look 8"),
        "{}",
        mismatch[0].detail
    );
}

#[test]
fn verify_rejects_a_stop_ladder_run_past_the_rules_look() {
    let bench = Bench::new();
    // The same cells run to 6 passes without [stop], then presented as a [stop] ladder.
    let spec = stop_spec(&bench, 0.2, 1.0);
    let fixed = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("[stop]\nhalfwidth_pct = 1\nlooks = [4, 6, 8]\n", "")
        .replace("command =", "passes = 6\ncommand =");
    std::fs::write(&spec, fixed).unwrap();
    assert!(bench.run(&spec).status.success());
    let text = bench.text();
    let (first, rest) = text.split_once('\n').unwrap();
    let mut start: serde_json::Value =
        serde_json::from_str(first.strip_prefix("#ladder-start ").unwrap()).unwrap();
    start["order"]["looks"] = serde_json::json!([4, 6, 8]);
    start["order"]["passes"] = serde_json::json!(8);
    start["spec"]["stop"] = serde_json::json!({"halfwidth_pct": 1.0, "looks": [4, 6, 8]});
    start["spec"].as_object_mut().unwrap().remove("passes");
    let extended = format!("#ladder-start {start}\n{rest}");
    let verdict = replay(extended.as_bytes()).verdict;
    assert_eq!(verdict.defects.len(), 1, "{:?}", verdict.defects);
    assert_eq!(verdict.defects[0].kind, DefectKind::CountMismatch);
    assert!(
        verdict.defects[0].detail.contains("says 6 passes")
            && verdict.defects[0].detail.contains("gives look 4"),
        "{}",
        verdict.defects[0].detail
    );
}

#[test]
fn plan_shows_looks_and_each_arms_argv() {
    let bench = Bench::new();
    let spec = stop_spec(&bench, 0.0, 1.0);
    let text = std::fs::read_to_string(&spec).unwrap().replace(
        "env = { TEST_SPEED = \"105\" }",
        "args = [\"--fast\", \"two words\"]",
    );
    std::fs::write(&spec, text).unwrap();
    let out = Command::new(runner())
        .arg("plan")
        .arg(&spec)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("look: may stop here (4 passes)") && text.contains("(6 passes)"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "arm b (arm): {} --fast 'two words'",
            bench.engine.display()
        )),
        "{text}"
    );
    assert!(!text.contains("within_s"), "{text}");
    let spec = stop_spec_within(&bench, 0.0, 1.0, "240");
    let out = Command::new(runner())
        .arg("plan")
        .arg(&spec)
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(text.contains("above within_s = 240 s of cells"), "{text}");
}

/// Three arms under `[stop] spread = "pooled"` with a ±`halfwidth` target.
fn pooled_spec(bench: &Bench, halfwidth: f64) -> PathBuf {
    bench.spec(&format!(
        "command = [\"{{engine}}\"]\n\n[env]\nTEST_NOISE_PCT = \"0.5\"\n\n[stop]\nhalfwidth_pct = {halfwidth}\nlooks = [4, 6, 8]\nspread = \"pooled\"\n\n[[arm]]\nname = \"a\"\nrole = \"base\"\n\n[[arm]]\nname = \"b\"\nenv = {{ TEST_SPEED = \"105\" }}\n\n[[arm]]\nname = \"c\"\nenv = {{ TEST_SPEED = \"95\" }}\n{TOK_S}"
    ))
}

#[test]
fn a_pooled_stop_ladder_stops_where_the_pooled_spread_says() {
    let bench = Bench::new();
    assert!(bench.run(&pooled_spec(&bench, 1.0)).status.success());
    let ladder = bench.ladder();
    let spec = Spec::from_json(&ladder.start.spec).unwrap();
    let stop = spec.stop.clone().unwrap();
    let values = ladder.metric_values(&spec.effective_metrics()[0], 4);
    let (s0, df) = ladder::pooled::pooled_spread(&values.values, 1..4);
    assert_eq!(df, 4);
    let pooled = stop.need(s0, df);
    assert_eq!(ladder.stop_plan(&spec).unwrap().need.passes, pooled);
    let per_arm = [1, 2]
        .map(|a| stop.passes_needed(&values.log_ratios(a, 0, 1..4)))
        .into_iter()
        .fold(0.0, f64::max);
    // The same cells (the test engine's noise is fixed per pass and arm) with a half-width
    // the pooled need reaches at 4.5 analysis passes: look 6 (5 analysis passes) stops the
    // ladder, where each arm's own spread would run it to look 8.
    assert!(per_arm > pooled * 5.0 / 4.5, "{per_arm} {pooled}");
    let halfwidth = 100.0 * ((1.01f64.ln() * (pooled / 4.5).sqrt()).exp() - 1.0);
    let bench = Bench::new();
    let out = bench.run(&pooled_spec(&bench, halfwidth));
    assert!(out.status.success(), "{}", stderr(&out));
    let done = done_record(&bench.text());
    assert_eq!(
        (done["passes"].as_u64(), done["stopped"].as_str()),
        (Some(6), Some("precision")),
        "half-width {halfwidth}"
    );
    let ladder = bench.ladder();
    let mut spec = Spec::from_json(&ladder.start.spec).unwrap();
    spec.stop.as_mut().unwrap().spread = ladder::spec::StopSpread::PerArm;
    assert_eq!(ladder.stop_plan(&spec).unwrap().look, 8);
}
