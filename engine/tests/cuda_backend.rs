//! The CUDA backend against the CPU backend on the same synthetic weights (per block and end
//! to end, several seeds), speculative = plain greedy on the GPU, graph replay = eager.
//! Every test needs a CUDA device: they are ignored unless run with `--ignored` (`.ci/gpu-tests`).

mod common;

use common::{generate, gpu_cfg as cfg, one_at_a_time, rand_vec};
use engine::backend::{
    AttnCaches, AttnProjections, Backend, GdnGate, GdnProjections, GdnState, KvCache, OutFfn,
    RmsNorm, SlotPair,
};
use engine::bench::{self, BenchPlan};
use engine::config::{Ffn, ModelConfig};
use engine::cpu::CpuBackend;
use engine::cuda::{timeline, CudaBackend, FoldNorms, Gpu};
use engine::model::{rope_table, Model};
use engine::options::{Arm, PoolLayout};
use engine::state::PoolMap;
use engine::weights::{Mixer, WeightSource, Weights};

/// A backend on the device; the tests that call it are `#[ignore = "needs a CUDA device"]`.
fn cuda(graphs: bool) -> CudaBackend {
    CudaBackend::new(0, graphs, Default::default())
        .unwrap_or_else(|e| panic!("this test needs a CUDA device: {e:#}"))
}

/// max |a − b| / max |b|, printed and returned.
fn rel_err(what: &str, gpu: &[f32], cpu: &[f32]) -> f64 {
    assert_eq!(gpu.len(), cpu.len());
    let diff = gpu
        .iter()
        .zip(cpu)
        .map(|(a, b)| (*a as f64 - *b as f64).abs())
        .fold(0.0, f64::max);
    let scale = cpu.iter().map(|b| (*b as f64).abs()).fold(0.0, f64::max);
    assert!(
        gpu.iter().all(|v| v.is_finite()),
        "{what}: non-finite GPU output"
    );
    let e = diff / scale.max(1e-30);
    println!("{what}: relative error {e:.3e} (max |ref| {scale:.3})");
    e
}

/// Both backends with the same weights, an input buffer uploaded to each.
struct Pair {
    c: ModelConfig,
    cpu: CpuBackend,
    gpu: CudaBackend,
    wc: Weights<CpuBackend>,
    wg: Weights<CudaBackend>,
}

impl Pair {
    fn new(seed: u64, gpu: CudaBackend) -> Self {
        Self::with(cfg(), seed, gpu)
    }

    fn with(c: ModelConfig, seed: u64, gpu: CudaBackend) -> Self {
        let (mut cpu, mut gpu) = (CpuBackend::new(), gpu);
        cpu.prepare(&c, 8).unwrap();
        gpu.prepare(&c, 8).unwrap();
        let src = WeightSource::Synthetic { seed };
        let wc = Weights::load(&c, &src, &mut cpu).unwrap();
        let wg = Weights::load(&c, &src, &mut gpu).unwrap();
        gpu.derive_weights(&c, &wg).unwrap();
        gpu.take_error().unwrap();
        Pair {
            c,
            cpu,
            gpu,
            wc,
            wg,
        }
    }
}

/// A test input on the host and its copy on the GPU.
fn input(
    gpu: &mut CudaBackend,
    tag: &str,
    n: usize,
    scale: f32,
) -> (Vec<f32>, engine::cuda::CudaBuf) {
    let v = rand_vec(tag, n, scale);
    let g = gpu.upload(&v).unwrap();
    (v, g)
}

