use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use engine::arms::{Arm, ENV_HELP};
use engine::bench::{self, BenchPlan, BenchResult};
use engine::config::{ModelConfig, MAX_DRAFT};
use engine::cpu::CpuBackend;
use engine::info;
use engine::model::Model;
use engine::weights::WeightSource;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "engine", version, about = "Decode engine for the hybrid Gated DeltaNet + gated attention + MoE architecture with MTP speculative decoding")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Time prefill and decode; print a CSV header and one row on stdout.
    #[command(after_help = ENV_HELP)]
    Bench(BenchArgs),
    /// Print the backend, the device and the model's sizes.
    #[command(after_help = ENV_HELP)]
    Info(ModelArgs),
}

#[derive(Args)]
struct ModelArgs {
    /// Model preset: tiny, small, qwen3.6-35b-a3b, dense-27b.
    #[arg(long, default_value = "small", conflicts_with = "config")]
    preset: String,
    /// Model shape from a JSON config file (the fields of a preset; see README).
    #[arg(long, value_name = "FILE.json")]
    config: Option<PathBuf>,
    /// Backend: cpu, cuda, or auto (cuda when available, else cpu). Default: $ENGINE_BACKEND or cpu.
    #[arg(long, value_enum)]
    backend: Option<BackendChoice>,
}

#[derive(Args)]
struct BenchArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Prompt tokens and generated tokens per prompt (`-pg` as in llama-bench).
    #[arg(long = "pg", value_name = "PP,TG", default_value = "128,64", value_parser = parse_pg)]
    pg: (usize, usize),
    /// Timed repetitions.
    #[arg(short = 'r', long = "reps", value_name = "REPS", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    reps: u64,
    /// Untimed repetitions before the timed ones.
    #[arg(long, value_name = "N", default_value_t = 1)]
    warmup: usize,
    /// Prompt positions per prefill pass.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    prefill_chunk: u64,
    /// Speculative decoding with the MTP draft layer (omit for plain greedy decode).
    #[arg(long, value_enum)]
    spec: Option<Spec>,
    /// Draft tokens per speculative round (1..=5; default 3 with --spec).
    #[arg(long, value_name = "K", requires = "spec", value_parser = clap::value_parser!(u64).range(1..=MAX_DRAFT as u64))]
    draft_tokens: Option<u64>,
    /// Weights from a safetensors checkpoint (HF Qwen3.5 names) instead of synthetic ones.
    #[arg(long, value_name = "FILE.safetensors")]
    weights: Option<PathBuf>,
    /// Seed of the synthetic weights and prompts.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Prompts per rep (each prefilled and decoded in turn).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    prompts: u64,
    /// Worker threads (default: all cores).
    #[arg(short = 't', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    threads: Option<u64>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Spec {
    Mtp,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BackendChoice {
    Cpu,
    Cuda,
    Auto,
}

fn parse_pg(s: &str) -> Result<(usize, usize), String> {
    let err = || format!("expected two positive integers PP,TG (e.g. 128,64), got `{s}`");
    let (a, b) = s.split_once(',').ok_or_else(err)?;
    let a: usize = a.trim().parse().map_err(|_| err())?;
    let b: usize = b.trim().parse().map_err(|_| err())?;
    if a == 0 || b == 0 {
        return Err(err());
    }
    Ok((a, b))
}

impl ModelArgs {
    fn config(&self) -> Result<ModelConfig> {
        match &self.config {
            Some(path) => ModelConfig::from_json_file(path),
            None => ModelConfig::preset(&self.preset),
        }
    }

    /// The backend to run on; only the CPU backend is built into this engine so far.
    fn backend(&self) -> Result<&'static str> {
        let choice = match self.backend {
            Some(c) => c,
            None => match std::env::var("ENGINE_BACKEND").ok().as_deref() {
                None | Some("cpu") => BackendChoice::Cpu,
                Some("cuda") => BackendChoice::Cuda,
                Some("auto") => BackendChoice::Auto,
                Some(other) => bail!("unknown value `{other}` for environment variable ENGINE_BACKEND; allowed: cpu, cuda, auto"),
            },
        };
        // SAFETY: only probes whether the driver library can be loaded.
        let device = unsafe { cudarc::driver::sys::is_culib_present() };
        match choice {
            BackendChoice::Cpu => Ok("cpu"),
            BackendChoice::Cuda if !device => bail!("--backend cuda: no CUDA device (libcuda could not be loaded); use --backend cpu"),
            BackendChoice::Cuda => bail!("--backend cuda: the CUDA backend is not built into this engine yet; use --backend cpu"),
            BackendChoice::Auto => {
                eprintln!("backend auto: using cpu");
                Ok("cpu")
            }
        }
    }
}

fn bench(args: &BenchArgs) -> Result<()> {
    let cfg = args.model.config()?;
    args.model.backend()?;
    let arm = Arm::from_env()?;
    // Everything runs on a pool worker, so the kernels' parallel splits use the worker's own
    // queue (the global injector allocates every 63 jobs).
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0) as usize)
        .build()
        .context("cannot start the worker threads")?;
    let source = match &args.weights {
        Some(path) => WeightSource::Safetensors(path.clone()),
        None => WeightSource::Synthetic { seed: args.seed },
    };
    let plan = BenchPlan {
        n_prompt: args.pg.0,
        n_gen: args.pg.1,
        reps: args.reps as usize,
        warmup: args.warmup,
        prefill_chunk: args.prefill_chunk as usize,
        draft_tokens: args.spec.map(|Spec::Mtp| args.draft_tokens.unwrap_or(3) as usize),
        prompts: args.prompts as usize,
        seed: args.seed,
    };
    eprintln!("building {} ({}) with prefetch={} pool_layout={}", cfg.name, source_name(&source), arm.prefetch.name(), arm.layout.name());
    let mut model = Model::new(cfg, &source, arm, CpuBackend::new(), plan.prefill_chunk)?;
    let result = pool.install(|| bench::run(&mut model, &plan))?;
    // A closed pipe (`engine bench | head -1`) is an error to report, not a panic.
    writeln!(std::io::stdout().lock(), "{}\n{}", BenchResult::HEADER, result.row())
        .context("cannot write the result to stdout")?;
    Ok(())
}

fn source_name(s: &WeightSource) -> String {
    match s {
        WeightSource::Synthetic { seed } => format!("synthetic weights, seed {seed}"),
        WeightSource::Safetensors(p) => p.display().to_string(),
    }
}

/// The arguments with llama-bench's `-pg` spelled as the long flag `--pg` (clap has no
/// two-letter short flags).
fn args() -> Vec<std::ffi::OsString> {
    std::env::args_os()
        .map(|a| match a.to_str() {
            Some("-pg") => "--pg".into(),
            Some(s) if s.starts_with("-pg=") => format!("-{s}").into(),
            _ => a,
        })
        .collect()
}

fn run() -> Result<()> {
    let cli = Cli::parse_from(args());
    match &cli.command {
        Command::Bench(args) => bench(args),
        Command::Info(args) => {
            let cfg = args.config()?;
            let backend = args.backend()?;
            print!("{}", info::report(&cfg, backend, &info::cpu_description()));
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
