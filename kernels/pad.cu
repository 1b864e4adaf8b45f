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
// turnaround_ns and wait_ns. A plain load, not a read-only one: the host rewrites the state
// between replays.
extern "C" __global__ void decode_pad(u64* pad) {
    pdl_begin();
    // Every load before the clock is read: the spin counts from `now`, so a load after it
    // would sit inside every wait but not inside P = 0's, and each pad would add that much
    // less than it says (0.46 µs a round on an H100, 0.018 % of the 35B-A3B's round).
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
    // The spin ends on the reading that passes `wait`, and no reading follows it: at P = 0
    // none is taken, so that what P > 0 adds to the kernel is `end - now` exactly (a reading
    // after the spin, in every wait and in P = 0's too, made each pad 0.4 µs short on an H100).
    u64 end = now;
    while (end - now < wait) {
        end = globaltimer_ns();
    }
    pad[PAD_TURNAROUND] = turnaround;
    pad[PAD_PREVIOUS_END] = end;
    pad[PAD_WAITED] = waited + (end - now);
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
