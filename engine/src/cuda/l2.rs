//! L2 persistence for the decode graph: the `ENGINE_L2*` arms ([`crate::options::L2Arm`]),
//! the window each captured graph carries (the pool, the slot its round reads, or that
//! slot's recurrent state), the sized persisting reserve, the guard against windows wider
//! than the device allows, and the audit read back from the captured graphs and the device.
//!
//! Around the capture of a decode round:
//!
//! ```ignore
//! let arm = L2Arm::from_env()?;
//! let l2 = L2Session::begin(&gpu, &arm, pool_ptr, &pool_map)?; // takes the reserve
//! let graph = l2.capture(&gpu, live, |gpu| round(gpu))?;     // window on the stream only here
//! let audit = l2.audit(&[(&graph, live)])?;                   // L2Audit::COLUMNS, audit.values()
//! // ... replay the graph; synchronize; then drop the graphs and `l2` (restores the limit)
//! ```
//!
//! The window is set on the stream right before capture and cleared right after, so it is
//! baked into every kernel node of the graph and into no eager launch. The reserve
//! (`cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE)`) is context-wide state, held through
//! [`L2Reserve`]. Every size comes from the device ([`L2Limits::of`]), none is compiled in.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use anyhow::{bail, ensure, Context, Result};
use cudarc::driver::sys::{
    self, CUaccessPolicyWindow, CUaccessProperty, CUgraph, CUgraphNode, CUgraphNodeType,
    CUlaunchAttributeID, CUlaunchAttributeValue, CUlimit,
};
use cudarc::driver::{CudaContext, CudaGraph, CudaSlice, DevicePtr};

use super::{DeviceInfo, Gpu};
use crate::options::{HitRatio, L2Arm, L2Mode, L2Window, Named, ReserveSize};
use crate::state::PoolMap;

/// The device's L2 persistence limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L2Limits {
    /// `persistingL2CacheMaxSize`: the largest persisting reserve.
    pub persisting_max: usize,
    /// `accessPolicyMaxWindowSize`: the widest access-policy window.
    pub max_window: usize,
    /// The step in which the driver sets the reserve. No attribute reports it; on the H200 a
    /// request reads back in steps of L2 / 16 (docs/GPU.md), so that is what it is taken to be.
    pub granularity: usize,
}

impl L2Limits {
    pub fn of(info: &DeviceInfo) -> Self {
        L2Limits {
            persisting_max: info.persisting_l2_max_bytes,
            max_window: info.access_policy_max_window_bytes,
            granularity: (info.l2_bytes / 16).max(1),
        }
    }
}

/// One window as planned: its base as an offset into the buffer it covers, and its width.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Extent {
    pub offset: usize,
    pub bytes: usize,
}

/// What an arm installs for a pool on a device (decided before touching the device).
#[derive(Clone, Debug, PartialEq)]
pub struct L2Plan {
    /// Persisting reserve to take; 0 takes none.
    pub reserve_bytes: usize,
    /// The byte count asked for, when rounding to the granularity changed it.
    pub reserve_asked: Option<usize>,
    /// The window of a graph whose round reads slot 0 and slot 1; 0 bytes set the empty
    /// window (the armed path that windows nothing).
    pub windows: [Extent; 2],
    pub hit_ratio: f32,
    /// The guard's message when it fired (then nothing is installed).
    pub guard: Option<String>,
}

impl L2Plan {
    fn nothing(guard: Option<String>) -> L2Plan {
        L2Plan {
            reserve_bytes: 0,
            reserve_asked: None,
            windows: [Extent::default(); 2],
            hit_ratio: 0.0,
            guard,
        }
    }

    /// The width of the windows (equal for both slots).
    pub fn window_bytes(&self) -> usize {
        self.windows[0].bytes
    }
}

/// Decides the reserve, the windows and the guard for `arm` over the pool `map`.
pub fn plan(arm: &L2Arm, limits: L2Limits, map: &PoolMap) -> Result<L2Plan> {
    if matches!(arm.mode, L2Mode::Off | L2Mode::Null) {
        return Ok(L2Plan::nothing(None));
    }
    let name = arm.mode.name();
    let pool_bytes = map.total_bytes();
    ensure!(
        pool_bytes > 0,
        "ENGINE_L2={name}: the state pool is empty (0 bytes); this model has no GDN state to pin"
    );
    ensure!(
        limits.persisting_max > 0,
        "ENGINE_L2={name}: the device reports persistingL2CacheMaxSize = 0 (no L2 persistence); use ENGINE_L2=off"
    );
    let windows = extents(arm.window, map)?;
    let window_bytes = windows[0].bytes;
    if arm.guard && window_bytes > limits.max_window {
        return Ok(L2Plan::nothing(Some(format!(
            "ENGINE_L2={name}: the window over the {} ({} B) is wider than the device's accessPolicyMaxWindowSize ({} B); \
             installing no window and no persisting reserve (ENGINE_L2_GUARD=off sends the request to the driver)",
            arm.window.name(),
            grouped(window_bytes),
            grouped(limits.max_window)
        ))));
    }
    let (reserve_bytes, reserve_asked) = reserve(arm.reserve, limits, pool_bytes)?;
    if arm.mode == L2Mode::ReserveOnly {
        return Ok(L2Plan {
            reserve_bytes,
            reserve_asked,
            ..L2Plan::nothing(None)
        });
    }
    let hit_ratio = match arm.hit_ratio {
        HitRatio::Clamp => (reserve_bytes as f64 / window_bytes as f64).min(1.0) as f32,
        HitRatio::Fixed(r) => r,
    };
    Ok(L2Plan {
        reserve_bytes,
        reserve_asked,
        windows,
        hit_ratio,
        guard: None,
    })
}

