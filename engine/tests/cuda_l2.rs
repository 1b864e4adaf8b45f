//! L2 persistence on the device: the counted persisting reserve (nesting, equal twins,
//! release order, a refused request, threads, the limit restored after every exit), the arms
//! around the capture of a graph of real GDN kernels over the Qwen3.6-35B-A3B-shaped state
//! pool (window on every kernel node, the decoy of structural-zero, null, off, reserve-only,
//! the guard and its unguarded contrast), and each window extent and reserve size in the
//! engine's own decode graphs, read back from every kernel node and the device. Every test
//! needs a CUDA device: they are ignored unless run with `--ignored` (`.ci/gpu-tests`).

mod common;

use common::{generate, gpu, gpu_cfg, one_at_a_time};

use std::sync::Arc;

use cudarc::driver::{CudaGraph, CudaSlice, DevicePtr};
use engine::config::ModelConfig;
use engine::cuda::l2::{graph_windows, persisting_limit, stream_window, L2Reserve, L2Session};
use engine::cuda::{CudaBackend, GdnShape, Gpu};
use engine::model::Model;
use engine::options::{Arm, HitRatio, L2Arm, L2Mode, L2Window, Named, PoolLayout, ReserveSize};
use engine::state::PoolMap;
use engine::weights::WeightSource;
use half::bf16;

/// The 35B-A3B shape: 30 GDN layers of `[conv s0][conv s1][rec s0][rec s1]`.
const SHAPE: GdnShape = GdnShape { hk: 16, hv: 32 };
const LAYERS: usize = 30;
/// The dense-27B shape's pool, 2.29 times the H200's widest window.
const POOL_27B: usize = 307_888_128;

/// The pool map of `preset` laid out by layer (what [`Round::record`] writes).
fn by_layer(preset: &str) -> PoolMap {
    PoolMap::new(&ModelConfig::preset(preset).unwrap(), PoolLayout::ByLayer)
}

fn pool_35b() -> PoolMap {
    by_layer("qwen3.6-35b-a3b")
}

fn pool_27b() -> PoolMap {
    let map = by_layer("dense-27b");
    assert_eq!(map.total_bytes(), POOL_27B);
    map
}

/// The step in which the driver sets the limit (L2 / 16 on the H200): requests that are
/// multiples of it read back exactly.
fn granule(gpu: &Gpu) -> usize {
    gpu.info.l2_bytes / 16
}

fn limit(gpu: &Gpu) -> usize {
    persisting_limit(&gpu.ctx).unwrap()
}

