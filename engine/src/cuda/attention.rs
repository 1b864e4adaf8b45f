//! Gated full attention over a bf16 KV cache (kernels/attention.cu), decode and verify.

use anyhow::{ensure, Result};
use cudarc::driver::{DevicePtr, DevicePtrMut, LaunchConfig};
use half::bf16;

use super::args::{dim, input, output, positions};
use super::Gpu;

/// Shape of one full-attention layer and its cache.
#[derive(Debug, Clone, Copy)]
pub struct AttnShape {
    pub hq: usize,
    pub hkv: usize,
    /// 64, 128 or 256.
    pub head_dim: usize,
    /// Positions the cache holds: caches are `[hkv][max_ctx][head_dim]` bf16.
    pub max_ctx: usize,
    /// Rotary dims (the first 25 % of the head dim in the model).
    pub rot_dim: usize,
    pub eps: f32,
}

/// q heads per kv head the decode kernel is instantiated for (all handled in one block).
const GROUPS: [usize; 5] = [1, 2, 4, 6, 8];
/// Warps of an `attn_decode` block (kernels/attention.cu `ATTN_WARPS`): whole warps per q head,
/// as `AttnWarps` there.
const ATTN_WARPS: usize = 16;
/// Threads of an `attn_decode` block for `group` q heads per kv head.
fn decode_threads(group: usize) -> u32 {
    let per_head = (ATTN_WARPS / group).max(1);
    (32 * group * per_head) as u32
}

/// Most splits of the keys per (kv head, position).
pub const MAX_SPLITS: usize = 256;
/// Fewest keys a split walks: a position uses as many of the launch's splits as give each at
/// least this many (`ATTN_SPLIT_KEYS` in kernels/attention.cu).
const SPLIT_KEYS: usize = 32;

impl AttnShape {
    fn check(&self) -> Result<()> {
        ensure!(matches!(self.head_dim, 64 | 128 | 256), "attention head dim {}: the kernels take 64, 128 or 256", self.head_dim);
        ensure!(self.hkv > 0 && self.hq.is_multiple_of(self.hkv) && GROUPS.contains(&(self.hq / self.hkv)), "attention heads {}/{}: q heads must be {GROUPS:?} times the kv heads", self.hq, self.hkv);
        ensure!(self.rot_dim.is_multiple_of(2) && self.rot_dim <= self.head_dim, "rotary dims {} must be even and at most the head dim {}", self.rot_dim, self.head_dim);
        Ok(())
    }
    /// Elements of one cache (keys or values).
    pub fn cache_len(&self) -> usize {
        self.hkv * self.max_ctx * self.head_dim
    }
    /// fp32 scratch that [`Gpu::attn_decode`] needs for `t` positions and `splits` splits.
    pub fn scratch_len(&self, t: usize, splits: usize) -> usize {
        t * self.hq * splits * (self.head_dim + 2)
    }
    /// Splits of the keys that fill the device at a full cache: about two blocks per SM, each
    /// walking at least `SPLIT_KEYS` keys. Fixed per captured graph; each position uses as
    /// many of them as its context gives `SPLIT_KEYS` keys each.
    pub fn splits(&self, t: usize, sm_count: u32) -> usize {
        let for_sms = (2 * sm_count as usize).div_ceil(self.hkv * t);
        for_sms.min(self.max_ctx.div_ceil(SPLIT_KEYS)).clamp(1, MAX_SPLITS)
    }
}

impl Gpu {
    /// Normalises q and k per head (the (1+w) RMSNorm over the head dim), rotates the first
    /// `rot_dim` dims at positions pos0..pos0+t, appends k and v to the caches there and writes
    /// the rotated q to `q_out`. `qg` `[t][hq][2D]` is the q projection (per head the query,
    /// then its output gate), k, v `[t][hkv][D]` fp32; the rotary angles from `rope`, the
    /// model's table ([`crate::model::rope_table`]: `[max_ctx][rot_dim]`, per position the
    /// cosines, then the sines); pos0 = `base` (one i32 on the device) + `offset`; the caller
    /// keeps pos0 + t <= max_ctx.
    #[allow(clippy::too_many_arguments)]
    pub fn attn_prep(&self, qg: &impl DevicePtr<f32>, k: &impl DevicePtr<f32>, v: &impl DevicePtr<f32>, q_norm: &impl DevicePtr<bf16>, k_norm: &impl DevicePtr<bf16>, rope: &impl DevicePtr<f32>, base: &impl DevicePtr<i32>, offset: i32, k_cache: &mut impl DevicePtrMut<bf16>, v_cache: &mut impl DevicePtrMut<bf16>, q_out: &mut impl DevicePtrMut<f32>, t: usize, s: AttnShape) -> Result<()> {
        s.check()?;
        positions(t)?;
        let d = s.head_dim;
        let qg = input("attention q projection", qg, t * s.hq * 2 * d, &self.stream)?;
        let k = input("attention k", k, t * s.hkv * d, &self.stream)?;
        let v = input("attention v", v, t * s.hkv * d, &self.stream)?;
        let qn = input("q norm weight", q_norm, d, &self.stream)?;
        let kn = input("k norm weight", k_norm, d, &self.stream)?;
        let rope = input("rotary table", rope, s.max_ctx * s.rot_dim, &self.stream)?;
        let base = input("attention base position", base, 1, &self.stream)?;
        let kc = output("key cache", k_cache, s.cache_len(), &self.stream)?;
        let vc = output("value cache", v_cache, s.cache_len(), &self.stream)?;
        let q_out = output("rotated q", q_out, t * s.hq * d, &self.stream)?;
        let cfg = LaunchConfig { grid_dim: ((s.hq + s.hkv) as u32, t as u32, 1), block_dim: (d as u32, 1, 1), shared_mem_bytes: 0 };
        launch!(self, "attn_prep", cfg, &qg, &k, &v, &qn, &kn, &rope, &base, &offset, &kc, &vc, &q_out, &dim("hq", s.hq)?, &dim("hkv", s.hkv)?, &dim("max_ctx", s.max_ctx)?, &dim("rot_dim", s.rot_dim)?, &s.eps, &self.early_arg());
        Ok(())
    }

