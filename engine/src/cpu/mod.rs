//! The CPU backend: f32 math on bf16-exact weights, rayon over weight rows and heads.

mod clock;
mod kernels;
mod prefetch;

use crate::backend::{
    AttnCaches, AttnProjections, Backend, GdnGate, GdnProjections, GdnState, OpTime,
    PrefetchCounts, RmsNorm,
};
use crate::config::{ModelConfig, MAX_GDN_DIM};
use crate::options::{CpuOp, Prefetch, SlowOp};
use crate::pad::{HostPad, PadTally};
use crate::state::PoolMap;
use crate::synthetic::{round_bf16, synthetic_value, Init};
use crate::weights::{AttnWeights, FfnWeights, GdnWeights, MoeWeights, SwiGlu, WeightStore};
use anyhow::Result;
use clock::OpClock;
use kernels::{argmax, dot};
use kernels::{inv_rms, l2_normalize, matmul, rms_norm_row, sigmoid, silu, softplus};
use prefetch::Prefetcher;
use rayon::prelude::*;

pub struct CpuMat {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f32>,
}

/// Preallocated scratch, sized by `prepare`.
#[derive(Default)]
struct Scratch {
    /// Conv window: `kernel − 1` history rows then the `t` new rows, bf16-rounded.
    window: Vec<f32>,
    scores: Vec<f32>,
    head: Vec<f32>,
    logits: Vec<f32>,
    moe: MoeScratch,
}

#[derive(Default)]
struct MoeScratch {
    router: Vec<f32>,
    /// Per (row, k): chosen expert and its renormalised weight.
    choice: Vec<(usize, f32)>,
    /// Rows routed to the current expert and the (row, k) slot each fills.
    members: Vec<(usize, usize)>,
    gathered: Vec<f32>,
    gate: Vec<f32>,
    up: Vec<f32>,
    down: Vec<f32>,
    /// Expert outputs per (row, k), summed in k order at the end.
    per_slot: Vec<f32>,
    shared: Vec<f32>,
    shared_gate: Vec<f32>,
    /// A projection's output before it is added to the residual stream.
    residual: Vec<f32>,
}

#[derive(Default)]
pub struct CpuBackend {
    scratch: Scratch,
    prefetch: Prefetcher,
    /// The decode pad (`ENGINE_DECODE_PAD_PCT`), once set.
    pad: Option<HostPad>,
    /// The clock around each operation (`--rows ops`, `ENGINE_SLOW_OP`): every operation
    /// opens it first, and the guard it returns closes it when the operation ends.
    clock: OpClock,
}

impl CpuBackend {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stretches every call of `slow.op` from now on (`ENGINE_SLOW_OP`).
    pub fn slow_op(&mut self, slow: SlowOp) {
        self.clock.slow(slow);
    }
}

/// The pool as raw words: byte offsets are 4-aligned (conv slots are an even number of
/// bf16 values), so one `Vec<u32>` holds both the bf16 and the f32 regions.
fn pool_u16(pool: &mut [u32], byte_off: usize, len: usize) -> *mut u16 {
    debug_assert!(byte_off.is_multiple_of(4) && byte_off + 2 * len <= 4 * pool.len());
    (pool.as_mut_ptr() as *mut u8).wrapping_add(byte_off) as *mut u16
}

fn pool_f32(pool: &mut [u32], byte_off: usize, len: usize) -> *mut f32 {
    debug_assert!(byte_off.is_multiple_of(4) && byte_off + 4 * len <= 4 * pool.len());
    (pool.as_mut_ptr() as *mut u8).wrapping_add(byte_off) as *mut f32
}

#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}

impl WeightStore for CpuBackend {
    type Buf = Vec<f32>;
    type Mat = CpuMat;

    fn upload_weights(&mut self, host: &[f32]) -> Result<Vec<f32>> {
        Ok(host.to_vec())
    }

    fn alloc_mat(&mut self, rows: usize, cols: usize) -> Result<CpuMat> {
        Ok(CpuMat {
            rows,
            cols,
            data: vec![0.0; rows * cols],
        })
    }

