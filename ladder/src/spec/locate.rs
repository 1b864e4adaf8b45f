//! Finding a spec's lines, so that every error points where the fix goes.

use super::SpecError;
use std::path::Path;

/// Finds lines in the spec text, for errors that point at them.
pub(super) struct Locator<'a> {
    pub(super) path: &'a Path,
    source: &'a str,
}

impl<'a> Locator<'a> {
    pub(super) fn new(path: &'a Path, source: &'a str) -> Locator<'a> {
        Locator { path, source }
    }

    /// The 1-based lines where `key = ...` is assigned, with `value` in it if given.
    pub(super) fn lines_of(&self, key: &str, value: Option<&str>) -> Vec<usize> {
        self.source
            .lines()
            .enumerate()
            .filter(|(_, text)| {
                let text = text.split('#').next().unwrap_or_default();
                let assigns = text.match_indices(key).any(|(i, _)| {
                    let before = text[..i].chars().next_back();
                    let after = text[i + key.len()..].trim_start();
                    !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                        && (after.starts_with('=')
                            || after.starts_with("\" =")
                            || after.starts_with('.'))
                });
                let table = matches!(text.trim().trim_matches(['[', ']']), t if t == key);
                (assigns || table) && value.is_none_or(|v| text.contains(&format!("\"{v}\"")))
            })
            .map(|(i, _)| i + 1)
            .collect()
    }

    /// The line of `key` inside the `[[arm]]` named `arm` (the first after its name).
    pub(super) fn line_in_arm(&self, arm: &str, key: &str) -> Option<usize> {
        self.line_in_item("arm", "name", arm, key)
    }

    /// The line of `key` inside the `[[metric]]` of `column`.
    pub(super) fn line_in_metric(&self, column: &str, key: &str) -> Option<usize> {
        self.line_in_item("metric", "column", column, key)
    }

    /// The line of `key` inside the `[[table]]` item whose `id_key` is `id`, else the line of
    /// that `id_key`.
    fn line_in_item(&self, table: &str, id_key: &str, id: &str, key: &str) -> Option<usize> {
        let header = format!("[[{table}]]");
        let named = self.lines_of(id_key, Some(id)).first().copied()?;
        let table_start = self
            .source
            .lines()
            .take(named)
            .enumerate()
            .filter(|(_, l)| l.trim_start().starts_with(&header))
            .map(|(i, _)| i + 1)
            .last()
            .unwrap_or(named);
        let next_table = self
            .source
            .lines()
            .enumerate()
            .skip(named)
            .find(|(_, l)| l.trim_start().starts_with('['))
            .map_or(usize::MAX, |(i, _)| i + 1);
        self.lines_of(key, None)
            .into_iter()
            .find(|&l| l >= table_start && l < next_table)
            .or(Some(named))
    }

    /// The first line of `[table]`.
    pub(super) fn table_line(&self, table: &str) -> Option<usize> {
        let header = format!("[{table}]");
        self.source
            .lines()
            .position(|l| l.trim_start().starts_with(&header))
            .map(|i| i + 1)
    }

    pub(super) fn error(
        &self,
        key: &str,
        value: Option<&str>,
        message: &str,
        fix: &str,
    ) -> SpecError {
        SpecError {
            file: self.path.into(),
            line: self.lines_of(key, value).first().copied(),
            message: message.into(),
            fix: fix.into(),
        }
    }

    pub(super) fn toml_error(&self, e: &toml::de::Error) -> SpecError {
        let line = e.span().map(|span| {
            self.source[..span.start.min(self.source.len())]
                .lines()
                .count()
                .max(1)
        });
        let message = e.message().trim().to_string();
        let fix = if message.contains("unknown variant") {
            "use one of the values the message lists".to_string()
        } else if message.contains("missing field") {
            "add the missing key (see the spec reference in the README)".to_string()
        } else {
            "correct the value to the type the key takes (see the spec reference in the README)"
                .to_string()
        };
        SpecError {
            file: self.path.into(),
            line,
            message,
            fix,
        }
    }

    pub(super) fn unknown_keys(
        &self,
        table: &toml::Table,
        allowed: &[&str],
        within: &str,
    ) -> Result<(), SpecError> {
        if let Some(key) = table.keys().find(|k| !allowed.contains(&k.as_str())) {
            let closest = allowed
                .iter()
                .map(|a| (strsim::jaro_winkler(a, key), *a))
                .max_by(|x, y| x.0.total_cmp(&y.0))
                .filter(|(score, _)| *score > 0.7);
            let fix = match closest {
                Some((_, name)) => format!("did you mean `{name}`?"),
                None => format!("the keys here are: {}", allowed.join(", ")),
            };
            return Err(self.error(key, None, &format!("unknown key {within}`{key}`"), &fix));
        }
        Ok(())
    }
}

impl SpecError {
    /// Points an error whose key has no line of its own at the `[table]` header; a key
    /// written inline (`[scan] env = ...` or `stop = { ... }`) keeps the line found.
    pub(super) fn at_table(mut self, at: &Locator, table: &str) -> SpecError {
        if self.line.is_none() {
            self.line = at
                .table_line(table)
                .or_else(|| at.lines_of(table, None).first().copied());
        }
        self
    }

    /// Points the error at the `nth` (0-based) matching line instead of the first.
    pub(super) fn nth_line(
        mut self,
        at: &Locator,
        key: &str,
        value: Option<&str>,
        nth: usize,
    ) -> SpecError {
        if let Some(line) = at.lines_of(key, value).get(nth) {
            self.line = Some(*line);
        }
        self
    }
}
