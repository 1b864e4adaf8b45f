//! The model's [`Backend`] on the GPU: every block as the kernels of `kernels/`, decode rounds
//! captured once per shape as CUDA graphs and replayed.
//!
//! Operations enqueue on the one stream and never wait; the first failure is kept (with the
//! operation's name) and returned by [`Backend::take_error`], after which nothing more is
//! enqueued. The kernels read the round's position from the device, where
//! [`Backend::set_positions`] writes it before the round (or a plain step's
//! [`Backend::feed_next`] advanced it), so a replayed round sees the new position.

use std::collections::HashMap;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaEvent, CudaGraph, CudaSlice, DevicePtr, LaunchConfig};
use half::bf16;

use super::args::{dim, MAX_T};
use super::attention::{AttnScratch, AttnShape};
use super::gdn::{conv_taps, ConvIn, GatedOut, GdnShape, HEAD_DIM};
use super::gemv::{ArgmaxScratch, FoldedNorm};
use super::l2::{L2Audit, L2Session};
use super::moe::{
    routes_after_projection, MoePrefillScratch, MoeRows, MoeScratch, MoeShape, MoeWeights,
    RouterThroughOut,
};
use super::pad::PadState;
use super::Gpu;
use crate::backend::{
    out_then_norm_ffn, AttnCaches, AttnProjections, Backend, GdnGate, GdnOutputs, GdnProjections,
    GdnState, OpTime, OutFfn, PrefetchCounts, RmsNorm, RoundKey,
};
use crate::config::{Ffn, ModelConfig};
use crate::options::{FoldNorms, L2Arm, Prefetch};
use crate::pad::PadTally;
use crate::state::PoolMap;
use crate::synthetic::Init;
use crate::weights::{
    AttnWeights, FfnWeights, GdnWeights, LayerWeights, Mixer, WeightStore, Weights,
};

/// A bf16 weight matrix `[rows][cols]` on the device.
pub struct CudaMat {
    pub rows: usize,
    pub cols: usize,
    pub data: CudaSlice<bf16>,
}

/// A device buffer: fp32 activations, or bf16 weight vectors and KV caches.
pub enum CudaBuf {
    F32(CudaSlice<f32>),
    Bf16(CudaSlice<bf16>),
}

impl CudaBuf {
    fn f32(&self) -> Result<&CudaSlice<f32>> {
        match self {
            CudaBuf::F32(s) => Ok(s),
            CudaBuf::Bf16(_) => bail!("an fp32 activation buffer was expected, got a bf16 one"),
        }
    }
    fn f32_mut(&mut self) -> Result<&mut CudaSlice<f32>> {
        match self {
            CudaBuf::F32(s) => Ok(s),
            CudaBuf::Bf16(_) => bail!("an fp32 activation buffer was expected, got a bf16 one"),
        }
    }
    fn bf16(&self) -> Result<&CudaSlice<bf16>> {
        match self {
            CudaBuf::Bf16(s) => Ok(s),
            CudaBuf::F32(_) => bail!("a bf16 weight buffer was expected, got an fp32 one"),
        }
    }
    fn bf16_mut(&mut self) -> Result<&mut CudaSlice<bf16>> {
        match self {
            CudaBuf::Bf16(s) => Ok(s),
            CudaBuf::F32(_) => bail!("a bf16 cache buffer was expected, got an fp32 one"),
        }
    }
}

/// Scratch sized by `prepare` for one model shape.
struct Prepared {
    cfg: ModelConfig,
    max_rows: usize,
    /// The round's position on the device (one i32, [`Backend::set_positions`]), and on the
    /// host: the attention kernels read pos0 as this base plus an offset fixed at launch.
    /// `base` is what the device holds once the work queued so far has run: written by
    /// `set_positions`, advanced by `feed_next` and by every replay of a round that records it.
    base_pos: CudaSlice<i32>,
    base: usize,
    argmax: ArgmaxScratch,
    moe: Option<MoeScratch>,
    /// The grouped MoE of prefill chunks of more than [`MAX_T`] positions.
    moe_prefill: Option<MoePrefillScratch>,
    attn: AttnShape,
    attn_scratch: AttnScratch,
    /// The rotated query: `[MAX_T][hq][D]`.
    q_rot: CudaSlice<f32>,
    /// Dense FFN activations `[max_rows][size]` (gate, up).
    ffn_gate: CudaSlice<f32>,
    ffn_up: CudaSlice<f32>,
}

/// What an FFN reads: rows of its own, or the residual stream it adds onto, normalised as the
/// kernels read it (the post-attention norm folded in).
enum FfnInput<'a> {
    Rows(&'a CudaBuf),
    Residual(RmsNorm<'a, CudaBackend>),
}

/// The buffers of one GDN step launch: its projections (q‖k‖v before the conv when the launch
/// runs the conv too), the recurrence's output `o`, and with `gate` its output norm.
struct StepBuffers<'a> {
    proj: GdnProjections<'a, CudaBackend>,
    o: &'a mut CudaBuf,
    gate: Option<GdnGate<'a, CudaBackend>>,
}

/// Per-operation GPU times of eager launches, from events around each operation.
#[derive(Default)]
struct Profile {
    pending: Vec<(String, u64, CudaEvent, CudaEvent)>,
    totals: HashMap<String, ProfileRow>,
}

/// One row of the per-operation profile.
#[derive(Clone, Debug, Default)]
pub struct ProfileRow {
    pub label: String,
    pub calls: u64,
    pub ms: f64,
    /// Bytes the operation must move (weights, state, cache), summed over the calls.
    pub bytes: u64,
}

/// A round as captured: the round, and whether its attention of one position runs in one
/// launch, which the round's position decides ([`Prepared::attn_one_launch`]).
type GraphKey = (RoundKey, bool);

/// A captured round: its graph in [`CudaBackend::graphs`], and how far it advances the
/// round's position (a plain step's [`Backend::feed_next`]), which each replay repeats.
#[derive(Clone, Copy)]
struct Recorded {
    graph: usize,
    advance: usize,
}

pub struct CudaBackend {
    pub gpu: Gpu,
    use_graphs: bool,
    error: Option<anyhow::Error>,
    prep: Option<Prepared>,
    graphs: Vec<CudaGraph>,
    graph_of: HashMap<GraphKey, Recorded>,
    profile: Option<Profile>,
    /// Device address and bytes of the state pool (the last one allocated).
    pool: (u64, usize),
    /// The L2 arm (`ENGINE_L2*`) and, once the pool exists, the session applying it to
    /// every captured graph.
    l2_arm: L2Arm,
    l2: Option<L2Session>,
    /// Per output projection (by its weights' device address) of a layer whose FFN is an MoE:
    /// the router carried through it (`ENGINE_ROUTER_IN_OUT`, [`Gpu::out_moe_at`]).
    through_out: HashMap<u64, RouterThroughOut>,
    /// The decode pad's state ([`PadState`], `ENGINE_DECODE_PAD_PCT`), on the device so that
    /// every captured round replays the fraction last written; `None` while no round is
    /// padded.
    round_pad: Option<CudaSlice<u64>>,
    /// Seconds spent compiling or loading the kernels and opening the device.
    pub startup_seconds: f64,
}

