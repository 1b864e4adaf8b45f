//! The safetensors loader on a small checkpoint written here with HF tensor names.

mod common;

use common::*;
use engine::config::ModelConfig;
use engine::cpu::CpuBackend;
use engine::model::Model;
use engine::options::Arm;
use engine::tensors::tensor_specs;
use engine::weights::WeightSource;
use safetensors::{serialize, Dtype, View};
use std::borrow::Cow;
use std::path::Path;

struct Bf16Tensor {
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl View for &Bf16Tensor {
    fn dtype(&self) -> Dtype {
        Dtype::BF16
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// Writes the tiny model's synthetic weights for `seed` as a bf16 checkpoint, with
/// `edit` applied to the tensor list first.
fn write_checkpoint(path: &Path, seed: u64, edit: impl FnOnce(&mut Vec<(String, Bf16Tensor)>)) {
    let cfg = ModelConfig::preset("tiny").unwrap();
    let mut tensors: Vec<(String, Bf16Tensor)> = tensor_specs(&cfg)
        .into_iter()
        .map(|s| {
            let vals = s.init.fill(seed, &s.synthetic_key, &s.shape);
            let bytes = vals
                .iter()
                .flat_map(|v| half::bf16::from_f32(*v).to_le_bytes())
                .collect();
            (
                s.name,
                Bf16Tensor {
                    shape: s.shape,
                    bytes,
                },
            )
        })
        .collect();
    edit(&mut tensors);
    let data = serialize(tensors.iter().map(|(n, t)| (n.clone(), t)), None).unwrap();
    std::fs::write(path, data).unwrap();
}

fn load(path: &Path) -> anyhow::Result<Model<CpuBackend>> {
    let cfg = ModelConfig::preset("tiny").unwrap();
    Model::new(
        cfg,
        &WeightSource::Safetensors(path.to_path_buf()),
        Arm::default(),
        CpuBackend::new(),
        16,
    )
}

#[test]
fn checkpoint_gives_the_same_tokens_as_the_synthetic_weights_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.safetensors");
    write_checkpoint(&path, 11, |_| {});
    let p = prompt(11, 12);
    let from_file = generate(&mut load(&path).unwrap(), &p, 16, 20, Some(2));
    let synthetic = generate(&mut tiny_model(11, Arm::default(), 16), &p, 16, 20, Some(2));
    assert_eq!(from_file, synthetic);
    assert_ne!(
        from_file.0,
        generate(&mut tiny_model(12, Arm::default(), 16), &p, 16, 20, Some(2)).0
    );
}

#[test]
fn missing_or_misshaped_tensors_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.safetensors");
    write_checkpoint(&missing, 1, |t| {
        t.retain(|(n, _)| n != "model.layers.2.linear_attn.A_log")
    });
    let e = format!("{:#}", load(&missing).err().unwrap());
    assert!(
        e.contains("model.layers.2.linear_attn.A_log") && e.contains("missing.safetensors"),
        "{e}"
    );

    let bad = dir.path().join("bad.safetensors");
    write_checkpoint(&bad, 1, |t| {
        let (_, x) = t
            .iter_mut()
            .find(|(n, _)| n == "model.layers.3.self_attn.k_proj.weight")
            .unwrap();
        x.shape.reverse();
    });
    let e = format!("{:#}", load(&bad).err().unwrap());
    assert!(
        e.contains("model.layers.3.self_attn.k_proj.weight") && e.contains("shape"),
        "{e}"
    );
}
