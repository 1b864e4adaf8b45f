//! The GPU: probe, context, stream, device facts and the loaded kernels.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use anyhow::{bail, ensure, Context, Result};
use cudarc::driver::sys::{CUdevice_attribute as Attr, CUfunction_attribute};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream};
use cudarc::nvrtc::Ptx;

use super::nvrtc::{default_cache_dir, entry_points, Compiler, KERNEL_FILES};
use super::timeline::Timeline;

/// Facts read off the device at start-up (never compiled in).
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    pub name: String,
    pub compute_capability: (i32, i32),
    pub sm_count: u32,
    pub l2_bytes: usize,
    pub persisting_l2_max_bytes: usize,
    pub access_policy_max_window_bytes: usize,
    pub total_mem_bytes: usize,
}

/// Whether the CUDA driver library can be loaded (the cudarc loader panics when it cannot).
pub fn driver_present() -> bool {
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// A CUDA device with its own stream and every kernel of `kernels/` loaded. All launch
/// wrappers enqueue on [`Gpu::stream`], so a caller can capture a round as a CUDA graph.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub info: DeviceInfo,
    /// How decode kernels are launched and fused: the `ENGINE_*` options of [`super::GpuOptions`],
    /// at their defaults until the caller sets them.
    pub options: super::GpuOptions,
    functions: HashMap<String, CudaFunction>,
    /// Where the kernels note their launches ([`Gpu::with_timeline`]).
    pub timeline: Option<Timeline>,
    /// cuBLAS and the split activations of the prefill GEMMs, made on first use (decode never
    /// needs them, and a graph capture never makes them).
    pub(crate) blas: Mutex<super::gemv::Blas>,
}

impl Gpu {
    /// Opens device `ordinal` and compiles (or loads from the disk cache) every kernel.
    /// Fails with "no CUDA device" when there is no driver or no device.
    pub fn new(ordinal: usize) -> Result<Self> {
        Self::open(ordinal, None)
    }

    /// As [`Gpu::new`], with the kernels compiled to note every launch into a timeline of
    /// `capacity` launches ([`super::timeline`]).
    pub fn with_timeline(ordinal: usize, capacity: usize) -> Result<Self> {
        Self::open(ordinal, Some(capacity))
    }

    fn open(ordinal: usize, timeline_capacity: Option<usize>) -> Result<Self> {
        let ctx = open_context(ordinal)?;
        // Event tracking would make graph capture with a second stream fail
        // (CUDA_ERROR_STREAM_CAPTURE_ISOLATION); the engine orders its work on one stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().context("creating a CUDA stream")?;
        let info = read_info(&ctx)?;
        if info.compute_capability.0 < 9 {
            bail!(
                "CUDA device {ordinal} ({}) has compute capability {}.{}; the kernels are built for sm_90 (Hopper)",
                info.name,
                info.compute_capability.0,
                info.compute_capability.1
            );
        }
        let timeline = timeline_capacity
            .map(|n| Timeline::new(&stream, n))
            .transpose()?;
        let functions = load_kernels(&ctx, &stream, timeline.as_ref())?;
        Ok(Self {
            ctx,
            stream,
            info,
            options: super::GpuOptions::default(),
            functions,
            timeline,
            blas: Mutex::default(),
        })
    }

    /// A loaded kernel by its `extern "C"` name.
    pub(crate) fn function(&self, name: &str) -> Result<&CudaFunction> {
        self.functions
            .get(name)
            .with_context(|| format!("kernel {name} is not in kernels/"))
    }

    /// Registers a thread and local memory a thread (stack frame and spills) of a loaded kernel,
    /// as the driver assembled its PTX.
    pub fn kernel_registers(&self, name: &str) -> Result<(u32, u32)> {
        let f = self.function(name)?;
        let registers = f
            .num_regs()
            .with_context(|| format!("reading the registers of kernel {name}"))?;
        let local = f
            .local_size_bytes()
            .with_context(|| format!("reading the local memory of kernel {name}"))?;
        Ok((registers as u32, local as u32))
    }

