//! Reading a spec: from its file, checked with the file, the line and the fix; from a start
//! record's recorded JSON; and the arms a `[scan]` adds, the same way for both.

use super::check;
use super::locate::Locator;
use super::{LoadedSpec, Spec, SpecError};
use serde::Deserialize;
use std::path::Path;

impl Spec {
    /// Reads the spec from a start record's `spec` field.
    pub fn from_json(json: &serde_json::Value) -> Result<Spec, String> {
        let mut spec =
            Spec::deserialize(json).map_err(|e| format!("the recorded spec is unusable: {e}"))?;
        spec.expand_scan();
        Ok(spec)
    }

    /// Puts the arms a `[scan]` generates before the declared ones (the first is the base).
    /// Both readers of a spec (the file and the start record) call it, so they agree.
    fn expand_scan(&mut self) {
        if let Some(scan) = &self.scan {
            let mut arms = scan.arms(&self.command);
            arms.append(&mut self.arms);
            self.arms = arms;
        }
    }

    /// Reads and checks a spec file.
    pub fn load(path: &Path) -> Result<LoadedSpec, SpecError> {
        let bytes = std::fs::read(path).map_err(|e| SpecError {
            file: path.into(),
            line: None,
            message: format!("cannot read the spec: {e}"),
            fix: "pass the path of a ladder spec, e.g. ladders/quickstart.toml".into(),
        })?;
        let source = String::from_utf8(bytes.clone()).map_err(|_| SpecError {
            file: path.into(),
            line: None,
            message: "the spec is not UTF-8".into(),
            fix: "save the spec as UTF-8 text".into(),
        })?;
        let spec = Spec::parse(path, &source)?;
        let table: toml::Table = toml::from_str(&source).expect("parsed once already");
        let json = serde_json::to_value(&table).expect("TOML converts to JSON");
        let blake3 = blake3::hash(&bytes).to_hex().to_string();
        Ok(LoadedSpec {
            spec,
            path: path.into(),
            json,
            blake3,
            source,
        })
    }

    /// Parses and checks spec text; `path` only names the file in errors.
    pub fn parse(path: &Path, source: &str) -> Result<Spec, SpecError> {
        let at = Locator::new(path, source);
        let table: toml::Table = toml::from_str(source).map_err(|e| at.toml_error(&e))?;
        check::keys(&at, &table)?;
        let mut spec: Spec = toml::from_str(source).map_err(|e| at.toml_error(&e))?;
        check::scan(&at, &spec)?;
        spec.expand_scan();
        check::expanded(&at, &spec)?;
        Ok(spec)
    }
}
