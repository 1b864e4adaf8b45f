//! MoE routing and experts against an f64 reference.

use super::{assert_close, download, gpu, sigmoid, silu, upload, weights, Rng};
use cudarc::driver::CudaSlice;
use engine::cuda::gemv::FoldedNorm;
use engine::cuda::{Gpu, MoePrefillScratch, MoeScratch, MoeShape, MoeWeights};
use half::bf16;

/// 16 experts: the router's rows all sit in the first block of its cluster.
const SMALL: MoeShape = MoeShape {
    experts: 16,
    top_k: 4,
    hidden: 256,
    expert_dim: 64,
    shared_dim: 32,
};

#[test]
#[ignore = "needs a CUDA device"]
fn moe_matches_host() {
    check_moe(3, false, SMALL);
}

/// The post-attention norm folded into the router, which writes the normalised rows that
/// gate‖up reads.
#[test]
#[ignore = "needs a CUDA device"]
fn moe_with_folded_norm_matches_host() {
    check_moe(5, true, SMALL);
}

/// The router's cluster with every block holding rows (256 experts and the shared gate), and
/// with rows past its warps, which take a second trip (300 experts).
#[test]
#[ignore = "needs a CUDA device"]
fn moe_router_cluster_over_one_and_two_trips_matches_host() {
    for experts in [256, 300] {
        check_moe(
            4,
            true,
            MoeShape {
                experts,
                top_k: 8,
                ..SMALL
            },
        );
    }
}

/// The prefill path: 300 positions, so that experts get more than one 64-row tile.
#[test]
#[ignore = "needs a CUDA device"]
fn moe_prefill_grouped_by_expert_matches_host() {
    check_moe(300, false, SMALL);
}

/// The decode kernels for t <= 8 (also checking the chosen experts), the grouped prefill
/// kernels for larger t; with `folded`, the experts read rmsnorm(x) (decode kernels only).
fn check_moe(t: usize, folded: bool, s: MoeShape) {
    let gpu = gpu();
    let m = MoeLayer::new(gpu, s);
    let h = s.hidden;
    let mut rng = Rng::new(31);
    // Raw residual rows are larger than normalised ones, as in the model.
    let x = rng.vec(t * h, if folded { 6.0 } else { 1.0 });
    let y0 = rng.vec(t * h, 1.0);
    let mut y = upload(gpu, &y0);
    let norm = folded.then(|| m.folded());
    let (got_idx, got_normed) = if t <= 8 {
        let mut scratch = MoeScratch::new(gpu, s).unwrap();
        gpu.moe(
            &upload(gpu, &x),
            &m.w(),
            &mut scratch,
            &mut y,
            t,
            s,
            true,
            norm,
        )
        .unwrap();
        let got_idx = download(gpu, &scratch.idx);
        let got_normed = folded.then(|| download(gpu, &scratch.normed)[..t * h].to_vec());
        // Each position alone gives the same bits (speculative verify equals plain decode).
        let together = download(gpu, &y);
        for p in 0..t {
            let mut alone = upload(gpu, &y0[p * h..][..h]);
            gpu.moe(
                &upload(gpu, &x[p * h..][..h]),
                &m.w(),
                &mut scratch,
                &mut alone,
                1,
                s,
                true,
                norm,
            )
            .unwrap();
            assert_eq!(
                download(gpu, &alone),
                together[p * h..][..h],
                "moe position {p} alone differs from {t} positions together"
            );
        }
        (Some(got_idx), got_normed)
    } else {
        let mut scratch = MoePrefillScratch::new(gpu, s, t).unwrap();
        gpu.moe_prefill(&upload(gpu, &x), &m.w(), &mut scratch, &mut y, t, s, true)
            .unwrap();
        (None, None)
    };
    let mut want = Vec::new();
    for p in 0..t {
        let raw: Vec<f64> = x[p * h..][..h].iter().map(|v| *v as f64).collect();
        let xp = if folded { m.normalise(&raw) } else { raw };
        if let Some(normed) = &got_normed {
            assert_close(
                &format!("normalised rows of position {p}"),
                &normed[p * h..][..h],
                &xp,
                1e-5,
            );
        }
        let y0p: Vec<f64> = y0[p * h..][..h].iter().map(|v| *v as f64).collect();
        let (chosen, out) = m.reference(&xp, &y0p);
        if let Some(got_idx) = &got_idx {
            assert_eq!(
                got_idx[p * s.top_k..][..s.top_k]
                    .iter()
                    .map(|v| *v as usize)
                    .collect::<Vec<_>>(),
                chosen,
                "position {p}: experts chosen"
            );
        }
        want.extend(out);
    }
    assert_close(
        &format!(
            "moe output (accumulated) t={t} folded norm {folded}, {} experts",
            s.experts
        ),
        &download(gpu, &y),
        &want,
        1e-5,
    );
}

