//! The tensor table: every tensor's checkpoint name (HF Qwen3.5 / Qwen3-Next naming),
//! shape and synthetic initialisation, and the sizes derived from it.

use crate::config::{Ffn, ModelConfig};
use crate::synthetic::Init;

/// How often a tensor is read per decoded token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Traffic {
    /// Read whole for every token.
    Every,
    /// One routed expert's tensor: read by `top_k / experts` of the tokens on average.
    Expert,
    /// The embedding table: one row per token.
    Row,
    /// The MTP draft layer: read only while speculating.
    Draft,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TensorSpec {
    pub name: String,
    /// The name whose hash key generates the synthetic values (the name itself, except
    /// for a tensor tied to another's values).
    pub synthetic_key: String,
    pub shape: Vec<usize>,
    pub init: Init,
    pub traffic: Traffic,
}

impl TensorSpec {
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

/// Zero-centred RMSNorm weight, used as `x̂·(1 + w)`.
const NORM: Init = Init::uniform(0.1, 0.0);
/// The GDN gated norm's weight, used as `w·x̂`: centred on 1.
const GATED_NORM: Init = Init::uniform(0.1, 1.0);

/// Scale of the projections that write into the residual stream (out_proj, o_proj,
/// down_proj) relative to 1/sqrt(fan_in): residual branches start small in deep models
/// (GPT-2 scales them by 1/sqrt(2·layers)), so the stream stays bounded over the layers
/// and the next token depends on the context without being swamped by it.
pub const RESIDUAL_GAIN: f32 = 0.2;

/// A projection `[out, in]` scaled by 1/sqrt(fan_in).
fn proj(fan_in: usize) -> Init {
    Init::uniform(1.0 / (fan_in as f32).sqrt(), 0.0)
}

/// A projection into the residual stream.
fn residual(fan_in: usize) -> Init {
    Init::uniform(RESIDUAL_GAIN / (fan_in as f32).sqrt(), 0.0)
}

struct Table<'a> {
    cfg: &'a ModelConfig,
    specs: Vec<TensorSpec>,
}

impl Table<'_> {
    fn push(&mut self, name: String, shape: &[usize], init: Init, traffic: Traffic) {
        self.specs.push(TensorSpec {
            synthetic_key: name.clone(),
            name,
            shape: shape.to_vec(),
            init,
            traffic,
        });
    }

    fn linear(&mut self, name: String, out: usize, inp: usize, traffic: Traffic) {
        self.push(name, &[out, inp], proj(inp), traffic);
    }

    fn gdn(&mut self, p: &str, t: Traffic) {
        let c = self.cfg;
        let (h, hv, v) = (
            c.hidden,
            c.gdn_value_heads,
            c.gdn_value_heads * c.gdn_value_dim,
        );
        self.linear(
            format!("{p}.linear_attn.in_proj_qkv.weight"),
            c.conv_channels(),
            h,
            t,
        );
        self.linear(format!("{p}.linear_attn.in_proj_z.weight"), v, h, t);
        self.linear(format!("{p}.linear_attn.in_proj_b.weight"), hv, h, t);
        self.linear(format!("{p}.linear_attn.in_proj_a.weight"), hv, h, t);
        let conv = Init::uniform(1.0 / (c.conv_kernel as f32).sqrt(), 0.0);
        self.push(
            format!("{p}.linear_attn.conv1d.weight"),
            &[c.conv_channels(), 1, c.conv_kernel],
            conv,
            t,
        );
        // softplus(a + dt_bias) ≈ 0.13 and exp(A_log) ∈ [e⁻¹, e]: decay alpha ≈ 0.7–0.95.
        self.push(
            format!("{p}.linear_attn.dt_bias"),
            &[hv],
            Init::uniform(0.5, -2.0),
            t,
        );
        self.push(
            format!("{p}.linear_attn.A_log"),
            &[hv],
            Init::uniform(1.0, 0.0),
            t,
        );
        self.push(
            format!("{p}.linear_attn.norm.weight"),
            &[c.gdn_value_dim],
            GATED_NORM,
            t,
        );
        self.push(
            format!("{p}.linear_attn.out_proj.weight"),
            &[h, v],
            residual(v),
            t,
        );
    }

    fn attention(&mut self, p: &str, t: Traffic) {
        let c = self.cfg;
        let (h, d) = (c.hidden, c.attn_head_dim);
        // q_proj holds, per head, the query then its output gate.
        self.linear(
            format!("{p}.self_attn.q_proj.weight"),
            2 * c.attn_heads * d,
            h,
            t,
        );
        self.linear(
            format!("{p}.self_attn.k_proj.weight"),
            c.attn_kv_heads * d,
            h,
            t,
        );
        self.linear(
            format!("{p}.self_attn.v_proj.weight"),
            c.attn_kv_heads * d,
            h,
            t,
        );
        self.push(
            format!("{p}.self_attn.o_proj.weight"),
            &[h, c.attn_heads * d],
            residual(c.attn_heads * d),
            t,
        );
        self.push(format!("{p}.self_attn.q_norm.weight"), &[d], NORM, t);
        self.push(format!("{p}.self_attn.k_norm.weight"), &[d], NORM, t);
    }

    fn swiglu(&mut self, p: &str, size: usize, t: Traffic) {
        let h = self.cfg.hidden;
        self.linear(format!("{p}.gate_proj.weight"), size, h, t);
        self.linear(format!("{p}.up_proj.weight"), size, h, t);
        self.push(
            format!("{p}.down_proj.weight"),
            &[h, size],
            residual(size),
            t,
        );
    }

    fn ffn(&mut self, p: &str, t: Traffic) {
        let h = self.cfg.hidden;
        match self.cfg.ffn {
            Ffn::Moe {
                experts,
                expert_size,
                shared_size,
                ..
            } => {
                self.linear(format!("{p}.mlp.gate.weight"), experts, h, t);
                let te = if t == Traffic::Draft {
                    t
                } else {
                    Traffic::Expert
                };
                for e in 0..experts {
                    self.swiglu(&format!("{p}.mlp.experts.{e}"), expert_size, te);
                }
                self.swiglu(&format!("{p}.mlp.shared_expert"), shared_size, t);
                self.linear(format!("{p}.mlp.shared_expert_gate.weight"), 1, h, t);
            }
            Ffn::Dense { size } => self.swiglu(&format!("{p}.mlp"), size, t),
        }
    }

    fn layer(&mut self, p: &str, attention: bool, t: Traffic) {
        let h = self.cfg.hidden;
        self.push(format!("{p}.input_layernorm.weight"), &[h], NORM, t);
        if attention {
            self.attention(p, t);
        } else {
            self.gdn(p, t);
        }
        self.push(
            format!("{p}.post_attention_layernorm.weight"),
            &[h],
            NORM,
            t,
        );
        self.ffn(p, t);
    }
}

