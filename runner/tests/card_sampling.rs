//! The card sampled during each cell, through the runner: a recorded series played back
//! (`--card-playback`), the `[card] throttle = "defect"` rule replayed by `verify`, and a
//! host without NVML, whose columns stay empty.

mod common;

use common::{stderr, RunDir};
use ladder::card::{self, ENERGY_J, THROTTLE_SEEN};
use ladder::verify::{replay, DefectKind};
use std::path::{Path, PathBuf};

/// Each cell sleeps 0.3 s; the card is capped for power from 150 to 190 ms of it.
const SERIES: &str = "\
t_ms,energy_mj,power_mw,sm_clock_mhz,temp_c,mem_used_mib,throttle
0,5000000,60000,345,33,0,0x1
10,5000600,600000,1980,40,700,0x0
150,5084600,610000,1755,42,80000,0x4
190,5108000,600000,1980,42,80000,0x0
";

/// A `time` ladder of `sleep 0.3` with two arms and a reflexive control; `card` and
/// `metric` are appended as written.
fn spec(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let text = format!(
        r#"name = "{name}"
command = ["sleep", "0.3"]
output = "time"
passes = 3
{extra}
[[arm]]
name = "a"
role = "base"
[[arm]]
name = "b"
[[arm]]
name = "a-again"
role = "reflexive"
"#
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn series(dir: &Path) -> PathBuf {
    let path = dir.join("card.csv");
    std::fs::write(&path, SERIES).unwrap();
    path
}

/// Each cell's value of `column` (row 0).
fn column(text: &str, column: &str) -> Vec<String> {
    let ladder = replay(text.as_bytes()).ladder.unwrap();
    let at = ladder.column(column).unwrap();
    ladder
        .rows
        .iter()
        .map(|r| r.fields.get(at).unwrap().to_string())
        .collect()
}

#[test]
fn a_played_back_card_fills_the_columns_and_the_rule_makes_defects() {
    let run = RunDir::new("card-defect");
    let spec = spec(
        run.dir.path(),
        "card-defect",
        "[card]\nsample_ms = 20\nthrottle = \"defect\"\n",
    );
    let playback = series(run.dir.path());
    let out = run
        .command(&spec)
        .arg("--card-playback")
        .arg(&playback)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = run.text();
    let replayed = replay(text.as_bytes());
    let ladder = replayed.ladder.as_ref().unwrap();
    for c in card::COLUMNS {
        assert!(ladder.column(c).is_some(), "{c} missing");
    }
    let recorded = &ladder.start.card.as_ref().unwrap()["playback"];
    assert_eq!(recorded.as_str(), Some(playback.to_str().unwrap()));
    // Every cell saw the 40 ms cap: 9 defects, one per cell, each naming the reason.
    assert_eq!(column(&text, THROTTLE_SEEN), vec!["0x5"; 9]);
    assert_eq!(column(&text, ENERGY_J), vec!["108.000"; 9]);
    let defects = &replayed.verdict.defects;
    assert_eq!(defects.len(), 9, "{defects:?}");
    assert!(defects
        .iter()
        .all(|d| d.kind == DefectKind::CardThrottle && d.detail.contains("sw_power_cap")));
}

#[test]
fn energy_read_off_the_card_is_a_metric() {
    let run = RunDir::new("card-energy");
    let spec = spec(
        run.dir.path(),
        "card-energy",
        "[[metric]]\ncolumn = \"witness_energy_j\"\nbetter = \"lower\"\n",
    );
    let out = run
        .command(&spec)
        .arg("--card-playback")
        .arg(series(run.dir.path()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let replayed = replay(run.text().as_bytes());
    // Without [card] throttle = "defect" the cap is reported, not a defect.
    assert!(replayed.verdict.connected, "{:?}", replayed.verdict.defects);
    assert!(String::from_utf8_lossy(&out.stdout).contains("witness_energy_j mean"));
}

#[test]
fn without_nvml_the_columns_stay_empty_and_the_runner_says_so_once() {
    let run = RunDir::new("card-none");
    let spec = spec(run.dir.path(), "card-none", "");
    let out = run.run(&spec);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stderr(&out);
    assert_eq!(said.matches("cannot be sampled").count(), 1, "{said}");
    assert!(
        said.contains("witness_energy_j, witness_power_w_max"),
        "{said}"
    );
    let log = std::fs::read_to_string(run.file().with_extension("stderr.log")).unwrap();
    assert_eq!(log.matches("cannot be sampled").count(), 1, "{log}");
    let text = run.text();
    for c in card::COLUMNS {
        assert_eq!(column(&text, c), vec![""; 9], "{c}");
    }
}

#[test]
fn a_card_metric_without_a_card_is_refused_before_anything_is_written() {
    let run = RunDir::new("card-refused");
    let spec = spec(
        run.dir.path(),
        "card-refused",
        "[[metric]]\ncolumn = \"witness_energy_j\"\nbetter = \"lower\"\n",
    );
    let out = run.run(&spec);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("card-refused.toml:6: the metric \"witness_energy_j\""),
        "{said}"
    );
    assert!(said.contains("or drop the metric"), "{said}");
    assert!(!run.file().exists());
}
