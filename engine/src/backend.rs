//! The seam between the model and a device: the blocks a forward pass is made of.
//!
//! The model (`model.rs`) composes these operations; a backend implements them on its
//! device. Buffers are preallocated once and reused every round: every operation works on
//! the first `t` rows of its buffers (row-major `[t][width]`), so a round needs no
//! allocation and no host round trip except `read_tokens` for the acceptance decision.
//! Arguments that travel together come as one struct: a norm's weights and epsilon
//! ([`RmsNorm`]), a GDN call's state ([`GdnState`]), projections ([`GdnProjections`]) and
//! outputs ([`GdnOutputs`]), an attention call's projections ([`AttnProjections`]) and caches
//! ([`AttnCaches`]), a layer's output projection and FFN ([`OutFfn`]).

use crate::config::ModelConfig;
use crate::options::Prefetch;
use crate::pad::PadTally;
use crate::state::PoolMap;
use crate::weights::{AttnWeights, FfnWeights, GdnWeights, WeightStore, Weights};
use anyhow::Result;

/// Where one GDN layer's state lives in the pool for one call: the slot read and the slot
/// written (equal for an in-place update), as byte offsets into the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotPair {
    pub src: usize,
    pub dst: usize,
}

/// One decode round's launch sequence: what a graph is captured for. The live slot is part
/// of the key because the slot offsets are baked into the launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RoundKey {
    /// One plain greedy step, its token fed to the next step ([`Backend::feed_next`]).
    Plain { live: usize },
    /// MTP catch-up over `catch_up` queued inputs, `k` drafts, and the verify pass.
    Spec {
        live: usize,
        k: usize,
        catch_up: usize,
    },
    /// The GDN replay of an accepted prefix of `rows` positions.
    Replay { live: usize, rows: usize },
}

impl RoundKey {
    /// The state slot the round reads.
    pub fn live(&self) -> usize {
        match *self {
            RoundKey::Plain { live }
            | RoundKey::Spec { live, .. }
            | RoundKey::Replay { live, .. } => live,
        }
    }
}

/// A zero-centred RMSNorm, `x̂·(1 + w)`: its weights and epsilon.
pub struct RmsNorm<'a, B: Backend> {
    pub w: &'a B::Buf,
    pub eps: f32,
}

/// One GDN layer's state for a call: the pool, and the conv and recurrent state slots read
/// and written.
pub struct GdnState<'a, B: Backend> {
    pub pool: &'a mut B::Pool,
    pub conv: SlotPair,
    pub rec: SlotPair,
}

/// A GDN layer's projections of `t` positions: q‖k‖v, and the raw `b` and `a` of the gates.
pub struct GdnProjections<'a, B: Backend> {
    pub qkv: &'a B::Buf,
    pub b: &'a B::Buf,
    pub a: &'a B::Buf,
}

/// The GDN output norm's gate `z`, and where `w · rmsnorm(o) · silu(z)` goes.
pub struct GdnGate<'a, B: Backend> {
    pub z: &'a B::Buf,
    pub out: &'a mut B::Buf,
}

/// What a GDN layer's conv and recurrence write ([`Backend::gdn_conv_recurrence`]): the conv
/// output, the recurrence's output `o`, and with `gate` its output norm.
pub struct GdnOutputs<'a, B: Backend> {
    pub conv: &'a mut B::Buf,
    pub o: &'a mut B::Buf,
    pub gate: Option<GdnGate<'a, B>>,
}

/// An attention layer's projections of `t` positions: q_proj's output `qg` (per head the
/// query, then its gate), `k` and `v`.
pub struct AttnProjections<'a, B: Backend> {
    pub qg: &'a B::Buf,
    pub k: &'a B::Buf,
    pub v: &'a B::Buf,
}

/// The caches an attention call works on: the rotary table, and the layer's KV cache, which
/// the call extends at `pos0..pos0 + t` and attends over up to there.
pub struct AttnCaches<'a, B: Backend> {
    pub rope: &'a B::Buf,
    pub kv: &'a mut KvCache<B>,
    pub pos0: usize,
}

/// A layer's mixer output and what follows it: the output projection, then the FFN of the
/// normalised stream ([`Backend::out_norm_ffn_add`]).
pub struct OutFfn<'a, B: Backend> {
    pub out: &'a B::Mat,
    pub mixed: &'a B::Buf,
    pub ffn: &'a FfnWeights<B>,
    pub norm: RmsNorm<'a, B>,
}

/// [`Backend::out_norm_ffn_add`] step by step: the projection, `between`, the FFN.
pub fn out_then_norm_ffn<B: Backend>(
    b: &mut B,
    cfg: &ModelConfig,
    layer: OutFfn<'_, B>,
    t: usize,
    normed: &mut B::Buf,
    x: &mut B::Buf,
    between: impl FnOnce(&mut B),
) {
    b.matmul_add(layer.out, layer.mixed, t, x);
    between(b);
    b.norm_ffn_add(cfg, layer.ffn, layer.norm, t, normed, x);
}