/// The decode pad's state, for a launch of a padded round.
fn pad_state(state: &mut Option<CudaSlice<u64>>) -> Result<&mut CudaSlice<u64>> {
    state
        .as_mut()
        .context("a round was padded before the pad was set")
}

impl CudaBackend {
    /// Opens device `ordinal`; `graphs` false runs every round eagerly (`--no-cuda-graph`);
    /// `l2_arm` is applied to the state pool once it is allocated.
    pub fn new(ordinal: usize, graphs: bool, l2_arm: L2Arm) -> Result<Self> {
        let t0 = Instant::now();
        let gpu = Gpu::new(ordinal)?;
        Ok(Self {
            startup_seconds: t0.elapsed().as_secs_f64(),
            ..Self::on(gpu, graphs, l2_arm)
        })
    }

    /// A backend on this one's device and kernels, with nothing this one built (graphs,
    /// scratch, derived weights, the L2 session) carried over: the start of a model built
    /// again in another placement (`engine bench --layouts`).
    pub fn fresh(self) -> Self {
        Self::on(self.gpu, self.use_graphs, self.l2_arm)
    }

    /// The backend on an opened device (one with a timeline, [`Gpu::with_timeline`], logs
    /// every operation's launches into it).
    pub fn on(gpu: Gpu, graphs: bool, l2_arm: L2Arm) -> Self {
        Self {
            gpu,
            use_graphs: graphs,
            error: None,
            prep: None,
            graphs: Vec::new(),
            graph_of: HashMap::new(),
            profile: None,
            pool: (0, 0),
            l2_arm,
            l2: None,
            through_out: HashMap::new(),
            round_pad: None,
            startup_seconds: 0.0,
        }
    }

    /// How many output projections carry their layer's MoE router ([`Backend::derive_weights`]):
    /// a decode MoE after one of them is routed in the projection's launch.
    pub fn routed_projections(&self) -> usize {
        self.through_out.len()
    }

    /// What the captured graphs and the device hold under the L2 arm, read back.
    pub fn l2_audit(&self) -> Result<L2Audit> {
        let graphs: Vec<_> = self.graphs.iter().zip(self.graph_slots()).collect();
        match &self.l2 {
            Some(l2) => l2.audit(&graphs),
            None => Ok(L2Audit::no_device()),
        }
    }

    /// The captured round graphs (their kernel nodes can be audited through `cu_graph()`).
    pub fn graphs(&self) -> &[CudaGraph] {
        &self.graphs
    }

    /// The state slot each graph of [`CudaBackend::graphs`] reads (part of the round's key:
    /// the slot offsets are baked into its launches).
    pub fn graph_slots(&self) -> Vec<usize> {
        let mut slots = vec![0; self.graphs.len()];
        for ((round, _), recorded) in &self.graph_of {
            slots[recorded.graph] = round.live();
        }
        slots
    }

    /// The state pool's device address and size in bytes: the region an L2 access-policy
    /// window would cover.
    pub fn state_pool(&self) -> (u64, usize) {
        self.pool
    }

    /// Times every operation with events from now on (rounds then run eagerly).
    pub fn start_profile(&mut self) {
        self.profile = Some(Profile::default());
        self.use_graphs = false;
    }

    /// The per-operation times since `start_profile`, longest first.
    pub fn profile(&mut self) -> Result<Vec<ProfileRow>> {
        self.collect_profile()?;
        let mut rows: Vec<ProfileRow> = self
            .profile
            .as_ref()
            .map(|p| p.totals.values().cloned().collect())
            .unwrap_or_default();
        rows.sort_by(|a, b| b.ms.total_cmp(&a.ms));
        Ok(rows)
    }

    fn collect_profile(&mut self) -> Result<()> {
        let Some(p) = self.profile.as_mut() else {
            return Ok(());
        };
        self.gpu.synchronize()?;
        for (label, bytes, start, end) in p.pending.drain(..) {
            let ms = start.elapsed_ms(&end).context("reading a profile event")? as f64;
            let row = p.totals.entry(label.clone()).or_insert_with(|| ProfileRow {
                label,
                ..Default::default()
            });
            row.calls += 1;
            row.ms += ms;
            row.bytes += bytes;
        }
        Ok(())
    }

    /// Runs one operation unless an earlier one failed, keeping its error; `label` names it
    /// in the error and in the profile, `bytes` is what it must move.
    fn op(
        &mut self,
        label: impl FnOnce() -> String,
        bytes: u64,
        f: impl FnOnce(&mut Self) -> Result<()>,
    ) {
        if self.error.is_some() {
            return;
        }
        let timed = self.profile.is_some();
        let label = (timed || self.gpu.timeline.is_some())
            .then(label)
            .unwrap_or_default();
        if let Some(t) = &self.gpu.timeline {
            t.begin_op(&label, bytes);
        }
        let events = if timed { self.events() } else { Ok(None) };
        let r = events.and_then(|ev| {
            if let Some((start, _)) = &ev {
                start.record(&self.gpu.stream)?;
            }
            f(self)?;
            if let Some((start, end)) = ev {
                end.record(&self.gpu.stream)?;
                let p = self.profile.as_mut().expect("timed implies a profile");
                p.pending.push((label, bytes, start, end));
            }
            Ok(())
        });
        if let Some(t) = &self.gpu.timeline {
            t.end_op();
        }
        if let Err(e) = r {
            self.error = Some(e.context("CUDA backend operation failed"));
        }
    }

    fn events(&self) -> Result<Option<(CudaEvent, CudaEvent)>> {
        let new = || {
            self.gpu
                .ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .context("creating a profile event")
        };
        Ok(Some((new()?, new()?)))
    }

    /// Captures `body` as the graph of `key`, then launches it. All capturing happens here:
    /// a stream attribute that must be baked into the kernel nodes (an L2 access-policy
    /// window) is set just before `begin_capture` and cleared just after `end_capture`.
    fn capture<M>(
        m: &mut M,
        backend: fn(&mut M) -> &mut Self,
        key: GraphKey,
        body: impl FnOnce(&mut M),
    ) -> Result<()> {
        let b = backend(m);
        // The L2 window goes on the stream right before capture, so that it is baked into
        // every kernel node of the graph, and comes off right after, so that nothing eager
        // runs under it.
        if let Some(l2) = &b.l2 {
            l2.install_on_stream(&b.gpu, key.0.live())
                .context("installing the L2 window before capture")?;
        }
        b.gpu
            .stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .context("beginning CUDA graph capture")?;
        let before = b.base();
        let logged = b.gpu.timeline.as_ref().map(|t| t.logged());
        body(m);
        let b = backend(m);
        let advance = b.base() - before;
        // End the capture even when the round failed, so that the stream stays usable.
        let graph = b.gpu.stream.end_capture(CUgraphInstantiate_flags(0));
        if let Some(l2) = &b.l2 {
            l2.remove_from_stream(&b.gpu)
                .context("removing the L2 window after capture")?;
        }
        if let Some(e) = b.error.take() {
            return Err(e.context(format!("recording round {key:?}")));
        }
        let graph = graph
            .context("ending CUDA graph capture")?
            .context("graph capture recorded no work")?;
        graph
            .launch()
            .with_context(|| format!("launching the graph of round {key:?}"))?;
        if let (Some(t), Some(from)) = (&b.gpu.timeline, logged) {
            t.captured(b.graphs.len(), from);
        }
        b.graph_of.insert(
            key,
            Recorded {
                graph: b.graphs.len(),
                advance,
            },
        );
        b.graphs.push(graph);
        Ok(())
    }

