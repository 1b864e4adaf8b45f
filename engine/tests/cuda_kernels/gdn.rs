//! The Gated DeltaNet conv and delta-rule kernels against an f64 reference, slot handling,
//! and T positions in one launch against T single-position launches.

use super::{assert_close, bf16_round, download, gpu, sigmoid, silu, upload, weights, Rng};
use engine::cuda::gdn::HEAD_DIM as D;
use engine::cuda::GdnShape;
use half::bf16;

const SHAPE: GdnShape = GdnShape { hk: 2, hv: 4 };

struct Inputs {
    x: Vec<f32>,
    b: Vec<f32>,
    a: Vec<f32>,
    pool: Vec<u8>,
}

fn inputs(t: usize) -> Inputs {
    inputs_for(SHAPE, t)
}

fn inputs_for(shape: GdnShape, t: usize) -> Inputs {
    let c = shape.conv_channels();
    let mut rng = Rng::new(11);
    let mut pool = Vec::new();
    for _ in 0..2 {
        pool.extend(
            rng.vec(3 * c, 1.0)
                .iter()
                .flat_map(|v| bf16::from_f32(*v).to_le_bytes()),
        );
    }
    for _ in 0..2 {
        pool.extend(
            rng.vec(shape.hv * D * D, 0.1)
                .iter()
                .flat_map(|v| v.to_le_bytes()),
        );
    }
    Inputs {
        x: rng.vec(t * c, 1.0),
        b: rng.vec(t * shape.hv, 2.0),
        a: rng.vec(t * shape.hv, 2.0),
        pool,
    }
}

fn conv_slot(pool: &[u8], s: usize) -> Vec<f64> {
    let bytes = &pool[s * SHAPE.conv_slot_bytes()..][..SHAPE.conv_slot_bytes()];
    bytes
        .chunks(2)
        .map(|c| bf16::from_le_bytes([c[0], c[1]]).to_f64())
        .collect()
}

fn rec_slot(pool: &[u8], s: usize) -> Vec<f64> {
    let bytes =
        &pool[2 * SHAPE.conv_slot_bytes() + s * SHAPE.rec_slot_bytes()..][..SHAPE.rec_slot_bytes()];
    bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
        .collect()
}

fn softplus(x: f64) -> f64 {
    if x > 20.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

/// Returns (conv output, o, new conv state, new recurrent state).
fn reference(
    inp: &Inputs,
    t: usize,
    read: usize,
    conv_w: &[f64],
    a_log: &[f64],
    dt_bias: &[f64],
) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let c = SHAPE.conv_channels();
    let mut win = conv_slot(&inp.pool, read);
    let mut conv = vec![0.0; t * c];
    for p in 0..t {
        for ch in 0..c {
            let xt = bf16_round(inp.x[p * c + ch]);
            let s = conv_w[4 * ch] * win[ch]
                + conv_w[4 * ch + 1] * win[c + ch]
                + conv_w[4 * ch + 2] * win[2 * c + ch]
                + conv_w[4 * ch + 3] * xt;
            conv[p * c + ch] = silu(s);
            win[ch] = win[c + ch];
            win[c + ch] = win[2 * c + ch];
            win[2 * c + ch] = xt;
        }
    }
    let (hk, hv) = (SHAPE.hk, SHAPE.hv);
    let mut state = rec_slot(&inp.pool, read);
    let mut o = vec![0.0; t * hv * D];
    for p in 0..t {
        let row = &conv[p * c..][..c];
        for h in 0..hv {
            let kh = h / (hv / hk);
            let norm = |v: &[f64]| {
                let n = (v.iter().map(|x| x * x).sum::<f64>() + 1e-6).sqrt();
                v.iter().map(|x| x / n).collect::<Vec<_>>()
            };
            let q: Vec<f64> = norm(&row[kh * D..][..D])
                .iter()
                .map(|x| x / (D as f64).sqrt())
                .collect();
            let k = norm(&row[hk * D + kh * D..][..D]);
            let v = &row[2 * hk * D + h * D..][..D];
            let beta = sigmoid(inp.b[p * hv + h] as f64);
            let alpha = (-a_log[h].exp() * softplus(inp.a[p * hv + h] as f64 + dt_bias[h])).exp();
            let s = &mut state[h * D * D..][..D * D];
            s.iter_mut().for_each(|x| *x *= alpha);
            for j in 0..D {
                let kv: f64 = (0..D).map(|i| s[i * D + j] * k[i]).sum();
                let u = beta * (v[j] - kv);
                for i in 0..D {
                    s[i * D + j] += k[i] * u;
                }
                o[(p * hv + h) * D + j] = (0..D).map(|i| s[i * D + j] * q[i]).sum();
            }
        }
    }
    (conv, o, win, state)
}