/// Every tensor of the model, the MTP layer included.
pub fn tensor_specs(cfg: &ModelConfig) -> Vec<TensorSpec> {
    let mut t = Table {
        cfg,
        specs: Vec::new(),
    };
    let (h, v) = (cfg.hidden, cfg.vocab);
    t.push(
        "model.embed_tokens.weight".into(),
        &[v, h],
        Init::uniform(1.0, 0.0),
        Traffic::Row,
    );
    for i in 0..cfg.layers {
        t.layer(
            &format!("model.layers.{i}"),
            cfg.is_attention(i),
            Traffic::Every,
        );
    }
    t.push("model.norm.weight".into(), &[h], NORM, Traffic::Every);
    t.linear("lm_head.weight".into(), v, h, Traffic::Every);
    // A draft that has learnt part of the target (README, "MTP weights"): the fc passes
    // the normed embedding through (identity plus small noise), the embedding norm is
    // near 1, and the final norm has the target's final-norm values.
    let fc = Init {
        scale: 0.03 / ((2 * h) as f32).sqrt(),
        offset: 0.0,
        identity: 1.0,
    };
    t.push("mtp.fc.weight".into(), &[h, 2 * h], fc, Traffic::Draft);
    t.push(
        "mtp.pre_fc_norm_embedding.weight".into(),
        &[h],
        Init::uniform(0.01, 0.0),
        Traffic::Draft,
    );
    t.push(
        "mtp.pre_fc_norm_hidden.weight".into(),
        &[h],
        NORM,
        Traffic::Draft,
    );
    t.layer("mtp.layers.0", true, Traffic::Draft);
    t.push("mtp.norm.weight".into(), &[h], NORM, Traffic::Draft);
    t.specs.last_mut().expect("just pushed").synthetic_key = "model.norm.weight".into();
    t.specs
}

/// Parameter counts and bytes per token of a model shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sizes {
    pub params: u64,
    pub draft_params: u64,
    /// Bytes of weights one plain decode step reads, at bf16 (the GPU's storage).
    pub active_bytes_per_token_bf16: u64,
    pub state_pool_bytes: u64,
}

pub fn sizes(cfg: &ModelConfig) -> Sizes {
    let (experts, top_k) = match cfg.ffn {
        Ffn::Moe { experts, top_k, .. } => (experts as f64, top_k as f64),
        Ffn::Dense { .. } => (1.0, 1.0),
    };
    let (mut params, mut draft, mut active) = (0u64, 0u64, 0f64);
    for s in tensor_specs(cfg) {
        let n = s.numel() as u64;
        match s.traffic {
            Traffic::Draft => draft += n,
            Traffic::Every => active += n as f64,
            Traffic::Expert => active += n as f64 * top_k / experts,
            Traffic::Row => active += s.shape[1] as f64,
        }
        if s.traffic != Traffic::Draft {
            params += n;
        }
    }
    Sizes {
        params,
        draft_params: draft,
        active_bytes_per_token_bf16: (active * 2.0).round() as u64,
        state_pool_bytes: cfg.state_pool_bytes() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_preset_reads_about_5_89_gb_per_token() {
        let s = sizes(&ModelConfig::preset("qwen3.6-35b-a3b").unwrap());
        let gb = s.active_bytes_per_token_bf16 as f64 / 1e9;
        assert!((5.8..6.0).contains(&gb), "{gb} GB");
        assert!(
            (34e9..37e9).contains(&(s.params as f64)),
            "{} params",
            s.params
        );
    }

    #[test]
    fn names_are_unique() {
        let specs = tensor_specs(&ModelConfig::preset("tiny").unwrap());
        let mut names: Vec<_> = specs.iter().map(|s| &s.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), specs.len());
    }
}
