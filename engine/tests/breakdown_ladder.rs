//! The CPU breakdown end to end: `engine bench --rows ops` as a ladder's command through
//! `runner run`, `analyze verify` and `analyze report`, with one operation made slower on
//! purpose (`ENGINE_SLOW_OP`) and one arm that runs an operation the others do not (the
//! decode pad): the report names the slowed operation first, with its sign and size.

use clap::Parser;

fn spec(engine: &str) -> String {
    format!(
        r#"name = "breakdown-e2e"
command = ["{engine}", "bench", "--preset", "small", "-pg", "16,16", "-r", "2", "-t", "1", "--rows", "ops"]
passes = 6
timeout_s = 120

[[arm]]
name = "base"
role = "base"

[[arm]]
name = "slow"
env = {{ ENGINE_SLOW_OP = "ffn_add:100" }}

[[arm]]
name = "pad"
env = {{ ENGINE_DECODE_PAD_PCT = "10" }}

[[metric]]
column = "decode_tok_s"
better = "higher"

[breakdown]
key = "kernel"
value = "us_per_token"
total = "decode_us_per_token"
launches = "launches_per_token"
"#
    )
}

fn analyze(args: &[&str]) -> i32 {
    let cli = analyze::cli::Cli::parse_from(std::iter::once("analyze").chain(args.iter().copied()));
    analyze::cli::run(&cli).unwrap()
}

#[test]
fn a_slowed_operation_leads_the_breakdown_of_a_real_ladder() {
    let dir = tempfile::tempdir().unwrap();
    let spec_path = dir.path().join("breakdown-e2e.toml");
    std::fs::write(&spec_path, spec(env!("CARGO_BIN_EXE_engine"))).unwrap();
    let out = dir.path().to_str().unwrap();
    let cli = runner::cli::Cli::parse_from([
        "runner",
        "run",
        spec_path.to_str().unwrap(),
        "--tag",
        "t",
        "--out",
        out,
    ]);
    assert_eq!(
        runner::cli::run(cli),
        std::process::ExitCode::SUCCESS,
        "the pad arm prints one row more, per arm"
    );
    let raw = dir.path().join("breakdown-e2e_t.csv");
    let raw = raw.to_str().unwrap();
    assert_eq!(analyze(&["verify", raw]), 0, "one connected run");
    let json = dir.path().join("r.json");
    let md = dir.path().join("r.md");
    let code = analyze(&[
        "report",
        raw,
        "--json",
        json.to_str().unwrap(),
        "-o",
        md.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let arms = &report["ladders"][0]["breakdown"]["arms"];
    let slow = &arms[0];
    assert_eq!(slow["arm"], "slow");
    let ffn = &slow["keys"][0];
    assert_eq!(ffn["key"], "ffn_add", "the slowed operation first: {slow}");
    let pct = ffn["delta_pct"].as_f64().unwrap();
    assert!(
        (60.0..160.0).contains(&pct),
        "ffn_add {pct:+.1} %, 100 % asked: {ffn}"
    );
    assert!(ffn["delta"].as_f64().unwrap() > 0.0);
    assert_eq!(ffn["holm_verdict"], "more", "{ffn}");
    assert!(
        slow["closure"]["total"]["estimate"].as_f64().unwrap() > 0.0,
        "the step grew: {}",
        slow["closure"]
    );
    let pad = &arms[1];
    let own = pad["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == "pad_round")
        .unwrap_or_else(|| panic!("{pad}"));
    assert_eq!(own["only_in"], "arm");
    assert!(own["delta"].as_f64().unwrap() > 0.0, "{own}");
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("### Where the time moves"), "{text}");
}