    /// The round's position as the device will hold it after the work queued so far.
    fn base(&self) -> usize {
        self.prep.as_ref().map_or(0, |p| p.base)
    }

    /// The FFN added onto the residual stream `acc`, reading `input`.
    fn ffn(
        &mut self,
        cfg: &ModelConfig,
        w: &FfnWeights<Self>,
        input: FfnInput<'_>,
        t: usize,
        acc: &mut CudaBuf,
    ) {
        let folded = if matches!(input, FfnInput::Residual(_)) {
            ", norm folded"
        } else {
            ""
        };
        match w {
            FfnWeights::Moe(_) => {
                let bytes = moe_step_bytes(w, cfg);
                self.op(
                    || format!("moe{folded}"),
                    bytes as u64,
                    |b| b.moe_add(w, input, t, acc),
                );
            }
            FfnWeights::Dense(mlp) => {
                let bytes = 3 * mlp.gate.rows * mlp.gate.cols * 2;
                self.op(
                    || format!("dense ffn{folded}"),
                    bytes as u64,
                    |b| b.dense_add(w, input, t, acc),
                );
            }
        }
    }

    /// Whether the FFN of `w` over `t` positions reads the residual stream with its norm
    /// folded in ([`FfnInput::Residual`]): a decode MoE always does (its router normalises the
    /// rows for the experts, in place of a norm launch), a dense FFN with `ENGINE_FOLD_NORM=on`.
    fn ffn_folds_norm(&self, w: &FfnWeights<Self>, t: usize) -> bool {
        match w {
            FfnWeights::Moe(_) => (1..=MAX_T).contains(&t),
            FfnWeights::Dense(mlp) => {
                self.gpu.options.fold_norms == FoldNorms::On
                    && Gpu::can_fuse(mlp.gate.cols, t, [mlp.gate.rows, mlp.up.rows].into_iter())
            }
        }
    }

    /// Whether a layer's input norm is folded into its projections (`ENGINE_FOLD_NORM`; `auto`
    /// folds it in MoE models).
    fn folds_input_norm(&self) -> bool {
        let moe = self
            .prep
            .as_ref()
            .is_some_and(|p| matches!(p.cfg.ffn, Ffn::Moe { .. }));
        self.gpu.options.fold_norms.input_norm(moe)
    }

    /// MoE added onto the residual stream: the grouped prefill kernels above [`MAX_T`] rows.
    fn moe_add(
        &mut self,
        w: &FfnWeights<Self>,
        input: FfnInput<'_>,
        t: usize,
        acc: &mut CudaBuf,
    ) -> Result<()> {
        let p = self.prep.as_mut().context("prepare() first")?;
        let (weights, shape) = moe_weights(w, &p.cfg);
        let h = shape.hidden;
        let acc = acc.f32_mut()?;
        if let (FfnInput::Rows(x), true) = (&input, t > MAX_T) {
            let scratch = p.moe_prefill.as_mut().context("MoE prefill scratch")?;
            return self
                .gpu
                .moe_prefill(x.f32()?, &weights, scratch, acc, t, shape, true);
        }
        let scratch = p.moe.as_mut().context("MoE scratch")?;
        let y = super::args::output("residual stream", acc, t * h, &self.gpu.stream)?;
        let (x, norm) = match input {
            FfnInput::Rows(x) => (
                super::args::input("moe input", x.f32()?, t * h, &self.gpu.stream)?,
                None,
            ),
            FfnInput::Residual(norm) => (
                y,
                Some(FoldedNorm {
                    w: norm.w.bf16()?,
                    eps: norm.eps,
                }),
            ),
        };
        let rows = MoeRows {
            x,
            y,
            t,
            accumulate: true,
            norm,
        };
        self.gpu.moe_at(rows, &weights, scratch, shape)
    }

    /// A layer's output projection and its decode MoE, the router's rows in the projection's launch.
    fn out_moe_add(
        &mut self,
        layer: &OutFfn<'_, Self>,
        through: u64,
        t: usize,
        x: &mut CudaBuf,
    ) -> Result<()> {
        let p = self.prep.as_mut().context("prepare() first")?;
        let (weights, shape) = moe_weights(layer.ffn, &p.cfg);
        let through = self
            .through_out
            .get(&through)
            .context("the router through this output projection was not made")?;
        let scratch = p.moe.as_mut().context("MoE scratch")?;
        let st = &self.gpu.stream;
        let xp = super::args::output("residual stream", x.f32_mut()?, t * shape.hidden, st)?;
        let a = super::args::input("mixer output", layer.mixed.f32()?, t * layer.out.cols, st)?;
        let norm = FoldedNorm {
            w: layer.norm.w.bf16()?,
            eps: layer.norm.eps,
        };
        self.gpu.out_moe_at(
            xp,
            a,
            &layer.out.data,
            layer.out.cols,
            through,
            &weights,
            scratch,
            t,
            shape,
            norm,
        )
    }

    /// The router through `lw`'s output projection, when its FFN is an MoE.
    fn derive_through_out(&mut self, cfg: &ModelConfig, lw: &LayerWeights<Self>) -> Result<()> {
        let FfnWeights::Moe(moe) = &lw.ffn else {
            return Ok(());
        };
        if !routes_after_projection(moe_weights(&lw.ffn, cfg).1) {
            return Ok(());
        }
        let out = match &lw.mixer {
            Mixer::Gdn(w) => &w.out,
            Mixer::Attn(w) => &w.o,
        };
        let Ffn::Moe { experts, .. } = cfg.ffn else {
            unreachable!("MoE weights follow the config")
        };
        let through = self.gpu.router_through_out(
            &moe.router.data,
            &moe.shared_gate.data,
            lw.post_norm.bf16()?,
            &out.data,
            experts,
            cfg.hidden,
            out.cols,
        )?;
        let key = super::args::input("output projection", &out.data, 0, &self.gpu.stream)?;
        self.through_out.insert(key, through);
        Ok(())
    }

