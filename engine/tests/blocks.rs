//! Each block of the CPU backend against an independent f64 implementation.

mod common;

use common::*;
use engine::backend::{
    AttnCaches, AttnProjections, Backend, GdnGate, GdnProjections, GdnState, KvCache, SlotPair,
};
use engine::config::{Ffn, ModelConfig};
use engine::cpu::CpuBackend;
use engine::options::Arm;
use engine::state::PoolMap;
use engine::weights::{AttnWeights, FfnWeights, GdnWeights, MoeWeights, SwiGlu};

fn cfg() -> ModelConfig {
    ModelConfig::preset("tiny").unwrap()
}

fn gdn_weights(c: &ModelConfig) -> GdnWeights<CpuBackend> {
    let (h, hv) = (c.hidden, c.gdn_value_heads);
    GdnWeights {
        qkv: mat("qkv", c.conv_channels(), h),
        z: mat("z", hv * c.gdn_value_dim, h),
        b: mat("b", hv, h),
        a: mat("a", hv, h),
        conv: rand_vec("conv", c.conv_channels() * c.conv_kernel, 0.5),
        dt_bias: rand_vec("dt", hv, 0.5).iter().map(|v| v - 2.0).collect(),
        a_log: rand_vec("alog", hv, 1.0),
        norm: rand_vec("gnorm", c.gdn_value_dim, 0.1)
            .iter()
            .map(|v| v + 1.0)
            .collect(),
        out: mat("out", h, hv * c.gdn_value_dim),
    }
}

/// The f64 GDN reference: conv history (bf16-stored) and state `[HV][K][V]`.
struct GdnRef {
    hist: Vec<Vec<f64>>,
    s: Vec<f64>,
}

impl GdnRef {
    fn step(
        &mut self,
        c: &ModelConfig,
        w: &GdnWeights<CpuBackend>,
        x: &[f32],
        b: &[f32],
        a: &[f32],
        z: &[f32],
    ) -> Vec<f64> {
        let (hk, hv, dk, dv, ch, kern) = (
            c.gdn_key_heads,
            c.gdn_value_heads,
            c.gdn_key_dim,
            c.gdn_value_dim,
            c.conv_channels(),
            c.conv_kernel,
        );
        let conv: Vec<f64> = (0..ch)
            .map(|i| {
                let mut acc = 0.0;
                for j in 0..kern - 1 {
                    acc += w.conv[i * kern + j] as f64 * self.hist[j][i];
                }
                silu(acc + w.conv[i * kern + kern - 1] as f64 * x[i] as f64)
            })
            .collect();
        self.hist.remove(0);
        self.hist.push(
            x.iter()
                .map(|v| half::bf16::from_f32(*v).to_f64())
                .collect(),
        );
        let mut o = vec![0.0; hv * dv];
        for h in 0..hv {
            let kh = h / (hv / hk);
            let l2 = |v: &[f64]| {
                let n = (v.iter().map(|x| x * x).sum::<f64>() + 1e-6).sqrt();
                v.iter().map(|x| x / n).collect::<Vec<f64>>()
            };
            let q: Vec<f64> = l2(&conv[kh * dk..(kh + 1) * dk])
                .iter()
                .map(|v| v / (dk as f64).sqrt())
                .collect();
            let k = l2(&conv[hk * dk + kh * dk..hk * dk + (kh + 1) * dk]);
            let v = &conv[2 * hk * dk + h * dv..2 * hk * dk + (h + 1) * dv];
            let beta = sigmoid(b[h] as f64);
            let sp = ((a[h] + w.dt_bias[h]) as f64).exp().ln_1p();
            let alpha = (-(w.a_log[h] as f64).exp() * sp).exp();
            let s = &mut self.s[h * dk * dv..(h + 1) * dk * dv];
            s.iter_mut().for_each(|x| *x *= alpha);
            let u: Vec<f64> = (0..dv)
                .map(|j| beta * (v[j] - (0..dk).map(|i| s[i * dv + j] * k[i]).sum::<f64>()))
                .collect();
            for i in 0..dk {
                for j in 0..dv {
                    s[i * dv + j] += k[i] * u[j];
                }
            }
            let oh: Vec<f64> = (0..dv)
                .map(|j| (0..dk).map(|i| s[i * dv + j] * q[i]).sum())
                .collect();
            let ms = oh.iter().map(|x| x * x).sum::<f64>() / dv as f64;
            for j in 0..dv {
                o[h * dv + j] =
                    w.norm[j] as f64 * oh[j] / (ms + c.rms_eps).sqrt() * silu(z[h * dv + j] as f64);
            }
        }
        o
    }
}

