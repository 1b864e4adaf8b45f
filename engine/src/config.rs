//! Model shapes: the presets and the JSON config that describes one.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Largest number of draft tokens a speculative round may propose.
pub const MAX_DRAFT: usize = 5;

/// Largest GDN key/value head dim (the CPU kernel keeps per-head vectors on the stack).
pub const MAX_GDN_DIM: usize = 256;

/// One model shape. Every tensor shape, the state pool and the scratch sizes derive from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub name: String,
    pub vocab: usize,
    pub hidden: usize,
    pub layers: usize,
    /// Every `full_attention_interval`-th layer (1-based) is full attention, the rest GDN.
    pub full_attention_interval: usize,
    pub gdn_key_heads: usize,
    pub gdn_value_heads: usize,
    pub gdn_key_dim: usize,
    pub gdn_value_dim: usize,
    pub conv_kernel: usize,
    pub attn_heads: usize,
    pub attn_kv_heads: usize,
    pub attn_head_dim: usize,
    /// Fraction of the attention head dim that gets rotary embedding.
    pub partial_rotary: f64,
    pub rope_theta: f64,
    pub ffn: Ffn,
    /// Positions a sequence may hold (prompt plus generated plus draft lookahead).
    pub max_context: usize,
    pub rms_eps: f64,
}

/// The feed-forward block of every layer (and of the MTP layer).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Ffn {
    Moe {
        experts: usize,
        top_k: usize,
        expert_size: usize,
        shared_size: usize,
    },
    Dense {
        size: usize,
    },
}

