//! Reading and writing the ladder file (`ladder/1`, LADDER-FORMAT.md).
//!
//! The writer creates the file exclusively and makes every line durable before the next cell
//! starts, so a crash leaves a valid prefix. The reader splits lines and fields; deciding
//! whether the lines form one connected run is `verify`'s job.

use crate::order::{Order, Scheme};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The version the runner writes.
pub const FORMAT: &str = "ladder/2";
/// Every version a reader accepts.
pub const FORMATS: [&str; 2] = ["ladder/1", "ladder/2"];
pub const START_TAG: &str = "#ladder-start ";
pub const DONE_TAG: &str = "#ladder-done ";
pub const ABORT_TAG: &str = "#ladder-abort ";

/// The harness's own columns, first in every header, in this order.
pub const HARNESS_COLUMNS: [&str; 6] = [
    "ladder_pass",
    "ladder_slot",
    "ladder_arm",
    "ladder_started",
    "ladder_ended",
    "ladder_exit",
];
pub const ROW_COLUMN: &str = "ladder_row";
pub const WALL_COLUMN: &str = "ladder_wall_s";
/// `ladder/2`: the child's resource usage, after the wall time.
pub const USAGE_COLUMNS: [&str; 3] = ["ladder_user_s", "ladder_sys_s", "ladder_maxrss_kib"];
pub const WITNESS_PREFIX: &str = "witness_";

/// The witness fields, one home for their names: each is a column `witness_<field>_before`
/// and `witness_<field>_after` around every cell. The runner writes them, the sample
/// generator fakes them and the report reads them.
pub mod witness {
    /// Processes on the card that are not the cell's.
    pub const FOREIGN_PROCS: &str = "foreign_procs";
    pub const SM_CLOCK_MHZ: &str = "sm_clock_mhz";
    pub const MEM_CLOCK_MHZ: &str = "mem_clock_mhz";
    pub const TEMP_C: &str = "temp_c";
    pub const POWER_W: &str = "power_w";
    /// The driver's throttle reasons, `none` when there are none.
    pub const THROTTLE: &str = "throttle";
    /// The host's 1-minute load average, where there is no card.
    pub const LOADAVG: &str = "loadavg";

    /// What a host with a card records, in column order.
    pub const CARD: [&str; 6] = [
        FOREIGN_PROCS,
        SM_CLOCK_MHZ,
        MEM_CLOCK_MHZ,
        TEMP_C,
        POWER_W,
        THROTTLE,
    ];
    /// What a host without one records.
    pub const HOST: [&str; 1] = [LOADAVG];
}

/// When a witness reading was taken: just before the cell's process starts, or just after it
/// ends. Each reading is the column `witness_<field>_<side>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WitnessSide {
    Before,
    After,
}

impl WitnessSide {
    pub fn as_str(self) -> &'static str {
        match self {
            WitnessSide::Before => "before",
            WitnessSide::After => "after",
        }
    }
}

/// The column of one witness reading: `witness_<field>_<side>`.
pub fn witness_column(field: &str, side: WitnessSide) -> String {
    format!("{WITNESS_PREFIX}{field}_{}", side.as_str())
}

/// The field and side of a witness column; a `witness_*` column without a side reads as
/// taken after the cell.
pub fn parse_witness_column(column: &str) -> Option<(&str, WitnessSide)> {
    let rest = column.strip_prefix(WITNESS_PREFIX)?;
    Some(
        match (rest.strip_suffix("_before"), rest.strip_suffix("_after")) {
            (Some(field), _) => (field, WitnessSide::Before),
            (_, Some(field)) => (field, WitnessSide::After),
            _ => (rest, WitnessSide::After),
        },
    )
}

/// What an arm is for in the analysis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    Base,
    #[default]
    Arm,
    Null,
    Reflexive,
    StructuralZero,
    /// An arm whose true effect is known before the run (`expected_pct`).
    KnownEffect,
}