#[test]
fn gdn_conv_recurrence_and_gated_norm_match_f64_and_write_only_the_target_slot() {
    let c = cfg();
    let w = gdn_weights(&c);
    let mut b = CpuBackend::new();
    b.prepare(&c, 8).unwrap();
    let map = PoolMap::new(&c, Arm::default().layout);
    let mut pool = b.alloc_pool(&map).unwrap();
    let (ch, hv, vd) = (
        c.conv_channels(),
        c.gdn_value_heads,
        c.gdn_value_heads * c.gdn_value_dim,
    );
    let mut r = GdnRef {
        hist: vec![vec![0.0; ch]; c.conv_kernel - 1],
        s: vec![0.0; hv * c.gdn_key_dim * c.gdn_value_dim],
    };
    let t = 5;
    let x = rand_vec("x", t * ch, 2.0);
    let bb = rand_vec("bb", t * hv, 2.0);
    let aa = rand_vec("aa", t * hv, 2.0);
    let z = rand_vec("zz", t * vd, 2.0);
    // Slot 0 → slot 1 over 5 positions, then one more position in place on slot 1.
    let (mut conv, mut o, mut on) = (vec![0.0; t * ch], vec![0.0; t * vd], vec![0.0; t * vd]);
    let s01 = |f: fn(&PoolMap, usize, usize) -> usize| SlotPair {
        src: f(&map, 1, 0),
        dst: f(&map, 1, 1),
    };
    let mut state = GdnState {
        pool: &mut pool,
        conv: s01(PoolMap::conv),
        rec: s01(PoolMap::rec),
    };
    b.gdn_conv(&c, &w, &mut state, &x, t, &mut conv);
    let proj = GdnProjections {
        qkv: &conv,
        b: &bb,
        a: &aa,
    };
    b.gdn_recurrence(&c, &w, &mut state, proj, t, &mut o);
    let gate = GdnGate {
        z: &z,
        out: &mut on,
    };
    b.gated_norm(&c, &w, &o, gate, t);
    for i in 0..t {
        let want = r.step(
            &c,
            &w,
            &x[i * ch..(i + 1) * ch],
            &bb[i * hv..(i + 1) * hv],
            &aa[i * hv..(i + 1) * hv],
            &z[i * vd..(i + 1) * vd],
        );
        close(
            &on[i * vd..(i + 1) * vd],
            &want,
            2e-4,
            &format!("gdn output at position {i}"),
        );
    }
    // The source slot is untouched (still zero); the destination holds the reference state.
    fn words(pool: &[u32], off: usize, bytes: usize) -> &[u32] {
        &pool[off / 4..(off + bytes) / 4]
    }
    assert!(
        words(&pool, map.rec(1, 0), map.rec_bytes)
            .iter()
            .all(|v| *v == 0),
        "verify must not write the live slot"
    );
    let rec1: Vec<f32> = words(&pool, map.rec(1, 1), map.rec_bytes)
        .iter()
        .map(|v| f32::from_bits(*v))
        .collect();
    close(&rec1, &r.s, 2e-4, "recurrent state");
    let mut in_place = GdnState {
        pool: &mut pool,
        conv: SlotPair {
            src: map.conv(1, 1),
            dst: map.conv(1, 1),
        },
        rec: SlotPair {
            src: map.rec(1, 1),
            dst: map.rec(1, 1),
        },
    };
    let x1 = rand_vec("x1", ch, 2.0);
    b.gdn_conv(&c, &w, &mut in_place, &x1, 1, &mut conv);
    let proj = GdnProjections {
        qkv: &conv,
        b: &bb,
        a: &aa,
    };
    b.gdn_recurrence(&c, &w, &mut in_place, proj, 1, &mut o);
    let gate = GdnGate {
        z: &z,
        out: &mut on,
    };
    b.gated_norm(&c, &w, &o, gate, 1);
    let want = r.step(&c, &w, &x1, &bb[..hv], &aa[..hv], &z[..vd]);
    close(
        &on[..vd],
        &want,
        2e-4,
        "in-place step after the slot switch",
    );
    // Other layers' regions stay zero.
    assert!(words(&pool, map.rec(0, 0), map.rec_bytes)
        .iter()
        .all(|v| *v == 0));
}

