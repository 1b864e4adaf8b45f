//! MoE routing and experts against an f64 reference.

use super::{assert_close, download, gpu, sigmoid, silu, upload, weights, Rng};
use engine::cuda::gemv::FoldedNorm;
use engine::cuda::{MoePrefillScratch, MoeScratch, MoeShape, MoeWeights};

/// 16 experts: the router's rows all sit in the first block of its cluster.
const SMALL: MoeShape = MoeShape { experts: 16, top_k: 4, hidden: 256, expert_dim: 64, shared_dim: 32 };

#[test]
fn moe_matches_host() {
    check_moe(3, false, SMALL);
}

/// The post-attention norm folded into the router, which writes the normalised rows that
/// gate‖up reads.
#[test]
fn moe_with_folded_norm_matches_host() {
    check_moe(5, true, SMALL);
}

/// The router's cluster with every block holding rows (256 experts and the shared gate), and
/// with rows past its warps, which take a second trip (300 experts).
#[test]
fn moe_router_cluster_over_one_and_two_trips_matches_host() {
    for experts in [256, 300] {
        check_moe(4, true, MoeShape { experts, top_k: 8, ..SMALL });
    }
}

/// The prefill path: 300 positions, so that experts get more than one 64-row tile.
#[test]
fn moe_prefill_grouped_by_expert_matches_host() {
    check_moe(300, false, SMALL);
}

/// The decode kernels for t <= 8 (also checking the chosen experts), the grouped prefill
/// kernels for larger t; with `folded`, the experts read rmsnorm(x) (decode kernels only).
fn check_moe(t: usize, folded: bool, s: MoeShape) {
    let Some(gpu) = gpu() else { return };
    let (e, k, h, i, is) = (s.experts, s.top_k, s.hidden, s.expert_dim, s.shared_dim);
    let (router, rh) = weights(gpu, "moe.router", e * h, 0.0, 0.3);
    let (gate, gh) = weights(gpu, "moe.gate", e * i * h, 0.0, 0.1);
    let (up, uh) = weights(gpu, "moe.up", e * i * h, 0.0, 0.1);
    let (down, dh) = weights(gpu, "moe.down", e * h * i, 0.0, 0.1);
    let (sgate, sgh) = weights(gpu, "moe.shared.gate", is * h, 0.0, 0.1);
    let (sup, suh) = weights(gpu, "moe.shared.up", is * h, 0.0, 0.1);
    let (sdown, sdh) = weights(gpu, "moe.shared.down", h * is, 0.0, 0.1);
    let (seg, segh) = weights(gpu, "moe.shared_expert_gate", h, 0.0, 0.1);
    let w = MoeWeights { router: &router, gate: &gate, up: &up, down: &down, shared_gate: &sgate, shared_up: &sup, shared_down: &sdown, shared_expert_gate: &seg };
    let mut rng = Rng::new(31);
    // Raw residual rows are larger than normalised ones, as in the model.
    let x = rng.vec(t * h, if folded { 6.0 } else { 1.0 });
    let y0 = rng.vec(t * h, 1.0);
    let mut y = upload(gpu, &y0);
    let (nw, nwh) = weights(gpu, "moe.post_norm", h, 0.0, 0.5);
    let eps = 1e-6;
    let norm = folded.then_some(FoldedNorm { w: &nw, eps: eps as f32 });
    let (got_idx, got_normed) = if t <= 8 {
        let mut scratch = MoeScratch::new(gpu, s).unwrap();
        gpu.moe(&upload(gpu, &x), &w, &mut scratch, &mut y, t, s, true, norm).unwrap();
        let got_idx = download(gpu, &scratch.idx);
        let got_normed = folded.then(|| download(gpu, &scratch.normed)[..t * h].to_vec());
        // Each position alone gives the same bits (speculative verify equals plain decode).
        let together = download(gpu, &y);
        for p in 0..t {
            let mut alone = upload(gpu, &y0[p * h..][..h]);
            gpu.moe(&upload(gpu, &x[p * h..][..h]), &w, &mut scratch, &mut alone, 1, s, true, norm).unwrap();
            assert_eq!(download(gpu, &alone), together[p * h..][..h], "moe position {p} alone differs from {t} positions together");
        }
        (Some(got_idx), got_normed)
    } else {
        let mut scratch = MoePrefillScratch::new(gpu, s, t).unwrap();
        gpu.moe_prefill(&upload(gpu, &x), &w, &mut scratch, &mut y, t, s, true).unwrap();
        (None, None)
    };

    let dot = |w: &[f64], x: &[f64]| -> f64 { w.iter().zip(x).map(|(a, b)| a * b).sum() };
    let mut want = Vec::new();
    for p in 0..t {
        let mut xp: Vec<f64> = x[p * h..][..h].iter().map(|v| *v as f64).collect();
        if folded {
            let inv = 1.0 / (xp.iter().map(|v| v * v).sum::<f64>() / h as f64 + eps).sqrt();
            xp.iter_mut().zip(&nwh).for_each(|(v, w)| *v *= inv * (1.0 + w));
        }
        if let Some(normed) = &got_normed {
            assert_close(&format!("normalised rows of position {p}"), &normed[p * h..][..h], &xp, 1e-5);
        }
        let logits: Vec<f64> = (0..e).map(|j| dot(&rh[j * h..][..h], &xp)).collect();
        let mut order: Vec<usize> = (0..e).collect();
        order.sort_by(|a, b| logits[*b].total_cmp(&logits[*a]).then(a.cmp(b)));
        let chosen = &order[..k];
        if let Some(got_idx) = &got_idx {
            assert_eq!(got_idx[p * k..][..k].iter().map(|v| *v as usize).collect::<Vec<_>>(), chosen, "position {p}: experts chosen");
        }
        // softmax over all experts, then renormalised over the chosen ones.
        let m = logits[chosen[0]];
        let all: f64 = logits.iter().map(|l| (l - m).exp()).sum();
        let probs: Vec<f64> = chosen.iter().map(|&j| (logits[j] - m).exp() / all).collect();
        let norm: f64 = probs.iter().sum();
        let swiglu = |g: &[f64], u: &[f64], rows: usize| -> Vec<f64> { (0..rows).map(|r| silu(dot(&g[r * h..][..h], &xp)) * dot(&u[r * h..][..h], &xp)).collect() };
        let mut out: Vec<f64> = y0[p * h..][..h].iter().map(|v| *v as f64).collect();
        for (slot, &ex) in chosen.iter().enumerate() {
            let act = swiglu(&gh[ex * i * h..][..i * h], &uh[ex * i * h..][..i * h], i);
            for (r, o) in out.iter_mut().enumerate() {
                *o += probs[slot] / norm * dot(&dh[(ex * h + r) * i..][..i], &act);
            }
        }
        let sg = sigmoid(dot(&segh, &xp));
        let act = swiglu(&sgh, &suh, is);
        for (r, o) in out.iter_mut().enumerate() {
            *o += sg * dot(&sdh[r * is..][..is], &act);
        }
        want.extend(out);
    }
    assert_close(&format!("moe output (accumulated) t={t} folded norm {folded}, {e} experts"), &download(gpu, &y), &want, 1e-5);
}
