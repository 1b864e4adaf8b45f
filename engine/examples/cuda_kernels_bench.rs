//! Achieved read bandwidth of each CUDA kernel at the Qwen3.6-35B-A3B shapes, against the
//! measured read ceiling. Each timed launch reads data that is not in L2: launches cycle
//! through copies (layers) that together exceed the L2 several times.
//!
//!     cargo run --release -p engine --example cuda_kernels_bench

use anyhow::Result;
use cudarc::driver::CudaSlice;
use engine::chain::{decode_stages, Stage};
use engine::config::ModelConfig;
use engine::cuda::ceiling::{ChainEarly, ChainForm, CHAIN_BATCHES};
use engine::cuda::gemv::{ArgmaxScratch, FoldedNorm};
use engine::cuda::{
    synthetic_key, AttnScratch, AttnShape, GdnShape, Gpu, GpuOptions, MoeScratch, MoeShape,
    MoeStage, MoeWeights, RouterThroughOut,
};
use half::bf16;

/// Data a benchmark cycles through per timed batch, so that L2 hits do not flatter it.
const CYCLE_BYTES: usize = 512 << 20;

struct Bench<'a> {
    gpu: &'a Gpu,
    ceiling_gbs: f64,
}

impl Bench<'_> {
    fn weights(&self, name: &str, n: usize, scale: f32) -> Result<CudaSlice<bf16>> {
        let mut w = self.gpu.stream.alloc_zeros::<bf16>(n)?;
        self.gpu
            .fill_synthetic(&mut w, 1, synthetic_key(name), 0.0, scale)?;
        Ok(w)
    }

    /// Activations in f32 with the synthetic weights' values.
    fn activations(&self, name: &str, n: usize, scale: f32) -> Result<CudaSlice<f32>> {
        let v: Vec<f32> = self
            .gpu
            .stream
            .clone_dtoh(&self.weights(name, n, scale)?)?
            .iter()
            .map(|v| v.to_f32())
            .collect();
        Ok(self.gpu.stream.clone_htod(&v)?)
    }

    /// Times `copies` launches per batch (median of 20 batches), issued one by one on the
    /// stream and replayed as a captured graph (as a decode round runs), and prints one row;
    /// GB/s and the ceiling share are the graph's.
    fn row(
        &self,
        kernel: &str,
        shape: &str,
        bytes: usize,
        copies: usize,
        mut launch: impl FnMut(usize) -> Result<()>,
    ) -> Result<()> {
        let stream_ms = self
            .gpu
            .time_median_ms(3, 20, || (0..copies).try_for_each(&mut launch))?
            / copies as f64;
        let graph = self
            .gpu
            .capture(|_| (0..copies).try_for_each(&mut launch))?;
        let ms = self.gpu.time_median_ms(3, 20, || {
            graph
                .launch()
                .map_err(|e| anyhow::anyhow!("graph launch: {e:?}"))
        })? / copies as f64;
        let gbs = bytes as f64 / (ms * 1e-3) / 1e9;
        println!(
            "{kernel:<22} {shape:<40} {:>9.2} {:>10.2} {:>9.2} {:>7.0} {:>6.1}%",
            bytes as f64 / 1e6,
            stream_ms * 1e3,
            ms * 1e3,
            gbs,
            100.0 * gbs / self.ceiling_gbs
        );
        Ok(())
    }
}

