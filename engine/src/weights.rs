//! The model's weights on a backend, loaded from synthetic values or a safetensors checkpoint.

use crate::backend::Backend;
use crate::config::{Ffn, ModelConfig};
use crate::synthetic::round_bf16;
use crate::tensors::{tensor_specs, TensorSpec};
use anyhow::{anyhow, bail, Context, Result};
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub struct GdnWeights<B: Backend> {
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

pub struct AttnWeights<B: Backend> {
    pub q: B::Mat,
    pub k: B::Mat,
    pub v: B::Mat,
    pub o: B::Mat,
    pub q_norm: B::Buf,
    pub k_norm: B::Buf,
}

pub struct SwiGlu<B: Backend> {
    pub gate: B::Mat,
    pub up: B::Mat,
    pub down: B::Mat,
}

pub enum FfnWeights<B: Backend> {
    Moe { router: B::Mat, experts: Vec<SwiGlu<B>>, shared: SwiGlu<B>, shared_gate: B::Mat, top_k: usize },
    Dense(SwiGlu<B>),
}

pub enum Mixer<B: Backend> {
    Gdn(GdnWeights<B>),
    Attn(AttnWeights<B>),
}

pub struct LayerWeights<B: Backend> {
    pub input_norm: B::Buf,
    pub mixer: Mixer<B>,
    pub post_norm: B::Buf,
    pub ffn: FfnWeights<B>,
}

pub struct MtpWeights<B: Backend> {
    pub fc: B::Mat,
    pub norm_embed: B::Buf,
    pub norm_hidden: B::Buf,
    pub layer: LayerWeights<B>,
    pub norm: B::Buf,
}

pub struct Weights<B: Backend> {
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
            anyhow!("checkpoint {file} lacks tensor `{}` (expected shape {:?})", spec.name, spec.shape)
        })?;
        if t.shape() != spec.shape.as_slice() {
            bail!("checkpoint {file}: tensor `{}` has shape {:?}, this model needs {:?}", spec.name, t.shape(), spec.shape);
        }
        let bytes = t.data();
        let vals: Vec<f32> = match t.dtype() {
            Dtype::BF16 => bytes.chunks_exact(2).map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
            Dtype::F16 => bytes.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect(),
            Dtype::F32 => bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
            other => bail!("checkpoint {file}: tensor `{}` has dtype {other:?}; supported: BF16, F16, F32", spec.name),
        };
        // Both backends hold bf16 values.
        Ok(vals.into_iter().map(round_bf16).collect())
    }
}

struct Loader<'a, B: Backend> {
    specs: HashMap<String, TensorSpec>,
    host: &'a dyn HostTensors,
    backend: &'a mut B,
}

impl<B: Backend> Loader<'_, B> {
    fn host(&self, name: &str) -> Result<(Vec<f32>, Vec<usize>)> {
        let spec = self.specs.get(name).unwrap_or_else(|| panic!("tensor `{name}` missing from the tensor table"));
        Ok((self.host.load(spec)?, spec.shape.clone()))
    }

    fn mat(&mut self, name: &str) -> Result<B::Mat> {
        let (v, shape) = self.host(name)?;
        self.backend.upload_mat(shape[0], shape[1..].iter().product(), &v)
    }

    fn vec(&mut self, name: &str) -> Result<B::Buf> {
        let (v, _) = self.host(name)?;
        self.backend.upload(&v)
    }

    fn swiglu(&mut self, p: &str) -> Result<SwiGlu<B>> {
        Ok(SwiGlu {
            gate: self.mat(&format!("{p}.gate_proj.weight"))?,
            up: self.mat(&format!("{p}.up_proj.weight"))?,
            down: self.mat(&format!("{p}.down_proj.weight"))?,
        })
    }

    fn ffn(&mut self, cfg: &ModelConfig, p: &str) -> Result<FfnWeights<B>> {
        Ok(match cfg.ffn {
            Ffn::Moe { experts, top_k, .. } => FfnWeights::Moe {
                router: self.mat(&format!("{p}.mlp.gate.weight"))?,
                experts: (0..experts).map(|e| self.swiglu(&format!("{p}.mlp.experts.{e}"))).collect::<Result<_>>()?,
                shared: self.swiglu(&format!("{p}.mlp.shared_expert"))?,
                shared_gate: self.mat(&format!("{p}.mlp.shared_expert_gate.weight"))?,
                top_k,
            },
            Ffn::Dense { .. } => FfnWeights::Dense(self.swiglu(&format!("{p}.mlp"))?),
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

impl<B: Backend> Weights<B> {
    pub fn load(cfg: &ModelConfig, source: &WeightSource, backend: &mut B) -> Result<Self> {
        let specs = tensor_specs(cfg).into_iter().map(|s| (s.name.clone(), s)).collect();
        match source {
            WeightSource::Synthetic { seed } => Loader { specs, host: &Synthetic(*seed), backend }.weights(cfg),
            WeightSource::Safetensors(path) => {
                let bytes = std::fs::read(path).with_context(|| format!("cannot read --weights file {}", path.display()))?;
                let st = SafeTensors::deserialize(&bytes)
                    .map_err(|e| anyhow!("--weights file {} is not a safetensors file: {e}", path.display()))?;
                Loader { specs, host: &Checkpoint { path, st }, backend }.weights(cfg)
            }
        }
    }
}
