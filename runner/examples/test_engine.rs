//! A stand-in engine for the runner's end-to-end tests: prints a CSV (or JSON) row whose
//! values depend on its arm's environment, and fails, hangs or replaces its own binary in
//! the cell its `TEST_*` variables name (`PASS:SLOT`).

use std::collections::BTreeMap;
use std::time::Duration;

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// True when `TEST_<what>` names this cell as `pass:slot`.
fn here(what: &str) -> bool {
    let cell = format!("{}:{}", var("LADDER_PASS").unwrap_or_default(), var("LADDER_SLOT").unwrap_or_default());
    var(what).is_some_and(|v| v.split(',').any(|c| c == cell))
}

fn replace_own_binary() {
    let me = std::env::current_exe().expect("own path");
    let mut bytes = std::fs::read(&me).expect("own bytes");
    bytes.push(0);
    let fresh = me.with_extension("new");
    std::fs::write(&fresh, bytes).expect("write copy");
    std::fs::set_permissions(&fresh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    std::fs::rename(&fresh, &me).expect("replace");
}

fn main() {
    let env_bytes: usize = std::env::vars_os().map(|(k, v)| k.len() + v.len() + 2).sum();
    if let Some(ms) = var("TEST_SLEEP_MS").and_then(|v| v.parse().ok()) {
        std::thread::sleep(Duration::from_millis(ms));
    }
    if here("TEST_SLEEP_AT") {
        std::thread::sleep(Duration::from_secs(60));
    }
    eprintln!("test engine: arm {:?}", var("LADDER_ARM"));
    // `TEST_FAIL_IF=NAME=VALUE`: fail every cell that sees NAME=VALUE (one Slurm task, say).
    let fail_if = var("TEST_FAIL_IF").and_then(|v| v.split_once('=').map(|(k, v)| var(k).as_deref() == Some(v)));
    if here("TEST_FAIL_AT") || fail_if == Some(true) {
        eprintln!("test engine: failing as asked");
        std::process::exit(3);
    }
    if here("TEST_REPLACE_AT") {
        replace_own_binary();
    }
    let speed: f64 = var("TEST_SPEED").and_then(|v| v.parse().ok()).unwrap_or(100.0);
    let pass: f64 = var("LADDER_PASS").and_then(|v| v.parse().ok()).unwrap_or(0.0);
    let rows: usize = var("TEST_ROWS").and_then(|v| v.parse().ok()).unwrap_or(1);
    for row in 0..rows {
        let mut fields = BTreeMap::new();
        fields.insert("tok_s", format!("{:.4}", speed * (1.0 + 0.001 * pass) + row as f64));
        fields.insert("env_bytes", env_bytes.to_string());
        fields.insert("digest", "d1g3st".to_string());
        if var("TEST_JSON").is_some() {
            let object: serde_json::Map<String, serde_json::Value> =
                fields.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.clone()))).collect();
            println!("{}", serde_json::Value::Object(object));
        } else {
            if row == 0 {
                println!("{}", fields.keys().copied().collect::<Vec<_>>().join(","));
            }
            println!("{}", fields.values().cloned().collect::<Vec<_>>().join(","));
        }
    }
}
