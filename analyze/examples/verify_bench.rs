//! Verifies many generated ladder files and prints the rate and the peak memory.
//!
//! `cargo run --release -p analyze --example verify_bench -- [FILES] [DIR]`
//! (default 10,000 files of 48 cells: 6 arms × 8 passes, about 80 MB). The files are
//! generated once into DIR (default target/verify-bench) and reused. Memory is read after a
//! tenth of the files and after all of them: a peak that does not move shows that it does
//! not grow with the number of files. When `python3` is on PATH, the plain single-threaded
//! Python reader `bench/verify_reference.py` verifies the same files in the same run, and
//! the ratio is printed.

use analyze::verify::verify_files;
use ladder::sample::{Sample, SampleArm};
use ladder::Role;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn sample(i: usize) -> String {
    let roles = [
        Role::Base,
        Role::Arm,
        Role::Arm,
        Role::Null,
        Role::Reflexive,
        Role::StructuralZero,
    ];
    let arms = roles
        .iter()
        .enumerate()
        .map(|(a, &role)| SampleArm::new(&format!("arm{a}"), role, 0.3 * a as f64))
        .collect();
    let mut sample = Sample::new("bench", &format!("t{i}"), arms);
    sample.seed = i as u64;
    sample.split = true;
    sample.digest = true;
    sample.witness = true;
    sample.file_text()
}

fn generate(dir: &Path, files: usize) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).expect("create the bench folder");
    (0..files)
        .map(|i| {
            let path = dir.join(format!("bench_t{i}.csv"));
            if !path.exists() {
                std::fs::write(&path, sample(i)).expect("write a bench file");
            }
            path
        })
        .collect()
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(f64::NAN);
    kib / 1024.0
}

fn timed(paths: &[PathBuf]) -> (f64, usize) {
    let clock = Instant::now();
    let verdicts = verify_files(paths);
    let seconds = clock.elapsed().as_secs_f64();
    let connected = verdicts.iter().filter(|v| v.verdict.connected).count();
    assert_eq!(
        connected,
        paths.len(),
        "every generated file is one connected run"
    );
    (seconds, connected)
}

/// Seconds the Python reader took on the same folder, if it ran.
fn python_reference(dir: &Path) -> Option<f64> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/verify_reference.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(dir)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split(" in ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let files: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "target/verify-bench".into()));
    let paths = generate(&dir, files);
    let bytes: u64 = paths
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    let _ = timed(&paths); // warm the page cache
    let tenth = &paths[..(files / 10).max(1)];
    let (_, _) = timed(tenth);
    let peak_tenth = peak_rss_mib();
    let runs: Vec<f64> = (0..5).map(|_| timed(&paths).0).collect();
    let mut sorted = runs.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[2];
    println!(
        "verified {files} files ({:.1} MB, {} cells each) in {median:.3} s median of 5 ({:.0} files/s, {:.0} MB/s); runs {:?}",
        bytes as f64 / 1e6,
        48,
        files as f64 / median,
        bytes as f64 / 1e6 / median,
        runs.iter().map(|r| format!("{r:.3}")).collect::<Vec<_>>()
    );
    if let Some(python_s) = python_reference(&dir) {
        println!("python reference (bench/verify_reference.py, 1 thread): {python_s:.3} s; this verifier is {:.1}x faster", python_s / median);
    }
    println!(
        "peak memory: {peak_tenth:.1} MiB after {} files, {:.1} MiB after {files} files, on {} threads",
        tenth.len(),
        peak_rss_mib(),
        rayon::current_num_threads()
    );
}
