//! Software prefetch of the next GDN layer's state while weights stream (ENGINE_PREFETCH).
//!
//! The model arms up to two regions (a slot's conv and recurrent state); every weight row
//! a matmul then streams also issues one cache-line prefetch from the armed regions, and
//! whatever is left when the FFN block ends is issued in one burst, so the volume per arm
//! is exact and counted.

use crate::backend::PrefetchCounts;
use crate::options::Prefetch;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

pub const LINE: usize = 64;

#[derive(Clone, Copy)]
struct Region {
    base: *const u8,
    lines: usize,
}

/// The armed regions and a shared cursor, so that matmul rows running on several threads
/// each take the next line.
pub struct Prefetcher {
    regions: [Region; 2],
    armed: usize,
    total_lines: usize,
    cursor: AtomicUsize,
    issue: bool,
    mode: Prefetch,
    walked_bytes: AtomicU64,
    issued_bytes: AtomicU64,
    /// A buffer nothing reads: the structural-zero control prefetches from here.
    decoy: Vec<u8>,
}

// The raw pointers are only used as prefetch hints; a prefetch never faults or writes.
unsafe impl Sync for Prefetcher {}
unsafe impl Send for Prefetcher {}

impl Default for Prefetcher {
    fn default() -> Self {
        let none = Region {
            base: std::ptr::null(),
            lines: 0,
        };
        Prefetcher {
            regions: [none; 2],
            armed: 0,
            total_lines: 0,
            cursor: AtomicUsize::new(0),
            issue: false,
            mode: Prefetch::Off,
            walked_bytes: AtomicU64::new(0),
            issued_bytes: AtomicU64::new(0),
            decoy: Vec::new(),
        }
    }
}

impl Prefetcher {
    /// Sizes the decoy to the largest region the model arms at once.
    pub fn reserve_decoy(&mut self, bytes: usize) {
        // Written with non-zero bytes so that its pages are really backed.
        self.decoy = vec![0xA5; bytes];
    }

    /// Arms `bytes` at `ptr` under `mode`.
    pub fn arm(&mut self, ptr: *const u8, bytes: usize, mode: Prefetch) {
        if mode == Prefetch::Off || self.armed == self.regions.len() {
            return;
        }
        let base = if mode == Prefetch::StructuralZero {
            // Same volume, from the decoy: consecutive regions take consecutive decoy bytes.
            let used: usize = self.regions[..self.armed]
                .iter()
                .map(|r| r.lines * LINE)
                .sum();
            assert!(
                used + bytes <= self.decoy.len(),
                "prefetch decoy smaller than the armed regions"
            );
            self.decoy[used..].as_ptr()
        } else {
            ptr
        };
        let lines = bytes.div_ceil(LINE);
        self.regions[self.armed] = Region { base, lines };
        self.armed += 1;
        self.total_lines += lines;
        self.issue = mode != Prefetch::Null;
        self.mode = mode;
    }

    /// Issues up to `n` of the armed lines (called per streamed weight row).
    #[inline]
    pub fn step(&self, n: usize) {
        if self.total_lines == 0 {
            return;
        }
        let start = self.cursor.fetch_add(n, Ordering::Relaxed);
        if start >= self.total_lines {
            return;
        }
        let end = (start + n).min(self.total_lines);
        for line in start..end {
            let (r, i) = if line < self.regions[0].lines {
                (0, line)
            } else {
                (1, line - self.regions[0].lines)
            };
            let p = self.regions[r].base.wrapping_add(i * LINE);
            if self.issue {
                prefetch_line(p);
            } else {
                std::hint::black_box(p);
            }
        }
        let bytes = ((end - start) * LINE) as u64;
        self.walked_bytes.fetch_add(bytes, Ordering::Relaxed);
        if self.issue {
            self.issued_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// Issues what is left and disarms.
    pub fn finish(&mut self) {
        let left = self
            .total_lines
            .saturating_sub(self.cursor.load(Ordering::Relaxed));
        self.step(left);
        self.armed = 0;
        self.total_lines = 0;
        self.cursor.store(0, Ordering::Relaxed);
    }

    pub fn counts(&self) -> PrefetchCounts {
        PrefetchCounts {
            mode: self.mode,
            walked_bytes: self.walked_bytes.load(Ordering::Relaxed),
            issued_bytes: self.issued_bytes.load(Ordering::Relaxed),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_line(p: *const u8) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    // SAFETY: prefetch is a hint; it never faults, even on an invalid address.
    unsafe { _mm_prefetch(p as *const i8, _MM_HINT_T0) }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn prefetch_line(p: *const u8) {
    std::hint::black_box(p);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_real_and_decoy_volume_and_nothing_for_null() {
        let state = vec![1u8; 10_000];
        for (mode, want, walked) in [
            (Prefetch::NextLayer, 10_048u64, 10_048u64),
            (Prefetch::StructuralZero, 10_048, 10_048),
            (Prefetch::Null, 0, 10_048),
            (Prefetch::Off, 0, 0),
        ] {
            let mut p = Prefetcher::default();
            p.reserve_decoy(10_240);
            p.arm(state.as_ptr(), 4_000, mode);
            p.arm(state[4_000..].as_ptr(), 6_000, mode);
            for _ in 0..10 {
                p.step(3);
            }
            p.finish();
            assert_eq!(
                (p.counts().issued_bytes, p.counts().walked_bytes),
                (want, walked),
                "{mode:?}"
            );
            assert_eq!(p.counts().mode, mode);
            p.step(100);
            assert_eq!(
                p.counts().issued_bytes,
                want,
                "{mode:?}: disarmed after finish"
            );
        }
    }
}
