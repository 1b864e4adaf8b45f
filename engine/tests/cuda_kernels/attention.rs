//! Gated attention decode over the bf16 KV cache against an f64 reference.

use super::{assert_close, download, gpu, sigmoid, upload, weights, Rng};
use cudarc::driver::CudaSlice;
use engine::cuda::{AttnShape, Gpu};
use engine::model::rope_table;
use half::bf16;

const THETA: f64 = 1e7;

fn rms_rope(x: &[f32], w: &[f64], pos: usize, s: &AttnShape) -> Vec<f64> {
    let d = s.head_dim;
    let inv = 1.0 / (x.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / d as f64 + s.eps as f64).sqrt();
    let n: Vec<f64> = (0..d).map(|i| x[i] as f64 * inv * (1.0 + w[i])).collect();
    let half = s.rot_dim / 2;
    (0..d)
        .map(|i| {
            if i >= s.rot_dim {
                return n[i];
            }
            let f = pos as f64 * THETA.powf(-2.0 * (i % half) as f64 / s.rot_dim as f64);
            if i < half { n[i] * f.cos() - n[i + half] * f.sin() } else { n[i] * f.cos() + n[i - half] * f.sin() }
        })
        .collect()
}

fn shape(head_dim: usize, hq: usize) -> AttnShape {
    AttnShape { hq, hkv: 2, head_dim, max_ctx: 512, rot_dim: head_dim / 4, eps: 1e-6 }
}

/// Caches filled with old keys and values, and the projection rows of `t` new positions:
/// qg [t][hq][2D] (query, then gate), k, v [t][hkv][D].
struct Case {
    kc: CudaSlice<bf16>,
    vc: CudaSlice<bf16>,
    qg: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
}

fn case(gpu: &Gpu, s: &AttnShape, t: usize) -> Case {
    let d = s.head_dim;
    let mut rng = Rng::new(21);
    let (qg, k, v) = (rng.vec(t * s.hq * 2 * d, 2.0), rng.vec(t * s.hkv * d, 2.0), rng.vec(t * s.hkv * d, 1.0));
    let (kc, _) = weights(gpu, "attn.k_cache", s.cache_len(), 0.0, 2.0);
    let (vc, _) = weights(gpu, "attn.v_cache", s.cache_len(), 0.0, 1.0);
    Case { kc, vc, qg, k, v }
}

/// Positions `rows` of `c` in one launch at `pos0`: the output [rows][hq][D].
fn run(gpu: &Gpu, s: &AttnShape, c: &mut Case, rows: std::ops::Range<usize>, pos0: usize, splits: usize) -> Vec<f32> {
    let (d, t) = (s.head_dim, rows.len());
    let part = |v: &[f32], width: usize| upload(gpu, &v[rows.start * width..rows.end * width]);
    let (qn, _) = weights(gpu, "attn.q_norm", d, 0.0, 0.5);
    let (kn, _) = weights(gpu, "attn.k_norm", d, 0.0, 0.5);
    let rope = upload(gpu, &rope_table(s.max_ctx, s.rot_dim, THETA));
    let pos = upload(gpu, &[pos0 as i32]);
    let mut scratch = gpu.stream.alloc_zeros::<f32>(s.scratch_len(t, splits)).unwrap();
    let mut out = gpu.stream.alloc_zeros::<f32>(t * s.hq * d).unwrap();
    let (qg, k, v) = (part(&c.qg, s.hq * 2 * d), part(&c.k, s.hkv * d), part(&c.v, s.hkv * d));
    gpu.attention(&qg, &k, &v, &qn, &kn, &rope, &pos, &mut c.kc, &mut c.vc, &mut scratch, &mut out, t, splits, *s).unwrap();
    download(gpu, &out)
}

