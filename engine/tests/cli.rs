//! The binary: its CSV output, digests across arms, and clear errors on bad input.

use std::process::{Command, Output};

fn engine(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_engine"));
    c.args(args);
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("ENGINE_")) {
        c.env_remove(k);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// Runs a failing command and returns its stderr after checking it failed cleanly.
fn fails(args: &[&str], env: &[(&str, &str)], needles: &[&str]) {
    let o = engine(args, env);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{args:?} should fail");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{args:?}: {err}"
    );
    for n in needles {
        assert!(err.contains(n), "{args:?}: `{n}` missing from: {err}");
    }
    assert!(o.stdout.is_empty(), "{args:?}: nothing on stdout on error");
}

const TINY: &[&str] = &[
    "bench", "--preset", "tiny", "-pg", "12,10", "-r", "2", "--warmup", "0",
];
/// [`TINY`] with a warm-up rep.
const TINY_WARM: &[&str] = &[
    "bench", "--preset", "tiny", "-pg", "12,10", "-r", "2", "--warmup", "1",
];

fn row(o: &Output) -> std::collections::HashMap<String, String> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout.clone()).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "a header and one row: {out}");
    lines[0]
        .split(',')
        .map(String::from)
        .zip(lines[1].split(',').map(String::from))
        .collect()
}

#[test]
fn bench_prints_one_row_and_the_digest_is_the_same_across_arms() {
    let spec: Vec<&str> = TINY
        .iter()
        .copied()
        .chain(["--spec", "mtp", "--draft-tokens", "2", "--prompts", "2"])
        .collect();
    let base = row(&engine(&spec, &[]));
    for col in [
        "model",
        "backend",
        "n_prompt",
        "n_gen",
        "reps",
        "prefill_seconds_mean",
        "prefill_tok_s",
        "decode_seconds_mean",
        "decode_tok_s",
        "total_seconds_mean",
        "spec_rounds",
        "spec_fallback_steps",
        "spec_acceptance_rate",
        "output_digest",
        "state_pool_bytes",
        "prefetch",
        "pool_layout",
        "prefetch_bytes_per_token",
    ] {
        assert!(base.contains_key(col), "column {col}");
    }
    assert_eq!(base["backend"], "cpu");
    assert!(base["spec_rounds"].parse::<u64>().unwrap() > 0);
    let arms = [
        ("structural-zero", "by-slot"),
        ("next-layer", "by-layer"),
        ("null", "by-slot"),
    ];
    for (p, l) in arms {
        let r = row(&engine(
            &spec,
            &[("ENGINE_PREFETCH", p), ("ENGINE_POOL_LAYOUT", l)],
        ));
        assert_eq!(r["output_digest"], base["output_digest"], "{p} {l}");
        assert_eq!(r["spec_rounds"], base["spec_rounds"]);
        assert_eq!((r["prefetch"].as_str(), r["pool_layout"].as_str()), (p, l));
        let bytes: f64 = r["prefetch_bytes_per_token"].parse().unwrap();
        assert_eq!(bytes > 0.0, p != "null", "{p}: {bytes}");
    }
    // Plain decode gives the same tokens and no speculation counters.
    let plain: Vec<&str> = TINY.iter().copied().chain(["--prompts", "2"]).collect();
    let p = row(&engine(&plain, &[]));
    assert_eq!(p["output_digest"], base["output_digest"]);
    assert_eq!(
        (
            p["spec_rounds"].as_str(),
            p["spec_acceptance_rate"].as_str()
        ),
        ("0", "0.000000")
    );
    assert_eq!(p["prefetch"], "off");
}

