// The decode pad of ENGINE_DECODE_PAD_PCT (the known-effect control): the last launch of a
// padded decode round. Once the round's last kernel has finished (pdl_begin), one thread spins
// on the device's clock for the nanoseconds *pad_ns holds. The length is read from memory, not
// passed by value, so that the graphs captured during the warm-up (length 0) replay the length
// the host writes after it. At length 0 only the launch is left: the mechanism's own cost.

__device__ __forceinline__ u64 globaltimer_ns() {
    u64 ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

// Grid (1), block (1). A plain load, not a read-only one: the host rewrites the length between
// replays.
extern "C" __global__ void decode_pad(const u64* pad_ns) {
    pdl_begin();
    const u64 pad = *pad_ns;
    const u64 start = globaltimer_ns();
    while (globaltimer_ns() - start < pad) {
    }
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
