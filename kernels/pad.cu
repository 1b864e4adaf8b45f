// The decode pad of ENGINE_DECODE_PAD_PCT (the known-effect control, engine/src/pad.rs): a
// padded decode round starts with round_start and ends with decode_pad, which spins on the
// device's clock for a fraction of the round's own time and of the host's turnaround before
// it, once the round's last kernel has finished (pdl_begin). Everything lives in the state the
// launches point to, not in their arguments, so that the graphs captured once replay the
// fraction the host writes later, and the host reads back what the pads waited.

__device__ __forceinline__ u64 globaltimer_ns() {
    u64 ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

// The state's words (engine/src/cuda/pad.rs, PadState).
#define PAD_FRACTION 0      // the fraction, an f64's bits
#define PAD_ROUND_START 1   // when the round began
#define PAD_PREVIOUS_END 2  // when the previous pad ended, 0 before the first
#define PAD_TURNAROUND 3    // the last turnaround counted
#define PAD_WAITED 4        // nanoseconds waited since the host last read them
#define PAD_ROUNDS 5        // rounds padded since then
#define PAD_OWN_TOTAL 6     // the rounds' own nanoseconds since then
#define PAD_TURNAROUND_TOTAL 7  // the turnarounds counted since then

// Grid (1), block (1): the first launch of a padded round.
extern "C" __global__ void round_start(u64* pad) {
    pdl_begin();
    pad[PAD_ROUND_START] = globaltimer_ns();
}

// Grid (1), block (1): the last launch of a padded round; the rule is engine/src/pad.rs's
// turnaround_ns and wait_ns. Plain loads, not read-only ones: the host rewrites the state
// between replays.
extern "C" __global__ void decode_pad(u64* pad) {
    pdl_begin();
    const u64 start = pad[PAD_ROUND_START];
    const u64 previous = pad[PAD_PREVIOUS_END];
    const u64 last_turnaround = pad[PAD_TURNAROUND];
    const double fraction = __longlong_as_double((long long)pad[PAD_FRACTION]);
    const u64 waited = pad[PAD_WAITED];
    const u64 rounds = pad[PAD_ROUNDS];
    const u64 own_total = pad[PAD_OWN_TOTAL];
    const u64 turnaround_total = pad[PAD_TURNAROUND_TOTAL];
    const u64 now = globaltimer_ns();
    const u64 own = now - start;
    const u64 turnaround = previous != 0 && start - previous <= own ? start - previous : last_turnaround;
    const u64 wait = (u64)(fraction * (double)(own + turnaround));
    // A load stalls only the instruction that uses its value, so `now` is read before the loads
    // above arrive, and every pad, P = 0's too, spends their latency after it: 0.41 µs a round
    // on an H100, which a spin counted from `now` counted as waited but did not add (the
    // turnaround after it read that much shorter than P = 0's, and the pad 19 % short at 0.1 %;
    // ladders/known-effect-parts-h200.toml). The spin therefore counts from a reading taken
    // once the wait is known, which P = 0 never takes: what P > 0 adds is then `spun`. It ends
    // on the reading that passes `wait`, with none after.
    u64 spun = 0;
    if (wait > 0) {
        const u64 from = globaltimer_ns();
        u64 end = from;
        while (end - from < wait) {
            end = globaltimer_ns();
        }
        spun = end - from;
    }
    pad[PAD_TURNAROUND] = turnaround;
    // The end on `now`'s footing in every pad, so that P > 0's turnarounds read as P = 0's.
    pad[PAD_PREVIOUS_END] = now + spun;
    pad[PAD_WAITED] = waited + spun;
    pad[PAD_ROUNDS] = rounds + 1;
    pad[PAD_OWN_TOTAL] = own_total + own;
    pad[PAD_TURNAROUND_TOTAL] = turnaround_total + turnaround;
}

// Grid (1), block (1): the clock's first `n + 1` distinct readings, so that the host can read
// its step. The pad's spin ends on a step, so a pad is only known to within one.
extern "C" __global__ void globaltimer_ticks(u64* ticks, int n) {
    pdl_begin();
    u64 last = globaltimer_ns();
    ticks[0] = last;
    for (int i = 1; i <= n; ++i) {
        u64 now = globaltimer_ns();
        while (now == last) {
            now = globaltimer_ns();
        }
        ticks[i] = now;
        last = now;
    }
}
