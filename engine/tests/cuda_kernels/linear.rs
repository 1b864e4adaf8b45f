//! GEMV, GEMM, RMSNorm, embedding and the LM head argmax.

use super::{assert_close, download, gpu, silu, upload, weights, Rng};
use engine::cuda::gemv::{ArgmaxScratch, FoldedNorm};
use half::bf16;

fn matvec(w: &[f64], x: &[f32], rows: usize, cols: usize, t: usize) -> Vec<f64> {
    let mut y = vec![0.0; t * rows];
    for p in 0..t {
        for r in 0..rows {
            y[p * rows + r] = (0..cols)
                .map(|c| w[r * cols + c] * x[p * cols + c] as f64)
                .sum();
        }
    }
    y
}

#[test]
#[ignore = "needs a CUDA device"]
fn gemv_matches_host_for_each_position_count() {
    let gpu = gpu();
    let (rows, cols) = (1003, 2056);
    let (w, wh) = weights(gpu, "gemv.weight", rows * cols, 0.0, 0.05);
    let mut rng = Rng::new(1);
    for t in [1, 3, 8] {
        let x = rng.vec(t * cols, 1.0);
        let y0 = rng.vec(t * rows, 1.0);
        let mut y = upload(gpu, &y0);
        gpu.gemv(&w, &upload(gpu, &x), &mut y, rows, cols, t, true)
            .unwrap();
        let want: Vec<f64> = matvec(&wh, &x, rows, cols, t)
            .iter()
            .zip(&y0)
            .map(|(a, b)| a + *b as f64)
            .collect();
        assert_close(
            &format!("gemv f32 t={t} accumulate"),
            &download(gpu, &y),
            &want,
            1e-5,
        );
        // Each position alone gives the same bits as all t together (verify equals decode).
        let together = download(gpu, &y);
        for p in 0..t {
            let mut alone = upload(gpu, &y0[p * rows..][..rows]);
            gpu.gemv(
                &w,
                &upload(gpu, &x[p * cols..][..cols]),
                &mut alone,
                rows,
                cols,
                1,
                true,
            )
            .unwrap();
            assert_eq!(
                download(gpu, &alone),
                together[p * rows..][..rows],
                "gemv position {p} alone differs from {t} positions together"
            );
        }

        let xb: Vec<bf16> = x.iter().map(|v| bf16::from_f32(*v)).collect();
        let xr: Vec<f32> = xb.iter().map(|v| v.to_f32()).collect();
        gpu.gemv(&w, &upload(gpu, &xb), &mut y, rows, cols, t, false)
            .unwrap();
        assert_close(
            &format!("gemv bf16 t={t}"),
            &download(gpu, &y),
            &matvec(&wh, &xr, rows, cols, t),
            1e-5,
        );
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn gemm_matches_host_on_ragged_tiles() {
    let gpu = gpu();
    let (rows, cols, t) = (130, 264, 70);
    let (w, wh) = weights(gpu, "gemm.weight", rows * cols, 0.0, 0.05);
    let x = Rng::new(2).vec(t * cols, 1.0);
    let mut y = gpu.stream.alloc_zeros::<f32>(t * rows).unwrap();
    gpu.project(&upload(gpu, &x), &w, &mut y, rows, cols, t, false)
        .unwrap();
    let want = matvec(&wh, &x, rows, cols, t);
    assert_close("gemm t=70", &download(gpu, &y), &want, 1e-5);
    // Accumulating onto Y adds exactly what the plain product wrote.
    gpu.project(&upload(gpu, &x), &w, &mut y, rows, cols, t, true)
        .unwrap();
    assert_close(
        "gemm t=70 accumulate",
        &download(gpu, &y),
        &want.iter().map(|v| 2.0 * v).collect::<Vec<_>>(),
        1e-5,
    );
}

/// A GDN layer's projections (q‖k‖v, z, b, a) as one launch equal four GEMVs.
#[test]
#[ignore = "needs a CUDA device"]
fn fused_projections_match_host() {
    let gpu = gpu();
    let cols = 264;
    let shapes = [512usize, 256, 4, 8];
    let ws: Vec<_> = shapes
        .iter()
        .enumerate()
        .map(|(i, &r)| weights(gpu, &format!("fused.weight{i}"), r * cols, 0.0, 0.05))
        .collect();
    let mut rng = Rng::new(4);
    for t in [1, 5, 8] {
        let x = rng.vec(t * cols, 1.0);
        let mut ys: Vec<_> = shapes
            .iter()
            .map(|&r| upload(gpu, &rng.vec(t * r, 1.0)))
            .collect();
        let mut parts: Vec<_> = ws
            .iter()
            .zip(&shapes)
            .zip(ys.iter_mut())
            .map(|(((w, _), &r), y)| (w, r, y))
            .collect();
        gpu.project_many(&upload(gpu, &x), cols, t, &mut parts, None)
            .unwrap();
        for (i, ((_, wh), &r)) in ws.iter().zip(&shapes).enumerate() {
            assert_close(
                &format!("fused gemv part {i} t={t}"),
                &download(gpu, &ys[i]),
                &matvec(wh, &x, r, cols, t),
                1e-5,
            );
        }
    }
}

/// The input norm folded into the fused projections: W · (x/rms(x)·(1+w)), each position's
/// bits independent of how many positions share the launch.
#[test]
#[ignore = "needs a CUDA device"]
fn fused_projections_with_folded_norm_match_host() {
    let gpu = gpu();
    let (cols, eps) = (2048, 1e-6);
    let shapes = [512usize, 256, 4, 8];
    let ws: Vec<_> = shapes
        .iter()
        .enumerate()
        .map(|(i, &r)| weights(gpu, &format!("folded.weight{i}"), r * cols, 0.0, 0.05))
        .collect();
    let (nw, nwh) = weights(gpu, "folded.norm", cols, 0.0, 0.5);
    let norm = Some(FoldedNorm {
        w: &nw,
        eps: eps as f32,
    });
    let mut rng = Rng::new(5);
    for t in [1, 4, 8] {
        let x = rng.vec(t * cols, 6.0);
        let normed: Vec<f32> = (0..t)
            .flat_map(|p| {
                let row = &x[p * cols..][..cols];
                let inv = 1.0
                    / (row.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / cols as f64 + eps)
                        .sqrt();
                row.iter()
                    .zip(&nwh)
                    .map(move |(v, w)| (*v as f64 * inv * (1.0 + w)) as f32)
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut ys: Vec<_> = shapes
            .iter()
            .map(|&r| gpu.stream.alloc_zeros::<f32>(t * r).unwrap())
            .collect();
        let mut parts: Vec<_> = ws
            .iter()
            .zip(&shapes)
            .zip(ys.iter_mut())
            .map(|(((w, _), &r), y)| (w, r, y))
            .collect();
        gpu.project_many(&upload(gpu, &x), cols, t, &mut parts, norm)
            .unwrap();
        for (i, ((w, wh), &r)) in ws.iter().zip(&shapes).enumerate() {
            let together = download(gpu, &ys[i]);
            assert_close(
                &format!("folded-norm gemv part {i} t={t}"),
                &together,
                &matvec(wh, &normed, r, cols, t),
                1e-5,
            );
            for p in 0..t {
                let mut alone = gpu.stream.alloc_zeros::<f32>(r).unwrap();
                gpu.project_many(
                    &upload(gpu, &x[p * cols..][..cols]),
                    cols,
                    1,
                    &mut [(w, r, &mut alone)],
                    norm,
                )
                .unwrap();
                assert_eq!(
                    download(gpu, &alone),
                    together[p * r..][..r],
                    "folded-norm part {i} position {p} alone differs from {t} together"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn rmsnorm_both_kinds_match_host() {
    let gpu = gpu();
    // The hidden width and a head width (16-byte loads), and a width that is not a multiple of 4.
    for (rows, n) in [(5, 2048), (16, 128), (3, 130)] {
        let eps = 1e-6;
        let mut rng = Rng::new(3);
        let x = rng.vec(rows * n, 2.0);
        let z = rng.vec(rows * n, 2.0);
        let (w, wh) = weights(gpu, &format!("norm.weight.{n}"), n, 0.0, 0.5);
        let inv: Vec<f64> = (0..rows)
            .map(|r| {
                1.0 / ((x[r * n..][..n]
                    .iter()
                    .map(|v| (*v as f64).powi(2))
                    .sum::<f64>()
                    / n as f64)
                    + eps)
                    .sqrt()
            })
            .collect();
        let mut y = gpu.stream.alloc_zeros::<f32>(rows * n).unwrap();
        gpu.rmsnorm(&upload(gpu, &x), &w, &mut y, rows, n, eps as f32)
            .unwrap();
        let want: Vec<f64> = (0..rows * n)
            .map(|i| x[i] as f64 * inv[i / n] * (1.0 + wh[i % n]))
            .collect();
        assert_close(
            &format!("rmsnorm (1+w) n={n}"),
            &download(gpu, &y),
            &want,
            1e-5,
        );

        gpu.rmsnorm_gated(
            &upload(gpu, &x),
            &upload(gpu, &z),
            &w,
            &mut y,
            rows,
            n,
            eps as f32,
        )
        .unwrap();
        let want: Vec<f64> = (0..rows * n)
            .map(|i| x[i] as f64 * inv[i / n] * wh[i % n] * silu(z[i] as f64))
            .collect();
        assert_close(
            &format!("rmsnorm gated n={n}"),
            &download(gpu, &y),
            &want,
            1e-5,
        );
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn embedding_gathers_rows() {
    let gpu = gpu();
    let (vocab, hidden) = (1000, 264);
    let (table, th) = weights(gpu, "embed.weight", vocab * hidden, 0.0, 1.0);
    let ids = [17i32, 999, 0, 17];
    let mut out = gpu.stream.alloc_zeros::<f32>(ids.len() * hidden).unwrap();
    gpu.embed(
        &table,
        &upload(gpu, &ids),
        &mut out,
        ids.len(),
        vocab,
        hidden,
    )
    .unwrap();
    let want: Vec<f64> = ids
        .iter()
        .flat_map(|&i| th[i as usize * hidden..][..hidden].to_vec())
        .collect();
    assert_close("embedding", &download(gpu, &out), &want, 0.0);
}

#[test]
#[ignore = "needs a CUDA device"]
fn lm_head_argmax_picks_the_host_maximum() {
    let gpu = gpu();
    let (vocab, hidden, t) = (50_021, 256, 3);
    let (w, wh) = weights(gpu, "lm_head.weight", vocab * hidden, 0.0, 0.1);
    let x = Rng::new(4).vec(t * hidden, 1.0);
    let mut scratch = ArgmaxScratch::new(gpu, vocab).unwrap();
    let mut ids = gpu.stream.alloc_zeros::<i32>(t).unwrap();
    gpu.lm_head_argmax(
        &w,
        &upload(gpu, &x),
        &mut scratch,
        &mut ids,
        vocab,
        hidden,
        t,
    )
    .unwrap();
    let got = download(gpu, &ids);
    let logits = matvec(&wh, &x, vocab, hidden, t);
    for p in 0..t {
        let row = &logits[p * vocab..][..vocab];
        let best = (0..vocab).fold(0, |b, i| if row[i] > row[b] { i } else { b });
        let picked = got[p] as usize;
        println!(
            "lm head position {p}: device {picked} ({:.6}), host {best} ({:.6})",
            row[picked.min(vocab - 1)],
            row[best]
        );
        assert!(picked < vocab, "token id {picked} out of range");
        assert!(
            row[best] - row[picked] <= 1e-5 * row[best].abs(),
            "position {p}: device picked {picked}, host maximum is {best}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn argmax_breaks_ties_to_the_lowest_index() {
    let gpu = gpu();
    let n = 5000;
    let mut logits = Rng::new(5).vec(2 * n, 1.0);
    for (row, (a, b)) in [(0, (4000, 123)), (1, (7, 4999))] {
        logits[row * n + a] = 3.0;
        logits[row * n + b] = 3.0;
    }
    let mut ids = gpu.stream.alloc_zeros::<i32>(2).unwrap();
    gpu.argmax(&upload(gpu, &logits), &mut ids, n, 2).unwrap();
    assert_eq!(download(gpu, &ids), vec![123, 7]);
}
