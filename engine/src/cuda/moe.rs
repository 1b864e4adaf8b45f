//! Sparse MoE with a sigmoid-gated shared expert (kernels/moe.cu): three launches per decode
//! call (router with routing, gate‖up, down), or, after an output projection that computes
//! the router's logits (`moe_out_logits`), routing, gate‖up and down; none waits on the host.

use anyhow::{ensure, Context, Result};
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig};
use half::bf16;

use super::args::{dim, input, output, positions, MAX_T};
use super::gemv::{FoldedNorm, GEMV_ROWS};
use super::Gpu;

/// Most experts per token the routing kernel selects.
const MAX_TOP_K: usize = 16;
/// Most experts the routing kernel holds in one warp's registers.
const MAX_EXPERTS: usize = 512;
/// The router launch: one cluster of blocks of a warp per row (kernels/moe.cu
/// `ROUTER_BLOCKS`, `ROUTER_WARPS`); the rows past its warps take a second trip, up to
/// [`MAX_EXPERTS`] + 1.
const ROUTER_BLOCKS: u32 = 16;
const ROUTER_WARPS: u32 = 17;
/// Most warps per block of `moe_gate_up` and `moe_down` (kernels/moe.cu `MOE_WARPS`, their
/// launch bound).
const MOE_WARPS: usize = 4;
/// Rows of the router through the output projection a thread makes (kernels/moe.cu
/// `THROUGH_ROWS`).
const THROUGH_ROWS: usize = 8;
/// Warps of the block that routes from an output projection's logits (kernels/moe.cu
/// `ROUTE_WARPS`): one a position.
const ROUTE_WARPS: u32 = 8;
/// Largest hidden size that block takes: its threads hold a row in registers, up to
/// `ROUTE_PER_THREAD` values each (kernels/moe.cu).
const ROUTE_PER_THREAD: usize = 16;
const ROUTE_HIDDEN: usize = ROUTE_WARPS as usize * 32 * ROUTE_PER_THREAD;

/// Whether a decode MoE of shape `s` can take its router's logits from the output projection
/// before it ([`Gpu::out_moe`]).
pub fn routes_after_projection(s: MoeShape) -> bool {
    s.hidden <= ROUTE_HIDDEN
}
/// Activation rows per warp of `moe_gate_up` (kernels/moe.cu `GATE_UP_ROWS`).
const GATE_UP_ROWS: usize = 2;
/// Warps per block of `moe_gate_up`, measured for each form of it: two when a warp read its
/// rows one after the other (ninth pass), four since it reads them in one pass (thirteenth
/// pass; docs/journal.md).
const GATE_UP_WARPS: usize = MOE_WARPS;

/// How `moe_down` runs for `t` positions (kernels/moe.cu `MOE_DOWN`).
struct DownLaunch {
    kernel: &'static str,
    /// Hidden rows a warp: two read the activations half as often, which pays only when they
    /// hold several positions.
    rows: usize,
    /// Warps a block: one position runs in blocks of one warp, which fit beside gate‖up's
    /// blocks; several in blocks of [`MOE_WARPS`], which measured faster there.
    warps: usize,
}

fn down_launch(t: usize) -> DownLaunch {
    if t == 1 {
        DownLaunch {
            kernel: "moe_down",
            rows: 1,
            warps: 1,
        }
    } else {
        DownLaunch {
            kernel: "moe_down_rows2",
            rows: 2,
            warps: MOE_WARPS,
        }
    }
}

/// A grid of `blocks` x `t` blocks of `warps` warps.
fn warps_config(blocks: usize, t: usize, warps: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks as u32, t as u32, 1),
        block_dim: (warps as u32 * 32, 1, 1),
        shared_mem_bytes: 0,
    }
}

#[derive(Debug, Clone, Copy)]
pub struct MoeShape {
    pub experts: usize,
    pub top_k: usize,
    pub hidden: usize,
    /// Intermediate size of each routed expert.
    pub expert_dim: usize,
    /// Intermediate size of the shared expert.
    pub shared_dim: usize,
}