impl Role {
    pub const NAMES: [&'static str; 6] = [
        "base",
        "arm",
        "null",
        "reflexive",
        "structural-zero",
        "known-effect",
    ];

    /// Controls whose true effect is 0: their estimate against the base must read as none.
    pub fn is_inert_control(self) -> bool {
        matches!(self, Role::Null | Role::Reflexive)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Base => "base",
            Role::Arm => "arm",
            Role::Null => "null",
            Role::Reflexive => "reflexive",
            Role::StructuralZero => "structural-zero",
            Role::KnownEffect => "known-effect",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OrderRecord {
    pub scheme: Scheme,
    pub arms: Vec<String>,
    pub passes: usize,
    pub seed: Option<u64>,
    /// `ladder/2`: the passes at which a `[stop]` ladder may stop; null without `[stop]`.
    #[serde(default)]
    pub looks: Option<Vec<usize>>,
}

impl OrderRecord {
    pub fn order(&self) -> Order {
        Order::new(self.scheme, self.arms.clone(), self.passes, self.seed)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArmRecord {
    pub name: String,
    pub role: Role,
    pub env: BTreeMap<String, String>,
    /// `ladder/2`: the arm's full argv and its resolved executable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<BinaryRecord>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BinaryRecord {
    pub path: String,
    pub blake3: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    pub hostname: String,
    pub os: String,
    pub cpus: usize,
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// Line 1 of a ladder file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StartRecord {
    pub format: String,
    pub ladder: String,
    pub tag: String,
    pub started: String,
    pub order: OrderRecord,
    pub warmup_passes: usize,
    pub arms: Vec<ArmRecord>,
    /// The spec as written, TOML turned into JSON key for key.
    pub spec: serde_json::Value,
    pub spec_blake3: String,
    pub command: Vec<String>,
    pub binary: BinaryRecord,
    pub host: HostRecord,
    pub card: Option<serde_json::Value>,
    /// Fields a later writer added; kept so that nothing read is dropped.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl StartRecord {
    /// The binary `arm` ran: its own where the ladder recorded one (`ladder/2`), else the
    /// spec's.
    pub fn binary_of<'a>(&'a self, arm: &'a ArmRecord) -> &'a BinaryRecord {
        arm.binary.as_ref().unwrap_or(&self.binary)
    }

    /// The checks that make the record usable for a replay; `Err` says which field is wrong.
    pub fn check(&self) -> Result<(), String> {
        if !FORMATS.contains(&self.format.as_str()) {
            return Err(format!(
                "format is {:?}, this reader knows {FORMATS:?}",
                self.format
            ));
        }
        let declared: Vec<&str> = self.arms.iter().map(|a| a.name.as_str()).collect();
        let ordered: Vec<&str> = self.order.arms.iter().map(String::as_str).collect();
        if declared != ordered {
            return Err(format!(
                "order.arms {ordered:?} differ from arms {declared:?}"
            ));
        }
        if declared.is_empty() {
            return Err("no arms".into());
        }
        // Before anything is sized by the header's claims.
        crate::limits::cells(self.order.passes, declared.len())?;
        let mut names = declared.clone();
        names.sort_unstable();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return Err("two arms share a name".into());
        }
        let bases = self.arms.iter().filter(|a| a.role == Role::Base).count();
        if bases != 1 {
            return Err(format!("{bases} arms have role base, exactly one must"));
        }
        if self.order.passes == 0 {
            return Err("order.passes is 0".into());
        }
        if self.order.scheme == Scheme::Shuffle && self.order.seed.is_none() {
            return Err("order scheme shuffle without a seed".into());
        }
        Ok(())
    }

    pub fn base_index(&self) -> usize {
        self.arms
            .iter()
            .position(|a| a.role == Role::Base)
            .unwrap_or(0)
    }

    pub fn to_line(&self) -> String {
        format!(
            "{START_TAG}{}",
            serde_json::to_string(self).expect("start record serializes")
        )
    }
}

/// The last line: `#ladder-done` or `#ladder-abort`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndRecord {
    pub ended: String,
    pub cells: usize,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    /// `ladder/2` done record: the passes run.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub passes: Option<usize>,
    /// `ladder/2` done record: `precision`, `max-passes`, or null without `[stop]`.
    #[serde(default)]
    pub stopped: Option<String>,
}

/// A timestamp as the format writes it: RFC 3339, UTC, microseconds.
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Microseconds since the epoch of an RFC 3339 timestamp, or `None` when it does not parse.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.timestamp_micros())
}

