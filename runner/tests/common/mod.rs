//! Helpers shared by the runner crate's integration tests (`mod common;` in each test file).

#![allow(dead_code)]

use ladder::verify::{replay, DefectKind, Ladder};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The path of the runner binary that cargo built for these tests.
pub fn runner() -> &'static str {
    env!("CARGO_BIN_EXE_runner")
}

/// The path where `cargo test` builds the `test_engine` example, beside the binaries.
pub fn test_engine_path() -> PathBuf {
    Path::new(runner())
        .parent()
        .unwrap()
        .join("examples/test_engine")
}

/// The path of the `test_engine` example, asserting that cargo built it.
pub fn test_engine() -> PathBuf {
    let path = test_engine_path();
    assert!(
        path.is_file(),
        "{} is missing: run the tests with cargo test",
        path.display()
    );
    path
}

/// Writes `dir/{name}.toml`, a spec of the test engine with arms `off` (the base, speed 100)
/// and `on` (speed 101) and metric `tok_s`; `top` goes after `passes`, `env` into `[env]`.
pub fn write_test_engine_spec(
    dir: &Path,
    name: &str,
    passes: usize,
    top: &str,
    env: &str,
) -> PathBuf {
    let text = format!(
        r#"name = "{name}"
command = ["{}"]
passes = {passes}
{top}
[env]
{env}

[[arm]]
name = "off"
role = "base"
env = {{ TEST_SPEED = "100" }}

[[arm]]
name = "on"
env = {{ TEST_SPEED = "101" }}

[[metric]]
column = "tok_s"
better = "higher"
"#,
        test_engine_path().display()
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// A `runner run SPEC --tag t --out OUT` command.
pub fn run_command(spec: &Path, out: &Path) -> Command {
    let mut command = Command::new(runner());
    command
        .arg("run")
        .arg(spec)
        .args(["--tag", "t", "--out"])
        .arg(out);
    command
}

/// Copies the test engine into `dir/engine`: a private copy that a test may replace.
pub fn copy_test_engine(dir: &Path) -> PathBuf {
    let engine = dir.join("engine");
    std::fs::copy(test_engine(), &engine).unwrap();
    engine
}

/// A fresh folder in which the runner writes ladder `name`, tag `t`, under `raw/`.
pub struct RunDir {
    pub dir: tempfile::TempDir,
    name: &'static str,
}

impl RunDir {
    /// A new empty folder for ladder `name`.
    pub fn new(name: &'static str) -> RunDir {
        RunDir {
            dir: tempfile::tempdir().unwrap(),
            name,
        }
    }

    /// The runner's output folder, `raw/`.
    pub fn out(&self) -> PathBuf {
        self.dir.path().join("raw")
    }

    /// The ladder file the runner writes, `raw/{name}_t.csv`.
    pub fn file(&self) -> PathBuf {
        self.out().join(format!("{}_t.csv", self.name))
    }

    /// The command `runner run SPEC --tag t --out raw/`.
    pub fn command(&self, spec: &Path) -> Command {
        run_command(spec, &self.out())
    }

    /// Runs `runner run SPEC` to its end.
    pub fn run(&self, spec: &Path) -> Output {
        self.command(spec).output().unwrap()
    }

    /// The ladder file's text.
    pub fn text(&self) -> String {
        std::fs::read_to_string(self.file()).unwrap()
    }

    /// The kinds of the defects that `replay` finds in the ladder file, in order.
    pub fn defect_kinds(&self) -> Vec<DefectKind> {
        defect_kinds(&self.text())
    }
}

/// The kinds of the defects that `replay` finds in a ladder file's text, in order.
pub fn defect_kinds(text: &str) -> Vec<DefectKind> {
    replay(text.as_bytes())
        .verdict
        .defects
        .iter()
        .map(|d| d.kind)
        .collect()
}

/// A finished process's stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The values of `column` in arm `arm`'s cells, in file order.
pub fn column(ladder: &Ladder, column: &str, arm: &str) -> Vec<String> {
    let c = ladder
        .column(column)
        .unwrap_or_else(|| panic!("no column {column}"));
    let a = ladder
        .start
        .arms
        .iter()
        .position(|x| x.name == arm)
        .unwrap();
    ladder
        .rows
        .iter()
        .filter(|r| r.arm == a)
        .map(|r| r.fields.get(c).unwrap().to_string())
        .collect()
}

pub fn hash(path: &Path) -> String {
    blake3::hash(&std::fs::read(path).unwrap())
        .to_hex()
        .to_string()
}