/// The output projection with the router's logits in its launch, then the routing, gate‖up
/// and down (`Gpu::out_moe`): x + Wo·a, then the MoE of its rmsnorm added onto it, the
/// normalised rows and the experts chosen against f64; each position alone bit for bit as
/// several together.
#[test]
#[ignore = "needs a CUDA device"]
fn output_projection_with_the_router_then_the_experts_match_host() {
    for (t, s, cols) in [
        (3, SMALL, 384),
        (
            8,
            MoeShape {
                experts: 256,
                top_k: 8,
                ..SMALL
            },
            512,
        ),
        (
            2,
            MoeShape {
                experts: 300,
                top_k: 8,
                ..SMALL
            },
            256,
        ),
    ] {
        check_out_moe(t, s, cols);
    }
}

fn check_out_moe(t: usize, s: MoeShape, cols: usize) {
    let gpu = gpu();
    let m = MoeLayer::new(gpu, s);
    let h = s.hidden;
    let (wo, woh) = weights(gpu, "out_proj", h * cols, 0.0, 0.1);
    let through = gpu
        .router_through_out(
            &m.router,
            &m.shared_expert_gate,
            &m.norm,
            &wo,
            s.experts,
            h,
            cols,
        )
        .unwrap();
    let mut rng = Rng::new(47);
    let x0 = rng.vec(t * h, 6.0);
    let a = rng.vec(t * cols, 1.0);
    let norm = m.folded();
    let mut scratch = MoeScratch::new(gpu, s).unwrap();
    let mut x = upload(gpu, &x0);
    gpu.out_moe(
        &mut x,
        &upload(gpu, &a),
        &wo,
        cols,
        &through,
        &m.w(),
        &mut scratch,
        t,
        s,
        norm,
    )
    .unwrap();
    let (together, idx, normed) = (
        download(gpu, &x),
        download(gpu, &scratch.idx),
        download(gpu, &scratch.normed),
    );
    let mut want = Vec::new();
    for p in 0..t {
        let stream = projected(&x0[p * h..][..h], &woh, &a[p * cols..][..cols]);
        let xp = m.normalise(&stream);
        assert_close(
            &format!(
                "t={t}, {} experts: normalised rows of position {p}",
                s.experts
            ),
            &normed[p * h..][..h],
            &xp,
            1e-5,
        );
        let (chosen, out) = m.reference(&xp, &stream);
        assert_eq!(
            idx[p * s.top_k..][..s.top_k]
                .iter()
                .map(|v| *v as usize)
                .collect::<Vec<_>>(),
            chosen,
            "t={t}, {} experts, position {p}: experts chosen",
            s.experts
        );
        want.extend(out);
    }
    assert_close(
        &format!("output projection + moe t={t}, {} experts", s.experts),
        &together,
        &want,
        1e-5,
    );
    for p in 0..t {
        let mut alone = upload(gpu, &x0[p * h..][..h]);
        gpu.out_moe(
            &mut alone,
            &upload(gpu, &a[p * cols..][..cols]),
            &wo,
            cols,
            &through,
            &m.w(),
            &mut scratch,
            1,
            s,
            norm,
        )
        .unwrap();
        assert_eq!(
            download(gpu, &alone),
            together[p * h..][..h],
            "output projection + moe: position {p} alone differs from {t} positions together"
        );
    }
}

