//! The model definition: buffers, state pool and the forward composition of the layers,
//! generic over the backend.

use crate::backend::{
    AttnCaches, AttnProjections, Backend, GdnGate, GdnOutputs, GdnProjections, GdnState, KvCache,
    OutFfn, RmsNorm, RoundKey, SlotPair,
};
use crate::config::{ModelConfig, MAX_DRAFT};
use crate::options::Arm;
use crate::state::PoolMap;
use crate::weights::{LayerWeights, Mixer, WeightSource, Weights};
use anyhow::Result;

/// Activation buffers, `max_rows` rows each.
pub(crate) struct Acts<B: Backend> {
    /// The residual stream.
    pub x: B::Buf,
    pub xn: B::Buf,
    pub mix: B::Buf,
    pub qkv: B::Buf,
    pub conv: B::Buf,
    pub z: B::Buf,
    pub b: B::Buf,
    pub a: B::Buf,
    pub o: B::Buf,
    pub on: B::Buf,
    pub qg: B::Buf,
    pub k: B::Buf,
    pub v: B::Buf,
    pub att: B::Buf,
    /// The target's final normed hidden state per row (the LM head's input, the MTP's).
    pub hid: B::Buf,
    pub mtp_cat: B::Buf,
    /// Queued MTP inputs: the target hidden of position p and the token of p + 1.
    pub mtp_hid_in: B::Buf,
    pub mtp_out: B::Buf,
    /// Target input tokens; in a round: the pending token then the drafts.
    pub tok_in: B::Tok,
    pub tok_out: B::Tok,
    pub mtp_tok_in: B::Tok,
    /// The tokens of plain decode by position (`history[p]` is the token at position p),
    /// read back once the steps are queued.
    pub history: B::Tok,
}

/// A GDN layer's projections of a verify pass, kept to recompute an accepted prefix.
pub(crate) struct GdnStash<B: Backend> {
    pub x: B::Buf,
    pub b: B::Buf,
    pub a: B::Buf,
}

impl<B: Backend> GdnStash<B> {
    fn projections(&self) -> GdnProjections<'_, B> {
        GdnProjections {
            qkv: &self.x,
            b: &self.b,
            a: &self.a,
        }
    }
}

/// How a target pass treats the state pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Prefill and plain decode: read and write the live slot.
    InPlace,
    /// A speculative verify: read the live slot, write the spare, stash the projections.
    Verify,
}

pub struct Model<B: Backend> {
    pub cfg: ModelConfig,
    pub arm: Arm,
    pub backend: B,
    pub(crate) w: Weights<B>,
    pub(crate) map: PoolMap,
    pub(crate) pool: B::Pool,
    pub(crate) live: usize,
    kv: Vec<KvCache<B>>,
    pub(crate) mtp_kv: KvCache<B>,
    rope: B::Buf,
    pub(crate) s: Acts<B>,
    pub(crate) stash: Vec<GdnStash<B>>,
    pub max_rows: usize,
    /// Positions the target has consumed.
    pub(crate) pos: usize,
    /// MTP position of the first queued MTP input, and how many are queued.
    pub(crate) mtp_pos: usize,
    pub(crate) mtp_queued: usize,
    /// Per layer: the index (among GDN layers) of the next GDN layer, if any.
    next_gdn: Vec<Option<usize>>,
    /// Decode rounds run since the model was built ([`Model::rounds_run`]).
    rounds: u64,
    /// Whether every round ends with the backend's pad ([`Model::pad_rounds`]).
    padded: bool,
}

/// Largest batch a round needs: the verify pass and the MTP catch-up.
pub const ROUND_ROWS: usize = MAX_DRAFT + 2;

impl<B: Backend> Model<B> {
    /// The backend, with the model's weights, state and buffers let go (`engine bench
    /// --layouts`: the model built again in another placement).
    pub fn into_backend(self) -> B {
        self.backend
    }