fn copies_for(bytes: usize) -> usize {
    CYCLE_BYTES.div_ceil(bytes).clamp(1, 64)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("cuda_kernels_bench: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let mut gpu = Gpu::new(0)?;
    gpu.options = GpuOptions::from_env()?;
    println!("options: {}", gpu.options.describe());
    let i = &gpu.info;
    println!("device: {} (sm_{}{}), {} SMs, L2 {} B, persisting L2 max {} B, access policy window max {} B, memory {} B",
        i.name, i.compute_capability.0, i.compute_capability.1, i.sm_count, i.l2_bytes, i.persisting_l2_max_bytes, i.access_policy_max_window_bytes, i.total_mem_bytes);
    let ceilings: Vec<f64> = (0..3)
        .map(|_| gpu.measure_read_ceiling_gbs(4 << 30))
        .collect::<Result<_>>()?;
    let ceiling_gbs = ceilings.iter().cloned().fold(0.0, f64::max);
    println!("read ceiling (float4 grid-stride over 4 GiB, median of 10, best of 3 runs): {ceiling_gbs:.0} GB/s ({:?})", ceilings.iter().map(|c| c.round()).collect::<Vec<_>>());
    let sync = gpu.measure_stage_sync_us()?;
    println!(
        "a stage waiting for the one before ({} blocks of 128 threads): a dependent launch {:.2} us ({:.2} us with a handoff), a grid barrier in one launch {:.2} us ({:.2} us with a handoff)",
        i.sm_count, sync.launch_us, sync.launch_handoff_us, sync.barrier_us, sync.barrier_handoff_us
    );
    chain_rows(&gpu, ceiling_gbs)?;
    println!();
    println!(
        "{:<22} {:<40} {:>9} {:>10} {:>9} {:>7} {:>7}",
        "kernel", "shape", "MB read", "us stream", "us graph", "GB/s", "ceiling"
    );
    let b = Bench {
        gpu: &gpu,
        ceiling_gbs,
    };
    gemv_rows(&b)?;
    lm_head_row(&b)?;
    moe_row(&b)?;
    gdn_rows(&b)?;
    attention_rows(&b)?;
    Ok(())
}

fn gemv_rows(b: &Bench) -> Result<()> {
    let pool = b.weights("bench.gemv", CYCLE_BYTES / 2 + (64 << 20), 0.02)?;
    let x = b.weights("bench.x", 8 * 8192, 1.0)?;
    let xf: CudaSlice<f32> = b.gpu.stream.clone_htod(&vec![0.5f32; 8 * 8192])?;
    let mut y = b.gpu.stream.alloc_zeros::<f32>(8 * 12288)?;
    for (name, rows, cols, t) in [
        ("gdn in_proj qkvz", 12288, 2048, 1),
        ("gdn in_proj qkvz", 12288, 2048, 4),
        ("gemv 2048->8192", 8192, 2048, 1),
        ("gdn out_proj", 2048, 4096, 1),
        ("attn o_proj", 2048, 4096, 1),
        ("router", 256, 2048, 1),
    ] {
        let bytes = rows * cols * 2;
        let copies = copies_for(bytes);
        b.row(
            &format!("gemv t={t}"),
            &format!("{name} {rows}x{cols}"),
            bytes,
            copies,
            |c| {
                let w = pool.slice(c * rows * cols..(c + 1) * rows * cols);
                b.gpu.gemv(&w, &xf, &mut y, rows, cols, t, false)
            },
        )?;
    }
    let (rows, cols) = (8192, 2048);
    let copies = copies_for(rows * cols * 2);
    b.row(
        "gemv bf16 x, t=1",
        &format!("gemv 2048->8192 {rows}x{cols}"),
        rows * cols * 2,
        copies,
        |c| {
            let w = pool.slice(c * rows * cols..(c + 1) * rows * cols);
            b.gpu.gemv(&w, &x, &mut y, rows, cols, 1, false)
        },
    )?;
    fused_rows(b, &pool, &xf)
}

/// A GDN layer's four input projections (q‖k‖v, z, b, a) as one launch, plain and with the
/// layer's input norm folded in.
fn fused_rows(b: &Bench, pool: &CudaSlice<bf16>, x: &CudaSlice<f32>) -> Result<()> {
    let (cols, parts) = (2048, [8192usize, 4096, 32, 32]);
    let rows: usize = parts.iter().sum();
    let norm_w = b.weights("bench.input_norm", cols, 0.5)?;
    let mut ys: Vec<CudaSlice<f32>> = parts
        .iter()
        .map(|&r| b.gpu.stream.alloc_zeros(r))
        .collect::<Result<_, _>>()?;
    let copies = copies_for(rows * cols * 2);
    for folded in [false, true] {
        let norm = folded.then_some(FoldedNorm {
            w: &norm_w,
            eps: 1e-6,
        });
        let name = if folded {
            "gemv 4 parts, norm, t=1"
        } else {
            "gemv 4 parts, t=1"
        };
        b.row(
            name,
            &format!("gdn in_proj qkv|z|b|a {rows}x{cols}"),
            rows * cols * 2,
            copies,
            |c| {
                // Copy c of the four weights, back to back in the pool.
                let mut ws = Vec::with_capacity(parts.len());
                let mut at = c * rows * cols;
                for &r in &parts {
                    ws.push(pool.slice(at..at + r * cols));
                    at += r * cols;
                }
                let mut p: Vec<_> = ws
                    .iter()
                    .zip(&parts)
                    .zip(ys.iter_mut())
                    .map(|((w, &r), y)| (w, r, y))
                    .collect();
                b.gpu.project_many(x, cols, 1, &mut p, norm)
            },
        )?;
    }
    Ok(())
}

fn lm_head_row(b: &Bench) -> Result<()> {
    let (vocab, hidden) = (248_320, 2048);
    let w = b.weights("bench.lm_head", vocab * hidden, 0.02)?;
    let x: CudaSlice<f32> = b.gpu.stream.clone_htod(
        &(0..8 * hidden)
            .map(|i| ((i % 7) as f32 - 3.0) * 0.1)
            .collect::<Vec<_>>(),
    )?;
    let mut scratch = ArgmaxScratch::new(b.gpu, vocab)?;
    let mut ids = b.gpu.stream.alloc_zeros::<i32>(8)?;
    for t in [1, 4] {
        b.row(
            &format!("lm_head_argmax t={t}"),
            &format!("{vocab}x{hidden}"),
            vocab * hidden * 2,
            1,
            |_| {
                b.gpu
                    .lm_head_argmax(&w, &x, &mut scratch, &mut ids, vocab, hidden, t)
            },
        )?;
    }
    Ok(())
}

fn moe_row(b: &Bench) -> Result<()> {
    let s = MoeShape {
        experts: 256,
        top_k: 8,
        hidden: 2048,
        expert_dim: 512,
        shared_dim: 512,
    };
    let (e, h, i) = (s.experts, s.hidden, s.expert_dim);
    let router = b.weights("bench.router", e * h, 0.1)?;
    let gate = b.weights("bench.gate", e * i * h, 0.02)?;
    let up = b.weights("bench.up", e * i * h, 0.02)?;
    let down = b.weights("bench.down", e * h * i, 0.02)?;
    let sg = b.weights("bench.sg", i * h, 0.02)?;
    let su = b.weights("bench.su", i * h, 0.02)?;
    let sd = b.weights("bench.sd", h * i, 0.02)?;
    let seg = b.weights("bench.seg", h, 0.02)?;
    let w = MoeWeights {
        router: &router,
        gate: &gate,
        up: &up,
        down: &down,
        shared_gate: &sg,
        shared_up: &su,
        shared_down: &sd,
        shared_expert_gate: &seg,
    };
    // Distinct inputs route to distinct experts, as consecutive tokens do.
    let inputs = 32;
    let xs = b.activations("bench.moe_x", inputs * h, 1.0)?;
    let mut scratch = MoeScratch::new(b.gpu, s)?;
    let mut y = b.gpu.stream.alloc_zeros::<f32>(8 * h)?;
    let bytes = e * h * 2 + (s.top_k + 1) * 3 * i * h * 2;
    let norm_w = b.weights("bench.post_norm", h, 0.5)?;
    for folded in [false, true] {
        let norm = folded.then_some(FoldedNorm {
            w: &norm_w,
            eps: 1e-6,
        });
        let name = if folded { "moe, norm, t=1" } else { "moe t=1" };
        b.row(
            name,
            "256 experts top-8 + shared, 512x2048",
            bytes,
            inputs,
            |c| {
                b.gpu.moe(
                    &xs.slice(c * h..(c + 1) * h),
                    &w,
                    &mut scratch,
                    &mut y,
                    1,
                    s,
                    true,
                    norm,
                )
            },
        )?;
    }
    // Each launch alone. Every input keeps its own routing, so that the expert launches read
    // different experts from copy to copy; the router's 1 MB is the same for all inputs.
    let mut routed: Vec<MoeScratch> = (0..inputs)
        .map(|_| MoeScratch::new(b.gpu, s))
        .collect::<Result<_>>()?;
    for (c, scratch) in routed.iter_mut().enumerate() {
        b.gpu.moe(
            &xs.slice(c * h..(c + 1) * h),
            &w,
            scratch,
            &mut y,
            1,
            s,
            true,
            None,
        )?;
    }
    let stages = [
        (
            MoeStage::Router,
            "router, 257 rows, + routing",
            (e + 1) * h * 2,
        ),
        (
            MoeStage::GateUp,
            "gate|up, 8 experts + shared",
            (s.top_k + 1) * 2 * i * h * 2,
        ),
        (
            MoeStage::Down,
            "down, 8 experts + shared",
            (s.top_k + 1) * i * h * 2,
        ),
    ];
    for (stage, what, bytes) in stages {
        b.row("moe launch t=1", what, bytes, inputs, |c| {
            b.gpu.moe_stage(
                stage,
                &xs.slice(c * h..(c + 1) * h),
                &w,
                &mut routed[c],
                &mut y,
                1,
                s,
            )
        })?;
    }
    out_moe_rows(b, s, &w, &norm_w, &xs, inputs)
}

/// The output projection (2048x4096 +=) with the MoE after it, both ways the decode can run
/// them: the router's rows in the projection's launch (the default, `ENGINE_ROUTER_IN_OUT=on`)
/// and the projection then the MoE with its own router (`off`). Each input has its own
/// projection, router carried through it, mixer output and stream.
fn out_moe_rows(
    b: &Bench,
    s: MoeShape,
    w: &MoeWeights<'_, CudaSlice<bf16>>,
    norm_w: &CudaSlice<bf16>,
    xs: &CudaSlice<f32>,
    inputs: usize,
) -> Result<()> {
    let (e, h, i, cols) = (s.experts, s.hidden, s.expert_dim, 4096);
    let outs: Vec<CudaSlice<bf16>> = (0..inputs)
        .map(|c| b.weights(&format!("bench.out.{c}"), h * cols, 0.02))
        .collect::<Result<_>>()?;
    let throughs: Vec<RouterThroughOut> = outs
        .iter()
        .map(|o| {
            b.gpu
                .router_through_out(w.router, w.shared_expert_gate, norm_w, o, e, h, cols)
        })
        .collect::<Result<_>>()?;
    let mixed = b.activations("bench.mixed", inputs * cols, 1.0)?;
    let mut streams = b.gpu.stream.clone_dtod(xs)?;
    let mut scratch = MoeScratch::new(b.gpu, s)?;
    let norm = FoldedNorm {
        w: norm_w,
        eps: 1e-6,
    };
    let experts = (s.top_k + 1) * 3 * i * h * 2;
    let (projection, through) = (h * cols * 2, 2 * (e + 1) * cols * 2 + (e + 1) * h * 2);
    let shape = "2048x4096 +=, then 256 experts top-8 + shared";
    b.row(
        "o-proj + moe t=1",
        &format!("{shape}, router in its launch"),
        projection + through + experts,
        inputs,
        |c| {
            let mut x = streams.slice_mut(c * h..(c + 1) * h);
            b.gpu.out_moe(
                &mut x,
                &mixed.slice(c * cols..(c + 1) * cols),
                &outs[c],
                cols,
                &throughs[c],
                w,
                &mut scratch,
                1,
                s,
                norm,
            )
        },
    )?;
    let mut y = b.gpu.stream.alloc_zeros::<f32>(inputs * h)?;
    b.row(
        "o-proj, moe t=1",
        &format!("{shape}, router launch"),
        projection + (e + 1) * h * 2 + experts,
        inputs,
        |c| {
            let mut x = streams.slice_mut(c * h..(c + 1) * h);
            b.gpu.gemv(
                &outs[c],
                &mixed.slice(c * cols..(c + 1) * cols),
                &mut x,
                h,
                cols,
                1,
                true,
            )?;
            b.gpu.moe(
                &x,
                w,
                &mut scratch,
                &mut y.slice_mut(c * h..(c + 1) * h),
                1,
                s,
                true,
                Some(norm),
            )
        },
    )
}

fn gdn_rows(b: &Bench) -> Result<()> {
    let s = GdnShape { hk: 16, hv: 32 };
    let layers = 30;
    let c = s.conv_channels();
    let mut pool = b
        .gpu
        .stream
        .alloc_zeros::<u8>(layers * s.layer_state_bytes())?;
    let x: CudaSlice<f32> = b.gpu.stream.clone_htod(
        &(0..c)
            .map(|i| ((i % 13) as f32 - 6.0) * 0.1)
            .collect::<Vec<_>>(),
    )?;
    let conv_w = b.weights("bench.conv", 4 * c, 0.5)?;
    let a_log = b.weights("bench.a_log", s.hv, 1.0)?;
    let dt = b.weights("bench.dt", s.hv, 1.0)?;
    let ba: CudaSlice<f32> = b.gpu.stream.clone_htod(&vec![0.3f32; s.hv])?;
    let mut conv = b.gpu.stream.alloc_zeros::<f32>(c)?;
    let mut o = b.gpu.stream.alloc_zeros::<f32>(s.hv * 128)?;
    let lb = s.layer_state_bytes();
    b.row(
        "gdn_conv t=1",
        "8192 channels, slot 0 -> 1",
        2 * s.conv_slot_bytes(),
        layers,
        |l| {
            let mut layer = pool.slice_mut(l * lb..(l + 1) * lb);
            b.gpu
                .gdn_conv(&x, &conv_w, &mut layer, 0, 1, &mut conv, 1, s)
        },
    )?;
    for (read, write, what) in [(0, 1, "slot 0 -> 1"), (0, 0, "in place")] {
        b.row(
            "gdn_step t=1",
            &format!("32 heads 128x128 fp32, {what}"),
            2 * s.rec_slot_bytes(),
            layers,
            |l| {
                let mut layer = pool.slice_mut(l * lb..(l + 1) * lb);
                b.gpu.gdn_step(
                    &conv, &ba, &ba, &a_log, &dt, &mut layer, read, write, &mut o, 1, s,
                )
            },
        )?;
    }
    b.row(
        "gdn conv + step t=1",
        "one launch, in place",
        2 * (s.conv_slot_bytes() + s.rec_slot_bytes()),
        layers,
        |l| {
            let mut layer = pool.slice_mut(l * lb..(l + 1) * lb);
            b.gpu.gdn_conv_step(
                &x, &conv_w, &ba, &ba, &a_log, &dt, &mut layer, 0, 0, &mut o, 1, s,
            )
        },
    )?;
    let z: CudaSlice<f32> = b.gpu.stream.clone_htod(
        &(0..s.hv * 128)
            .map(|i| ((i % 7) as f32 - 3.0) * 0.2)
            .collect::<Vec<_>>(),
    )?;
    let norm_w = b.weights("bench.gdn_norm", 128, 0.5)?;
    let mut y = b.gpu.stream.alloc_zeros::<f32>(s.hv * 128)?;
    b.row(
        "gdn_step t=1",
        "32 heads, in place, + output norm",
        2 * s.rec_slot_bytes(),
        layers,
        |l| {
            let mut layer = pool.slice_mut(l * lb..(l + 1) * lb);
            b.gpu.gdn_step_gated(
                &conv, &ba, &ba, &a_log, &dt, &mut layer, 0, 0, &mut o, &z, &norm_w, &mut y, 1e-6,
                1, s,
            )
        },
    )?;
    b.row(
        "gdn conv + step t=1",
        "one launch, in place, + output norm",
        2 * (s.conv_slot_bytes() + s.rec_slot_bytes()),
        layers,
        |l| {
            let mut layer = pool.slice_mut(l * lb..(l + 1) * lb);
            b.gpu.gdn_conv_step_gated(
                &x, &conv_w, &ba, &ba, &a_log, &dt, &mut layer, 0, 0, &mut o, &z, &norm_w, &mut y,
                1e-6, 1, s,
            )
        },
    )?;
    b.row("rmsnorm_gated", "32 heads x 128", 0, layers, |_| {
        b.gpu
            .rmsnorm_gated(&o, &z, &norm_w, &mut y, s.hv, 128, 1e-6)
    })?;
    Ok(())
}

fn attention_rows(b: &Bench) -> Result<()> {
    // (context, cache length): the cache length sets the splits, 8192 is the presets'; each
    // shape runs both ways, the way the plan takes at that context marked.
    for (ctx, max_ctx) in [(2048, 2048), (2048, 8192), (4096, 4096), (32768, 32768)] {
        let s = AttnShape {
            hq: 16,
            hkv: 2,
            head_dim: 256,
            max_ctx,
            rot_dim: 64,
            eps: 1e-6,
        };
        let per_layer = 2 * ctx * s.hkv * s.head_dim * 2;
        let layers = copies_for(per_layer).min(16);
        let n = s.cache_len();
        let kc = b.weights("bench.k_cache", layers * n, 1.0)?;
        let vc = b.weights("bench.v_cache", layers * n, 1.0)?;
        // The q projection (query, then gate, per head); the rotated query is its first rows.
        let qg: CudaSlice<f32> = b.gpu.stream.clone_htod(&vec![0.05f32; s.hq * 2 * 256])?;
        let base: CudaSlice<i32> = b.gpu.stream.clone_htod(&[(ctx - 1) as i32])?;
        let plan = b.gpu.attn_plan(s)?;
        let mut scratch = AttnScratch::new(b.gpu, s, 1, plan)?;
        let mut out = b.gpu.stream.alloc_zeros::<f32>(s.hq * 256)?;
        for one_launch in [true, false] {
            let how = if one_launch { "1 launch" } else { "2 launches" };
            let chosen = if one_launch == plan.one_launch(ctx) {
                " *"
            } else {
                ""
            };
            b.row(
                "attn_decode t=1",
                &format!(
                    "ctx {ctx} of {max_ctx}, 16/2 x256, {} splits, {how}{chosen}",
                    plan.splits
                ),
                per_layer,
                layers,
                |l| {
                    b.gpu.attn_decode(
                        &qg,
                        &kc.slice(l * n..(l + 1) * n),
                        &vc.slice(l * n..(l + 1) * n),
                        &base,
                        0,
                        &qg,
                        &mut scratch,
                        &mut out,
                        1,
                        s,
                        one_launch,
                    )
                },
            )?;
        }
    }
    Ok(())
}

/// The 35B-A3B's plain decode chain (`engine::chain`, a context of 2,240 positions: the mean of
/// `-pg 2048,384`): its stages' bytes streamed and nothing else, as the engine's dependent
/// launches and as one persistent launch, the same stages with no bytes, and the same bytes
/// as one stage: how near the ceiling a decode with these dependencies can come in either
/// form, and what the dependencies cost.
fn chain_rows(gpu: &Gpu, ceiling_gbs: f64) -> Result<()> {
    let cfg = ModelConfig::preset("qwen3.6-35b-a3b")?;
    let stages = decode_stages(&cfg, 2240)?;
    let empty: Vec<_> = stages
        .iter()
        .map(|s| Stage {
            bytes: 0,
            ..s.clone()
        })
        .collect();
    let full = gpu.chain_data(&stages)?;
    let bare = gpu.chain_data(&empty)?;
    let whole = gpu.chain_data(&[Stage {
        name: "the whole token",
        bytes: full.bytes(),
        early: true,
    }])?;
    println!();
    println!("the 35B-A3B decode chain, its stages' bytes and nothing else: {} stages, {:.2} MB a token, 8 tokens a run, {} blocks of 512 threads", stages.len(), full.bytes() as f64 / 1e6, gpu.info.sm_count);
    println!(
        "{:<12} {:<56} {:>9} {:>7} {:>7}",
        "form", "first batch before the wait", "us/token", "GB/s", "ceiling"
    );
    for form in [ChainForm::Launches, ChainForm::Persistent] {
        for batch in CHAIN_BATCHES {
            for early in [
                ChainEarly::Never,
                ChainEarly::Known,
                ChainEarly::KnownToL2,
                ChainEarly::Always,
            ] {
                let us = gpu.time_chain_us(&full, form, 8, batch, early)?;
                let gbs = full.bytes() as f64 / (us * 1e-6) / 1e9;
                let what = match early {
                    ChainEarly::Never => "none".to_string(),
                    ChainEarly::Known => {
                        format!("{} KB an SM, stages that know their bytes", batch * 8)
                    }
                    ChainEarly::KnownToL2 => format!(
                        "{} KB an SM and 256 KB into the L2, the same stages",
                        batch * 8
                    ),
                    ChainEarly::Always => {
                        format!("{} KB an SM, every stage (routing known)", batch * 8)
                    }
                };
                println!(
                    "{:<12} {what:<56} {us:>9.1} {gbs:>7.0} {:>6.1}%",
                    format!("{form:?}"),
                    100.0 * gbs / ceiling_gbs
                );
            }
        }
        let us = gpu.time_chain_us(&bare, form, 8, CHAIN_BATCHES[0], ChainEarly::Never)?;
        println!(
            "{:<12} {:<56} {us:>9.1} ({:.2} us a stage)",
            format!("{form:?}"),
            "the same stages with no bytes",
            us / stages.len() as f64
        );
        for batch in CHAIN_BATCHES {
            let us = gpu.time_chain_us(&whole, form, 8, batch, ChainEarly::Known)?;
            let gbs = whole.bytes() as f64 / (us * 1e-6) / 1e9;
            println!(
                "{:<12} {:<56} {us:>9.1} {gbs:>7.0} {:>6.1}%",
                format!("{form:?}"),
                format!(
                    "the same bytes as one stage, batch of {} KB an SM",
                    batch * 8
                ),
                100.0 * gbs / ceiling_gbs
            );
        }
    }
    Ok(())
}