/// The window of a graph reading slot 0 and slot 1; an extent the layout splits is an error
/// that names the layout that keeps it whole.
fn extents(window: L2Window, map: &PoolMap) -> Result<[Extent; 2]> {
    let of = |s| match window {
        L2Window::Pool => Some((0, map.total_bytes())),
        L2Window::Slot => map.slot_extent(s),
        L2Window::Recurrent => map.recurrent_extent(s),
    };
    let one = |s| {
        of(s).map(|(offset, bytes)| Extent { offset, bytes }).with_context(|| {
            let fix = match window {
                L2Window::Recurrent => "by-slot-kind",
                _ => "by-slot or by-slot-kind",
            };
            format!(
                "ENGINE_L2_WINDOW={}: the pool layout {} does not keep slot {s}'s {} in one byte range, \
                 and a window is one range; set ENGINE_POOL_LAYOUT={fix}",
                window.name(),
                map.layout.name(),
                match window {
                    L2Window::Recurrent => "recurrent state",
                    _ => "state",
                }
            )
        })
    };
    Ok([one(0)?, one(1)?])
}

/// The reserve in bytes, and the bytes asked for when rounding changed them. The driver
/// holds the limit in whole granules (a pool of 1.6 MB reads back as one 3.75 MiB granule on
/// the H200), so the plan rounds up too and says what the device will hold.
fn reserve(
    size: ReserveSize,
    limits: L2Limits,
    pool_bytes: usize,
) -> Result<(usize, Option<usize>)> {
    let in_granules = |bytes: usize| {
        bytes
            .div_ceil(limits.granularity)
            .saturating_mul(limits.granularity)
            .min(limits.persisting_max)
    };
    let asked = match size {
        ReserveSize::Max => return Ok((in_granules(limits.persisting_max.min(pool_bytes)), None)),
        ReserveSize::Bytes(b) => b,
    };
    ensure!(
        asked <= limits.persisting_max,
        "ENGINE_L2_RESERVE={asked}: {} B is above the device's persistingL2CacheMaxSize of {} B; \
         ask for at most {} or for max",
        grouped(asked),
        grouped(limits.persisting_max),
        limits.persisting_max
    );
    let rounded = in_granules(asked);
    Ok((rounded, (rounded != asked).then_some(asked)))
}

/// `1234567` as `1,234,567`.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

// ---------------------------------------------------------------------------------------
// The counted reserve

/// Live requests on one device and the limit found before the first of them.
struct Holders {
    original: usize,
    requests: Vec<usize>,
}

impl Holders {
    fn largest(&self) -> Option<usize> {
        self.requests.iter().copied().max()
    }
}

/// Holders per device ordinal (cudarc's contexts are the device's primary context, so the
/// limit is per device). Every limit change happens under this lock.
fn holders() -> MutexGuard<'static, BTreeMap<usize, Holders>> {
    static HOLDERS: OnceLock<Mutex<BTreeMap<usize, Holders>>> = OnceLock::new();
    // A panic elsewhere while holding the lock leaves the map consistent (it is only changed
    // after the driver call succeeded), so a poisoned lock is still usable.
    HOLDERS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The persisting-L2 limit the device's context holds now (`cuCtxGetLimit`).
pub fn persisting_limit(ctx: &CudaContext) -> Result<usize> {
    ctx.bind_to_thread()
        .context("binding the CUDA context to read the persisting L2 limit")?;
    let mut value = 0usize;
    unsafe { sys::cuCtxGetLimit(&mut value, CUlimit::CU_LIMIT_PERSISTING_L2_CACHE_SIZE) }
        .result()
        .context("cuCtxGetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE)")?;
    Ok(value)
}

fn set_persisting_limit(ctx: &CudaContext, bytes: usize) -> Result<()> {
    ctx.bind_to_thread()
        .context("binding the CUDA context to set the persisting L2 limit")?;
    unsafe { sys::cuCtxSetLimit(CUlimit::CU_LIMIT_PERSISTING_L2_CACHE_SIZE, bytes) }
        .result()
        .with_context(|| {
            format!(
                "cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, {} B)",
                grouped(bytes)
            )
        })
}