    /// Builds the model on `backend` for prefill chunks of up to `prefill_chunk` positions.
    pub fn new(
        cfg: ModelConfig,
        source: &WeightSource,
        arm: Arm,
        mut backend: B,
        prefill_chunk: usize,
    ) -> Result<Self> {
        let max_rows = prefill_chunk.max(ROUND_ROWS);
        backend.prepare(&cfg, max_rows)?;
        let w = Weights::load(&cfg, source, &mut backend)?;
        backend.derive_weights(&cfg, &w)?;
        let map = PoolMap::new(&cfg, arm.layout);
        let pool = backend.alloc_pool(&map)?;
        let (h, c) = (cfg.hidden, cfg.conv_channels());
        let (hv, vd) = (cfg.gdn_value_heads, cfg.gdn_value_heads * cfg.gdn_value_dim);
        let (ad, kvd) = (
            cfg.attn_heads * cfg.attn_head_dim,
            cfg.attn_kv_heads * cfg.attn_head_dim,
        );
        let b = &mut backend;
        let mut buf = |width: usize| b.alloc(max_rows * width);
        let s = Acts {
            x: buf(h)?,
            xn: buf(h)?,
            mix: buf(h)?,
            qkv: buf(c)?,
            conv: buf(c)?,
            z: buf(vd)?,
            b: buf(hv)?,
            a: buf(hv)?,
            o: buf(vd)?,
            on: buf(vd)?,
            qg: buf(2 * ad)?,
            k: buf(kvd)?,
            v: buf(kvd)?,
            att: buf(ad)?,
            hid: buf(h)?,
            mtp_cat: buf(2 * h)?,
            mtp_hid_in: buf(h)?,
            mtp_out: buf(h)?,
            tok_in: backend.alloc_tokens(max_rows)?,
            tok_out: backend.alloc_tokens(max_rows)?,
            mtp_tok_in: backend.alloc_tokens(max_rows)?,
            history: backend.alloc_tokens(cfg.max_context)?,
        };
        let cache = |b: &mut B| -> Result<KvCache<B>> {
            Ok(KvCache {
                k: b.alloc_cache(cfg.max_context * kvd)?,
                v: b.alloc_cache(cfg.max_context * kvd)?,
            })
        };
        let kv = (0..cfg.attention_layers())
            .map(|_| cache(&mut backend))
            .collect::<Result<_>>()?;
        let mtp_kv = cache(&mut backend)?;
        let stash = (0..cfg.gdn_layers())
            .map(|_| {
                Ok(GdnStash {
                    x: backend.alloc(ROUND_ROWS * c)?,
                    b: backend.alloc(ROUND_ROWS * hv)?,
                    a: backend.alloc(ROUND_ROWS * hv)?,
                })
            })
            .collect::<Result<_>>()?;
        let rope = backend.upload(&rope_table(&cfg))?;
        let next_gdn = (0..cfg.layers)
            .map(|li| {
                let before = (0..=li).filter(|&j| !cfg.is_attention(j)).count();
                (before < cfg.gdn_layers()).then_some(before)
            })
            .collect();
        Ok(Model {
            cfg,
            arm,
            backend,
            w,
            map,
            pool,
            live: 0,
            kv,
            mtp_kv,
            rope,
            s,
            stash,
            max_rows,
            pos: 0,
            mtp_pos: 0,
            mtp_queued: 0,
            next_gdn,
            rounds: 0,
            padded: false,
        })
    }

    /// The backend, for [`Backend::round`].
    pub(crate) fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    /// Runs `body` as the decode round `key` at the current position (see [`Backend::round`]),
    /// between the pad's start mark and its wait once [`Model::pad_rounds`] has been called.
    pub(crate) fn round(&mut self, key: RoundKey, body: impl FnOnce(&mut Self)) {
        self.backend.set_positions(self.pos);
        self.rounds += 1;
        let padded = self.padded;
        B::round(self, Self::backend_mut, key, |m| {
            if padded {
                m.backend.start_round();
            }
            body(m);
            if padded {
                m.backend.pad_round();
            }
        });
    }

    /// Ends every decode round from now on with a busy-wait of `fraction` of the round's own
    /// time (the known-effect control, `ENGINE_DECODE_PAD_PCT`, [`crate::pad`]); a later call
    /// changes the fraction, in the rounds a backend recorded before too. The first call must
    /// come before the first round, so that every recorded round holds the pad.
    pub fn pad_rounds(&mut self, fraction: f64) -> Result<()> {
        self.backend.set_round_pad(fraction)?;
        self.padded = true;
        Ok(())
    }

    /// Decode rounds run since the model was built: every plain step, and while speculating
    /// every round, replay and fallback step (prefill runs none).
    pub fn rounds_run(&self) -> u64 {
        self.rounds
    }

    /// The first `rows` rows of the final normed hidden state of the last target pass.
    pub fn hidden(&mut self, rows: usize) -> Vec<f32> {
        self.backend.read_buf(&self.s.hid, rows * self.cfg.hidden)
    }

    /// Starts a new sequence: zero state, empty caches.
    pub fn reset(&mut self) {
        self.backend.clear_pool(&mut self.pool);
        self.live = 0;
        self.pos = 0;
        self.mtp_pos = 0;
        self.mtp_queued = 0;
    }