/// Equal logits go to the lower expert, through both routings (the router's cluster, and the
/// routing launch after an output projection): ten router rows made one row that points along
/// the MoE input, so that they lead, at experts that share lanes of the routing warp (3, 35,
/// 67, 99) and that do not; the eight lowest are chosen, in expert order.
#[test]
#[ignore = "needs a CUDA device"]
fn routing_breaks_ties_to_the_lower_expert() {
    let gpu = gpu();
    let s = MoeShape {
        experts: 256,
        top_k: 8,
        ..SMALL
    };
    let (h, cols) = (s.hidden, 256);
    let tied = [250, 99, 3, 200, 35, 131, 4, 67, 255, 201];
    let mut lowest = tied.to_vec();
    lowest.sort();
    lowest.truncate(s.top_k);
    let mut rng = Rng::new(53);
    let x0 = rng.vec(h, 6.0);
    let a = rng.vec(cols, 1.0);
    let (wo, woh) = weights(gpu, "out_proj", h * cols, 0.0, 0.1);

    let mut m = MoeLayer::new(gpu, s);
    let xp = m.normalise(&x0.iter().map(|v| *v as f64).collect::<Vec<_>>());
    m.tie_router_rows(gpu, &tied, &xp);
    let mut scratch = MoeScratch::new(gpu, s).unwrap();
    let mut y = upload(gpu, &vec![0.0f32; h]);
    gpu.moe(
        &upload(gpu, &x0),
        &m.w(),
        &mut scratch,
        &mut y,
        1,
        s,
        true,
        Some(m.folded()),
    )
    .unwrap();
    assert_eq!(
        m.reference(&xp, &vec![0.0; h]).0,
        lowest,
        "the host reference's tie rule"
    );
    assert_eq!(
        download(gpu, &scratch.idx)[..s.top_k]
            .iter()
            .map(|v| *v as usize)
            .collect::<Vec<_>>(),
        lowest,
        "router cluster: experts chosen among equal logits"
    );

    let stream = projected(&x0, &woh, &a);
    let mut m = MoeLayer::new(gpu, s);
    m.tie_router_rows(gpu, &tied, &m.normalise(&stream));
    let through = gpu
        .router_through_out(
            &m.router,
            &m.shared_expert_gate,
            &m.norm,
            &wo,
            s.experts,
            h,
            cols,
        )
        .unwrap();
    let mut x = upload(gpu, &x0);
    gpu.out_moe(
        &mut x,
        &upload(gpu, &a),
        &wo,
        cols,
        &through,
        &m.w(),
        &mut scratch,
        1,
        s,
        m.folded(),
    )
    .unwrap();
    assert_eq!(
        download(gpu, &scratch.idx)[..s.top_k]
            .iter()
            .map(|v| *v as usize)
            .collect::<Vec<_>>(),
        lowest,
        "routing after the output projection: experts chosen among equal logits"
    );
}

/// The stream after the output projection, x + Wo·a, in f64 (Wo `[x.len()][a.len()]`).
fn projected(x: &[f32], wo: &[f64], a: &[f32]) -> Vec<f64> {
    x.iter()
        .zip(wo.chunks(a.len()))
        .map(|(x, row)| *x as f64 + row.iter().zip(a).map(|(w, a)| w * *a as f64).sum::<f64>())
        .collect()
}

const EPS: f64 = 1e-6;

/// One MoE layer's weights on the device, their f64 copies, and the post-attention norm.
struct MoeLayer {
    s: MoeShape,
    router: CudaSlice<bf16>,
    gate: CudaSlice<bf16>,
    up: CudaSlice<bf16>,
    down: CudaSlice<bf16>,
    shared_gate: CudaSlice<bf16>,
    shared_up: CudaSlice<bf16>,
    shared_down: CudaSlice<bf16>,
    shared_expert_gate: CudaSlice<bf16>,
    norm: CudaSlice<bf16>,
    host: [Vec<f64>; 9],
}

impl MoeLayer {
    fn new(gpu: &Gpu, s: MoeShape) -> Self {
        let (e, h, i, is) = (s.experts, s.hidden, s.expert_dim, s.shared_dim);
        let (router, rh) = weights(gpu, "moe.router", e * h, 0.0, 0.3);
        let (gate, gh) = weights(gpu, "moe.gate", e * i * h, 0.0, 0.1);
        let (up, uh) = weights(gpu, "moe.up", e * i * h, 0.0, 0.1);
        let (down, dh) = weights(gpu, "moe.down", e * h * i, 0.0, 0.1);
        let (shared_gate, sgh) = weights(gpu, "moe.shared.gate", is * h, 0.0, 0.1);
        let (shared_up, suh) = weights(gpu, "moe.shared.up", is * h, 0.0, 0.1);
        let (shared_down, sdh) = weights(gpu, "moe.shared.down", h * is, 0.0, 0.1);
        let (shared_expert_gate, segh) = weights(gpu, "moe.shared_expert_gate", h, 0.0, 0.1);
        let (norm, nwh) = weights(gpu, "moe.post_norm", h, 0.0, 0.5);
        Self {
            s,
            router,
            gate,
            up,
            down,
            shared_gate,
            shared_up,
            shared_down,
            shared_expert_gate,
            norm,
            host: [rh, gh, uh, dh, sgh, suh, sdh, segh, nwh],
        }
    }

