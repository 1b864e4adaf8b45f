//! L2 persistence on the device: the counted persisting reserve (nesting, equal twins,
//! release order, a refused request, threads), and the arms around the capture of a graph of
//! real GDN kernels over the Qwen3.6-35B-A3B-shaped state pool (window on every kernel node,
//! the decoy of structural-zero, null, off, reserve-only, the guard and its unguarded
//! contrast), read back from the graph and the device. Every test needs a CUDA device: they
//! are ignored unless run with `--ignored` (`.ci/gpu-tests`).

mod common;

use common::{gpu, one_at_a_time};

use std::sync::Arc;

use cudarc::driver::{CudaGraph, CudaSlice, DevicePtr};
use engine::cuda::l2::{graph_windows, persisting_limit, stream_window, L2Reserve, L2Session};
use engine::cuda::{GdnShape, Gpu};
use engine::options::{HitRatio, L2Arm, L2Mode, Named};
use half::bf16;

/// The 35B-A3B shape: 30 GDN layers of `[conv s0][conv s1][rec s0][rec s1]`.
const SHAPE: GdnShape = GdnShape { hk: 16, hv: 32 };
const LAYERS: usize = 30;
/// The dense-27B shape's pool, 2.29 times the H200's widest window.
const POOL_27B: usize = 307_888_128;

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

    /// Captures the round under `l2`, runs the graph once and reads its windows back.
    fn capture(&mut self, gpu: &Gpu, l2: &L2Session) -> CudaGraph {
        let graph = l2.capture(gpu, |gpu| self.record(gpu)).unwrap();
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
    assert_eq!(pool_bytes, 128_778_240);
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
                guard: true,
            },
            round.pool_ptr(gpu),
            pool_bytes,
        )
        .unwrap();
        assert_eq!(
            limit(gpu),
            reserve,
            "the reserve is not min(persistingL2CacheMaxSize, pool)"
        );
        let graph = round.capture(gpu, &l2);
        let audit = l2.audit(&[&graph]).unwrap();
        println!("window {hit_ratio:?}: {:?}", audit.values());
        assert_eq!(
            (audit.kernel_nodes, audit.windowed_nodes),
            (2 * LAYERS, 2 * LAYERS),
            "not every kernel node is windowed"
        );
        let w = audit.window.unwrap();
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
        assert!(l2.capture(gpu, |_| anyhow::bail!("round failed")).is_err());
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
    let window = L2Session::begin(gpu, &arm(L2Mode::Window), pool, pool_bytes).unwrap();
    let want = round.capture(gpu, &window);
    let want = window.audit(&[&want]).unwrap();
    drop(window);
    let l2 = L2Session::begin(gpu, &arm(L2Mode::StructuralZero), pool, pool_bytes).unwrap();
    let graph = round.capture(gpu, &l2);
    let audit = l2.audit(&[&graph]).unwrap();
    println!("structural-zero: {:?}", audit.values());
    let (w, decoy) = (audit.window.unwrap(), want.window.unwrap());
    assert_ne!(w.base, pool, "structural-zero windowed the pool");
    assert_eq!(w.base, l2.window_base());
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
        (audit.windowed_nodes, audit.reserve_bytes),
        (want.windowed_nodes, want.reserve_bytes)
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
        let l2 = L2Session::begin(gpu, &arm(mode), round.pool_ptr(gpu), pool_bytes).unwrap();
        let graph = round.capture(gpu, &l2);
        let audit = l2.audit(&[&graph]).unwrap();
        println!("{}: {:?}", mode.name(), audit.values());
        assert_eq!(
            (audit.kernel_nodes, audit.windowed_nodes, audit.window),
            (2 * LAYERS, 0, None),
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
        let l2 = L2Session::begin(gpu, &arm(mode), round.pool_ptr(gpu), POOL_27B).unwrap();
        assert_eq!(limit(gpu), original, "{mode:?}: the guard took a reserve");
        let graph = round.capture(gpu, &l2);
        let audit = l2.audit(&[&graph]).unwrap();
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
        hit_ratio: HitRatio::Clamp,
        guard: false,
    };
    let l2 = L2Session::begin(gpu, &unguarded, round.pool_ptr(gpu), POOL_27B).unwrap();
    let reserve = gpu.info.persisting_l2_max_bytes;
    assert_eq!(
        limit(gpu),
        reserve,
        "the unguarded arm did not take its reserve"
    );
    let graph = round.capture(gpu, &l2);
    let audit = l2.audit(&[&graph]).unwrap();
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
