//! Decoding invariants: chunked prefill, speculative = plain greedy, arms compute the same.

mod common;

use common::*;
use engine::backend::Backend;
use engine::options::{Arm, PoolLayout, Prefetch};

#[test]
fn chunked_prefill_equals_token_by_token() {
    let p = prompt(3, 40);
    let (mut outs, mut pools) = (Vec::new(), Vec::new());
    for chunk in [1, 7, 40, 64] {
        let mut m = tiny_model(3, Arm::default(), chunk);
        m.prefill(&p, chunk, false);
        // The whole recurrent and conv state, bit for bit.
        pools.push(m.state_pool().0.to_vec());
        outs.push(generate(&mut m, &p, chunk, 24, None).0);
    }
    assert!(
        pools.iter().all(|s| *s == pools[0]),
        "state after prefill depends on the chunk size"
    );
    assert!(outs.iter().all(|o| *o == outs[0]), "{outs:?}");
    // Prefilling the prompt plus the first generated tokens continues the same sequence.
    let mut m = tiny_model(3, Arm::default(), 64);
    let longer: Vec<u32> = p.iter().chain(&outs[0][..10]).copied().collect();
    let (cont, _) = generate(&mut m, &longer, 16, 8, None);
    assert_eq!(cont[..], outs[0][10..19]);
}

#[test]
fn speculative_greedy_equals_plain_greedy_for_every_k() {
    let (mut partial, mut total_rounds) = (0, 0);
    for seed in [0, 1, 2, 5] {
        let p = prompt(seed, 20);
        let mut m = tiny_model(seed, Arm::default(), 8);
        let (plain, _) = generate(&mut m, &p, 8, 40, None);
        let distinct: std::collections::BTreeSet<_> = plain.iter().collect();
        assert!(
            distinct.len() > 5,
            "seed {seed}: degenerate output {plain:?}"
        );
        for k in 1..=5 {
            let (spec, st) = generate(&mut m, &p, 8, 40, Some(k));
            assert_eq!(spec, plain, "seed {seed}, K = {k}: {st:?}");
            assert!(st.rounds > 0 && st.drafted == st.rounds * k as u64);
            total_rounds += st.rounds;
            if st.accepted > 0 && st.accepted < st.drafted {
                partial += 1;
            }
        }
    }
    // The rollback path (partial acceptance) must have been exercised.
    assert!(
        partial > 10 && total_rounds > 100,
        "partial {partial}, rounds {total_rounds}"
    );
}

#[test]
fn every_arm_computes_the_same_tokens_and_counts_its_prefetch() {
    let p = prompt(9, 24);
    let mut reference = None;
    for layout in [PoolLayout::ByLayer, PoolLayout::BySlot] {
        for prefetch in [
            Prefetch::Off,
            Prefetch::NextLayer,
            Prefetch::Null,
            Prefetch::StructuralZero,
        ] {
            let mut m = tiny_model(9, Arm { prefetch, layout }, 16);
            let (out, st) = generate(&mut m, &p, 16, 30, Some(3));
            match &reference {
                None => reference = Some((out, st)),
                Some(r) => assert_eq!(*r, (out, st), "{prefetch:?} {layout:?}"),
            }
            let c = m.backend.prefetch_counts();
            assert_eq!(c.mode, prefetch);
            match prefetch {
                Prefetch::Off => assert_eq!((c.walked_bytes, c.issued_bytes), (0, 0)),
                Prefetch::Null => assert!(c.walked_bytes > 0 && c.issued_bytes == 0),
                _ => assert!(c.issued_bytes > 0 && c.issued_bytes == c.walked_bytes),
            }
        }
    }
}

#[test]
fn seeds_change_the_output_and_repeats_do_not() {
    let p = prompt(1, 16);
    let run = |seed| generate(&mut tiny_model(seed, Arm::default(), 16), &p, 16, 16, None).0;
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}
