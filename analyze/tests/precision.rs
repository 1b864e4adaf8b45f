//! Precision per device-minute (METHOD.md): where a ladder's time goes, the variance
//! components of ladders with repetition rows, and `analyze plan` on a pilot, read from
//! generated ladders whose components and costs are known.

mod common;

use analyze::analysis::LadderReport;
use ladder::sample::{Sample, SampleArm, SampleReps};
use ladder::Role;
use std::path::PathBuf;
use std::process::{Command, Output};

/// Two arms with repetition rows: a cell's level moves by `between_pct`, each repetition by
/// `within_pct` around it (so the paired log ratio's components are twice their squares).
fn reps_sample(seed: u64, passes: usize, between_pct: f64, within_pct: f64) -> Sample {
    let mut s = Sample::new(
        "reps",
        &format!("s{seed}"),
        vec![
            SampleArm::new("off", Role::Base, 0.0),
            SampleArm::new("on", Role::Arm, 1.0),
        ],
    );
    (s.seed, s.passes, s.noise_limit_pct) = (seed, passes, None);
    s.reps = Some(SampleReps {
        between_pct,
        within_pct,
        ..SampleReps::new(8, 1.5, 0.5)
    });
    s
}

use common::write;

fn analyze(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_analyze"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// 20 ladders of 100 analysis passes and 8 repetitions: the components averaged over them
/// must land on the truth within three of their sampling sds (METHOD.md gives them).
#[test]
fn the_components_recover_known_between_and_within_variances() {
    let (between_pct, within_pct, r, m, k): (f64, f64, f64, f64, f64) =
        (1.0, 2.0, 8.0, 100.0, 20.0);
    let texts: Vec<String> = (1..=20)
        .map(|seed| reps_sample(seed, 101, between_pct, within_pct).file_text())
        .collect();
    let reading = common::read("components", &texts);
    let (mut between, mut within) = (0.0, 0.0);
    for report in &reading.reports {
        let v = report.variance_components.as_ref().expect("components");
        assert_eq!((v.reps, v.passes, v.arms.len()), (8, 100, 1));
        between += v.arms[0].between_var() / k;
        within += v.arms[0].within_var() / k;
    }
    let sigma_b2 = 2.0 * (between_pct / 100.0f64).powi(2);
    let sigma_w2 = 2.0 * (within_pct / 100.0f64).powi(2);
    let sd_msw = sigma_w2 * (2.0 / (m * (r - 1.0))).sqrt() / k.sqrt();
    let sd_msb = (r * sigma_b2 + sigma_w2) * (2.0 / (m - 1.0)).sqrt() / k.sqrt();
    let sd_between = (sd_msb.powi(2) + sd_msw.powi(2)).sqrt() / r;
    assert!(
        (within - sigma_w2).abs() < 3.0 * sd_msw,
        "within {within:.3e}, truth {sigma_w2:.3e} ± {sd_msw:.1e}"
    );
    assert!(
        (between - sigma_b2).abs() < 3.0 * sd_between,
        "between {between:.3e}, truth {sigma_b2:.3e} ± {sd_between:.1e}"
    );
}

/// The summary row is the repetitions' geometric mean, so a pass's mean log ratio is the
/// headline's: the sd of a pass the components give is the headline's `s`.
#[test]
fn a_pass_sd_is_the_headline_spread() {
    let report = common::one("pass_sd", reps_sample(3, 9, 1.0, 2.0).file_text());
    let v = report.variance_components.as_ref().unwrap();
    let a = &v.arms[0];
    let headline = &report.metrics[0].arms[0].figures;
    let s = headline.sem_pct * (headline.n as f64).sqrt();
    assert!(
        (a.pass_sd_pct - s).abs() < 1e-4 * s,
        "{} vs {s}",
        a.pass_sd_pct
    );
    // The share of a pass's variance between cells, at the ladder's 8 repetitions.
    let (b, w) = (a.between_var(), a.within_var());
    assert!((a.between_share - b / (b + w / 8.0)).abs() < 1e-12);
    assert_eq!(
        (a.column.as_str(), a.arm.as_str(), a.against.as_str()),
        ("decode_tok_s", "on", "off")
    );
}

fn time_of(report: &LadderReport, arm: &str) -> analyze::time_use::ArmTime {
    report
        .time_use
        .iter()
        .find(|a| a.arm == arm)
        .unwrap()
        .clone()
}

#[test]
fn the_time_goes_to_start_up_repetitions_and_the_rest() {
    // 8 repetitions of 0.5 s after 1.5 s of start-up and 0.25 s of exit: a 5.75 s cell.
    let report = common::one("time", reps_sample(1, 6, 0.0, 0.0).file_text());
    let on = time_of(&report, "on");
    assert_eq!(on.cells, 6);
    assert!((on.wall_s - 6.0 * 5.75).abs() < 1e-9);
    assert!((on.efficiency.unwrap() - 4.0 / 5.75).abs() < 1e-9);
    assert!((on.startup_share.unwrap() - 1.5 / 5.75).abs() < 1e-9);
    assert!((report.device_seconds.unwrap() - 12.0 * 5.75).abs() < 1e-9);
    // Without the engine's columns: the device time from the wall, no efficiency.
    let mut plain = reps_sample(1, 6, 0.0, 0.0);
    plain.reps = None;
    let report = common::one("time_plain", plain.file_text());
    let on = time_of(&report, "on");
    assert_eq!((on.efficiency, on.startup_s, on.cells), (None, None, 6));
    assert!(report.variance_components.is_none() && report.variance_note.is_none());
    let walls: f64 = report.time_use.iter().map(|a| a.wall_s).sum();
    assert_eq!(report.device_seconds, Some(walls));
    assert!(walls > 12.0 * 10.0 && walls < 12.0 * 10.1);
}

/// The output identity reads each cell's summary row: its repetition rows may print another
/// digest, or none, without making the cell differ.
#[test]
fn the_identity_reads_each_cells_summary_row_not_its_repetitions() {
    let mut sample = reps_sample(1, 6, 0.0, 0.0);
    sample.digest = true;
    let text = common::edit_rows(&sample.file_text(), |row| {
        if row.number("ladder_row") > 0 && row.get("ladder_arm") == "on" {
            row.set("output_digest", "");
        }
        true
    });
    let report = common::one("identity_reps", text);
    let identity = report.identity.as_ref().unwrap();
    // Five analysis passes, one arm against the base in each, every output the base's.
    assert_eq!(
        (identity.comparisons, identity.identical, identity.distinct),
        (5, 5, 1)
    );
}

/// A cell without its `ladder_wall_s` is timed by its own timestamps.
#[test]
fn a_cell_without_its_wall_is_timed_by_its_timestamps() {
    let text = reps_sample(1, 6, 0.0, 0.0).file_text();
    let blank = common::edit_rows(&text, |row| {
        row.set("ladder_wall_s", "");
        true
    });
    let report = common::one("time_blank", blank);
    assert!((report.device_seconds.unwrap() - 12.0 * 5.75).abs() < 1e-6);
}

/// A start-up or timed value that is negative or not finite is no time: the arm's sum, its
/// efficiency and its start-up share are missing, not wrong.
#[test]
fn a_negative_or_infinite_time_is_missing() {
    let text = reps_sample(1, 6, 0.0, 0.0).file_text();
    for bad in ["-1.0", "inf"] {
        let broken = common::edit_rows(&text, |row| {
            if row.cell() == (2, "on", 0) {
                row.set("timed_seconds", bad);
                row.set("startup_seconds", bad);
            }
            true
        });
        let on = time_of(&common::one(&format!("time_{bad}"), broken), "on");
        assert_eq!(
            (on.timed_s, on.efficiency, on.startup_s, on.startup_share),
            (None, None, None, None),
            "{bad}"
        );
    }
}

#[test]
fn repetition_rows_pass_verify_and_reach_every_report() {
    let path = write("cli", "reps.csv", &reps_sample(2, 8, 1.0, 2.0).file_text());
    let file = path.to_str().unwrap();
    let verified = stdout(&analyze(&["verify", file]));
    assert!(
        verified.contains("one connected run, 16 of 16 cells"),
        "{verified}"
    );
    let summary = stdout(&analyze(&["report", file, "--summary"]));
    assert!(
        summary.contains("Device time 92.0 s (16 cells); timed/wall: off 69.6 %, on 69.6 %"),
        "{summary}"
    );
    assert!(
        summary.contains("Variance components, 8 repetitions a cell (7 analysis passes):"),
        "{summary}"
    );
    assert!(
        summary.contains("A device-minute buys decode_tok_s: ±"),
        "{summary}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&analyze(&["report", file, "--json", "-"]))).unwrap();
    let ladder = &json["ladders"][0];
    assert_eq!(ladder["device_seconds"], 92.0);
    assert_eq!(ladder["time_use"][1]["arm"], "on");
    assert_eq!(ladder["variance_components"]["reps"], 8);
    assert_eq!(ladder["minute_halfwidths"][0]["pass_seconds"], 11.5);
    assert!(
        ladder["variance_components"]["arms"][0]["within_sd_pct"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let markdown = stdout(&analyze(&["report", file]));
    for heading in [
        "### Where the time goes",
        "### Variance components (8 repetitions a cell, 7 analysis passes)",
        "### What a device-minute buys",
    ] {
        assert!(markdown.contains(heading), "{heading}");
    }
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// `H₆₀ = 100·(exp(z·s·√(c/60)) − 1)` with `s` the arm's own spread and `c` an analysis pass's
/// device seconds: two cells of 5.75 s here.
#[test]
fn a_device_minute_buys_the_half_width_of_sixty_over_c_passes() {
    let report = common::one("minute", reps_sample(4, 13, 1.0, 2.0).file_text());
    let h = &report.minute_halfwidths[0];
    let headline = &report.metrics[0].arms[0].figures;
    let s = headline.sem_pct * (headline.n as f64).sqrt() / 100.0;
    assert_eq!(
        (h.arm.as_str(), h.against.as_str(), h.passes),
        ("on", "off", 12)
    );
    assert!((h.pass_seconds - 11.5).abs() < 1e-9, "{}", h.pass_seconds);
    let want = 100.0 * (1.959964 * s * (11.5f64 / 60.0).sqrt()).exp_m1();
    assert!(
        (h.halfwidth_pct - want).abs() < 1e-4 * want,
        "{h:?} against {want}"
    );
    assert!(h.ci_low_pct < want && want < h.ci_high_pct);
}

/// Two designs, the second's passes three times as noisy: pooled over two ladders each, it
/// needs about nine times the device time for one half-width, resolved as the dearer.
#[test]
fn designs_pool_their_ladders_and_compare_by_device_time() {
    let design = |name: &str, seed: u64, between_pct: f64| {
        let mut s = reps_sample(seed, 31, between_pct, 0.0);
        s.ladder = name.to_string();
        s.file_text()
    };
    let texts = [
        design("quiet", 1, 0.5),
        design("quiet", 2, 0.5),
        design("noisy", 3, 1.5),
        design("noisy", 4, 1.5),
    ];
    let reading = common::read("pools", &texts);
    let [quiet, noisy] = reading.minute_pools.as_slice() else {
        panic!("{:?}", reading.minute_pools);
    };
    assert_eq!(
        (quiet.spec.as_str(), quiet.df, quiet.ladders.len()),
        ("quiet", 58, 2)
    );
    assert_eq!(quiet.time_ratio, None, "the reference");
    // The pooled sd from the ladders' own.
    let sd = |tag: usize| reading.reports[tag].minute_halfwidths[0].sd_pct;
    let pooled = ((sd(2).powi(2) + sd(3).powi(2)) / 2.0).sqrt();
    assert!((noisy.sd_pct - pooled).abs() < 1e-9 * pooled);
    let t = noisy.time_ratio.as_ref().expect("compared with the first");
    let want = (noisy.sd_pct / quiet.sd_pct).powi(2) * noisy.pass_seconds / quiet.pass_seconds;
    assert!((t.ratio - want).abs() < 1e-9 * want);
    assert!(t.ci_low > 1.0 && t.ratio > 4.0 && t.ratio < 20.0, "{t:?}");
    assert_eq!((t.spec.as_str(), t.reading()), ("quiet", "dearer"));
    let files: Vec<String> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            write("pools", &format!("{i}.csv"), text)
                .display()
                .to_string()
        })
        .collect();
    let mut args = vec!["report"];
    args.extend(files.iter().map(String::as_str));
    args.push("--summary");
    let summary = stdout(&analyze(&args));
    assert!(
        summary.contains("What a device-minute buys, per design"),
        "{summary}"
    );
    assert!(summary.contains("of quiet's: dearer"), "{summary}");
    args.pop();
    let markdown = stdout(&analyze(&args));
    assert!(
        markdown.contains("## What a device-minute buys, per design"),
        "{markdown}"
    );
}

#[test]
fn unreadable_repetition_rows_are_named() {
    let text = reps_sample(2, 8, 1.0, 2.0).file_text();
    // The first cell's fourth repetition claims to be its third.
    let broken = text.replacen(",0.500000,4\n", ",0.500000,3\n", 1);
    assert_ne!(broken, text);
    let report = common::one("broken", broken);
    let note = report.variance_note.unwrap();
    assert!(note.contains("are not numbered 1…R once each"), "{note}");
    assert!(report.variance_components.is_none());
}

/// The components of a ladder file, or the note saying why there are none; `name` keeps
/// tests that run at once out of each other's folders.
fn components(name: &str, text: String) -> Result<analyze::variance::VarianceComponents, String> {
    let report = common::one(name, text);
    match (report.variance_components, report.variance_note) {
        (Some(v), None) => Ok(v),
        (None, Some(note)) => Err(note),
        other => panic!("components and a note, or neither: {other:?}"),
    }
}

#[test]
fn two_analysis_passes_are_enough_and_one_is_refused() {
    // 1 warm-up pass: 3 passes leave two analysis passes, 2 leave one.
    let two = components("two", reps_sample(4, 3, 1.0, 2.0).file_text()).unwrap();
    assert_eq!((two.reps, two.passes), (8, 2));
    let one = components("one", reps_sample(4, 2, 1.0, 2.0).file_text()).unwrap_err();
    assert!(
        one.contains("has 1 complete analysis pass(es); the components need two"),
        "{one}"
    );
}

#[test]
fn one_repetition_a_cell_is_refused_with_the_fix() {
    let mut sample = reps_sample(5, 8, 1.0, 2.0);
    sample.reps.as_mut().unwrap().count = 1;
    let note = components("r1", sample.file_text()).unwrap_err();
    assert!(note.contains("run the engine with -r 2 or more"), "{note}");
}

#[test]
fn a_repetition_value_that_is_not_a_positive_number_is_named() {
    let text = reps_sample(6, 8, 1.0, 2.0).file_text();
    for bad in ["0.000000", "-1.0", "inf"] {
        let broken = common::edit_rows(&text, |row| {
            if row.cell() == (3, "on", 2) {
                row.set("decode_tok_s", bad);
            }
            true
        });
        let note = components(&format!("bad{bad}"), broken).unwrap_err();
        assert!(
            note.contains(&format!(
                "decode_tok_s is {bad:?} on a repetition row, not a positive number"
            )),
            "{bad}: {note}"
        );
    }
}

/// A cell's summary row (`ladder_row` 0) is never one of its repetitions, whatever its `rep`
/// column says.
#[test]
fn the_summary_row_is_never_a_repetition() {
    let text = reps_sample(7, 8, 1.0, 2.0).file_text();
    let claims_one = common::edit_rows(&text, |row| {
        if row.number("ladder_row") == 0 {
            row.set("rep", 1);
        }
        true
    });
    assert_eq!(
        components("claims", claims_one),
        components("summary", text)
    );
}

/// A pass where one of the two cells has no repetition rows (a file read with
/// `--allow-defects`: `verify` wants as many rows in every cell) adds no group: the
/// components are those of the passes where both cells have them.
#[test]
fn a_pass_without_one_cells_repetitions_is_left_out() {
    // No between-cell spread and a 1 % effect: a pass read as an empty group (a mean of 0
    // against the others' 1 %) would show as a between-cell sd near 0.4 %.
    let text = reps_sample(8, 8, 0.0, 0.1).file_text();
    let short = common::edit_rows(&text, |row| {
        let (pass, arm, rep) = row.cell();
        (pass, arm) != (4, "on") || rep == 0
    });
    let reading = common::read_with("short", &[short], true);
    let v = reading.reports[0].variance_components.clone().unwrap();
    let whole = components("whole", text).unwrap();
    assert_eq!(v.reps, 8);
    assert!(v.arms[0].between_sd_pct < 0.05, "{:?}", v.arms[0]);
    assert!((v.arms[0].within_sd_pct / whole.arms[0].within_sd_pct - 1.0).abs() < 0.2);
}

#[test]
fn plan_reads_a_pilot_and_prints_the_cheapest_design() {
    let path = write(
        "plan",
        "pilot.csv",
        &reps_sample(4, 12, 1.0, 2.0).file_text(),
    );
    let pilot = analyze::plan::pilot(&path).unwrap();
    assert_eq!((pilot.reps, pilot.arms, pilot.warmup), (8, 2, 1));
    assert!((pilot.start_s - 1.75).abs() < 1e-9 && (pilot.rep_s - 0.5).abs() < 1e-9);
    let h = 1.005f64.ln();
    let best = pilot.model(3).best(h).unwrap();
    let text = stdout(&analyze(&[
        "plan",
        path.to_str().unwrap(),
        "--halfwidth",
        "0.5",
        "--arms",
        "3",
    ]));
    let line = format!(
        "  r = {}: {} passes ({} analysis + 1 warm-up) × 3 arms",
        best.reps, best.passes, best.analysis
    );
    assert!(text.contains(&line), "{line}\n{text}");
    let spec = format!(
        "in the spec: \"-r\", \"{}\" in the engine's argv and passes = {}",
        best.reps, best.passes
    );
    assert!(text.contains(&spec), "{text}");
    assert!(
        text.contains("[stop] halfwidth_pct = 0.5, looks = ["),
        "{text}"
    );
    // Three arms against the pilot's two: a pass of 2 × (1.75 + 8 × 0.5) s against the plan's.
    let longer = format!(
        "a pass of the pilot took 11.5 s, one of this ladder takes {:.1} s: a drift",
        3.0 * (1.75 + best.reps as f64 * 0.5)
    );
    assert!(text.contains(&longer), "{longer}\n{text}");
    let same = stdout(&analyze(&[
        "plan",
        path.to_str().unwrap(),
        "--halfwidth",
        "0.5",
    ]));
    assert!(!same.contains("a pass of the pilot took"), "{same}");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn plan_writes_the_template_with_its_reps_and_pooled_stop() {
    let path = write(
        "plan-template",
        "pilot.csv",
        &reps_sample(4, 12, 1.0, 2.0).file_text(),
    );
    let template = path.with_file_name("template.toml");
    std::fs::write(
        &template,
        "# the goal\nname = \"goal\"\ncommand = [\"target/release/engine\", \"bench\", \"-r\", \"1\"]\noutput = \"csv\"\npasses = 6\n\
         [[arm]]\nname = \"a\"\nrole = \"base\"\nenv = { MODE = \"off\" }\n[[arm]]\nname = \"b\"\n[[arm]]\nname = \"c\"\n\
         [[metric]]\ncolumn = \"decode_tok_s\"\nbetter = \"higher\"\n",
    )
    .unwrap();
    let out = path.with_file_name("goal.toml");
    let (p, t, o) = (
        path.to_str().unwrap(),
        template.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let text = stdout(&analyze(&[
        "plan",
        p,
        "--halfwidth",
        "0.5",
        "--template",
        t,
        "--write",
        o,
    ]));
    // The template's three arms, not the pilot's two, are planned for.
    let pilot = analyze::plan::pilot(&path).unwrap();
    let goal = analyze::plan::Goal {
        halfwidth_pct: 0.5,
        arms: 3,
        within_s: None,
        stop: true,
    };
    let want = analyze::plan::applied(&pilot, &goal).unwrap();
    assert!(
        text.contains(&format!("wrote {o}: -r {}", want.reps)),
        "{text}"
    );
    let spec = ladder::spec::Spec::load(&out).unwrap().spec;
    let r = spec.command.iter().position(|a| a == "-r").unwrap();
    assert_eq!(spec.command[r + 1], want.reps.to_string());
    let stop = spec.stop.clone().unwrap();
    assert_eq!(stop.looks, want.looks);
    assert_eq!(stop.spread, ladder::spec::StopSpread::Pooled);
    assert!(text.contains(&format!(
        "[stop] spread = \"pooled\", halfwidth_pct = 0.5, looks = [{}]",
        want.looks
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )));
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("# the goal"));
    // --write alone is refused: it needs the template it writes.
    let alone = analyze(&["plan", p, "--halfwidth", "0.5", "--write", o]);
    assert_eq!(alone.status.code(), Some(2));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// A goal template of two arms beside the pilot at `pilot`, whose `-r` a plan sets.
fn two_arm_template(pilot: &std::path::Path) -> PathBuf {
    let template = pilot.with_file_name("template.toml");
    std::fs::write(
        &template,
        "name = \"goal\"\ncommand = [\"target/release/engine\", \"bench\", \"-r\", \"1\"]\noutput = \"csv\"\n\
         passes = 6\n[[arm]]\nname = \"a\"\nrole = \"base\"\nenv = { MODE = \"off\" }\n[[arm]]\nname = \"b\"\n\
         [[metric]]\ncolumn = \"decode_tok_s\"\nbetter = \"higher\"\n",
    )
    .unwrap();
    template
}

#[test]
fn plan_within_a_time_refuses_what_does_not_fit_and_cuts_the_looks() {
    let path = write(
        "plan-within",
        "pilot.csv",
        &reps_sample(4, 12, 1.0, 2.0).file_text(),
    );
    let pilot = analyze::plan::pilot(&path).unwrap();
    let model = pilot.model(2);
    let best = model.best(1.005f64.ln()).unwrap();
    let p = path.to_str().unwrap();
    // Less time than the cheapest design: refused, naming the narrowest half-width that fits.
    let short = format!("{}", (best.seconds * 0.5).floor());
    let o = analyze(&["plan", p, "--halfwidth", "0.5", "--within", &short]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let (h, d) = model.narrowest_within(short.parse().unwrap()).unwrap();
    for needle in [
        "more than the".to_string(),
        "given by --within".to_string(),
        format!(
            "the narrowest is ±{:.4} % (r = {}, {} passes",
            100.0 * h.exp_m1(),
            d.reps,
            d.passes
        ),
    ] {
        assert!(err.contains(&needle), "`{needle}` missing: {err}");
    }
    // Time for the design but not for the last look: the written [stop] ends within it.
    let template = two_arm_template(&path);
    let out = path.with_file_name("goal.toml");
    let (t, o) = (template.to_str().unwrap(), out.to_str().unwrap());
    let planned = |within: &str| {
        analyze(&[
            "plan",
            p,
            "--halfwidth",
            "0.5",
            "--within",
            within,
            "--template",
            t,
            "--write",
            o,
        ])
    };
    let free = analyze::plan::Goal {
        halfwidth_pct: 0.5,
        arms: 2,
        within_s: None,
        stop: true,
    };
    let uncut = analyze::plan::applied(&pilot, &free).unwrap();
    let last = *uncut.looks.last().unwrap();
    let within = best.seconds.max(model.seconds(best.reps, last) - 1.0);
    assert!(
        model.seconds(best.reps, last) > within,
        "the last look must not fit"
    );
    let w = format!("{within}");
    let o = planned(&w);
    let text = stdout(&o);
    assert!(text.contains("under --within"), "{text}");
    let stop = ladder::spec::Spec::load(&out).unwrap().spec.stop.unwrap();
    assert!(
        !stop.looks.is_empty() && *stop.looks.last().unwrap() < last,
        "{:?}",
        stop.looks
    );
    assert!(stop
        .looks
        .iter()
        .all(|&l| model.seconds(best.reps, l) <= within));
    assert_eq!(stop.looks[..], uncut.looks[..stop.looks.len()]);
    // Time for the first look alone, less than the fixed design needs: refused as a fixed
    // design, written as a [stop] that ends at its first look.
    let first = model.seconds(best.reps, uncut.looks[0]);
    assert!(
        first < best.seconds,
        "the pilot must make the first look the cheaper"
    );
    let w = format!("{first}");
    let fixed = analyze(&["plan", p, "--halfwidth", "0.5", "--within", &w]);
    assert_eq!(fixed.status.code(), Some(2));
    let o = planned(&w);
    assert!(
        stdout(&o).contains("the [stop] below ends within it"),
        "{}",
        stdout(&o)
    );
    let stop = ladder::spec::Spec::load(&out).unwrap().spec.stop.unwrap();
    assert_eq!(stop.looks, vec![uncut.looks[0]]);
    // Less than the first look: refused with what fits, and nothing written.
    std::fs::remove_file(&out).unwrap();
    let w = format!("{}", first - 0.5);
    let o = planned(&w);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let pass = format!("first look (pass {})", uncut.looks[0]);
    assert!(
        err.contains(&pass) && err.contains("the narrowest is ±"),
        "{err}"
    );
    assert!(!out.exists());
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_time_below_the_repetitions_floor_is_said_to_need_steadier_repetitions() {
    let path = write(
        "plan-floor",
        "pilot.csv",
        &reps_sample(7, 12, 0.0, 2.0).file_text(),
    );
    let model = analyze::plan::pilot(&path).unwrap().model(2);
    let h = 1.005f64.ln();
    let (floor, best) = (model.repetitions_floor(h), model.best(h).unwrap().seconds);
    assert!(floor < best, "{floor} against {best}");
    let refusal = |within: f64| {
        let w = format!("{}", within.floor());
        let o = analyze(&[
            "plan",
            path.to_str().unwrap(),
            "--halfwidth",
            "0.5",
            "--within",
            &w,
        ]);
        assert_eq!(o.status.code(), Some(2));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    // Below the floor no start-up saving can help, and the refusal says what would.
    let below = refusal(0.9 * floor);
    assert!(
        below.contains("with no start-up at all its timed repetitions alone would take")
            && below.contains("only steadier or shorter repetitions bring ±0.5 %"),
        "{below}"
    );
    // Above it (yet short of the cheapest design) a cheaper start-up could: not said.
    let above = refusal((floor + best) / 2.0);
    assert!(!above.contains("no start-up at all"), "{above}");
}

#[test]
fn or_narrowest_plans_the_narrowest_half_width_that_fits_within() {
    let path = write(
        "plan-or-narrowest",
        "pilot.csv",
        &reps_sample(4, 12, 1.0, 2.0).file_text(),
    );
    let pilot = analyze::plan::pilot(&path).unwrap();
    let model = pilot.model(2);
    let best = model.best(1.005f64.ln()).unwrap();
    let template = two_arm_template(&path);
    let out = path.with_file_name("goal.toml");
    let (p, t, o) = (
        path.to_str().unwrap(),
        template.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let within = (best.seconds * 0.3).floor();
    let w = format!("{within}");
    let args = ["plan", p, "--halfwidth", "0.5", "--within", &w];
    let write = ["--template", t, "--write", o];
    // Without the flag the goal is refused; with it, the narrowest goal that fits is planned
    // and written, said first.
    let refused = analyze(&[&args[..], &write[..]].concat());
    assert_eq!(refused.status.code(), Some(2));
    assert!(!out.exists());
    let planned = analyze(&[&args[..], &write[..], &["--or-narrowest"]].concat());
    let text = stdout(&planned);
    assert!(
        text.starts_with("--or-narrowest: ±0.5 % does not fit --within"),
        "{text}"
    );
    let spec = ladder::spec::Spec::load(&out).unwrap().spec;
    let stop = spec.stop.unwrap();
    let (fixed_h, _) = model.narrowest_within(within).unwrap();
    let fixed_pct = 100.0 * fixed_h.exp_m1();
    assert!(
        stop.halfwidth_pct >= fixed_pct && stop.halfwidth_pct <= fixed_pct * 1.05,
        "{} against the fixed design's ±{}",
        stop.halfwidth_pct,
        100.0 * fixed_h.exp_m1()
    );
    let reps = analyze::plan::applied(
        &pilot,
        &analyze::plan::Goal {
            halfwidth_pct: stop.halfwidth_pct,
            arms: 2,
            within_s: Some(within),
            stop: true,
        },
    )
    .unwrap()
    .reps;
    assert!(stop.looks.iter().all(|&l| model.seconds(reps, l) <= within));
    // The narrowest a fixed design reaches within: 3 % narrower does not fit.
    let narrower = format!("{}", fixed_pct * 0.97);
    let tighter = analyze(&["plan", p, "--halfwidth", &narrower, "--within", &w]);
    assert_eq!(tighter.status.code(), Some(2), "{}", stdout(&tighter));
    let fits = format!("{}", fixed_pct * 1.001);
    let fixed = analyze(&["plan", p, "--halfwidth", &fits, "--within", &w]);
    assert_eq!(fixed.status.code(), Some(0), "{}", stdout(&fixed));
    // A goal that fits is planned as asked, and the flag says nothing.
    let roomy = format!("{}", best.seconds * 2.0);
    let asked = analyze(&[
        "plan",
        p,
        "--halfwidth",
        "0.5",
        "--within",
        &roomy,
        "--or-narrowest",
    ]);
    assert!(
        !stdout(&asked).contains("--or-narrowest:"),
        "{}",
        stdout(&asked)
    );
    assert!(stdout(&asked).contains("±0.5 % in the least device time"));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// Where a `[stop]`'s first look does not fit at the fixed design's narrowest half-width, the
/// goal is widened in 2 % steps until it does.
#[test]
fn or_narrowest_widens_until_the_first_look_fits() {
    let path = write(
        "plan-widen",
        "pilot.csv",
        &reps_sample(1, 12, 1.0, 2.0).file_text(),
    );
    let pilot = analyze::plan::pilot(&path).unwrap();
    let within = 19.0;
    let (h, _) = pilot.model(2).narrowest_within(within).unwrap();
    let first = (100.0 * h.exp_m1() * 1e4).ceil() / 1e4;
    let goal = |halfwidth_pct| analyze::plan::Goal {
        halfwidth_pct,
        arms: 2,
        within_s: Some(within),
        stop: true,
    };
    assert!(analyze::plan::fitted(&pilot, goal(first), false).is_err());
    let (fitted, plan) = analyze::plan::fitted(&pilot, goal(0.01), true).unwrap();
    let widened = (first * 1.02 * 1e4).ceil() / 1e4;
    assert_eq!(fitted.halfwidth_pct, widened, "from ±{first} %");
    assert!(plan.contains(&format!("planned for ±{widened} %")));
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// A plan's printed duration (`48 s`, `5.2 min`, `3.1 h`) in seconds, with half its last
/// digit's step.
fn printed_seconds(text: &str) -> (f64, f64) {
    let (number, unit) = text.split_once(' ').unwrap();
    let value: f64 = number.parse().unwrap();
    match unit {
        "s" => (value, 0.5),
        "min" => (60.0 * value, 3.0),
        "h" => (3600.0 * value, 180.0),
        _ => panic!("no duration: {text}"),
    }
}

/// Each `[stop]` row gives its rule's looks, expected passes, device time and 99th percentile,
/// from its own degrees of freedom: `m0 − 1` each arm, `(m0 − 1)(N − 1)` pooled.
#[test]
fn the_stop_rows_give_each_rules_looks_passes_and_time() {
    let mut sample = reps_sample(3, 14, 1.0, 2.0);
    sample.warmup_passes = 2;
    let path = write("plan-rows", "pilot.csv", &sample.file_text());
    let pilot = analyze::plan::pilot(&path).unwrap();
    let (arms, h) = (16, 1.005f64.ln());
    let goal = analyze::plan::Goal {
        halfwidth_pct: 0.5,
        arms,
        within_s: None,
        stop: false,
    };
    let plan = analyze::plan::render(&pilot, &goal).unwrap();
    let model = pilot.model(arms);
    assert_eq!(model.warmup, 2);
    let best = model.best(h).unwrap();
    let v = model.variance(best.reps);
    let rules: [(&str, &dyn Fn(usize) -> usize); 2] = [
        ("", &|m0| m0 - 1),
        ("spread = \"pooled\", ", &|m0| (m0 - 1) * (arms - 1)),
    ];
    for (rule, df) in rules {
        let look = analyze::plan::first_look(v, h, df);
        let looks = analyze::plan::looks(model.warmup, &look);
        let list: Vec<String> = looks.iter().map(|l| l.to_string()).collect();
        let head = format!(
            "[stop] {rule}halfwidth_pct = 0.5, looks = [{}]: ",
            list.join(", ")
        );
        let row = plan
            .lines()
            .find(|l| l.contains(&head))
            .unwrap_or_else(|| panic!("`{head}` missing: {plan}"));
        let expected = model.warmup as f64 + look.expected;
        let tail = format!("about {expected:.1} passes, ");
        assert!(row.contains(&tail), "`{tail}` missing: {row}");
        let (time, p99) = row.split_once(&tail).unwrap().1.split_once("; ").unwrap();
        let (seconds, step) = printed_seconds(time);
        let truth = expected * model.seconds(best.reps, 1);
        assert!(
            (seconds - truth).abs() <= step,
            "{time} for {truth} s: {row}"
        );
        assert_eq!(
            p99,
            format!("99 % of ladders by pass {}", model.warmup + look.p99)
        );
    }
    // Without --within the looks run to the 99th percentile: no row says they end earlier.
    assert!(!plan.contains("the looks end at pass"), "{plan}");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// A sweep's pooled first look comes before each arm's own: where only the pooled one fits
/// `--within`, the plan is made (the written spec pools) and the other rule is said.
#[test]
fn a_sweep_is_planned_where_only_its_pooled_first_look_fits() {
    let path = write(
        "plan-pooled",
        "pilot.csv",
        &reps_sample(2, 12, 1.0, 2.0).file_text(),
    );
    let pilot = analyze::plan::pilot(&path).unwrap();
    let (arms, h) = (16, 1.02f64.ln());
    let model = pilot.model(arms);
    let best = model.best(h).unwrap();
    let v = model.variance(best.reps);
    let first = |df: &dyn Fn(usize) -> usize| {
        let look = analyze::plan::first_look(v, h, df);
        model.seconds(best.reps, model.warmup + look.analysis)
    };
    let (own, pooled) = (first(&|m0| m0 - 1), first(&|m0| (m0 - 1) * (arms - 1)));
    let within = pooled.ceil();
    assert!(
        within < own,
        "pooled {pooled} s, own {own} s, within {within} s"
    );
    let goal = analyze::plan::Goal {
        halfwidth_pct: 2.0,
        arms,
        within_s: Some(within),
        stop: true,
    };
    let (fitted, plan) = analyze::plan::fitted(&pilot, goal, false).unwrap();
    assert_eq!(fitted.halfwidth_pct, 2.0);
    assert!(
        plan.contains("on each arm's own spread: the [stop] rule's first look"),
        "{plan}"
    );
    assert!(
        plan.contains("[stop] spread = \"pooled\", halfwidth_pct = 2, looks"),
        "{plan}"
    );
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn plan_refuses_at_once_a_half_width_no_ladder_within_the_limits_reaches() {
    // 5 % between cells: ±0.001 % would need about a billion passes.
    let path = write(
        "out-of-reach",
        "pilot.csv",
        &reps_sample(4, 12, 5.0, 5.0).file_text(),
    );
    let template = two_arm_template(&path);
    let out = path.with_file_name("goal.toml");
    let o = analyze(&[
        "plan",
        path.to_str().unwrap(),
        "--halfwidth",
        "0.001",
        "--template",
        template.to_str().unwrap(),
        "--write",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for needle in [
        "±0.001 % is out of reach of 2 arms",
        "49999 analysis passes (the 100000 cells",
        "reach only ±0.0",
        "ask for a wider half-width",
        "decode_tok_s on ",
    ] {
        assert!(err.contains(needle), "`{needle}` missing: {err}");
    }
    assert!(!out.exists(), "no spec is written");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn plan_refuses_a_pilot_without_repetitions_with_the_fix() {
    let mut plain = reps_sample(4, 6, 1.0, 2.0);
    plain.reps = None;
    let path = write("refuse", "plain.csv", &plain.file_text());
    let out = analyze(&["plan", path.to_str().unwrap(), "--halfwidth", "0.5"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("has no startup_seconds or timed_seconds"),
        "{err}"
    );
    assert!(err.contains("engine bench --rows reps"), "{err}");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn plan_refuses_a_pilot_without_repetition_rows_or_not_connected() {
    let text = reps_sample(4, 6, 1.0, 2.0).file_text();
    // The summary rows alone: the columns are there, the repetitions are not.
    let summary: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with('#') || matches!(l.split(',').nth(6), Some("0" | "ladder_row")))
        .collect();
    let path = write("refuse_reps", "summary.csv", &(summary.join("\n") + "\n"));
    let out = analyze(&["plan", path.to_str().unwrap(), "--halfwidth", "0.5"]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the pilot has no repetition rows"), "{err}");
    assert!(err.contains("engine bench --rows reps"), "{err}");
    // Without its done record the pilot is not one connected run.
    let cut = text
        .lines()
        .filter(|l| !l.starts_with("#ladder-done"))
        .collect::<Vec<_>>();
    std::fs::write(&path, cut.join("\n") + "\n").unwrap();
    let out = analyze(&["plan", path.to_str().unwrap(), "--halfwidth", "0.5"]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("a pilot must be one connected run"), "{err}");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn plan_refuses_a_template_whose_base_cell_is_not_the_pilots() {
    let path = write(
        "plan-cells",
        "pilot.csv",
        &reps_sample(4, 12, 1.0, 2.0).file_text(),
    );
    let template = two_arm_template(&path);
    let padded = std::fs::read_to_string(&template)
        .unwrap()
        .replace("MODE = \"off\"", "MODE = \"off\", PAD = \"0\"");
    std::fs::write(&template, padded).unwrap();
    let out = path.with_file_name("goal.toml");
    let (p, t, o) = (
        path.to_str().unwrap(),
        template.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let args = [
        "plan",
        p,
        "--halfwidth",
        "0.5",
        "--template",
        t,
        "--write",
        o,
    ];
    let refused = analyze(&args);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    for needle in [
        "the template's base arm runs other cells than the pilot",
        "env PAD=\"0\" (the pilot's: unset)",
        "pilot the template's base cell",
        "--other-cells",
    ] {
        assert!(err.contains(needle), "`{needle}` missing: {err}");
    }
    assert!(!out.exists(), "a refused plan writes nothing");
    let anyway = stdout(&analyze(&[&args[..], &["--other-cells"]].concat()));
    assert!(
        anyway.starts_with(
            "--other-cells: the template's base cells are not the pilot's (env PAD=\"0\" (the pilot's: unset))"
        ),
        "{anyway}"
    );
    assert!(out.exists());
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn plan_refuses_a_pilot_or_a_template_of_several_layouts() {
    let mut layouts = reps_sample(4, 12, 1.0, 2.0);
    layouts
        .command
        .extend(["--layouts".to_string(), "4".to_string()]);
    let path = write("plan-layouts", "pilot.csv", &layouts.file_text());
    let out = analyze(&["plan", path.to_str().unwrap(), "--halfwidth", "0.5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for needle in [
        "pilot.csv's base cell runs `--layouts 4`",
        "without --layouts",
    ] {
        assert!(err.contains(needle), "`{needle}` missing from: {err}");
    }
    // A pilot without it, and a template that builds its model in four layouts.
    let plain = path.with_file_name("plain.csv");
    std::fs::write(&plain, reps_sample(4, 12, 1.0, 2.0).file_text()).unwrap();
    let template = two_arm_template(&plain);
    let text = std::fs::read_to_string(&template).unwrap();
    let four = text.replace("\"-r\", \"1\"]", "\"-r\", \"1\", \"--layouts\", \"4\"]");
    assert_ne!(four, text);
    std::fs::write(&template, four).unwrap();
    let written = path.with_file_name("goal.toml");
    let (p, t, o) = (
        plain.to_str().unwrap(),
        template.to_str().unwrap(),
        written.to_str().unwrap(),
    );
    for other in [&[][..], &["--other-cells"][..]] {
        let mut args = vec![
            "plan",
            p,
            "--halfwidth",
            "0.5",
            "--template",
            t,
            "--write",
            o,
        ];
        args.extend(other);
        let out = analyze(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("the template's base cell runs `--layouts 4`"),
            "{err}"
        );
        assert!(!written.exists());
    }
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

/// The repository's goal templates and the pilots `ladders/h200.sh` plans them from.
#[test]
fn the_goal_templates_run_their_pilots_cells() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ladders");
    let cell = |name: &str| {
        let spec = ladder::spec::Spec::load(&root.join(name)).unwrap().spec;
        analyze::plan::Cell::base_of(&spec)
    };
    let (aa, sweep) = (cell("aa-pilot-h200.toml"), cell("sweep-pilot-h200.toml"));
    assert_eq!(
        aa.difference(&cell("precision-aa-h200.template.toml")),
        None
    );
    assert_eq!(
        cell("aa-long-pilot-h200.toml").difference(&cell("precision-aa-long-h200.template.toml")),
        None
    );
    assert_eq!(
        sweep.difference(&cell("precision-sweep-h200.template.toml")),
        None
    );
    // The A/A pilot priced the sweep's first two runs: its cells have no pad.
    let why = aa.difference(&cell("precision-sweep-h200.template.toml"));
    assert_eq!(
        why.as_deref(),
        Some("env ENGINE_DECODE_PAD_PCT=\"0\" (the pilot's: unset)")
    );
}
