//! The model's weights on a backend, loaded from synthetic values or a safetensors checkpoint.

use crate::config::{Ffn, ModelConfig};
use crate::synthetic::{key, round_bf16, Init};
use crate::tensors::{tensor_specs, TensorSpec};
use anyhow::{anyhow, bail, Context, Result};
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where the weights live: a backend's vector and matrix types, and how values reach them.
/// The backend trait (`backend.rs`) extends it with the blocks that compute on them.
pub trait WeightStore {
    /// An f32 device buffer (activations, norm weights, KV cache, rotary table).
    type Buf;
    /// A weight matrix `[rows][cols]`, bf16-exact values.
    type Mat;

    /// A weight vector (norm, conv taps, gate biases): bf16-exact values.
    fn upload_weights(&mut self, host: &[f32]) -> Result<Self::Buf>;
    /// A weight matrix `[rows][cols]` whose rows are filled afterwards by `write_mat_rows`
    /// or `fill_mat_synthetic` (stacked experts are one matrix).
    fn alloc_mat(&mut self, rows: usize, cols: usize) -> Result<Self::Mat>;
    /// Writes bf16-exact host values into rows `row0..` of `m`.
    fn write_mat_rows(&mut self, m: &mut Self::Mat, row0: usize, host: &[f32]) -> Result<()>;
    /// Fills rows `row0..row0 + rows` of `m` with the synthetic tensor `key` (element `i`
    /// of that tensor at `row0 · cols + i`), the identity term of `init` on its diagonal.
    /// Generated where the matrix lives: the GPU never builds weights on the host.
    fn fill_mat_synthetic(
        &mut self,
        m: &mut Self::Mat,
        row0: usize,
        rows: usize,
        seed: u64,
        key: u64,
        init: Init,
    ) -> Result<()>;
}

pub struct GdnWeights<B: WeightStore> {
    pub qkv: B::Mat,
    pub z: B::Mat,
    pub b: B::Mat,
    pub a: B::Mat,
    /// Depthwise conv taps `[channels][kernel]`, oldest input first.
    pub conv: B::Buf,
    pub dt_bias: B::Buf,
    pub a_log: B::Buf,
    pub norm: B::Buf,
    pub out: B::Mat,
}

pub struct AttnWeights<B: WeightStore> {
    pub q: B::Mat,
    pub k: B::Mat,
    pub v: B::Mat,
    pub o: B::Mat,
    pub q_norm: B::Buf,
    pub k_norm: B::Buf,
}

pub struct SwiGlu<B: WeightStore> {
    pub gate: B::Mat,
    pub up: B::Mat,
    pub down: B::Mat,
}

/// A sparse MoE: the router, the routed experts, and the shared expert with its sigmoid gate.
pub struct MoeWeights<B: WeightStore> {
    pub router: B::Mat,
    /// Every routed expert stacked: gate and up `[E·I][H]`, down `[E·H][I]` (expert `e` owns
    /// rows `e·I..` resp. `e·H..`), the layout the GPU kernels index.
    pub experts: SwiGlu<B>,
    pub shared: SwiGlu<B>,
    pub shared_gate: B::Mat,
    pub top_k: usize,
}

pub enum FfnWeights<B: WeightStore> {
    Moe(MoeWeights<B>),
    Dense(SwiGlu<B>),
}

pub enum Mixer<B: WeightStore> {
    Gdn(GdnWeights<B>),
    Attn(AttnWeights<B>),
}

pub struct LayerWeights<B: WeightStore> {
    pub input_norm: B::Buf,
    pub mixer: Mixer<B>,
    pub post_norm: B::Buf,
    pub ffn: FfnWeights<B>,
}

pub struct MtpWeights<B: WeightStore> {
    pub fc: B::Mat,
    pub norm_embed: B::Buf,
    pub norm_hidden: B::Buf,
    pub layer: LayerWeights<B>,
    pub norm: B::Buf,
}

pub struct Weights<B: WeightStore> {
    pub embed: B::Mat,
    pub layers: Vec<LayerWeights<B>>,
    pub norm: B::Buf,
    pub lm_head: B::Mat,
    pub mtp: MtpWeights<B>,
}

/// Where weight values come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeightSource {
    Synthetic { seed: u64 },
    Safetensors(PathBuf),
}

/// Host values of tensors, bf16-rounded.
trait HostTensors {
    fn load(&self, spec: &TensorSpec) -> Result<Vec<f32>>;
}