    pub(crate) fn slots(&self, g: usize, pass: Pass) -> (SlotPair, SlotPair) {
        let (src, dst) = match pass {
            Pass::InPlace => (self.live, self.live),
            Pass::Verify => (self.live, 1 - self.live),
        };
        (
            SlotPair {
                src: self.map.conv(g, src),
                dst: self.map.conv(g, dst),
            },
            SlotPair {
                src: self.map.rec(g, src),
                dst: self.map.rec(g, dst),
            },
        )
    }

    /// The target over `t` positions from `pos0` with its tokens in `tok_in[0..t]`: final
    /// hidden states in `hid`, argmax of rows `head` in `tok_out` at the same rows.
    pub(crate) fn target_forward(
        &mut self,
        t: usize,
        pos0: usize,
        pass: Pass,
        head: std::ops::Range<usize>,
    ) {
        let eps = self.cfg.rms_eps as f32;
        self.backend
            .embed(&self.w.embed, &self.s.tok_in, 0, t, &mut self.s.x);
        let (mut g, mut a) = (0, 0);
        for li in 0..self.cfg.layers {
            // The live slot of the next GDN layer, prefetched while this layer's FFN streams.
            let prefetch = self.next_gdn[li].map(|ng| self.map.slot_ranges(ng, self.live));
            let lw = &self.w.layers[li];
            let mixer = match &lw.mixer {
                Mixer::Gdn(_) => {
                    let (conv, rec) = self.slots(g, pass);
                    let stash = (pass == Pass::Verify).then(|| &mut self.stash[g]);
                    g += 1;
                    MixerIo::Gdn { conv, rec, stash }
                }
                Mixer::Attn(_) => {
                    a += 1;
                    MixerIo::Attn {
                        cache: &mut self.kv[a - 1],
                    }
                }
            };
            let io = LayerIo {
                cfg: &self.cfg,
                b: &mut self.backend,
                s: &mut self.s,
                pool: &mut self.pool,
                rope: &self.rope,
            };
            decoder_layer(io, lw, mixer, t, pos0, prefetch, self.arm);
        }
        let norm = RmsNorm {
            w: &self.w.norm,
            eps,
        };
        self.backend
            .rms_norm(&self.s.x, norm, t, self.cfg.hidden, &mut self.s.hid);
        let rows = head.len();
        if rows > 0 {
            self.backend.lm_head_argmax(
                &self.w.lm_head,
                &self.s.hid,
                head.start,
                rows,
                &mut self.s.tok_out,
                head.start,
            );
        }
    }

    /// The MTP layer over `t` queued positions from MTP position `pos0`: tokens from
    /// `tok_in[at..]` when `chain`, else from `mtp_tok_in[0..]`; hidden inputs from
    /// `mtp_hid_in`. With `draft_at`, the last row's argmax goes to `tok_in[draft_at]`.
    pub(crate) fn mtp_forward(
        &mut self,
        t: usize,
        pos0: usize,
        tokens: MtpTokens,
        draft_at: Option<usize>,
    ) {
        let (h, eps) = (self.cfg.hidden, self.cfg.rms_eps as f32);
        let (b, s, m) = (&mut self.backend, &mut self.s, &self.w.mtp);
        match tokens {
            MtpTokens::Queued => b.embed(&self.w.embed, &s.mtp_tok_in, 0, t, &mut s.mix),
            MtpTokens::Drafts(at) => b.embed(&self.w.embed, &s.tok_in, at, t, &mut s.mix),
        }
        let norm = |w| RmsNorm { w, eps };
        b.rms_norm(&s.mix, norm(&m.norm_embed), t, h, &mut s.xn);
        b.rms_norm(&s.mtp_hid_in, norm(&m.norm_hidden), t, h, &mut s.mix);
        b.concat(&s.xn, &s.mix, t, h, h, &mut s.mtp_cat);
        b.matmul(&m.fc, &s.mtp_cat, t, &mut s.x);
        let io = LayerIo {
            cfg: &self.cfg,
            b: &mut *b,
            s: &mut *s,
            pool: &mut self.pool,
            rope: &self.rope,
        };
        decoder_layer(
            io,
            &m.layer,
            MixerIo::Attn {
                cache: &mut self.mtp_kv,
            },
            t,
            pos0,
            None,
            self.arm,
        );
        b.rms_norm(&s.x, norm(&m.norm), t, h, &mut s.mtp_out);
        if let Some(at) = draft_at {
            b.lm_head_argmax(&self.w.lm_head, &s.mtp_out, t - 1, 1, &mut s.tok_in, at);
        }
    }

