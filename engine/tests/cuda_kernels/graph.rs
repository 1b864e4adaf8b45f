//! A decode-shaped round (embed, norm, MoE, LM head argmax) captured as a CUDA graph: the
//! replay equals eager launches, and consecutive replays chain through the device-side token
//! ids with no host round trip. Also the measurements of what a chain of stages costs.

use super::{download, weights};
use cudarc::driver::CudaSlice;
use engine::chain::Stage;
use engine::cuda::ceiling::{ChainEarly, ChainForm, CHAIN_BATCHES};
use engine::cuda::gemv::ArgmaxScratch;
use engine::cuda::pad::PadState;
use engine::cuda::{Gpu, MoeScratch, MoeShape, MoeWeights};
use engine::pad;

struct Buffers {
    ids: CudaSlice<i32>,
    x: CudaSlice<f32>,
    xn: CudaSlice<f32>,
    moe: MoeScratch,
    argmax: ArgmaxScratch,
}

#[test]
#[ignore = "needs a CUDA device"]
fn captured_round_replays_like_eager_launches() {
    // Its own stream: capture must not record the other tests' launches.
    let gpu = Gpu::new(0).unwrap();
    let s = MoeShape {
        experts: 32,
        top_k: 4,
        hidden: 512,
        expert_dim: 128,
        shared_dim: 128,
    };
    let (vocab, h, t) = (4096, s.hidden, 2);
    let (embed, _) = weights(&gpu, "g.embed", vocab * h, 0.0, 1.0);
    let (norm, _) = weights(&gpu, "g.norm", h, 0.0, 0.2);
    let (router, _) = weights(&gpu, "g.router", s.experts * h, 0.0, 0.3);
    let (gate, _) = weights(&gpu, "g.gate", s.experts * s.expert_dim * h, 0.0, 0.1);
    let (up, _) = weights(&gpu, "g.up", s.experts * s.expert_dim * h, 0.0, 0.1);
    let (down, _) = weights(&gpu, "g.down", s.experts * h * s.expert_dim, 0.0, 0.1);
    let (sg, _) = weights(&gpu, "g.sgate", s.shared_dim * h, 0.0, 0.1);
    let (su, _) = weights(&gpu, "g.sup", s.shared_dim * h, 0.0, 0.1);
    let (sd, _) = weights(&gpu, "g.sdown", h * s.shared_dim, 0.0, 0.1);
    let (seg, _) = weights(&gpu, "g.seg", h, 0.0, 0.1);
    let (head, _) = weights(&gpu, "g.lm_head", vocab * h, 0.0, 0.1);
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
    let mut b = Buffers {
        ids: gpu.stream.alloc_zeros::<i32>(t).unwrap(),
        x: gpu.stream.alloc_zeros::<f32>(t * h).unwrap(),
        xn: gpu.stream.alloc_zeros::<f32>(t * h).unwrap(),
        moe: MoeScratch::new(&gpu, s).unwrap(),
        argmax: ArgmaxScratch::new(&gpu, vocab).unwrap(),
    };
    let round = |gpu: &Gpu, b: &mut Buffers| -> anyhow::Result<()> {
        gpu.embed(&embed, &b.ids, &mut b.x, t, vocab, h)?;
        gpu.rmsnorm(&b.x, &norm, &mut b.xn, t, h, 1e-6)?;
        gpu.moe(&b.xn, &w, &mut b.moe, &mut b.x, t, s, true, None)?;
        gpu.rmsnorm(&b.x, &norm, &mut b.xn, t, h, 1e-6)?;
        gpu.lm_head_argmax(&head, &b.xn, &mut b.argmax, &mut b.ids, vocab, h, t)
    };
    let start = [5i32, 4000];
    gpu.stream.memcpy_htod(&start, &mut b.ids).unwrap();
    let mut eager = Vec::new();
    for _ in 0..3 {
        round(&gpu, &mut b).unwrap();
        eager.push(download(&gpu, &b.ids));
    }
    let graph = gpu.capture(|gpu| round(gpu, &mut b)).unwrap();
    gpu.stream.memcpy_htod(&start, &mut b.ids).unwrap();
    for (n, want) in eager.iter().enumerate() {
        graph.launch().unwrap();
        assert_eq!(
            &download(&gpu, &b.ids),
            want,
            "graph replay {n} differs from the eager round"
        );
    }
    println!("graph rounds: {start:?} -> {eager:?}");
    assert_ne!(
        eager[0],
        start.to_vec(),
        "the round did not change the token ids"
    );
}