/// `hq` q heads over 2 kv heads: groups of 1 to 8 q heads per kv head.
fn check(head_dim: usize, hq: usize, splits: usize) {
    let Some(gpu) = gpu() else { return };
    let s = shape(head_dim, hq);
    let (t, pos0, d) = (3, 300usize, head_dim);
    let mut c = case(gpu, &s, t);
    let (_, qnh) = weights(gpu, "attn.q_norm", d, 0.0, 0.5);
    let (_, knh) = weights(gpu, "attn.k_norm", d, 0.0, 0.5);
    let got = run(gpu, &s, &mut c, 0..t, pos0, splits);
    let Case { kc, vc, qg, k, v } = &c;

    let kch: Vec<f64> = download(gpu, kc).iter().map(|x| x.to_f64()).collect();
    let vch: Vec<f64> = download(gpu, vc).iter().map(|x| x.to_f64()).collect();
    let (mut want_q, mut want_k, mut got_k, mut want_v, mut got_v) = (vec![], vec![], vec![], vec![], vec![]);
    for p in 0..t {
        for h in 0..s.hq {
            want_q.extend(rms_rope(&qg[(p * s.hq + h) * 2 * d..][..d], &qnh, pos0 + p, &s));
        }
        for g in 0..s.hkv {
            let at = (g * s.max_ctx + pos0 + p) * d;
            want_k.extend(rms_rope(&k[(p * s.hkv + g) * d..][..d], &knh, pos0 + p, &s));
            got_k.extend(kch[at..][..d].iter().map(|x| *x as f32));
            want_v.extend(v[(p * s.hkv + g) * d..][..d].iter().map(|x| bf16::from_f32(*x).to_f64()));
            got_v.extend(vch[at..][..d].iter().map(|x| *x as f32));
        }
    }
    assert_close(&format!("key cache append (D {d})"), &got_k, &want_k, 8e-3);
    assert_close(&format!("value cache append (D {d})"), &got_v, &want_v, 0.0);

    let mut want = vec![0.0; t * s.hq * d];
    for p in 0..t {
        for h in 0..s.hq {
            let g = h / (s.hq / s.hkv);
            let qv = &want_q[(p * s.hq + h) * d..][..d];
            let len = pos0 + p + 1;
            let scores: Vec<f64> = (0..len).map(|j| (0..d).map(|i| qv[i] * kch[(g * s.max_ctx + j) * d + i]).sum::<f64>() / (d as f64).sqrt()).collect();
            let m = scores.iter().cloned().fold(f64::MIN, f64::max);
            let z: f64 = scores.iter().map(|x| (x - m).exp()).sum();
            for i in 0..d {
                let a: f64 = (0..len).map(|j| (scores[j] - m).exp() / z * vch[(g * s.max_ctx + j) * d + i]).sum();
                want[(p * s.hq + h) * d + i] = a * sigmoid(qg[(p * s.hq + h) * 2 * d + d + i] as f64);
            }
        }
    }
    assert_close(&format!("attention output (D {d}, {} q heads per kv head, {splits} splits)", s.hq / s.hkv), &got, &want, 1e-4);
}

#[test]
fn attention_d256_matches_host() {
    check(256, 8, 7);
}

#[test]
fn attention_model_shape_matches_host() {
    // The 35B-A3B's attention: 16 q heads over 2 kv heads of 256.
    check(256, 16, 33);
}

#[test]
fn attention_d128_with_empty_splits_matches_host() {
    check(128, 12, 64);
}

#[test]
fn attention_single_split_matches_host() {
    check(64, 2, 1);
    check(64, 4, 1);
}

/// Speculative verify equals plain decode: T positions in one launch (the new keys normalised
/// and rotated inside each block) give the output and caches of T launches of one position
/// (each reading the keys before it from the cache), bit for bit.
fn positions_alone_equal_together(head_dim: usize, hq: usize, splits: usize) {
    let Some(gpu) = gpu() else { return };
    let s = shape(head_dim, hq);
    let (t, pos0) = (4, 301usize);
    let mut together = case(gpu, &s, t);
    let out_together = run(gpu, &s, &mut together, 0..t, pos0, splits);
    let mut alone = case(gpu, &s, t);
    let out_alone: Vec<f32> = (0..t).flat_map(|p| run(gpu, &s, &mut alone, p..p + 1, pos0 + p, splits)).collect();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&out_together), bits(&out_alone), "attention output, {t} positions in one launch against one a launch");
    assert_eq!(download(gpu, &together.kc), download(gpu, &alone.kc), "key cache");
    assert_eq!(download(gpu, &together.vc), download(gpu, &alone.vc), "value cache");
}

#[test]
fn attention_positions_alone_equal_together() {
    // New keys within one split, and spread over several (6 keys a split at 33 splits).
    positions_alone_equal_together(256, 16, 1);
    positions_alone_equal_together(256, 16, 33);
    positions_alone_equal_together(128, 4, 64);
}
