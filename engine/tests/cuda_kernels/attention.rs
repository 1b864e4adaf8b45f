//! Gated attention decode over the bf16 KV cache against an f64 reference.

use super::{assert_close, download, gpu, sigmoid, upload, weights, Rng};
use engine::config::ModelConfig;
use engine::cuda::{AttnPlan, AttnScratch, AttnShape};
use engine::model::rope_table;
use half::bf16;

const ROPE_THETA: f64 = 1e7;

fn rms_rope(x: &[f32], w: &[f64], pos: usize, s: &AttnShape) -> Vec<f64> {
    let d = s.head_dim;
    let inv =
        1.0 / (x.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / d as f64 + s.eps as f64).sqrt();
    let n: Vec<f64> = (0..d).map(|i| x[i] as f64 * inv * (1.0 + w[i])).collect();
    let half = s.rot_dim / 2;
    (0..d)
        .map(|i| {
            if i >= s.rot_dim {
                return n[i];
            }
            let f = pos as f64 * ROPE_THETA.powf(-2.0 * (i % half) as f64 / s.rot_dim as f64);
            if i < half {
                n[i] * f.cos() - n[i + half] * f.sin()
            } else {
                n[i] * f.cos() + n[i - half] * f.sin()
            }
        })
        .collect()
}