    /// Recomputes GDN layer `g`'s state over the first `t` stashed positions of the last
    /// verify, from the live slot into the spare.
    pub(crate) fn replay_gdn(&mut self, t: usize) {
        let mut g = 0;
        for lw in &self.w.layers {
            if let Mixer::Gdn(w) = &lw.mixer {
                let (conv, rec) = self.slots(g, Pass::Verify);
                let state = &mut GdnState {
                    pool: &mut self.pool,
                    conv,
                    rec,
                };
                let out = GdnOutputs {
                    conv: &mut self.s.conv,
                    o: &mut self.s.o,
                    gate: None,
                };
                let proj = self.stash[g].projections();
                self.backend
                    .gdn_conv_recurrence(&self.cfg, w, state, proj, t, out);
                g += 1;
            }
        }
    }
}

impl Model<crate::cpu::CpuBackend> {
    /// The raw state pool, and which slot is live (for inspection).
    pub fn state_pool(&self) -> (&[u32], usize) {
        (&self.pool, self.live)
    }
}

/// Where the MTP layer reads its tokens.
#[derive(Clone, Copy, Debug)]
pub(crate) enum MtpTokens {
    Queued,
    Drafts(usize),
}

pub(crate) struct LayerIo<'a, B: Backend> {
    cfg: &'a ModelConfig,
    b: &'a mut B,
    s: &'a mut Acts<B>,
    pool: &'a mut B::Pool,
    rope: &'a B::Buf,
}

enum MixerIo<'a, B: Backend> {
    Gdn {
        conv: SlotPair,
        rec: SlotPair,
        stash: Option<&'a mut GdnStash<B>>,
    },
    Attn {
        cache: &'a mut KvCache<B>,
    },
}

/// One decoder layer over `t` rows of the residual stream `s.x`: norm, mixer, output
/// projection onto the residual, (prefetch armed), norm, FFN, residual.
fn decoder_layer<B: Backend>(
    io: LayerIo<'_, B>,
    lw: &LayerWeights<B>,
    mixer: MixerIo<'_, B>,
    t: usize,
    pos0: usize,
    prefetch: Option<[(usize, usize); 2]>,
    arm: Arm,
) {
    let LayerIo {
        cfg,
        b,
        s,
        pool,
        rope,
    } = io;
    let (h, eps) = (cfg.hidden, cfg.rms_eps as f32);
    let input_norm = RmsNorm {
        w: &lw.input_norm,
        eps,
    };
    let (out, mixed) = match (&lw.mixer, mixer) {
        (Mixer::Gdn(w), MixerIo::Gdn { conv, rec, stash }) => {
            let (x, bb, aa) = match stash {
                Some(st) => (&mut st.x, &mut st.b, &mut st.a),
                None => (&mut s.qkv, &mut s.b, &mut s.a),
            };
            b.norm_matmul_many(
                &s.x,
                input_norm,
                h,
                t,
                &mut s.xn,
                &mut [
                    (&w.qkv, &mut *x),
                    (&w.z, &mut s.z),
                    (&w.b, &mut *bb),
                    (&w.a, &mut *aa),
                ],
            );
            let state = &mut GdnState {
                pool: &mut *pool,
                conv,
                rec,
            };
            let proj = GdnProjections {
                qkv: x,
                b: bb,
                a: aa,
            };
            let out = GdnOutputs {
                conv: &mut s.conv,
                o: &mut s.o,
                gate: Some(GdnGate {
                    z: &s.z,
                    out: &mut s.on,
                }),
            };
            b.gdn_conv_recurrence(cfg, w, state, proj, t, out);
            (&w.out, &s.on)
        }
        (Mixer::Attn(w), MixerIo::Attn { cache }) => {
            b.norm_matmul_many(
                &s.x,
                input_norm,
                h,
                t,
                &mut s.xn,
                &mut [(&w.q, &mut s.qg), (&w.k, &mut s.k), (&w.v, &mut s.v)],
            );
            let proj = AttnProjections {
                qg: &s.qg,
                k: &s.k,
                v: &s.v,
            };
            let caches = AttnCaches {
                rope,
                kv: cache,
                pos0,
            };
            b.attention(cfg, w, proj, caches, t, &mut s.att);
            (&w.o, &s.att)
        }
        _ => unreachable!("layer kinds follow the config"),
    };
    let arm_prefetch = |b: &mut B| {
        for (off, len) in prefetch.into_iter().flatten() {
            b.prefetch_state(pool, off, len, arm.prefetch);
        }
    };
    let layer = OutFfn {
        out,
        mixed,
        ffn: &lw.ffn,
        norm: RmsNorm {
            w: &lw.post_norm,
            eps,
        },
    };
    b.out_norm_ffn_add(cfg, layer, t, &mut s.xn, &mut s.x, arm_prefetch);
}