    fn dense_add(
        &mut self,
        w: &FfnWeights<Self>,
        input: FfnInput<'_>,
        t: usize,
        acc: &mut CudaBuf,
    ) -> Result<()> {
        let FfnWeights::Dense(mlp) = w else {
            unreachable!("called for dense only")
        };
        let p = self.prep.as_mut().context("prepare() first")?;
        let (h, size) = (mlp.gate.cols, mlp.gate.rows);
        let acc = acc.f32_mut()?;
        let (x, norm) = match input {
            FfnInput::Rows(x) => (x.f32()?, None),
            FfnInput::Residual(norm) => (
                &*acc,
                Some(FoldedNorm {
                    w: norm.w.bf16()?,
                    eps: norm.eps,
                }),
            ),
        };
        self.gpu.project_many(
            x,
            h,
            t,
            &mut [
                (&mlp.gate.data, size, &mut p.ffn_gate),
                (&mlp.up.data, size, &mut p.ffn_up),
            ],
            norm,
        )?;
        let n = dim("dense activations", t * size)?;
        let (g, u) = (
            super::args::output("ffn gate", &mut p.ffn_gate, t * size, &self.gpu.stream)?,
            super::args::input("ffn up", &p.ffn_up, t * size, &self.gpu.stream)?,
        );
        let cfg = LaunchConfig {
            grid_dim: ((t * size).div_ceil(256).min(4096) as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(self.gpu, "swiglu_act", cfg, &g, &u, &n);
        self.gpu
            .project(&p.ffn_gate, &mlp.down.data, acc, h, size, t, true)
    }

    /// The recurrence of one GDN layer into `bufs.o`, reading and writing `state.rec`; with
    /// `bufs.gate`, its output norm in the same launch; with `fused_conv`, `bufs.proj.qkv` is
    /// the projection before the conv, done by the same launch too at `state.conv`.
    fn gdn_step(
        &mut self,
        cfg: &ModelConfig,
        w: &GdnWeights<Self>,
        state: &mut GdnState<'_, Self>,
        bufs: StepBuffers<'_>,
        t: usize,
        fused_conv: bool,
    ) {
        let shape = GdnShape {
            hk: cfg.gdn_key_heads,
            hv: cfg.gdn_value_heads,
        };
        let StepBuffers { proj, o, gate } = bufs;
        let label = match (fused_conv, gate.is_some()) {
            (true, true) => "gdn_conv + recurrence + gated_norm",
            (true, false) => "gdn_conv + recurrence",
            (false, true) => "gdn_recurrence + gated_norm",
            (false, false) => "gdn_recurrence",
        };
        let conv_bytes = if fused_conv {
            2 * cfg.conv_slot_bytes()
        } else {
            0
        };
        self.op(
            || label.into(),
            (2 * cfg.rec_slot_bytes() + conv_bytes) as u64,
            |b| {
                let s = &b.gpu.stream;
                let n = t * shape.hv * HEAD_DIM;
                let base = super::args::output("state pool", state.pool, 0, s)?;
                let inputs = [
                    super::args::input("gdn qkv", proj.qkv.f32()?, t * shape.conv_channels(), s)?,
                    super::args::input("gdn b", proj.b.f32()?, t * shape.hv, s)?,
                    super::args::input("gdn a", proj.a.f32()?, t * shape.hv, s)?,
                    super::args::input("gdn A_log", w.a_log.bf16()?, shape.hv, s)?,
                    super::args::input("gdn dt_bias", w.dt_bias.bf16()?, shape.hv, s)?,
                ];
                let o = super::args::output("gdn output", o.f32_mut()?, n, s)?;
                let gated = match gate {
                    Some(GdnGate { z, out }) => Some(GatedOut::new(
                        z.f32()?,
                        w.norm.bf16()?,
                        out.f32_mut()?,
                        cfg.rms_eps as f32,
                        t,
                        shape,
                        s,
                    )?),
                    None => None,
                };
                let conv = if fused_conv {
                    Some(ConvIn {
                        w: conv_taps(w.conv.bf16()?, shape.conv_channels(), s)?,
                        from: base + state.conv.src as u64,
                        to: base + state.conv.dst as u64,
                    })
                } else {
                    None
                };
                b.gpu.gdn_step_at(
                    inputs,
                    base + state.rec.src as u64,
                    base + state.rec.dst as u64,
                    o,
                    gated,
                    conv,
                    t,
                    shape,
                )
            },
        );
    }

    fn attention_groups(
        &mut self,
        w: &AttnWeights<Self>,
        proj: AttnProjections<'_, Self>,
        caches: AttnCaches<'_, Self>,
        t: usize,
        out: &mut CudaBuf,
    ) -> Result<()> {
        let AttnProjections { qg, k, v } = proj;
        let AttnCaches {
            rope,
            kv: cache,
            pos0,
        } = caches;
        let gpu = &self.gpu;
        let p = self.prep.as_mut().context("prepare() first")?;
        let s = p.attn;
        let (hq, d) = (s.hq, s.head_dim);
        let (qw, kvw) = (hq * d, s.hkv * d);
        ensure!(
            t <= p.max_rows,
            "attention over {t} positions, prepared for {}",
            p.max_rows
        );
        let (qn, kn) = (w.q_norm.bf16()?, w.k_norm.bf16()?);
        let out = out.f32_mut()?;
        for r0 in (0..t).step_by(MAX_T) {
            let n = (t - r0).min(MAX_T);
            let offset = p.offset_of(pos0 + r0)?;
            let one_launch = n == 1 && p.attn_one_launch();
            let (k_rows, v_rows) = (
                k.f32()?.slice(r0 * kvw..(r0 + n) * kvw),
                v.f32()?.slice(r0 * kvw..(r0 + n) * kvw),
            );
            let qg_rows = qg.f32()?.slice(r0 * 2 * qw..(r0 + n) * 2 * qw);
            gpu.attn_prep(
                &qg_rows,
                &k_rows,
                &v_rows,
                qn,
                kn,
                rope.f32()?,
                &p.base_pos,
                offset,
                cache.k.bf16_mut()?,
                cache.v.bf16_mut()?,
                &mut p.q_rot.slice_mut(..n * qw),
                n,
                s,
            )?;
            gpu.attn_decode(
                &p.q_rot.slice(..n * qw),
                cache.k.bf16()?,
                cache.v.bf16()?,
                &p.base_pos,
                offset,
                &qg_rows,
                &mut p.attn_scratch,
                &mut out.slice_mut(r0 * qw..(r0 + n) * qw),
                n,
                s,
                one_launch,
            )?;
        }
        Ok(())
    }
}

impl Prepared {
    /// Position `pos` as an offset from the round's base position.
    fn offset_of(&self, pos: usize) -> Result<i32> {
        i32::try_from(pos as i64 - self.base as i64).map_err(|_| {
            anyhow::anyhow!(
                "position {pos} is too far from the round's position {}",
                self.base
            )
        })
    }

    /// Whether a round from the current position runs its attention of one position in one
    /// launch, judged at the farthest position a round reaches: a captured round is keyed by
    /// it, and every replay of its graph takes the same path.
    fn attn_one_launch(&self) -> bool {
        self.attn_scratch.plan().one_launch(self.base + MAX_T)
    }
}

/// Checks the shapes the kernels are written for.
fn check_shape(cfg: &ModelConfig) -> Result<()> {
    let name = &cfg.name;
    ensure!(
        cfg.gdn_key_dim == HEAD_DIM && cfg.gdn_value_dim == HEAD_DIM,
        "model {name}: the CUDA GDN kernels take key and value head dims of {HEAD_DIM}, not {}/{}",
        cfg.gdn_key_dim,
        cfg.gdn_value_dim
    );
    ensure!(
        cfg.conv_kernel == 4,
        "model {name}: the CUDA conv kernel takes a kernel width of 4, not {}",
        cfg.conv_kernel
    );
    GdnShape {
        hk: cfg.gdn_key_heads,
        hv: cfg.gdn_value_heads,
    }
    .check()
    .with_context(|| format!("model {name} on the CUDA backend"))?;
    ensure!(
        cfg.hidden.is_multiple_of(8),
        "model {name}: hidden size {} must be a multiple of 8 for the CUDA backend",
        cfg.hidden
    );
    Ok(())
}

/// Host f32 values (bf16-exact) as bf16.
fn to_bf16(host: &[f32]) -> Vec<bf16> {
    host.iter().map(|v| bf16::from_f32(*v)).collect()
}

/// One projection of a fused launch: its weights, its row count and its output.
type ProjectionPart<'a> = (&'a CudaSlice<bf16>, usize, &'a mut CudaSlice<f32>);

/// `(weight, rows, output)` of each projection, as [`Gpu::project_many`] takes them.
fn projection_parts<'a>(
    outs: &'a mut [(&CudaMat, &mut CudaBuf)],
) -> Result<Vec<ProjectionPart<'a>>> {
    outs.iter_mut()
        .map(|(w, out)| Ok((&w.data, w.rows, out.f32_mut()?)))
        .collect()
}