impl MoeShape {
    fn check(&self) -> Result<()> {
        ensure!(
            self.experts <= MAX_EXPERTS,
            "MoE with {} experts: the router kernel takes at most {MAX_EXPERTS}",
            self.experts
        );
        ensure!(
            (1..=MAX_TOP_K.min(self.experts)).contains(&self.top_k),
            "MoE top-k {} must be 1..={} and at most the {} experts",
            self.top_k,
            MAX_TOP_K,
            self.experts
        );
        for (what, v) in [
            ("hidden", self.hidden),
            ("expert", self.expert_dim),
            ("shared expert", self.shared_dim),
        ] {
            ensure!(
                v > 0 && v % 8 == 0,
                "MoE {what} size {v} must be a positive multiple of 8"
            );
        }
        Ok(())
    }
    /// Activations of one position after gate/up: top_k routed experts then the shared one.
    fn act_len(&self) -> usize {
        self.top_k * self.expert_dim + self.shared_dim
    }
}

/// One MoE layer's weights: router `[E][H]`; gate, up `[E][I][H]`; down `[E][H][I]`; shared_gate,
/// shared_up `[Is][H]`; shared_down `[H][Is]`; shared_expert_gate `[H]`.
pub struct MoeWeights<'a, W> {
    pub router: &'a W,
    pub gate: &'a W,
    pub up: &'a W,
    pub down: &'a W,
    pub shared_gate: &'a W,
    pub shared_up: &'a W,
    pub shared_down: &'a W,
    pub shared_expert_gate: &'a W,
}

/// The rows a decode MoE call reads and writes, as device addresses: `t` rows of `x` in, and
/// `y` written (or added onto with `accumulate`); with `norm`, the experts read `rmsnorm(x)`.
/// `x` and `y` may be the same rows.
pub(crate) struct MoeRows<'a> {
    pub x: u64,
    pub y: u64,
    pub t: usize,
    pub accumulate: bool,
    pub norm: Option<FoldedNorm<'a>>,
}

/// Device buffers of the routing and the expert activations, for up to 8 positions.
pub struct MoeScratch {
    /// Chosen experts `[t][top_k]`.
    pub idx: CudaSlice<i32>,
    /// Renormalised routing weights `[t][top_k]`, then the shared expert's gate: `[t][top_k + 1]`.
    pub weights: CudaSlice<f32>,
    act: CudaSlice<f32>,
    /// The input rows RMS-normalised by the router when the norm is folded in (gate‖up
    /// reads them): `[t][hidden]`.
    pub normed: CudaSlice<f32>,
    /// After an output projection with the router's logits: the new residual stream
    /// `[t][hidden]`, which down adds the MoE onto, and the raw logits `[t][experts + 1]`.
    stream: CudaSlice<f32>,
    logits: CudaSlice<f32>,
}

impl MoeScratch {
    pub fn new(gpu: &Gpu, shape: MoeShape) -> Result<Self> {
        Ok(Self {
            idx: gpu.stream.alloc_zeros(MAX_T * shape.top_k)?,
            weights: gpu.stream.alloc_zeros(MAX_T * (shape.top_k + 1))?,
            act: gpu.stream.alloc_zeros(MAX_T * shape.act_len())?,
            normed: gpu.stream.alloc_zeros(MAX_T * shape.hidden)?,
            stream: gpu.stream.alloc_zeros(MAX_T * shape.hidden)?,
            logits: gpu.stream.alloc_zeros(MAX_T * (shape.experts + 1))?,
        })
    }
}

impl Gpu {
    /// `y[t] (+)=` sum over the top-k experts of softmax-renormalised weight x SwiGLU expert,
    /// plus sigmoid(x . shared_expert_gate) x shared SwiGLU expert, for t < `t` (1..=8).
    /// x `[t][H]`, y `[t][H]` fp32 (`accumulate` adds onto y: the residual). With `norm`, the
    /// experts read `rmsnorm(x)` instead: the router folds the norm into its rows and
    /// writes the normalised rows for gate‖up (`scratch.normed`).
    #[allow(clippy::too_many_arguments)] // the MoE kernels' parameters
    pub fn moe<W: DevicePtr<bf16>>(
        &self,
        x: &impl DevicePtr<f32>,
        w: &MoeWeights<'_, W>,
        scratch: &mut MoeScratch,
        y: &mut impl DevicePtrMut<f32>,
        t: usize,
        s: MoeShape,
        accumulate: bool,
        norm: Option<FoldedNorm>,
    ) -> Result<()> {
        let rows = MoeRows {
            x: input("moe input", x, t * s.hidden, &self.stream)?,
            y: output("moe output", y, t * s.hidden, &self.stream)?,
            t,
            accumulate,
            norm,
        };
        self.moe_at(rows, w, scratch, s)
    }