/// One CSV row split into fields without a copy per field.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fields {
    text: String,
    ends: Vec<u32>,
}

impl Fields {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)? as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        Some(&self.text[start..end])
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.len()).map(|i| self.get(i).unwrap_or_default())
    }
}

/// Splits single CSV lines (RFC 4180 quoting), reusing one parser.
pub struct LineSplitter {
    reader: csv_core::Reader,
    out: Vec<u8>,
    ends: Vec<usize>,
}

impl Default for LineSplitter {
    fn default() -> Self {
        LineSplitter {
            reader: csv_core::Reader::new(),
            out: vec![0; 256],
            ends: vec![0; 32],
        }
    }
}

impl LineSplitter {
    /// The fields of one line (without its `\n`), or `None` when it is not one CSV record.
    pub fn split(&mut self, line: &str) -> Option<Fields> {
        // The parser accepts a quote left open at the end of input; RFC 4180 does not.
        if line.bytes().filter(|&b| b == b'"').count() % 2 == 1 {
            return None;
        }
        self.reader.reset();
        let input = line.as_bytes();
        let (mut read, mut written, mut fields) = (0, 0, 0);
        loop {
            let (result, r, w, f) = self.reader.read_record(
                &input[read..],
                &mut self.out[written..],
                &mut self.ends[fields..],
            );
            read += r;
            written += w;
            fields += f;
            match result {
                csv_core::ReadRecordResult::OutputFull => self.out.resize(self.out.len() * 2, 0),
                csv_core::ReadRecordResult::OutputEndsFull => {
                    self.ends.resize(self.ends.len() * 2, 0)
                }
                csv_core::ReadRecordResult::InputEmpty => {
                    if read < input.len() {
                        continue;
                    }
                    // End of the line: let the parser finish the record.
                    let (result, _, w, f) = self.reader.read_record(
                        &[],
                        &mut self.out[written..],
                        &mut self.ends[fields..],
                    );
                    written += w;
                    fields += f;
                    if !matches!(result, csv_core::ReadRecordResult::Record) {
                        return None;
                    }
                    break;
                }
                csv_core::ReadRecordResult::Record => {
                    if read < input.len() {
                        return None; // a record ended inside the line: stray quote or newline
                    }
                    break;
                }
                csv_core::ReadRecordResult::End => return None,
            }
        }
        if self.reader.line() > 1 {
            return None; // a quoted field spilled past one line
        }
        let text = String::from_utf8(self.out[..written].to_vec()).ok()?;
        let ends = self.ends[..fields].iter().map(|&e| e as u32).collect();
        Some(Fields { text, ends })
    }
}

/// One CSV record with RFC 4180 quoting and no trailing newline.
pub fn csv_line<S: AsRef<str>>(fields: &[S]) -> String {
    let mut line = String::new();
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        let field = field.as_ref();
        if field.contains([',', '"', '\n', '\r']) || field.starts_with(' ') || field.ends_with(' ')
        {
            line.push('"');
            line.push_str(&field.replace('"', "\"\""));
            line.push('"');
        } else {
            line.push_str(field);
        }
    }
    line
}

/// Appends a ladder file one durable line at a time.
pub struct LadderWriter {
    file: File,
    path: PathBuf,
    /// Bytes of complete lines written: where a failed write is cut back to.
    complete: u64,
}