    fn write_mat_rows(&mut self, m: &mut CpuMat, row0: usize, host: &[f32]) -> Result<()> {
        m.data[row0 * m.cols..row0 * m.cols + host.len()].copy_from_slice(host);
        Ok(())
    }

    fn fill_mat_synthetic(
        &mut self,
        m: &mut CpuMat,
        row0: usize,
        rows: usize,
        seed: u64,
        key: u64,
        init: Init,
    ) -> Result<()> {
        let cols = m.cols;
        let dst = &mut m.data[row0 * cols..(row0 + rows) * cols];
        dst.par_chunks_mut(cols).enumerate().for_each(|(r, row)| {
            for (c, v) in row.iter_mut().enumerate() {
                *v = synthetic_value(seed, key, (r * cols + c) as u64, init.scale, init.offset);
                if init.identity != 0.0 && r == c {
                    *v = round_bf16(*v + init.identity);
                }
            }
        });
        Ok(())
    }
}

impl Backend for CpuBackend {
    type Tok = Vec<u32>;
    type Pool = Vec<u32>;

    fn name(&self) -> &'static str {
        "cpu"
    }

    fn prepare(&mut self, cfg: &ModelConfig, max_rows: usize) -> Result<()> {
        let (h, c) = (cfg.hidden, cfg.conv_channels());
        let s = &mut self.scratch;
        s.window = vec![0.0; (cfg.conv_kernel - 1 + max_rows) * c];
        s.scores = vec![0.0; cfg.max_context];
        s.head = vec![0.0; cfg.attn_head_dim];
        s.logits = vec![0.0; cfg.vocab];
        let (experts, top_k, inter) = match cfg.ffn {
            crate::config::Ffn::Moe {
                experts,
                top_k,
                expert_size,
                shared_size,
            } => (experts, top_k, expert_size.max(shared_size)),
            crate::config::Ffn::Dense { size } => (1, 1, size),
        };
        let rk = max_rows * top_k;
        s.moe = MoeScratch {
            router: vec![0.0; max_rows * experts],
            choice: vec![(0, 0.0); rk],
            members: Vec::with_capacity(rk),
            gathered: vec![0.0; rk * h],
            gate: vec![0.0; rk * inter],
            up: vec![0.0; rk * inter],
            down: vec![0.0; rk * h],
            per_slot: vec![0.0; rk * h],
            shared: vec![0.0; max_rows * h],
            shared_gate: vec![0.0; max_rows],
            residual: vec![0.0; max_rows * h],
        };
        self.prefetch
            .reserve_decoy(cfg.conv_slot_bytes() + cfg.rec_slot_bytes() + 2 * prefetch::LINE);
        Ok(())
    }

    fn alloc(&mut self, len: usize) -> Result<Vec<f32>> {
        Ok(vec![0.0; len])
    }

    fn alloc_tokens(&mut self, len: usize) -> Result<Vec<u32>> {
        Ok(vec![0; len])
    }

    fn alloc_pool(&mut self, map: &PoolMap) -> Result<Vec<u32>> {
        Ok(vec![0; map.total_bytes().div_ceil(4)])
    }

    fn upload(&mut self, host: &[f32]) -> Result<Vec<f32>> {
        Ok(host.to_vec())
    }

    fn alloc_cache(&mut self, len: usize) -> Result<Vec<f32>> {
        Ok(vec![0.0; len])
    }

    fn read_buf(&mut self, src: &Vec<f32>, len: usize) -> Vec<f32> {
        src[..len].to_vec()
    }

    fn set_round_pad(&mut self, fraction: f64) -> Result<()> {
        self.pad = Some(HostPad::new(fraction));
        Ok(())
    }

    fn start_round(&mut self) {
        if let Some(pad) = &mut self.pad {
            pad.start_round();
        }
    }

    fn pad_round(&mut self) {
        let _clock = self.clock.around(CpuOp::PadRound);
        if let Some(pad) = &mut self.pad {
            pad.end_round();
        }
    }

    fn take_pad_tally(&mut self) -> Result<PadTally> {
        Ok(self
            .pad
            .as_mut()
            .map_or_else(PadTally::default, HostPad::take_tally))
    }

    fn clear_pool(&mut self, pool: &mut Vec<u32>) {
        pool.fill(0);
    }

    fn write_tokens(&mut self, dst: &mut Vec<u32>, at: usize, host: &[u32]) {
        let _clock = self.clock.around(CpuOp::WriteTokens);
        dst[at..at + host.len()].copy_from_slice(host);
    }

    fn read_tokens(&mut self, src: &Vec<u32>, at: usize, host: &mut [u32]) {
        let _clock = self.clock.around(CpuOp::ReadTokens);
        host.copy_from_slice(&src[at..at + host.len()]);
    }

    fn feed_next(
        &mut self,
        tok_out: &Vec<u32>,
        tok_in: &mut Vec<u32>,
        history: &mut Vec<u32>,
        pos: usize,
    ) {
        let _clock = self.clock.around(CpuOp::FeedNext);
        tok_in[0] = tok_out[0];
        history[pos + 1] = tok_out[0];
    }

    fn copy_rows(
        &mut self,
        src: &Vec<f32>,
        src_row: usize,
        dst: &mut Vec<f32>,
        dst_row: usize,
        rows: usize,
        width: usize,
    ) {
        let _clock = self.clock.around(CpuOp::CopyRows);
        dst[dst_row * width..(dst_row + rows) * width]
            .copy_from_slice(&src[src_row * width..(src_row + rows) * width]);
    }

    fn embed(&mut self, table: &CpuMat, tok: &Vec<u32>, at: usize, t: usize, out: &mut Vec<f32>) {
        let _clock = self.clock.around(CpuOp::Embed);
        let h = table.cols;
        for i in 0..t {
            let id = tok[at + i] as usize;
            out[i * h..(i + 1) * h].copy_from_slice(&table.data[id * h..(id + 1) * h]);
        }
    }

    fn rms_norm(
        &mut self,
        x: &Vec<f32>,
        norm: RmsNorm<'_, Self>,
        t: usize,
        width: usize,
        out: &mut Vec<f32>,
    ) {
        let _clock = self.clock.around(CpuOp::RmsNorm);
        for i in 0..t {
            rms_norm_row(
                &x[i * width..(i + 1) * width],
                norm.w,
                norm.eps,
                &mut out[i * width..(i + 1) * width],
            );
        }
    }

    fn matmul(&mut self, w: &CpuMat, x: &Vec<f32>, t: usize, out: &mut Vec<f32>) {
        let _clock = self.clock.around(CpuOp::Matmul);
        matmul(&w.data, w.rows, w.cols, x, t, out, &self.prefetch);
    }

    fn matmul_add(&mut self, w: &CpuMat, x: &Vec<f32>, t: usize, acc: &mut Vec<f32>) {
        let _clock = self.clock.around(CpuOp::MatmulAdd);
        let out = &mut self.scratch.moe.residual;
        matmul(&w.data, w.rows, w.cols, x, t, out, &self.prefetch);
        add(acc, out, t * w.rows);
    }

    fn concat(
        &mut self,
        a: &Vec<f32>,
        b: &Vec<f32>,
        t: usize,
        wa: usize,
        wb: usize,
        out: &mut Vec<f32>,
    ) {
        let _clock = self.clock.around(CpuOp::Concat);
        for i in 0..t {
            let o = &mut out[i * (wa + wb)..(i + 1) * (wa + wb)];
            o[..wa].copy_from_slice(&a[i * wa..(i + 1) * wa]);
            o[wa..].copy_from_slice(&b[i * wb..(i + 1) * wb]);
        }
    }

    fn gdn_conv(
        &mut self,
        cfg: &ModelConfig,
        w: &GdnWeights<Self>,
        state: &mut GdnState<'_, Self>,
        x: &Vec<f32>,
        t: usize,
        out: &mut Vec<f32>,
    ) {
        let _clock = self.clock.around(CpuOp::GdnConv);
        let (pool, slots) = (&mut *state.pool, state.conv);
        let (c, kern) = (cfg.conv_channels(), cfg.conv_kernel);
        let hist = kern - 1;
        let win = &mut self.scratch.window[..(hist + t) * c];
        // History taps are stored as bf16; new inputs are rounded the same way before they
        // serve as history, so any split of a sequence into calls gives the same values.
        // SAFETY: the slot regions lie inside the pool (PoolMap) and do not overlap scratch.
        let src =
            unsafe { std::slice::from_raw_parts(pool_u16(pool, slots.src, hist * c), hist * c) };
        for (d, s) in win[..hist * c].iter_mut().zip(src) {
            *d = half::bf16::from_bits(*s).to_f32();
        }
        for (d, s) in win[hist * c..].iter_mut().zip(&x[..t * c]) {
            *d = round_bf16(*s);
        }
        for i in 0..t {
            for ch in 0..c {
                let taps = &w.conv[ch * kern..(ch + 1) * kern];
                let mut acc = 0.0f32;
                for (j, tap) in taps[..hist].iter().enumerate() {
                    acc += tap * win[(i + j) * c + ch];
                }
                acc += taps[hist] * x[i * c + ch];
                out[i * c + ch] = silu(acc);
            }
        }
        let dst = unsafe {
            std::slice::from_raw_parts_mut(pool_u16(pool, slots.dst, hist * c), hist * c)
        };
        for (d, s) in dst.iter_mut().zip(&win[t * c..(t + hist) * c]) {
            *d = half::bf16::from_f32(*s).to_bits();
        }
    }

    #[allow(clippy::needless_range_loop)]
    fn gdn_recurrence(
        &mut self,
        cfg: &ModelConfig,
        w: &GdnWeights<Self>,
        state: &mut GdnState<'_, Self>,
        proj: GdnProjections<'_, Self>,
        t: usize,
        out: &mut Vec<f32>,
    ) {
        let _clock = self.clock.around(CpuOp::GdnRecurrence);
        let (pool, slots) = (&mut *state.pool, state.rec);
        let GdnProjections { qkv, b, a } = proj;
        let (hk, hv, dk, dv) = (
            cfg.gdn_key_heads,
            cfg.gdn_value_heads,
            cfg.gdn_key_dim,
            cfg.gdn_value_dim,
        );
        let c = cfg.conv_channels();
        let per_head = dk * dv;
        let src = SendPtr(pool_f32(pool, slots.src, hv * per_head));
        let dst = SendPtr(pool_f32(pool, slots.dst, hv * per_head));
        let outp = SendPtr(out.as_mut_ptr());
        let q_scale = 1.0 / (dk as f32).sqrt();
        (0..hv).into_par_iter().for_each(|h| {
            let (src, dst, outp) = (src, dst, outp);
            let kh = h / (hv / hk);
            // SAFETY: head `h` owns its own [K][V] block of both slots and its own output
            // columns; src and dst are either the same region or disjoint (PoolMap).
            let (s_src, s_dst) = unsafe { (src.0.add(h * per_head), dst.0.add(h * per_head)) };
            let (mut qa, mut ka, mut kva) = (
                [0f32; MAX_GDN_DIM],
                [0f32; MAX_GDN_DIM],
                [0f32; MAX_GDN_DIM],
            );
            let (q, k, kv) = (&mut qa[..dk], &mut ka[..dk], &mut kva[..dv]);
            for i in 0..t {
                let row = &qkv[i * c..(i + 1) * c];
                q.copy_from_slice(&row[kh * dk..(kh + 1) * dk]);
                k.copy_from_slice(&row[hk * dk + kh * dk..hk * dk + (kh + 1) * dk]);
                let v = &row[2 * hk * dk + h * dv..2 * hk * dk + (h + 1) * dv];
                l2_normalize(q, q_scale);
                l2_normalize(k, 1.0);
                let beta = sigmoid(b[i * hv + h]);
                let g = -w.a_log[h].exp() * softplus(a[i * hv + h] + w.dt_bias[h]);
                let alpha = g.exp();
                let from = if i == 0 { s_src } else { s_dst };
                kv.fill(0.0);
                for (kk, &kval) in k.iter().enumerate() {
                    for j in 0..dv {
                        // SAFETY: in bounds of this head's block.
                        unsafe {
                            let s = alpha * *from.add(kk * dv + j);
                            *s_dst.add(kk * dv + j) = s;
                            kv[j] += s * kval;
                        }
                    }
                }
                for (u, vj) in kv.iter_mut().zip(v) {
                    *u = beta * (vj - *u);
                }
                let o =
                    unsafe { std::slice::from_raw_parts_mut(outp.0.add(i * hv * dv + h * dv), dv) };
                o.fill(0.0);
                for (kk, (&kval, &qval)) in k.iter().zip(q.iter()).enumerate() {
                    for j in 0..dv {
                        unsafe {
                            let s = s_dst.add(kk * dv + j);
                            *s += kval * kv[j];
                            o[j] += *s * qval;
                        }
                    }
                }
            }
        });
    }

    fn gated_norm(
        &mut self,
        cfg: &ModelConfig,
        w: &GdnWeights<Self>,
        o: &Vec<f32>,
        gate: GdnGate<'_, Self>,
        t: usize,
    ) {
        let _clock = self.clock.around(CpuOp::GatedNorm);
        let GdnGate { z, out } = gate;
        let dv = cfg.gdn_value_dim;
        let eps = cfg.rms_eps as f32;
        for head in 0..t * cfg.gdn_value_heads {
            let r = head * dv..(head + 1) * dv;
            let k = inv_rms(&o[r.clone()], eps);
            for ((d, (ov, zv)), wv) in out[r.clone()]
                .iter_mut()
                .zip(o[r.clone()].iter().zip(&z[r]))
                .zip(&w.norm)
            {
                *d = wv * ov * k * silu(*zv);
            }
        }
    }

    fn attention(
        &mut self,
        cfg: &ModelConfig,
        w: &AttnWeights<Self>,
        proj: AttnProjections<'_, Self>,
        caches: AttnCaches<'_, Self>,
        t: usize,
        out: &mut Vec<f32>,
    ) {
        let _clock = self.clock.around(CpuOp::Attention);
        let AttnProjections { qg, k, v } = proj;
        let AttnCaches {
            rope,
            kv: cache,
            pos0,
        } = caches;
        let (hq, hkv, d) = (cfg.attn_heads, cfg.attn_kv_heads, cfg.attn_head_dim);
        let (rd, eps) = (cfg.rotary_dim(), cfg.rms_eps as f32);
        let kvw = hkv * d;
        let Scratch { head, scores, .. } = &mut self.scratch;
        let head = &mut head[..d];
        for i in 0..t {
            let pos = pos0 + i;
            for g in 0..hkv {
                let kr = &k[i * kvw + g * d..i * kvw + (g + 1) * d];
                rms_norm_row(kr, &w.k_norm, eps, head);
                rotate(head, &rope[pos * rd..(pos + 1) * rd]);
                cache.k[pos * kvw + g * d..pos * kvw + (g + 1) * d].copy_from_slice(head);
            }
            cache.v[pos * kvw..(pos + 1) * kvw].copy_from_slice(&v[i * kvw..(i + 1) * kvw]);
        }
        let scale = 1.0 / (d as f32).sqrt();
        for i in 0..t {
            let pos = pos0 + i;
            for h in 0..hq {
                let g = h / (hq / hkv);
                let base = i * 2 * hq * d + h * 2 * d;
                rms_norm_row(&qg[base..base + d], &w.q_norm, eps, head);
                rotate(head, &rope[pos * rd..(pos + 1) * rd]);
                let sc = &mut scores[..=pos];
                for (j, s) in sc.iter_mut().enumerate() {
                    *s = dot(head, &cache.k[j * kvw + g * d..j * kvw + (g + 1) * d]) * scale;
                }
                let m = sc.iter().fold(f32::NEG_INFINITY, |a, b| a.max(*b));
                let mut sum = 0.0;
                for s in sc.iter_mut() {
                    *s = (*s - m).exp();
                    sum += *s;
                }
                let o = &mut out[i * hq * d + h * d..i * hq * d + (h + 1) * d];
                o.fill(0.0);
                for (j, p) in sc.iter().enumerate() {
                    let vr = &cache.v[j * kvw + g * d..j * kvw + (g + 1) * d];
                    o.iter_mut().zip(vr).for_each(|(a, b)| *a += p * b);
                }
                let gate = &qg[base + d..base + 2 * d];
                o.iter_mut()
                    .zip(gate)
                    .for_each(|(a, gt)| *a = *a / sum * sigmoid(*gt));
            }
        }
    }

    fn ffn_add(
        &mut self,
        cfg: &ModelConfig,
        w: &FfnWeights<Self>,
        x: &Vec<f32>,
        t: usize,
        acc: &mut Vec<f32>,
    ) {
        let _clock = self.clock.around(CpuOp::FfnAdd);
        let h = cfg.hidden;
        let mut out = std::mem::take(&mut self.scratch.moe.residual);
        match w {
            FfnWeights::Dense(mlp) => {
                let s = &mut self.scratch.moe;
                swiglu(
                    Expert::whole(mlp),
                    x,
                    t,
                    &mut s.gate,
                    &mut s.up,
                    &mut out,
                    &self.prefetch,
                );
            }
            FfnWeights::Moe(m) => moe(&mut self.scratch.moe, &self.prefetch, m, x, t, &mut out),
        }
        add(acc, &out, t * h);
        self.scratch.moe.residual = out;
        self.prefetch.finish();
    }

    fn lm_head_argmax(
        &mut self,
        head: &CpuMat,
        x: &Vec<f32>,
        row0: usize,
        rows: usize,
        out: &mut Vec<u32>,
        at: usize,
    ) {
        let _clock = self.clock.around(CpuOp::LmHeadArgmax);
        let hd = head.cols;
        for i in 0..rows {
            let xi = &x[(row0 + i) * hd..(row0 + i + 1) * hd];
            matmul(
                &head.data,
                head.rows,
                hd,
                xi,
                1,
                &mut self.scratch.logits,
                &self.prefetch,
            );
            out[at + i] = argmax(&self.scratch.logits) as u32;
        }
    }

    fn prefetch_state(&mut self, pool: &Vec<u32>, offset: usize, bytes: usize, mode: Prefetch) {
        let _clock = self.clock.around(CpuOp::PrefetchState);
        debug_assert!(offset + bytes <= 4 * pool.len());
        let ptr = (pool.as_ptr() as *const u8).wrapping_add(offset);
        self.prefetch.arm(ptr, bytes, mode);
    }

    fn prefetch_counts(&self) -> PrefetchCounts {
        self.prefetch.counts()
    }

    fn start_op_clock(&mut self) -> Result<()> {
        self.clock.start();
        Ok(())
    }

    fn read_op_clock(&mut self) -> Result<Vec<OpTime>> {
        Ok(self.clock.read())
    }
}