    /// A block of device memory of a random number of whole 2 MiB pages (0 to 1 GiB) that
    /// shifts where everything allocated after it lies, so that a model built again after it
    /// reads its weights from other physical pages (`engine bench --layouts`). Call it with
    /// nothing of the last model left: the stream is synchronized first, so that the memory
    /// the last model freed is back with the driver.
    pub fn placement_spacer(&self, layout: usize) -> Result<CudaSlice<u8>> {
        const PAGE: usize = 2 << 20;
        self.synchronize()?;
        let mut h = blake3::Hasher::new();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        h.update(&now.as_nanos().to_le_bytes());
        h.update(&std::process::id().to_le_bytes());
        h.update(&layout.to_le_bytes());
        let draw = u64::from_le_bytes(h.finalize().as_bytes()[..8].try_into().expect("8 bytes"));
        let bytes = (draw % 513) as usize * PAGE;
        self.stream
            .alloc_zeros(bytes.max(1))
            .with_context(|| format!("allocating a {} MiB placement spacer", bytes >> 20))
    }

    /// Waits for all work queued on the stream and reports any asynchronous kernel error.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .context("CUDA stream synchronize (a kernel failed)")
    }
}

fn open_context(ordinal: usize) -> Result<Arc<CudaContext>> {
    if !driver_present() {
        bail!("no CUDA device: the CUDA driver library (libcuda.so.1) is not installed on this machine");
    }
    let count = CudaContext::device_count()
        .map_err(|e| anyhow::anyhow!("no CUDA device: the driver reports {e:?}"))?;
    if count <= 0 {
        bail!("no CUDA device: the driver sees no GPU");
    }
    if ordinal >= count as usize {
        bail!("no CUDA device {ordinal}: the driver sees {count} device(s), numbered from 0");
    }
    CudaContext::new(ordinal)
        .with_context(|| format!("creating a CUDA context on device {ordinal}"))
}

fn read_info(ctx: &Arc<CudaContext>) -> Result<DeviceInfo> {
    let attr = |a: Attr| {
        ctx.attribute(a)
            .with_context(|| format!("reading device attribute {a:?}"))
    };
    Ok(DeviceInfo {
        name: ctx.name().context("reading the device name")?,
        compute_capability: ctx
            .compute_capability()
            .context("reading the compute capability")?,
        sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as usize,
        persisting_l2_max_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE)?
            as usize,
        access_policy_max_window_bytes: attr(
            Attr::CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE,
        )? as usize,
        total_mem_bytes: ctx.total_mem().context("reading the device memory size")?,
    })
}

/// Loads every kernel; with a timeline, compiled to note their launches into it.
fn load_kernels(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    timeline: Option<&Timeline>,
) -> Result<HashMap<String, CudaFunction>> {
    let compiler = Compiler::new(default_cache_dir())?;
    let compiler = if timeline.is_some() {
        compiler.with_timeline()
    } else {
        compiler
    };
    let mut functions = HashMap::new();
    for file in KERNEL_FILES {
        let ptx = compiler.ptx(file)?;
        let names = entry_points(&ptx);
        let module = ctx.load_module(Ptx::from_src(ptx)).with_context(|| {
            format!("loading the PTX of kernels/{} into the context", file.name)
        })?;
        if let Some(timeline) = timeline {
            set_timeline_sink(&module, stream, timeline)
                .with_context(|| format!("pointing kernels/{} at the timeline", file.name))?;
        }
        for name in names {
            let f = module
                .load_function(&name)
                .with_context(|| format!("loading kernel {name} of kernels/{}", file.name))?;
            // sm_90 runs clusters of more than 8 blocks (up to 16) only for kernels that allow
            // them; the attribute changes nothing for launches without clusters.
            f.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                1,
            )
            .with_context(|| format!("allowing clusters of 16 blocks for kernel {name}"))?;
            functions.insert(name, f);
        }
    }
    Ok(functions)
}

/// Writes where the timeline's notes go into the module's `timeline_sink` (kernels/common.cuh).
fn set_timeline_sink(
    module: &Arc<CudaModule>,
    stream: &Arc<CudaStream>,
    timeline: &Timeline,
) -> Result<()> {
    let sink = timeline.sink(stream);
    let mut global = module.get_global("timeline_sink", stream)?;
    ensure!(
        global.len() == std::mem::size_of_val(&sink),
        "timeline_sink is {} bytes, not the {} the host writes",
        global.len(),
        std::mem::size_of_val(&sink)
    );
    // Safety: the global is three 8-byte words (two addresses and a count), as checked above.
    let mut words = unsafe { global.transmute_mut::<u64>(sink.len()) }
        .context("viewing timeline_sink as words")?;
    stream.memcpy_htod(&sink, &mut words)?;
    Ok(())
}