struct Synthetic(u64);

impl HostTensors for Synthetic {
    fn load(&self, spec: &TensorSpec) -> Result<Vec<f32>> {
        Ok(spec.init.fill(self.0, &spec.synthetic_key, &spec.shape))
    }
}

struct Checkpoint<'a> {
    path: &'a Path,
    st: SafeTensors<'a>,
}

impl HostTensors for Checkpoint<'_> {
    fn load(&self, spec: &TensorSpec) -> Result<Vec<f32>> {
        let file = self.path.display();
        let t = self.st.tensor(&spec.name).map_err(|_| {
            anyhow!(
                "checkpoint {file} lacks tensor `{}` (expected shape {:?})",
                spec.name,
                spec.shape
            )
        })?;
        if t.shape() != spec.shape.as_slice() {
            bail!(
                "checkpoint {file}: tensor `{}` has shape {:?}, this model needs {:?}",
                spec.name,
                t.shape(),
                spec.shape
            );
        }
        let bytes = t.data();
        let vals: Vec<f32> = match t.dtype() {
            Dtype::BF16 => bytes
                .chunks_exact(2)
                .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            Dtype::F16 => bytes
                .chunks_exact(2)
                .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            Dtype::F32 => bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            other => bail!(
                "checkpoint {file}: tensor `{}` has dtype {other:?}; supported: BF16, F16, F32",
                spec.name
            ),
        };
        // Both backends hold bf16 values.
        Ok(vals.into_iter().map(round_bf16).collect())
    }
}

struct Loader<'a, B: WeightStore> {
    specs: HashMap<String, TensorSpec>,
    host: &'a dyn HostTensors,
    /// Synthetic weights: matrices are generated by the backend where they live.
    seed: Option<u64>,
    backend: &'a mut B,
}