#[test]
#[ignore = "needs a CUDA device"]
fn gdn_conv_and_step_match_host_reading_one_slot_writing_the_other() {
    let gpu = gpu();
    let (t, c) = (3, SHAPE.conv_channels());
    let inp = inputs(t);
    let (conv_w, cw) = weights(gpu, "gdn.conv1d.weight", 4 * c, 0.0, 0.5);
    let (a_log, al) = weights(gpu, "gdn.A_log", SHAPE.hv, 0.0, 1.0);
    let (dt_bias, db) = weights(gpu, "gdn.dt_bias", SHAPE.hv, 0.0, 1.0);
    let mut pool = upload(gpu, &inp.pool);
    let mut conv = gpu.stream.alloc_zeros::<f32>(t * c).unwrap();
    let mut o = gpu.stream.alloc_zeros::<f32>(t * SHAPE.hv * D).unwrap();
    gpu.gdn_conv(
        &upload(gpu, &inp.x),
        &conv_w,
        &mut pool,
        0,
        1,
        &mut conv,
        t,
        SHAPE,
    )
    .unwrap();
    gpu.gdn_step(
        &conv,
        &upload(gpu, &inp.b),
        &upload(gpu, &inp.a),
        &a_log,
        &dt_bias,
        &mut pool,
        0,
        1,
        &mut o,
        t,
        SHAPE,
    )
    .unwrap();
    let (want_conv, want_o, want_win, want_state) = reference(&inp, t, 0, &cw, &al, &db);
    let got_pool = download(gpu, &pool);
    assert_close("gdn conv output", &download(gpu, &conv), &want_conv, 1e-5);
    assert_close("gdn output o", &download(gpu, &o), &want_o, 1e-4);
    let got_state: Vec<f32> = rec_slot(&got_pool, 1).iter().map(|v| *v as f32).collect();
    assert_close(
        "gdn recurrent state (slot 1)",
        &got_state,
        &want_state,
        1e-4,
    );
    let got_win: Vec<f32> = conv_slot(&got_pool, 1).iter().map(|v| *v as f32).collect();
    assert_close("gdn conv state (slot 1)", &got_win, &want_win, 0.0);
    assert_eq!(
        conv_slot(&got_pool, 0),
        conv_slot(&inp.pool, 0),
        "conv slot 0 was written"
    );
    assert_eq!(
        rec_slot(&got_pool, 0),
        rec_slot(&inp.pool, 0),
        "recurrent slot 0 was written"
    );
}

#[test]
#[ignore = "needs a CUDA device"]
fn gdn_t_positions_in_one_launch_equal_single_steps() {
    let gpu = gpu();
    let (t, c, hv) = (4, SHAPE.conv_channels(), SHAPE.hv);
    let inp = inputs(t);
    let (conv_w, _) = weights(gpu, "gdn.conv1d.weight", 4 * c, 0.0, 0.5);
    let (a_log, _) = weights(gpu, "gdn.A_log", hv, 0.0, 1.0);
    let (dt_bias, _) = weights(gpu, "gdn.dt_bias", hv, 0.0, 1.0);
    let mut conv = gpu.stream.alloc_zeros::<f32>(t * c).unwrap();

    // One launch, in place on slot 0.
    let mut pool = upload(gpu, &inp.pool);
    let mut o_all = gpu.stream.alloc_zeros::<f32>(t * hv * D).unwrap();
    gpu.gdn_conv(
        &upload(gpu, &inp.x),
        &conv_w,
        &mut pool,
        0,
        0,
        &mut conv,
        t,
        SHAPE,
    )
    .unwrap();
    gpu.gdn_step(
        &conv,
        &upload(gpu, &inp.b),
        &upload(gpu, &inp.a),
        &a_log,
        &dt_bias,
        &mut pool,
        0,
        0,
        &mut o_all,
        t,
        SHAPE,
    )
    .unwrap();
    let all = download(gpu, &pool);

    // T launches, the live slot alternating 0 -> 1 -> 0 -> ...
    let mut pool = upload(gpu, &inp.pool);
    let mut o_steps = Vec::new();
    let mut o = gpu.stream.alloc_zeros::<f32>(hv * D).unwrap();
    for p in 0..t {
        let (read, write) = (p % 2, (p + 1) % 2);
        gpu.gdn_conv(
            &upload(gpu, &inp.x[p * c..][..c]),
            &conv_w,
            &mut pool,
            read,
            write,
            &mut conv,
            1,
            SHAPE,
        )
        .unwrap();
        gpu.gdn_step(
            &conv,
            &upload(gpu, &inp.b[p * hv..][..hv]),
            &upload(gpu, &inp.a[p * hv..][..hv]),
            &a_log,
            &dt_bias,
            &mut pool,
            read,
            write,
            &mut o,
            1,
            SHAPE,
        )
        .unwrap();
        o_steps.extend(download(gpu, &o).iter().map(|v| *v as f64));
    }
    let steps = download(gpu, &pool);
    assert_close(
        "gdn o, one launch vs steps",
        &download(gpu, &o_all),
        &o_steps,
        1e-5,
    );
    let last = t % 2;
    let state: Vec<f32> = rec_slot(&all, 0).iter().map(|v| *v as f32).collect();
    assert_close(
        "gdn state, one launch vs steps",
        &state,
        &rec_slot(&steps, last),
        1e-5,
    );
    assert_eq!(
        conv_slot(&all, 0),
        conv_slot(&steps, last),
        "conv state differs"
    );
}