/// Rotate-half rotary on the first `rope.len()` dims: `rope` holds cos then sin.
fn rotate(x: &mut [f32], rope: &[f32]) {
    let half = rope.len() / 2;
    let (cos, sin) = rope.split_at(half);
    for j in 0..half {
        let (a, b) = (x[j], x[j + half]);
        x[j] = a * cos[j] - b * sin[j];
        x[j + half] = b * cos[j] + a * sin[j];
    }
}

/// `acc += x` over `len` elements (the residual add).
fn add(acc: &mut [f32], x: &[f32], len: usize) {
    acc[..len]
        .iter_mut()
        .zip(&x[..len])
        .for_each(|(a, b)| *a += b);
}

/// One SwiGLU MLP's weights: slices of a (possibly stacked) [`SwiGlu`].
#[derive(Clone, Copy)]
struct Expert<'a> {
    gate: &'a [f32],
    up: &'a [f32],
    down: &'a [f32],
    inter: usize,
    hidden: usize,
}

impl<'a> Expert<'a> {
    fn whole(w: &'a SwiGlu<CpuBackend>) -> Self {
        Expert {
            gate: &w.gate.data,
            up: &w.up.data,
            down: &w.down.data,
            inter: w.gate.rows,
            hidden: w.gate.cols,
        }
    }