    /// [`Gpu::moe`] on device addresses of rows of `hidden` values each. `x` and `y` may be
    /// the same rows: the residual stream, read (normalised) by the router and gate‖up, then
    /// added onto by the down projection, a launch later.
    pub(crate) fn moe_at<W: DevicePtr<bf16>>(
        &self,
        rows: MoeRows,
        w: &MoeWeights<'_, W>,
        scratch: &mut MoeScratch,
        s: MoeShape,
    ) -> Result<()> {
        let args = MoeArgs::new(self, rows, w, scratch, s)?;
        MoeStage::ALL
            .into_iter()
            .try_for_each(|stage| args.launch(self, stage))
    }

    /// [`Gpu::out_moe_at`] on buffers: x `[t][hidden]` the residual stream, a `[t][cols]`.
    #[allow(clippy::too_many_arguments)] // the output projection's and the MoE kernels' parameters
    pub fn out_moe<W: DevicePtr<bf16>>(
        &self,
        x: &mut impl DevicePtrMut<f32>,
        a: &impl DevicePtr<f32>,
        out: &W,
        cols: usize,
        through: &RouterThroughOut,
        w: &MoeWeights<'_, W>,
        scratch: &mut MoeScratch,
        t: usize,
        s: MoeShape,
        norm: FoldedNorm,
    ) -> Result<()> {
        positions(t)?;
        let xp = output("residual stream", x, t * s.hidden, &self.stream)?;
        let ap = input("mixer output", a, t * cols, &self.stream)?;
        self.out_moe_at(xp, ap, out, cols, through, w, scratch, t, s, norm)
    }

    /// The mixer's output projection and the MoE after it, in four launches:
    /// `x[t] += Wo a[t]`, then `x[t] +=` [`Gpu::moe`] of `rmsnorm(x[t])`, with the router's
    /// logits computed in the projection's launch through `through` (kernels/moe.cu,
    /// `moe_out_logits`) and routed by a launch of one block. `x` `[t][hidden]` is the
    /// residual stream, `a` `[t][cols]`.
    #[allow(clippy::too_many_arguments)] // the output projection's and the MoE kernels' parameters
    pub(crate) fn out_moe_at<W: DevicePtr<bf16>>(
        &self,
        x: u64,
        a: u64,
        out: &W,
        cols: usize,
        through: &RouterThroughOut,
        w: &MoeWeights<'_, W>,
        scratch: &mut MoeScratch,
        t: usize,
        s: MoeShape,
        norm: FoldedNorm,
    ) -> Result<()> {
        ensure!(through.rows == s.experts + 1 && through.cols == cols, "router through the output projection: made for {} rows of {} columns, the MoE has {} experts and the projection {cols} columns", through.rows, through.cols, s.experts);
        ensure!(
            routes_after_projection(s),
            "the routing launch takes a hidden size of at most {ROUTE_HIDDEN}, the MoE has {}",
            s.hidden
        );
        let st = &self.stream;
        let hi = input(
            "router through the output projection",
            &through.m,
            2 * through.rows * cols,
            st,
        )?;
        let out_logits = OutLogits {
            out: input("output projection", out, s.hidden * cols, st)?,
            a,
            cols: dim("output projection cols", cols)?,
            hi,
            lo: hi + (through.rows * cols * std::mem::size_of::<bf16>()) as u64,
            logits: output(
                "router logits",
                &mut scratch.logits,
                t * (s.experts + 1),
                st,
            )?,
        };
        let stream = output(
            "residual stream after the projection",
            &mut scratch.stream,
            t * s.hidden,
            st,
        )?;
        let rows = MoeRows {
            x,
            y: x,
            t,
            accumulate: true,
            norm: Some(norm),
        };
        let mut args = MoeArgs::new(self, rows, w, scratch, s)?;
        args.resid = stream;
        args.out_logits = Some(out_logits);
        [
            MoeStage::OutLogits,
            MoeStage::Route,
            MoeStage::GateUp,
            MoeStage::Down,
        ]
        .into_iter()
        .try_for_each(|stage| args.launch(self, stage))
    }

