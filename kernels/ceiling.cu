// The read ceiling: a plain float4 grid-stride read over a large non-zero buffer. The sum is
// written per block so that the compiler cannot drop the loads.

extern "C" __global__ void read_ceiling(const float4* __restrict__ data, u64 n, float* __restrict__ sink) {
    pdl_begin();
    float s = 0.0f;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const float4 a = __ldcs(data + i), b = __ldcs(data + i + stride);
        const float4 c = __ldcs(data + i + 2 * stride), d = __ldcs(data + i + 3 * stride);
        s += (a.x + a.y + a.z + a.w) + (b.x + b.y + b.z + b.w) + (c.x + c.y + c.z + c.w) + (d.x + d.y + d.z + d.w);
    }
    for (; i < n; i += stride) {
        const float4 a = __ldcs(data + i);
        s += a.x + a.y + a.z + a.w;
    }
    s = warp_sum(s);
    if ((threadIdx.x & 31) == 0) atomicAdd(sink + blockIdx.x, s);
}

// What it costs a decode stage to wait for the one before, both ways, with and without the
// one handoff every real stage has (reading, after its wait, a value another block wrote
// before it: `in` or `data` not null). The handoffs also check the wait:
//   stage_step:    a kernel that only waits; with `in`, thread 0 of each block writes one more
//                  than another block's value of the launch before, so after n launches from
//                  zeros every value is n unless a launch read one too early. A graph of them,
//                  launched with dependent launch, costs per launch what the decode chain pays
//                  between two stages.
//   grid_barriers: `rounds` grid-wide barriers inside one launch of one block per SM (thread 0
//                  of each block adds itself to `count` with release semantics and spins until
//                  the round's every block has, with acquire), the alternative a persistent
//                  decode kernel would pay. With `data` (zeros), each block writes the round
//                  into its slot before the barrier and, after it, counts the rounds in which
//                  another block's slot still held an older one into data[gridDim.x + block]:
//                  zero unless the barrier let it through early. `count` starts at 0.
extern "C" __global__ void stage_step(const unsigned* in, unsigned* out) {
    pdl_begin();
    if (in != nullptr && threadIdx.x == 0) out[blockIdx.x] = __ldcg(in + (blockIdx.x + 1) % gridDim.x) + 1;
}

extern "C" __global__ void grid_barriers(unsigned* count, unsigned* data, int rounds) {
    pdl_begin();
    unsigned early = 0;
    for (int r = 1; r <= rounds; ++r) {
        __syncthreads();
        if (threadIdx.x == 0) {
            if (data != nullptr) __stcg(data + blockIdx.x, (unsigned)r);
            asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(count) : "memory");
            unsigned seen;
            do {
                asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(count) : "memory");
            } while (seen < (unsigned)r * gridDim.x);
            if (data != nullptr) early += __ldcg(data + (blockIdx.x + 1) % gridDim.x) < (unsigned)r;
        }
        __syncthreads();
    }
    if (data != nullptr && threadIdx.x == 0) data[gridDim.x + blockIdx.x] = early;
}

// A decode's chain of dependent stages, each reading only its own bytes, two ways:
//   chain_stages_b*: one persistent launch, one block of CHAIN_THREADS per SM, runs `tokens`
//                    times the `stages` stages of a step, each reading its `len[s]` 16-byte
//                    chunks at `data + start[s]` (the block its share), then adding itself to
//                    `count` (release); the stage after waits until every block has for this
//                    one (acquire). `count` starts at 0.
//   chain_launch_b*: one stage a launch of the same shape, waiting for the launch before it
//                    (dependent launch): a graph of them is the chain as the engine runs it.
// After its wait each stage reads the value another block wrote at the end of a stage
// (`slots`; the stage before, unless that block is already past the stage itself): the
// handoff every real stage pays. The values feed nothing but the sink. A stage whose `early`
// is 1 requests its first BATCH chunks a thread before that wait, as a stage that knows its
// bytes can, and with 2 also pulls the rest of its share, up to CHAIN_L2_AHEAD chunks a block,
// into the L2; with 0 it requests them after the wait. What the loads return is folded into
// `sink` (a value a block) and the chunks read are counted into `chunks`, which the host
// checks.
#define CHAIN_THREADS 512

template <int BATCH>
__device__ __forceinline__ void chain_load(uint4 (&v)[BATCH], const uint4* __restrict__ p, u64 i, u64 hi) {
#pragma unroll
    for (int q = 0; q < BATCH; ++q) {
        const u64 j = i + (u64)q * CHAIN_THREADS;
        v[q] = j < hi ? __ldcs(p + j) : make_uint4(0, 0, 0, 0);
    }
}

// Chunks a block pulls into the L2 before its wait (`early` 2): 256 KB, 33 MB over 132 SMs.
#define CHAIN_L2_AHEAD (256 * 1024 / 16)

// Pulls this block's first CHAIN_L2_AHEAD chunks [lo, hi) into the L2 (common.cuh's prefetch_l2).
__device__ __forceinline__ void chain_prefetch_l2(const uint4* p, u64 lo, u64 hi) {
    prefetch_l2(p + lo, 16 * (min(hi, lo + CHAIN_L2_AHEAD) - lo), threadIdx.x, CHAIN_THREADS);
}

