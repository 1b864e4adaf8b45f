//! L2 persistence for the decode graph: the `ENGINE_L2` arms ([`crate::options::L2Arm`]), the guard against pools wider
//! than one access-policy window, the counted persisting-L2 reserve, and the audit read back
//! from the captured graphs and the device.
//!
//! Around the capture of a decode round:
//!
//! ```ignore
//! let arm = L2Arm::from_env()?;
//! let l2 = L2Session::begin(&gpu, &arm, pool_ptr, pool_bytes)?; // takes the reserve
//! let graph = l2.capture(&gpu, |gpu| round(gpu))?;             // window on the stream only here
//! let audit = l2.audit(&[graph.cu_graph()])?;                  // L2Audit::COLUMNS, audit.values()
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
use crate::options::{HitRatio, L2Arm, L2Mode, Named};

/// The device's L2 persistence limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L2Limits {
    /// `persistingL2CacheMaxSize`: the largest persisting reserve.
    pub persisting_max: usize,
    /// `accessPolicyMaxWindowSize`: the widest access-policy window.
    pub max_window: usize,
}

impl L2Limits {
    pub fn of(info: &DeviceInfo) -> Self {
        L2Limits {
            persisting_max: info.persisting_l2_max_bytes,
            max_window: info.access_policy_max_window_bytes,
        }
    }
}

/// What an arm installs for a pool on a device (decided before touching the device).
#[derive(Clone, Debug, PartialEq)]
pub struct L2Plan {
    /// Persisting reserve to take; 0 takes none.
    pub reserve_bytes: usize,
    /// Window width; 0 sets the empty window (the armed path that windows nothing).
    pub window_bytes: usize,
    pub hit_ratio: f32,
    /// The guard's message when it fired (then nothing is installed).
    pub guard: Option<String>,
}

/// Decides the reserve, the window and the guard for `arm` over a pool of `pool_bytes`.
pub fn plan(arm: &L2Arm, limits: L2Limits, pool_bytes: usize) -> Result<L2Plan> {
    let nothing = |guard| L2Plan {
        reserve_bytes: 0,
        window_bytes: 0,
        hit_ratio: 0.0,
        guard,
    };
    if matches!(arm.mode, L2Mode::Off | L2Mode::Null) {
        return Ok(nothing(None));
    }
    let name = arm.mode.name();
    ensure!(
        pool_bytes > 0,
        "ENGINE_L2={name}: the state pool is empty (0 bytes); this model has no GDN state to pin"
    );
    ensure!(
        limits.persisting_max > 0,
        "ENGINE_L2={name}: the device reports persistingL2CacheMaxSize = 0 (no L2 persistence); use ENGINE_L2=off"
    );
    if arm.guard && pool_bytes > limits.max_window {
        return Ok(nothing(Some(format!(
            "ENGINE_L2={name}: the state pool ({} B) is wider than the device's accessPolicyMaxWindowSize ({} B); \
             installing no window and no persisting reserve (ENGINE_L2_GUARD=off sends the request to the driver)",
            grouped(pool_bytes),
            grouped(limits.max_window)
        ))));
    }
    let reserve_bytes = limits.persisting_max.min(pool_bytes);
    if arm.mode == L2Mode::ReserveOnly {
        return Ok(L2Plan {
            reserve_bytes,
            window_bytes: 0,
            hit_ratio: 0.0,
            guard: None,
        });
    }
    let hit_ratio = match arm.hit_ratio {
        HitRatio::Clamp => (reserve_bytes as f64 / pool_bytes as f64) as f32,
        HitRatio::Fixed(r) => r,
    };
    Ok(L2Plan {
        reserve_bytes,
        window_bytes: pool_bytes,
        hit_ratio,
        guard: None,
    })
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

/// The guard speaks once per process, however many sessions a run opens.
fn say_guard_once(message: &str) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        eprintln!("l2 guard: {message}");
    }
}

/// One arm applied to one state pool: holds the reserve (and the decoy buffer of the
/// structural-zero arm) from [`L2Session::begin`] until dropped. Drop it only after the
/// graphs captured under it have finished running.
pub struct L2Session {
    arm: L2Arm,
    plan: L2Plan,
    window_base: u64,
    refusal: OnceLock<String>,
    ctx: Arc<CudaContext>,
    _decoy: Option<CudaSlice<u8>>,
    _reserve: Option<L2Reserve>,
}

