//! What ran: the facts of a ladder's start and end records, as the report shows them.

use crate::frames::LadderInfo;
use ladder::Role;
use serde::Serialize;

/// What ran: the start and end records' facts.
#[derive(Debug, Serialize)]
pub struct RunInfo {
    pub card: Option<serde_json::Value>,
    pub host: String,
    /// The spec's binary: every arm's, unless the arm ran its own.
    pub binary_path: String,
    pub binary_blake3: String,
    pub spec_blake3: String,
    pub started: String,
    pub ended: Option<String>,
    pub duration_s: Option<f64>,
    pub passes: usize,
    pub warmup_passes: usize,
    pub arms: Vec<RunArm>,
    pub order: String,
    pub replication_limit_pp: f64,
}

impl RunInfo {
    /// The card in a few words: its index and name, or `no card` (a start record's `"card":
    /// null` reads as none).
    pub fn card_label(&self) -> String {
        match &self.card {
            Some(card) => {
                let index = card.get("index").map_or("?".into(), |i| i.to_string());
                match card.get("name").and_then(|n| n.as_str()) {
                    Some(name) => format!("card {index} ({name})"),
                    None => format!("card {index}"),
                }
            }
            None => "no card".into(),
        }
    }

    /// Every arm's binary: the spec's blake3 when every arm ran it, else `arm=blake3 …` arm
    /// by arm. Two ladders are replicates only when these agree.
    pub fn arm_binaries(&self) -> String {
        if self.arms.iter().all(|a| a.binary.is_none()) {
            return self.binary_blake3.clone();
        }
        self.arms
            .iter()
            .map(|a| {
                let blake3 = a.binary.as_ref().map_or(&self.binary_blake3, |b| &b.blake3);
                format!("{}={blake3}", a.name)
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// One arm as it ran: `ladder/2` may record the arm's own binary; without it the arm ran
/// the spec's.
#[derive(Debug, Serialize)]
pub struct RunArm {
    pub name: String,
    pub role: Role,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary: Option<ladder::ladder_file::BinaryRecord>,
}

pub fn run_info(info: &LadderInfo) -> RunInfo {
    let start = &info.start;
    let ended = info.end.as_ref().map(|e| e.ended.clone());
    let duration_s = ended
        .as_deref()
        .and_then(ladder::ladder_file::parse_timestamp)
        .zip(ladder::ladder_file::parse_timestamp(&start.started))
        .map(|(e, s)| (e - s) as f64 / 1e6);
    RunInfo {
        card: start.card.clone(),
        host: start.host.hostname.clone(),
        binary_path: start.binary.path.clone(),
        binary_blake3: start.binary.blake3.clone(),
        spec_blake3: start.spec_blake3.clone(),
        started: start.started.clone(),
        ended,
        duration_s,
        passes: info.passes_run,
        warmup_passes: start.warmup_passes,
        arms: start
            .arms
            .iter()
            .map(|a| RunArm {
                name: a.name.clone(),
                role: a.role,
                binary: a.binary.clone().filter(|b| *b != start.binary),
            })
            .collect(),
        order: start.order.scheme.to_string(),
        replication_limit_pp: info.spec.replication_limit_pp,
    }
}