#[test]
#[ignore = "needs a CUDA device"]
fn every_block_matches_the_cpu_backend() {
    let _device = one_at_a_time();
    for seed in [0, 1, 2] {
        let gpu = cuda(false);
        let mut p = Pair::new(seed, gpu);
        let c = p.c.clone();
        let (h, t) = (c.hidden, 3);
        let tag = |s: &str| format!("seed {seed} {s}");
        // Synthetic weights are generated on the device bit for bit as on the host.
        let lm = p.gpu.read_buf(
            &engine::cuda::CudaBuf::Bf16(p.wg.lm_head.data.clone()),
            64 * h,
        );
        assert_eq!(lm, p.wc.lm_head.data[..64 * h], "LM head weights differ");
        let fc = p.gpu.read_buf(
            &engine::cuda::CudaBuf::Bf16(p.wg.mtp.fc.data.clone()),
            8 * 2 * h,
        );
        assert_eq!(
            fc,
            p.wc.mtp.fc.data[..8 * 2 * h],
            "MTP fc (identity term) differs"
        );

        let (x, xg) = input(&mut p.gpu, "x", t * h, 2.0);
        let mut out_c = vec![0.0; t * h];
        let mut out_g = p.gpu.alloc(t * h).unwrap();
        let (norm_c, norm_g) = (
            RmsNorm {
                w: &p.wc.norm,
                eps: 1e-6,
            },
            RmsNorm {
                w: &p.wg.norm,
                eps: 1e-6,
            },
        );
        p.cpu.rms_norm(&x, norm_c, t, h, &mut out_c);
        p.gpu.rms_norm(&xg, norm_g, t, h, &mut out_g);
        assert!(rel_err(&tag("rms_norm"), &p.gpu.read_buf(&out_g, t * h), &out_c) < 1e-5);

        // Layer 0 (GDN): projections, conv, recurrence over two calls, gated norm.
        let (Mixer::Gdn(gc), Mixer::Gdn(gg)) = (&p.wc.layers[0].mixer, &p.wg.layers[0].mixer)
        else {
            panic!("layer 0 is GDN")
        };
        let ch = c.conv_channels();
        let (mut qkv_c, mut qkv_g) = (vec![0.0; t * ch], p.gpu.alloc(t * ch).unwrap());
        p.cpu.matmul(&gc.qkv, &x, t, &mut qkv_c);
        p.gpu.matmul(&gg.qkv, &xg, t, &mut qkv_g);
        assert!(rel_err(&tag("matmul qkv"), &p.gpu.read_buf(&qkv_g, t * ch), &qkv_c) < 1e-5);
        let hv = c.gdn_value_heads;
        let (ba, bag) = input(&mut p.gpu, "ba", t * hv, 2.0);
        let one_layer = PoolMap {
            layers: 1,
            ..PoolMap::new(&c, PoolLayout::ByLayer)
        };
        let (mut pool_c, mut pool_g) = (
            p.cpu.alloc_pool(&one_layer).unwrap(),
            p.gpu.alloc_pool(&one_layer).unwrap(),
        );
        let conv = SlotPair {
            src: 0,
            dst: c.conv_slot_bytes(),
        };
        let rec = SlotPair {
            src: 2 * c.conv_slot_bytes(),
            dst: 2 * c.conv_slot_bytes() + c.rec_slot_bytes(),
        };
        let (mut cv_c, mut cv_g) = (vec![0.0; t * ch], p.gpu.alloc(t * ch).unwrap());
        let (mut o_c, mut o_g) = (vec![0.0; t * hv * 128], p.gpu.alloc(t * hv * 128).unwrap());
        for call in 0..2 {
            // The second call reads the slots the first wrote.
            let (cs, rs) = if call == 0 {
                (conv, rec)
            } else {
                (
                    SlotPair {
                        src: conv.dst,
                        dst: conv.dst,
                    },
                    SlotPair {
                        src: rec.dst,
                        dst: rec.dst,
                    },
                )
            };
            let mut state_c = GdnState {
                pool: &mut pool_c,
                conv: cs,
                rec: rs,
            };
            let mut state_g = GdnState {
                pool: &mut pool_g,
                conv: cs,
                rec: rs,
            };
            p.cpu.gdn_conv(&c, gc, &mut state_c, &qkv_c, t, &mut cv_c);
            p.gpu.gdn_conv(&c, gg, &mut state_g, &qkv_g, t, &mut cv_g);
            let proj_c = GdnProjections {
                qkv: &cv_c,
                b: &ba,
                a: &ba,
            };
            let proj_g = GdnProjections {
                qkv: &cv_g,
                b: &bag,
                a: &bag,
            };
            p.cpu
                .gdn_recurrence(&c, gc, &mut state_c, proj_c, t, &mut o_c);
            p.gpu
                .gdn_recurrence(&c, gg, &mut state_g, proj_g, t, &mut o_g);
        }
        // The GPU conv rounds the newest input to bf16 as it enters the window, the CPU only
        // when it becomes history: the two differ by bf16 rounding (~2^-9).
        assert!(rel_err(&tag("gdn_conv"), &p.gpu.read_buf(&cv_g, t * ch), &cv_c) < 4e-3);
        assert!(
            rel_err(
                &tag("gdn_recurrence"),
                &p.gpu.read_buf(&o_g, t * hv * 128),
                &o_c
            ) < 1e-2
        );
        let (z, zg) = input(&mut p.gpu, "z", t * hv * 128, 2.0);
        let (mut n_c, mut n_g) = (vec![0.0; t * hv * 128], p.gpu.alloc(t * hv * 128).unwrap());
        let gate_c = GdnGate {
            z: &z,
            out: &mut n_c,
        };
        let gate_g = GdnGate {
            z: &zg,
            out: &mut n_g,
        };
        p.cpu.gated_norm(&c, gc, &o_c, gate_c, t);
        p.gpu.gated_norm(&c, gg, &o_g, gate_g, t);
        assert!(
            rel_err(
                &tag("gated_norm"),
                &p.gpu.read_buf(&n_g, t * hv * 128),
                &n_c
            ) < 1e-2
        );

        // Layer 3 (attention): two calls, the second attending to the first's cache entries.
        let (Mixer::Attn(ac), Mixer::Attn(ag)) = (&p.wc.layers[3].mixer, &p.wg.layers[3].mixer)
        else {
            panic!("layer 3 is attention")
        };
        let (hq, d, kvw) = (
            c.attn_heads,
            c.attn_head_dim,
            c.attn_kv_heads * c.attn_head_dim,
        );
        let (qg, qgg) = input(&mut p.gpu, "qg", t * 2 * hq * d, 2.0);
        let (k, kg) = input(&mut p.gpu, "k", t * kvw, 2.0);
        let (v, vg) = input(&mut p.gpu, "v", t * kvw, 2.0);
        let mut cache_c = KvCache {
            k: p.cpu.alloc_cache(c.max_context * kvw).unwrap(),
            v: p.cpu.alloc_cache(c.max_context * kvw).unwrap(),
        };
        let mut cache_g = KvCache {
            k: p.gpu.alloc_cache(c.max_context * kvw).unwrap(),
            v: p.gpu.alloc_cache(c.max_context * kvw).unwrap(),
        };
        let rope_c = rope_table(&c);
        let rope_g = p.gpu.upload(&rope_c).unwrap();
        let (mut at_c, mut at_g) = (vec![0.0; t * hq * d], p.gpu.alloc(t * hq * d).unwrap());
        for pos0 in [0, t] {
            p.gpu.set_positions(pos0);
            let proj_c = AttnProjections {
                qg: &qg,
                k: &k,
                v: &v,
            };
            let caches_c = AttnCaches {
                rope: &rope_c,
                kv: &mut cache_c,
                pos0,
            };
            p.cpu.attention(&c, ac, proj_c, caches_c, t, &mut at_c);
            let proj_g = AttnProjections {
                qg: &qgg,
                k: &kg,
                v: &vg,
            };
            let caches_g = AttnCaches {
                rope: &rope_g,
                kv: &mut cache_g,
                pos0,
            };
            p.gpu.attention(&c, ag, proj_g, caches_g, t, &mut at_g);
        }
        p.gpu.take_error().unwrap();
        assert!(rel_err(&tag("attention"), &p.gpu.read_buf(&at_g, t * hq * d), &at_c) < 2e-2);

        // MoE added onto a residual stream.
        let (mut acc_c, mut acc_g) = (x.clone(), xg);
        p.cpu
            .ffn_add(&c, &p.wc.layers[0].ffn, &out_c, t, &mut acc_c);
        p.gpu
            .ffn_add(&c, &p.wg.layers[0].ffn, &out_g, t, &mut acc_g);
        assert!(rel_err(&tag("moe"), &p.gpu.read_buf(&acc_g, t * h), &acc_c) < 1e-4);

        // The input norm folded into the projections (ENGINE_FOLD_NORM=on) and the
        // post-attention norm into the MoE's router (always), on a raw residual stream
        // (larger than a normalised one).
        p.gpu.gpu.options.fold_norms = FoldNorms::On;
        let (xr, xrg) = input(&mut p.gpu, "x residual", t * h, 6.0);
        let (mut xn_c, mut xn_g) = (vec![0.0; t * h], p.gpu.alloc(t * h).unwrap());
        let (mut z_c, mut z_g) = (vec![0.0; t * hv * 128], p.gpu.alloc(t * hv * 128).unwrap());
        let (norm_c, norm_g) = (&p.wc.layers[0].input_norm, &p.wg.layers[0].input_norm);
        p.cpu.norm_matmul_many(
            &xr,
            RmsNorm {
                w: norm_c,
                eps: 1e-6,
            },
            h,
            t,
            &mut xn_c,
            &mut [(&gc.qkv, &mut qkv_c), (&gc.z, &mut z_c)],
        );
        p.gpu.norm_matmul_many(
            &xrg,
            RmsNorm {
                w: norm_g,
                eps: 1e-6,
            },
            h,
            t,
            &mut xn_g,
            &mut [(&gg.qkv, &mut qkv_g), (&gg.z, &mut z_g)],
        );
        assert!(
            rel_err(
                &tag("qkv, input norm folded"),
                &p.gpu.read_buf(&qkv_g, t * ch),
                &qkv_c
            ) < 1e-5
        );
        assert!(
            rel_err(
                &tag("z, input norm folded"),
                &p.gpu.read_buf(&z_g, t * hv * 128),
                &z_c
            ) < 1e-5
        );
        let (mut acc_c, mut acc_g) = (xr, xrg);
        let (post_c, post_g) = (&p.wc.layers[0].post_norm, &p.wg.layers[0].post_norm);
        p.cpu.norm_ffn_add(
            &c,
            &p.wc.layers[0].ffn,
            RmsNorm {
                w: post_c,
                eps: 1e-6,
            },
            t,
            &mut xn_c,
            &mut acc_c,
        );
        p.gpu.norm_ffn_add(
            &c,
            &p.wg.layers[0].ffn,
            RmsNorm {
                w: post_g,
                eps: 1e-6,
            },
            t,
            &mut xn_g,
            &mut acc_g,
        );
        assert!(
            rel_err(
                &tag("moe, post norm folded"),
                &p.gpu.read_buf(&acc_g, t * h),
                &acc_c
            ) < 1e-4
        );

        // The GDN layer's output projection and its MoE, the router's rows in the
        // projection's launch (ENGINE_ROUTER_IN_OUT, the default) on the GPU, step by step on
        // the CPU.
        assert_eq!(
            p.gpu.routed_projections(),
            c.layers + 1,
            "the router through every MoE layer's output projection (and the MTP layer's) was made"
        );
        let (mut acc_c, mut acc_g) = (acc_c, acc_g);
        let mut ran_between = [false; 2];
        let layer_c = OutFfn {
            out: &gc.out,
            mixed: &n_c,
            ffn: &p.wc.layers[0].ffn,
            norm: RmsNorm {
                w: post_c,
                eps: 1e-6,
            },
        };
        p.cpu
            .out_norm_ffn_add(&c, layer_c, t, &mut xn_c, &mut acc_c, |_| {
                ran_between[0] = true
            });
        let layer_g = OutFfn {
            out: &gg.out,
            mixed: &n_g,
            ffn: &p.wg.layers[0].ffn,
            norm: RmsNorm {
                w: post_g,
                eps: 1e-6,
            },
        };
        p.gpu
            .out_norm_ffn_add(&c, layer_g, t, &mut xn_g, &mut acc_g, |_| {
                ran_between[1] = true
            });
        assert_eq!(
            ran_between, [true; 2],
            "both backends run what the caller puts between the projection and the FFN"
        );
        assert!(
            rel_err(
                &tag("output projection + moe, the router's rows in the projection"),
                &p.gpu.read_buf(&acc_g, t * h),
                &acc_c
            ) < 1e-4
        );

        // LM head argmax and the embedding.
        let (mut tok_c, mut tok_g) = (
            p.cpu.alloc_tokens(t).unwrap(),
            p.gpu.alloc_tokens(t).unwrap(),
        );
        p.cpu
            .lm_head_argmax(&p.wc.lm_head, &out_c, 0, t, &mut tok_c, 0);
        p.gpu
            .lm_head_argmax(&p.wg.lm_head, &out_g, 0, t, &mut tok_g, 0);
        let mut got = vec![0u32; t];
        p.gpu.read_tokens(&tok_g, 0, &mut got);
        assert_eq!(got, tok_c, "seed {seed}: LM head argmax");
        let (mut e_c, mut e_g) = (vec![0.0; t * h], p.gpu.alloc(t * h).unwrap());
        p.cpu.embed(&p.wc.embed, &tok_c, 0, t, &mut e_c);
        p.gpu.embed(&p.wg.embed, &tok_g, 0, t, &mut e_g);
        assert_eq!(
            p.gpu.read_buf(&e_g, t * h),
            e_c,
            "seed {seed}: embedding rows"
        );
        p.gpu.take_error().unwrap();
    }
}

