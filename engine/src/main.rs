use anyhow::{bail, Context, Result};
use engine::backend::Backend;
use engine::bench::{self, BenchPlan, BenchResult};
use engine::breakdown::{self, Breakdown};
use engine::cli::{self, BenchArgs, Command, ModelArgs};
use engine::config::ModelConfig;
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
use std::process::ExitCode;
use std::time::Instant;

/// Launches the timeline of `--rows ops` holds between two reads (one prompt's decode): a
/// 35B-A3B token takes about 300, a speculative round more; 64 MiB of notes on the device.
const TIMELINE_CAPACITY: usize = 1 << 22;

/// A backend that was opened: the CPU, or the GPU with its start-up time.
enum Opened {
    Cpu,
    Cuda(Box<CudaBackend>),
}

/// Opens the backend `model` names: `cuda` fails clearly without a device, `auto` falls
/// back to the CPU.
fn open_backend(model: &ModelArgs, graphs: bool, l2_arm: L2Arm) -> Result<Opened> {
    let choice = match model.backend {
        Some(c) => c,
        None => options::BACKEND.read(&options::environment)?,
    };
    match choice {
        BackendChoice::Cpu => Ok(Opened::Cpu),
        BackendChoice::Cuda => {
            let b = CudaBackend::new(0, graphs, l2_arm)
                .map_err(|e| anyhow::anyhow!("--backend cuda: {e:#}; use --backend cpu or auto"))?;
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

fn bench(args: &BenchArgs, start: Instant) -> Result<()> {
    let cfg = args.model.config()?;
    let arm = Arm::from_env()?;
    let l2_arm = L2Arm::from_env()?;
    let gpu_options = GpuOptions::from_env()?;
    let plan = args.plan(&options::environment)?;
    let slow = options::slow_op(&options::environment)?;
    if args.layouts > 1 && matches!(args.rows, Rows::Ops) {
        bail!(
            "--rows ops times the kernels on a model of its own: run it without --layouts {}",
            args.layouts
        );
    }
    let opened = open_backend(&args.model, !args.no_cuda_graph, l2_arm)?;
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
            if args.layouts > 1 {
                bail!(
                    "--layouts {} places the model's device memory again: it needs the CUDA \
                     backend (--backend cuda or ENGINE_BACKEND=cuda), or leave it out",
                    args.layouts
                );
            }
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
            let mut runs = vec![cuda_run(&mut model, &plan, start, meter.as_mut())?];
            for layout in 2..=args.layouts as usize {
                let backend = model.into_backend().fresh();
                let spacer = backend.gpu.placement_spacer(layout)?;
                eprintln!(
                    "layout {layout}/{}: the model built again after a {} MiB spacer",
                    args.layouts,
                    spacer.len() >> 20
                );
                model = build(cfg.clone(), &source, arm, backend, &plan)?;
                runs.push(cuda_run(&mut model, &plan, start, meter.as_mut())?);
            }
            let result = bench::merge_layouts(runs)?;
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

/// One run of the plan on a CUDA model, with the L2 state read back after it.
fn cuda_run(
    model: &mut Model<CudaBackend>,
    plan: &BenchPlan,
    start: Instant,
    meter: &mut dyn Meter,
) -> Result<BenchResult> {
    let mut result = bench::run_from(model, plan, start, meter)?;
    result.l2 = model
        .backend
        .l2_audit()
        .context("reading the L2 state back from the graphs and the device")?;
    Ok(result)
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
    let rows = breakdown::run(
        model,
        plan,
        warmups,
        plan.decode_pad_pct,
        &result.output_digest,
    )?;
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

fn run(start: Instant) -> Result<()> {
    let cli = cli::parse();
    if matches!(cli.command, Command::Bench(_) | Command::Info(_)) {
        options::check_environment()?;
    }
    match &cli.command {
        Command::Bench(args) => bench(args, start),
        Command::Info(args) => {
            let cfg = args.config()?;
            let (name, device) = match open_backend(args, true, L2Arm::default())? {
                Opened::Cpu => ("cpu", info::cpu_description()),
                Opened::Cuda(b) => {
                    let mut device = info::gpu_description(&b.gpu.info);
                    let step = b.gpu.globaltimer_step()?;
                    device.push((
                        "globaltimer step".into(),
                        format!(
                            "{:.3} µs (a decode pad ends on a step)",
                            step.as_secs_f64() * 1e6
                        ),
                    ));
                    ("cuda", device)
                }
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

/// Compiles (or finds cached) the PTX of every kernel file, plain and with the timeline that
/// `--rows ops` loads (else a device's first such cell compiles for about a minute), the
/// cache named on stdout.
fn fill_kernel_cache() -> Result<()> {
    use engine::cuda::nvrtc::{default_cache_dir, Compiler, KERNEL_FILES};
    let dir =
        default_cache_dir().context("no kernel cache: neither XDG_CACHE_HOME nor HOME is set")?;
    let plain = Compiler::new(Some(dir.clone()))?;
    let timeline = Compiler::new(Some(dir.clone()))?.with_timeline();
    for compiler in [&plain, &timeline] {
        for file in KERNEL_FILES {
            compiler.ptx(file)?;
        }
    }
    println!(
        "{} kernel files compiled for sm_90, plain and with the timeline, into {}",
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
