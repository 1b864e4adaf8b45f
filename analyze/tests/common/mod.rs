//! Ladder files with hand-chosen values, written as the runner writes them.
#![allow(dead_code)]

use analyze::analysis::{ExtrasConfig, LadderReport};
use analyze::reading::{self, Options, Reading};
use ladder::ladder_file::csv_line;
use ladder::sample::{Sample, SampleArm, SampleMetric};
use ladder::spec::Better;
use ladder::{Order, Role};
use std::path::PathBuf;

/// A ladder with rotate order whose engine columns hold `value(column, pass, arm)`.
pub struct Hand {
    pub sample: Sample,
    /// Engine columns after the metrics (e.g. a rounds or digest column).
    pub extra_columns: Vec<String>,
}

impl Hand {
    pub fn new(arms: &[(&str, Role)], metrics: &[(&str, Better)], passes: usize) -> Hand {
        let arms = arms
            .iter()
            .map(|(n, r)| SampleArm::new(n, *r, 0.0))
            .collect();
        let mut sample = Sample::new("hand", "t1", arms);
        sample.passes = passes;
        sample.metrics = metrics
            .iter()
            .map(|(c, b)| SampleMetric {
                column: c.to_string(),
                better: *b,
                level: 1.0,
                noise_limit_pct: None,
            })
            .collect();
        Hand {
            sample,
            extra_columns: Vec::new(),
        }
    }

    /// The file text; `value(column, pass, arm)` gives each engine field.
    pub fn text(&self, value: impl Fn(&str, usize, usize) -> String) -> String {
        self.text_until(self.sample.passes, value)
    }

    /// The file of a ladder that ran `run` of its passes (a `[stop]` ladder stopped there):
    /// its done record says so, as `ladder/2` writes it.
    pub fn text_until(&self, run: usize, value: impl Fn(&str, usize, usize) -> String) -> String {
        let s = &self.sample;
        let names: Vec<String> = s.arms.iter().map(|a| a.name.clone()).collect();
        let order = Order::new(s.scheme, names.clone(), s.passes, Some(s.seed));
        let mut columns: Vec<String> = ladder::ladder_file::HARNESS_COLUMNS
            .iter()
            .map(|c| c.to_string())
            .collect();
        let engine: Vec<String> = s
            .metrics
            .iter()
            .map(|m| m.column.clone())
            .chain(self.extra_columns.iter().cloned())
            .collect();
        columns.extend(engine.iter().cloned());
        let mut text = format!("{}\n{}\n", s.start_record().to_line(), csv_line(&columns));
        for (k, cell) in order.cells().enumerate().take_while(|(_, c)| c.pass < run) {
            let t = |us: usize| format!("2026-11-29T10:00:{:02}.{:06}Z", k, us);
            let mut row = vec![
                cell.pass.to_string(),
                cell.slot.to_string(),
                names[cell.arm].clone(),
                t(0),
                t(500_000),
                "0".into(),
            ];
            row.extend(engine.iter().map(|c| value(c, cell.pass, cell.arm)));
            text.push_str(&csv_line(&row));
            text.push('\n');
        }
        let stopped = match (&s.stop, run == s.passes) {
            (None, _) => "null",
            (Some(_), true) => "\"max-passes\"",
            (Some(_), false) => "\"precision\"",
        };
        text.push_str(&format!(
            "#ladder-done {{\"ended\":\"2026-11-29T10:01:00.000000Z\",\"cells\":{},\"passes\":{run},\"stopped\":{stopped}}}\n",
            run * names.len()
        ));
        text
    }
}

/// Writes `text` to `name` in a folder `dir` of this test process's own, kept for the test.
pub fn write(dir: &str, name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("analyze_files_{}_{dir}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Writes `texts` to fresh files and reads them as `analyze report` does (no bootstrap).
pub fn read(name: &str, texts: &[String]) -> Reading {
    read_with(name, texts, false)
}

/// The same, with `--allow-defects` when asked.
pub fn read_with(name: &str, texts: &[String], allow_defects: bool) -> Reading {
    try_read_with(name, texts, allow_defects).unwrap()
}

/// The same, giving the error `analyze report` would print.
pub fn try_read_with(name: &str, texts: &[String], allow_defects: bool) -> anyhow::Result<Reading> {
    let dir = std::env::temp_dir().join(format!("analyze_test_{}_{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let paths: Vec<PathBuf> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let path = dir.join(format!("{i}.csv"));
            std::fs::write(&path, text).unwrap();
            path
        })
        .collect();
    let options = Options {
        allow_defects,
        extras: ExtrasConfig {
            resamples: 200,
            seed: 1,
        },
        compare: Vec::new(),
        margin_pct: None,
    };
    let reading = reading::read(&paths, &options);
    std::fs::remove_dir_all(&dir).unwrap();
    reading
}

pub fn one(name: &str, text: String) -> LadderReport {
    read(name, &[text]).reports.into_iter().next().unwrap()
}

pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
}

/// One data row of a ladder file, its fields read and written by column name.
pub struct Row<'a> {
    columns: &'a [String],
    fields: Vec<String>,
}

impl Row<'_> {
    pub fn get(&self, column: &str) -> &str {
        &self.fields[self.at(column)]
    }

    pub fn number(&self, column: &str) -> usize {
        self.get(column).parse().unwrap()
    }

    /// The row's pass, arm and repetition within its cell.
    pub fn cell(&self) -> (usize, &str, usize) {
        let arm = self.get("ladder_arm");
        (self.number("ladder_pass"), arm, self.number("ladder_row"))
    }

    pub fn set(&mut self, column: &str, value: impl ToString) {
        let at = self.at(column);
        self.fields[at] = value.to_string();
    }

    fn at(&self, column: &str) -> usize {
        let at = self.columns.iter().position(|c| c == column);
        at.unwrap_or_else(|| panic!("the ladder has no column {column}"))
    }
}

/// The ladder file `text` with every data row passed through `edit`, which drops the rows it
/// answers false for; comment lines and the header stay as they are.
pub fn edit_rows(text: &str, mut edit: impl FnMut(&mut Row) -> bool) -> String {
    let mut columns: Vec<String> = Vec::new();
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with('#') || columns.is_empty() {
            if !line.starts_with('#') {
                columns = line.split(',').map(String::from).collect();
            }
            out += &format!("{line}\n");
            continue;
        }
        let fields = line.split(',').map(String::from).collect();
        let mut row = Row {
            columns: &columns,
            fields,
        };
        if edit(&mut row) {
            out += &format!("{}\n", row.fields.join(","));
        }
    }
    assert_ne!(out, text, "the edit changed no row");
    out
}