    /// `M = [router; shared expert gate]·diag(1 + norm)·out` for [`Gpu::out_moe_at`], made on
    /// the device in fp64 and kept as two bf16 terms: router `[E][H]`, shared expert gate `[H]`,
    /// norm (the post-attention norm) `[H]`, out `[H][cols]`.
    #[allow(clippy::too_many_arguments)] // one argument per kernel parameter
    pub fn router_through_out<W: DevicePtr<bf16>>(
        &self,
        router: &W,
        shared_expert_gate: &W,
        norm: &W,
        out: &W,
        experts: usize,
        hidden: usize,
        cols: usize,
    ) -> Result<RouterThroughOut> {
        ensure!(cols > 0 && cols.is_multiple_of(8), "output projection of {cols} columns: the router's rows through it take a positive multiple of 8");
        let st = &self.stream;
        let rows = experts + 1;
        let mut m = st.alloc_zeros::<bf16>(2 * rows * cols)?;
        let (wr, sg) = (
            input("router", router, experts * hidden, st)?,
            input("shared expert gate", shared_expert_gate, hidden, st)?,
        );
        let (nw, wo) = (
            input("post-attention norm", norm, hidden, st)?,
            input("output projection", out, hidden * cols, st)?,
        );
        let hi = output(
            "router through the output projection",
            &mut m,
            2 * rows * cols,
            st,
        )?;
        let lo = hi + (rows * cols * std::mem::size_of::<bf16>()) as u64;
        let cfg = LaunchConfig {
            grid_dim: (
                cols.div_ceil(256) as u32,
                rows.div_ceil(THROUGH_ROWS) as u32,
                1,
            ),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            self,
            "moe_router_through_out",
            cfg,
            &wr,
            &sg,
            &nw,
            &wo,
            &dim("experts", experts)?,
            &dim("hidden", hidden)?,
            &dim("cols", cols)?,
            &hi,
            &lo
        );
        Ok(RouterThroughOut { m, rows, cols })
    }

    /// One of [`Gpu::moe`]'s three launches alone, to time it: `GateUp` and `Down` read the
    /// routing and activations that `scratch` holds from an earlier call.
    #[allow(clippy::too_many_arguments)] // the MoE kernels' parameters, and the stage
    pub fn moe_stage<W: DevicePtr<bf16>>(
        &self,
        stage: MoeStage,
        x: &impl DevicePtr<f32>,
        w: &MoeWeights<'_, W>,
        scratch: &mut MoeScratch,
        y: &mut impl DevicePtrMut<f32>,
        t: usize,
        s: MoeShape,
    ) -> Result<()> {
        let rows = MoeRows {
            x: input("moe input", x, t * s.hidden, &self.stream)?,
            y: output("moe output", y, t * s.hidden, &self.stream)?,
            t,
            accumulate: true,
            norm: None,
        };
        ensure!(!matches!(stage, MoeStage::OutLogits | MoeStage::Route), "the routing from an output projection's logits runs with its projection only (Gpu::out_moe_at)");
        MoeArgs::new(self, rows, w, scratch, s)?.launch(self, stage)
    }
}

/// The router carried through a layer's output projection, `[experts + 1][cols]` twice: the
/// bf16 rows of the fp64 product, then the bf16 rows of what they leave out.
pub struct RouterThroughOut {
    m: CudaSlice<bf16>,
    rows: usize,
    cols: usize,
}

impl RouterThroughOut {
    /// Bytes a decode step reads of it.
    pub fn bytes(&self) -> usize {
        self.m.len() * std::mem::size_of::<bf16>()
    }
}

/// The output projection of [`Gpu::out_moe_at`]'s first launch, and where its logits go.
struct OutLogits {
    out: u64,
    a: u64,
    cols: i32,
    hi: u64,
    lo: u64,
    logits: u64,
}

/// The launches of a decode MoE, in stream order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoeStage {
    /// Router GEMV, then the routing by the first block of its cluster.
    Router,
    /// The mixer's output projection with the router's raw logits ([`Gpu::out_moe_at`]).
    OutLogits,
    /// The routing from them, and the new stream normalised: with `OutLogits`, in place of
    /// `Router`.
    Route,
    /// The chosen experts' and the shared expert's gate and up rows.
    GateUp,
    /// The down projections, weighted and summed onto y.
    Down,
}

impl MoeStage {
    pub const ALL: [MoeStage; 3] = [MoeStage::Router, MoeStage::GateUp, MoeStage::Down];
}