/// A device's blocks, on the buffers and weight matrices of its [`WeightStore`].
pub trait Backend: WeightStore + Sized {
    /// A u32 token buffer.
    type Tok;
    /// The raw state pool: bf16 conv state and f32 recurrent state at byte offsets.
    type Pool;

    /// "cpu" or "cuda".
    fn name(&self) -> &'static str;
    /// Sizes the backend's internal scratch for `cfg` and batches of up to `max_rows`.
    fn prepare(&mut self, cfg: &ModelConfig, max_rows: usize) -> Result<()>;

    fn alloc(&mut self, len: usize) -> Result<Self::Buf>;
    fn alloc_tokens(&mut self, len: usize) -> Result<Self::Tok>;
    /// The state pool of `map.total_bytes()`, laid out as `map` says.
    fn alloc_pool(&mut self, map: &PoolMap) -> Result<Self::Pool>;
    fn upload(&mut self, host: &[f32]) -> Result<Self::Buf>;
    /// A KV cache of `len` elements (the backend picks its element type and layout).
    fn alloc_cache(&mut self, len: usize) -> Result<Self::Buf>;
    /// Copies the first `len` values of a buffer to the host (tests and inspection).
    fn read_buf(&mut self, src: &Self::Buf, len: usize) -> Vec<f32>;
    /// The first error a device operation hit since the last call (operations enqueue
    /// without returning errors so that a round can be recorded as one graph).
    fn take_error(&mut self) -> Result<()> {
        Ok(())
    }
    /// Sets the base of the positions the following operations address: `attention` may
    /// take `pos0` in `base − max_rows ..= base + max_rows` (the MTP catch-up of a round
    /// starts before the round's position). Called outside rounds, so that a recorded round
    /// replays at the new position; a backend may skip the write when a plain step
    /// ([`Backend::feed_next`]) already advanced its position to `base`.
    fn set_positions(&mut self, _base: usize) {}
    /// Runs `body`, one decode round reaching the backend through `backend(m)`. A backend
    /// may record the round the first time a key is seen and replay the recording after:
    /// `body` must only enqueue operations (no host transfers, no host-side state changes),
    /// and per-round inputs must already sit in device buffers.
    fn round<M>(
        m: &mut M,
        backend: fn(&mut M) -> &mut Self,
        key: RoundKey,
        body: impl FnOnce(&mut M),
    ) {
        let _ = (backend, key);
        body(m)
    }
    /// Pads every round from now on, in the rounds recorded before too, by `fraction` of its
    /// own time (`ENGINE_DECODE_PAD_PCT`, the rule of [`crate::pad`]). Called outside rounds,
    /// the first time before the first round.
    fn set_round_pad(&mut self, fraction: f64) -> Result<()>;
    /// Marks the start of a padded decode round: its first operation.
    fn start_round(&mut self);
    /// Waits the pad of the round begun at [`Backend::start_round`] once the work enqueued
    /// before has run: the last operation of a padded decode round.
    fn pad_round(&mut self);
    /// What the pads counted since the last call (or since [`Backend::set_round_pad`]).
    fn take_pad_tally(&mut self) -> Result<PadTally>;
    /// Zeroes the whole pool (a new sequence starts from a zero state).
    fn clear_pool(&mut self, pool: &mut Self::Pool);
    fn write_tokens(&mut self, dst: &mut Self::Tok, at: usize, host: &[u32]);
    /// Blocks until the device is done, then copies tokens to the host.
    fn read_tokens(&mut self, src: &Self::Tok, at: usize, host: &mut [u32]);
    /// The end of a plain step at position `pos`, done where the tokens live: the step's
    /// token `tok_out[0]` becomes the next step's input `tok_in[0]` and is kept at
    /// `history[pos + 1]`, and the round's position advances to `pos + 1`. So the next step
    /// can be queued before this one's token is read back (the GPU reads its own position,
    /// which equals `pos` when the step is recorded).
    fn feed_next(
        &mut self,
        tok_out: &Self::Tok,
        tok_in: &mut Self::Tok,
        history: &mut Self::Tok,
        pos: usize,
    );
    /// `dst[dst_row + i] = src[src_row + i]` for `rows` rows of `width`.
    fn copy_rows(
        &mut self,
        src: &Self::Buf,
        src_row: usize,
        dst: &mut Self::Buf,
        dst_row: usize,
        rows: usize,
        width: usize,
    );

