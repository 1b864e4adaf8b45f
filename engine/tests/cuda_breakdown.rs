//! The GPU's op rows (`engine bench --rows ops`): the in-graph timeline's kernels, timed in
//! reps of their own on a second model after the timed one, sum to the decode step they were
//! timed in, and that step lies within the timeline's stated cost (engine/README.md, 5 %) of
//! the timed reps' step. The cost is a fixed time per noted launch, so a share of the step
//! holds only for the shape it is stated for: the 35B-A3B decode (on a 4-layer model of a
//! 60 µs step the same notes cost 16 %). Needs a CUDA device with room for the 35B-A3B
//! weights (`.ci/gpu-tests`).

mod common;

use common::one_at_a_time;
use engine::bench::{self, BenchPlan};
use engine::breakdown;
use engine::config::ModelConfig;
use engine::cuda::{CudaBackend, Gpu};
use engine::model::Model;
use engine::options::Arm;
use engine::weights::WeightSource;

/// The timeline's stated cost on the decode step (engine/README.md, `--rows ops`).
const STATED_COST: f64 = 0.05;

#[test]
#[ignore = "needs a CUDA device"]
fn the_timelines_rows_sum_to_the_step_within_the_stated_cost() {
    let _device = one_at_a_time();
    let cfg = || ModelConfig::preset("qwen3.6-35b-a3b").unwrap();
    let src = WeightSource::Synthetic { seed: 4 };
    let plan = BenchPlan {
        n_prompt: 32,
        n_gen: 128,
        reps: 3,
        warmup: 1,
        warmup_decode: None,
        prefill_chunk: 16,
        draft_tokens: None,
        prompts: 2,
        seed: 4,
        read_ceiling_gbs: None,
        decode_pad_pct: None,
    };
    let timed = {
        let backend = CudaBackend::new(0, true, Default::default())
            .unwrap_or_else(|e| panic!("this test needs a CUDA device: {e:#}"));
        let mut m = Model::new(cfg(), &src, Arm::default(), backend, 16).unwrap();
        bench::run(&mut m, &plan).unwrap()
    };
    let gpu = Gpu::with_timeline(0, 1 << 20).expect("the device with a timeline");
    let mut m = Model::new(
        cfg(),
        &src,
        Arm::default(),
        CudaBackend::on(gpu, true, Default::default()),
        16,
    )
    .unwrap();
    let rows = breakdown::run(&mut m, &plan, 1, None, &timed.output_digest).unwrap();
    println!("{}", rows.describe(timed.decode_us_per_token()));
    let covered: f64 = rows.rows.iter().map(|r| r.us_per_token).sum();
    let step = rows.step_us_per_token;
    assert!(
        covered <= step * 1.001 && covered >= step * (1.0 - STATED_COST),
        "the rows cover {covered:.1} of {step:.1} µs a token"
    );
    let cost = step / timed.decode_us_per_token() - 1.0;
    assert!(
        cost < STATED_COST,
        "the timeline's reps ran {:+.2} % against the timed reps",
        100.0 * cost
    );
    let names: Vec<&str> = rows.rows.iter().map(|r| r.name.as_str()).collect();
    assert!(names.contains(&"gdn_step"), "{names:?}");
    let share: f64 = rows.rows.iter().map(|r| r.share).sum();
    assert!((share - covered / step).abs() < 1e-9, "{share}");
}