/// A held request for the device-wide persisting L2 reserve. While any handle on a device
/// lives, the limit is the largest live request; when the last one is dropped, the limit
/// found before the first request is restored and the persisting lines are reset to normal.
/// The handle keeps its context alive, so the restore happens before the context goes.
/// Handles are `Send + Sync`: take, read and drop them from any thread.
pub struct L2Reserve {
    ctx: Arc<CudaContext>,
    bytes: usize,
}

impl L2Reserve {
    /// Requests a reserve of `bytes`. A request the driver refuses (above
    /// `persistingL2CacheMaxSize`) fails, naming the size, and leaves the limit and the other
    /// holders as they were.
    pub fn take(ctx: &Arc<CudaContext>, bytes: usize) -> Result<L2Reserve> {
        let mut all = holders();
        let ordinal = ctx.ordinal();
        let (original, largest) = match all.get(&ordinal) {
            Some(h) => (h.original, h.largest()),
            None => (persisting_limit(ctx)?, None),
        };
        if largest.is_none_or(|l| bytes > l) {
            set_persisting_limit(ctx, bytes).with_context(|| {
                format!(
                    "taking a persisting L2 reserve of {} B on device {ordinal}",
                    grouped(bytes)
                )
            })?;
        }
        all.entry(ordinal)
            .or_insert(Holders {
                original,
                requests: Vec::new(),
            })
            .requests
            .push(bytes);
        Ok(L2Reserve {
            ctx: ctx.clone(),
            bytes,
        })
    }

    /// The bytes this handle requested.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The limit the device holds now (binds the context on the calling thread first).
    pub fn device_limit(&self) -> Result<usize> {
        persisting_limit(&self.ctx)
    }
}

