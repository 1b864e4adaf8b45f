//! `analyze calibrate` as a command, on a committed design: its rates are where the method
//! puts them, so a rule that drifts (an interval too narrow, a control too strict) shows.

use std::path::Path;
use std::process::Command;

/// `analyze calibrate ARGS` from the repository root.
fn command(args: &[&str]) -> Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_analyze"));
    command.current_dir(root).arg("calibrate").args(args);
    command
}

fn run(args: &[&str]) -> std::process::Output {
    command(args).output().unwrap()
}

fn calibrate(args: &[&str]) -> serde_json::Value {
    let out = run(&[args, &["--ladders", "400", "--json"]].concat());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_a_ladders_are_called_different_about_5_percent_of_the_time() {
    let value = calibrate(&[
        "ladders/calibrate/aa-williams-8.toml",
        "--models",
        "independent,carry-over",
    ]);
    let rates = value["rates"].as_array().unwrap();
    let independent = &rates[0];
    assert_eq!(independent["model"], "independent");
    // 800 verdicts at a nominal 5 %: 2.5–8 % holds with overwhelming probability.
    let fp = independent["false_positive_rate"].as_f64().unwrap();
    assert!((0.025..=0.08).contains(&fp), "{fp}");
    // The null control fails about 5 % of the time, and with it the ladder; the noise gate
    // rarely shuts; a Holm family errs about 5 % of the time.
    let rate = |name: &str| independent[name].as_f64().unwrap();
    let controls = independent["control_rates"][0][1].as_f64().unwrap();
    assert!((0.01..=0.1).contains(&controls), "{controls}");
    assert!((0.01..=0.1).contains(&rate("control_failure_rate")));
    assert!(
        (0.01..=0.15).contains(&rate("disqualified_rate")),
        "{independent}"
    );
    assert!(rate("gate_rate") <= 0.1, "{independent}");
    assert!(
        (0.01..=0.1).contains(&rate("holm_familywise_rate")),
        "{independent}"
    );
    assert!(independent["order_sensitive_rate"].as_f64().unwrap() <= 0.06);
    // Williams separates carry-over: with it removed the estimate is unbiased, and its
    // intervals, given whether or not the test rejects, hold the truth as 95 % ones should.
    let carry = &rates[1];
    assert!(
        carry["carry_free_bias_pct"].as_f64().unwrap().abs() < 0.1,
        "{carry}"
    );
    for rates in [independent, carry] {
        let held = &rates["carry_free_held"];
        assert!(held["n"].as_u64().unwrap() >= 200, "{held}");
        assert!(
            (0.92..=0.98).contains(&held["rate"].as_f64().unwrap()),
            "{held}"
        );
    }
}

#[test]
fn a_true_effect_is_covered_and_an_unknown_model_is_refused() {
    let value = calibrate(&[
        "ladders/calibrate/aa-rotate-12.toml",
        "--effect-pct",
        "0.5",
        "--models",
        "independent",
    ]);
    let coverage = value["rates"][0]["coverage"].as_f64().unwrap();
    assert!((0.91..=0.985).contains(&coverage), "{coverage}");
    // A 0.5 % effect at 1 % noise over 11 analysis passes is resolved better about one
    // ladder in five (0.19 in 400).
    let power = value["rates"][0]["power"].as_f64().unwrap();
    assert!((0.08..=0.35).contains(&power), "{power}");
    let out = run(&["ladders/calibrate/aa-rotate-6.toml", "--models", "gaussian"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("gaussian") && err.contains("independent"),
        "{err}"
    );
}

#[test]
fn a_pooled_first_look_keeps_its_coverage_in_fewer_passes() {
    let value = calibrate(&[
        "ladders/calibrate/stop-pooled.toml",
        "ladders/calibrate/stop-per-arm.toml",
        "--models",
        "independent",
    ]);
    let rates = value["rates"].as_array().unwrap();
    let (pooled, per_arm) = (&rates[0], &rates[1]);
    // 400 known-effect tests at a nominal 95 %: 91–99 % holds with overwhelming probability.
    let held = pooled["known_effect_held"]["rate"].as_f64().unwrap();
    assert!((0.91..=0.99).contains(&held), "{held}");
    let passes = |r: &serde_json::Value| r["mean_passes"].as_f64().unwrap();
    // More degrees of freedom at the first look: about 12 passes where per arm needs 15.
    assert!(passes(pooled) < passes(per_arm) - 1.5, "{pooled} {per_arm}");
}

#[test]
fn a_noise_rise_after_the_first_look_is_caught_and_the_known_effect_keeps_its_coverage() {
    let value = calibrate(&[
        "ladders/calibrate/stop-pooled.toml",
        "--models",
        "independent,noise-rise",
    ]);
    let rates = value["rates"].as_array().unwrap();
    let rate = |r: &serde_json::Value, name: &str| r[name]["rate"].as_f64().unwrap();
    let (steady, rose) = (&rates[0], &rates[1]);
    assert_eq!(rose["model"], "noise-rise");
    // Steady noise: the test seldom fires (1.5 % of 20,000 ladders in reports/calibration.md).
    assert!(rate(steady, "noise_rose") <= 0.04, "{steady}");
    // The noise tripled at the first look: caught in about 93 % of ladders, and the known
    // effect held in about 93 % of 400 (read by the first look's spread alone: 69 %).
    assert!(rate(rose, "noise_rose") >= 0.85, "{rose}");
    let held = rate(rose, "known_effect_held");
    assert!(held >= 0.88, "{held}");
}

#[test]
fn a_breakdown_resolves_few_keys_wrongly_covers_the_slowed_one_and_adds_up() {
    let value = calibrate(&[
        "ladders/calibrate/breakdown.toml",
        "--effect-pct",
        "5",
        "--models",
        "independent",
    ]);
    let b = &value["rates"][0]["breakdown"];
    let rate = |name: &str| b[name]["rate"].as_f64().unwrap();
    // 800 arms, each a Holm family over nine keys at a nominal 5 %.
    let wrong = rate("false_families");
    assert!(wrong <= 0.08, "{b}");
    // 400 slowed keys at a nominal 95 %, all of them resolved at 5 % with 1 % noise.
    let covered = rate("covered");
    assert!((0.91..=0.99).contains(&covered), "{b}");
    assert!(rate("resolved") >= 0.95, "{b}");
    // 800 closures that truly add up, read at a nominal 95 %.
    let gap = rate("not_adding_up");
    assert!((0.02..=0.08).contains(&gap), "{b}");
}

#[test]
fn the_table_gives_the_carry_free_bias_and_how_often_its_intervals_held() {
    let out = run(&[
        "ladders/calibrate/aa-williams-8.toml",
        "--models",
        "carry-over",
        "--ladders",
        "100",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("| carry-free bias (held [95 % CI]) |"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("| carry-over |"))
        .unwrap();
    let cell = row.split(" | ").nth(9).unwrap();
    assert!(
        cell.contains(" % (held ") && cell.ends_with("/200))"),
        "{cell} in {row}"
    );
}

#[test]
fn a_structural_zero_is_not_counted_as_an_inert_control() {
    // One null arm on two metrics, 50 ladders: 100 inert control tests; the structural
    // zero beside it is read, never tested (METHOD.md "Controls").
    let out = run(&[
        "ladders/l2-window-h200.toml",
        "--models",
        "independent",
        "--ladders",
        "50",
        "--json",
    ]);
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rates = &value["rates"][0];
    assert_eq!(rates["inert_held"]["n"], 100, "{rates}");
    assert_eq!(rates["control_rates"].as_array().unwrap().len(), 1);
}

#[test]
fn a_reader_that_closes_the_pipe_ends_the_command_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let mut child = command(&["ladders/calibrate/aa-williams-8.toml", "--ladders", "400"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes before the table is computed (`… | head -0`).
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
}

#[test]
fn the_targets_pool_only_their_models_and_every_model_is_said_in_words() {
    let out = run(&["ladders/calibrate/aa-rotate-12.toml", "--ladders", "30"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    // The false-positive targets are set for these four; the models built to break a rule
    // (a slot effect, carry-over, a noise rise) stay out of their pooled row.
    assert!(
        text.contains("\n| independent, random-walk, ar1, heavy-tails | "),
        "{text}"
    );
    for words in [
        "`independent`: independent normal cells;",
        "`random-walk`: random-walk drift, step 0.500 % a cell, plus independent noise;",
        "`ar1`: AR(1) over the cells in time order, ρ 0.7;",
        "`heavy-tails`: t with 3 df, scaled to the same sd;",
        "`slot-effect`: slot 0 slower by one noise sd, plus independent noise;",
        "`carry-over`: a cell after the carrying arm 1.00 % slower, plus independent noise;",
        "`noise-rise`: independent normal cells whose sd is 3× from the first look on",
    ] {
        assert!(text.contains(words), "{words}\n{text}");
    }
}

/// Every table `analyze calibrate` prints has as many cells in each row as in its header
/// (each optional column in both), under a heading that says what was simulated.
#[test]
fn every_table_is_whole_under_a_heading_that_says_what_was_simulated() {
    let out = run(&[
        "ladders/calibrate/known-effect.toml",
        "ladders/calibrate/breakdown.toml",
        "ladders/calibrate/stop-per-arm.toml",
        "--models",
        "independent",
        "--ladders",
        "20",
        "--effect-pct",
        "1",
        "--control-effect-pct",
        "0.1",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(
            "20 ladders per spec and model; cell noise 1.000 %; seed 1, true effect 1 % on \
             the `arm` arms, true effect 0.1 % on the inert controls\n"
        ),
        "{text}"
    );
    let mut tables = 0;
    for block in text.split("\n\n") {
        let rows: Vec<usize> = block
            .lines()
            .filter(|l| l.starts_with('|'))
            .map(|l| l.matches('|').count())
            .collect();
        if let Some(&header) = rows.first() {
            tables += 1;
            assert!(rows.iter().all(|&r| r == header), "{rows:?} in\n{block}");
        }
    }
    // Three specs, the breakdown's, and the pooled one.
    assert_eq!(tables, 5, "{text}");
    assert!(text.contains("Breakdown (METHOD.md"), "{text}");
}

/// The pooled row of a model adds its false positives over the specs and weighs its other
/// rates by each spec's ladders; the targeted models pool in a row of their own only when
/// more than one of them ran.
#[test]
fn the_pooled_rows_add_the_counts_and_weigh_the_rates_by_ladders() {
    let args = [
        "ladders/calibrate/aa-rotate-6.toml",
        "ladders/calibrate/aa-williams-12.toml",
        "--models",
        "independent,ar1",
        "--ladders",
        "60",
    ];
    let value = {
        let out = run(&[&args[..], &["--json"]].concat());
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let text = String::from_utf8(run(&args).stdout).unwrap();
    let pooled = text.split("Pooled over the specs:").nth(1).unwrap();
    for model in ["independent", "ar1"] {
        let rows: Vec<&serde_json::Value> = value["rates"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["model"] == model)
            .collect();
        let sum = |key: &str| rows.iter().map(|r| r[key].as_u64().unwrap()).sum::<u64>();
        let (k, n) = (sum("false_positives"), sum("verdicts"));
        assert!(k > 0 && rows.len() == 2, "{rows:?}");
        let ladders = sum("ladders") as f64;
        let weighted = |key: &str| {
            let total: f64 = rows
                .iter()
                .map(|r| r[key].as_f64().unwrap() * r["ladders"].as_f64().unwrap())
                .sum();
            format!("{:.1} %", 100.0 * total / ladders)
        };
        let row = pooled
            .lines()
            .find(|l| l.starts_with(&format!("| {model} |")))
            .unwrap();
        let cells: Vec<&str> = row.split(" | ").collect();
        let rate = format!("{:.1} %", 100.0 * k as f64 / n as f64);
        assert!(cells[1].starts_with(&rate), "{rate} in {row}");
        assert!(
            cells[1].ends_with(&format!("({k}/{n})")),
            "{k}/{n} in {row}"
        );
        assert_eq!(cells[3], weighted("disqualified_rate"), "{row}");
        assert_eq!(cells[4], weighted("control_failure_rate"), "{row}");
        assert_eq!(cells[5], weighted("order_sensitive_rate"), "{row}");
    }
    assert!(pooled.contains("\n| independent, ar1 | "), "{pooled}");
    let one =
        String::from_utf8(run(&[&args[..3], &["independent", "--ladders", "20"]].concat()).stdout)
            .unwrap();
    let rows = one.split("Pooled over the specs:").nth(1).unwrap();
    let data = rows
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| model"))
        .count();
    assert_eq!(
        data, 1,
        "one targeted model pools in no row of its own:\n{rows}"
    );
}
