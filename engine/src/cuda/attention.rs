//! Gated full attention over a bf16 KV cache (kernels/attention.cu), decode and verify.

use anyhow::{ensure, Result};
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig};
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
/// Warps of an attention block (`attn_split`, `attn_decode_cluster`; kernels/attention.cu
/// `ATTN_WARPS`), rounded down to a multiple of the q heads a kv head, as `AttnWarps` there.
const ATTN_WARPS: usize = 16;
/// Threads of an attention block for `group` q heads per kv head.
fn decode_threads(group: usize) -> u32 {
    let per_head = (ATTN_WARPS / group).max(1);
    (32 * group * per_head) as u32
}

/// Most splits of the keys per (kv head, position).
pub const MAX_SPLITS: usize = 256;
/// Fewest keys a split walks: a position uses as many of the launch's splits as give each at
/// least this many (`ATTN_SPLIT_KEYS` in kernels/attention.cu).
const SPLIT_KEYS: usize = 32;
/// Splits merged as a group before the groups are (`ATTN_CLUSTER`): one position's launch runs
/// each group as a cluster of blocks.
const CLUSTER: usize = 8;

/// Warps of an `attn_combine` block (`COMBINE_WARPS`).
const COMBINE_WARPS: u32 = 4;

/// The one-launch kernel for head dim `d` and `group` q heads a kv head, and its clusters: a
/// group of splits each.
fn cluster_kernel(d: usize, group: usize) -> String {
    format!("attn_decode_cluster_d{d}_g{group}")
}
const CLUSTER_SHAPE: [u32; 3] = [1, 1, CLUSTER as u32];

/// Groups of `splits` splits, the last one padded.
fn groups(splits: usize) -> usize {
    splits.div_ceil(CLUSTER)
}

impl AttnShape {
    fn check(&self) -> Result<()> {
        ensure!(
            matches!(self.head_dim, 64 | 128 | 256),
            "attention head dim {}: the kernels take 64, 128 or 256",
            self.head_dim
        );
        ensure!(
            self.hkv > 0
                && self.hq.is_multiple_of(self.hkv)
                && GROUPS.contains(&(self.hq / self.hkv)),
            "attention heads {}/{}: q heads must be {GROUPS:?} times the kv heads",
            self.hq,
            self.hkv
        );
        ensure!(
            self.rot_dim.is_multiple_of(2) && self.rot_dim <= self.head_dim,
            "rotary dims {} must be even and at most the head dim {}",
            self.rot_dim,
            self.head_dim
        );
        Ok(())
    }
    /// Elements of one cache (keys or values).
    pub fn cache_len(&self) -> usize {
        self.hkv * self.max_ctx * self.head_dim
    }
    /// Floats of the partials of `t` positions, `parts` a head: per (position, q head, part)
    /// the accumulator, then the maxima and sums.
    fn parts_len(&self, t: usize, parts: usize) -> usize {
        t * self.hq * parts * (self.head_dim + 2)
    }
    /// Splits of the keys that fill the device for one position at a full cache: about two
    /// blocks per SM, each walking at least `SPLIT_KEYS` keys. Fixed per captured graph, for
    /// every number of positions; each position uses as many of them as its context gives
    /// `SPLIT_KEYS` keys each.
    pub fn splits(&self, sm_count: u32) -> usize {
        let for_sms = (2 * sm_count as usize).div_ceil(self.hkv);
        for_sms
            .min(self.max_ctx.div_ceil(SPLIT_KEYS))
            .clamp(1, MAX_SPLITS)
    }
    /// The plan on a device of `sm_count` SMs that runs `clusters` clusters of the one-launch
    /// kernel at once: one position's attention takes one launch while its live groups of
    /// splits fill at most two thirds of them. Fuller, the clusters queue behind the kernels
    /// around them and two launches are faster (docs/journal.md, seventeenth pass).
    pub fn plan(&self, sm_count: u32, clusters: usize) -> AttnPlan {
        AttnPlan {
            splits: self.splits(sm_count),
            one_launch_groups: 2 * clusters / (3 * self.hkv),
        }
    }
}

