//! The chain of dependent stages a plain decode step of an MoE model runs on the GPU, in
//! order, with the bytes each must read: the weights of [`tensor_specs`], each GDN layer's
//! state slots and each attention layer's KV cache, summing to [`bytes_per_round`]. One stage
//! is one kernel launch of the CUDA backend's decode graph (255 for the Qwen3.6-35B-A3B
//! shape). The kernel bench streams these bytes as dependent launches and as one persistent
//! launch (`Gpu::time_chain_us`) to measure how near the read ceiling a decode with this many
//! dependent stages can come when nothing but the dependencies stands in its way.
//!
//! [`bytes_per_round`]: crate::bench::bytes_per_round

use anyhow::{bail, Context, Result};

use crate::config::{Ffn, ModelConfig};
use crate::tensors::{tensor_specs, Traffic};

/// One stage of the chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    pub name: &'static str,
    /// Bytes the stage must read.
    pub bytes: u64,
    /// Whether the stage knows what it reads before the stage before it ends: everything but
    /// the routed experts' gate‖up, which the routing just before names, and the embedding
    /// row of the token the step before chose.
    pub early: bool,
}

/// The stages a layer runs, in order; a tensor goes to the stage that reads it.
const GDN: &[&str] = &[
    "input projections",
    "gdn step",
    "output projection",
    "routing",
    "gate-up",
    "down",
];
const ATTENTION: &[&str] = &[
    "input projections",
    "attention prep",
    "attention",
    "output projection",
    "routing",
    "gate-up",
    "down",
];

/// The decode chain of `cfg` at a context of `ctx` positions.
pub fn decode_stages(cfg: &ModelConfig, ctx: usize) -> Result<Vec<Stage>> {
    let Ffn::Moe { experts, top_k, .. } = cfg.ffn else {
        bail!("the decode chain is the MoE decode's (router, routing, experts); this model's FFN is dense");
    };
    let stage = |name: &'static str| Stage {
        name,
        bytes: 0,
        early: !matches!(name, "gate-up" | "embedding"),
    };
    let mut stages = vec![stage("embedding")];
    let mut first = Vec::with_capacity(cfg.layers);
    for i in 0..cfg.layers {
        first.push(stages.len());
        let names = if cfg.is_attention(i) { ATTENTION } else { GDN };
        stages.extend(names.iter().map(|&n| stage(n)));
    }
    let tail = stages.len();
    stages.extend(["final norm", "lm head", "argmax", "next token"].map(stage));

    let state = (2 * (cfg.conv_slot_bytes() + cfg.rec_slot_bytes())) as u64;
    let kv = (2 * cfg.attn_kv_heads * cfg.attn_head_dim * 2 * ctx) as u64;
    let mut routed = vec![0u64; stages.len()];
    for s in tensor_specs(cfg) {
        let index = match s.traffic {
            Traffic::Draft => continue,
            Traffic::Row => 0,
            _ => stage_of(&s.name, &stages, &first, tail)?,
        };
        let values = if s.traffic == Traffic::Row {
            s.shape[1]
        } else {
            s.numel()
        };
        let bytes = 2 * values as u64;
        match s.traffic {
            Traffic::Expert => routed[index] += bytes,
            _ => stages[index].bytes += bytes,
        }
    }
    for (i, &f) in first.iter().enumerate() {
        let (mixer, bytes) = if cfg.is_attention(i) {
            (2, kv)
        } else {
            (1, state)
        };
        stages[f + mixer].bytes += bytes;
    }
    // A routed expert's tensors are read by top_k of the experts' tokens.
    for (s, r) in stages.iter_mut().zip(routed) {
        s.bytes += r * top_k as u64 / experts as u64;
    }
    Ok(stages)
}

/// The stage that reads tensor `name`: `model.layers.{i}.…` by its part of the layer, the
/// rest by name.
fn stage_of(name: &str, stages: &[Stage], first: &[usize], tail: usize) -> Result<usize> {
    let find = |from: usize, stage: &str| {
        (from..stages.len())
            .find(|&j| stages[j].name == stage)
            .context("stage list")
    };
    if let Some(rest) = name.strip_prefix("model.layers.") {
        let (layer, part) = rest
            .split_once('.')
            .with_context(|| format!("tensor {name}: no layer part"))?;
        let layer: usize = layer
            .parse()
            .with_context(|| format!("tensor {name}: layer index"))?;
        let from = *first
            .get(layer)
            .with_context(|| format!("tensor {name}: layer {layer} past the model's"))?;
        let stage = match part {
            p if p.starts_with("input_layernorm") || p.contains(".in_proj_") => "input projections",
            p if p.starts_with("self_attn.") && p.contains("_proj.") && !p.contains("o_proj") => {
                "input projections"
            }
            p if p.starts_with("linear_attn.") && !p.contains("out_proj") => "gdn step",
            p if p.starts_with("self_attn.q_norm") || p.starts_with("self_attn.k_norm") => {
                "attention prep"
            }
            p if p.contains("out_proj")
                || p.contains("o_proj")
                || p.starts_with("post_attention_layernorm") =>
            {
                "output projection"
            }
            p if p.starts_with("mlp.gate.") || p.starts_with("mlp.shared_expert_gate.") => {
                "output projection"
            }
            p if p.contains(".gate_proj.") || p.contains(".up_proj.") => "gate-up",
            p if p.contains(".down_proj.") => "down",
            _ => bail!("tensor {name}: no decode stage reads it"),
        };
        return find(from, stage);
    }
    match name {
        "model.norm.weight" => find(tail, "final norm"),
        "lm_head.weight" => find(tail, "lm head"),
        _ => bail!("tensor {name}: no decode stage reads it"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::bytes_per_round;

    #[test]
    fn the_stages_read_the_bytes_of_a_decode_round() {
        for preset in ["tiny", "small", "qwen3.6-35b-a3b"] {
            let cfg = ModelConfig::preset(preset).unwrap();
            let stages = decode_stages(&cfg, 2240).unwrap();
            let sum: u64 = stages.iter().map(|s| s.bytes).sum();
            assert_eq!(sum as f64, bytes_per_round(&cfg, 2240.0, None), "{preset}");
        }
    }

    /// The CUDA backend's plain decode graph of this shape holds 255 kernel nodes
    /// (`graph_kernel_nodes` in every `engine bench` row on the H200).
    #[test]
    fn the_35b_a3b_chain_has_a_stage_per_launch_of_its_decode_graph() {
        let cfg = ModelConfig::preset("qwen3.6-35b-a3b").unwrap();
        let stages = decode_stages(&cfg, 2240).unwrap();
        assert_eq!(stages.len(), 255);
        let late: Vec<_> = stages.iter().filter(|s| !s.early).map(|s| s.name).collect();
        assert_eq!(late.len(), 1 + cfg.layers, "{late:?}");
        let gate_up = stages.iter().find(|s| s.name == "gate-up").unwrap();
        // 8 routed experts and the shared one, gate and up: 2 x 9 x 512 x 2048 bf16.
        assert_eq!(gate_up.bytes, 2 * 9 * 512 * 2048 * 2);
        let lm_head = stages.iter().find(|s| s.name == "lm head").unwrap();
        assert_eq!(lm_head.bytes, 248_320 * 2048 * 2);
    }

    #[test]
    fn a_dense_model_has_no_moe_chain() {
        let err = decode_stages(&ModelConfig::preset("dense-27b").unwrap(), 2048).unwrap_err();
        assert!(format!("{err:#}").contains("dense"), "{err:#}");
    }
}
