//! Every flag of `runner ab`, with real programs (`grep`, `sh`, `wc`, `true`, `false`,
//! `sleep`): each writes its key into the generated spec, the start record carries it, and
//! the ladder replays as one connected run. A bad flag is refused before anything exists.

mod common;

use common::{runner, stderr};
use ladder::order::Scheme;
use ladder::verify::{replay, Ladder};
use ladder::Spec;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A folder with a data file, where `runner ab` writes under `raw/` with tag `t`.
struct Ab {
    dir: tempfile::TempDir,
}

impl Ab {
    fn new() -> Ab {
        let dir = tempfile::tempdir().unwrap();
        let lines: String = (0..20_000).map(|i| format!("{i}\n")).collect();
        std::fs::write(dir.path().join("data.txt"), lines).unwrap();
        Ab { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `runner ab ARGS --tag t --out raw`, in the folder, without colour.
    fn run(&self, args: &[&str]) -> Output {
        Command::new(runner())
            .arg("ab")
            .args(args)
            .args(["--tag", "t", "--out", "raw"])
            .current_dir(self.dir.path())
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    }

    /// Runs `runner ab ARGS`, asserting that it succeeded.
    fn ok(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        out
    }

    /// The spec `runner ab` generated for ladder `name`, as `runner run` would read it.
    fn spec(&self, name: &str) -> Spec {
        Spec::load(&self.path(&format!("raw/{name}_t.toml")))
            .unwrap()
            .spec
    }

    /// The ladder file of `name`, replayed: it must be one connected run.
    fn ladder(&self, name: &str) -> Ladder {
        let bytes = std::fs::read(self.path(&format!("raw/{name}_t.csv"))).unwrap();
        let replayed = replay(&bytes);
        assert!(replayed.verdict.connected, "{:?}", replayed.verdict.defects);
        replayed.ladder.unwrap()
    }

    fn side_log(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(&format!("raw/{name}_t.stderr.log"))).unwrap()
    }
}

fn names(ladder: &Ladder) -> Vec<&str> {
    ladder.start.arms.iter().map(|a| a.name.as_str()).collect()
}

fn argv(ladder: &Ladder, arm: usize) -> Vec<String> {
    ladder.start.arms[arm].argv.clone().unwrap()
}

#[test]
fn ok_exit_lets_grep_find_nothing_and_its_absence_names_the_flag() {
    let ab = Ab::new();
    let commands = ["grep -c nothing-here data.txt", "grep -c 7 data.txt"];
    let out = ab.run(&[commands[0], commands[1], "--passes", "3"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("exited with status 1 (ok_exit: [0]); if 1 means success for this program, rerun with --ok-exit 0,1"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(ab.path("raw")).unwrap();
    ab.ok(&[commands[0], commands[1], "--passes", "3", "-i", "0,1"]);
    assert_eq!(ab.spec("ab-a-b").ok_exit, Some(vec![0, 1]));
    let ladder = ab.ladder("ab-a-b");
    assert_eq!(ladder.start.spec["ok_exit"], serde_json::json!([0, 1]));
    assert_eq!(common::column(&ladder, "ladder_exit", "a"), ["1", "1", "1"]);
    assert_eq!(common::column(&ladder, "ladder_exit", "b"), ["0", "0", "0"]);
}

#[test]
fn prepare_setup_and_cleanup_are_split_like_the_commands() {
    let ab = Ab::new();
    let step = |name: &str| format!("sh -c 'echo {name} $LADDER_ARM >> steps.log'");
    let (prepare, setup, cleanup) = (step("prepare"), step("setup"), step("cleanup"));
    ab.ok(&[
        "true",
        "wc -l data.txt",
        "--passes",
        "3",
        "--prepare",
        &prepare,
        "--setup",
        &setup,
        "--cleanup",
        &cleanup,
    ]);
    let spec = ab.spec("ab-a-b");
    let argv = |name: &str| -> Vec<String> {
        ["sh", "-c", &format!("echo {name} $LADDER_ARM >> steps.log")]
            .iter()
            .map(|w| w.to_string())
            .collect()
    };
    assert_eq!(spec.prepare, Some(argv("prepare")));
    assert_eq!(spec.setup, Some(argv("setup")));
    assert_eq!(spec.cleanup, Some(argv("cleanup")));
    let ladder = ab.ladder("ab-a-b");
    assert_eq!(
        ladder.start.spec["prepare"],
        serde_json::json!(argv("prepare"))
    );
    let steps = std::fs::read_to_string(ab.path("steps.log")).unwrap();
    let lines: Vec<&str> = steps.lines().collect();
    assert_eq!(lines.first(), Some(&"setup"));
    assert_eq!(lines.last(), Some(&"cleanup"));
    // One prepare before each of the 9 cells, with the cell's arm.
    assert_eq!(lines.iter().filter(|l| l.starts_with("prepare")).count(), 9);
    assert!(lines.contains(&"prepare a-again"), "{steps}");
}

#[test]
fn warmup_order_and_noise_limit_are_keys_of_the_spec_and_the_start_record() {
    let ab = Ab::new();
    let flags = [
        "true",
        "sleep 0.001",
        "--passes",
        "5",
        "-w",
        "2",
        "--order",
        "shuffle",
        "--noise-limit",
        "50",
    ];
    ab.ok(&flags);
    let spec = ab.spec("ab-a-b");
    assert_eq!(spec.warmup_passes, 2);
    assert_eq!(spec.order, Scheme::Shuffle);
    assert_eq!(spec.noise_limit_pct, Some(50.0));
    let ladder = ab.ladder("ab-a-b");
    assert_eq!(ladder.start.warmup_passes, 2);
    assert_eq!(ladder.start.order.scheme, Scheme::Shuffle);
    assert_eq!(ladder.start.order.seed, spec.seed);
    assert!(spec.seed.is_some());
    assert_eq!(ladder.start.spec["noise_limit_pct"], 50.0);

    let ab = Ab::new();
    ab.ok(&[
        "true",
        "sleep 0.001",
        "--passes",
        "4",
        "--order",
        "williams",
    ]);
    assert_eq!(ab.spec("ab-a-b").order, Scheme::Williams);
    assert_eq!(ab.ladder("ab-a-b").start.order.scheme, Scheme::Williams);
}

#[test]
fn a_shell_runs_each_string_whole_and_is_hashed_like_any_program() {
    let ab = Ab::new();
    let piped = "grep 7 data.txt | wc -l";
    // Without --shell, a pipe is refused, and the refusal names the flag.
    let out = ab.run(&[piped, "grep -c 7 data.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--shell"), "{}", stderr(&out));
    assert!(!ab.path("raw").exists());
    ab.ok(&["--shell", piped, "grep -c 7 data.txt", "--passes", "3"]);
    let spec = ab.spec("ab-a-b");
    assert_eq!(spec.argv_of(&spec.arms[0]), ["sh", "-c", piped]);
    let ladder = ab.ladder("ab-a-b");
    assert_eq!(argv(&ladder, 0), ["sh", "-c", piped]);
    assert_eq!(argv(&ladder, 1), ["sh", "-c", "grep -c 7 data.txt"]);
    let shell = ladder.start.arms[0].binary.clone().unwrap();
    assert!(shell.path.ends_with("/sh"), "{}", shell.path);
    assert_eq!(shell.blake3, common::hash(Path::new(&shell.path)));
    assert_eq!(ladder.start.binary.path, shell.path);

    let ab = Ab::new();
    ab.ok(&["--shell=/bin/sh", "true", "false || true", "--passes", "3"]);
    assert_eq!(
        argv(&ab.ladder("ab-a-b"), 1),
        ["/bin/sh", "-c", "false || true"]
    );
}

#[test]
fn a_parameter_scan_makes_one_arm_per_value_of_the_one_command() {
    let ab = Ab::new();
    ab.ok(&["-P", "n", "1", "3", "sleep 0.0{n}", "--passes", "3"]);
    let spec = ab.spec("ab-n");
    let scan = spec.scan.clone().unwrap();
    assert_eq!(scan.parameter.as_deref(), Some("n"));
    assert_eq!(scan.values.unwrap(), ["1", "2", "3"]);
    assert_eq!(spec.command, ["sleep", "0.0{n}"]);
    let ladder = ab.ladder("ab-n");
    assert_eq!(names(&ladder), ["1", "2", "3", "1-again"]);
    assert_eq!(ladder.start.command, ["sleep", "0.0{n}"]);
    assert!(ladder.start.binary.path.ends_with("/sleep"));
    assert_eq!(argv(&ladder, 0), ["sleep", "0.01"]);
    assert_eq!(argv(&ladder, 2), ["sleep", "0.03"]);
    assert_eq!(argv(&ladder, 3), ["sleep", "0.01"]);
    let wall = |arm: &str| -> f64 {
        let walls = common::column(&ladder, "ladder_wall_s", arm);
        walls.iter().map(|w| w.parse::<f64>().unwrap()).sum::<f64>() / walls.len() as f64
    };
    assert!(wall("3") > wall("1") + 0.01, "{} {}", wall("3"), wall("1"));

    let ab = Ab::new();
    let step = ["-P", "t", "0.01", "0.02", "--parameter-step", "0.005"];
    ab.ok(&[&step[..], &["sleep {t}", "--passes", "3"]].concat());
    let ladder = ab.ladder("ab-t");
    assert_eq!(names(&ladder), ["0.010", "0.015", "0.020", "0.010-again"]);
    assert_eq!(argv(&ladder, 1), ["sleep", "0.015"]);
}

#[test]
fn a_parameter_list_scans_the_values_given() {
    let ab = Ab::new();
    let grep = "grep -c {pattern} data.txt";
    let out = ab.run(&["-L", "pattern", "7,77", grep, "wc -l data.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("takes one command, with {pattern}"),
        "{}",
        stderr(&out)
    );
    ab.ok(&[
        "-L", "pattern", "7,77,777", grep, "-i", "0,1", "--passes", "3",
    ]);
    let spec = ab.spec("ab-pattern");
    assert_eq!(spec.scan.unwrap().values.unwrap(), ["7", "77", "777"]);
    let ladder = ab.ladder("ab-pattern");
    assert_eq!(names(&ladder), ["7", "77", "777", "7-again"]);
    assert_eq!(argv(&ladder, 1), ["grep", "-c", "77", "data.txt"]);

    // The parameter may be the program itself: the start record's binary is then the base's.
    let ab = Ab::new();
    ab.ok(&[
        "-L",
        "program",
        "true,false",
        "{program} x",
        "-i",
        "0,1",
        "--passes",
        "3",
    ]);
    let ladder = ab.ladder("ab-program");
    assert_eq!(ladder.start.command, ["{program}", "x"]);
    assert!(
        ladder.start.binary.path.ends_with("/true"),
        "{}",
        ladder.start.binary.path
    );
    let program = ladder.start.arms[1].binary.clone().unwrap();
    assert!(program.path.ends_with("/false"), "{}", program.path);
    assert_eq!(program.blake3, common::hash(Path::new(&program.path)));
    assert_eq!(
        common::column(&ladder, "ladder_exit", "false"),
        ["1", "1", "1"]
    );
}

#[test]
fn exports_are_written_by_analyze_after_the_ladder() {
    let ab = Ab::new();
    let analyze = Path::new(runner()).with_file_name("analyze");
    assert!(
        analyze.is_file(),
        "{} is missing: cargo build --release -p analyze",
        analyze.display()
    );
    ab.ok(&[
        "true",
        "sleep 0.001",
        "--passes",
        "4",
        "--export-json",
        "out.json",
        "--export-markdown",
        "out.md",
        "--export-csv",
        "out.csv",
    ]);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ab.path("out.json")).unwrap()).unwrap();
    assert!(json.to_string().contains("ab-a-b"), "{json}");
    let markdown = std::fs::read_to_string(ab.path("out.md")).unwrap();
    assert!(markdown.contains("ladder_wall_s"), "{markdown}");
    let csv = std::fs::read_to_string(ab.path("out.csv")).unwrap();
    assert!(csv.lines().count() >= 3, "{csv}");
    let ladder = ab.ladder("ab-a-b");
    assert_eq!(names(&ladder), ["a", "b", "a-again"]);
    assert_eq!(ab.spec("ab-a-b").arms.len(), 3);
}

#[test]
fn show_output_prints_each_cells_output_and_keeps_it_in_the_side_log() {
    let ab = Ab::new();
    let speak = "sh -c 'echo out-$LADDER_ARM; echo err-$LADDER_ARM >&2'";
    let out = ab.ok(&[speak, "wc -l data.txt", "--passes", "3", "--show-output"]);
    assert!(ab.spec("ab-a-b").shows_output());
    let ladder = ab.ladder("ab-a-b");
    assert_eq!(ladder.start.spec["show_output"], true);
    let shown = stderr(&out);
    assert_eq!(shown.matches("out-a-again").count(), 3, "{shown}");
    assert_eq!(shown.matches("err-a\n").count(), 3, "{shown}");
    assert_eq!(shown.matches("20000 data.txt").count(), 3, "{shown}");
    let log = ab.side_log("ab-a-b");
    assert_eq!(log.matches("out-b").count(), 0, "{log}");
    assert_eq!(log.matches("out-a\n").count(), 3, "{log}");
    assert_eq!(log.matches("20000 data.txt").count(), 3, "{log}");
    // Without the flag nothing of the cells reaches the terminal.
    let ab = Ab::new();
    let out = ab.ok(&[speak, "wc -l data.txt", "--passes", "3"]);
    assert!(!stderr(&out).contains("out-a"), "{}", stderr(&out));
    assert!(ab.spec("ab-a-b").show_output.is_none());
}

#[test]
fn bad_flags_are_refused_before_anything_is_written() {
    let cases: &[(&[&str], &str)] = &[
        (&["-i", "x", "true", "true"], "--ok-exit"),
        (
            &["-w", "9", "true", "true"],
            "--warmup 9 leaves 1 analysis passes",
        ),
        (
            &["-w", "4", "--stop", "1", "true", "true"],
            "give --warmup 3 or less",
        ),
        (&["--noise-limit", "0", "true", "true"], "--noise-limit 0"),
        (&["--order", "random", "true", "true"], "--order"),
        (
            &["--parameter-step", "1", "true", "true"],
            "--parameter-scan",
        ),
        (&["-P", "n", "1", "3", "sleep 1"], "does not hold {n}"),
        (
            &["-P", "n", "1", "3", "sleep {n}", "true"],
            "takes one command",
        ),
        (&["-P", "n", "3", "1", "sleep {n}"], "swap them"),
        (&["-L", "n", "1", "sleep {n}"], "at least two"),
        (&["-L", "n", "1,2", "--name", "x", "sleep {n}"], "--name"),
        (
            &["--export-json", "no/such/dir/x.json", "true", "true"],
            "the folder no/such/dir does not exist",
        ),
        (
            &["--prepare", "no-such-program-abab", "true", "true"],
            "--prepare",
        ),
        (&["--setup", "'open", "true", "true"], "--setup"),
        (&["true"], "at least two commands"),
        (
            &["-L", "program", "true,no-such-program-abab", "{program} x"],
            "\"no-such-program-abab\" was not found",
        ),
        (&["grep x data.txt | wc", "true"], "--shell"),
    ];
    for (args, expected) in cases {
        let ab = Ab::new();
        let out = ab.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {expected:?} not in {}",
            stderr(&out)
        );
        assert!(!ab.path("raw").exists(), "{args:?} wrote files");
    }
}

#[test]
fn a_stray_side_log_is_refused_before_the_spec_is_written() {
    let ab = Ab::new();
    std::fs::create_dir_all(ab.path("raw")).unwrap();
    std::fs::write(ab.path("raw/ab-a-b_t.stderr.log"), "old\n").unwrap();
    let out = ab.run(&["true", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_dir(ab.path("raw")).unwrap().count(),
        1,
        "a file was written"
    );
}
