use anyhow::{bail, Context, Result};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use engine::backend::Backend;
use engine::bench::{self, BenchPlan, BenchResult};
use engine::breakdown::{self, Breakdown};
use engine::config::{ModelConfig, MAX_DRAFT};
use engine::cpu::CpuBackend;
use engine::cuda::{CudaBackend, Gpu};
use engine::energy_counter;
use engine::info;
use engine::meter::{Meter, NoMeter, NvmlMeter};
use engine::model::Model;
use engine::options::{self, Arm, BackendChoice, GpuOptions, L2Arm, L2Mode, Named, Rows};
use engine::rows::{self, Extra};
use engine::weights::WeightSource;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Launches the timeline of `--rows ops` holds between two reads (one prompt's decode): a
/// 35B-A3B token takes about 300, a speculative round more; 64 MiB of notes on the device.
const TIMELINE_CAPACITY: usize = 1 << 22;

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
    /// Read the card's energy counter in a tight loop while the device streams memory: how
    /// often it moves, by how much, and the span a figure of 1 % needs.
    EnergyCounter {
        /// Seconds of load to poll through.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
    },
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
    /// The rows after the summary row: none, one per operation (CPU) or kernel (CUDA) of the
    /// decode timed in reps of their own after the timed ones, or one per timed rep.
    #[arg(long, value_enum, default_value_t = Rows::Summary)]
    rows: Rows,
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

fn bench(args: &BenchArgs, start: Instant) -> Result<()> {
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
    let slow = options::slow_op(&options::environment)?;
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
    let (result, extra) = match opened {
        Opened::Cpu => {
            if l2_arm.mode != L2Mode::Off {
                bail!(
                    "ENGINE_L2={} needs the CUDA backend (--backend cuda or ENGINE_BACKEND=cuda)",
                    l2_arm.mode.name()
                );
            }
            let mut backend = CpuBackend::new();
            if let Some(slow) = slow {
                backend.slow_op(slow);
            }
            let mut model = build(cfg, &source, arm, backend, &plan)?;
            pool.install(|| -> Result<_> {
                let result = bench::run_from(&mut model, &plan, start, &mut NoMeter)?;
                // The same model, warm from the timed reps: no warm-up of its own.
                let extra = match args.rows {
                    Rows::Ops => Extra::Ops(op_rows(&mut model, &plan, 0, &result)?),
                    rows => extra_of(rows),
                };
                Ok((result, extra))
            })?
        }
        Opened::Cuda(mut b) => {
            if let Some(slow) = slow {
                bail!(
                    "ENGINE_SLOW_OP={}:{} stretches an operation of the CPU backend: use \
                     --backend cpu, or unset it",
                    slow.op.name(),
                    slow.pct
                );
            }
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
                let measured = Instant::now();
                let gbs = b
                    .gpu
                    .measure_read_ceiling_gbs(4 << 30)
                    .context("measuring the read ceiling (pass --read-ceiling-gbs to skip)")?;
                eprintln!(
                    "read ceiling {gbs:.1} GB/s (4 GiB float4 read, median of 10) in {:.3} s",
                    measured.elapsed().as_secs_f64()
                );
                plan.read_ceiling_gbs = Some(gbs);
            }
            let mut meter = card_meter();
            let mut model = build(cfg.clone(), &source, arm, *b, &plan)?;
            let mut result = bench::run_from(&mut model, &plan, start, meter.as_mut())?;
            result.l2 = model
                .backend
                .l2_audit()
                .context("reading the L2 state back from the graphs and the device")?;
            let extra = match args.rows {
                Rows::Ops => {
                    // Both models would not fit beside a large model's weights.
                    drop(model);
                    let mut gpu = Gpu::with_timeline(0, TIMELINE_CAPACITY)
                        .context("opening the device again with the timeline for --rows ops")?;
                    gpu.options = gpu_options;
                    let backend = CudaBackend::on(gpu, !args.no_cuda_graph, l2_arm);
                    let mut model = build(cfg, &source, arm, backend, &plan)?;
                    let warmups = plan.warmup.max(1);
                    Extra::Ops(op_rows(&mut model, &plan, warmups, &result)?)
                }
                rows => extra_of(rows),
            };
            (result, extra)
        }
    };
    // A closed pipe (`engine bench | head -1`) is an error to report, not a panic.
    write!(std::io::stdout().lock(), "{}", rows::csv(&result, &extra))
        .context("cannot write the result to stdout")?;
    Ok(())
}

/// The card's energy counter and memory through NVML, or no figures (and why, on stderr).
fn card_meter() -> Box<dyn Meter> {
    match NvmlMeter::open(0) {
        Ok(m) => Box::new(m),
        Err(why) => {
            eprintln!("no energy or memory figures: {why}");
            Box::new(NoMeter)
        }
    }
}

/// The rows that need nothing more than the timed reps.
fn extra_of(rows: Rows) -> Extra {
    match rows {
        Rows::Reps => Extra::Reps,
        Rows::Summary | Rows::Ops => Extra::None,
    }
}

/// The op rows of `--rows ops`, timed on `model` after the timed reps of `result`, and what
/// timing them cost, said on stderr.
fn op_rows<B: Backend>(
    model: &mut Model<B>,
    plan: &BenchPlan,
    warmups: usize,
    result: &BenchResult,
) -> Result<Breakdown> {
    let pad = result
        .decode_pad
        .map(|p| Duration::from_secs_f64(p.seconds));
    let rows = breakdown::run(model, plan, warmups, pad, &result.output_digest)?;
    eprintln!("{}", rows.describe(result.decode_us_per_token()));
    Ok(rows)
}

/// Builds the model on `backend`; prints how long that took (the weights made or loaded).
fn build<B: Backend>(
    cfg: ModelConfig,
    source: &WeightSource,
    arm: Arm,
    backend: B,
    plan: &BenchPlan,
) -> Result<Model<B>> {
    let started = Instant::now();
    let mut model = Model::new(cfg, source, arm, backend, plan.prefill_chunk)?;
    model.backend.take_error()?;
    eprintln!(
        "model with its weights built in {:.3} s",
        started.elapsed().as_secs_f64()
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

fn run(start: Instant) -> Result<()> {
    let cli = parse();
    match &cli.command {
        Command::Bench(args) => bench(args, start),
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
        Command::EnergyCounter { seconds } => energy_counter(*seconds),
    }
}

/// `engine energy-counter`: the counter read under load, in words.
fn energy_counter(seconds: f64) -> Result<()> {
    let mut meter = NvmlMeter::open(0).map_err(|why| {
        anyhow::anyhow!(
            "{why}: `engine energy-counter` reads an NVIDIA card's energy counter through its \
             driver's NVML; run it on the machine with the card"
        )
    })?;
    let gpu = Gpu::new(0)?;
    let r = energy_counter::measure(&gpu, &mut meter, seconds)?;
    println!(
        "energy counter: {} updates in {} polls, every {:.1} ms (median), step {:.0} mJ \
         (median), {:.0} W under a streaming read; a span is known to 1 % from {:.1} s, to \
         5 % from {:.2} s",
        r.updates,
        r.polls,
        r.interval_ms,
        r.step_mj,
        r.power_w,
        r.span_for_pct(1.0).as_secs_f64(),
        r.span_for_pct(5.0).as_secs_f64()
    );
    Ok(())
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
    // `startup_seconds` counts from here: the process's first line.
    let start = Instant::now();
    match run(start) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