/// The conv inside the step launch against the conv launch then the step, bit for bit: the
/// output, both state slots, with and without the output norm. In place too, where the cluster's first block may write a key
/// head's q, k window only after every block of the cluster has read it; 1 to 4 value heads
/// per key head (clusters of 4 to 16 blocks).
#[test]
#[ignore = "needs a CUDA device"]
fn gdn_conv_inside_the_step_equals_conv_then_step() {
    let gpu = gpu();
    for shape in [
        SHAPE,
        GdnShape { hk: 2, hv: 2 },
        GdnShape { hk: 1, hv: 3 },
        GdnShape { hk: 2, hv: 8 },
    ] {
        for (t, read, write) in [(1, 0, 1), (1, 1, 1), (4, 0, 0), (33, 1, 0)] {
            let (c, n) = (shape.conv_channels(), t * shape.hv * D);
            let inp = inputs_for(shape, t);
            let (conv_w, _) = weights(gpu, "gdn.conv1d.weight", 4 * c, 0.0, 0.5);
            let (a_log, _) = weights(gpu, "gdn.A_log", shape.hv, 0.0, 1.0);
            let (dt_bias, _) = weights(gpu, "gdn.dt_bias", shape.hv, 0.0, 1.0);
            let (x, b, a) = (
                upload(gpu, &inp.x),
                upload(gpu, &inp.b),
                upload(gpu, &inp.a),
            );

            let mut pool = upload(gpu, &inp.pool);
            let (mut conv, mut o) = (
                gpu.stream.alloc_zeros::<f32>(t * c).unwrap(),
                gpu.stream.alloc_zeros::<f32>(n).unwrap(),
            );
            gpu.gdn_conv(&x, &conv_w, &mut pool, read, write, &mut conv, t, shape)
                .unwrap();
            gpu.gdn_step(
                &conv, &b, &a, &a_log, &dt_bias, &mut pool, read, write, &mut o, t, shape,
            )
            .unwrap();
            let (want_o, want_pool) = (download(gpu, &o), download(gpu, &pool));

            let mut pool = upload(gpu, &inp.pool);
            let mut o = gpu.stream.alloc_zeros::<f32>(n).unwrap();
            gpu.gdn_conv_step(
                &x, &conv_w, &b, &a, &a_log, &dt_bias, &mut pool, read, write, &mut o, t, shape,
            )
            .unwrap();
            let what = format!(
                "{}/{} heads, t = {t}, slot {read} -> {write}",
                shape.hk, shape.hv
            );
            assert_eq!(
                download(gpu, &o),
                want_o,
                "output differs with the conv in the step ({what})"
            );
            assert_eq!(
                download(gpu, &pool),
                want_pool,
                "state differs with the conv in the step ({what})"
            );

            // With the output norm as well, against the conv launch then the step with its norm.
            let z = upload(gpu, &Rng::new(3 + t as u64).vec(n, 3.0));
            let (norm_w, _) = weights(gpu, "gdn.norm.weight", D, 1.0, 0.5);
            let mut pool = upload(gpu, &inp.pool);
            let (mut o, mut want_y) = (
                gpu.stream.alloc_zeros::<f32>(n).unwrap(),
                gpu.stream.alloc_zeros::<f32>(n).unwrap(),
            );
            gpu.gdn_conv(&x, &conv_w, &mut pool, read, write, &mut conv, t, shape)
                .unwrap();
            gpu.gdn_step_gated(
                &conv,
                &b,
                &a,
                &a_log,
                &dt_bias,
                &mut pool,
                read,
                write,
                &mut o,
                &z,
                &norm_w,
                &mut want_y,
                1e-6,
                t,
                shape,
            )
            .unwrap();
            let (want_y, want_pool) = (download(gpu, &want_y), download(gpu, &pool));
            let mut pool = upload(gpu, &inp.pool);
            let mut y = gpu.stream.alloc_zeros::<f32>(n).unwrap();
            gpu.gdn_conv_step_gated(
                &x, &conv_w, &b, &a, &a_log, &dt_bias, &mut pool, read, write, &mut o, &z, &norm_w,
                &mut y, 1e-6, t, shape,
            )
            .unwrap();
            assert_eq!(
                download(gpu, &y),
                want_y,
                "normed output differs with the conv in the step ({what})"
            );
            assert_eq!(
                download(gpu, &pool),
                want_pool,
                "state differs with the conv and the norm in the step ({what})"
            );
        }
    }
}