// This block's share [lo, hi) of a stage's `len` chunks.
__device__ __forceinline__ void chain_share(u64 len, u64& lo, u64& hi) {
    const u64 per = (len + gridDim.x - 1) / gridDim.x;
    lo = min(len, blockIdx.x * per);
    hi = min(len, lo + per);
}

// Streams chunks i, i + CHAIN_THREADS, ... below hi, the first batch already requested into
// `cur`; folds them into x and counts them into n.
template <int BATCH>
__device__ __forceinline__ unsigned chain_stream(uint4 (&cur)[BATCH], const uint4* __restrict__ p, u64 i, u64 hi,
                                                 unsigned x, unsigned& n) {
    const u64 step = (u64)BATCH * CHAIN_THREADS;
    for (; i < hi; i += step) {
        uint4 next[BATCH];
        chain_load<BATCH>(next, p, i + step, hi);
#pragma unroll
        for (int q = 0; q < BATCH; ++q) {
            n += i + (u64)q * CHAIN_THREADS < hi;
            x ^= cur[q].x ^ cur[q].y ^ cur[q].z ^ cur[q].w;
            cur[q] = next[q];
        }
    }
    return x;
}

// The value another block wrote at the end of the stage before, for the whole block.
__device__ __forceinline__ unsigned chain_handoff(const unsigned* slots) {
    __shared__ unsigned seen;
    if (threadIdx.x == 0) seen = __ldcg(slots + (blockIdx.x + 1) % gridDim.x);
    __syncthreads();
    return seen;
}

// The block's chunks into `chunks` and its threads' values into sink[block], one atomic each.
__device__ __forceinline__ void chain_report(unsigned x, unsigned n, u64* chunks, unsigned* sink) {
    __shared__ unsigned bx, bn;
    if (threadIdx.x == 0) bx = bn = 0;
    __syncthreads();
    x = __reduce_xor_sync(FULL_MASK, x);
    n = __reduce_add_sync(FULL_MASK, n);
    if ((threadIdx.x & 31) == 0) {
        atomicXor(&bx, x);
        atomicAdd(&bn, n);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicAdd(chunks, (u64)bn);
        atomicXor(sink + blockIdx.x, bx);
    }
}

template <int BATCH>
__device__ void chain_stages(const uint4* __restrict__ data, const u64* __restrict__ start, const u64* __restrict__ len,
                             const int* __restrict__ early, int stages, int tokens, unsigned* count, unsigned* slots,
                             u64* chunks, unsigned* sink) {
    pdl_begin();
    unsigned x = 0, n = 0, done = 0;
    for (int r = 0; r < tokens; ++r) {
        for (int s = 0; s < stages; ++s, ++done) {
            u64 lo, hi;
            chain_share(len[s], lo, hi);
            const uint4* p = data + start[s];
            uint4 cur[BATCH];
            if (early[s] == 2) chain_prefetch_l2(p, lo, hi);
            if (early[s]) chain_load<BATCH>(cur, p, lo + threadIdx.x, hi);
            if (threadIdx.x == 0) {
                unsigned arrived;
                do {
                    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(arrived) : "l"(count) : "memory");
                } while (arrived < done * gridDim.x);
            }
            x ^= chain_handoff(slots);
            if (!early[s]) chain_load<BATCH>(cur, p, lo + threadIdx.x, hi);
            x = chain_stream<BATCH>(cur, p, lo + threadIdx.x, hi, x, n);
            // The stage's output, then this block's arrival.
            __syncthreads();
            if (threadIdx.x == 0) {
                __stcg(slots + blockIdx.x, x);
                asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(count) : "memory");
            }
        }
    }
    chain_report(x, n, chunks, sink);
}

template <int BATCH>
__device__ void chain_launch(const uint4* __restrict__ data, u64 len, int early, unsigned* slots, u64* chunks,
                             unsigned* sink) {
    u64 lo, hi;
    chain_share(len, lo, hi);
    uint4 cur[BATCH];
    if (early == 2) chain_prefetch_l2(data, lo, hi);
    if (early) chain_load<BATCH>(cur, data, lo + threadIdx.x, hi);
    pdl_begin();
    unsigned x = chain_handoff(slots), n = 0;
    if (!early) chain_load<BATCH>(cur, data, lo + threadIdx.x, hi);
    x = chain_stream<BATCH>(cur, data, lo + threadIdx.x, hi, x, n);
    chain_report(x, n, chunks, sink);
    if (threadIdx.x == 0) __stcg(slots + blockIdx.x, x);
}

#define CHAIN_KERNELS(BATCH)                                                                                          \
    extern "C" __global__ void __launch_bounds__(CHAIN_THREADS, 1) chain_stages_b##BATCH(                            \
        const uint4* __restrict__ data, const u64* __restrict__ start, const u64* __restrict__ len,                   \
        const int* __restrict__ early, int stages, int tokens, unsigned* count, unsigned* slots, u64* chunks,         \
        unsigned* sink) {                                                                                             \
        chain_stages<BATCH>(data, start, len, early, stages, tokens, count, slots, chunks, sink);                    \
    }                                                                                                                 \
    extern "C" __global__ void __launch_bounds__(CHAIN_THREADS) chain_launch_b##BATCH(                               \
        const uint4* __restrict__ data, u64 len, int early, unsigned* slots, u64* chunks, unsigned* sink) {           \
        chain_launch<BATCH>(data, len, early, slots, chunks, sink);                                                  \
    }
CHAIN_KERNELS(4)
CHAIN_KERNELS(8)
