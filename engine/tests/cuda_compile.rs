//! Compiles every kernel in kernels/ with NVRTC for sm_90: needs libnvrtc and the CUDA
//! headers (`source .ci/nvrtc.sh` installs both), no GPU. The tests are ignored unless run
//! with `--ignored`, as `.ci/run` does after installing NVRTC, so that a machine without it
//! counts them as ignored rather than passed.

use engine::cuda::nvrtc::{nvrtc_present, Compiler, KernelFile, KERNEL_FILES};

fn compiler(cache: Option<std::path::PathBuf>) -> Compiler {
    assert!(
        nvrtc_present(),
        "libnvrtc not found on LD_LIBRARY_PATH: run `source .ci/nvrtc.sh` first"
    );
    Compiler::new(cache).expect("NVRTC found but not usable")
}

#[test]
#[ignore = "needs NVRTC: source .ci/nvrtc.sh, then --ignored"]
fn every_kernel_file_compiles_for_sm90() {
    let compiler = compiler(None);
    let mut failures = Vec::new();
    for file in KERNEL_FILES {
        match compiler.ptx(file) {
            Ok(ptx) => {
                assert!(
                    ptx.contains(".target sm_90"),
                    "kernels/{} was not compiled for sm_90",
                    file.name
                );
                assert!(
                    ptx.contains(".visible .entry"),
                    "kernels/{} has no extern \"C\" kernel",
                    file.name
                );
            }
            Err(e) => failures.push(format!("{e:#}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Kernels are launched with programmatic dependent launch, so one that never waits for the
/// kernel before it could read its inputs half-written: every entry must wait.
#[test]
#[ignore = "needs NVRTC: source .ci/nvrtc.sh, then --ignored"]
fn every_kernel_waits_for_the_kernel_before_it() {
    let compiler = compiler(None);
    let mut missing = Vec::new();
    for file in KERNEL_FILES {
        let ptx = compiler
            .ptx(file)
            .expect("kernels compile (see every_kernel_file_compiles_for_sm90)");
        for entry in ptx.split(".visible .entry ").skip(1) {
            if !entry.contains("griddepcontrol.wait") {
                missing.push(format!(
                    "{} in kernels/{}",
                    entry.split('(').next().unwrap_or(entry),
                    file.name
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "kernels without pdl_begin(): {}",
        missing.join(", ")
    );
}

/// The kernels that read the timer by design, none of them in a decode unless asked for: the
/// decode pad's two of `ENGINE_DECODE_PAD_PCT`, launched only when the variable is set, and
/// the reading of the clock's step (`engine info`).
const READ_THE_TIMER: [&str; 3] = ["round_start", "decode_pad", "globaltimer_ticks"];

/// The `extern "C"` entries of a PTX module, each with its name.
fn entries(ptx: &str) -> impl Iterator<Item = (&str, &str)> {
    ptx.split(".visible .entry ")
        .skip(1)
        .map(|entry| (entry.split('(').next().unwrap_or(entry), entry))
}

/// With the timeline (`Gpu::with_timeline`) every kernel notes its launch as its wait returns,
/// and without it none but [`READ_THE_TIMER`] reads the timer: the notes cost nothing in the
/// kernels that decode.
#[test]
#[ignore = "needs NVRTC: source .ci/nvrtc.sh, then --ignored"]
fn every_kernel_notes_its_launch_in_timeline_builds_only() {
    let (plain, timed) = (compiler(None), compiler(None).with_timeline());
    let (mut failures, mut readers) = (Vec::new(), 0);
    for file in KERNEL_FILES {
        let ptx = timed.ptx(file).unwrap_or_else(|e| {
            panic!(
                "kernels/{} does not compile with the timeline: {e:#}",
                file.name
            )
        });
        for (name, entry) in entries(&ptx) {
            if !entry.contains("%globaltimer") {
                failures.push(format!("{name} in kernels/{} notes nothing", file.name));
            }
        }
        let ptx = plain.ptx(file).expect("kernels compile");
        for (name, entry) in entries(&ptx) {
            let by_design = READ_THE_TIMER.contains(&name);
            readers += by_design as usize;
            if entry.contains("%globaltimer") != by_design {
                failures.push(format!(
                    "{name} in kernels/{} {} the timer without the timeline",
                    file.name,
                    if by_design { "does not read" } else { "reads" }
                ));
            }
        }
    }
    assert_eq!(
        readers,
        READ_THE_TIMER.len(),
        "{READ_THE_TIMER:?} are kernels of kernels/"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A kernel may load its weights before its wait (ENGINE_WEIGHT_PRELOAD), so the kernels that
/// write weights must not let the next kernel start before they end.
#[test]
#[ignore = "needs NVRTC: source .ci/nvrtc.sh, then --ignored"]
fn kernels_that_write_weights_release_no_kernel_early() {
    let compiler = compiler(None);
    let file = KERNEL_FILES
        .iter()
        .find(|f| f.name == "synthetic.cu")
        .expect("kernels/synthetic.cu is a kernel file");
    let ptx = compiler
        .ptx(file)
        .expect("kernels compile (see every_kernel_file_compiles_for_sm90)");
    let entries: Vec<&str> = ptx.split(".visible .entry ").skip(1).collect();
    assert!(!entries.is_empty(), "no kernels in synthetic.cu");
    for entry in entries {
        let name = entry.split('(').next().unwrap_or(entry);
        assert!(
            !entry.contains("griddepcontrol.launch_dependents"),
            "{name} writes weights but lets its dependents start early"
        );
    }
}

#[test]
#[ignore = "needs NVRTC: source .ci/nvrtc.sh, then --ignored"]
fn a_broken_kernel_fails_with_the_nvrtc_log() {
    let compiler = compiler(None);
    let broken = KernelFile {
        name: "broken.cu",
        source: "extern \"C\" __global__ void k(float* y) { y[0] = undefined_name; }\n",
        fast_math: false,
    };
    let err = format!(
        "{:#}",
        compiler
            .ptx(&broken)
            .expect_err("a kernel with an undefined name compiled")
    );
    assert!(
        err.contains("kernels/broken.cu"),
        "error does not name the file: {err}"
    );
    assert!(
        err.contains("undefined_name"),
        "error does not carry NVRTC's log: {err}"
    );
}

#[test]
#[ignore = "needs NVRTC: source .ci/nvrtc.sh, then --ignored"]
fn compiled_ptx_is_cached_on_disk_by_source() {
    let dir = std::env::temp_dir().join(format!("abab-kernel-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let compiler = compiler(Some(dir.clone()));
    let file = KernelFile {
        name: "tiny.cu",
        source: "extern \"C\" __global__ void tiny(float* y) { y[0] = 1.0f; }\n",
        fast_math: false,
    };
    let ptx = compiler.ptx(&file).expect("tiny kernel compiles");
    let entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("cache dir created")
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        entries.len(),
        1,
        "one cache file expected, found {entries:?}"
    );
    assert_eq!(std::fs::read_to_string(&entries[0]).unwrap(), ptx);

    // A second request is served from the file; another source misses it.
    std::fs::write(&entries[0], "// cached marker").unwrap();
    assert_eq!(compiler.ptx(&file).unwrap(), "// cached marker");
    let changed = KernelFile {
        source: "extern \"C\" __global__ void tiny(float* y) { y[0] = 2.0f; }\n",
        ..file
    };
    assert!(compiler.ptx(&changed).unwrap().contains(".entry tiny"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The kernels that spill, with what ptxas (NVRTC 13.0.88, sm_90) spills for each a thread,
/// in bytes stored and loaded: the router, the projections and the output projection with the
/// router's rows over several positions (verify rounds), and the routing block after it,
/// under the register bounds that keep their blocks resident beside the next kernel's.
/// Every other kernel spills nothing. A kernel that spills more, or one more kernel that
/// spills, is a regression to look at; one that spills less takes its new figures here.
const SPILLS: &[(&str, u32, u32)] = &[
    ("attn_decode_cluster_d256_g1", 4, 4),
    ("gemv_multi_t6", 4, 4),
    ("gemv_multi_t7", 40, 20),
    ("gemv_multi_t8", 36, 16),
    ("moe_router_t5", 12, 16),
    ("moe_router_t6", 32, 36),
    ("moe_router_t7", 36, 172),
    ("moe_router_t8", 144, 76),
    ("moe_router_norm_t4", 4, 4),
    ("moe_router_norm_t6", 16, 20),
    ("moe_router_norm_t7", 24, 32),
    ("moe_router_norm_t8", 280, 252),
    ("moe_out_logits_t6", 4, 4),
    ("moe_out_logits_t7", 20, 28),
    ("moe_out_logits_t8", 16, 16),
    ("moe_route_stream_t5", 8, 4),
    ("moe_route_stream_t6", 8, 4),
    ("moe_route_stream_t7", 12, 8),
    ("moe_route_stream_t8", 12, 8),
];

#[test]
#[ignore = "needs NVRTC: source .ci/nvrtc.sh, then --ignored"]
fn kernels_spill_only_what_they_are_known_to() {
    let compiler = compiler(None);
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for file in KERNEL_FILES {
        // `resources` fails unless ptxas reported every entry of the file's PTX.
        let entries = compiler.resources(file).unwrap_or_else(|e| panic!("{e:#}"));
        for e in entries {
            let known = SPILLS
                .iter()
                .find(|(name, ..)| *name == e.name)
                .map_or((0, 0), |&(_, s, l)| (s, l));
            if (e.spill_store_bytes, e.spill_load_bytes) != known {
                failures.push(format!(
                    "{} (kernels/{}): spills {} bytes stored and {} loaded at {} registers, expected {} and {}",
                    e.name, file.name, e.spill_store_bytes, e.spill_load_bytes, e.registers, known.0, known.1
                ));
            }
            report.push(format!(
                "{:<36} {:>4} regs {:>6} B smem {:>4}/{:<4} B spilled",
                e.name, e.registers, e.shared_bytes, e.spill_store_bytes, e.spill_load_bytes
            ));
        }
    }
    println!("{}", report.join("\n"));
    assert!(
        failures.is_empty(),
        "{}\n(a spill that grows or appears is a regression; one that shrinks updates SPILLS)",
        failures.join("\n")
    );
}

/// NVRTC 12.9+ serves a repeated compile from CUDA's compute cache, and a served compile
/// reports no registers: the report must not depend on what was compiled before.
#[test]
#[ignore = "needs NVRTC: source .ci/nvrtc.sh, then --ignored"]
fn ptxas_reports_a_repeated_compile() {
    let compiler = compiler(None);
    let file = &KERNEL_FILES[0];
    let first = compiler.resources(file).unwrap_or_else(|e| panic!("{e:#}"));
    let again = compiler
        .resources(file)
        .unwrap_or_else(|e| panic!("second report on kernels/{}: {e:#}", file.name));
    assert!(!first.is_empty(), "kernels/{} has no entries", file.name);
    assert_eq!(first, again);
}
