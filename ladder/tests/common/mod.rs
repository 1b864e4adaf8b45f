//! Helpers shared by the ladder crate's integration tests (`mod common;` in each test file).

#![allow(dead_code)]

use ladder::ladder_file::{
    ArmRecord, BinaryRecord, HostRecord, OrderRecord, Role, StartRecord, FORMAT,
};
use ladder::order::Scheme;
use std::collections::BTreeMap;

/// The header line of the test ladders: the runner's columns and the metric `tok_s`.
pub const HEADER: &str =
    "ladder_pass,ladder_slot,ladder_arm,ladder_started,ladder_ended,ladder_exit,tok_s";

/// The start record of ladder `demo`, tag `t1`: `arms` (name, role) rotated over `passes` passes.
pub fn start_record(arms: &[(&str, Role)], passes: usize) -> StartRecord {
    StartRecord {
        format: FORMAT.into(),
        ladder: "demo".into(),
        tag: "t1".into(),
        started: "2026-11-29T10:00:00.000000Z".into(),
        order: OrderRecord {
            scheme: Scheme::Rotate,
            arms: arms.iter().map(|(name, _)| name.to_string()).collect(),
            passes,
            seed: None,
            looks: None,
        },
        warmup_passes: 1,
        arms: arms
            .iter()
            .map(|&(name, role)| ArmRecord {
                name: name.to_string(),
                role,
                env: BTreeMap::new(),
                argv: None,
                binary: None,
            })
            .collect(),
        spec: serde_json::json!({"name": "demo"}),
        spec_blake3: "00".into(),
        command: vec!["engine".into()],
        binary: BinaryRecord {
            path: "/bin/engine".into(),
            blake3: "00".into(),
        },
        host: HostRecord {
            hostname: "h".into(),
            os: "linux".into(),
            cpus: 2,
            extra: Default::default(),
        },
        card: None,
        extra: Default::default(),
    }
}

/// The text of spec `demo`: `engine bench`, 4 passes, arms `off` (the base) and `on`, metric `tok_s`.
pub const DEMO_SPEC: &str = r#"name = "demo"
command = ["engine", "bench"]
passes = 4

[env]
COMMON = "1"

[[arm]]
name = "off"
role = "base"
env = { MODE = "off" }

[[arm]]
name = "on"
env = { MODE = "on" }

[[metric]]
column = "tok_s"
better = "higher"
"#;
