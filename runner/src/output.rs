//! Reading a cell's stdout into columns and rows, by the spec's output mode.

use ladder::ladder_file::LineSplitter;
use ladder::spec::OutputMode;

/// What one cell printed: its column names and one or more rows of values.
#[derive(Debug, Clone, PartialEq)]
pub struct CellOutput {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Parses stdout; `Err` says what is wrong with it.
/// `time` mode reads nothing: any stdout, binary included, is fine there.
pub fn parse(mode: OutputMode, stdout: &[u8]) -> Result<CellOutput, String> {
    if mode == OutputMode::Time {
        return Ok(CellOutput {
            columns: Vec::new(),
            rows: vec![Vec::new()],
        });
    }
    let text = std::str::from_utf8(stdout).map_err(|_| "stdout is not UTF-8".to_string())?;
    match mode {
        OutputMode::Json => parse_json(text),
        _ => parse_csv(text),
    }
}

fn parse_csv(text: &str) -> Result<CellOutput, String> {
    let mut splitter = LineSplitter::default();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = lines
        .next()
        .ok_or("stdout is empty; output = \"csv\" expects a header and a row")?;
    let columns: Vec<String> = splitter
        .split(header)
        .ok_or_else(|| format!("the header line {header:?} is not CSV"))?
        .iter()
        .map(|c| c.trim().to_string())
        .collect();
    let mut rows = Vec::new();
    for line in lines {
        let fields = splitter
            .split(line)
            .ok_or_else(|| format!("the line {line:?} is not CSV"))?;
        if fields.len() != columns.len() {
            return Err(format!(
                "a row has {} fields, the header {} columns: {line:?}",
                fields.len(),
                columns.len()
            ));
        }
        rows.push(fields.iter().map(|f| f.trim().to_string()).collect());
    }
    if rows.is_empty() {
        return Err("stdout holds a CSV header but no row".into());
    }
    Ok(CellOutput { columns, rows })
}

fn parse_json(text: &str) -> Result<CellOutput, String> {
    let mut columns: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line)
            .map_err(|e| format!("the line {line:?} is not a JSON object: {e}"))?;
        if columns.is_empty() {
            columns = object.keys().cloned().collect();
        } else if object.keys().ne(columns.iter()) {
            return Err(format!(
                "a JSON line has other keys than the first: {line:?}"
            ));
        }
        rows.push(object.values().map(json_text).collect());
    }
    if rows.is_empty() {
        return Err("stdout holds no JSON object; output = \"json\" expects one per line".into());
    }
    Ok(CellOutput { columns, rows })
}

fn json_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_with_several_rows() {
        let out = parse(OutputMode::Csv, b"a,b\n1,2\n3,\"x,y\"\n").unwrap();
        assert_eq!(out.columns, ["a", "b"]);
        assert_eq!(out.rows, vec![vec!["1", "2"], vec!["3", "x,y"]]);
    }

    #[test]
    fn csv_errors_say_what_is_wrong() {
        assert!(parse(OutputMode::Csv, b"").unwrap_err().contains("empty"));
        assert!(parse(OutputMode::Csv, b"a,b\n")
            .unwrap_err()
            .contains("no row"));
        assert!(parse(OutputMode::Csv, b"a,b\n1\n")
            .unwrap_err()
            .contains("1 fields"));
    }

    #[test]
    fn json_lines_become_columns() {
        let out = parse(
            OutputMode::Json,
            b"{\"tok_s\": 1.5, \"name\": \"x\"}\n{\"tok_s\": 2, \"name\": \"y\"}\n",
        )
        .unwrap();
        assert_eq!(out.columns, ["name", "tok_s"]);
        assert_eq!(out.rows[1], ["y", "2"]);
        assert!(parse(OutputMode::Json, b"{\"a\":1}\n{\"b\":1}\n").is_err());
    }

    #[test]
    fn time_reads_nothing() {
        let out = parse(OutputMode::Time, b"anything at all \xff\xfe binary").unwrap();
        assert!(out.columns.is_empty());
        assert_eq!(out.rows.len(), 1);
    }
}