/// The dense SwiGLU FFN (the 27B shape's), from normalised rows and with its norm folded in.
#[test]
#[ignore = "needs a CUDA device"]
fn dense_ffn_matches_the_cpu_backend() {
    let _device = one_at_a_time();
    let gpu = cuda(false);
    let mut c = cfg();
    c.ffn = Ffn::Dense { size: 512 };
    c.validate().unwrap();
    let mut p = Pair::with(c.clone(), 5, gpu);
    p.gpu.gpu.options.fold_norms = FoldNorms::On;
    let (h, t) = (c.hidden, 4);
    let (x, xg) = input(&mut p.gpu, "dense x", t * h, 6.0);
    let (mut xn_c, mut xn_g) = (vec![0.0; t * h], p.gpu.alloc(t * h).unwrap());
    let (norm_c, norm_g) = (&p.wc.layers[0].post_norm, &p.wg.layers[0].post_norm);
    let (mut acc_c, mut acc_g) = (x.clone(), p.gpu.upload(&x).unwrap());
    p.cpu.norm_ffn_add(
        &c,
        &p.wc.layers[0].ffn,
        RmsNorm {
            w: norm_c,
            eps: 1e-6,
        },
        t,
        &mut xn_c,
        &mut acc_c,
    );
    p.gpu.norm_ffn_add(
        &c,
        &p.wg.layers[0].ffn,
        RmsNorm {
            w: norm_g,
            eps: 1e-6,
        },
        t,
        &mut xn_g,
        &mut acc_g,
    );
    assert!(
        rel_err(
            "dense ffn, post norm folded",
            &p.gpu.read_buf(&acc_g, t * h),
            &acc_c
        ) < 1e-4
    );
    let (mut acc_c, mut acc_g) = (x, xg);
    p.cpu.ffn_add(&c, &p.wc.layers[0].ffn, &xn_c, t, &mut acc_c);
    let xn_up = p.gpu.upload(&xn_c).unwrap();
    p.gpu
        .ffn_add(&c, &p.wg.layers[0].ffn, &xn_up, t, &mut acc_g);
    assert!(rel_err("dense ffn", &p.gpu.read_buf(&acc_g, t * h), &acc_c) < 1e-4);
    p.gpu.take_error().unwrap();
}