    /// out = sigmoid(gate) * softmax(q k^T / sqrt(D)) v, GQA, causal: position t sees keys
    /// 0..=pos0+t, pos0 = `base` + `offset` as in [`Gpu::attn_prep`]. q `[t][hq][D]` from
    /// [`Gpu::attn_prep`], the gate read from the q projection `qg` `[t][hq][2D]`, out `[t][hq][D]` fp32;
    /// `scratch` holds [`AttnShape::scratch_len`]`(t, splits)` floats. Two launches.
    #[allow(clippy::too_many_arguments)]
    pub fn attn_decode(&self, q: &impl DevicePtr<f32>, k_cache: &impl DevicePtr<bf16>, v_cache: &impl DevicePtr<bf16>, base: &impl DevicePtr<i32>, offset: i32, qg: &impl DevicePtr<f32>, scratch: &mut impl DevicePtrMut<f32>, out: &mut impl DevicePtrMut<f32>, t: usize, splits: usize, s: AttnShape) -> Result<()> {
        s.check()?;
        positions(t)?;
        ensure!((1..=MAX_SPLITS).contains(&splits), "attention splits {splits}: take 1..={MAX_SPLITS}");
        let d = s.head_dim;
        let q = input("attention q", q, t * s.hq * d, &self.stream)?;
        let kc = input("key cache", k_cache, s.cache_len(), &self.stream)?;
        let vc = input("value cache", v_cache, s.cache_len(), &self.stream)?;
        let base = input("attention base position", base, 1, &self.stream)?;
        let qg = input("attention q projection", qg, t * s.hq * 2 * d, &self.stream)?;
        let acc = output("attention scratch", scratch, s.scratch_len(t, splits), &self.stream)?;
        let ml = acc + (t * s.hq * splits * d * 4) as u64;
        let out = output("attention output", out, t * s.hq * d, &self.stream)?;
        let scale = 1.0 / (d as f32).sqrt();
        let hq = dim("hq", s.hq)?;
        let group = s.hq / s.hkv;
        let cfg = LaunchConfig { grid_dim: (s.hkv as u32, t as u32, splits as u32), block_dim: (decode_threads(group), 1, 1), shared_mem_bytes: 0 };
        launch!(self, format!("attn_decode_d{d}_g{group}"), cfg, &q, &kc, &vc, &base, &offset, &acc, &ml, &hq, &dim("max_ctx", s.max_ctx)?, &scale, &self.early_arg());
        let cfg = LaunchConfig { grid_dim: (s.hq as u32, t as u32, (d / 32) as u32), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        launch!(self, "attn_combine", cfg, &acc, &ml, &qg, &out, &hq, &dim("head dim", d)?, &dim("splits", splits)?, &base, &offset, &self.early_arg());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::nvrtc::assert_defines;
    use super::*;

    #[test]
    fn split_keys_and_warps_match_the_kernel() {
        assert_defines("attention.cu", &[("ATTN_SPLIT_KEYS", SPLIT_KEYS), ("ATTN_WARPS", ATTN_WARPS)]);
    }

    #[test]
    fn decode_blocks_give_each_q_head_whole_warps() {
        assert_eq!(decode_threads(8), 16 * 32);
        assert_eq!(decode_threads(6), 12 * 32, "two warps for each of six q heads");
        assert_eq!(decode_threads(1), 16 * 32);
    }

    #[test]
    fn splits_fill_the_device_at_a_full_cache() {
        let s = AttnShape { hq: 16, hkv: 2, head_dim: 256, max_ctx: 8192, rot_dim: 64, eps: 1e-6 };
        assert_eq!(s.splits(1, 132), 132);
        assert_eq!(s.splits(4, 132), 33);
        assert_eq!(AttnShape { max_ctx: 512, ..s }.splits(1, 132), 16, "a split walks at least 32 keys of a full cache");
    }
}