    fn w(&self) -> MoeWeights<'_, CudaSlice<bf16>> {
        MoeWeights {
            router: &self.router,
            gate: &self.gate,
            up: &self.up,
            down: &self.down,
            shared_gate: &self.shared_gate,
            shared_up: &self.shared_up,
            shared_down: &self.shared_down,
            shared_expert_gate: &self.shared_expert_gate,
        }
    }

    /// Makes the router rows `rows` one row, ±0.5 by the sign of `toward` (bf16 exactly), so
    /// that their logits are equal and lead for an input along `toward`.
    fn tie_router_rows(&mut self, gpu: &Gpu, rows: &[usize], toward: &[f64]) {
        let h = self.s.hidden;
        for &r in rows {
            for (w, t) in self.host[0][r * h..][..h].iter_mut().zip(toward) {
                *w = 0.5f64.copysign(*t);
            }
        }
        let device: Vec<bf16> = self.host[0].iter().map(|v| bf16::from_f64(*v)).collect();
        self.router = upload(gpu, &device);
    }

    /// The post-attention norm, folded into the kernels that read the MoE input.
    fn folded(&self) -> FoldedNorm<'_> {
        FoldedNorm {
            w: &self.norm,
            eps: EPS as f32,
        }
    }

    /// x/rms·(1+norm).
    fn normalise(&self, x: &[f64]) -> Vec<f64> {
        let inv = 1.0 / (x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64 + EPS).sqrt();
        x.iter()
            .zip(&self.host[8])
            .map(|(v, w)| v * inv * (1.0 + w))
            .collect()
    }

    /// The experts chosen for the MoE input `xp`, and `y0 + moe(xp)`.
    fn reference(&self, xp: &[f64], y0: &[f64]) -> (Vec<usize>, Vec<f64>) {
        let (e, k, h, i, is) = (
            self.s.experts,
            self.s.top_k,
            self.s.hidden,
            self.s.expert_dim,
            self.s.shared_dim,
        );
        let [rh, gh, uh, dh, sgh, suh, sdh, segh, _] = &self.host;
        let dot = |w: &[f64], x: &[f64]| -> f64 { w.iter().zip(x).map(|(a, b)| a * b).sum() };
        let logits: Vec<f64> = (0..e).map(|j| dot(&rh[j * h..][..h], xp)).collect();
        let mut order: Vec<usize> = (0..e).collect();
        order.sort_by(|a, b| logits[*b].total_cmp(&logits[*a]).then(a.cmp(b)));
        let chosen = order[..k].to_vec();
        // softmax over all experts, then renormalised over the chosen ones.
        let m = logits[chosen[0]];
        let all: f64 = logits.iter().map(|l| (l - m).exp()).sum();
        let probs: Vec<f64> = chosen
            .iter()
            .map(|&j| (logits[j] - m).exp() / all)
            .collect();
        let norm: f64 = probs.iter().sum();
        let swiglu = |g: &[f64], u: &[f64], rows: usize| -> Vec<f64> {
            (0..rows)
                .map(|r| silu(dot(&g[r * h..][..h], xp)) * dot(&u[r * h..][..h], xp))
                .collect()
        };
        let mut out = y0.to_vec();
        for (slot, &ex) in chosen.iter().enumerate() {
            let act = swiglu(&gh[ex * i * h..][..i * h], &uh[ex * i * h..][..i * h], i);
            for (r, o) in out.iter_mut().enumerate() {
                *o += probs[slot] / norm * dot(&dh[(ex * h + r) * i..][..i], &act);
            }
        }
        let sg = sigmoid(dot(segh, xp));
        let act = swiglu(sgh, suh, is);
        for (r, o) in out.iter_mut().enumerate() {
            *o += sg * dot(&sdh[r * is..][..is], &act);
        }
        (chosen, out)
    }
}