impl L2Session {
    /// Plans `arm` for the pool at `pool_ptr` of `pool_bytes` against the device's limits,
    /// says the guard's message once per process when it fires, allocates the decoy of the
    /// structural-zero arm and takes the reserve.
    pub fn begin(gpu: &Gpu, arm: &L2Arm, pool_ptr: u64, pool_bytes: usize) -> Result<L2Session> {
        let plan = plan(arm, L2Limits::of(&gpu.info), pool_bytes)?;
        if let Some(message) = &plan.guard {
            say_guard_once(message);
        }
        let decoy = match arm.mode == L2Mode::StructuralZero && plan.window_bytes > 0 {
            true => Some(gpu.stream.alloc_zeros::<u8>(pool_bytes).with_context(|| {
                format!(
                    "allocating the structural-zero decoy of {} B",
                    grouped(pool_bytes)
                )
            })?),
            false => None,
        };
        let window_base = decoy
            .as_ref()
            .map_or(pool_ptr, |d| d.device_ptr(&gpu.stream).0);
        let reserve = match plan.reserve_bytes {
            0 => None,
            bytes => Some(L2Reserve::take(&gpu.ctx, bytes)?),
        };
        Ok(L2Session {
            arm: *arm,
            plan,
            window_base,
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

    /// The address the window covers: the pool, or the decoy for structural-zero.
    pub fn window_base(&self) -> u64 {
        self.window_base
    }

    /// The driver's refusal of an unguarded window (`ENGINE_L2_GUARD=off`), if it refused.
    pub fn window_refusal(&self) -> Option<&str> {
        self.refusal.get().map(String::as_str)
    }

    /// Sets the planned window on `gpu.stream`; call right before beginning capture. `off`
    /// does nothing; every other arm makes the same driver call, `null`, `reserve-only` and
    /// a fired guard with an empty window. With the guard off, a window the driver refuses
    /// is said once on stderr and kept in [`L2Session::window_refusal`], and the capture
    /// proceeds without it (the audit then shows no windowed node).
    pub fn install_on_stream(&self, gpu: &Gpu) -> Result<()> {
        if self.arm.mode == L2Mode::Off {
            return Ok(());
        }
        let set = set_stream_window(
            gpu,
            self.window_base,
            self.plan.window_bytes,
            self.plan.hit_ratio,
        );
        match set {
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

    /// [`Gpu::capture`] between [`L2Session::install_on_stream`] and
    /// [`L2Session::remove_from_stream`]; the window is removed even when the capture fails.
    pub fn capture(&self, gpu: &Gpu, round: impl FnOnce(&Gpu) -> Result<()>) -> Result<CudaGraph> {
        self.install_on_stream(gpu)?;
        let graph = gpu.capture(round);
        let removed = self.remove_from_stream(gpu);
        let graph = graph?;
        removed?;
        Ok(graph)
    }

    /// Counts the kernel nodes of `graphs` and those carrying a window, reading each node's
    /// attribute back, and reads the persisting limit off the device.
    pub fn audit(&self, graphs: &[&CudaGraph]) -> Result<L2Audit> {
        let nodes = graph_windows(&self.ctx, graphs)?;
        Ok(L2Audit {
            arm: self.arm.mode,
            window: nodes.window,
            reserve_bytes: persisting_limit(&self.ctx)?,
            kernel_nodes: nodes.kernel_nodes,
            windowed_nodes: nodes.windowed_nodes,
            guard_fired: self.plan.guard.is_some(),
        })
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
    /// The window the windowed nodes share (None when no node is windowed).
    pub window: Option<Window>,
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
            window: None,
            reserve_bytes: 0,
            kernel_nodes: 0,
            windowed_nodes: 0,
            guard_fired: false,
        }
    }

    /// The CSV columns, in the order of [`L2Audit::values`].
    pub const COLUMNS: [&'static str; 7] = [
        "l2_arm",
        "l2_window_bytes",
        "l2_reserve_bytes",
        "l2_hit_ratio",
        "graph_kernel_nodes",
        "graph_windowed_nodes",
        "l2_guard_fired",
    ];

    /// The row's values: window bytes and hit ratio 0 when no node is windowed, the guard 0/1.
    pub fn values(&self) -> [String; 7] {
        let (bytes, ratio) = self.window.map_or((0, 0.0), |w| (w.bytes, w.hit_ratio));
        [
            self.arm.name(),
            bytes.to_string(),
            self.reserve_bytes.to_string(),
            ratio.to_string(),
            self.kernel_nodes.to_string(),
            self.windowed_nodes.to_string(),
            u8::from(self.guard_fired).to_string(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The H200's limits (GPU.md); the arithmetic below does not depend on them being real.
    const H200: L2Limits = L2Limits {
        persisting_max: 39_321_600,
        max_window: 134_217_728,
    };
    const POOL_35B: usize = 128_778_240;
    const POOL_27B: usize = 307_888_128;

    fn arm(mode: L2Mode, hit_ratio: HitRatio, guard: bool) -> L2Arm {
        L2Arm {
            mode,
            hit_ratio,
            guard,
        }
    }

    #[test]
    fn clamp_gives_reserve_over_pool() {
        let p = plan(&arm(L2Mode::Window, HitRatio::Clamp, true), H200, POOL_35B).unwrap();
        assert_eq!(
            (p.reserve_bytes, p.window_bytes, p.guard.as_deref()),
            (39_321_600, POOL_35B, None)
        );
        assert_eq!(p.hit_ratio, (39_321_600f64 / POOL_35B as f64) as f32);
        assert!((p.hit_ratio - 0.305_343_5).abs() < 1e-6, "{}", p.hit_ratio);
        // A pool smaller than the largest reserve is reserved whole and hit fully.
        let p = plan(
            &arm(L2Mode::Window, HitRatio::Clamp, true),
            H200,
            10_000_000,
        )
        .unwrap();
        assert_eq!(
            (p.reserve_bytes, p.window_bytes, p.hit_ratio),
            (10_000_000, 10_000_000, 1.0)
        );
    }

    #[test]
    fn fixed_ratio_is_kept_and_controls_share_the_window_geometry() {
        let w = plan(
            &arm(L2Mode::Window, HitRatio::Fixed(0.75), true),
            H200,
            POOL_35B,
        )
        .unwrap();
        assert_eq!(w.hit_ratio, 0.75);
        let z = plan(
            &arm(L2Mode::StructuralZero, HitRatio::Fixed(0.75), true),
            H200,
            POOL_35B,
        )
        .unwrap();
        assert_eq!(z, w);
        let r = plan(
            &arm(L2Mode::ReserveOnly, HitRatio::Clamp, true),
            H200,
            POOL_35B,
        )
        .unwrap();
        assert_eq!((r.reserve_bytes, r.window_bytes), (39_321_600, 0));
        for mode in [L2Mode::Off, L2Mode::Null] {
            let n = plan(&arm(mode, HitRatio::Clamp, true), H200, POOL_27B).unwrap();
            assert_eq!(
                n,
                L2Plan {
                    reserve_bytes: 0,
                    window_bytes: 0,
                    hit_ratio: 0.0,
                    guard: None
                },
                "{mode:?}"
            );
        }
    }

    #[test]
    fn guard_fires_only_above_the_max_window_and_names_both_sizes() {
        for mode in [L2Mode::Window, L2Mode::ReserveOnly, L2Mode::StructuralZero] {
            let p = plan(&arm(mode, HitRatio::Clamp, true), H200, POOL_27B).unwrap();
            assert_eq!((p.reserve_bytes, p.window_bytes), (0, 0), "{mode:?}");
            let m = p.guard.expect("guard fired");
            assert!(
                m.contains("307,888,128 B")
                    && m.contains("134,217,728 B")
                    && m.contains("ENGINE_L2_GUARD=off"),
                "{m}"
            );
        }
        let edge = plan(
            &arm(L2Mode::Window, HitRatio::Clamp, true),
            H200,
            H200.max_window,
        )
        .unwrap();
        assert_eq!((edge.window_bytes, edge.guard), (H200.max_window, None));
        let wider = plan(
            &arm(L2Mode::Window, HitRatio::Clamp, true),
            H200,
            H200.max_window + 1,
        )
        .unwrap();
        assert!(wider.guard.is_some());
    }

    #[test]
    fn unguarded_plan_sends_the_wide_window() {
        let p = plan(&arm(L2Mode::Window, HitRatio::Clamp, false), H200, POOL_27B).unwrap();
        assert_eq!(
            (p.reserve_bytes, p.window_bytes, p.guard),
            (39_321_600, POOL_27B, None)
        );
        assert_eq!(p.hit_ratio, (39_321_600f64 / POOL_27B as f64) as f32);
    }

    #[test]
    fn plan_rejects_an_empty_pool_and_a_device_without_persistence() {
        let e = plan(&arm(L2Mode::Window, HitRatio::Clamp, true), H200, 0)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ENGINE_L2=window") && e.contains("0 bytes"),
            "{e}"
        );
        let none = L2Limits {
            persisting_max: 0,
            max_window: 0,
        };
        let e = plan(
            &arm(L2Mode::ReserveOnly, HitRatio::Clamp, true),
            none,
            POOL_35B,
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
            window: Some(Window {
                base: 0x1000,
                bytes: POOL_35B,
                hit_ratio: 0.5,
                persisting: true,
            }),
            reserve_bytes: 39_321_600,
            kernel_nodes: 61,
            windowed_nodes: 61,
            guard_fired: false,
        };
        assert_eq!(
            audit.values(),
            ["window", "128778240", "39321600", "0.5", "61", "61", "0"]
        );
        let off = L2Audit {
            arm: L2Mode::Off,
            window: None,
            guard_fired: true,
            ..audit
        };
        assert_eq!(off.values()[1..4], ["0", "39321600", "0"]);
        assert_eq!(off.values()[6], "1");
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