/// How a layer's attention runs on a device: the splits of the keys, and up to how many live
/// groups of splits a kv head one position's attention (a decode step) runs in one launch,
/// its splits merged in clusters, rather than in two. A position sums in the same order
/// either way, so the choice may follow the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttnPlan {
    pub splits: usize,
    pub one_launch_groups: usize,
}

impl AttnPlan {
    /// Whether one position with `len` keys in view runs in one launch.
    pub fn one_launch(&self, len: usize) -> bool {
        groups(self.splits.min(len.div_ceil(SPLIT_KEYS))) <= self.one_launch_groups
    }
}

/// What [`Gpu::attn_decode`] passes between its blocks, for up to `positions` positions and
/// one [`AttnPlan`]: the partial accumulators, maxima and sums (of each split, or, in one
/// launch, of each group of splits), and a ticket per q head that tells the cluster writing a
/// head's last group partial to merge them. The tickets start at zero and every launch leaves
/// them there.
pub struct AttnScratch {
    parts: CudaSlice<f32>,
    tickets: CudaSlice<u32>,
    positions: usize,
    plan: AttnPlan,
}

impl AttnScratch {
    /// For shape `s`, `positions` (1..=8) and `plan` (its splits 1..=[`MAX_SPLITS`]; see
    /// [`Gpu::attn_plan`]).
    pub fn new(gpu: &Gpu, s: AttnShape, positions_: usize, plan: AttnPlan) -> Result<Self> {
        positions(positions_)?;
        ensure!(
            (1..=MAX_SPLITS).contains(&plan.splits),
            "attention splits {}: take 1..={MAX_SPLITS}",
            plan.splits
        );
        Ok(Self {
            parts: gpu
                .stream
                .alloc_zeros(s.parts_len(positions_, plan.splits))?,
            tickets: gpu.stream.alloc_zeros(s.hq)?,
            positions: positions_,
            plan,
        })
    }

    /// The plan the scratch was made for.
    pub fn plan(&self) -> AttnPlan {
        self.plan
    }
}

impl Gpu {
    /// [`AttnShape::plan`] on this device.
    pub fn attn_plan(&self, s: AttnShape) -> Result<AttnPlan> {
        s.check()?;
        let group = s.hq / s.hkv;
        let cfg = LaunchConfig {
            grid_dim: (s.hkv as u32, 1, CLUSTER as u32),
            block_dim: (decode_threads(group), 1, 1),
            shared_mem_bytes: 0,
        };
        let clusters =
            self.max_active_clusters(&cluster_kernel(s.head_dim, group), cfg, CLUSTER_SHAPE)?;
        Ok(s.plan(self.info.sm_count, clusters))
    }

