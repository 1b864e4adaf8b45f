//! The two-slot recurrent state pool: one flat allocation holding, for every GDN layer, two
//! slots of conv state and two of recurrent state. One slot is live; a speculative round
//! writes the other and the live index flips when the round commits. The layout decides
//! which parts of a slot are one byte range ([`PoolMap::slot_extent`],
//! [`PoolMap::recurrent_extent`]): what an L2 access-policy window can cover.

use crate::config::ModelConfig;
use crate::options::PoolLayout;

/// Byte offsets of every (GDN layer, slot) region in the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolMap {
    pub layout: PoolLayout,
    pub layers: usize,
    pub conv_bytes: usize,
    pub rec_bytes: usize,
}

impl PoolMap {
    pub fn new(cfg: &ModelConfig, layout: PoolLayout) -> Self {
        PoolMap {
            layout,
            layers: cfg.gdn_layers(),
            conv_bytes: cfg.conv_slot_bytes(),
            rec_bytes: cfg.rec_slot_bytes(),
        }
    }

    pub fn total_bytes(&self) -> usize {
        2 * self.layers * (self.conv_bytes + self.rec_bytes)
    }

    /// Conv state of GDN layer `g` (0-based among GDN layers), slot `s`.
    pub fn conv(&self, g: usize, s: usize) -> usize {
        match self.layout {
            // [conv s0][conv s1][rec s0][rec s1] per layer
            PoolLayout::ByLayer => g * 2 * (self.conv_bytes + self.rec_bytes) + s * self.conv_bytes,
            // [layer 0 s0: conv rec][layer 1 s0] … [layer 0 s1] …
            PoolLayout::BySlot => (s * self.layers + g) * (self.conv_bytes + self.rec_bytes),
            // [s0: conv of every layer, rec of every layer][s1: …]
            PoolLayout::BySlotKind => self.slot_base(s) + g * self.conv_bytes,
        }
    }

    fn slot_base(&self, s: usize) -> usize {
        s * self.layers * (self.conv_bytes + self.rec_bytes)
    }

    /// Recurrent state of GDN layer `g`, slot `s`.
    pub fn rec(&self, g: usize, s: usize) -> usize {
        match self.layout {
            PoolLayout::ByLayer => {
                g * 2 * (self.conv_bytes + self.rec_bytes)
                    + 2 * self.conv_bytes
                    + s * self.rec_bytes
            }
            PoolLayout::BySlot => self.conv(g, s) + self.conv_bytes,
            PoolLayout::BySlotKind => {
                self.slot_base(s) + self.layers * self.conv_bytes + g * self.rec_bytes
            }
        }
    }

    /// The contiguous byte ranges of layer `g`'s slot `s` (conv, rec): what a prefetch of
    /// that slot touches.
    pub fn slot_ranges(&self, g: usize, s: usize) -> [(usize, usize); 2] {
        [
            (self.conv(g, s), self.conv_bytes),
            (self.rec(g, s), self.rec_bytes),
        ]
    }

    /// The one byte range (offset, bytes) that holds slot `s` of every layer, conv and
    /// recurrent; None when the layout interleaves it with the other slot.
    pub fn slot_extent(&self, s: usize) -> Option<(usize, usize)> {
        contiguous((0..self.layers).flat_map(|g| self.slot_ranges(g, s)))
    }

    /// The one byte range that holds the recurrent state of slot `s` of every layer and
    /// nothing else; None when the layout puts other state between.
    pub fn recurrent_extent(&self, s: usize) -> Option<(usize, usize)> {
        contiguous((0..self.layers).map(|g| (self.rec(g, s), self.rec_bytes)))
    }
}

/// The range `ranges` tile without a gap, or None.
fn contiguous(ranges: impl Iterator<Item = (usize, usize)>) -> Option<(usize, usize)> {
    let mut ranges: Vec<_> = ranges.collect();
    ranges.sort_unstable();
    let (start, _) = *ranges.first()?;
    let mut end = start;
    for (offset, bytes) in ranges {
        if offset != end {
            return None;
        }
        end += bytes;
    }
    Some((start, end - start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regions(m: &PoolMap) -> Vec<(usize, usize)> {
        let mut r: Vec<_> = (0..m.layers)
            .flat_map(|g| (0..2).flat_map(move |s| m.slot_ranges(g, s)))
            .collect();
        r.sort();
        r
    }

    #[test]
    fn both_layouts_tile_the_pool_without_overlap() {
        let cfg = ModelConfig::preset("qwen3.6-35b-a3b").unwrap();
        for layout in [
            PoolLayout::ByLayer,
            PoolLayout::BySlot,
            PoolLayout::BySlotKind,
        ] {
            let m = PoolMap::new(&cfg, layout);
            assert_eq!(m.total_bytes(), 128_778_240);
            let r = regions(&m);
            let mut end = 0;
            for (off, len) in r {
                assert_eq!(off, end, "{layout:?}: gap or overlap at {off}");
                assert_eq!(off % 4, 0);
                end = off + len;
            }
            assert_eq!(end, m.total_bytes());
        }
        let m = PoolMap::new(&cfg, PoolLayout::ByLayer);
        assert_eq!(
            (m.conv(1, 0), m.conv(1, 1), m.rec(1, 0)),
            (4_292_608, 4_292_608 + 49_152, 4_292_608 + 98_304)
        );
    }

    /// What one access-policy window can cover in each layout: a slot is one range unless
    /// the layout interleaves the slots, its recurrent state alone only in by-slot-kind.
    #[test]
    fn extents_are_one_range_only_where_the_layout_makes_them_one() {
        let cfg = ModelConfig::preset("qwen3.6-35b-a3b").unwrap();
        let half = 64_389_120;
        let by_layer = PoolMap::new(&cfg, PoolLayout::ByLayer);
        assert_eq!(by_layer.slot_extent(0), None);
        assert_eq!(by_layer.recurrent_extent(1), None);
        let by_slot = PoolMap::new(&cfg, PoolLayout::BySlot);
        assert_eq!(by_slot.slot_extent(0), Some((0, half)));
        assert_eq!(by_slot.slot_extent(1), Some((half, half)));
        assert_eq!(by_slot.recurrent_extent(0), None);
        let kind = PoolMap::new(&cfg, PoolLayout::BySlotKind);
        assert_eq!(kind.slot_extent(1), Some((half, half)));
        let conv = 30 * 49_152;
        assert_eq!(kind.recurrent_extent(0), Some((conv, 30 * 2_097_152)));
        assert_eq!(
            kind.recurrent_extent(1),
            Some((half + conv, 30 * 2_097_152))
        );
    }
}
