//! Decode allocates nothing per token: a counting global allocator watches the steps.

mod common;

use common::*;
use engine::options::{Arm, Prefetch};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static A: Counting = Counting;

#[test]
fn plain_and_speculative_decode_do_not_allocate() {
    // Decode runs on a pool worker as in `engine bench`: jobs injected from outside a pool
    // go through a queue that allocates a block every 63 jobs.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(count_decode_allocations);
}

fn count_decode_allocations() {
    let p = prompt(4, 16);
    let mut m = tiny_model(
        4,
        Arm {
            prefetch: Prefetch::NextLayer,
            ..Arm::default()
        },
        16,
    );
    for k in [None, Some(3)] {
        let first = m.prefill(&p, 16, k.is_some());
        let mut out = Vec::with_capacity(64);
        // Warm up once, then count.
        match k {
            Some(k) => drop(m.decode_spec(first, 4, k, &mut out)),
            None => m.decode_plain(first, 4, &mut out),
        }
        let first = m.prefill(&p, 16, k.is_some());
        out.clear();
        let before = ALLOCS.load(Ordering::Relaxed);
        match k {
            Some(k) => drop(m.decode_spec(first, 40, k, &mut out)),
            None => m.decode_plain(first, 40, &mut out),
        }
        let n = ALLOCS.load(Ordering::Relaxed) - before;
        assert_eq!(
            n, 0,
            "{n} allocations while decoding 40 tokens (spec {k:?})"
        );
        assert_eq!(out.len(), 40);
    }
}