    /// `out[i] = table[tok[at + i]]` for `t` rows.
    fn embed(
        &mut self,
        table: &Self::Mat,
        tok: &Self::Tok,
        at: usize,
        t: usize,
        out: &mut Self::Buf,
    );
    /// Zero-centred RMSNorm per row: `out = x / rms(x) · (1 + w)`.
    fn rms_norm(
        &mut self,
        x: &Self::Buf,
        norm: RmsNorm<'_, Self>,
        t: usize,
        width: usize,
        out: &mut Self::Buf,
    );
    /// `out[i] = W · x[i]` for `t` rows (`x` rows of `cols`, `out` rows of `rows`).
    fn matmul(&mut self, w: &Self::Mat, x: &Self::Buf, t: usize, out: &mut Self::Buf);
    /// `out[i] = W · x[i]` for each `(W, out)` of `outs`: projections of one input, which a
    /// backend may run as one pass over the concatenated rows.
    fn matmul_many(&mut self, x: &Self::Buf, t: usize, outs: &mut [(&Self::Mat, &mut Self::Buf)]) {
        for (w, out) in outs.iter_mut() {
            self.matmul(w, x, t, out);
        }
    }
    /// `outs[j][i] = W_j · rmsnorm(x[i])`: [`Backend::rms_norm`] of `x` (rows of `width`)
    /// into `normed`, then [`Backend::matmul_many`] of it. A backend may fold the norm into
    /// the projections instead, leaving `normed` unwritten.
    fn norm_matmul_many(
        &mut self,
        x: &Self::Buf,
        norm: RmsNorm<'_, Self>,
        width: usize,
        t: usize,
        normed: &mut Self::Buf,
        outs: &mut [(&Self::Mat, &mut Self::Buf)],
    ) {
        self.rms_norm(x, norm, t, width, normed);
        self.matmul_many(normed, t, outs);
    }
    /// `acc[i] += W · x[i]` for `t` rows: a projection into the residual stream.
    fn matmul_add(&mut self, w: &Self::Mat, x: &Self::Buf, t: usize, acc: &mut Self::Buf);
    /// `out[i] = a[i] ‖ b[i]` (the MTP fc input), rows of `wa` and `wb`.
    fn concat(
        &mut self,
        a: &Self::Buf,
        b: &Self::Buf,
        t: usize,
        wa: usize,
        wb: usize,
        out: &mut Self::Buf,
    );

