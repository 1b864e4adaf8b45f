use super::{download, gpu};
use engine::cuda::synthetic_key;
use half::bf16;

fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}

/// The CPU backend's definition of a synthetic weight.
fn host_value(seed: u64, key: u64, index: u64, offset: f32, scale: f32) -> bf16 {
    let h =
        mix64(seed.wrapping_mul(0x9E3779B97F4A7C15) ^ key ^ index.wrapping_mul(0xD1B54A32D192ED03));
    let u = (h >> 40) as f32 / 16777216.0;
    bf16::from_f32(offset + scale * (2.0 * u - 1.0))
}

#[test]
#[ignore = "needs a CUDA device"]
fn synthetic_weights_are_bit_identical_to_the_host() {
    let gpu = gpu();
    let n = 3 << 20;
    for (name, seed, offset, scale) in [
        (
            "model.layers.0.mlp.experts.gate_proj",
            42u64,
            0.0f32,
            0.02f32,
        ),
        ("model.norm.weight", 3, 1.0, 0.1),
    ] {
        let key = synthetic_key(name);
        let mut d = gpu.stream.alloc_zeros::<bf16>(n).unwrap();
        gpu.fill_synthetic(&mut d, seed, key, offset, scale)
            .unwrap();
        let got = download(gpu, &d);
        let mismatches = (0..n)
            .filter(|&i| {
                got[i].to_bits() != host_value(seed, key, i as u64, offset, scale).to_bits()
            })
            .count();
        println!("synthetic {name}: {mismatches} of {n} values differ");
        assert_eq!(
            mismatches, 0,
            "{name}: device values differ from the host's"
        );
        assert!(
            got.iter().filter(|v| v.to_f32() == 0.0).count() < n / 1000,
            "{name}: too many zeros"
        );
    }
}
