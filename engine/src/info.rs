//! `engine info`: the backend, the device and the model's sizes.

use crate::config::ModelConfig;
use crate::tensors::sizes;
use std::fmt::Write;
use std::path::Path;

/// The CPU as `/proc` and `/sys` describe it (fields that cannot be read are omitted).
pub fn cpu_description() -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") {
        if let Some(name) = info.lines().find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        }) {
            out.push(("cpu".into(), name));
        }
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    out.push(("cores".into(), cores.to_string()));
    let base = Path::new("/sys/devices/system/cpu/cpu0/cache");
    for i in 0..8 {
        let dir = base.join(format!("index{i}"));
        let read = |f: &str| {
            std::fs::read_to_string(dir.join(f))
                .ok()
                .map(|s| s.trim().to_string())
        };
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            break;
        };
        let shared = read("shared_cpu_list")
            .map(|s| format!(" (cpus {s})"))
            .unwrap_or_default();
        out.push((
            format!("cache L{level} {}", kind.to_lowercase()),
            format!("{size}{shared}"),
        ));
    }
    out
}

/// The GPU as the driver describes it.
pub fn gpu_description(d: &crate::cuda::DeviceInfo) -> Vec<(String, String)> {
    vec![
        ("gpu".into(), d.name.clone()),
        (
            "compute capability".into(),
            format!("{}.{}", d.compute_capability.0, d.compute_capability.1),
        ),
        ("SMs".into(), d.sm_count.to_string()),
        ("memory bytes".into(), d.total_mem_bytes.to_string()),
        ("L2 bytes".into(), d.l2_bytes.to_string()),
        (
            "persisting L2 max bytes".into(),
            d.persisting_l2_max_bytes.to_string(),
        ),
        (
            "access-policy window max".into(),
            d.access_policy_max_window_bytes.to_string(),
        ),
    ]
}

/// The report `engine info` prints.
pub fn report(cfg: &ModelConfig, backend: &str, device: &[(String, String)]) -> String {
    let s = sizes(cfg);
    let mut r = String::new();
    let mut line = |k: &str, v: String| writeln!(r, "{k:<28} {v}").expect("write to String");
    line("backend", backend.to_string());
    for (k, v) in device {
        line(k, v.clone());
    }
    line("model", cfg.name.clone());
    line(
        "layers",
        format!(
            "{} ({} GDN, {} full attention) + 1 MTP",
            cfg.layers,
            cfg.gdn_layers(),
            cfg.attention_layers()
        ),
    );
    line("params", format!("{} (+ {} MTP)", s.params, s.draft_params));
    line(
        "active bytes/token (bf16)",
        s.active_bytes_per_token_bf16.to_string(),
    );
    line(
        "active bytes/token (cpu f32)",
        (2 * s.active_bytes_per_token_bf16).to_string(),
    );
    line("state pool bytes", s.state_pool_bytes.to_string());
    line(
        "  per GDN layer per slot",
        format!(
            "conv {} B + recurrent {} B",
            cfg.conv_slot_bytes(),
            cfg.rec_slot_bytes()
        ),
    );
    r
}
