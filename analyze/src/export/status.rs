//! A ladder's status line, the one rule every format words: `QUALIFIED`, or why its figures
//! must not be relied on.

use crate::analysis::LadderReport;

/// Whether the ladder is qualified, and its status in words, each disqualifying arm named by
/// `arm` (which escapes a name from the file for the format at hand).
pub fn status(r: &LadderReport, arm: impl Fn(&str) -> String) -> (bool, String) {
    if !r.statistics {
        return (false, "NOT CONNECTED (no statistics)".into());
    }
    if r.qualified {
        return (true, "QUALIFIED".into());
    }
    let mut words = Vec::new();
    if !r.connected {
        words.push("NOT CONNECTED, read with --allow-defects".to_string());
    }
    let reasons: Vec<String> = r
        .disqualified_by
        .iter()
        .filter(|d| *d != "not-connected")
        .map(|d| match d.split_once(':') {
            Some((kind, which)) => format!("{kind}:{}", arm(which)),
            None => d.clone(),
        })
        .collect();
    if !reasons.is_empty() {
        words.push(format!("DISQUALIFIED by {}", reasons.join(", ")));
    }
    (false, words.join("; "))
}