/// Device addresses and dimensions of one decode MoE call, checked once for its launches.
struct MoeArgs<'a> {
    t: usize,
    s: MoeShape,
    /// The shape's experts, top_k, hidden, expert and shared expert sizes as the kernels' ints.
    dims: [i32; 5],
    x: u64,
    y: u64,
    /// What down adds onto: y itself, or the copy of the stream an output projection wrote.
    resid: u64,
    out_logits: Option<OutLogits>,
    accumulate: i32,
    norm: Option<FoldedNorm<'a>>,
    nw: u64,
    eps: f32,
    router: u64,
    shared_expert_gate: u64,
    gate: u64,
    up: u64,
    down: u64,
    shared_gate: u64,
    shared_up: u64,
    shared_down: u64,
    idx: u64,
    wts: u64,
    act: u64,
    normed: u64,
}

impl<'a> MoeArgs<'a> {
    fn new<W: DevicePtr<bf16>>(
        gpu: &Gpu,
        rows: MoeRows<'a>,
        w: &MoeWeights<'_, W>,
        scratch: &mut MoeScratch,
        s: MoeShape,
    ) -> Result<Self> {
        let MoeRows {
            x,
            y,
            t,
            accumulate,
            norm,
        } = rows;
        s.check()?;
        positions(t)?;
        let (e, k, h, i, is) = (s.experts, s.top_k, s.hidden, s.expert_dim, s.shared_dim);
        let st = &gpu.stream;
        let (nw, eps) = FoldedNorm::args(norm, h, st)?;
        Ok(Self {
            t,
            s,
            dims: [
                dim("experts", e)?,
                dim("top_k", k)?,
                dim("hidden", h)?,
                dim("expert", i)?,
                dim("shared expert", is)?,
            ],
            x,
            y,
            resid: y,
            out_logits: None,
            accumulate: i32::from(accumulate),
            norm,
            nw,
            eps,
            router: input("router", w.router, e * h, st)?,
            shared_expert_gate: input("shared expert gate", w.shared_expert_gate, h, st)?,
            gate: input("expert gate", w.gate, e * i * h, st)?,
            up: input("expert up", w.up, e * i * h, st)?,
            down: input("expert down", w.down, e * h * i, st)?,
            shared_gate: input("shared expert gate proj", w.shared_gate, is * h, st)?,
            shared_up: input("shared expert up proj", w.shared_up, is * h, st)?,
            shared_down: input("shared expert down proj", w.shared_down, h * is, st)?,
            idx: output("expert ids", &mut scratch.idx, t * k, st)?,
            wts: output("expert weights", &mut scratch.weights, t * (k + 1), st)?,
            act: output("expert activations", &mut scratch.act, t * s.act_len(), st)?,
            normed: output("normalised moe input", &mut scratch.normed, t * h, st)?,
        })
    }

    fn launch(&self, gpu: &Gpu, stage: MoeStage) -> Result<()> {
        let (s, t) = (self.s, self.t);
        let [e, k, h, i, is] = self.dims;
        let early = gpu.early_arg();
        match stage {
            MoeStage::Router => {
                let cfg = LaunchConfig {
                    grid_dim: (ROUTER_BLOCKS, 1, 1),
                    block_dim: (ROUTER_WARPS * 32, 1, 1),
                    shared_mem_bytes: 0,
                };
                launch!(gpu, format!("{}_t{t}", FoldedNorm::kernel(self.norm, "moe_router")), cfg, cluster Some([ROUTER_BLOCKS, 1, 1]); &self.router, &self.x, &e, &k, &h, &self.shared_expert_gate, &self.idx, &self.wts, &self.nw, &self.eps, &self.normed, &early)
            }
            MoeStage::OutLogits => {
                let o = self.out_logits.as_ref().context(
                    "the output projection's launch needs its projection (Gpu::out_moe_at)",
                )?;
                let blocks = s.hidden.div_ceil(GEMV_ROWS).max(s.experts + 1);
                let cfg = LaunchConfig {
                    grid_dim: (blocks as u32, 1, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                };
                launch!(
                    gpu,
                    format!("moe_out_logits_t{t}"),
                    cfg,
                    &o.out,
                    &o.a,
                    &self.x,
                    &self.resid,
                    &h,
                    &o.cols,
                    &o.hi,
                    &o.lo,
                    &self.router,
                    &self.shared_expert_gate,
                    &self.nw,
                    &e,
                    &o.logits,
                    &early
                )
            }
            MoeStage::Route => {
                let o = self
                    .out_logits
                    .as_ref()
                    .context("the routing from logits needs their projection (Gpu::out_moe_at)")?;
                let cfg = LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (ROUTE_WARPS * 32, 1, 1),
                    shared_mem_bytes: 0,
                };
                launch!(
                    gpu,
                    format!("moe_route_stream_t{t}"),
                    cfg,
                    &self.resid,
                    &o.logits,
                    &self.nw,
                    &self.eps,
                    &e,
                    &k,
                    &h,
                    &self.normed,
                    &self.idx,
                    &self.wts
                )
            }
            MoeStage::GateUp => {
                let x = if self.norm.is_some() {
                    self.normed
                } else {
                    self.x
                };
                launch!(
                    gpu,
                    "moe_gate_up",
                    warps_config(
                        s.act_len().div_ceil(GATE_UP_WARPS * GATE_UP_ROWS),
                        t,
                        GATE_UP_WARPS
                    ),
                    &self.gate,
                    &self.up,
                    &self.shared_gate,
                    &self.shared_up,
                    &self.idx,
                    &x,
                    &self.act,
                    &k,
                    &i,
                    &is,
                    &h,
                    &early
                )
            }
            MoeStage::Down => {
                let d = down_launch(t);
                launch!(
                    gpu,
                    d.kernel,
                    warps_config(s.hidden.div_ceil(d.warps * d.rows), t, d.warps),
                    &self.down,
                    &self.shared_down,
                    &self.idx,
                    &self.wts,
                    &self.act,
                    &self.resid,
                    &self.y,
                    &k,
                    &i,
                    &is,
                    &h,
                    &self.accumulate,
                    &early
                )
            }
        }
        Ok(())
    }
}