    /// Expert `e` of `n` stacked ones.
    fn nth(w: &'a SwiGlu<CpuBackend>, e: usize, n: usize) -> Self {
        let (inter, hidden) = (w.gate.rows / n, w.gate.cols);
        let m = inter * hidden;
        Expert {
            gate: &w.gate.data[e * m..(e + 1) * m],
            up: &w.up.data[e * m..(e + 1) * m],
            down: &w.down.data[e * m..(e + 1) * m],
            inter,
            hidden,
        }
    }
}

/// `out = down(silu(gate·x) ⊙ up·x)` for `t` rows.
fn swiglu(
    w: Expert<'_>,
    x: &[f32],
    t: usize,
    gate: &mut [f32],
    up: &mut [f32],
    out: &mut [f32],
    pf: &Prefetcher,
) {
    let (inter, h) = (w.inter, w.hidden);
    matmul(w.gate, inter, h, x, t, gate, pf);
    matmul(w.up, inter, h, x, t, up, pf);
    for (g, u) in gate[..t * inter].iter_mut().zip(&up[..t * inter]) {
        *g = silu(*g) * u;
    }
    matmul(w.down, h, inter, gate, t, out, pf);
}

/// The MoE of `t` rows of `x` into `out`: the routed experts weighted by the renormalised
/// router, plus the gated shared expert.
fn moe(
    s: &mut MoeScratch,
    pf: &Prefetcher,
    w: &MoeWeights<CpuBackend>,
    x: &[f32],
    t: usize,
    out: &mut [f32],
) {
    let MoeWeights {
        router,
        experts,
        shared,
        shared_gate,
        top_k,
    } = w;
    let (h, ne, top_k) = (router.cols, router.rows, *top_k);
    matmul(&router.data, ne, h, x, t, &mut s.router, pf);
    for i in 0..t {
        let p = &mut s.router[i * ne..(i + 1) * ne];
        let m = p.iter().fold(f32::NEG_INFINITY, |a, b| a.max(*b));
        let mut sum = 0.0;
        for v in p.iter_mut() {
            *v = (*v - m).exp();
            sum += *v;
        }
        p.iter_mut().for_each(|v| *v /= sum);
        // Top-k by repeated selection: highest probability, lowest index on ties.
        let choice = &mut s.choice[i * top_k..(i + 1) * top_k];
        let mut kept = 0.0;
        for k in 0..top_k {
            let mut best = usize::MAX;
            for e in 0..ne {
                if choice[..k].iter().any(|c| c.0 == e) {
                    continue;
                }
                if best == usize::MAX || p[e] > p[best] {
                    best = e;
                }
            }
            choice[k] = (best, p[best]);
            kept += p[best];
        }
        choice.iter_mut().for_each(|c| c.1 /= kept);
    }
    // Each expert runs once over the rows routed to it.
    for e in 0..ne {
        let ew = Expert::nth(experts, e, ne);
        s.members.clear();
        for (slot, c) in s.choice[..t * top_k].iter().enumerate() {
            if c.0 == e {
                s.members.push((slot / top_k, slot));
            }
        }
        let n = s.members.len();
        if n == 0 {
            continue;
        }
        for (j, &(row, _)) in s.members.iter().enumerate() {
            s.gathered[j * h..(j + 1) * h].copy_from_slice(&x[row * h..(row + 1) * h]);
        }
        swiglu(ew, &s.gathered, n, &mut s.gate, &mut s.up, &mut s.down, pf);
        for (j, &(_, slot)) in s.members.iter().enumerate() {
            s.per_slot[slot * h..(slot + 1) * h].copy_from_slice(&s.down[j * h..(j + 1) * h]);
        }
    }
    swiglu(
        Expert::whole(shared),
        x,
        t,
        &mut s.gate,
        &mut s.up,
        &mut s.shared,
        pf,
    );
    matmul(&shared_gate.data, 1, h, x, t, &mut s.shared_gate, pf);
    for i in 0..t {
        let o = &mut out[i * h..(i + 1) * h];
        o.fill(0.0);
        for k in 0..top_k {
            let slot = i * top_k + k;
            let wk = s.choice[slot].1;
            o.iter_mut()
                .zip(&s.per_slot[slot * h..(slot + 1) * h])
                .for_each(|(a, y)| *a += wk * y);
        }
        let g = sigmoid(s.shared_gate[i]);
        o.iter_mut()
            .zip(&s.shared[i * h..(i + 1) * h])
            .for_each(|(a, y)| *a += g * y);
    }
}