/// The decode pad (kernels/pad.cu), captured with the pad at 0, waits in every replay the
/// fraction written after the capture, of the round's own time and turnaround as
/// engine/src/pad.rs counts them: the state read back after each replay is checked against
/// that rule, the wait to within the clock's step.
#[test]
#[ignore = "needs a CUDA device"]
fn a_captured_pad_waits_the_fraction_written_after_capture() {
    // Its own stream: capture must not record the other tests' launches.
    let gpu = Gpu::new(0).unwrap();
    let step = u64::try_from(gpu.globaltimer_step().unwrap().as_nanos()).unwrap();
    let mut state = gpu.stream.alloc_zeros::<u64>(PadState::WORDS).unwrap();
    let graph = gpu
        .capture(|gpu| {
            gpu.round_start(&mut state)?;
            gpu.decode_pad(&mut state)
        })
        .unwrap();
    let mut before = gpu.read_pad(&state).unwrap();
    for fraction in [50.0, 5.0, 0.0] {
        before.fraction = fraction;
        gpu.write_pad(before, &mut state).unwrap();
        for replay in 0..4 {
            graph.launch().unwrap();
            let after = gpu.read_pad(&state).unwrap();
            let waited = after.waited_ns - before.waited_ns;
            let now = after.previous_end_ns - waited;
            let own = now - after.round_start_ns;
            let since = (before.previous_end_ns != 0)
                .then(|| after.round_start_ns - before.previous_end_ns);
            let turnaround = pad::turnaround_ns(own, since, before.turnaround_ns);
            let want = pad::wait_ns(fraction, own, turnaround);
            println!(
                "fraction {fraction}, replay {replay}: own {own} ns, since the last {since:?} \
                 ns, turnaround {turnaround} ns, waited {waited} ns for {want} ns"
            );
            assert_eq!(after.turnaround_ns, turnaround, "the turnaround counted");
            assert_eq!(
                after.turnaround_total_ns - before.turnaround_total_ns,
                turnaround,
                "the turnarounds' total"
            );
            assert_eq!(
                after.own_total_ns - before.own_total_ns,
                own,
                "the rounds' own total"
            );
            if fraction == 0.0 {
                assert_eq!(
                    waited, 0,
                    "at P = 0 the clock is not read after the round's"
                );
            }
            assert_eq!(after.rounds, before.rounds + 1);
            assert!(
                waited >= want && waited <= want + step + 2_000,
                "fraction {fraction}: waited {waited} ns, the rule says {want} ns (step {step})"
            );
            before = after;
        }
    }
}

/// The stage-sync measurement the kernel bench prints: its handoffs check that every launch
/// read the one before it complete and that no block passed a barrier early (an error
/// otherwise), and each way of waiting costs at least an L2 round trip.
#[test]
#[ignore = "needs a CUDA device"]
fn stage_sync_is_measured_with_waits_that_hold() {
    // Its own stream: the measurement captures a graph.
    let gpu = Gpu::new(0).unwrap();
    let s = gpu.measure_stage_sync_us().unwrap();
    for (what, us) in [
        ("a dependent launch", s.launch_us),
        ("a dependent launch with a handoff", s.launch_handoff_us),
        ("a grid barrier", s.barrier_us),
        ("a grid barrier with a handoff", s.barrier_handoff_us),
    ] {
        assert!((0.1..50.0).contains(&us), "{what} measured {us} µs");
    }
}

/// The chain the kernel bench streams: every block reads its share of every stage
/// once a token, whatever the stage's size (a stage of no bytes, one smaller than a block's
/// batch, one that is no multiple of 16 bytes, one of many batches), in one launch and in a
/// launch a stage, with the first batch requested before or after the wait; `time_chain_us`
/// checks the chunks read.
#[test]
#[ignore = "needs a CUDA device"]
fn the_chain_reads_every_stage_once_a_token() {
    let gpu = Gpu::new(0).unwrap();
    let stage = |bytes, early| Stage {
        name: "test",
        bytes,
        early,
    };
    let stages = [
        stage(1000, true),
        stage(0, true),
        stage(16 << 20, false),
        stage((40 << 20) + 24, true),
    ];
    let chain = gpu.chain_data(&stages).unwrap();
    assert_eq!(chain.bytes(), 1008 + (16 << 20) + (40 << 20) + 32);
    for form in [ChainForm::Persistent, ChainForm::Launches] {
        for batch in CHAIN_BATCHES {
            for early in [
                ChainEarly::Never,
                ChainEarly::Known,
                ChainEarly::KnownToL2,
                ChainEarly::Always,
            ] {
                let us = gpu.time_chain_us(&chain, form, 3, batch, early).unwrap();
                println!(
                    "chain of 4 stages, {form:?}, batch {batch}, {early:?}: {us:.1} us a token"
                );
                assert!((1.0..10_000.0).contains(&us), "{us} µs a token");
            }
        }
    }
}
