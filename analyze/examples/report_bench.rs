//! Benchmark of `analyze report --json`: generates ladders of 48 cells (6 arms × 8 passes,
//! a metric, a round split and an output digest) once into DIR (default
//! target/report-bench, reused by later runs), then times the report of all of them into
//! JSON (median of 5 runs after one warm-up) and prints the rate and the peak memory.
//!
//! `cargo run --release -p analyze --example report_bench -- [FILES] [BOOTSTRAP] [DIR]`
//! (defaults: 10000 files, 0 bootstrap resamples: the METHOD.md figures, Wilcoxon and order
//! checks; pass 2000 to include the report's default bootstrap). When `python3` is on PATH,
//! the plain single-threaded Python computation `bench/report_reference.py` runs on the same
//! files in the same run and the ratio is printed.

use analyze::analysis::ExtrasConfig;
use analyze::reading::{self, Options};
use ladder::sample::{Sample, SampleArm};
use ladder::Role;
use std::path::PathBuf;
use std::time::Instant;

/// Reading thousands of ladders allocates millions of small rows; mimalloc does that
/// measurably faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().map_or(Ok(10_000), |a| a.parse())?;
    let resamples: usize = args.next().map_or(Ok(0), |a| a.parse())?;
    let dir = args
        .next()
        .map_or_else(|| PathBuf::from("target/report-bench"), PathBuf::from);
    std::fs::create_dir_all(&dir)?;
    let paths = generate(&dir, files)?;

    let options = Options {
        allow_defects: false,
        extras: ExtrasConfig { resamples, seed: 1 },
        compare: Vec::new(),
        margin_pct: None,
    };
    let out = dir.with_extension("json");
    let run = || -> anyhow::Result<(f64, f64)> {
        let clock = Instant::now();
        let reading = reading::read(&paths, &options)?;
        let read_s = clock.elapsed().as_secs_f64();
        analyze::export::json::write(
            &reading,
            std::io::BufWriter::new(std::fs::File::create(&out)?),
        )?;
        Ok((clock.elapsed().as_secs_f64(), read_s))
    };
    run()?; // warms the page cache
    let mut runs = (0..5).map(|_| run()).collect::<anyhow::Result<Vec<_>>>()?;
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (seconds, read_s) = runs[2];

    let bytes = std::fs::metadata(&out)?.len();
    println!("report of {files} ladders × 48 cells into JSON ({resamples} bootstrap resamples), median of 5 runs");
    println!(
        "  {seconds:.3} s ({read_s:.3} s reading and computing, {:.3} s writing {:.1} MB of JSON)",
        seconds - read_s,
        bytes as f64 / 1e6
    );
    println!(
        "  {:.0} files/s, {:.2} M cells/s",
        files as f64 / seconds,
        (files * 48) as f64 / seconds / 1e6
    );
    println!("  peak RSS {}", peak_rss());
    if let Some(python_s) = python_reference(&dir, &dir.with_extension("python.json")) {
        println!(
            "  python reference (bench/report_reference.py, 1 thread, METHOD.md figures only): {python_s:.3} s; this report is {:.1}x faster",
            python_s / seconds
        );
    }
    Ok(())
}

/// Writes `count` ladders of one spec with distinct tags and seeds (keeping those already
/// in a kept DIR).
fn generate(dir: &std::path::Path, count: usize) -> anyhow::Result<Vec<PathBuf>> {
    let arms = vec![
        SampleArm::new("off", Role::Base, 0.0),
        SampleArm::new("window", Role::Arm, 0.8),
        SampleArm::new("stride", Role::Arm, 0.3),
        SampleArm::new("null", Role::Null, 0.0),
        SampleArm::new("again", Role::Reflexive, 0.0),
        SampleArm::new("sz", Role::StructuralZero, -0.2),
    ];
    (0..count)
        .map(|i| {
            let mut sample = Sample::new("bench", &format!("t{i:05}"), arms.clone());
            sample.seed = i as u64 + 1;
            sample.split = true;
            sample.digest = true;
            let path = dir.join(format!("bench_t{i:05}.csv"));
            if !path.exists() {
                std::fs::write(&path, sample.file_text())?;
            }
            Ok(path)
        })
        .collect()
}

/// Seconds the plain Python computation took on the same folder, if it ran.
fn python_reference(dir: &std::path::Path, out: &std::path::Path) -> Option<f64> {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/report_reference.py");
    let run = std::process::Command::new("python3")
        .arg(script)
        .arg(dir)
        .arg(out)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&run.stdout);
    text.split(" in ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l["VmHWM:".len()..].trim().to_string())
        })
        .unwrap_or_else(|| "unknown (no /proc/self/status)".into())
}
