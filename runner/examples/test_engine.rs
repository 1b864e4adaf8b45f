//! A stand-in engine for the runner's end-to-end tests: prints a CSV (or JSON) row whose
//! values depend on its arm's environment, and fails, hangs or replaces its own binary in
//! the cell its `TEST_*` variables name (`PASS:SLOT`).
//!
//! Its default speed is a constant in the binary (`SPEED_MARK`), so that a copy with that
//! constant patched is "another build". `test_engine prepare|setup|cleanup` appends the
//! step and the cell to `$TEST_STEP_LOG` instead of measuring.

use std::collections::BTreeMap;
use std::time::Duration;

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// True when `TEST_<what>` names this cell as `pass:slot`.
fn here(what: &str) -> bool {
    let cell = format!(
        "{}:{}",
        var("LADDER_PASS").unwrap_or_default(),
        var("LADDER_SLOT").unwrap_or_default()
    );
    var(what).is_some_and(|v| v.split(',').any(|c| c == cell))
}

fn replace_own_binary() {
    let me = std::env::current_exe().expect("own path");
    let mut bytes = std::fs::read(&me).expect("own bytes");
    bytes.push(0);
    let fresh = me.with_extension("new");
    std::fs::write(&fresh, bytes).expect("write copy");
    std::fs::set_permissions(&fresh, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    std::fs::rename(&fresh, &me).expect("replace");
}

/// The default speed, as text a test can find and patch in the binary: "another build".
static SPEED_MARK: &[u8; 16] = b"SPEED_MARK:00100";

fn built_in_speed() -> f64 {
    let mark = std::hint::black_box(SPEED_MARK);
    std::str::from_utf8(&mark[11..])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100.0)
}

/// A pseudo-random number in [-1, 1), fixed by the cell: the same pass and arm always get
/// the same noise, so a ladder's stopping look is reproducible.
fn cell_noise() -> f64 {
    let key = format!(
        "{}:{}",
        var("LADDER_PASS").unwrap_or_default(),
        var("LADDER_ARM").unwrap_or_default()
    );
    let mut h: u64 = 0xcbf29ce484222325;
    for b in key.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51afd7ed558ccd);
    h ^= h >> 33;
    (h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

/// `prepare`, `setup`, `cleanup`: note the step and the cell, sleep as asked.
fn step(name: &str) {
    if let Some(ms) = var("TEST_STEP_MS").and_then(|v| v.parse().ok()) {
        std::thread::sleep(Duration::from_millis(ms));
    }
    let log = var("TEST_STEP_LOG").expect("TEST_STEP_LOG names the step log");
    let line = format!(
        "{name} {}:{}\n",
        var("LADDER_PASS").unwrap_or_default(),
        var("LADDER_SLOT").unwrap_or_default()
    );
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("step log");
    std::io::Write::write_all(&mut file, line.as_bytes()).expect("step log write");
}

/// The last step noted before this cell, as `name pass:slot`.
fn last_step() -> String {
    var("TEST_STEP_LOG")
        .and_then(|log| std::fs::read_to_string(log).ok())
        .and_then(|text| text.lines().last().map(str::to_string))
        .unwrap_or_default()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(name) = args
        .get(1)
        .filter(|a| ["prepare", "setup", "cleanup"].contains(&a.as_str()))
    {
        return step(name);
    }
    let env_bytes: usize = std::env::vars_os()
        .map(|(k, v)| k.len() + v.len() + 2)
        .sum();
    // What execve copies onto the stack: the file name (argv[0] here), argv, environment.
    let start_bytes =
        env_bytes + args[0].len() + 1 + args.iter().map(|a| a.len() + 1).sum::<usize>();
    if let Some(ms) = var("TEST_SLEEP_MS").and_then(|v| v.parse().ok()) {
        std::thread::sleep(Duration::from_millis(ms));
    }
    if here("TEST_SLEEP_AT") {
        std::thread::sleep(Duration::from_secs(60));
    }
    eprintln!("test engine: arm {:?}", var("LADDER_ARM"));
    // `TEST_FAIL_IF=NAME=VALUE`: fail every cell that sees NAME=VALUE (one Slurm task, say).
    let fail_if = var("TEST_FAIL_IF")
        .and_then(|v| v.split_once('=').map(|(k, v)| var(k).as_deref() == Some(v)));
    if here("TEST_FAIL_AT") || fail_if == Some(true) {
        eprintln!("test engine: failing as asked");
        std::process::exit(3);
    }
    if here("TEST_REPLACE_AT") {
        replace_own_binary();
    }
    if let Some(bytes) = var("TEST_BINARY_STDOUT").and_then(|v| v.parse::<usize>().ok()) {
        // Compressed-looking output: every byte value, far from UTF-8.
        let data: Vec<u8> = (0..bytes).map(|i| (i * 7 + 0xfe) as u8).collect();
        std::io::Write::write_all(&mut std::io::stdout(), &data).expect("stdout");
        return;
    }
    if let Some(code) = var("TEST_EXIT").and_then(|v| v.parse().ok()) {
        std::process::exit(code);
    }
    let noise = var("TEST_NOISE_PCT")
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 100.0;
    let speed: f64 = var("TEST_SPEED")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(built_in_speed)
        * (1.0 + noise * cell_noise());
    let pass: f64 = var("LADDER_PASS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let rows: usize = var("TEST_ROWS").and_then(|v| v.parse().ok()).unwrap_or(1);
    for row in 0..rows {
        let mut fields = BTreeMap::new();
        fields.insert(
            "tok_s",
            format!("{:.4}", speed * (1.0 + 0.001 * pass) + row as f64),
        );
        fields.insert("env_bytes", env_bytes.to_string());
        fields.insert("digest", "d1g3st".to_string());
        fields.insert("start_bytes", start_bytes.to_string());
        fields.insert("args", args[1..].join("+"));
        fields.insert("step", last_step());
        if var("TEST_JSON").is_some() {
            let object: serde_json::Map<String, serde_json::Value> = fields
                .iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.clone())))
                .collect();
            println!("{}", serde_json::Value::Object(object));
        } else {
            if row == 0 {
                println!("{}", fields.keys().copied().collect::<Vec<_>>().join(","));
            }
            println!("{}", fields.values().cloned().collect::<Vec<_>>().join(","));
        }
    }
}