#[test]
fn bad_input_is_named_with_the_allowed_values() {
    fails(
        &["bench", "--preset", "huge"],
        &[],
        &["huge", "--preset", "tiny, small"],
    );
    fails(&["bench", "-pg", "12"], &[], &["PP,TG", "12"]);
    fails(&["bench", "-pg", "0,4"], &[], &["positive"]);
    fails(&["bench", "-pg", "a,b"], &[], &["PP,TG"]);
    fails(
        &["bench", "--spec", "mtp", "--draft-tokens", "0"],
        &[],
        &["--draft-tokens", "1..=5"],
    );
    fails(
        &["bench", "--spec", "mtp", "--draft-tokens", "6"],
        &[],
        &["--draft-tokens", "1..=5"],
    );
    fails(&["bench", "--draft-tokens", "2"], &[], &["--spec"]);
    fails(&["bench", "--backend", "gpu"], &[], &["--backend", "cuda"]);
    fails(
        &[
            "bench",
            "--preset",
            "tiny",
            "--backend",
            "cpu",
            "--layouts",
            "2",
        ],
        &[],
        &["--layouts 2", "CUDA backend", "leave it out"],
    );
    fails(
        &["bench", "--layouts", "2", "--rows", "ops"],
        &[],
        &["--rows ops", "without --layouts 2"],
    );
    fails(&["bench", "--layouts", "0"], &[], &["--layouts", "0"]);
    fails(
        &["bench", "--backend", "cuda"],
        &[],
        &["--backend cuda", "cpu"],
    );
    fails(
        TINY,
        &[("ENGINE_PREFETCH", "sometimes")],
        &["ENGINE_PREFETCH", "next-layer, null, structural-zero"],
    );
    fails(
        TINY,
        &[("ENGINE_POOL_LAYOUT", "interleaved")],
        &["ENGINE_POOL_LAYOUT", "by-slot"],
    );
    fails(
        &["info"],
        &[("ENGINE_BACKEND", "gpu")],
        &["ENGINE_BACKEND", "cpu, cuda, auto"],
    );
    fails(
        TINY,
        &[("ENGINE_L2", "window")],
        &["ENGINE_L2=window", "CUDA backend"],
    );
    fails(
        &["bench", "--preset", "tiny", "-pg", "250,10"],
        &[],
        &["-pg 250,10", "max_context"],
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("model.json");
    std::fs::write(&cfg, "{ \"name\": \"x\", \"vocab\": 12,\n  oops }").unwrap();
    fails(
        &["bench", "--config", cfg.to_str().unwrap()],
        &[],
        &["model.json", "line 2"],
    );
    std::fs::write(&cfg, "{\"name\": \"x\"}").unwrap();
    fails(
        &["info", "--config", cfg.to_str().unwrap()],
        &[],
        &["model.json", "missing field"],
    );
    fails(
        &[
            "bench",
            "--preset",
            "tiny",
            "--weights",
            "/nonexistent.safetensors",
        ],
        &[],
        &["--weights", "/nonexistent.safetensors"],
    );
    let junk = dir.path().join("junk.safetensors");
    std::fs::write(&junk, b"not a checkpoint").unwrap();
    fails(
        &[
            "bench",
            "--preset",
            "tiny",
            "--weights",
            junk.to_str().unwrap(),
        ],
        &[],
        &["junk.safetensors", "safetensors"],
    );
}

/// `ENGINE_DECODE_PAD_PCT`: four columns after the run's own, before the card's and the L2
/// audit's, empty when unset; the pad said once on stderr; the same tokens and rounds as without it.
#[test]
fn the_decode_pad_has_its_columns_and_changes_no_token() {
    let args: Vec<&str> = TINY_WARM
        .iter()
        .copied()
        .chain(["--spec", "mtp", "--draft-tokens", "2"])
        .collect();
    let base = engine(&args, &[]);
    let header = String::from_utf8_lossy(&base.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(
        header.contains(
            ",roofline_fraction,decode_pad_pct,decode_pad_us,decode_pad_own_us,\
             decode_pad_turnaround_us,decode_j_per_token,\
             prefill_j_per_token,device_mem_peak_mib,l2_"
        ),
        "{header}"
    );
    let base = row(&base);
    for col in [
        "decode_pad_pct",
        "decode_pad_us",
        "decode_pad_own_us",
        "decode_pad_turnaround_us",
    ] {
        assert_eq!(base[col], "", "unset: {col}");
    }
    let o = engine(&args, &[("ENGINE_DECODE_PAD_PCT", "5")]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(
        err.matches("decode pad: 5 % of every round's own time, ")
            .count(),
        1,
        "the pad is said once: {err}"
    );
    assert!(err.contains("rounds (ENGINE_DECODE_PAD_PCT)"), "{err}");
    let padded = row(&o);
    assert_eq!(padded["decode_pad_pct"], "5");
    let us = |col: &str| -> f64 { padded[col].parse().unwrap() };
    // The pad waits 5 % of the round's own time and turnaround, both read on its clock: never
    // less (to the columns' rounding); more by as much as a busy host delays a spin's end.
    let counted = us("decode_pad_own_us") + us("decode_pad_turnaround_us");
    assert!(us("decode_pad_own_us") > 0.0, "{padded:?}");
    assert!(
        us("decode_pad_us") >= 0.05 * counted - 0.001,
        "{} µs waited of {counted} µs",
        us("decode_pad_us")
    );
    for col in ["output_digest", "spec_rounds", "spec_fallback_steps"] {
        assert_eq!(padded[col], base[col], "{col}");
    }
}

/// A bad value stops the bench before it builds anything; a pad without a warm-up runs.
#[test]
fn the_decode_pad_is_refused_before_anything_runs() {
    for bad in ["-1", "NaN", "inf", "1001", "five", ""] {
        fails(
            TINY_WARM,
            &[("ENGINE_DECODE_PAD_PCT", bad)],
            &[
                "ENGINE_DECODE_PAD_PCT",
                &format!("`{bad}`"),
                "from 0 to 1000",
            ],
        );
    }
    let o = engine(TINY_WARM, &[("ENGINE_DECODE_PAD_PCT", "-1")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("building"), "-1 built the model: {err}");
    let unwarmed = row(&engine(TINY, &[("ENGINE_DECODE_PAD_PCT", "5")]));
    assert_eq!(unwarmed["decode_pad_pct"], "5");
}

#[test]
fn a_misspelt_variable_is_refused_with_the_name_it_resembles_before_anything_runs() {
    for command in [
        &["bench", "--preset", "tiny", "-pg", "4,4", "-r", "1"][..],
        &["info"],
    ] {
        let o = engine(command, &[("ENGINE_PD", "off")]);
        assert!(o.stdout.is_empty(), "{command:?} printed a row");
        fails(
            command,
            &[("ENGINE_PD", "off")],
            &[
                "unknown environment variable ENGINE_PD",
                "did you mean ENGINE_PDL?",
                "engine options",
            ],
        );
    }
    // Another program's variables pass, and so does every name the engine reads.
    let o = engine(&["info"], &[("ENGINEER", "x"), ("ENGINE_PDL", "off")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn options_lists_every_variable_and_bench_help_too() {
    let o = engine(&["options"], &[]);
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(o.status.success());
    let help = String::from_utf8(engine(&["bench", "--help"], &[]).stdout).unwrap();
    for var in [
        "ENGINE_PREFETCH=",
        "ENGINE_POOL_LAYOUT=",
        "ENGINE_BACKEND=",
        "ENGINE_L2=",
        "ENGINE_L2_HIT_RATIO=",
        "ENGINE_L2_GUARD=",
        "ENGINE_PDL=",
        "ENGINE_FOLD_NORM=",
        "ENGINE_WEIGHT_PREFETCH=",
        "ENGINE_WEIGHT_PRELOAD=",
        "ENGINE_ROUTER_IN_OUT=",
        "ENGINE_DECODE_PAD_PCT=",
        "ENGINE_SLOW_OP=",
    ] {
        assert!(
            out.contains(var) && help.contains(var),
            "{var} missing: {out}"
        );
    }
}

#[test]
fn info_and_json_config_describe_the_model() {
    let o = engine(&["info", "--preset", "qwen3.6-35b-a3b"], &[]);
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(o.status.success());
    assert!(
        out.contains("state pool bytes") && out.contains("128778240") && out.contains("cores"),
        "{out}"
    );
    // A preset written out as JSON runs the same model.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("tiny.json");
    let tiny = engine::config::ModelConfig::preset("tiny").unwrap();
    std::fs::write(&cfg, serde_json::to_string_pretty(&tiny).unwrap()).unwrap();
    let a = row(&engine(
        &[
            "bench",
            "--config",
            cfg.to_str().unwrap(),
            "-pg",
            "8,6",
            "-r",
            "1",
        ],
        &[],
    ));
    let b = row(&engine(
        &["bench", "--preset", "tiny", "-pg", "8,6", "-r", "1"],
        &[],
    ));
    assert_eq!(a["output_digest"], b["output_digest"]);
}

/// Every row of a run under its one header, as maps from column to field.
fn table(o: &Output) -> Vec<std::collections::HashMap<String, String>> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout.clone()).unwrap();
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            assert_eq!(fields.len(), header.len(), "{l}");
            header
                .iter()
                .map(|h| h.to_string())
                .zip(fields.into_iter().map(String::from))
                .collect()
        })
        .collect()
}

fn number(row: &std::collections::HashMap<String, String>, column: &str) -> f64 {
    row[column]
        .parse()
        .unwrap_or_else(|_| panic!("{column} = {:?}", row[column]))
}

/// `--rows reps`: the summary, then one row per timed rep with its own times, `rep` 0..R.
#[test]
fn rep_rows_follow_the_summary_with_each_reps_own_times() {
    let args: Vec<&str> = TINY.iter().copied().chain(["--rows", "reps"]).collect();
    let rows = table(&engine(&args, &[]));
    assert_eq!(rows.len(), 3, "the summary and 2 reps");
    let reps: Vec<&str> = rows.iter().map(|r| r["rep"].as_str()).collect();
    assert_eq!(reps, ["0", "1", "2"]);
    let decode = |r| number(&rows[r], "decode_seconds_mean");
    assert!(
        ((decode(1) + decode(2)) / 2.0 - decode(0)).abs() < 2e-6,
        "the summary's mean is the reps' mean"
    );
    let timed = |r| number(&rows[r], "timed_seconds");
    assert!((timed(1) + timed(2) - timed(0)).abs() < 2e-6);
    assert!(timed(1) >= decode(1) && number(&rows[0], "startup_seconds") > 0.0);
    let per_token = number(&rows[1], "decode_us_per_token");
    // decode_seconds_mean has six decimals: ±0.05 µs a token over 10 tokens.
    assert!(
        (per_token - decode(1) * 1e6 / 10.0).abs() < 0.06,
        "{per_token}"
    );
    for r in &rows[1..] {
        for column in ["output_digest", "spec_rounds", "startup_seconds", "n_gen"] {
            assert_eq!(r[column], rows[0][column], "{column}");
        }
    }
}

/// `--rows ops`: the summary with empty kernel columns, then one row per CPU operation of
/// the decode, the longest first, timed after the timed reps.
#[test]
fn op_rows_follow_the_summary_one_per_operation() {
    let args: Vec<&str> = TINY.iter().copied().chain(["--rows", "ops"]).collect();
    let o = engine(&args, &[]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        err.contains("op rows: ") && err.contains("timing the rows cost"),
        "{err}"
    );
    let rows = table(&o);
    let kernel_columns = ["kernel", "launches_per_token", "us_per_token", "share"];
    for column in kernel_columns {
        assert_eq!(rows[0][column], "", "{column} is empty on the summary row");
    }
    let names: Vec<&str> = rows[1..].iter().map(|r| r["kernel"].as_str()).collect();
    for op in [
        "matmul",
        "ffn_add",
        "gdn_recurrence",
        "attention",
        "lm_head_argmax",
    ] {
        assert!(names.contains(&op), "{op} missing from {names:?}");
    }
    let mut distinct = names.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), names.len(), "{names:?}");
    let us: Vec<f64> = rows[1..]
        .iter()
        .map(|r| number(r, "us_per_token"))
        .collect();
    assert!(us.windows(2).all(|w| w[0] >= w[1]), "longest first: {us:?}");
    let share: f64 = rows[1..].iter().map(|r| number(r, "share")).sum();
    assert!(share > 0.5 && share <= 1.0 + 1e-6, "{share}");
    let lm_head = rows
        .iter()
        .find(|r| r["kernel"] == "lm_head_argmax")
        .unwrap();
    assert_eq!(
        number(lm_head, "launches_per_token"),
        1.0,
        "one LM head a token"
    );
    for r in &rows[1..] {
        assert_eq!(r["output_digest"], rows[0]["output_digest"]);
    }
}

/// `ENGINE_SLOW_OP`: the operation's row grows by its percent, the tokens stay the same; a
/// bad value is refused with the operations it may name.
#[test]
fn a_slowed_operation_grows_its_row_and_changes_no_token() {
    let args: Vec<&str> = [
        "bench", "--preset", "tiny", "-pg", "12,40", "-r", "3", "--rows", "ops", "-t", "1",
    ]
    .to_vec();
    let us = |rows: &[std::collections::HashMap<String, String>], op: &str| {
        number(
            rows.iter().find(|r| r["kernel"] == op).unwrap(),
            "us_per_token",
        )
    };
    let runs =
        |env: &[(&str, &str)]| -> Vec<_> { (0..3).map(|_| table(&engine(&args, env))).collect() };
    let (base, slow) = (runs(&[]), runs(&[("ENGINE_SLOW_OP", "matmul:100")]));
    assert_eq!(slow[0][0]["output_digest"], base[0][0]["output_digest"]);
    // Processes one after the other on a machine that may be busy (the tests run beside each
    // other): here only that the row grows, each side read as its quickest of three runs, which
    // a busy moment can only slow; its size is read paired, pass by pass, in
    // `breakdown_ladder.rs`.
    let quickest = |runs: &[Vec<_>]| {
        runs.iter()
            .map(|rows| us(rows, "matmul"))
            .fold(f64::INFINITY, f64::min)
    };
    let ratio = quickest(&slow) / quickest(&base);
    assert!(ratio > 1.2, "matmul ×{ratio}, 2 asked");
    fails(
        TINY,
        &[("ENGINE_SLOW_OP", "matmull:5")],
        &[
            "ENGINE_SLOW_OP",
            "`matmull:5`",
            "embed, rms_norm, matmul",
            "from 0 to 1000",
        ],
    );
}

/// `engine energy-counter` reads the card's counter where there is one, and elsewhere says
/// why it cannot and what to do, without a panic.
#[test]
fn the_energy_counter_reads_the_card_or_says_what_it_needs() {
    let o = engine(&["energy-counter", "--seconds", "1"], &[]);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(!err.contains("panicked"), "{err}");
    if o.status.success() {
        assert!(
            out.contains("energy counter:") && out.contains("ms (median)"),
            "{out}"
        );
    } else {
        assert!(
            err.contains("NVML") && err.contains("run it on the machine with the card"),
            "{err}"
        );
        assert!(out.is_empty(), "{out}");
    }
}