/// `hq` q heads over 2 kv heads: groups of 1 to 8 q heads per kv head.
fn check(head_dim: usize, hq: usize, splits: usize) {
    let gpu = gpu();
    let s = AttnShape {
        hq,
        hkv: 2,
        head_dim,
        max_ctx: 512,
        rot_dim: head_dim / 4,
        eps: 1e-6,
    };
    // The model's rotary table for this shape, which the kernel reads its angles from.
    let model = ModelConfig {
        attn_head_dim: head_dim,
        partial_rotary: 0.25,
        max_context: s.max_ctx,
        rope_theta: ROPE_THETA,
        ..ModelConfig::preset("tiny").unwrap()
    };
    assert_eq!(model.rotary_dim(), s.rot_dim);
    let rope = upload(gpu, &rope_table(&model));
    let (t, pos0, d) = (3, 300usize, head_dim);
    let mut rng = Rng::new(21);
    let (q, k, v, gate) = (
        rng.vec(t * s.hq * d, 2.0),
        rng.vec(t * s.hkv * d, 2.0),
        rng.vec(t * s.hkv * d, 1.0),
        rng.vec(t * s.hq * d, 2.0),
    );
    let (qn, qnh) = weights(gpu, "attn.q_norm", d, 0.0, 0.5);
    let (kn, knh) = weights(gpu, "attn.k_norm", d, 0.0, 0.5);
    let (mut kc, _) = weights(gpu, "attn.k_cache", s.cache_len(), 0.0, 2.0);
    let (mut vc, _) = weights(gpu, "attn.v_cache", s.cache_len(), 0.0, 1.0);
    // The q projection as the kernels read it: per head the query, then its gate.
    let qg: Vec<f32> = q
        .chunks(d)
        .zip(gate.chunks(d))
        .flat_map(|(q, g)| q.iter().chain(g))
        .copied()
        .collect();
    let qg = upload(gpu, &qg);
    // pos0 as the kernels read it: a base on the device plus an offset fixed at launch.
    let (base, offset) = (upload(gpu, &[pos0 as i32 - 7]), 7);
    let mut q_rot = gpu.stream.alloc_zeros::<f32>(t * s.hq * d).unwrap();
    gpu.attn_prep(
        &qg,
        &upload(gpu, &k),
        &upload(gpu, &v),
        &qn,
        &kn,
        &rope,
        &base,
        offset,
        &mut kc,
        &mut vc,
        &mut q_rot,
        t,
        s,
    )
    .unwrap();
    let plan = AttnPlan {
        splits,
        one_launch_groups: 0,
    };
    // A block's shared memory holds what the blocks before it left there. Before every launch
    // below, one over a full cache of NaN fills the key and value tiles with NaN; the launches
    // checked end their splits inside a tile (lengths 301-303), whose rows past the last key
    // must count for nothing.
    let nan = upload(gpu, &vec![bf16::NAN; s.cache_len()]);
    let full = upload(gpu, &[s.max_ctx as i32 - 1]);
    let poison = |one_launch: bool| {
        let mut scratch = AttnScratch::new(gpu, s, 1, plan).unwrap();
        let mut out = gpu.stream.alloc_zeros::<f32>(s.hq * d).unwrap();
        gpu.attn_decode(
            &q_rot,
            &nan,
            &nan,
            &full,
            0,
            &qg,
            &mut scratch,
            &mut out,
            1,
            s,
            one_launch,
        )
        .unwrap();
        assert!(
            download(gpu, &out).iter().all(|x| x.is_nan()),
            "the launch over NaN wrote NaN"
        );
    };
    let mut scratch = AttnScratch::new(gpu, s, t, plan).unwrap();
    let mut out = gpu.stream.alloc_zeros::<f32>(t * s.hq * d).unwrap();
    poison(false);
    gpu.attn_decode(
        &q_rot,
        &kc,
        &vc,
        &base,
        offset,
        &qg,
        &mut scratch,
        &mut out,
        t,
        s,
        false,
    )
    .unwrap();
    let got = download(gpu, &out);
    // Each position alone, in two launches or in one (its splits merged in clusters), gives
    // the same bits as in the launch of all three (speculative verify equals plain decode),
    // and so does a second launch on the same scratch (the tickets are left zero).
    let row = s.hq * d;
    for one_launch in [false, true] {
        let mut scratch = AttnScratch::new(gpu, s, 1, plan).unwrap();
        for p in 0..t {
            let mut one = gpu.stream.alloc_zeros::<f32>(row).unwrap();
            for _ in 0..2 {
                poison(one_launch);
                gpu.attn_decode(
                    &q_rot.slice(p * row..),
                    &kc,
                    &vc,
                    &base,
                    offset + p as i32,
                    &qg.slice(2 * p * row..),
                    &mut scratch,
                    &mut one,
                    1,
                    s,
                    one_launch,
                )
                .unwrap();
                assert_eq!(
                    download(gpu, &one),
                    got[p * row..][..row],
                    "position {p} alone, {splits} splits, one launch: {one_launch}"
                );
            }
        }
    }

    let kch: Vec<f64> = download(gpu, &kc).iter().map(|x| x.to_f64()).collect();
    let vch: Vec<f64> = download(gpu, &vc).iter().map(|x| x.to_f64()).collect();
    let (mut want_q, mut want_k, mut got_k, mut want_v, mut got_v) =
        (vec![], vec![], vec![], vec![], vec![]);
    for p in 0..t {
        for h in 0..s.hq {
            want_q.extend(rms_rope(&q[(p * s.hq + h) * d..][..d], &qnh, pos0 + p, &s));
        }
        for g in 0..s.hkv {
            let at = (g * s.max_ctx + pos0 + p) * d;
            want_k.extend(rms_rope(&k[(p * s.hkv + g) * d..][..d], &knh, pos0 + p, &s));
            got_k.extend(kch[at..][..d].iter().map(|x| *x as f32));
            want_v.extend(
                v[(p * s.hkv + g) * d..][..d]
                    .iter()
                    .map(|x| bf16::from_f32(*x).to_f64()),
            );
            got_v.extend(vch[at..][..d].iter().map(|x| *x as f32));
        }
    }
    assert_close(
        &format!("attention q after norm+rope (D {d})"),
        &download(gpu, &q_rot),
        &want_q,
        1e-5,
    );
    assert_close(&format!("key cache append (D {d})"), &got_k, &want_k, 8e-3);
    assert_close(&format!("value cache append (D {d})"), &got_v, &want_v, 0.0);

    let mut want = vec![0.0; t * s.hq * d];
    for p in 0..t {
        for h in 0..s.hq {
            let g = h / (s.hq / s.hkv);
            let qv = &want_q[(p * s.hq + h) * d..][..d];
            let len = pos0 + p + 1;
            let scores: Vec<f64> = (0..len)
                .map(|j| {
                    (0..d)
                        .map(|i| qv[i] * kch[(g * s.max_ctx + j) * d + i])
                        .sum::<f64>()
                        / (d as f64).sqrt()
                })
                .collect();
            let m = scores.iter().cloned().fold(f64::MIN, f64::max);
            let z: f64 = scores.iter().map(|x| (x - m).exp()).sum();
            for i in 0..d {
                let a: f64 = (0..len)
                    .map(|j| (scores[j] - m).exp() / z * vch[(g * s.max_ctx + j) * d + i])
                    .sum();
                want[(p * s.hq + h) * d + i] = a * sigmoid(gate[(p * s.hq + h) * d + i] as f64);
            }
        }
    }
    assert_close(
        &format!(
            "attention output (D {d}, {} q heads per kv head, {splits} splits)",
            s.hq / s.hkv
        ),
        &got,
        &want,
        1e-4,
    );
}

#[test]
#[ignore = "needs a CUDA device"]
fn attention_d256_matches_host() {
    check(256, 8, 7);
}

#[test]
#[ignore = "needs a CUDA device"]
fn attention_model_shape_matches_host() {
    // The 35B-A3B's attention: 16 q heads over 2 kv heads of 256.
    check(256, 16, 33);
}

#[test]
#[ignore = "needs a CUDA device"]
fn attention_d128_with_empty_splits_matches_host() {
    check(128, 12, 64);
}

#[test]
#[ignore = "needs a CUDA device"]
fn attention_single_split_matches_host() {
    check(64, 2, 1);
    check(64, 4, 1);
}
