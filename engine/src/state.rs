//! The two-slot recurrent state pool: one flat allocation holding, for every GDN layer, two
//! slots of conv state and two of recurrent state. One slot is live; a speculative round
//! writes the other and the live index flips when the round commits.

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
        }
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
        for layout in [PoolLayout::ByLayer, PoolLayout::BySlot] {
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
}
