use anyhow::{bail, Context, Result};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use engine::backend::Backend;
use engine::bench::{self, BenchPlan, BenchResult};
use engine::config::{ModelConfig, MAX_DRAFT};
use engine::cpu::CpuBackend;
use engine::cuda::CudaBackend;
use engine::info;
use engine::model::Model;
use engine::options::{self, Arm, BackendChoice, GpuOptions, L2Arm, L2Mode, Named};
use engine::weights::WeightSource;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "engine",
    version,
    about = "Decode engine for the hybrid Gated DeltaNet + gated attention + MoE architecture with MTP speculative decoding"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Time prefill and decode; print a CSV header and one row on stdout.
    Bench(BenchArgs),
    /// Print the backend, the device and the model's sizes.
    Info(ModelArgs),
    /// List the ENGINE_* environment variables, their values and defaults.
    Options,
    /// Compile every kernel into the kernel cache without opening a device (NVRTC only), so
    /// that a GPU machine given the cache skips the compile on its first start.
    Kernels,
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
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=8192))]
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
    /// CUDA: run every decode round's kernels eagerly instead of replaying captured graphs.
    #[arg(long)]
    no_cuda_graph: bool,
    /// The read bandwidth (GB/s) to quote the decode against; CUDA measures it at start
    /// when omitted (a 4 GiB read), the CPU leaves the roofline columns empty.
    #[arg(long, value_name = "GB/S", value_parser = parse_ceiling)]
    read_ceiling_gbs: Option<f64>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Spec {
    Mtp,
}

fn parse_ceiling(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("expected a positive number of GB/s, got `{s}`")),
    }
}

/// A backend that was opened: the CPU, or the GPU with its start-up time.
enum Opened {
    Cpu,
    Cuda(Box<CudaBackend>),
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

    /// Opens the backend to run on: `cuda` fails clearly without a device, `auto` falls
    /// back to the CPU.
    fn backend(&self, graphs: bool, l2_arm: L2Arm) -> Result<Opened> {
        let choice = match self.backend {
            Some(c) => c,
            None => options::BACKEND.read(&options::environment)?,
        };
        match choice {
            BackendChoice::Cpu => Ok(Opened::Cpu),
            BackendChoice::Cuda => {
                let b = CudaBackend::new(0, graphs, l2_arm).map_err(|e| {
                    anyhow::anyhow!("--backend cuda: {e:#}; use --backend cpu or auto")
                })?;
                Ok(Opened::Cuda(Box::new(b)))
            }
            BackendChoice::Auto => match CudaBackend::new(0, graphs, l2_arm) {
                Ok(b) => Ok(Opened::Cuda(Box::new(b))),
                Err(e) => {
                    eprintln!("backend auto: using cpu ({e:#})");
                    Ok(Opened::Cpu)
                }
            },
        }
    }
}