/// cos then sin of every position for the rotary dims: `[max_context][rotary_dim]`.
pub fn rope_table(cfg: &ModelConfig) -> Vec<f32> {
    let rd = cfg.rotary_dim();
    let half = rd / 2;
    let mut t = vec![0.0f32; cfg.max_context * rd];
    for p in 0..cfg.max_context {
        for j in 0..half {
            let inv = cfg.rope_theta.powf(-2.0 * j as f64 / rd as f64);
            let ang = p as f64 * inv;
            t[p * rd + j] = ang.cos() as f32;
            t[p * rd + half + j] = ang.sin() as f32;
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::{CpuBackend, CpuMat};

    fn mv(m: &CpuMat, x: &[f64]) -> Vec<f64> {
        (0..m.rows)
            .map(|r| {
                (0..m.cols)
                    .map(|c| m.data[r * m.cols + c] as f64 * x[c])
                    .sum()
            })
            .collect()
    }

    fn norm(x: &[f64], w: &[f32]) -> Vec<f64> {
        let k = 1.0 / (x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64 + 1e-6).sqrt();
        x.iter()
            .zip(w)
            .map(|(v, w)| v * k * (1.0 + *w as f64))
            .collect()
    }

    /// The MTP layer at its first position (a one-entry cache, so attention is
    /// `v ⊙ sigmoid(gate)`), composed in f64; the FFN block, tested on its own against f64,
    /// runs through the backend on the f64 path's input.
    #[test]
    fn mtp_layer_matches_f64_composition() {
        let cfg = ModelConfig::preset("tiny").unwrap();
        let mut m = Model::new(
            cfg.clone(),
            &WeightSource::Synthetic { seed: 5 },
            Arm::default(),
            CpuBackend::new(),
            8,
        )
        .unwrap();
        let h = cfg.hidden;
        let hidden: Vec<f32> = (0..h)
            .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
            .collect();
        let token = 77u32;
        m.s.mtp_hid_in[..h].copy_from_slice(&hidden);
        m.s.mtp_tok_in[0] = token;
        m.mtp_queued = 1;
        m.mtp_forward(1, 0, MtpTokens::Queued, Some(1));

        let w = &m.w.mtp;
        let e: Vec<f64> = m.w.embed.data[token as usize * h..(token as usize + 1) * h]
            .iter()
            .map(|v| *v as f64)
            .collect();
        let hd: Vec<f64> = hidden.iter().map(|v| *v as f64).collect();
        let cat: Vec<f64> = norm(&e, &w.norm_embed)
            .into_iter()
            .chain(norm(&hd, &w.norm_hidden))
            .collect();
        let mut x = mv(&w.fc, &cat);
        let Mixer::Attn(a) = &w.layer.mixer else {
            panic!("the MTP layer is full attention")
        };
        let xn = norm(&x, &w.layer.input_norm);
        let (qg, v) = (mv(&a.q, &xn), mv(&a.v, &xn));
        let (hq, d) = (cfg.attn_heads, cfg.attn_head_dim);
        let att: Vec<f64> = (0..hq * d)
            .map(|i| {
                let (head, j) = (i / d, i % d);
                let g = head / (hq / cfg.attn_kv_heads);
                v[g * d + j] / (1.0 + (-qg[head * 2 * d + d + j]).exp())
            })
            .collect();
        x.iter_mut().zip(mv(&a.o, &att)).for_each(|(x, y)| *x += y);
        let xn: Vec<f32> = norm(&x, &w.layer.post_norm)
            .iter()
            .map(|v| *v as f32)
            .collect();
        let mut ffn = vec![0.0f32; m.max_rows * h];
        m.backend.ffn_add(&cfg, &w.layer.ffn, &xn, 1, &mut ffn);
        x.iter_mut().zip(&ffn).for_each(|(x, y)| *x += *y as f64);
        let out = norm(&x, &w.norm);
        for (i, (got, want)) in m.s.mtp_out[..h].iter().zip(&out).enumerate() {
            assert!(
                (*got as f64 - want).abs() < 1e-3 * (1.0 + want.abs()),
                "mtp_out[{i}]: {got} vs {want}"
            );
        }
        let logits = mv(&m.w.lm_head, &out);
        let best = (0..logits.len()).fold(0, |b, i| if logits[i] > logits[b] { i } else { b });
        assert_eq!(
            m.s.tok_in[1], best as u32,
            "the draft is the LM head's argmax"
        );
    }
}