/// Device buffers of a prefill chunk's MoE, grouped by expert, for up to `rows` positions.
pub struct MoePrefillScratch {
    rows: usize,
    logits: CudaSlice<f32>,
    idx: CudaSlice<i32>,
    weights: CudaSlice<f32>,
    /// Per expert: where its assignments start in `list` (E + 1 values).
    offsets: CudaSlice<i32>,
    /// Assignment ids `t * top_k + j`, grouped by expert.
    list: CudaSlice<i32>,
    /// Routed activations `[t * top_k + j][I]` and outputs `[t * top_k + j][H]`.
    act: CudaSlice<f32>,
    out: CudaSlice<f32>,
    /// The shared expert's gate and up projections `[t][Is]`.
    shared_gate: CudaSlice<f32>,
    shared_up: CudaSlice<f32>,
}

impl MoePrefillScratch {
    pub fn new(gpu: &Gpu, shape: MoeShape, rows: usize) -> Result<Self> {
        let (e, k, h, i, is) = (
            shape.experts,
            shape.top_k,
            shape.hidden,
            shape.expert_dim,
            shape.shared_dim,
        );
        let alloc_f = |n: usize| gpu.stream.alloc_zeros::<f32>(n.max(1));
        let alloc_i = |n: usize| gpu.stream.alloc_zeros::<i32>(n.max(1));
        Ok(Self {
            rows,
            logits: alloc_f(rows * e)?,
            idx: alloc_i(rows * k)?,
            weights: alloc_f(rows * (k + 1))?,
            offsets: alloc_i(e + 1)?,
            list: alloc_i(rows * k)?,
            act: alloc_f(rows * k * i)?,
            out: alloc_f(rows * k * h)?,
            shared_gate: alloc_f(rows * is)?,
            shared_up: alloc_f(rows * is)?,
        })
    }
}

