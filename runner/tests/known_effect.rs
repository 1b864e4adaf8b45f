//! The runner's part of method 2.1's trust checks: a `time` ladder's known-effect arm, padded
//! inside its cells' timed span, and `runner plan --noise-from`.

mod common;

use common::{runner, stderr};
use ladder::spec::{Better, MetricSpec, Spec};
use ladder::stats::{t_quantile, LogSeries, Spread};
use ladder::verify::replay;
use std::process::Command;

/// `runner ab` with a known-effect control of 20 %: the generated spec pads the base's
/// command, and the ladder's paired interval recovers 100·(1/1.2 − 1) = −16.667 %.
#[test]
fn a_runner_pad_is_recovered_by_the_ladders_interval() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(runner())
        .args([
            "ab",
            "sleep 0.04",
            "sleep 0.05",
            "--known-effect-pct",
            "20",
            "--passes",
            "7",
        ])
        .args(["--tag", "t", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let spec_path = dir.path().join("ab-a-b_t.toml");
    let spec = Spec::load(&spec_path).unwrap().spec;
    let known = &spec.arms[3];
    assert_eq!(
        (known.name.as_str(), known.role),
        ("a-known", ladder::Role::KnownEffect)
    );
    assert_eq!(known.pad_pct, Some(20.0));
    let expected = known.expected_on("ladder_wall_s").unwrap();
    assert!(
        (expected - 100.0 * (1.0 / 1.2 - 1.0)).abs() < 1e-9,
        "{expected}"
    );
    assert_eq!(spec.argv_of(known), spec.argv_of(&spec.arms[0]));

    let replayed = replay(&std::fs::read(dir.path().join("ab-a-b_t.csv")).unwrap());
    assert!(replayed.verdict.connected, "{:?}", replayed.verdict.defects);
    let ladder = replayed.ladder.unwrap();
    let metric = MetricSpec {
        column: "ladder_wall_s".into(),
        better: Better::Lower,
        row: 0,
        noise_limit_pct: None,
    };
    let values = ladder.metric_values(&metric, 7);
    // Lower is better: the estimate of the padded arm is ln(base / arm).
    let logs: Vec<f64> = values.log_ratios(3, 0, 1..7).iter().map(|l| -l).collect();
    let series = LogSeries::of(&logs, Spread::Own);
    // The report reads this control at 1 − 0.05/2 (two controls, one metric), and
    // `analyze calibrate` measures that coverage; here the 99.9 % interval, so that a run on a
    // busy machine fails by chance once in a thousand, not once in forty.
    let half = t_quantile(1.0 - 0.001 / 2.0, series.df) * series.se();
    let (lo, hi) = (
        100.0 * (series.mean - half).exp_m1(),
        100.0 * (series.mean + half).exp_m1(),
    );
    assert!(
        lo <= expected && expected <= hi,
        "[{lo}, {hi}] misses {expected}"
    );
    // The pad sits inside the cell's own timed span: its end is its start plus its wall time.
    let wall = ladder.column("ladder_wall_s").unwrap();
    let padded = ladder
        .rows
        .iter()
        .find(|r| r.arm == 3 && r.pass == 3)
        .unwrap();
    let started = ladder::ladder_file::parse_timestamp(padded.fields.get(3).unwrap()).unwrap();
    let ended = ladder::ladder_file::parse_timestamp(padded.fields.get(4).unwrap()).unwrap();
    let seconds: f64 = padded.fields.get(wall).unwrap().parse().unwrap();
    assert!(
        ((ended - started) as f64 / 1e6 - seconds).abs() < 0.002,
        "{seconds}"
    );
}

#[test]
fn a_known_effect_pad_needs_a_time_ladder_and_a_sane_percent() {
    let run = |args: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(runner())
            .arg("ab")
            .args(args)
            .args(["--tag", "t", "--out"])
            .arg(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing is written"
        );
        stderr(&out)
    };
    let e = run(&["true", "true", "--known-effect-pct", "0"]);
    assert!(e.contains("--known-effect-pct 0 is not a percent"), "{e}");
    let e = run(&[
        "true",
        "true",
        "--known-effect-pct",
        "5",
        "--output",
        "csv",
        "--metric",
        "x",
    ]);
    assert!(
        e.contains("only --output time measures") && e.contains("ENGINE_DECODE_PAD_PCT"),
        "{e}"
    );
}

/// `runner plan --noise-from`: the minimum detectable effect of each look at the paired sd
/// of a real ladder, computed here by hand.
#[test]
fn plan_prints_each_looks_minimum_detectable_effect_at_a_files_noise() {
    let dir = tempfile::tempdir().unwrap();
    // A ladder of two arms whose analysis passes give the log ratios ln 1.01, ln 1.02, ln 1.03.
    let out = Command::new(runner())
        .args(["ab", "true", "true", "--passes", "4", "--tag", "t", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let file = dir.path().join("ab-a-b_t.csv");
    let text = std::fs::read_to_string(&file).unwrap();
    // Rewrite the wall times: base 1.0 s, b 1/1.01, 1/1.02, 1/1.03 (faster), reflexive 1.0.
    let ladder = replay(text.as_bytes()).ladder.unwrap();
    let wall = ladder.column("ladder_wall_s").unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for (i, row) in ladder.rows.iter().enumerate() {
        let mut fields: Vec<String> = row.fields.iter().map(String::from).collect();
        fields[wall] = match (row.arm, row.pass) {
            (1, p) if p > 0 => format!("{:.9}", 1.0 / (1.0 + 0.01 * p as f64)),
            _ => "1.000000".into(),
        };
        lines[2 + i] = ladder::ladder_file::csv_line(&fields);
    }
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let spec = dir.path().join("ab-a-b_t.toml");
    let out = Command::new(runner())
        .args([
            "plan",
            spec.to_str().unwrap(),
            "--noise-from",
            file.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = String::from_utf8(out.stdout).unwrap();
    // Arm b: sd of (ln 1.01, ln 1.02, ln 1.03); the reflexive arm: 0. Pooled over the arms.
    let l = [1.01f64.ln(), 1.02f64.ln(), 1.03f64.ln()];
    let mean = l.iter().sum::<f64>() / 3.0;
    let var_b = l.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0;
    let s = (var_b / 2.0).sqrt();
    // The spec's only look is its 4 passes: 3 analysis passes, df 2.
    let mde = 100.0 * ((4.302652729911275 + 1.060660172) * s / 3f64.sqrt()).exp_m1();
    let row = printed
        .lines()
        .find(|l| l.trim_start().starts_with("4 "))
        .unwrap_or_else(|| panic!("no look row in {printed}"));
    assert!(
        row.contains(&format!("±{mde:.3} %")),
        "{row:?} lacks ±{mde:.3} %\n{printed}"
    );
    assert!(
        printed.contains(&format!("ladder_wall_s {:.3} %", 100.0 * s)),
        "{printed}"
    );
}