    /// GDN causal depthwise conv + SiLU over `t` positions of the projected q‖k‖v `x`,
    /// reading the conv state (bf16, last `kernel − 1` inputs) at `state.conv.src` and
    /// writing it at `state.conv.dst`.
    fn gdn_conv(
        &mut self,
        cfg: &ModelConfig,
        w: &GdnWeights<Self>,
        state: &mut GdnState<'_, Self>,
        x: &Self::Buf,
        t: usize,
        out: &mut Self::Buf,
    );
    /// GDN gates and recurrence over `t` positions: from the conv output `proj.qkv` and the
    /// raw `b`, `a` projections, reads the recurrent state at `state.rec.src`, writes it at
    /// `state.rec.dst` and returns `o = Sᵀq̂` per value head in `out`.
    fn gdn_recurrence(
        &mut self,
        cfg: &ModelConfig,
        w: &GdnWeights<Self>,
        state: &mut GdnState<'_, Self>,
        proj: GdnProjections<'_, Self>,
        t: usize,
        out: &mut Self::Buf,
    );
    /// GDN output norm per value head: `gate.out = w · rmsnorm(o) · silu(gate.z)`.
    fn gated_norm(
        &mut self,
        cfg: &ModelConfig,
        w: &GdnWeights<Self>,
        o: &Self::Buf,
        gate: GdnGate<'_, Self>,
        t: usize,
    );
    /// A GDN layer's conv and recurrence from its projections (q‖k‖v before the conv):
    /// [`Backend::gdn_conv`] into `out.conv`, [`Backend::gdn_recurrence`] of it into `out.o`,
    /// then with `out.gate` [`Backend::gated_norm`] of `o`. A backend may run all three in one
    /// pass, leaving `out.conv` unwritten.
    fn gdn_conv_recurrence(
        &mut self,
        cfg: &ModelConfig,
        w: &GdnWeights<Self>,
        state: &mut GdnState<'_, Self>,
        proj: GdnProjections<'_, Self>,
        t: usize,
        out: GdnOutputs<'_, Self>,
    ) {
        self.gdn_conv(cfg, w, state, proj.qkv, t, out.conv);
        let convolved = GdnProjections {
            qkv: &*out.conv,
            ..proj
        };
        self.gdn_recurrence(cfg, w, state, convolved, t, out.o);
        if let Some(gate) = out.gate {
            self.gated_norm(cfg, w, out.o, gate, t);
        }
    }
    /// Gated full attention for `t` positions starting at `caches.pos0`: q/k RMSNorm, partial
    /// rotary, write k/v into the cache at `pos0..pos0+t`, causal GQA over the cache,
    /// `sigmoid(gate) ⊙ attn`.
    fn attention(
        &mut self,
        cfg: &ModelConfig,
        w: &AttnWeights<Self>,
        proj: AttnProjections<'_, Self>,
        caches: AttnCaches<'_, Self>,
        t: usize,
        out: &mut Self::Buf,
    );
    /// The feed-forward block added onto the residual stream `acc`: MoE (softmax router,
    /// top-k renormalised, SwiGLU experts, sigmoid-gated shared expert) or dense SwiGLU.
    fn ffn_add(
        &mut self,
        cfg: &ModelConfig,
        w: &FfnWeights<Self>,
        x: &Self::Buf,
        t: usize,
        acc: &mut Self::Buf,
    );
    /// `x[i] += ffn(rmsnorm(x[i]))` over the residual stream `x`: [`Backend::rms_norm`] into
    /// `normed`, then [`Backend::ffn_add`] of it. A backend may fold the norm into the FFN
    /// instead, leaving `normed` unwritten.
    fn norm_ffn_add(
        &mut self,
        cfg: &ModelConfig,
        w: &FfnWeights<Self>,
        norm: RmsNorm<'_, Self>,
        t: usize,
        normed: &mut Self::Buf,
        x: &mut Self::Buf,
    ) {
        self.rms_norm(x, norm, t, cfg.hidden, normed);
        self.ffn_add(cfg, w, normed, t, x);
    }
    /// `x += out · mixed` (a mixer's output projection onto the residual stream), `between`,
    /// then [`Backend::norm_ffn_add`]. `between` is what the caller runs after the projection
    /// (the CPU's prefetch arm); a backend that computes the FFN's first step in the
    /// projection's launch runs it before both.
    fn out_norm_ffn_add(
        &mut self,
        cfg: &ModelConfig,
        layer: OutFfn<'_, Self>,
        t: usize,
        normed: &mut Self::Buf,
        x: &mut Self::Buf,
        between: impl FnOnce(&mut Self),
    ) {
        out_then_norm_ffn(self, cfg, layer, t, normed, x, between);
    }
    /// Weights the backend makes from the model's once they are loaded, for its own kernels
    /// (none by default).
    fn derive_weights(&mut self, _cfg: &ModelConfig, _w: &Weights<Self>) -> Result<()> {
        Ok(())
    }
    /// `out[at + i] = argmax(head · x[row0 + i])` for `rows` rows (lowest index on ties).
    fn lm_head_argmax(
        &mut self,
        head: &Self::Mat,
        x: &Self::Buf,
        row0: usize,
        rows: usize,
        out: &mut Self::Tok,
        at: usize,
    );

    /// Arms a prefetch of `bytes` of the pool at byte `offset`, issued while the next
    /// weight-streaming operations run (ENGINE_PREFETCH selects real, null or decoy).
    fn prefetch_state(&mut self, pool: &Self::Pool, offset: usize, bytes: usize, mode: Prefetch);
    /// What the prefetch path did since the backend was created (counted, not requested).
    fn prefetch_counts(&self) -> PrefetchCounts;

    /// Starts the op clock, forgetting what it timed before: from now on the backend times
    /// every operation (the CPU) or kernel launch (a GPU opened with a timeline,
    /// [`crate::cuda::Gpu::with_timeline`]), for `engine bench --rows ops`. Called outside
    /// rounds.
    fn start_op_clock(&mut self) -> Result<()>;
    /// What the op clock timed since [`Backend::start_op_clock`], one entry per operation or
    /// kernel, in no particular order; waits for the queued work, and stops the clock where it
    /// can be stopped (the GPU's kernels note every launch as long as they run).
    fn read_op_clock(&mut self) -> Result<Vec<OpTime>>;
}

/// What the op clock timed of one operation or kernel ([`Backend::read_op_clock`]).
#[derive(Clone, Debug, PartialEq)]
pub struct OpTime {
    /// The operation's or kernel's name, the same in every run.
    pub name: String,
    /// Its calls (CPU) or launches (CUDA).
    pub calls: u64,
    pub seconds: f64,
}

/// Prefetch activity, counted where it happens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrefetchCounts {
    /// The mode the prefetch path was last armed with (`Off` if never armed).
    pub mode: Prefetch,
    /// Bytes the armed path walked (null arms walk without issuing).
    pub walked_bytes: u64,
    /// Bytes for which a prefetch instruction was issued.
    pub issued_bytes: u64,
}

/// One attention layer's KV cache, `[max_context][kv_heads][head_dim]` for k and for v.
pub struct KvCache<B: Backend> {
    pub k: B::Buf,
    pub v: B::Buf,
}
