//! `decode_j_per_token` on the card: two runs of the 35B-A3B shape that decode 256 and 1024
//! tokens read the same joules per token, within what the energy counter can resolve over
//! each run's timed decodes (its update interval at the power drawn, `engine
//! energy-counter`), and the device memory the process held is at least the weights'. Needs a
//! CUDA device with NVML (`.ci/gpu-tests`).

mod common;

use common::one_at_a_time;
use engine::bench::{self, BenchPlan, BenchResult};
use engine::config::ModelConfig;
use engine::cuda::{CudaBackend, Gpu};
use engine::energy_counter;
use engine::meter::NvmlMeter;
use engine::model::Model;
use engine::options::Arm;
use engine::weights::WeightSource;
use std::time::Instant;

/// What the decode length changes besides the counter: the mean context the attention reads.
const CONTEXT_ALLOWANCE: f64 = 0.02;

fn run(n_gen: usize, meter: &mut NvmlMeter) -> BenchResult {
    let cfg = ModelConfig::preset("qwen3.6-35b-a3b").unwrap();
    let plan = BenchPlan {
        n_prompt: 128,
        n_gen,
        reps: 2,
        warmup: 1,
        warmup_decode: None,
        prefill_chunk: 8192,
        draft_tokens: None,
        prompts: 1,
        seed: 0,
        read_ceiling_gbs: Some(4500.0),
        decode_pad_pct: None,
    };
    let backend = CudaBackend::new(0, true, Default::default())
        .unwrap_or_else(|e| panic!("this test needs a CUDA device: {e:#}"));
    let src = WeightSource::Synthetic { seed: 0 };
    let mut m = Model::new(cfg, &src, Arm::default(), backend, plan.prefill_chunk).unwrap();
    bench::run_from(&mut m, &plan, Instant::now(), meter).unwrap()
}

/// Card 0's enforced power limit in watts, from NVML.
fn power_limit_w() -> f64 {
    let nvml = nvml_wrapper::Nvml::init().expect("NVML");
    let milliwatts = nvml
        .device_by_index(0)
        .and_then(|d| d.enforced_power_limit())
        .expect("card 0's enforced power limit");
    f64::from(milliwatts) / 1e3
}

#[test]
#[ignore = "needs a CUDA device"]
fn joules_per_token_agree_across_decode_lengths_within_the_counters_resolution() {
    let _device = one_at_a_time();
    let mut meter = NvmlMeter::open(0).unwrap_or_else(|e| panic!("this test needs NVML: {e}"));
    let counter = {
        let gpu = Gpu::new(0).expect("the device");
        energy_counter::measure(&gpu, &mut meter, 2.0).unwrap()
    };
    let (short, long) = (run(256, &mut meter), run(1024, &mut meter));
    let j = |r: &BenchResult| {
        r.decode_j_per_token()
            .expect("an energy figure on the card")
    };
    // Each figure can miss one update interval at each end of each timed decode.
    let resolution = |r: &BenchResult| {
        2.0 * counter.interval_ms / 1e3 / r.decode_seconds_mean / r.plan.reps as f64
    };
    let allowed = resolution(&short) + resolution(&long) + CONTEXT_ALLOWANCE;
    let gap = (j(&short) / j(&long) - 1.0).abs();
    println!(
        "counter every {:.1} ms at {:.0} W; {:.4} J/token over 256, {:.4} over 1024: {:.2} % apart, {:.2} % allowed",
        counter.interval_ms,
        counter.power_w,
        j(&short),
        j(&long),
        100.0 * gap,
        100.0 * allowed
    );
    assert!(gap <= allowed, "{:.2} % apart", 100.0 * gap);
    // A token's joules are at most the card's enforced power limit over its step, to within
    // the counter's resolution. (Not the streaming read's power while the counter was timed:
    // an H100 read 332 W there and decoded at 501 W.)
    let step_s = long.decode_us_per_token() / 1e6;
    let limit_w = power_limit_w();
    assert!(
        j(&long) <= limit_w * step_s * (1.0 + resolution(&long)),
        "{:.4} J a token at {:.3} ms a token is above the card's {limit_w:.0} W limit",
        j(&long),
        1e3 * step_s
    );
    let weights_mib = (2 * 35_000_000_000u64) >> 20;
    let held = long
        .device_mem_peak_mib
        .expect("the memory held on the card");
    assert!(held >= weights_mib * 9 / 10, "{held} MiB held");
}