impl Drop for L2Reserve {
    fn drop(&mut self) {
        let mut all = holders();
        let ordinal = self.ctx.ordinal();
        let Some(h) = all.get_mut(&ordinal) else {
            return;
        };
        let before = h.largest();
        if let Some(i) = h.requests.iter().position(|&r| r == self.bytes) {
            h.requests.swap_remove(i);
        }
        let result = match h.largest() {
            Some(l) if Some(l) == before => Ok(()),
            Some(l) => set_persisting_limit(&self.ctx, l),
            None => {
                let original = h.original;
                all.remove(&ordinal);
                set_persisting_limit(&self.ctx, original).and_then(|()| {
                    unsafe { sys::cuCtxResetPersistingL2Cache() }
                        .result()
                        .context("cuCtxResetPersistingL2Cache")
                })
            }
        };
        if let Err(e) = result {
            eprintln!(
                "l2: releasing the persisting L2 reserve of {} B on device {ordinal}: {e:#}",
                grouped(self.bytes)
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// The session around capture

/// An access-policy window as the driver reports it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    pub base: u64,
    pub bytes: usize,
    pub hit_ratio: f32,
    /// hitProp is persisting and missProp normal.
    pub persisting: bool,
}

impl Window {
    fn from_raw(w: &CUaccessPolicyWindow) -> Self {
        Window {
            base: w.base_ptr as u64,
            bytes: w.num_bytes,
            hit_ratio: w.hitRatio,
            persisting: w.hitProp == CUaccessProperty::CU_ACCESS_PROPERTY_PERSISTING
                && w.missProp == CUaccessProperty::CU_ACCESS_PROPERTY_NORMAL,
        }
    }
}

/// The window `gpu.stream` applies to launches now (`cuStreamGetAttribute`); 0 bytes: none.
pub fn stream_window(gpu: &Gpu) -> Result<Window> {
    gpu.ctx
        .bind_to_thread()
        .context("binding the CUDA context to read the stream's window")?;
    let mut value: CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    let id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW;
    unsafe { sys::cuStreamGetAttribute(gpu.stream.cu_stream(), id, &mut value) }
        .result()
        .context("cuStreamGetAttribute(CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW)")?;
    Ok(Window::from_raw(unsafe { &value.accessPolicyWindow }))
}

fn set_stream_window(gpu: &Gpu, base: u64, bytes: usize, hit_ratio: f32) -> Result<()> {
    gpu.ctx
        .bind_to_thread()
        .context("binding the CUDA context to set the stream's window")?;
    let mut value: CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.accessPolicyWindow = CUaccessPolicyWindow {
        base_ptr: base as *mut std::ffi::c_void,
        num_bytes: bytes,
        hitRatio: hit_ratio,
        hitProp: CUaccessProperty::CU_ACCESS_PROPERTY_PERSISTING,
        missProp: CUaccessProperty::CU_ACCESS_PROPERTY_NORMAL,
    };
    let id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW;
    unsafe { sys::cuStreamSetAttribute(gpu.stream.cu_stream(), id, &value) }.result().with_context(|| {
        format!(
            "cuStreamSetAttribute(CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, base {base:#x}, {} B, hitRatio {hit_ratio}); \
             device accessPolicyMaxWindowSize {} B",
            grouped(bytes),
            grouped(gpu.info.access_policy_max_window_bytes)
        )
    })
}

/// Says `message` on stderr the first time `said` is passed, however many sessions a run
/// opens.
fn say_once(said: &AtomicBool, message: &str) {
    if !said.swap(true, Ordering::Relaxed) {
        eprintln!("l2: {message}");
    }
}

static GUARD_SAID: AtomicBool = AtomicBool::new(false);
static ROUNDING_SAID: AtomicBool = AtomicBool::new(false);

/// One arm applied to one state pool: holds the reserve (and the decoy buffer of the
/// structural-zero arm) from [`L2Session::begin`] until dropped. Drop it only after the
/// graphs captured under it have finished running.
pub struct L2Session {
    arm: L2Arm,
    plan: L2Plan,
    /// The buffer the windows cover: the pool, or the decoy of structural-zero.
    window_buffer: u64,
    refusal: OnceLock<String>,
    ctx: Arc<CudaContext>,
    _decoy: Option<CudaSlice<u8>>,
    _reserve: Option<L2Reserve>,
}

impl L2Session {
    /// Plans `arm` for the pool at `pool_ptr` laid out as `map` against the device's limits,
    /// says the guard's message and a rounded reserve once per process, allocates the decoy
    /// of the structural-zero arm and takes the reserve.
    pub fn begin(gpu: &Gpu, arm: &L2Arm, pool_ptr: u64, map: &PoolMap) -> Result<L2Session> {
        let limits = L2Limits::of(&gpu.info);
        let plan = plan(arm, limits, map)?;
        if let Some(message) = &plan.guard {
            say_once(&GUARD_SAID, message);
        }
        if let Some(asked) = plan.reserve_asked {
            say_once(
                &ROUNDING_SAID,
                &format!(
                    "ENGINE_L2_RESERVE={asked}: reserving {} B, rounded up to the device's granularity of {} B (L2 / 16)",
                    grouped(plan.reserve_bytes),
                    grouped(limits.granularity)
                ),
            );
        }
        let pool_bytes = map.total_bytes();
        let decoy = match arm.mode == L2Mode::StructuralZero && plan.window_bytes() > 0 {
            true => Some(gpu.stream.alloc_zeros::<u8>(pool_bytes).with_context(|| {
                format!(
                    "allocating the structural-zero decoy of {} B",
                    grouped(pool_bytes)
                )
            })?),
            false => None,
        };
        let window_buffer = decoy
            .as_ref()
            .map_or(pool_ptr, |d| d.device_ptr(&gpu.stream).0);
        let reserve = match plan.reserve_bytes {
            0 => None,
            bytes => Some(L2Reserve::take(&gpu.ctx, bytes)?),
        };
        Ok(L2Session {
            arm: *arm,
            plan,
            window_buffer,
            refusal: OnceLock::new(),
            ctx: gpu.ctx.clone(),
            _decoy: decoy,
            _reserve: reserve,
        })
    }

    pub fn arm(&self) -> &L2Arm {
        &self.arm
    }

    pub fn plan(&self) -> &L2Plan {
        &self.plan
    }

    /// The address the windows' offsets count from: the pool, or the decoy for
    /// structural-zero.
    pub fn window_buffer(&self) -> u64 {
        self.window_buffer
    }

    /// The window a graph whose round reads slot `live` is planned to carry.
    pub fn window(&self, live: usize) -> Window {
        let extent = self.plan.windows[live];
        Window {
            base: self.window_buffer + extent.offset as u64,
            bytes: extent.bytes,
            hit_ratio: self.plan.hit_ratio,
            persisting: true,
        }
    }

    /// The driver's refusal of an unguarded window (`ENGINE_L2_GUARD=off`), if it refused.
    pub fn window_refusal(&self) -> Option<&str> {
        self.refusal.get().map(String::as_str)
    }

    /// Sets the window of a round reading slot `live` on `gpu.stream`; call right before
    /// beginning capture. `off` does nothing; every other arm makes the same driver call,
    /// `null`, `reserve-only` and a fired guard with an empty window. With the guard off, a
    /// window the driver refuses is said once on stderr and kept in
    /// [`L2Session::window_refusal`], and the capture proceeds without it (the audit then
    /// shows no windowed node).
    pub fn install_on_stream(&self, gpu: &Gpu, live: usize) -> Result<()> {
        if self.arm.mode == L2Mode::Off {
            return Ok(());
        }
        let window = match self.plan.window_bytes() {
            0 => Window {
                base: 0,
                bytes: 0,
                hit_ratio: 0.0,
                persisting: true,
            },
            _ => self.window(live),
        };
        match set_stream_window(gpu, window.base, window.bytes, window.hit_ratio) {
            Err(e) if !self.arm.guard => {
                let message = format!("ENGINE_L2_GUARD=off: the driver refused the window: {e:#}");
                if self.refusal.set(message.clone()).is_ok() {
                    eprintln!("l2: {message}");
                }
                Ok(())
            }
            other => other,
        }
    }

    /// Clears the window from `gpu.stream` and checks that it is gone; call right after
    /// ending capture, so that no eager launch runs under the window.
    pub fn remove_from_stream(&self, gpu: &Gpu) -> Result<()> {
        if self.arm.mode == L2Mode::Off {
            return Ok(());
        }
        set_stream_window(gpu, 0, 0, 0.0)?;
        let left = stream_window(gpu)?;
        ensure!(
            left.bytes == 0,
            "the stream still carries a {} B window after clearing it",
            grouped(left.bytes)
        );
        Ok(())
    }

    /// [`Gpu::capture`] of a round reading slot `live` between
    /// [`L2Session::install_on_stream`] and [`L2Session::remove_from_stream`]; the window is
    /// removed even when the capture fails.
    pub fn capture(
        &self,
        gpu: &Gpu,
        live: usize,
        round: impl FnOnce(&Gpu) -> Result<()>,
    ) -> Result<CudaGraph> {
        self.install_on_stream(gpu, live)?;
        let graph = gpu.capture(round);
        let removed = self.remove_from_stream(gpu);
        let graph = graph?;
        removed?;
        Ok(graph)
    }

    /// Reads back the window of every kernel node of `graphs`, each with the slot its round
    /// reads, and the persisting limit off the device. A graph whose windowed nodes carry
    /// another window than the plan gives its slot is an error.
    pub fn audit(&self, graphs: &[(&CudaGraph, usize)]) -> Result<L2Audit> {
        let mut audit = L2Audit {
            arm: self.arm.mode,
            extent: self.arm.window,
            windows: Vec::new(),
            hit_ratio: 0.0,
            reserve_bytes: persisting_limit(&self.ctx)?,
            kernel_nodes: 0,
            windowed_nodes: 0,
            guard_fired: self.plan.guard.is_some(),
        };
        for (g, &(graph, live)) in graphs.iter().enumerate() {
            let nodes = graph_windows(&self.ctx, &[graph]).with_context(|| format!("graph {g}"))?;
            audit.kernel_nodes += nodes.kernel_nodes;
            audit.windowed_nodes += nodes.windowed_nodes;
            let Some(window) = nodes.window else {
                continue;
            };
            let want = self.window(live);
            ensure!(
                window == want,
                "graph {g} (a round reading slot {live}): its kernel nodes carry {window:?}, the plan is {want:?}"
            );
            audit.hit_ratio = window.hit_ratio;
            let extent = self.plan.windows[live];
            if !audit.windows.contains(&extent) {
                audit.windows.push(extent);
            }
        }
        audit.windows.sort_by_key(|e| e.offset);
        Ok(audit)
    }
}

/// Kernel nodes of a set of graphs and the one window their windowed nodes share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GraphWindows {
    pub kernel_nodes: usize,
    pub windowed_nodes: usize,
    pub window: Option<Window>,
}

/// Reads the access-policy window of every kernel node of `graphs` (captured in `ctx`; stream capture gives
/// flat graphs: no child-graph nodes to descend into). Fails when windowed nodes disagree.
pub fn graph_windows(ctx: &CudaContext, graphs: &[&CudaGraph]) -> Result<GraphWindows> {
    ctx.bind_to_thread()
        .context("binding the CUDA context to read the graphs")?;
    let mut out = GraphWindows {
        kernel_nodes: 0,
        windowed_nodes: 0,
        window: None,
    };
    for (g, graph) in graphs.iter().enumerate() {
        for node in graph_nodes(graph.cu_graph()).with_context(|| format!("graph {g}"))? {
            let Some(window) = kernel_node_window(node).with_context(|| format!("graph {g}"))?
            else {
                continue;
            };
            out.kernel_nodes += 1;
            if window.bytes == 0 {
                continue;
            }
            out.windowed_nodes += 1;
            match out.window {
                None => out.window = Some(window),
                Some(first) if first == window => {}
                Some(first) => bail!(
                    "graph {g}: kernel nodes carry different windows: {first:?} and {window:?}"
                ),
            }
        }
    }
    Ok(out)
}

fn graph_nodes(graph: CUgraph) -> Result<Vec<CUgraphNode>> {
    let mut count = 0usize;
    unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut count) }
        .result()
        .context("cuGraphGetNodes (count)")?;
    let mut nodes = vec![std::ptr::null_mut(); count];
    unsafe { sys::cuGraphGetNodes(graph, nodes.as_mut_ptr(), &mut count) }
        .result()
        .context("cuGraphGetNodes")?;
    nodes.truncate(count);
    Ok(nodes)
}