impl<B: WeightStore> Loader<'_, B> {
    fn spec(&self, name: &str) -> &TensorSpec {
        self.specs
            .get(name)
            .unwrap_or_else(|| panic!("tensor `{name}` missing from the tensor table"))
    }

    /// `[rows][cols]` of a tensor: its first dimension, and the product of the others.
    fn dims(&self, name: &str) -> (usize, usize) {
        let shape = &self.spec(name).shape;
        (shape[0], shape[1..].iter().product())
    }

    /// Fills rows `row0..` of `m` with tensor `name`.
    fn fill(&mut self, m: &mut B::Mat, row0: usize, name: &str) -> Result<()> {
        let spec = self.spec(name).clone();
        match self.seed {
            Some(seed) => self.backend.fill_mat_synthetic(
                m,
                row0,
                spec.shape[0],
                seed,
                key(&spec.synthetic_key),
                spec.init,
            ),
            None => {
                let v = self.host.load(&spec)?;
                self.backend.write_mat_rows(m, row0, &v)
            }
        }
    }

    fn mat(&mut self, name: &str) -> Result<B::Mat> {
        self.stacked(&[name.to_string()])
    }

    /// Tensors of one shape stacked along their rows into one matrix.
    fn stacked(&mut self, names: &[String]) -> Result<B::Mat> {
        let (rows, cols) = self.dims(&names[0]);
        let mut m = self.backend.alloc_mat(names.len() * rows, cols)?;
        for (i, name) in names.iter().enumerate() {
            self.fill(&mut m, i * rows, name)?;
        }
        Ok(m)
    }

    fn vec(&mut self, name: &str) -> Result<B::Buf> {
        let v = self.host.load(self.spec(name))?;
        self.backend.upload_weights(&v)
    }

    /// A SwiGLU MLP, or the routed experts stacked when `prefixes` names several.
    fn swiglu(&mut self, prefixes: &[String]) -> Result<SwiGlu<B>> {
        let names = |part: &str| {
            prefixes
                .iter()
                .map(|p| format!("{p}.{part}.weight"))
                .collect::<Vec<_>>()
        };
        Ok(SwiGlu {
            gate: self.stacked(&names("gate_proj"))?,
            up: self.stacked(&names("up_proj"))?,
            down: self.stacked(&names("down_proj"))?,
        })
    }

    fn ffn(&mut self, cfg: &ModelConfig, p: &str) -> Result<FfnWeights<B>> {
        Ok(match cfg.ffn {
            Ffn::Moe { experts, top_k, .. } => FfnWeights::Moe(MoeWeights {
                router: self.mat(&format!("{p}.mlp.gate.weight"))?,
                experts: self.swiglu(
                    &(0..experts)
                        .map(|e| format!("{p}.mlp.experts.{e}"))
                        .collect::<Vec<_>>(),
                )?,
                shared: self.swiglu(&[format!("{p}.mlp.shared_expert")])?,
                shared_gate: self.mat(&format!("{p}.mlp.shared_expert_gate.weight"))?,
                top_k,
            }),
            Ffn::Dense { .. } => FfnWeights::Dense(self.swiglu(&[format!("{p}.mlp")])?),
        })
    }

    fn mixer(&mut self, p: &str, attention: bool) -> Result<Mixer<B>> {
        Ok(if attention {
            let a = format!("{p}.self_attn");
            Mixer::Attn(AttnWeights {
                q: self.mat(&format!("{a}.q_proj.weight"))?,
                k: self.mat(&format!("{a}.k_proj.weight"))?,
                v: self.mat(&format!("{a}.v_proj.weight"))?,
                o: self.mat(&format!("{a}.o_proj.weight"))?,
                q_norm: self.vec(&format!("{a}.q_norm.weight"))?,
                k_norm: self.vec(&format!("{a}.k_norm.weight"))?,
            })
        } else {
            let g = format!("{p}.linear_attn");
            Mixer::Gdn(GdnWeights {
                qkv: self.mat(&format!("{g}.in_proj_qkv.weight"))?,
                z: self.mat(&format!("{g}.in_proj_z.weight"))?,
                b: self.mat(&format!("{g}.in_proj_b.weight"))?,
                a: self.mat(&format!("{g}.in_proj_a.weight"))?,
                conv: self.vec(&format!("{g}.conv1d.weight"))?,
                dt_bias: self.vec(&format!("{g}.dt_bias"))?,
                a_log: self.vec(&format!("{g}.A_log"))?,
                norm: self.vec(&format!("{g}.norm.weight"))?,
                out: self.mat(&format!("{g}.out_proj.weight"))?,
            })
        })
    }

    fn layer(&mut self, cfg: &ModelConfig, p: &str, attention: bool) -> Result<LayerWeights<B>> {
        Ok(LayerWeights {
            input_norm: self.vec(&format!("{p}.input_layernorm.weight"))?,
            mixer: self.mixer(p, attention)?,
            post_norm: self.vec(&format!("{p}.post_attention_layernorm.weight"))?,
            ffn: self.ffn(cfg, p)?,
        })
    }

    fn weights(&mut self, cfg: &ModelConfig) -> Result<Weights<B>> {
        Ok(Weights {
            embed: self.mat("model.embed_tokens.weight")?,
            layers: (0..cfg.layers)
                .map(|i| self.layer(cfg, &format!("model.layers.{i}"), cfg.is_attention(i)))
                .collect::<Result<_>>()?,
            norm: self.vec("model.norm.weight")?,
            lm_head: self.mat("lm_head.weight")?,
            mtp: MtpWeights {
                fc: self.mat("mtp.fc.weight")?,
                norm_embed: self.vec("mtp.pre_fc_norm_embedding.weight")?,
                norm_hidden: self.vec("mtp.pre_fc_norm_hidden.weight")?,
                layer: self.layer(cfg, "mtp.layers.0", true)?,
                norm: self.vec("mtp.norm.weight")?,
            },
        })
    }
}

impl<B: WeightStore> Weights<B> {
    pub fn load(cfg: &ModelConfig, source: &WeightSource, backend: &mut B) -> Result<Self> {
        let specs = tensor_specs(cfg)
            .into_iter()
            .map(|s| (s.name.clone(), s))
            .collect();
        match source {
            WeightSource::Synthetic { seed } => Loader {
                specs,
                host: &Synthetic(*seed),
                seed: Some(*seed),
                backend,
            }
            .weights(cfg),
            WeightSource::Safetensors(path) => {
                let bytes = std::fs::read(path)
                    .with_context(|| format!("cannot read --weights file {}", path.display()))?;
                let st = SafeTensors::deserialize(&bytes).map_err(|e| {
                    anyhow!(
                        "--weights file {} is not a safetensors file: {e}",
                        path.display()
                    )
                })?;
                Loader {
                    specs,
                    host: &Checkpoint { path, st },
                    seed: None,
                    backend,
                }
                .weights(cfg)
            }
        }
    }
}