    /// Normalises q and k per head (the (1+w) RMSNorm over the head dim), rotates the first
    /// `rot_dim` dims at positions pos0..pos0+t, appends k and v to the caches there and writes
    /// the rotated q to `q_out`. `qg` `[t][hq][2D]` is the q projection (per head the query,
    /// then its output gate), k, v `[t][hkv][D]` fp32; the rotary angles from `rope`, the
    /// model's table ([`crate::model::rope_table`]: `[max_ctx][rot_dim]`, per position the
    /// cosines, then the sines); pos0 = `base` (one i32 on the device) + `offset`; the caller
    /// keeps pos0 + t <= max_ctx.
    #[allow(clippy::too_many_arguments)] // one argument per kernel parameter
    pub fn attn_prep(
        &self,
        qg: &impl DevicePtr<f32>,
        k: &impl DevicePtr<f32>,
        v: &impl DevicePtr<f32>,
        q_norm: &impl DevicePtr<bf16>,
        k_norm: &impl DevicePtr<bf16>,
        rope: &impl DevicePtr<f32>,
        base: &impl DevicePtr<i32>,
        offset: i32,
        k_cache: &mut impl DevicePtrMut<bf16>,
        v_cache: &mut impl DevicePtrMut<bf16>,
        q_out: &mut impl DevicePtrMut<f32>,
        t: usize,
        s: AttnShape,
    ) -> Result<()> {
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
        let cfg = LaunchConfig {
            grid_dim: ((s.hq + s.hkv) as u32, t as u32, 1),
            block_dim: (d as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        launch!(
            self,
            "attn_prep",
            cfg,
            &qg,
            &k,
            &v,
            &qn,
            &kn,
            &rope,
            &base,
            &offset,
            &kc,
            &vc,
            &q_out,
            &dim("hq", s.hq)?,
            &dim("hkv", s.hkv)?,
            &dim("max_ctx", s.max_ctx)?,
            &dim("rot_dim", s.rot_dim)?,
            &s.eps,
            &self.early_arg()
        );
        Ok(())
    }

    /// out = sigmoid(gate) * softmax(q k^T / sqrt(D)) v, GQA, causal: position t sees keys
    /// 0..=pos0+t, pos0 = `base` + `offset` as in [`Gpu::attn_prep`]. q `[t][hq][D]` from
    /// [`Gpu::attn_prep`], the gate read from the q projection `qg` `[t][hq][2D]`, out `[t][hq][D]` fp32.
    /// The keys are split as the scratch's [`AttnPlan`] says (a position uses as many splits
    /// as give each at least 32 keys), merged in groups of 8, then the groups: with
    /// `one_launch` (one position only) in one launch (`attn_decode_cluster`, a group a
    /// cluster), else in two (`attn_split`, then `attn_combine`); a position sums in the same
    /// order either way ([`AttnPlan::one_launch`] says which is faster).
    #[allow(clippy::too_many_arguments)] // the attention kernels' parameters
    pub fn attn_decode(
        &self,
        q: &impl DevicePtr<f32>,
        k_cache: &impl DevicePtr<bf16>,
        v_cache: &impl DevicePtr<bf16>,
        base: &impl DevicePtr<i32>,
        offset: i32,
        qg: &impl DevicePtr<f32>,
        scratch: &mut AttnScratch,
        out: &mut impl DevicePtrMut<f32>,
        t: usize,
        s: AttnShape,
        one_launch: bool,
    ) -> Result<()> {
        s.check()?;
        positions(t)?;
        ensure!(
            t <= scratch.positions,
            "attention over {t} positions with scratch for {}",
            scratch.positions
        );
        ensure!(
            t == 1 || !one_launch,
            "attention over {t} positions in one launch: one launch takes one position"
        );
        let (d, splits) = (s.head_dim, scratch.plan.splits);
        let q = input("attention q", q, t * s.hq * d, &self.stream)?;
        let kc = input("key cache", k_cache, s.cache_len(), &self.stream)?;
        let vc = input("value cache", v_cache, s.cache_len(), &self.stream)?;
        let base = input("attention base position", base, 1, &self.stream)?;
        let qg = input("attention q projection", qg, t * s.hq * 2 * d, &self.stream)?;
        let parts = if one_launch { groups(splits) } else { splits };
        let acc = output(
            "attention partials",
            &mut scratch.parts,
            s.parts_len(t, parts),
            &self.stream,
        )?;
        let ml = acc + (t * s.hq * parts * d * 4) as u64;
        let out = output("attention output", out, t * s.hq * d, &self.stream)?;
        let (scale, hq, nsplit, max_ctx) = (
            1.0 / (d as f32).sqrt(),
            dim("hq", s.hq)?,
            dim("splits", splits)?,
            dim("max_ctx", s.max_ctx)?,
        );
        let group = s.hq / s.hkv;
        let threads = decode_threads(group);
        if one_launch {
            let tickets = output(
                "attention tickets",
                &mut scratch.tickets,
                s.hq,
                &self.stream,
            )?;
            let cfg = LaunchConfig {
                grid_dim: (s.hkv as u32, 1, (groups(splits) * CLUSTER) as u32),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: 0,
            };
            launch!(self, cluster_kernel(d, group), cfg, cluster Some(CLUSTER_SHAPE); &q, &kc, &vc, &base, &offset, &qg, &acc, &ml, &tickets, &out, &hq, &nsplit, &max_ctx, &scale, &self.early_arg());
        } else {
            let cfg = LaunchConfig {
                grid_dim: (s.hkv as u32, t as u32, splits as u32),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: 0,
            };
            launch!(
                self,
                format!("attn_split_d{d}_g{group}"),
                cfg,
                &q,
                &kc,
                &vc,
                &base,
                &offset,
                &acc,
                &ml,
                &hq,
                &nsplit,
                &max_ctx,
                &scale,
                &self.early_arg()
            );
            // A warp a group for one position, in one trip; several positions' launches in
            // blocks of a few warps that loop, so that a prefill chunk's runs in one wave.
            let warps = if t == 1 {
                groups(splits) as u32
            } else {
                COMBINE_WARPS
            };
            let cfg = LaunchConfig {
                grid_dim: (s.hq as u32, t as u32, (d / 32) as u32),
                block_dim: (32 * warps, 1, 1),
                shared_mem_bytes: 0,
            };
            launch!(
                self,
                "attn_combine",
                cfg,
                &acc,
                &ml,
                &qg,
                &out,
                &hq,
                &dim("head dim", d)?,
                &nsplit,
                &base,
                &offset,
                &self.early_arg()
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::nvrtc::assert_defines;
    use super::*;

    #[test]
    fn split_keys_and_warps_match_the_kernel() {
        assert_defines(
            "attention.cu",
            &[
                ("ATTN_SPLIT_KEYS", SPLIT_KEYS),
                ("ATTN_WARPS", ATTN_WARPS),
                ("ATTN_CLUSTER", CLUSTER),
                ("MAX_SPLIT_GROUPS", groups(MAX_SPLITS)),
                ("COMBINE_WARPS", COMBINE_WARPS as usize),
            ],
        );
    }

    #[test]
    fn decode_blocks_give_each_q_head_whole_warps() {
        assert_eq!(decode_threads(8), 16 * 32);
        assert_eq!(
            decode_threads(6),
            12 * 32,
            "two warps for each of six q heads"
        );
        assert_eq!(decode_threads(1), 16 * 32);
    }

    #[test]
    fn splits_fill_the_device_at_a_full_cache() {
        let s = AttnShape {
            hq: 16,
            hkv: 2,
            head_dim: 256,
            max_ctx: 8192,
            rot_dim: 64,
            eps: 1e-6,
        };
        assert_eq!(s.splits(132), 132, "two blocks an SM");
        assert_eq!(
            AttnShape { max_ctx: 512, ..s }.splits(132),
            16,
            "a split walks at least 32 keys of a full cache"
        );
    }

    #[test]
    fn one_launch_when_the_clusters_fill_two_thirds_of_the_device_at_most() {
        // The 35B-A3B's attention on the H200, which runs about 30 of its clusters at once.
        let s = AttnShape {
            hq: 16,
            hkv: 2,
            head_dim: 256,
            max_ctx: 8192,
            rot_dim: 64,
            eps: 1e-6,
        };
        let plan = s.plan(132, 30);
        assert_eq!(
            plan,
            AttnPlan {
                splits: 132,
                one_launch_groups: 10
            },
            "2 x 10 groups of 30 clusters"
        );
        assert!(
            plan.one_launch(1) && plan.one_launch(2048),
            "64 splits, 8 groups"
        );
        assert!(plan.one_launch(2560), "80 splits, 10 groups");
        assert!(!plan.one_launch(2561), "81 splits, 11 groups");
        assert!(!plan.one_launch(8192), "132 splits, 17 groups");
        assert!(s.plan(132, 51).one_launch(8192), "2 x 17 groups of 51");
    }
}