impl WeightStore for CudaBackend {
    type Buf = CudaBuf;
    type Mat = CudaMat;

    fn upload_weights(&mut self, host: &[f32]) -> Result<CudaBuf> {
        Ok(CudaBuf::Bf16(self.gpu.stream.clone_htod(&to_bf16(host))?))
    }

    fn alloc_mat(&mut self, rows: usize, cols: usize) -> Result<CudaMat> {
        let data = self.gpu.stream.alloc_zeros(rows * cols).with_context(|| {
            format!(
                "allocating a {rows}×{cols} bf16 weight matrix on the GPU ({} B)",
                2 * rows * cols
            )
        })?;
        Ok(CudaMat { rows, cols, data })
    }

    fn write_mat_rows(&mut self, m: &mut CudaMat, row0: usize, host: &[f32]) -> Result<()> {
        let at = row0 * m.cols;
        ensure!(
            at + host.len() <= m.data.len(),
            "writing {} values at row {row0} of a {}×{} matrix",
            host.len(),
            m.rows,
            m.cols
        );
        self.gpu
            .stream
            .memcpy_htod(&to_bf16(host), &mut m.data.slice_mut(at..at + host.len()))?;
        Ok(())
    }

    fn fill_mat_synthetic(
        &mut self,
        m: &mut CudaMat,
        row0: usize,
        rows: usize,
        seed: u64,
        key: u64,
        init: Init,
    ) -> Result<()> {
        let cols = m.cols;
        ensure!(
            (row0 + rows) * cols <= m.data.len(),
            "filling rows {row0}..{} of a {}×{cols} matrix",
            row0 + rows,
            m.rows
        );
        let mut part = m.data.slice_mut(row0 * cols..(row0 + rows) * cols);
        self.gpu
            .fill_synthetic(&mut part, seed, key, init.offset, init.scale)?;
        if init.identity != 0.0 {
            let w = super::args::output("synthetic weights", &mut part, 0, &self.gpu.stream)?;
            let cfg = LaunchConfig {
                grid_dim: (rows.min(cols).div_ceil(256).max(1) as u32, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            launch!(
                self.gpu,
                "synthetic_add_identity",
                cfg,
                &w,
                &dim("rows", rows)?,
                &dim("cols", cols)?,
                &init.identity
            );
        }
        Ok(())
    }
}

impl Backend for CudaBackend {
    type Tok = CudaSlice<i32>;
    type Pool = CudaSlice<u8>;

    fn name(&self) -> &'static str {
        "cuda"
    }

    fn prepare(&mut self, cfg: &ModelConfig, max_rows: usize) -> Result<()> {
        check_shape(cfg)?;
        let s = &self.gpu.stream;
        let attn = AttnShape {
            hq: cfg.attn_heads,
            hkv: cfg.attn_kv_heads,
            head_dim: cfg.attn_head_dim,
            max_ctx: cfg.max_context,
            rot_dim: cfg.rotary_dim(),
            eps: cfg.rms_eps as f32,
        };
        // One split count for every batch size, and one merge order for either path, so that
        // a position's attention sums in the same order in a plain step and in a verify pass
        // (speculative = plain, bit for bit).
        let plan = self.gpu.attn_plan(attn)?;
        let qw = cfg.attn_heads * cfg.attn_head_dim;
        let moe_shape = match cfg.ffn {
            Ffn::Moe {
                experts,
                top_k,
                expert_size,
                shared_size,
            } => Some(MoeShape {
                experts,
                top_k,
                hidden: cfg.hidden,
                expert_dim: expert_size,
                shared_dim: shared_size,
            }),
            Ffn::Dense { .. } => None,
        };
        let moe = moe_shape
            .map(|shape| MoeScratch::new(&self.gpu, shape))
            .transpose()?;
        let moe_prefill = moe_shape
            .filter(|_| max_rows > MAX_T)
            .map(|shape| MoePrefillScratch::new(&self.gpu, shape, max_rows))
            .transpose()?;
        let dense = match cfg.ffn {
            Ffn::Dense { size } => size * max_rows,
            Ffn::Moe { .. } => 1,
        };
        self.prep = Some(Prepared {
            cfg: cfg.clone(),
            max_rows,
            base_pos: s.alloc_zeros(1)?,
            base: 0,
            argmax: ArgmaxScratch::new(&self.gpu, cfg.vocab)?,
            moe,
            moe_prefill,
            attn,
            attn_scratch: AttnScratch::new(&self.gpu, attn, MAX_T, plan)?,
            q_rot: s.alloc_zeros(MAX_T * qw)?,
            ffn_gate: s.alloc_zeros(dense)?,
            ffn_up: s.alloc_zeros(dense)?,
        });
        self.set_positions(0);
        self.take_error()
    }

    fn alloc(&mut self, len: usize) -> Result<CudaBuf> {
        Ok(CudaBuf::F32(
            self.gpu
                .stream
                .alloc_zeros(len.max(1))
                .with_context(|| format!("allocating {len} fp32 values on the GPU"))?,
        ))
    }

    fn alloc_tokens(&mut self, len: usize) -> Result<CudaSlice<i32>> {
        Ok(self.gpu.stream.alloc_zeros(len.max(1))?)
    }

    fn alloc_pool(&mut self, map: &PoolMap) -> Result<CudaSlice<u8>> {
        let bytes = map.total_bytes();
        let pool: CudaSlice<u8> = self
            .gpu
            .stream
            .alloc_zeros(bytes.max(1))
            .with_context(|| format!("allocating the {bytes} B state pool on the GPU"))?;
        self.pool = (pool.device_ptr(&self.gpu.stream).0, bytes);
        self.l2 = None; // a session over an earlier pool releases its reserve first
        self.l2 = Some(L2Session::begin(&self.gpu, &self.l2_arm, self.pool.0, map)?);
        Ok(pool)
    }

    fn upload(&mut self, host: &[f32]) -> Result<CudaBuf> {
        Ok(CudaBuf::F32(self.gpu.stream.clone_htod(host)?))
    }

    fn alloc_cache(&mut self, len: usize) -> Result<CudaBuf> {
        Ok(CudaBuf::Bf16(
            self.gpu
                .stream
                .alloc_zeros(len.max(1))
                .with_context(|| format!("allocating a {len}-value KV cache on the GPU"))?,
        ))
    }

    fn read_buf(&mut self, src: &CudaBuf, len: usize) -> Vec<f32> {
        let r = (|| -> Result<Vec<f32>> {
            self.gpu.synchronize()?;
            Ok(match src {
                CudaBuf::F32(s) => self.gpu.stream.clone_dtoh(&s.slice(..len))?,
                CudaBuf::Bf16(s) => self
                    .gpu
                    .stream
                    .clone_dtoh(&s.slice(..len))?
                    .iter()
                    .map(|v| v.to_f32())
                    .collect(),
            })
        })();
        r.unwrap_or_else(|e| {
            self.error.get_or_insert(e.context("reading a buffer back"));
            vec![f32::NAN; len]
        })
    }

    fn take_error(&mut self) -> Result<()> {
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn set_positions(&mut self, base: usize) {
        self.op(
            || "set_positions".into(),
            0,
            |b| {
                let p = b.prep.as_mut().context("prepare() first")?;
                if p.base == base {
                    // Already there (a plain step advanced it): no copy between two steps.
                    return Ok(());
                }
                let at = i32::try_from(base)
                    .map_err(|_| anyhow::anyhow!("position {base} does not fit a 32-bit int"))?;
                b.gpu.stream.memcpy_htod(&[at], &mut p.base_pos)?;
                p.base = base;
                Ok(())
            },
        );
    }

    fn round<M>(
        m: &mut M,
        backend: fn(&mut M) -> &mut Self,
        key: RoundKey,
        body: impl FnOnce(&mut M),
    ) {
        let b = backend(m);
        if !b.use_graphs || b.error.is_some() {
            return body(m);
        }
        let key = (key, b.prep.as_ref().is_some_and(Prepared::attn_one_launch));
        if let Some(&Recorded { graph, advance }) = b.graph_of.get(&key) {
            if let Err(e) = b.graphs[graph].launch() {
                b.error = Some(
                    anyhow::Error::from(e).context(format!("launching the graph of round {key:?}")),
                );
            }
            if let Some(t) = &b.gpu.timeline {
                t.replayed(graph);
            }
            if let Some(p) = b.prep.as_mut() {
                p.base += advance;
            }
            return;
        }
        if let Err(e) = Self::capture(m, backend, key, body) {
            backend(m).error.get_or_insert(e);
        }
    }

    /// The state goes to the device by a copy on the stream, outside any graph, so that the
    /// rounds queued before run with the old fraction and every round after with the new one.
    fn set_round_pad(&mut self, fraction: f64) -> Result<()> {
        if self.round_pad.is_none() {
            ensure!(
                self.graphs.is_empty(),
                "the decode pad must be set before the first round is captured: the {} graphs \
                 captured so far hold no pad",
                self.graphs.len()
            );
            self.round_pad = Some(
                self.gpu
                    .stream
                    .alloc_zeros(PadState::WORDS)
                    .context("allocating the decode pad's state on the GPU")?,
            );
        }
        let state = self.round_pad.as_mut().expect("allocated above");
        self.gpu.write_pad(PadState::new(fraction), state)
    }

    fn start_round(&mut self) {
        self.op(
            || "round_start".into(),
            0,
            |b| b.gpu.round_start(pad_state(&mut b.round_pad)?),
        );
    }

    fn pad_round(&mut self) {
        self.op(
            || "decode_pad".into(),
            0,
            |b| b.gpu.decode_pad(pad_state(&mut b.round_pad)?),
        );
    }

    /// Reads what the pads counted and counts from zero again, the rest of the state kept.
    fn take_pad_tally(&mut self) -> Result<PadTally> {
        self.take_error()?;
        let Some(state) = self.round_pad.as_mut() else {
            return Ok(PadTally::default());
        };
        let read = self.gpu.read_pad(state)?;
        self.gpu.write_pad(read.counts_taken(), state)?;
        Ok(read.tally())
    }

    fn clear_pool(&mut self, pool: &mut CudaSlice<u8>) {
        self.op(
            || "clear_pool".into(),
            0,
            |b| Ok(b.gpu.stream.memset_zeros(pool)?),
        );
    }

    fn write_tokens(&mut self, dst: &mut CudaSlice<i32>, at: usize, host: &[u32]) {
        self.op(
            || "write_tokens".into(),
            0,
            |b| {
                let ids: Vec<i32> = host.iter().map(|&v| v as i32).collect();
                Ok(b.gpu
                    .stream
                    .memcpy_htod(&ids, &mut dst.slice_mut(at..at + host.len()))?)
            },
        );
    }

    fn read_tokens(&mut self, src: &CudaSlice<i32>, at: usize, host: &mut [u32]) {
        let r = (|| -> Result<()> {
            let mut ids = vec![0i32; host.len()];
            self.gpu
                .stream
                .memcpy_dtoh(&src.slice(at..at + host.len()), &mut ids)?;
            self.gpu.synchronize()?;
            host.iter_mut().zip(ids).for_each(|(h, v)| *h = v as u32);
            self.collect_profile()
        })();
        if let Err(e) = r {
            self.error
                .get_or_insert(e.context("reading token ids back"));
        }
    }

    fn feed_next(
        &mut self,
        tok_out: &CudaSlice<i32>,
        tok_in: &mut CudaSlice<i32>,
        history: &mut CudaSlice<i32>,
        pos: usize,
    ) {
        self.op(
            || "feed_next".into(),
            0,
            |b| {
                let p = b.prep.as_mut().context("prepare() first")?;
                ensure!(
                    p.base == pos,
                    "a plain step at position {pos} was queued while the device's position is {}",
                    p.base
                );
                ensure!(
                    pos + 1 < history.len(),
                    "position {} is past the token history of {} positions",
                    pos + 1,
                    history.len()
                );
                b.gpu.feed_next(tok_out, tok_in, history, &mut p.base_pos)?;
                p.base = pos + 1;
                Ok(())
            },
        );
    }

    fn copy_rows(
        &mut self,
        src: &CudaBuf,
        src_row: usize,
        dst: &mut CudaBuf,
        dst_row: usize,
        rows: usize,
        width: usize,
    ) {
        self.op(
            || "copy_rows".into(),
            0,
            |b| {
                let s = src.f32()?.slice(src_row * width..(src_row + rows) * width);
                Ok(b.gpu.stream.memcpy_dtod(
                    &s,
                    &mut dst
                        .f32_mut()?
                        .slice_mut(dst_row * width..(dst_row + rows) * width),
                )?)
            },
        );
    }

    fn embed(
        &mut self,
        table: &CudaMat,
        tok: &CudaSlice<i32>,
        at: usize,
        t: usize,
        out: &mut CudaBuf,
    ) {
        self.op(
            || "embed".into(),
            (t * table.cols * 2) as u64,
            |b| {
                b.gpu.embed(
                    &table.data,
                    &tok.slice(at..at + t),
                    out.f32_mut()?,
                    t,
                    table.rows,
                    table.cols,
                )
            },
        );
    }

    fn rms_norm(
        &mut self,
        x: &CudaBuf,
        norm: RmsNorm<'_, Self>,
        t: usize,
        width: usize,
        out: &mut CudaBuf,
    ) {
        self.op(
            || "rms_norm".into(),
            0,
            |b| {
                b.gpu
                    .rmsnorm(x.f32()?, norm.w.bf16()?, out.f32_mut()?, t, width, norm.eps)
            },
        );
    }

    fn matmul(&mut self, w: &CudaMat, x: &CudaBuf, t: usize, out: &mut CudaBuf) {
        let label = || {
            format!(
                "{} {}x{}",
                if t <= MAX_T { "gemv" } else { "gemm" },
                w.rows,
                w.cols
            )
        };
        self.op(label, (w.rows * w.cols * 2) as u64, |b| {
            b.gpu
                .project(x.f32()?, &w.data, out.f32_mut()?, w.rows, w.cols, t, false)
        });
    }

    fn matmul_add(&mut self, w: &CudaMat, x: &CudaBuf, t: usize, acc: &mut CudaBuf) {
        let label = || {
            format!(
                "{} {}x{} +=",
                if t <= MAX_T { "gemv" } else { "gemm" },
                w.rows,
                w.cols
            )
        };
        self.op(label, (w.rows * w.cols * 2) as u64, |b| {
            b.gpu
                .project(x.f32()?, &w.data, acc.f32_mut()?, w.rows, w.cols, t, true)
        });
    }

    fn matmul_many(&mut self, x: &CudaBuf, t: usize, outs: &mut [(&CudaMat, &mut CudaBuf)]) {
        let Some(cols) = outs.first().map(|(w, _)| w.cols) else {
            return;
        };
        if outs.iter().any(|(w, _)| w.cols != cols) {
            return outs
                .iter_mut()
                .for_each(|(w, out)| self.matmul(w, x, t, out));
        }
        let rows: usize = outs.iter().map(|(w, _)| w.rows).sum();
        let label = || {
            format!(
                "{} {}x{} fused",
                if t <= MAX_T { "gemv" } else { "gemm" },
                rows,
                cols
            )
        };
        self.op(label, (rows * cols * 2) as u64, |b| {
            let mut parts = projection_parts(outs)?;
            b.gpu.project_many(x.f32()?, cols, t, &mut parts, None)
        });
    }

    fn norm_matmul_many(
        &mut self,
        x: &CudaBuf,
        norm: RmsNorm<'_, Self>,
        width: usize,
        t: usize,
        normed: &mut CudaBuf,
        outs: &mut [(&CudaMat, &mut CudaBuf)],
    ) {
        let folds = self.folds_input_norm()
            && outs.iter().all(|(w, _)| w.cols == width)
            && Gpu::can_fuse(width, t, outs.iter().map(|(w, _)| w.rows));
        if !folds {
            self.rms_norm(x, norm, t, width, normed);
            return self.matmul_many(normed, t, outs);
        }
        let rows: usize = outs.iter().map(|(w, _)| w.rows).sum();
        self.op(
            || format!("gemv {rows}x{width} fused, norm folded"),
            (rows * width * 2) as u64,
            |b| {
                let mut parts = projection_parts(outs)?;
                b.gpu.project_many(
                    x.f32()?,
                    width,
                    t,
                    &mut parts,
                    Some(FoldedNorm {
                        w: norm.w.bf16()?,
                        eps: norm.eps,
                    }),
                )
            },
        );
    }

    fn concat(
        &mut self,
        a: &CudaBuf,
        bb: &CudaBuf,
        t: usize,
        wa: usize,
        wb: usize,
        out: &mut CudaBuf,
    ) {
        self.op(
            || "concat".into(),
            0,
            |b| {
                let s = &b.gpu.stream;
                let (a, bp) = (
                    super::args::input("concat a", a.f32()?, t * wa, s)?,
                    super::args::input("concat b", bb.f32()?, t * wb, s)?,
                );
                let o = super::args::output("concat output", out.f32_mut()?, t * (wa + wb), s)?;
                let cfg = LaunchConfig {
                    grid_dim: ((wa + wb).div_ceil(256) as u32, t as u32, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                };
                launch!(
                    b.gpu,
                    "concat_rows",
                    cfg,
                    &a,
                    &bp,
                    &o,
                    &dim("width a", wa)?,
                    &dim("width b", wb)?
                );
                Ok(())
            },
        );
    }

    fn gdn_conv(
        &mut self,
        cfg: &ModelConfig,
        w: &GdnWeights<Self>,
        state: &mut GdnState<'_, Self>,
        x: &CudaBuf,
        t: usize,
        out: &mut CudaBuf,
    ) {
        let c = cfg.conv_channels();
        let slots = state.conv;
        self.op(
            || "gdn_conv".into(),
            (2 * cfg.conv_slot_bytes()) as u64,
            |b| {
                let s = &b.gpu.stream;
                let base = super::args::output("state pool", state.pool, 0, s)?;
                let xp = super::args::input("gdn conv input", x.f32()?, t * c, s)?;
                let wp = conv_taps(w.conv.bf16()?, c, s)?;
                let op = super::args::output("gdn conv output", out.f32_mut()?, t * c, s)?;
                b.gpu.gdn_conv_at(
                    xp,
                    wp,
                    base + slots.src as u64,
                    base + slots.dst as u64,
                    op,
                    t,
                    c,
                )
            },
        );
    }

    fn gdn_recurrence(
        &mut self,
        cfg: &ModelConfig,
        w: &GdnWeights<Self>,
        state: &mut GdnState<'_, Self>,
        proj: GdnProjections<'_, Self>,
        t: usize,
        out: &mut CudaBuf,
    ) {
        let bufs = StepBuffers {
            proj,
            o: out,
            gate: None,
        };
        self.gdn_step(cfg, w, state, bufs, t, false);
    }

    /// One launch: the conv and the output norm run inside the step, and `out.conv` is left
    /// unwritten.
    fn gdn_conv_recurrence(
        &mut self,
        cfg: &ModelConfig,
        w: &GdnWeights<Self>,
        state: &mut GdnState<'_, Self>,
        proj: GdnProjections<'_, Self>,
        t: usize,
        out: GdnOutputs<'_, Self>,
    ) {
        let bufs = StepBuffers {
            proj,
            o: out.o,
            gate: out.gate,
        };
        self.gdn_step(cfg, w, state, bufs, t, true);
    }

    fn gated_norm(
        &mut self,
        cfg: &ModelConfig,
        w: &GdnWeights<Self>,
        o: &CudaBuf,
        gate: GdnGate<'_, Self>,
        t: usize,
    ) {
        let GdnGate { z, out } = gate;
        let (hv, dv, eps) = (cfg.gdn_value_heads, cfg.gdn_value_dim, cfg.rms_eps as f32);
        self.op(
            || "gated_norm".into(),
            0,
            |b| {
                b.gpu.rmsnorm_gated(
                    o.f32()?,
                    z.f32()?,
                    w.norm.bf16()?,
                    out.f32_mut()?,
                    t * hv,
                    dv,
                    eps,
                )
            },
        );
    }

    fn attention(
        &mut self,
        cfg: &ModelConfig,
        w: &AttnWeights<Self>,
        proj: AttnProjections<'_, Self>,
        caches: AttnCaches<'_, Self>,
        t: usize,
        out: &mut CudaBuf,
    ) {
        // Keys and values read: the live context at the last position, both caches.
        let bytes = 2 * (caches.pos0 + t) * cfg.attn_kv_heads * cfg.attn_head_dim * 2;
        self.op(
            || "attention".into(),
            bytes as u64,
            |b| b.attention_groups(w, proj, caches, t, out),
        );
    }

    fn ffn_add(
        &mut self,
        cfg: &ModelConfig,
        w: &FfnWeights<Self>,
        x: &CudaBuf,
        t: usize,
        acc: &mut CudaBuf,
    ) {
        self.ffn(cfg, w, FfnInput::Rows(x), t, acc);
    }

    fn norm_ffn_add(
        &mut self,
        cfg: &ModelConfig,
        w: &FfnWeights<Self>,
        norm: RmsNorm<'_, Self>,
        t: usize,
        normed: &mut CudaBuf,
        x: &mut CudaBuf,
    ) {
        if self.ffn_folds_norm(w, t) {
            return self.ffn(cfg, w, FfnInput::Residual(norm), t, x);
        }
        self.rms_norm(x, norm, t, cfg.hidden, normed);
        self.ffn_add(cfg, w, normed, t, x);
    }

    /// A decode MoE after its layer's output projection has the router's logits computed in
    /// the projection's launch and only the routing in a launch of its own
    /// (`ENGINE_ROUTER_IN_OUT`); anything else runs step by step.
    fn out_norm_ffn_add(
        &mut self,
        cfg: &ModelConfig,
        layer: OutFfn<'_, Self>,
        t: usize,
        normed: &mut CudaBuf,
        x: &mut CudaBuf,
        between: impl FnOnce(&mut Self),
    ) {
        let key = layer.out.data.device_ptr(&self.gpu.stream).0;
        let through_bytes = self.through_out.get(&key).map(RouterThroughOut::bytes);
        let (Some(through_bytes), true) = (through_bytes, (1..=MAX_T).contains(&t)) else {
            return out_then_norm_ffn(self, cfg, layer, t, normed, x, between);
        };
        between(self);
        let h = cfg.hidden;
        // The projection, the router carried through it, and the MoE.
        let bytes = 2 * h * layer.out.cols + through_bytes + moe_step_bytes(layer.ffn, cfg);
        self.op(
            || {
                format!(
                    "gemv {}x{} += with the router's rows, and moe",
                    h, layer.out.cols
                )
            },
            bytes as u64,
            |b| b.out_moe_add(&layer, key, t, x),
        );
    }

    fn derive_weights(&mut self, cfg: &ModelConfig, w: &Weights<Self>) -> Result<()> {
        if !self.gpu.options.router_in_out {
            return Ok(());
        }
        for lw in w.layers.iter().chain([&w.mtp.layer]) {
            self.derive_through_out(cfg, lw)?;
        }
        self.gpu
            .synchronize()
            .context("making the router through the output projections")
    }

    fn lm_head_argmax(
        &mut self,
        head: &CudaMat,
        x: &CudaBuf,
        row0: usize,
        rows: usize,
        out: &mut CudaSlice<i32>,
        at: usize,
    ) {
        let (v, h) = (head.rows, head.cols);
        self.op(
            || "lm_head_argmax".into(),
            (v * h * 2) as u64,
            |b| {
                let p = b.prep.as_mut().context("prepare() first")?;
                let x = x.f32()?.slice(row0 * h..(row0 + rows) * h);
                b.gpu.lm_head_argmax(
                    &head.data,
                    &x,
                    &mut p.argmax,
                    &mut out.slice_mut(at..at + rows),
                    v,
                    h,
                    rows,
                )
            },
        );
    }

    /// The software prefetch arms are CPU arms: the GPU path has none and reports `off`.
    fn prefetch_state(
        &mut self,
        _pool: &CudaSlice<u8>,
        _offset: usize,
        _bytes: usize,
        _mode: Prefetch,
    ) {
    }

    fn prefetch_counts(&self) -> PrefetchCounts {
        PrefetchCounts::default()
    }

    /// The GPU's op clock is the timeline: its kernels note every launch, so only a device
    /// opened with one can time them.
    fn start_op_clock(&mut self) -> Result<()> {
        let stream = self.gpu.stream.clone();
        self.gpu
            .timeline
            .as_mut()
            .context(NO_TIMELINE)?
            .reset(&stream)
    }

    fn read_op_clock(&mut self) -> Result<Vec<OpTime>> {
        self.take_error()?;
        let timeline = self.gpu.timeline.as_ref().context(NO_TIMELINE)?;
        timeline.kernel_times(&self.gpu.stream)
    }
}

const NO_TIMELINE: &str = "the GPU's op clock is its timeline, and this device was opened \
     without one: open it with Gpu::with_timeline (engine bench --rows ops does)";

/// Bytes one position's decode MoE reads: the router, the routed experts and the shared expert.
fn moe_step_bytes(w: &FfnWeights<CudaBackend>, cfg: &ModelConfig) -> usize {
    let s = moe_weights(w, cfg).1;
    2 * s.hidden * (s.experts + 1 + 3 * (s.top_k * s.expert_dim + s.shared_dim))
}

/// The device views of an MoE layer's weights, and its shape.
fn moe_weights<'a>(
    w: &'a FfnWeights<CudaBackend>,
    cfg: &ModelConfig,
) -> (MoeWeights<'a, CudaSlice<bf16>>, MoeShape) {
    let FfnWeights::Moe(moe) = w else {
        unreachable!("called for MoE only")
    };
    let Ffn::Moe {
        experts: e,
        expert_size,
        shared_size,
        ..
    } = cfg.ffn
    else {
        unreachable!("MoE config")
    };
    let shape = MoeShape {
        experts: e,
        top_k: moe.top_k,
        hidden: cfg.hidden,
        expert_dim: expert_size,
        shared_dim: shared_size,
    };
    let weights = MoeWeights {
        router: &moe.router.data,
        gate: &moe.experts.gate.data,
        up: &moe.experts.up.data,
        down: &moe.experts.down.data,
        shared_gate: &moe.shared.gate.data,
        shared_up: &moe.shared.up.data,
        shared_down: &moe.shared.down.data,
        shared_expert_gate: &moe.shared_gate.data,
    };
    (weights, shape)
}

#[cfg(test)]
mod tests {
    use super::check_shape;
    use crate::config::ModelConfig;

    #[test]
    fn shapes_past_the_kernels_are_rejected_naming_the_limit() {
        for preset in ["qwen3.6-35b-a3b", "dense-27b"] {
            check_shape(&ModelConfig::preset(preset).unwrap()).unwrap();
        }
        let mut cfg = ModelConfig::preset("qwen3.6-35b-a3b").unwrap();
        (cfg.gdn_key_heads, cfg.gdn_value_heads) = (4, 32);
        let err = format!(
            "{:#}",
            check_shape(&cfg).expect_err("8 value heads per key head passed")
        );
        assert!(
            err.contains("8 value heads per key head") && err.contains("at most 4"),
            "{err}"
        );
    }
}