impl ModelConfig {
    /// Names accepted by `--preset`.
    pub const PRESETS: [&'static str; 4] = ["tiny", "small", "qwen3.6-35b-a3b", "dense-27b"];

    pub fn preset(name: &str) -> Result<Self> {
        let moe = |experts, top_k, expert_size, shared_size| Ffn::Moe {
            experts,
            top_k,
            expert_size,
            shared_size,
        };
        let base = |name: &str,
                    vocab,
                    hidden,
                    layers,
                    gdn: [usize; 3],
                    attn: [usize; 3],
                    ffn,
                    max_context| ModelConfig {
            name: name.to_string(),
            vocab,
            hidden,
            layers,
            full_attention_interval: 4,
            gdn_key_heads: gdn[0],
            gdn_value_heads: gdn[1],
            gdn_key_dim: gdn[2],
            gdn_value_dim: gdn[2],
            conv_kernel: 4,
            attn_heads: attn[0],
            attn_kv_heads: attn[1],
            attn_head_dim: attn[2],
            partial_rotary: 0.25,
            rope_theta: 10_000_000.0,
            ffn,
            max_context,
            rms_eps: 1e-6,
        };
        Ok(match name {
            "tiny" => base(
                name,
                512,
                64,
                4,
                [2, 4, 16],
                [4, 2, 16],
                moe(8, 2, 32, 32),
                256,
            ),
            "small" => base(
                name,
                8192,
                256,
                8,
                [4, 8, 64],
                [8, 2, 64],
                moe(32, 4, 128, 128),
                2048,
            ),
            "qwen3.6-35b-a3b" => base(
                name,
                248_320,
                2048,
                40,
                [16, 32, 128],
                [16, 2, 256],
                moe(256, 8, 512, 512),
                8192,
            ),
            "dense-27b" => base(
                name,
                248_320,
                5120,
                64,
                [16, 48, 128],
                [24, 4, 256],
                Ffn::Dense { size: 17408 },
                8192,
            ),
            other => bail!(
                "unknown preset `{other}` for --preset; allowed: {}",
                Self::PRESETS.join(", ")
            ),
        })
    }

    pub fn from_json_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --config file {}", path.display()))?;
        let cfg: ModelConfig = serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "malformed --config file {} (line {}, column {}): {e}",
                path.display(),
                e.line(),
                e.column()
            )
        })?;
        cfg.validate()
            .with_context(|| format!("invalid model in --config file {}", path.display()))?;
        Ok(cfg)
    }

    /// Checks the relations the kernels rely on.
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("vocab", self.vocab),
            ("hidden", self.hidden),
            ("layers", self.layers),
            ("full_attention_interval", self.full_attention_interval),
            ("gdn_key_heads", self.gdn_key_heads),
            ("gdn_value_heads", self.gdn_value_heads),
            ("gdn_key_dim", self.gdn_key_dim),
            ("gdn_value_dim", self.gdn_value_dim),
            ("conv_kernel", self.conv_kernel),
            ("attn_heads", self.attn_heads),
            ("attn_kv_heads", self.attn_kv_heads),
            ("attn_head_dim", self.attn_head_dim),
            ("max_context", self.max_context),
        ];
        for (field, v) in positive {
            if v == 0 {
                bail!("`{field}` must be a positive integer");
            }
        }
        if self.gdn_key_dim > MAX_GDN_DIM || self.gdn_value_dim > MAX_GDN_DIM {
            bail!("`gdn_key_dim` and `gdn_value_dim` must be at most {MAX_GDN_DIM}");
        }
        if !self.gdn_value_heads.is_multiple_of(self.gdn_key_heads) {
            bail!(
                "`gdn_value_heads` ({}) must be a multiple of `gdn_key_heads` ({})",
                self.gdn_value_heads,
                self.gdn_key_heads
            );
        }
        if !self.attn_heads.is_multiple_of(self.attn_kv_heads) {
            bail!(
                "`attn_heads` ({}) must be a multiple of `attn_kv_heads` ({})",
                self.attn_heads,
                self.attn_kv_heads
            );
        }
        if !self.conv_channels().is_multiple_of(2) {
            bail!("the GDN conv channel count (2·key_heads·key_dim + value_heads·value_dim) must be even");
        }
        let rot = self.rotary_dim();
        if rot == 0 || !rot.is_multiple_of(2) || rot > self.attn_head_dim {
            bail!("`partial_rotary` × `attn_head_dim` must give an even rotary width in 2..=head_dim, got {rot}");
        }
        if let Ffn::Moe {
            experts,
            top_k,
            expert_size,
            shared_size,
        } = self.ffn
        {
            if experts == 0 || expert_size == 0 || shared_size == 0 || top_k == 0 || top_k > experts
            {
                bail!("MoE needs experts ≥ top_k ≥ 1 and positive expert_size and shared_size");
            }
        }
        if let Ffn::Dense { size: 0 } = self.ffn {
            bail!("dense FFN `size` must be positive");
        }
        Ok(())
    }

    /// Whether layer `i` (0-based) is full attention (Qwen3-Next: layers 3, 7, 11, …).
    pub fn is_attention(&self, i: usize) -> bool {
        (i + 1).is_multiple_of(self.full_attention_interval)
    }

    pub fn gdn_layers(&self) -> usize {
        (0..self.layers).filter(|&i| !self.is_attention(i)).count()
    }

    pub fn attention_layers(&self) -> usize {
        self.layers - self.gdn_layers()
    }

    pub fn conv_channels(&self) -> usize {
        2 * self.gdn_key_heads * self.gdn_key_dim + self.gdn_value_heads * self.gdn_value_dim
    }

    pub fn rotary_dim(&self) -> usize {
        (self.attn_head_dim as f64 * self.partial_rotary).round() as usize
    }

    /// Bytes of one slot of one GDN layer's conv state (bf16, the last `conv_kernel − 1` inputs).
    pub fn conv_slot_bytes(&self) -> usize {
        (self.conv_kernel - 1) * self.conv_channels() * 2
    }

    /// Bytes of one slot of one GDN layer's recurrent state (fp32 `[HV][K][V]`).
    pub fn rec_slot_bytes(&self) -> usize {
        self.gdn_value_heads * self.gdn_key_dim * self.gdn_value_dim * 4
    }

    /// The whole two-slot state pool.
    pub fn state_pool_bytes(&self) -> usize {
        2 * self.gdn_layers() * (self.conv_slot_bytes() + self.rec_slot_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_preset_pool_matches_engine_md() {
        let c = ModelConfig::preset("qwen3.6-35b-a3b").unwrap();
        assert_eq!(c.gdn_layers(), 30);
        assert_eq!(c.rec_slot_bytes(), 2_097_152);
        assert_eq!(c.conv_slot_bytes(), 49_152);
        assert_eq!(c.state_pool_bytes(), 128_778_240);
        let d = ModelConfig::preset("dense-27b").unwrap();
        assert_eq!(d.state_pool_bytes(), 307_888_128);
        assert!((0..40)
            .filter(|&i| c.is_attention(i))
            .eq([3, 7, 11, 15, 19, 23, 27, 31, 35, 39]));
    }

    #[test]
    fn presets_validate_and_round_trip_json() {
        for p in ModelConfig::PRESETS {
            let c = ModelConfig::preset(p).unwrap();
            c.validate().unwrap();
            let back: ModelConfig =
                serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
            assert_eq!(back, c);
        }
    }
}