fn arm(mode: L2Mode) -> L2Arm {
    L2Arm {
        mode,
        ..L2Arm::default()
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn reserve_keeps_the_largest_live_request_and_restores_the_first_limit() {
    let gpu = gpu();
    let _device = one_at_a_time();
    let (g, original) = (granule(gpu), limit(gpu));
    assert!(
        gpu.info.persisting_l2_max_bytes >= 4 * g,
        "device reserve too small for this test"
    );
    println!(
        "persisting limit before any request: {original} B; max {} B",
        gpu.info.persisting_l2_max_bytes
    );

    // Nesting: a larger request raises the limit, a smaller one leaves it.
    let a = L2Reserve::take(&gpu.ctx, 2 * g).unwrap();
    assert_eq!(limit(gpu), 2 * g);
    let b = L2Reserve::take(&gpu.ctx, 4 * g).unwrap();
    assert_eq!(limit(gpu), 4 * g);
    // Equal twins: dropping one keeps the other's limit.
    let c = L2Reserve::take(&gpu.ctx, 4 * g).unwrap();
    let d = L2Reserve::take(&gpu.ctx, g).unwrap();
    assert_eq!(limit(gpu), 4 * g);
    drop(b);
    assert_eq!(
        limit(gpu),
        4 * g,
        "the twin of a dropped request lost its reserve"
    );
    drop(c);
    assert_eq!(
        limit(gpu),
        2 * g,
        "the limit did not fall to the largest live request"
    );
    // Release order: the larger one first, then the smaller one, then the first limit.
    drop(a);
    assert_eq!(limit(gpu), g);
    drop(d);
    assert_eq!(
        limit(gpu),
        original,
        "the limit found before the first request was not restored"
    );

    // The other order: the smaller one first leaves the larger one's limit.
    let small = L2Reserve::take(&gpu.ctx, g).unwrap();
    let large = L2Reserve::take(&gpu.ctx, 3 * g).unwrap();
    drop(small);
    assert_eq!(limit(gpu), 3 * g);
    drop(large);
    assert_eq!(limit(gpu), original);
}

#[test]
#[ignore = "needs a CUDA device"]
fn refused_request_keeps_the_old_limit_and_joins_no_holder() {
    let gpu = gpu();
    let _device = one_at_a_time();
    let (g, original) = (granule(gpu), limit(gpu));
    let above = gpu.info.persisting_l2_max_bytes + g;

    // Refused as the first request: nothing changes, and nothing is left to restore.
    let e = format!(
        "{:#}",
        L2Reserve::take(&gpu.ctx, above)
            .err()
            .expect("a request above the maximum was granted")
    );
    println!("refused: {e}");
    assert!(
        e.contains("cuCtxSetLimit") && e.contains("CUDA_ERROR_INVALID_VALUE"),
        "{e}"
    );
    assert_eq!(limit(gpu), original);

    // Refused while another is held: the holder's limit stays, and dropping the holder
    // restores the first limit (the refused request is not counted as live).
    let held = L2Reserve::take(&gpu.ctx, 2 * g).unwrap();
    assert!(L2Reserve::take(&gpu.ctx, above).is_err());
    assert_eq!(limit(gpu), 2 * g, "a refused request moved the limit");
    drop(held);
    assert_eq!(
        limit(gpu),
        original,
        "a refused request was kept as a holder"
    );
}

#[test]
#[ignore = "needs a CUDA device"]
fn concurrent_holders_never_see_less_than_their_request() {
    let gpu = gpu();
    let _device = one_at_a_time();
    let (g, original) = (granule(gpu), limit(gpu));
    let steps = gpu.info.persisting_l2_max_bytes / g;
    // One handle shared by every thread, each of which also takes and drops its own. Many
    // short holds make a limit set outside the lock (a stale lower value landing after a
    // larger request's) show up as a holder seeing less than its request.
    let shared = Arc::new(L2Reserve::take(&gpu.ctx, g).unwrap());
    std::thread::scope(|s| {
        for t in 0..8 {
            let shared = shared.clone();
            s.spawn(move || {
                for i in 0..500 {
                    let want = ((t + i) % steps + 1) * g;
                    let own = L2Reserve::take(&gpu.ctx, want).unwrap();
                    let seen = shared.device_limit().unwrap();
                    assert!(
                        seen >= want,
                        "thread {t}: limit {seen} B below the live request of {want} B"
                    );
                    assert!(seen >= shared.bytes());
                    drop(own);
                }
            });
        }
    });
    assert_eq!(
        shared.device_limit().unwrap(),
        g,
        "the limit is not the last live request's"
    );
    drop(shared);
    assert_eq!(limit(gpu), original);
}

/// A pool and the inputs of one GDN round (conv + delta rule per layer, 2 kernels a layer).
struct Round {
    pool: CudaSlice<u8>,
    x: CudaSlice<f32>,
    conv_w: CudaSlice<bf16>,
    conv: CudaSlice<f32>,
    b: CudaSlice<f32>,
    a: CudaSlice<f32>,
    a_log: CudaSlice<bf16>,
    dt_bias: CudaSlice<bf16>,
    o: CudaSlice<f32>,
}

impl Round {
    fn new(gpu: &Gpu, pool_bytes: usize) -> Round {
        let s = &gpu.stream;
        let (c, hv) = (SHAPE.conv_channels(), SHAPE.hv);
        Round {
            pool: s.alloc_zeros(pool_bytes).unwrap(),
            x: s.alloc_zeros(c).unwrap(),
            conv_w: s.alloc_zeros(4 * c).unwrap(),
            conv: s.alloc_zeros(c).unwrap(),
            b: s.alloc_zeros(hv).unwrap(),
            a: s.alloc_zeros(hv).unwrap(),
            a_log: s.alloc_zeros(hv).unwrap(),
            dt_bias: s.alloc_zeros(hv).unwrap(),
            o: s.alloc_zeros(hv * 128).unwrap(),
        }
    }

    fn pool_ptr(&self, gpu: &Gpu) -> u64 {
        self.pool.device_ptr(&gpu.stream).0
    }

    /// Enqueues one decode step over every layer, reading slot 0 and writing slot 1.
    fn record(&mut self, gpu: &Gpu) -> anyhow::Result<()> {
        let bytes = SHAPE.layer_state_bytes();
        for l in 0..LAYERS {
            let mut layer = self.pool.slice_mut(l * bytes..(l + 1) * bytes);
            gpu.gdn_conv(
                &self.x,
                &self.conv_w,
                &mut layer,
                0,
                1,
                &mut self.conv,
                1,
                SHAPE,
            )?;
            gpu.gdn_step(
                &self.conv,
                &self.b,
                &self.a,
                &self.a_log,
                &self.dt_bias,
                &mut layer,
                0,
                1,
                &mut self.o,
                1,
                SHAPE,
            )?;
        }
        Ok(())
    }

    /// Captures the round under `l2` as a round reading slot 0, runs the graph once.
    fn capture(&mut self, gpu: &Gpu, l2: &L2Session) -> CudaGraph {
        let graph = l2.capture(gpu, 0, |gpu| self.record(gpu)).unwrap();
        graph.launch().unwrap();
        gpu.synchronize().unwrap();
        graph
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn window_covers_every_kernel_node_and_leaves_the_stream() {
    let gpu = gpu();
    let _device = one_at_a_time();
    let original = limit(gpu);
    let pool_bytes = LAYERS * SHAPE.layer_state_bytes();
    assert_eq!(pool_bytes, pool_35b().total_bytes());
    let mut round = Round::new(gpu, pool_bytes);
    let reserve = gpu.info.persisting_l2_max_bytes.min(pool_bytes);
    for (hit_ratio, want_ratio) in [
        (HitRatio::Clamp, (reserve as f64 / pool_bytes as f64) as f32),
        (HitRatio::Fixed(1.0), 1.0),
    ] {
        let l2 = L2Session::begin(
            gpu,
            &L2Arm {
                mode: L2Mode::Window,
                hit_ratio,
                ..L2Arm::default()
            },
            round.pool_ptr(gpu),
            &pool_35b(),
        )
        .unwrap();
        assert_eq!(
            limit(gpu),
            reserve,
            "the reserve is not min(persistingL2CacheMaxSize, pool)"
        );
        let graph = round.capture(gpu, &l2);
        let audit = l2.audit(&[(&graph, 0)]).unwrap();
        println!("window {hit_ratio:?}: {:?}", audit.values());
        assert_eq!(
            (audit.kernel_nodes, audit.windowed_nodes),
            (2 * LAYERS, 2 * LAYERS),
            "not every kernel node is windowed"
        );
        let w = graph_windows(&gpu.ctx, &[&graph]).unwrap().window.unwrap();
        assert_eq!(
            (w.base, w.bytes, w.hit_ratio, w.persisting),
            (round.pool_ptr(gpu), pool_bytes, want_ratio, true)
        );
        assert_eq!((audit.reserve_bytes, audit.guard_fired), (reserve, false));

        // Nothing eager runs under the window: the stream is clear, and a round captured
        // after the session's capture (as an eager launch would be issued) carries none.
        assert_eq!(
            stream_window(gpu).unwrap().bytes,
            0,
            "the window was left on the stream"
        );
        let plain = gpu.capture(|gpu| round.record(gpu)).unwrap();
        assert_eq!(
            graph_windows(&gpu.ctx, &[&plain]).unwrap().windowed_nodes,
            0
        );
        // A round that fails to record still leaves the stream clear.
        assert!(l2
            .capture(gpu, 0, |_| anyhow::bail!("round failed"))
            .is_err());
        assert_eq!(
            stream_window(gpu).unwrap().bytes,
            0,
            "a failed capture left the window on the stream"
        );
        drop(graph);
        drop(l2);
        assert_eq!(
            limit(gpu),
            original,
            "ending the session did not restore the limit"
        );
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn structural_zero_windows_a_decoy_of_the_same_geometry() {
    let gpu = gpu();
    let _device = one_at_a_time();
    let pool_bytes = LAYERS * SHAPE.layer_state_bytes();
    let mut round = Round::new(gpu, pool_bytes);
    let pool = round.pool_ptr(gpu);
    let window = L2Session::begin(gpu, &arm(L2Mode::Window), pool, &pool_35b()).unwrap();
    let want_graph = round.capture(gpu, &window);
    let want = window.audit(&[(&want_graph, 0)]).unwrap();
    let decoy = graph_windows(&gpu.ctx, &[&want_graph])
        .unwrap()
        .window
        .unwrap();
    drop(window);
    let l2 = L2Session::begin(gpu, &arm(L2Mode::StructuralZero), pool, &pool_35b()).unwrap();
    let graph = round.capture(gpu, &l2);
    let audit = l2.audit(&[(&graph, 0)]).unwrap();
    println!("structural-zero: {:?}", audit.values());
    let w = graph_windows(&gpu.ctx, &[&graph]).unwrap().window.unwrap();
    assert_ne!(w.base, pool, "structural-zero windowed the pool");
    assert_eq!(w.base, l2.window_buffer());
    let decoy_end = w.base + w.bytes as u64;
    assert!(
        decoy_end <= pool || w.base >= pool + pool_bytes as u64,
        "the decoy overlaps the pool"
    );
    assert_eq!(
        (w.bytes, w.hit_ratio, w.persisting),
        (decoy.bytes, decoy.hit_ratio, decoy.persisting)
    );
    assert_eq!(
        (audit.windowed_nodes, audit.reserve_bytes, &audit.windows),
        (want.windowed_nodes, want.reserve_bytes, &want.windows)
    );
}

#[test]
#[ignore = "needs a CUDA device"]
fn null_off_and_reserve_only_window_nothing() {
    let gpu = gpu();
    let _device = one_at_a_time();
    let original = limit(gpu);
    let pool_bytes = LAYERS * SHAPE.layer_state_bytes();
    let mut round = Round::new(gpu, pool_bytes);
    for (mode, reserve) in [
        (L2Mode::Off, original),
        (L2Mode::Null, original),
        (
            L2Mode::ReserveOnly,
            gpu.info.persisting_l2_max_bytes.min(pool_bytes),
        ),
    ] {
        let l2 = L2Session::begin(gpu, &arm(mode), round.pool_ptr(gpu), &pool_35b()).unwrap();
        let graph = round.capture(gpu, &l2);
        let audit = l2.audit(&[(&graph, 0)]).unwrap();
        println!("{}: {:?}", mode.name(), audit.values());
        assert_eq!(
            (
                audit.kernel_nodes,
                audit.windowed_nodes,
                audit.windows.len()
            ),
            (2 * LAYERS, 0, 0),
            "{mode:?}"
        );
        assert_eq!(
            (audit.reserve_bytes, audit.guard_fired),
            (reserve, false),
            "{mode:?}"
        );
        drop(l2);
        assert_eq!(limit(gpu), original, "{mode:?}");
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn guard_installs_nothing_for_a_pool_wider_than_the_window() {
    let gpu = gpu();
    let _device = one_at_a_time();
    let original = limit(gpu);
    assert!(
        POOL_27B > gpu.info.access_policy_max_window_bytes,
        "this device's window covers the 27B pool"
    );
    let mut round = Round::new(gpu, POOL_27B);
    for mode in [L2Mode::Window, L2Mode::ReserveOnly, L2Mode::StructuralZero] {
        let l2 = L2Session::begin(gpu, &arm(mode), round.pool_ptr(gpu), &pool_27b()).unwrap();
        assert_eq!(limit(gpu), original, "{mode:?}: the guard took a reserve");
        let graph = round.capture(gpu, &l2);
        let audit = l2.audit(&[(&graph, 0)]).unwrap();
        println!("guarded {}: {:?}", mode.name(), audit.values());
        assert_eq!(
            (audit.windowed_nodes, audit.reserve_bytes, audit.guard_fired),
            (0, original, true),
            "{mode:?}"
        );
        let message = l2.plan().guard.clone().unwrap();
        assert!(
            message.contains("307,888,128 B") && message.contains("134,217,728 B"),
            "{message}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn unguarded_wide_window_reaches_the_driver_and_is_reported() {
    let gpu = gpu();
    let _device = one_at_a_time();
    let original = limit(gpu);
    let mut round = Round::new(gpu, POOL_27B);
    let unguarded = L2Arm {
        mode: L2Mode::Window,
        guard: false,
        ..L2Arm::default()
    };
    let l2 = L2Session::begin(gpu, &unguarded, round.pool_ptr(gpu), &pool_27b()).unwrap();
    let reserve = gpu.info.persisting_l2_max_bytes;
    assert_eq!(
        limit(gpu),
        reserve,
        "the unguarded arm did not take its reserve"
    );
    let graph = round.capture(gpu, &l2);
    let audit = l2.audit(&[(&graph, 0)]).unwrap();
    let refusal = l2.window_refusal().map(str::to_string);
    println!("unguarded: {:?}; driver: {refusal:?}", audit.values());
    // The H200's driver refuses a window above accessPolicyMaxWindowSize (GPU.md); the
    // refusal is kept and the audit shows what the graph really carries.
    let refusal =
        refusal.expect("the driver accepted a window wider than accessPolicyMaxWindowSize");
    assert!(
        refusal.contains("cuStreamSetAttribute")
            && refusal.contains("307,888,128 B")
            && refusal.contains("CUDA_ERROR_INVALID_VALUE"),
        "{refusal}"
    );
    assert_eq!(
        (audit.windowed_nodes, audit.reserve_bytes, audit.guard_fired),
        (0, reserve, false)
    );
    drop(graph);
    drop(l2);
    assert_eq!(limit(gpu), original);
}

/// The reserve a plan takes for `size` over a pool of `pool_bytes`.
/// (The driver holds whole granules: a pool smaller than one takes one.)
fn planned_reserve(gpu: &Gpu, size: ReserveSize, pool_bytes: usize) -> usize {
    let bytes = match size {
        ReserveSize::Max => gpu.info.persisting_l2_max_bytes.min(pool_bytes),
        ReserveSize::Bytes(b) => b,
    };
    (bytes.div_ceil(granule(gpu)) * granule(gpu)).min(gpu.info.persisting_l2_max_bytes)
}

#[test]
#[ignore = "needs a CUDA device"]
fn every_decode_graph_carries_the_window_of_the_slot_its_round_reads() {
    let gpu = gpu();
    let _device = one_at_a_time();
    let (original, g) = (limit(gpu), granule(gpu));
    let (cfg, layout) = (gpu_cfg(), PoolLayout::BySlotKind);
    let map = PoolMap::new(&cfg, layout);
    let src = WeightSource::Synthetic { seed: 3 };
    let prompt = engine::bench::prompts(3, 1, 37, cfg.vocab).remove(0);
    let decode = |l2: L2Arm| {
        let backend = CudaBackend::new(0, true, l2).unwrap();
        let arm = Arm {
            layout,
            ..Arm::default()
        };
        let mut m = Model::new(cfg.clone(), &src, arm, backend, 16).unwrap();
        let (tokens, _) = generate(&mut m, &prompt, 16, 24, Some(3));
        (m, tokens)
    };
    let (_, plain) = decode(L2Arm::default());
    for (extent, reserve) in [
        (L2Window::Pool, ReserveSize::Max),
        (L2Window::Slot, ReserveSize::Bytes(g)),
        (L2Window::Recurrent, ReserveSize::Bytes(2 * g + 1)),
    ] {
        let arm = L2Arm {
            mode: L2Mode::Window,
            window: extent,
            reserve,
            ..L2Arm::default()
        };
        let (m, tokens) = decode(arm);
        assert_eq!(tokens, plain, "{extent:?}: the window changed a token");
        let b = &m.backend;
        let (pool, _) = b.state_pool();
        let slots: std::collections::BTreeSet<_> = b.graph_slots().into_iter().collect();
        assert_eq!(
            slots.len(),
            2,
            "the decode did not capture rounds reading both slots"
        );
        let reserve = planned_reserve(gpu, reserve, map.total_bytes());
        for (graph, live) in b.graphs().iter().zip(b.graph_slots()) {
            let (offset, bytes) = match extent {
                L2Window::Pool => (0, map.total_bytes()),
                L2Window::Slot => map.slot_extent(live).unwrap(),
                L2Window::Recurrent => map.recurrent_extent(live).unwrap(),
            };
            let nodes = graph_windows(&b.gpu.ctx, &[graph]).unwrap();
            assert_eq!(
                nodes.windowed_nodes, nodes.kernel_nodes,
                "{extent:?}, slot {live}: a kernel node without the window"
            );
            let w = nodes.window.expect("a graph without a window");
            assert_eq!(
                (w.base, w.bytes, w.persisting),
                (pool + offset as u64, bytes, true),
                "{extent:?}, slot {live}"
            );
            let ratio = (reserve as f64 / bytes as f64).min(1.0) as f32;
            assert_eq!(w.hit_ratio, ratio, "{extent:?}, slot {live}");
        }
        let audit = b.l2_audit().unwrap();
        println!("{}: {:?}", extent.name(), audit.values());
        let distinct = if extent == L2Window::Pool { 1 } else { 2 };
        assert_eq!(
            (audit.reserve_bytes, audit.windows.len()),
            (reserve, distinct),
            "{extent:?}"
        );
        drop(m);
        assert_eq!(
            limit(gpu),
            original,
            "{extent:?}: the limit was not restored"
        );
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn the_limit_is_restored_after_every_exit() {
    let gpu = gpu();
    let _device = one_at_a_time();
    let (original, g) = (limit(gpu), granule(gpu));
    let mut round = Round::new(gpu, pool_35b().total_bytes());
    let sized = L2Arm {
        mode: L2Mode::Window,
        reserve: ReserveSize::Bytes(3 * g),
        ..L2Arm::default()
    };
    // An error exit: the session leaves through `?`.
    let failing = |round: &mut Round| -> anyhow::Result<()> {
        let l2 = L2Session::begin(gpu, &sized, round.pool_ptr(gpu), &pool_35b())?;
        assert_eq!(limit(gpu), 3 * g);
        l2.capture(gpu, 1, |_| anyhow::bail!("the round failed"))?;
        panic!("a failed capture returned a graph")
    };
    assert!(failing(&mut round).is_err());
    assert_eq!(limit(gpu), original, "an error exit left the reserve");
    // A panic while the session is held.
    let pool = round.pool_ptr(gpu);
    let unwound = std::panic::catch_unwind(|| {
        let _l2 = L2Session::begin(gpu, &sized, pool, &pool_35b()).unwrap();
        assert_eq!(limit(gpu), 3 * g);
        panic!("a round panicked");
    });
    assert!(unwound.is_err());
    assert_eq!(limit(gpu), original, "a panic left the reserve");
    // A plan the engine refuses fails before any reserve is taken.
    let split = L2Arm {
        window: L2Window::Recurrent,
        ..sized
    };
    let backend = CudaBackend::new(0, true, split).unwrap();
    let src = WeightSource::Synthetic { seed: 3 };
    let Err(e) = Model::new(gpu_cfg(), &src, Arm::default(), backend, 16) else {
        panic!("a recurrent window over a by-layer pool was accepted")
    };
    let e = format!("{e:#}");
    assert!(e.contains("ENGINE_POOL_LAYOUT=by-slot-kind"), "{e}");
    assert_eq!(limit(gpu), original, "a refused plan moved the limit");
}