fn bench(args: &BenchArgs) -> Result<()> {
    let start = std::time::Instant::now();
    let cfg = args.model.config()?;
    let arm = Arm::from_env()?;
    let l2_arm = L2Arm::from_env()?;
    let gpu_options = GpuOptions::from_env()?;
    let plan = BenchPlan {
        n_prompt: args.pg.0,
        n_gen: args.pg.1,
        reps: args.reps as usize,
        warmup: args.warmup,
        prefill_chunk: args.prefill_chunk as usize,
        draft_tokens: args
            .spec
            .map(|Spec::Mtp| args.draft_tokens.unwrap_or(3) as usize),
        prompts: args.prompts as usize,
        seed: args.seed,
        read_ceiling_gbs: args.read_ceiling_gbs,
        decode_pad_pct: options::decode_pad_pct(&options::environment)?,
    };
    plan.check()?;
    let opened = args.model.backend(!args.no_cuda_graph, l2_arm)?;
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
    eprintln!(
        "building {} ({}) with prefetch={} pool_layout={}",
        cfg.name,
        source_name(&source),
        arm.prefetch.name(),
        arm.layout.name()
    );
    let result = match opened {
        Opened::Cpu => {
            if l2_arm.mode != L2Mode::Off {
                bail!(
                    "ENGINE_L2={} needs the CUDA backend (--backend cuda or ENGINE_BACKEND=cuda)",
                    l2_arm.mode.name()
                );
            }
            let mut model = build(cfg, &source, arm, CpuBackend::new(), &plan, start)?;
            pool.install(|| bench::run(&mut model, &plan))?
        }
        Opened::Cuda(mut b) => {
            b.gpu.options = gpu_options;
            eprintln!(
                "device {} ({} SMs), kernels ready in {:.3} s, {}",
                b.gpu.info.name,
                b.gpu.info.sm_count,
                b.startup_seconds,
                gpu_options.describe()
            );
            let mut plan = plan;
            if plan.read_ceiling_gbs.is_none() {
                let gbs = b
                    .gpu
                    .measure_read_ceiling_gbs(4 << 30)
                    .context("measuring the read ceiling (pass --read-ceiling-gbs to skip)")?;
                eprintln!("read ceiling {gbs:.1} GB/s (4 GiB float4 read, median of 10)");
                plan.read_ceiling_gbs = Some(gbs);
            }
            let mut model = build(cfg, &source, arm, *b, &plan, start)?;
            let mut result = bench::run(&mut model, &plan)?;
            result.l2 = model
                .backend
                .l2_audit()
                .context("reading the L2 state back from the graphs and the device")?;
            result
        }
    };
    // A closed pipe (`engine bench | head -1`) is an error to report, not a panic.
    writeln!(
        std::io::stdout().lock(),
        "{}\n{}",
        BenchResult::header(),
        result.row()
    )
    .context("cannot write the result to stdout")?;
    Ok(())
}

/// Builds the model on `backend`; prints the start-up time to stderr.
fn build<B: Backend>(
    cfg: ModelConfig,
    source: &WeightSource,
    arm: Arm,
    backend: B,
    plan: &BenchPlan,
    start: std::time::Instant,
) -> Result<Model<B>> {
    let mut model = Model::new(cfg, source, arm, backend, plan.prefill_chunk)?;
    model.backend.take_error()?;
    eprintln!(
        "start-up {:.3} s (arguments to a built model, weights included)",
        start.elapsed().as_secs_f64()
    );
    Ok(model)
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

/// Both subcommands list the variables they read (all of them: the CPU's arm, the backend,
/// the GPU's L2 and launches), as `engine options` does.
fn parse() -> Cli {
    let help = options::help();
    let command = Cli::command()
        .mut_subcommand("bench", |c| c.after_help(help.clone()))
        .mut_subcommand("info", |c| c.after_help(help.clone()));
    let matches = command.get_matches_from(args());
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

fn run() -> Result<()> {
    let cli = parse();
    match &cli.command {
        Command::Bench(args) => bench(args),
        Command::Info(args) => {
            let cfg = args.config()?;
            let (name, device) = match args.backend(true, L2Arm::default())? {
                Opened::Cpu => ("cpu", info::cpu_description()),
                Opened::Cuda(b) => ("cuda", info::gpu_description(&b.gpu.info)),
            };
            print!("{}", info::report(&cfg, name, &device));
            Ok(())
        }
        Command::Options => {
            print!("{}", options::help());
            Ok(())
        }
        Command::Kernels => fill_kernel_cache(),
    }
}

/// Compiles (or finds cached) the PTX of every kernel file, the cache named on stdout.
fn fill_kernel_cache() -> Result<()> {
    use engine::cuda::nvrtc::{default_cache_dir, Compiler, KERNEL_FILES};
    let dir =
        default_cache_dir().context("no kernel cache: neither XDG_CACHE_HOME nor HOME is set")?;
    let compiler = Compiler::new(Some(dir.clone()))?;
    for file in KERNEL_FILES {
        compiler.ptx(file)?;
    }
    println!(
        "{} kernel files compiled for sm_90 into {}",
        KERNEL_FILES.len(),
        dir.display()
    );
    Ok(())
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