/// The output norm done by the gdn_step launch (its 4 column blocks exchanging their sums in a
/// cluster) against the recurrence followed by the separate rmsnorm_gated kernel, over more
/// positions than one exchange round holds.
#[test]
#[ignore = "needs a CUDA device"]
fn gdn_step_with_its_output_norm_equals_step_then_gated_norm() {
    let gpu = gpu();
    for (shape, t) in [
        (SHAPE, 1),
        (SHAPE, 3),
        (SHAPE, 70),
        (GdnShape { hk: 1, hv: 3 }, 3),
    ] {
        let (c, n) = (shape.conv_channels(), t * shape.hv * D);
        let inp = inputs_for(shape, t);
        let mut rng = Rng::new(5 + t as u64);
        let z = upload(gpu, &rng.vec(n, 3.0));
        let (norm_w, _) = weights(gpu, "gdn.norm.weight", D, 1.0, 0.5);
        let (a_log, _) = weights(gpu, "gdn.A_log", shape.hv, 0.0, 1.0);
        let (dt_bias, _) = weights(gpu, "gdn.dt_bias", shape.hv, 0.0, 1.0);
        let (qkv, b, a) = (
            upload(gpu, &inp.x[..t * c]),
            upload(gpu, &inp.b),
            upload(gpu, &inp.a),
        );

        let mut pool = upload(gpu, &inp.pool);
        let (mut o, mut want) = (
            gpu.stream.alloc_zeros::<f32>(n).unwrap(),
            gpu.stream.alloc_zeros::<f32>(n).unwrap(),
        );
        gpu.gdn_step(
            &qkv, &b, &a, &a_log, &dt_bias, &mut pool, 0, 1, &mut o, t, shape,
        )
        .unwrap();
        gpu.rmsnorm_gated(&o, &z, &norm_w, &mut want, t * shape.hv, D, 1e-6)
            .unwrap();
        let (want_o, want_pool) = (download(gpu, &o), download(gpu, &pool));

        let mut pool = upload(gpu, &inp.pool);
        let (mut o, mut y) = (
            gpu.stream.alloc_zeros::<f32>(n).unwrap(),
            gpu.stream.alloc_zeros::<f32>(n).unwrap(),
        );
        gpu.gdn_step_gated(
            &qkv, &b, &a, &a_log, &dt_bias, &mut pool, 0, 1, &mut o, &z, &norm_w, &mut y, 1e-6, t,
            shape,
        )
        .unwrap();
        assert_eq!(
            download(gpu, &o),
            want_o,
            "raw output differs with the norm fused (t = {t}, {} value heads a key head)",
            shape.hv / shape.hk
        );
        assert_eq!(
            download(gpu, &pool),
            want_pool,
            "state differs with the norm fused (t = {t})"
        );
        let want: Vec<f64> = download(gpu, &want).iter().map(|v| *v as f64).collect();
        assert_close(
            &format!("gdn output norm in the step launch (t = {t})"),
            &download(gpu, &y),
            &want,
            1e-6,
        );
    }
}
