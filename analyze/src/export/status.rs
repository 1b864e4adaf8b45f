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

/// A warning the status line carries after the passes: a few words each format may stress,
/// and what they refer to.
pub struct Warning {
    pub head: &'static str,
    pub detail: Option<String>,
}

/// The warnings on a ladder with statistics, in the order every format gives them, each
/// metric named by `column` (which escapes a name from the file for the format at hand).
pub fn warnings(r: &LadderReport, column: impl Fn(&str) -> String) -> Vec<Warning> {
    let mut out = Vec::new();
    if r.order_sensitive {
        out.push(Warning {
            head: "order-sensitive",
            detail: None,
        });
    }
    if r.drifting {
        out.push(Warning {
            head: "drifts within its passes",
            detail: None,
        });
    }
    for (metric, rise) in r.noise_rose() {
        out.push(Warning {
            head: "noise rose after the first look",
            detail: Some(format!(
                "{}: {}; its intervals use the whole ladder's spread",
                column(metric),
                rise.factor()
            )),
        });
    }
    out
}

/// The ladder's title, `ladder / tag`, or the file's name where its start record did not
/// parse, each name escaped by `escape` for the format at hand.
pub fn title(r: &LadderReport, escape: impl Fn(&str) -> String) -> String {
    match (&r.ladder, &r.tag) {
        (Some(ladder), Some(tag)) => format!("{} / {}", escape(ladder), escape(tag)),
        _ => escape(&r.file),
    }
}