impl Gpu {
    /// The MoE of [`Gpu::moe`] over a prefill chunk of any `t`, each expert's weights read once
    /// per chunk: router GEMM, routing, assignments grouped by expert, tiled gate‖up and down
    /// per expert, a weighted sum in slot order, and the shared expert as three GEMMs.
    #[allow(clippy::too_many_arguments)] // the grouped MoE kernels' parameters
    pub fn moe_prefill<W: DevicePtr<bf16>>(
        &self,
        x: &impl DevicePtr<f32>,
        w: &MoeWeights<'_, W>,
        scratch: &mut MoePrefillScratch,
        y: &mut impl DevicePtrMut<f32>,
        t: usize,
        s: MoeShape,
        accumulate: bool,
    ) -> Result<()> {
        s.check()?;
        ensure!(
            t >= 1 && t <= scratch.rows,
            "MoE prefill over {t} positions, its scratch holds {}",
            scratch.rows
        );
        let (e, k, h, i, is) = (s.experts, s.top_k, s.hidden, s.expert_dim, s.shared_dim);
        self.gemm(x, w.router, &mut scratch.logits, e, h, t, false)?;
        let xp = input("moe input", x, t * h, &self.stream)?;
        let sg = input("shared expert gate", w.shared_expert_gate, h, &self.stream)?;
        let gate = input("expert gate", w.gate, e * i * h, &self.stream)?;
        let up = input("expert up", w.up, e * i * h, &self.stream)?;
        let down = input("expert down", w.down, e * h * i, &self.stream)?;
        let logits = input("router logits", &scratch.logits, t * e, &self.stream)?;
        let idx = output("expert ids", &mut scratch.idx, t * k, &self.stream)?;
        let wts = output(
            "expert weights",
            &mut scratch.weights,
            t * (k + 1),
            &self.stream,
        )?;
        let offsets = output("expert offsets", &mut scratch.offsets, e + 1, &self.stream)?;
        let list = output("expert assignments", &mut scratch.list, t * k, &self.stream)?;
        let act = output(
            "expert activations",
            &mut scratch.act,
            t * k * i,
            &self.stream,
        )?;
        let out = output("expert outputs", &mut scratch.out, t * k * h, &self.stream)?;
        let (ed, kd, hd, id, isd, nd) = (
            dim("experts", e)?,
            dim("top_k", k)?,
            dim("hidden", h)?,
            dim("expert", i)?,
            dim("shared expert", is)?,
            dim("assignments", t * k)?,
        );

        let per_block = 8;
        let cfg = LaunchConfig {
            grid_dim: (t.div_ceil(per_block) as u32, 1, 1),
            block_dim: (per_block as u32 * 32, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            self,
            "moe_route",
            cfg,
            &logits,
            &ed,
            &kd,
            &xp,
            &sg,
            &hd,
            &dim("positions", t)?,
            &idx,
            &wts
        );
        let one_block = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1024, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            self,
            "moe_group",
            one_block,
            &idx,
            &nd,
            &ed,
            &offsets,
            &list
        );
        let tiles = |n: usize| LaunchConfig {
            grid_dim: (n.div_ceil(64) as u32, e as u32, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            self,
            "moe_gate_up_grouped",
            tiles(i),
            &gate,
            &up,
            &offsets,
            &list,
            &xp,
            &act,
            &kd,
            &id,
            &hd
        );
        launch!(
            self,
            "moe_down_grouped",
            tiles(h),
            &down,
            &offsets,
            &list,
            &act,
            &out,
            &id,
            &hd
        );
        let yp = output("moe output", y, t * h, &self.stream)?;
        let rows = |n: usize| LaunchConfig {
            grid_dim: (n.div_ceil(256) as u32, t as u32, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            self,
            "moe_combine",
            rows(h),
            &out,
            &wts,
            &yp,
            &kd,
            &hd,
            &i32::from(accumulate)
        );

        self.gemm(x, w.shared_gate, &mut scratch.shared_gate, is, h, t, false)?;
        self.gemm(x, w.shared_up, &mut scratch.shared_up, is, h, t, false)?;
        let g = output(
            "shared expert activations",
            &mut scratch.shared_gate,
            t * is,
            &self.stream,
        )?;
        let u = input("shared expert up", &scratch.shared_up, t * is, &self.stream)?;
        launch!(self, "moe_shared_act", rows(is), &g, &u, &wts, &kd, &isd);
        self.gemm(&scratch.shared_gate, w.shared_down, y, h, is, t, true)
    }
}

#[cfg(test)]
mod tests {
    use super::super::nvrtc::assert_defines;
    use super::{
        GATE_UP_ROWS, MOE_WARPS, ROUTER_BLOCKS, ROUTER_WARPS, ROUTE_PER_THREAD, ROUTE_WARPS,
        THROUGH_ROWS,
    };

    #[test]
    fn launch_shapes_are_the_kernels() {
        assert_defines(
            "moe.cu",
            &[
                ("ROUTER_BLOCKS", ROUTER_BLOCKS as usize),
                ("ROUTER_WARPS", ROUTER_WARPS as usize),
                ("MOE_WARPS", MOE_WARPS),
                ("GATE_UP_ROWS", GATE_UP_ROWS),
                ("THROUGH_ROWS", THROUGH_ROWS),
                ("ROUTE_WARPS", ROUTE_WARPS as usize),
                ("ROUTE_PER_THREAD", ROUTE_PER_THREAD),
            ],
        );
    }
}