#[test]
#[ignore = "needs a CUDA device"]
fn end_to_end_hidden_states_and_tokens_match_the_cpu() {
    let _device = one_at_a_time();
    for seed in [0, 3] {
        let gpu = cuda(true);
        let c = cfg();
        let src = WeightSource::Synthetic { seed };
        let mut mc = Model::new(c.clone(), &src, Arm::default(), CpuBackend::new(), 16).unwrap();
        let mut mg = Model::new(c.clone(), &src, Arm::default(), gpu, 16).unwrap();
        let prompt = engine::bench::prompts(seed, 1, 40, c.vocab).remove(0);
        let (fc, fg) = (
            mc.prefill(&prompt, 16, false),
            mg.prefill(&prompt, 16, false),
        );
        let (hc, hg) = (mc.hidden(8), mg.hidden(8));
        assert!(
            rel_err(
                &format!("seed {seed} final hidden after a 40-token prefill"),
                &hg,
                &hc
            ) < 3e-2
        );
        assert_eq!(fg, fc, "seed {seed}: first token");
        let (tc, _) = generate(&mut mc, &prompt, 16, 24, None);
        let (tg, _) = generate(&mut mg, &prompt, 16, 24, None);
        let same = tc.iter().zip(&tg).take_while(|(a, b)| a == b).count();
        println!(
            "seed {seed}: GPU and CPU agree on the first {same} of {} tokens",
            tc.len()
        );
        assert!(same >= 8, "seed {seed}: cpu {tc:?}\ngpu {tg:?}");
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn speculative_equals_plain_and_graphs_equal_eager() {
    let _device = one_at_a_time();
    for seed in [0, 1] {
        let (graphs, eager) = (cuda(true), cuda(false));
        let src = WeightSource::Synthetic { seed };
        let mut mg = Model::new(cfg(), &src, Arm::default(), graphs, 16).unwrap();
        let mut me = Model::new(cfg(), &src, Arm::default(), eager, 16).unwrap();
        let prompt = engine::bench::prompts(seed, 1, 37, cfg().vocab).remove(0);
        let (plain, _) = generate(&mut mg, &prompt, 16, 48, None);
        let distinct: std::collections::BTreeSet<_> = plain.iter().collect();
        assert!(
            distinct.len() > 5,
            "seed {seed}: degenerate output {plain:?}"
        );
        assert_eq!(
            generate(&mut me, &prompt, 16, 48, None).0,
            plain,
            "seed {seed}: eager plain decode differs from graph replay"
        );
        for k in [1, 3, 5] {
            let (spec, st) = generate(&mut mg, &prompt, 16, 48, Some(k));
            assert_eq!(spec, plain, "seed {seed}, K = {k}: {st:?}");
            let (spec_e, st_e) = generate(&mut me, &prompt, 16, 48, Some(k));
            assert_eq!(
                (spec_e, st_e),
                (spec, st),
                "seed {seed}, K = {k}: eager speculative differs from graph replay"
            );
            println!(
                "seed {seed} K={k}: {} rounds, acceptance {:.3}",
                st.rounds,
                st.acceptance_rate()
            );
        }
        // Dependent launch and the weight prefetch and preload change when kernels start,
        // never what they compute; folded norms round the normalised rows differently, so
        // only the tokens are compared there.
        let mut plain_launches = cuda(true);
        plain_launches.gpu.options.pdl = false;
        plain_launches.gpu.options.weight_prefetch = true;
        let mut mp = Model::new(cfg(), &src, Arm::default(), plain_launches, 16).unwrap();
        assert_eq!(
            generate(&mut mp, &prompt, 16, 48, Some(3)).0,
            plain,
            "seed {seed}: stream-ordered launches with prefetch differ from dependent launches"
        );
        let mut waiting = cuda(true);
        waiting.gpu.options.weight_preload = !waiting.gpu.options.weight_preload;
        let mut ml = Model::new(cfg(), &src, Arm::default(), waiting, 16).unwrap();
        assert_eq!(
            generate(&mut ml, &prompt, 16, 48, None).0,
            plain,
            "seed {seed}: the weight preload turned {} changes the tokens",
            if ml.backend.gpu.options.weight_preload {
                "on"
            } else {
                "off"
            }
        );
        assert_eq!(
            generate(&mut ml, &prompt, 16, 48, Some(3)).0,
            plain,
            "seed {seed}: the weight preload changes speculative decode"
        );
        // The default folds this MoE model's input norm (`auto`); unfolded, the rows round
        // differently, so only a prefix of the greedy tokens must agree.
        let mut unfolded = cuda(true);
        unfolded.gpu.options.fold_norms = FoldNorms::Off;
        let mut mu = Model::new(cfg(), &src, Arm::default(), unfolded, 16).unwrap();
        let (tokens, _) = generate(&mut mu, &prompt, 16, 48, None);
        let same = tokens
            .iter()
            .zip(&plain)
            .take_while(|(a, b)| a == b)
            .count();
        assert!(
            same >= 8,
            "seed {seed}: unfolded norms agree on only {same} tokens: {tokens:?}\nfolded {plain:?}"
        );
        assert_eq!(
            generate(&mut mu, &prompt, 16, 48, Some(3)).0,
            tokens,
            "seed {seed}: unfolded, speculative decode differs from plain"
        );
        // The router in a launch of its own instead of the output projection's sums its
        // logits in another order: a prefix of the tokens must agree, speculative = plain.
        let mut own_launch = cuda(true);
        own_launch.gpu.options.router_in_out = false;
        let mut mr = Model::new(cfg(), &src, Arm::default(), own_launch, 16).unwrap();
        assert!(
            mg.backend.routed_projections() > 0 && mr.backend.routed_projections() == 0,
            "ENGINE_ROUTER_IN_OUT picks where the router runs"
        );
        let (tokens, _) = generate(&mut mr, &prompt, 16, 48, None);
        let same = tokens
            .iter()
            .zip(&plain)
            .take_while(|(a, b)| a == b)
            .count();
        assert!(same >= 8, "seed {seed}: the router in its own launch agrees on only {same} tokens: {tokens:?}\nin the projection {plain:?}");
        assert_eq!(
            generate(&mut mr, &prompt, 16, 48, Some(3)).0,
            tokens,
            "seed {seed}: the router in its own launch, speculative decode differs from plain"
        );
        assert!(
            !mg.backend.graphs().is_empty(),
            "rounds were captured as graphs"
        );
        assert!(
            me.backend.graphs().is_empty(),
            "--no-cuda-graph captures nothing"
        );
    }
}

/// The timeline's kernels note every launch of a graph decode, in order and shape (else
/// `read` fails), each of a step's operations is there once per layer, the chain they add up
/// to fits in the decode's wall time, and the notes change no token.
#[test]
#[ignore = "needs a CUDA device"]
fn the_timeline_notes_every_launch_of_a_decode_and_changes_no_token() {
    let _device = one_at_a_time();
    let plain = cuda(true);
    let gpu = Gpu::with_timeline(0, 1 << 16)
        .expect("a device without a timeline opened, with one failed");
    let src = WeightSource::Synthetic { seed: 3 };
    let mut mp = Model::new(cfg(), &src, Arm::default(), plain, 16).unwrap();
    let mut mt = Model::new(
        cfg(),
        &src,
        Arm::default(),
        CudaBackend::on(gpu, true, Default::default()),
        16,
    )
    .unwrap();
    let prompt = engine::bench::prompts(3, 1, 29, cfg().vocab).remove(0);
    let first = mt.prefill(&prompt, 16, false);
    let mut out = vec![first];
    mt.decode_plain(first, 4, &mut out);
    let stream = mt.backend.gpu.stream.clone();
    mt.backend
        .gpu
        .timeline
        .as_mut()
        .expect("a timeline")
        .reset(&stream)
        .unwrap();
    let (steps, wall) = (24, std::time::Instant::now());
    let last = *out.last().unwrap();
    mt.decode_plain(last, steps, &mut out);
    let wall = wall.elapsed().as_secs_f64();
    mt.backend.take_error().unwrap();
    let timed = mt
        .backend
        .gpu
        .timeline
        .as_ref()
        .expect("a timeline")
        .read(&stream)
        .unwrap();
    assert_eq!(
        (timed.len() + 1) % steps,
        0,
        "{} launches noted for {steps} steps of one graph",
        timed.len() + 1
    );
    let ops = timeline::by_op(&timed);
    let calls = |label: &str| ops.iter().find(|r| r.label == label).map_or(0, |r| r.calls);
    let layers = cfg().layers as u64 * steps as u64;
    // The MoE with the output projection before it (ENGINE_ROUTER_IN_OUT, the default).
    assert_eq!(
        calls("gemv 256x512 += with the router's rows, and moe"),
        layers,
        "{ops:#?}"
    );
    assert_eq!(calls("lm_head_argmax"), steps as u64, "{ops:#?}");
    let chain: f64 = ops.iter().map(|r| r.ms * 1e-3).sum();
    println!(
        "timeline: {} launches, chain {:.1} µs a step, wall {:.1} µs a step",
        timed.len(),
        chain / steps as f64 * 1e6,
        wall / steps as f64 * 1e6
    );
    assert!(
        chain > 0.0 && chain <= wall,
        "chain {chain} s against wall {wall} s"
    );
    assert_eq!(
        generate(&mut mp, &prompt, 16, 4 + steps, None).0,
        out,
        "the timeline's kernels decode other tokens"
    );
}

/// `ENGINE_DECODE_PAD_PCT` through `engine bench`'s own loop, plain and speculative: P = 5
/// against P = 0 (the pad's nodes waiting nothing, as a ladder's base carries them) gives a
/// decode tok/s ratio within 1.5 % of 1/1.05 (median of alternated runs), with the same tokens
/// and rounds. Printed: the nodes' own cost against unset, and the share of the timed decode
/// the pads waited by their own clock (5/105 where every wait adds to the wall).
#[test]
#[ignore = "needs a CUDA device"]
fn a_five_percent_pad_slows_the_decode_to_1_over_1_05() {
    let _device = one_at_a_time();
    let src = WeightSource::Synthetic { seed: 2 };
    let arms = [None, Some(0.0), Some(5.0)];
    for draft in [None, Some(3)] {
        let plan = |decode_pad_pct| BenchPlan {
            n_prompt: 32,
            n_gen: 256,
            reps: 3,
            warmup: 1,
            warmup_decode: None,
            prefill_chunk: 16,
            draft_tokens: draft,
            prompts: 1,
            seed: 2,
            read_ceiling_gbs: None,
            decode_pad_pct,
        };
        let mut models: Vec<_> = arms
            .iter()
            .map(|_| Model::new(cfg(), &src, Arm::default(), cuda(true), 16).unwrap())
            .collect();
        let mut seconds = vec![Vec::new(); arms.len()];
        for pass in 0..5 {
            for i in (0..arms.len()).map(|j| (pass + j) % arms.len()) {
                let r = bench::run(&mut models[i], &plan(arms[i])).unwrap();
                if let (Some(pad), 0) = (r.decode_pad.filter(|p| p.pct > 0.0), pass) {
                    eprintln!(
                        "draft {draft:?}: the pads waited {:.2} % of the timed decode, {:.2} µs \
                         a round",
                        100.0 * pad.tally.waited_seconds
                            / (r.decode_seconds_mean * r.reps.len() as f64),
                        pad.round_seconds() * 1e6
                    );
                }
                seconds[i].push((r.decode_seconds_mean, r.output_digest, r.spec));
            }
        }
        let rounds: Vec<u64> = models.iter().map(|m| m.rounds_run()).collect();
        assert!(
            rounds.iter().all(|&r| r == rounds[0]),
            "draft {draft:?}: rounds {rounds:?} for arms {arms:?}"
        );
        for (runs, pct) in seconds.iter().zip(arms) {
            for (_, digest, spec) in runs {
                assert_eq!(
                    (digest, spec),
                    (&seconds[0][0].1, &seconds[0][0].2),
                    "draft {draft:?}, ENGINE_DECODE_PAD_PCT {pct:?}"
                );
            }
        }
        // Decode tok/s of arm `i` over unset's, pass by pass; the median.
        let speed = |i: usize| {
            let mut r: Vec<f64> = (0..seconds[0].len())
                .map(|p| seconds[0][p].0 / seconds[i][p].0)
                .collect();
            r.sort_by(f64::total_cmp);
            r[r.len() / 2]
        };
        let (zero, five) = (speed(1), speed(2));
        let against_zero = five / zero;
        eprintln!(
            "draft {draft:?}: decode tok/s against unset: P = 0 (the pad's nodes alone) {:+.3} %, \
             P = 5 {:+.3} %; P = 5 against P = 0: {:+.3} % (expected {:+.3} %)",
            100.0 * (zero - 1.0),
            100.0 * (five - 1.0),
            100.0 * (against_zero - 1.0),
            100.0 * (1.0 / 1.05 - 1.0)
        );
        assert!(
            (against_zero * 1.05 - 1.0).abs() <= 0.015,
            "draft {draft:?}: P = 5 gives {against_zero:.4} of P = 0's speed, expected 1/1.05"
        );
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn a_model_built_again_after_a_placement_spacer_generates_the_same_tokens() {
    let _device = one_at_a_time();
    let c = cfg();
    let src = WeightSource::Synthetic { seed: 5 };
    let prompt = engine::bench::prompts(5, 1, 40, c.vocab).remove(0);
    let mut first = Model::new(c.clone(), &src, Arm::default(), cuda(true), 16).unwrap();
    let (before, _) = generate(&mut first, &prompt, 16, 24, None);
    let backend = first.into_backend().fresh();
    let spacer = backend.gpu.placement_spacer(2).unwrap();
    assert_eq!(spacer.len() % (2 << 20), 0, "whole 2 MiB pages");
    assert!(spacer.len() <= 1 << 30);
    let mut again = Model::new(c, &src, Arm::default(), backend, 16).unwrap();
    let (after, _) = generate(&mut again, &prompt, 16, 24, None);
    assert_eq!(after, before, "the same tokens from the other placement");
}