/// The window of a kernel node, or None for a node of another type.
fn kernel_node_window(node: CUgraphNode) -> Result<Option<Window>> {
    // Read the type as its raw value: a type this binding does not know must not become an
    // invalid enum.
    let mut raw_type = u32::MAX;
    unsafe { sys::cuGraphNodeGetType(node, (&mut raw_type as *mut u32).cast::<CUgraphNodeType>()) }
        .result()
        .context("cuGraphNodeGetType")?;
    if raw_type != CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL as u32 {
        return Ok(None);
    }
    let mut value: CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    let id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW;
    unsafe { sys::cuGraphKernelNodeGetAttribute(node, id, &mut value) }
        .result()
        .context("cuGraphKernelNodeGetAttribute(CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW)")?;
    Ok(Some(Window::from_raw(unsafe { &value.accessPolicyWindow })))
}

// ---------------------------------------------------------------------------------------
// The audit columns

/// What the decode graphs and the device hold under an arm, read back, not requested.
#[derive(Clone, Debug, PartialEq)]
pub struct L2Audit {
    pub arm: L2Mode,
    /// What the windows were asked to cover (`ENGINE_L2_WINDOW`).
    pub extent: L2Window,
    /// The distinct windows the windowed nodes carry, as offsets into the buffer they cover
    /// (the pool, or the decoy), by offset; empty when no node is windowed.
    pub windows: Vec<Extent>,
    /// The windowed nodes' hit ratio (0 when none is windowed).
    pub hit_ratio: f32,
    /// The persisting limit the device holds (its own default under `off` and `null`).
    pub reserve_bytes: usize,
    pub kernel_nodes: usize,
    pub windowed_nodes: usize,
    pub guard_fired: bool,
}