impl LadderWriter {
    /// Creates `path` exclusively (an existing file is an error) and writes the start record.
    pub fn create(path: &Path, start: &StartRecord) -> io::Result<LadderWriter> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    io::Error::new(
                        e.kind(),
                        format!(
                        "{} already exists; a ladder file is never appended to or overwritten: \
                         pick another --tag or --out",
                        path.display()
                    ),
                    )
                } else {
                    io::Error::new(e.kind(), format!("cannot create {}: {e}", path.display()))
                }
            })?;
        let mut writer = LadderWriter {
            file,
            path: path.to_path_buf(),
            complete: 0,
        };
        writer.append(&[start.to_line()])?;
        Ok(writer)
    }

    /// Writes the column header (line 2).
    pub fn write_header(&mut self, columns: &[String]) -> io::Result<()> {
        self.append(&[csv_line(columns)])
    }

    /// Writes one cell's rows (each a full row of fields) and makes them durable.
    pub fn write_cell(&mut self, rows: &[Vec<String>]) -> io::Result<()> {
        let lines: Vec<String> = rows.iter().map(|r| csv_line(r)).collect();
        self.append(&lines)
    }

    /// Ends the file with a done record.
    pub fn finish_done(mut self, end: &EndRecord) -> io::Result<()> {
        let line = format!("{DONE_TAG}{}", serde_json::to_string(end)?);
        self.append(&[line])
    }

    /// Ends the file with an abort record naming the reason.
    pub fn finish_abort(mut self, end: &EndRecord) -> io::Result<()> {
        let line = format!("{ABORT_TAG}{}", serde_json::to_string(end)?);
        self.append(&[line])
    }

    fn append(&mut self, lines: &[String]) -> io::Result<()> {
        let mut buf = String::new();
        for line in lines {
            buf.push_str(line);
            buf.push('\n');
        }
        // One write for all the lines of a cell; if it fails part way (a full disk, a file
        // size limit), the torn end is cut off, so the file stays a valid prefix.
        let written = self
            .file
            .write_all(buf.as_bytes())
            .and_then(|_| self.file.sync_data());
        if let Err(e) = written {
            let cut = self
                .file
                .set_len(self.complete)
                .and_then(|_| self.file.seek(SeekFrom::Start(self.complete)));
            let state = match cut {
                Ok(_) => "it ends at its last complete line".to_string(),
                Err(c) => format!("cutting it back to its last complete line failed too: {c}"),
            };
            return Err(io::Error::new(
                e.kind(),
                format!(
                    "cannot write the ladder file {}: {e}; {state}",
                    self.path.display()
                ),
            ));
        }
        self.complete += buf.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_line_round_trips_through_the_splitter() {
        let fields = ["plain", "with,comma", "with \"quote\"", "", " padded "];
        let line = csv_line(&fields);
        let parsed = LineSplitter::default().split(&line).unwrap();
        assert_eq!(parsed.iter().collect::<Vec<_>>(), fields);
    }

    #[test]
    fn splitter_rejects_an_unterminated_quote() {
        assert!(LineSplitter::default().split("a,\"b").is_none());
    }

    #[test]
    fn splitter_reads_many_fields() {
        let fields: Vec<String> = (0..100).map(|i| format!("f{i}")).collect();
        let parsed = LineSplitter::default().split(&fields.join(",")).unwrap();
        assert_eq!(parsed.len(), 100);
        assert_eq!(parsed.get(99), Some("f99"));
    }

    #[test]
    fn timestamps_keep_microseconds() {
        let t = DateTime::parse_from_rfc3339("2026-11-29T10:00:00.123456Z").unwrap();
        let text = timestamp(t.with_timezone(&Utc));
        assert_eq!(text, "2026-11-29T10:00:00.123456Z");
        assert_eq!(parse_timestamp(&text), Some(t.timestamp_micros()));
        assert_eq!(parse_timestamp("yesterday"), None);
    }
}
