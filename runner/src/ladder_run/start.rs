//! The start record: the spec as written, the legal order, each arm's argv and binary, the
//! host and the card.

use super::*;

pub(super) fn start_record(
    loaded: &LoadedSpec,
    order: &Order,
    binary: &Binary,
    arms: &[ArmArgv],
    witness: &Witness,
    tag: &str,
) -> StartRecord {
    let spec = &loaded.spec;
    StartRecord {
        format: FORMAT.into(),
        ladder: spec.name.clone(),
        tag: tag.into(),
        started: timestamp(Utc::now()),
        order: OrderRecord {
            scheme: spec.order,
            arms: order.arms.clone(),
            passes: spec.passes(),
            seed: spec.seed,
            looks: spec.stop.as_ref().map(|s| s.looks.clone()),
        },
        warmup_passes: spec.warmup_passes,
        arms: spec
            .arms
            .iter()
            .zip(arms)
            .map(|(a, argv)| ArmRecord {
                name: a.name.clone(),
                role: a.role,
                env: a.env.clone(),
                argv: Some(argv.argv.clone()),
                binary: Some(BinaryRecord {
                    path: argv.binary.path.display().to_string(),
                    blake3: argv.binary.blake3.clone(),
                }),
            })
            .collect(),
        spec: loaded.json.clone(),
        spec_blake3: loaded.blake3.clone(),
        command: spec.command.clone(),
        binary: BinaryRecord {
            path: binary.path.display().to_string(),
            blake3: binary.blake3.clone(),
        },
        host: host_record(),
        card: witness.card(),
        extra: [(
            "common_env".to_string(),
            serde_json::to_value(&spec.env).expect("env serializes"),
        )]
        .into_iter()
        .collect(),
    }
}

fn host_record() -> HostRecord {
    let hostname = hostname::get()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut extra = serde_json::Map::new();
    extra.insert("kernel".into(), kernel.trim().into());
    HostRecord {
        hostname,
        os: std::env::consts::OS.into(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        extra,
    }
}