impl L2Audit {
    /// The reading where no GPU ran: no graph, no window, no reserve.
    pub fn no_device() -> L2Audit {
        L2Audit {
            arm: L2Mode::Off,
            extent: L2Window::Pool,
            windows: Vec::new(),
            hit_ratio: 0.0,
            reserve_bytes: 0,
            kernel_nodes: 0,
            windowed_nodes: 0,
            guard_fired: false,
        }
    }

    /// The CSV columns, in the order of [`L2Audit::values`].
    pub const COLUMNS: [&'static str; 9] = [
        "l2_arm",
        "l2_window",
        "l2_window_base_offset",
        "l2_window_bytes",
        "l2_reserve_bytes",
        "l2_hit_ratio",
        "graph_kernel_nodes",
        "graph_windowed_nodes",
        "l2_guard_fired",
    ];

    /// The row's values: the windows' offsets and widths joined by `;` (one per distinct
    /// window, `0` when no node is windowed), the guard 0/1.
    pub fn values(&self) -> [String; 9] {
        let joined = |part: fn(&Extent) -> usize| match self.windows.is_empty() {
            true => "0".to_string(),
            false => {
                let parts: Vec<String> = self.windows.iter().map(|e| part(e).to_string()).collect();
                parts.join(";")
            }
        };
        [
            self.arm.name(),
            self.extent.name(),
            joined(|e| e.offset),
            joined(|e| e.bytes),
            self.reserve_bytes.to_string(),
            self.hit_ratio.to_string(),
            self.kernel_nodes.to_string(),
            self.windowed_nodes.to_string(),
            u8::from(self.guard_fired).to_string(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ModelConfig;
    use crate::options::PoolLayout;

    /// The H200's limits (GPU.md); the arithmetic below does not depend on them being real.
    const H200: L2Limits = L2Limits {
        persisting_max: 39_321_600,
        max_window: 134_217_728,
        granularity: 3_932_160,
    };
    const POOL_35B: usize = 128_778_240;
    const HALF_35B: usize = 64_389_120;
    const REC_35B: usize = 30 * 2_097_152;
    const CONV_35B: usize = 30 * 49_152;

    fn pool(preset: &str, layout: PoolLayout) -> PoolMap {
        PoolMap::new(&ModelConfig::preset(preset).unwrap(), layout)
    }

    fn a35b(layout: PoolLayout) -> PoolMap {
        pool("qwen3.6-35b-a3b", layout)
    }

    fn a27b() -> PoolMap {
        pool("dense-27b", PoolLayout::ByLayer)
    }

    fn arm(mode: L2Mode, hit_ratio: HitRatio, guard: bool) -> L2Arm {
        L2Arm {
            mode,
            hit_ratio,
            guard,
            ..L2Arm::default()
        }
    }

    fn window(mode: L2Mode, window: L2Window, reserve: ReserveSize) -> L2Arm {
        L2Arm {
            mode,
            window,
            reserve,
            ..L2Arm::default()
        }
    }

    fn extent(offset: usize, bytes: usize) -> Extent {
        Extent { offset, bytes }
    }

    #[test]
    fn clamp_gives_reserve_over_window() {
        let map = a35b(PoolLayout::ByLayer);
        let p = plan(&arm(L2Mode::Window, HitRatio::Clamp, true), H200, &map).unwrap();
        assert_eq!(
            (p.reserve_bytes, p.windows, p.guard.as_deref()),
            (39_321_600, [extent(0, POOL_35B); 2], None)
        );
        assert!((p.hit_ratio - 0.305_343_5).abs() < 1e-6, "{}", p.hit_ratio);
        // A window narrower than the reserve is hit fully, never above 1.
        let small = window(
            L2Mode::Window,
            L2Window::Recurrent,
            ReserveSize::Bytes(39_321_600),
        );
        let mut tiny = map;
        tiny.layout = PoolLayout::BySlotKind;
        tiny.rec_bytes = 1_000;
        let p = plan(&small, H200, &tiny).unwrap();
        assert_eq!((p.window_bytes(), p.hit_ratio), (30_000, 1.0));
    }

    #[test]
    fn each_extent_gives_each_slot_its_own_range() {
        let kind = a35b(PoolLayout::BySlotKind);
        let by_slot = a35b(PoolLayout::BySlot);
        for (w, map, want) in [
            (L2Window::Pool, &kind, [extent(0, POOL_35B); 2]),
            (
                L2Window::Slot,
                &kind,
                [extent(0, HALF_35B), extent(HALF_35B, HALF_35B)],
            ),
            (
                L2Window::Slot,
                &by_slot,
                [extent(0, HALF_35B), extent(HALF_35B, HALF_35B)],
            ),
            (
                L2Window::Recurrent,
                &kind,
                [
                    extent(CONV_35B, REC_35B),
                    extent(HALF_35B + CONV_35B, REC_35B),
                ],
            ),
        ] {
            let a = window(L2Mode::Window, w, ReserveSize::Max);
            let p = plan(&a, H200, map).unwrap();
            assert_eq!(p.windows, want, "{w:?} {:?}", map.layout);
            let ratio = (39_321_600f64 / want[0].bytes as f64) as f32;
            assert_eq!(p.hit_ratio, ratio, "{w:?}");
            // The structural zero has the same geometry; only its buffer differs.
            let z = L2Arm {
                mode: L2Mode::StructuralZero,
                ..a
            };
            assert_eq!(plan(&z, H200, map).unwrap(), p);
        }
    }

    #[test]
    fn an_extent_the_layout_splits_names_the_layout_that_keeps_it_whole() {
        for (w, layout, fix) in [
            (
                L2Window::Slot,
                PoolLayout::ByLayer,
                "=by-slot or by-slot-kind",
            ),
            (L2Window::Recurrent, PoolLayout::ByLayer, "=by-slot-kind"),
            (L2Window::Recurrent, PoolLayout::BySlot, "=by-slot-kind"),
        ] {
            let a = window(L2Mode::Window, w, ReserveSize::Max);
            let e = plan(&a, H200, &a35b(layout)).unwrap_err().to_string();
            assert!(
                e.contains(&format!("ENGINE_L2_WINDOW={}", w.name()))
                    && e.contains(&layout.name())
                    && e.contains(&format!("ENGINE_POOL_LAYOUT{fix}")),
                "{e}"
            );
        }
        // Off and null never look at the extent.
        let off = window(L2Mode::Null, L2Window::Recurrent, ReserveSize::Max);
        assert!(plan(&off, H200, &a35b(PoolLayout::ByLayer)).is_ok());
    }

    #[test]
    fn a_reserve_is_rounded_up_to_the_granularity_and_capped_at_the_maximum() {
        let map = a35b(PoolLayout::ByLayer);
        let g = H200.granularity;
        for (asked, want, said) in [
            (g, g, None),
            (1, g, Some(1)),
            (g + 1, 2 * g, Some(g + 1)),
            (15_000_000, 4 * g, Some(15_000_000)),
            (10 * g, 10 * g, None),
        ] {
            for mode in [L2Mode::Window, L2Mode::ReserveOnly, L2Mode::StructuralZero] {
                let a = window(mode, L2Window::Pool, ReserveSize::Bytes(asked));
                let p = plan(&a, H200, &map).unwrap();
                assert_eq!((p.reserve_bytes, p.reserve_asked), (want, said), "{asked}");
            }
        }
        let a = window(L2Mode::Window, L2Window::Pool, ReserveSize::Bytes(g));
        let p = plan(&a, H200, &map).unwrap();
        assert_eq!(p.hit_ratio, (g as f64 / POOL_35B as f64) as f32);
        // A maximum that is not a multiple of the granularity is the largest reserve.
        let odd = L2Limits {
            persisting_max: 10 * g - 5,
            ..H200
        };
        let a = window(
            L2Mode::Window,
            L2Window::Pool,
            ReserveSize::Bytes(9 * g + 1),
        );
        assert_eq!(plan(&a, odd, &map).unwrap().reserve_bytes, 10 * g - 5);
    }

    #[test]
    fn max_over_a_pool_smaller_than_the_maximum_takes_whole_granules() {
        let mut small = a35b(PoolLayout::ByLayer);
        small.layers = 1; // 4,292,608 B: one granule and a bit
        let p = plan(&arm(L2Mode::Window, HitRatio::Clamp, true), H200, &small).unwrap();
        assert_eq!(
            (p.reserve_bytes, p.reserve_asked),
            (2 * H200.granularity, None)
        );
        assert_eq!(p.hit_ratio, 1.0);
    }

    #[test]
    fn a_reserve_above_the_maximum_is_an_error_naming_both() {
        let a = window(
            L2Mode::Window,
            L2Window::Pool,
            ReserveSize::Bytes(39_321_601),
        );
        let e = plan(&a, H200, &a35b(PoolLayout::ByLayer))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ENGINE_L2_RESERVE=39321601")
                && e.contains("39,321,601 B")
                && e.contains("persistingL2CacheMaxSize of 39,321,600 B")
                && e.contains("or for max"),
            "{e}"
        );
    }

    #[test]
    fn controls_share_the_window_geometry_and_off_and_null_install_nothing() {
        let map = a35b(PoolLayout::ByLayer);
        let w = plan(
            &arm(L2Mode::Window, HitRatio::Fixed(0.75), true),
            H200,
            &map,
        )
        .unwrap();
        assert_eq!(w.hit_ratio, 0.75);
        let r = plan(&arm(L2Mode::ReserveOnly, HitRatio::Clamp, true), H200, &map).unwrap();
        assert_eq!((r.reserve_bytes, r.window_bytes()), (39_321_600, 0));
        for mode in [L2Mode::Off, L2Mode::Null] {
            let n = plan(&arm(mode, HitRatio::Clamp, true), H200, &a27b()).unwrap();
            assert_eq!(n, L2Plan::nothing(None), "{mode:?}");
        }
    }

    #[test]
    fn guard_fires_only_above_the_max_window_and_names_both_sizes() {
        let wide = a27b();
        assert_eq!(wide.total_bytes(), 307_888_128);
        for mode in [L2Mode::Window, L2Mode::ReserveOnly, L2Mode::StructuralZero] {
            let p = plan(&arm(mode, HitRatio::Clamp, true), H200, &wide).unwrap();
            assert_eq!((p.reserve_bytes, p.window_bytes()), (0, 0), "{mode:?}");
            let m = p.guard.expect("guard fired");
            assert!(
                m.contains("307,888,128 B")
                    && m.contains("134,217,728 B")
                    && m.contains("ENGINE_L2_GUARD=off"),
                "{m}"
            );
        }
        let fits = L2Limits {
            max_window: POOL_35B,
            ..H200
        };
        let map = a35b(PoolLayout::ByLayer);
        let edge = plan(&arm(L2Mode::Window, HitRatio::Clamp, true), fits, &map).unwrap();
        assert_eq!((edge.window_bytes(), edge.guard), (POOL_35B, None));
        let narrower = L2Limits {
            max_window: POOL_35B - 1,
            ..H200
        };
        let p = plan(&arm(L2Mode::Window, HitRatio::Clamp, true), narrower, &map).unwrap();
        assert!(p.guard.is_some());
        // The guard judges the window, not the pool: one slot fits where the pool does not.
        let slot = window(L2Mode::Window, L2Window::Slot, ReserveSize::Max);
        let p = plan(&slot, narrower, &a35b(PoolLayout::BySlot)).unwrap();
        assert_eq!((p.window_bytes(), p.guard), (HALF_35B, None));
    }

    #[test]
    fn unguarded_plan_sends_the_wide_window() {
        let p = plan(&arm(L2Mode::Window, HitRatio::Clamp, false), H200, &a27b()).unwrap();
        assert_eq!(
            (p.reserve_bytes, p.window_bytes(), p.guard),
            (39_321_600, 307_888_128, None)
        );
        assert_eq!(p.hit_ratio, (39_321_600f64 / 307_888_128f64) as f32);
    }

    #[test]
    fn plan_rejects_an_empty_pool_and_a_device_without_persistence() {
        let mut empty = a35b(PoolLayout::ByLayer);
        empty.layers = 0;
        let e = plan(&arm(L2Mode::Window, HitRatio::Clamp, true), H200, &empty)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ENGINE_L2=window") && e.contains("0 bytes"),
            "{e}"
        );
        let none = L2Limits {
            persisting_max: 0,
            max_window: 0,
            granularity: 1,
        };
        let e = plan(
            &arm(L2Mode::ReserveOnly, HitRatio::Clamp, true),
            none,
            &a35b(PoolLayout::ByLayer),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("persistingL2CacheMaxSize = 0") && e.contains("ENGINE_L2=off"),
            "{e}"
        );
    }

    #[test]
    fn audit_row_matches_its_columns() {
        let audit = L2Audit {
            arm: L2Mode::Window,
            extent: L2Window::Slot,
            windows: vec![extent(0, HALF_35B), extent(HALF_35B, HALF_35B)],
            hit_ratio: 0.5,
            reserve_bytes: 39_321_600,
            kernel_nodes: 61,
            windowed_nodes: 61,
            guard_fired: false,
        };
        assert_eq!(
            audit.values(),
            [
                "window",
                "slot",
                "0;64389120",
                "64389120;64389120",
                "39321600",
                "0.5",
                "61",
                "61",
                "0"
            ]
        );
        let off = L2Audit {
            arm: L2Mode::Off,
            windows: vec![],
            hit_ratio: 0.0,
            guard_fired: true,
            ..audit
        };
        assert_eq!(off.values()[2..6], ["0", "0", "39321600", "0"]);
        assert_eq!(off.values()[8], "1");
        assert_eq!(L2Audit::COLUMNS.len(), off.values().len());
    }

    #[test]
    fn sizes_are_grouped_by_thousands() {
        assert_eq!(
            [
                grouped(0),
                grouped(999),
                grouped(1000),
                grouped(307_888_128)
            ],
            ["0", "999", "1,000", "307,888,128"]
        );
    }
}