#[test]
fn attention_with_cache_matches_f64() {
    let c = cfg();
    let (hq, hkv, d, rd) = (
        c.attn_heads,
        c.attn_kv_heads,
        c.attn_head_dim,
        c.rotary_dim(),
    );
    let w: AttnWeights<CpuBackend> = AttnWeights {
        q: mat("q", 2 * hq * d, c.hidden),
        k: mat("k", hkv * d, c.hidden),
        v: mat("v", hkv * d, c.hidden),
        o: mat("o", c.hidden, hq * d),
        q_norm: rand_vec("qn", d, 0.1),
        k_norm: rand_vec("kn", d, 0.1),
    };
    let mut b = CpuBackend::new();
    b.prepare(&c, 8).unwrap();
    let rope: Vec<f32> = (0..c.max_context)
        .flat_map(|p| {
            let ang: Vec<f64> = (0..rd / 2)
                .map(|j| p as f64 * c.rope_theta.powf(-2.0 * j as f64 / rd as f64))
                .collect();
            ang.iter()
                .map(|a| a.cos() as f32)
                .chain(ang.iter().map(|a| a.sin() as f32))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut cache = KvCache::<CpuBackend> {
        k: vec![0.0; c.max_context * hkv * d],
        v: vec![0.0; c.max_context * hkv * d],
    };
    let n = 7;
    let qg = rand_vec("qg", n * 2 * hq * d, 2.0);
    let k = rand_vec("kk", n * hkv * d, 2.0);
    let v = rand_vec("vv", n * hkv * d, 2.0);
    // Positions 0..3 in one call, then 3..7 one at a time: the cache carries the rest.
    let mut out = vec![0.0; n * hq * d];
    let proj = AttnProjections {
        qg: &qg,
        k: &k,
        v: &v,
    };
    let caches = AttnCaches {
        rope: &rope,
        kv: &mut cache,
        pos0: 0,
    };
    b.attention(&c, &w, proj, caches, 3, &mut out);
    for p in 3..n {
        let mut o1 = vec![0.0; hq * d];
        let proj = AttnProjections {
            qg: &qg[p * 2 * hq * d..].to_vec(),
            k: &k[p * hkv * d..].to_vec(),
            v: &v[p * hkv * d..].to_vec(),
        };
        let caches = AttnCaches {
            rope: &rope,
            kv: &mut cache,
            pos0: p,
        };
        b.attention(&c, &w, proj, caches, 1, &mut o1);
        out[p * hq * d..(p + 1) * hq * d].copy_from_slice(&o1);
    }
    let rot = |x: &mut Vec<f64>, p: usize| {
        for j in 0..rd / 2 {
            let th = p as f64 * c.rope_theta.powf(-2.0 * j as f64 / rd as f64);
            let (a, bb) = (x[j], x[j + rd / 2]);
            x[j] = a * th.cos() - bb * th.sin();
            x[j + rd / 2] = bb * th.cos() + a * th.sin();
        }
    };
    let keys: Vec<Vec<Vec<f64>>> = (0..n)
        .map(|p| {
            (0..hkv)
                .map(|g| {
                    let mut kk = rms_norm(
                        &f64s(&k[p * hkv * d + g * d..p * hkv * d + (g + 1) * d]),
                        &w.k_norm,
                        c.rms_eps,
                    );
                    rot(&mut kk, p);
                    kk
                })
                .collect()
        })
        .collect();
    for p in 0..n {
        for h in 0..hq {
            let g = h / (hq / hkv);
            let base = p * 2 * hq * d + h * 2 * d;
            let mut q = rms_norm(&f64s(&qg[base..base + d]), &w.q_norm, c.rms_eps);
            rot(&mut q, p);
            let s: Vec<f64> = (0..=p)
                .map(|j| {
                    q.iter().zip(&keys[j][g]).map(|(a, b)| a * b).sum::<f64>() / (d as f64).sqrt()
                })
                .collect();
            let m = s.iter().cloned().fold(f64::MIN, f64::max);
            let e: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
            let z: f64 = e.iter().sum();
            let want: Vec<f64> = (0..d)
                .map(|i| {
                    let a: f64 = (0..=p)
                        .map(|j| e[j] / z * v[j * hkv * d + g * d + i] as f64)
                        .sum();
                    a * sigmoid(qg[base + d + i] as f64)
                })
                .collect();
            close(
                &out[p * hq * d + h * d..p * hq * d + (h + 1) * d],
                &want,
                1e-4,
                &format!("attention pos {p} head {h}"),
            );
        }
    }
}

#[test]
fn moe_routing_experts_and_shared_expert_match_f64() {
    let c = cfg();
    let Ffn::Moe {
        experts,
        top_k,
        expert_size,
        shared_size,
    } = c.ffn
    else {
        panic!("tiny is MoE")
    };
    let h = c.hidden;
    let swiglu = |p: &str, n: usize| SwiGlu::<CpuBackend> {
        gate: mat(&format!("{p}g"), n, h),
        up: mat(&format!("{p}u"), n, h),
        down: mat(&format!("{p}d"), h, n),
    };
    let ew: Vec<_> = (0..experts)
        .map(|e| swiglu(&format!("e{e}"), expert_size))
        .collect();
    let stack = |part: fn(&SwiGlu<CpuBackend>) -> &engine::cpu::CpuMat| engine::cpu::CpuMat {
        rows: experts * part(&ew[0]).rows,
        cols: part(&ew[0]).cols,
        data: ew
            .iter()
            .flat_map(|m| part(m).data.iter().copied())
            .collect(),
    };
    let w = FfnWeights::Moe(MoeWeights {
        router: mat("router", experts, h),
        experts: SwiGlu {
            gate: stack(|m| &m.gate),
            up: stack(|m| &m.up),
            down: stack(|m| &m.down),
        },
        shared: swiglu("shared", shared_size),
        shared_gate: mat("sg", 1, h),
        top_k,
    });
    let FfnWeights::Moe(MoeWeights {
        router,
        shared,
        shared_gate,
        ..
    }) = &w
    else {
        unreachable!()
    };
    let mut b = CpuBackend::new();
    b.prepare(&c, 8).unwrap();
    let t = 6;
    let x = rand_vec("moe-x", t * h, 3.0);
    // Added onto a non-zero residual stream.
    let resid = rand_vec("moe-resid", t * h, 1.0);
    let mut out = resid.clone();
    b.ffn_add(&c, &w, &x, t, &mut out);
    let mlp = |m: &SwiGlu<CpuBackend>, x: &[f64]| {
        let g = matvec(&m.gate, x);
        let u = matvec(&m.up, x);
        matvec(
            &m.down,
            &g.iter()
                .zip(&u)
                .map(|(g, u)| silu(*g) * u)
                .collect::<Vec<_>>(),
        )
    };
    let mut used = std::collections::BTreeSet::new();
    for i in 0..t {
        let xi = f64s(&x[i * h..(i + 1) * h]);
        let logits = matvec(router, &xi);
        let m = logits.iter().cloned().fold(f64::MIN, f64::max);
        let p: Vec<f64> = logits.iter().map(|l| (l - m).exp()).collect();
        let mut order: Vec<usize> = (0..experts).collect();
        order.sort_by(|a, b| p[*b].partial_cmp(&p[*a]).unwrap());
        let chosen = &order[..top_k];
        let kept: f64 = chosen.iter().map(|e| p[*e]).sum();
        let mut want = f64s(&resid[i * h..(i + 1) * h]);
        for &e in chosen {
            used.insert(e);
            for (wv, y) in want.iter_mut().zip(mlp(&ew[e], &xi)) {
                *wv += p[e] / kept * y;
            }
        }
        let g = sigmoid(matvec(shared_gate, &xi)[0]);
        for (wv, y) in want.iter_mut().zip(mlp(shared, &xi)) {
            *wv += g * y;
        }
        close(
            &out[i * h..(i + 1) * h],
            &want,
            1e-4,
            &format!("moe row {i}"),
        );
    }
    assert!(
        used.len() > top_k,
        "the test inputs should route to several experts"
    );
}
