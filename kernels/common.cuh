// Shared device helpers, prepended to every kernel file before NVRTC compiles it.
#include <cuda_bf16.h>

typedef unsigned long long u64;
typedef __nv_bfloat16 bf16;

#define FULL_MASK 0xffffffffu
// NVRTC has no <math.h>.
#define INFINITY __int_as_float(0x7f800000)

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
    return v;
}

// Sum over the whole block; `scratch` holds one float per warp. Every thread gets the result.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < nwarps; ++w) total += scratch[w];
    return total;
}

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
// PyTorch's softplus (beta 1, threshold 20).
__device__ __forceinline__ float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

__device__ __forceinline__ float bf16_lo(unsigned int v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float bf16_hi(unsigned int v) { return __uint_as_float(v & 0xffff0000u); }

// Eight bf16 packed in 16 bytes, widened to fp32.
__device__ __forceinline__ void unpack8(uint4 v, float* f) {
    f[0] = bf16_lo(v.x); f[1] = bf16_hi(v.x);
    f[2] = bf16_lo(v.y); f[3] = bf16_hi(v.y);
    f[4] = bf16_lo(v.z); f[5] = bf16_hi(v.z);
    f[6] = bf16_lo(v.w); f[7] = bf16_hi(v.w);
}

// Thread block clusters (sm_90): the blocks of a cluster read each other's shared memory.
// Every thread of every block of the cluster must reach each cluster_sync.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// cluster_sync in two halves: a thread arrives, may work on, and waits for the others later.
__device__ __forceinline__ void cluster_arrive() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// This block's rank in its cluster (x fastest), and its x coordinate and the cluster's width in x.
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ unsigned cluster_x() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(r));
    return r;
}
__device__ __forceinline__ unsigned cluster_width() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(r));
    return r;
}
// Writes v to `*p` in the shared memory of block `rank` of this cluster.
__device__ __forceinline__ void cluster_store(float* p, unsigned rank, float v) {
    const unsigned local = (unsigned)__cvta_generic_to_shared(p);
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(remote), "f"(v) : "memory");
}
// `*p` in the shared memory of block `rank` of this cluster.
__device__ __forceinline__ float cluster_load(const float* p, unsigned rank) {
    const unsigned local = (unsigned)__cvta_generic_to_shared(p);
    unsigned remote;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
    return v;
}

// The decode timeline (kernels compiled with ENGINE_TIMELINE: `Gpu::with_timeline`). The first
// block of every launch notes the time at which its wait returned, with its launch's shape.
// A launch's wait returns once the launch before it has finished, so the time from one note to
// the next is what a launch added to the chain, graphs and dependent launch included.
#ifdef ENGINE_TIMELINE
struct TimelineMark {
    u64 ns;
    unsigned blocks, threads;
};
// Where the notes go; the host sets it in every module (a null `marks` notes nothing).
struct TimelineSink {
    TimelineMark* marks;
    unsigned* count;
    u64 capacity;
};
__device__ TimelineSink timeline_sink;

__device__ __forceinline__ void timeline_mark() {
    if ((threadIdx.x | threadIdx.y | threadIdx.z | blockIdx.x | blockIdx.y | blockIdx.z) != 0) return;
    if (timeline_sink.marks == nullptr) return;
    u64 ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    const unsigned i = atomicAdd(timeline_sink.count, 1u);
    if (i < timeline_sink.capacity)
        timeline_sink.marks[i] = {ns, gridDim.x * gridDim.y * gridDim.z, blockDim.x * blockDim.y * blockDim.z};
}
#else
__device__ __forceinline__ void timeline_mark() {}
#endif

// Programmatic dependent launch (sm_90). The engine launches every kernel so that it may start
// while the previous kernel of the stream is still running. `pdl_begin` waits until that kernel
// has finished and its writes are visible, then lets the next kernel start: every kernel calls
// it before touching memory that the kernel before it may write or read; what may come before
// it is listed with the EARLY_* bits below (an L2 prefetch cannot return stale data: the L2 is
// where the device's memory is coherent). Launched without the attribute, both instructions do
// nothing.
__device__ __forceinline__ void pdl_begin() {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    timeline_mark();
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

// The wait alone, for the kernels that write weights: their dependents start only when they
// have finished, because a kernel may load its weights before its own wait (EARLY_REGS).
__device__ __forceinline__ void pdl_wait_only() {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    timeline_mark();
}

// Bits of the `early` argument: what a kernel reads before it waits for the previous kernel.
// Weights are never written while a decode runs, so neither can read stale data. With
// EARLY_REGS a kernel may also read what was written two launches back or earlier, since
// every kernel lets its dependents start only after its own wait has returned: the round's
// position (written before the round), moe_down's routing (the router, two back), the GDN
// step's state and conv window (this layer's step, a round ago), the attention's output gate
// (the q projection: two back for attn_decode_cluster, three for attn_combine) and a split's
// first tile of keys older than the round's (earlier rounds, or a prefill's earlier
// positions, three launches back at least).
// Activations, and the keys of the round's own positions (appended by attn_prep, the launch
// before), are only read after the wait. (A first tile copied before the wait whatever keys it held, in a form
// of the attention that appended them in the same launch, made the prefill nondeterministic
// on the H200: docs/journal.md, tenth and sixteenth passes.)
#define EARLY_L2 1    // prefetch them into the L2 (ENGINE_WEIGHT_PREFETCH)
#define EARLY_REGS 2  // load the first batch into registers (ENGINE_WEIGHT_PRELOAD)

// Prefetches `bytes` from `p` into the L2 in 128-byte lines, split over `nlanes` threads: a
// kernel issues this for its weights before `pdl_begin`, so that they stream from memory while
// the previous kernel finishes (EARLY_L2).
__device__ __forceinline__ void prefetch_l2(const void* p, size_t bytes, int lane, int nlanes) {
    const char* c = static_cast<const char*>(p);
    for (size_t off = (size_t)lane * 128; off < bytes; off += (size_t)nlanes * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(c + off));
}

// Weights are read once per token: stream them past L1 and mark them evict-first in L2 so
// that the recurrent state and the KV cache keep the L2.
__device__ __forceinline__ uint4 load_weights16(const uint4* p) { return __ldcs(p); }

// Activations: fp32 or bf16, eight consecutive values starting at element 8*chunk.
__device__ __forceinline__ void load_x8(const float* x, int chunk, float* f) {
    const float4 a = __ldg(reinterpret_cast<const float4*>(x) + 2 * chunk);
    const float4 b = __ldg(reinterpret_cast<const float4*>(x) + 2 * chunk + 1);
    f[0] = a.x; f[1] = a.y; f[2] = a.z; f[3] = a.w; f[4] = b.x; f[5] = b.y; f[6] = b.z; f[7] = b.w;
}
__device__ __forceinline__ void load_x8(const bf16* x, int chunk, float* f) {
    unpack8(__ldg(reinterpret_cast<const uint4*>(x) + chunk), f);
}

// An input RMSNorm folded into the projections that read it: W·(x/rms·(1+w)) equals
// (W·(x·(1+w)))/rms, so the dot products take x·(1+w) and each lane also sums x² over its
// chunks; the caller reduces `ss` and scales by 1/rms = rsqrt(Σx²/n + eps). This spares the
// decode chain a kernel per norm (ENGINE_FOLD_NORM). Whether a kernel folds is a template
// argument (FOLD), so that the kernels that do not fold carry none of it.
template <int T>
struct FoldedNorm {
    const bf16* w;
    float ss[T];
};

// A value a kernel needs once its wait has passed, loaded right after the wait so that it
// arrives with the activations instead of a trip to memory later (the residual that an
// accumulating projection adds onto).
struct AfterWait {
    const float* src = nullptr;
    float value = 0.0f;
};

// Where R weight rows are: row r at base + r * stride.
struct StridedRows {
    const bf16* base;
    ptrdiff_t stride;
    __device__ __forceinline__ const bf16* operator()(int r) const { return base + r * stride; }
};

// R weight rows anywhere (a warp's gate and up rows, which no one stride spans).
template <int R>
struct RowList {
    const bf16* row[R];
    __device__ __forceinline__ const bf16* operator()(int r) const { return row[r]; }
};

// The 16-byte chunks c0 + nlanes*u (u < UNROLL) of R weight rows (`rows(r)`), skipping chunks
// >= nchunks and rows >= nrows.
template <int UNROLL, int R, typename Rows>
__device__ __forceinline__ void load_weight_batch(uint4 (&wv)[UNROLL][R], const Rows& rows, int nrows, int nchunks,
                                                  int c0, int nlanes) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int c = c0 + nlanes * u;
            if (c < nchunks && r < nrows) wv[u][r] = load_weights16(reinterpret_cast<const uint4*>(rows(r)) + c);
        }
}

// The chunks c0 + nlanes*u (u < UNROLL) of a folded norm's weights (chunks >= nchunks
// skipped). Every block reads the same few KB: through L1, not streamed like the weights.
template <int UNROLL>
__device__ __forceinline__ void load_norm_batch(uint4 (&nv)[UNROLL], const bf16* __restrict__ w, int nchunks, int c0,
                                                int nlanes) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        if (c0 + nlanes * u < nchunks) nv[u] = __ldg(reinterpret_cast<const uint4*>(w) + c0 + nlanes * u);
}

// Partial dot products of R bf16 weight rows (`nchunks` chunks of 8, row r at `rows(r)`, rows
// >= `nrows` skipped) with T activation rows of length 8*nchunks, for one of `nlanes` threads
// splitting the chunks (a warp, or a whole block); the caller reduces over them. Each
// activation chunk is loaded once for the R rows (the L1 traffic of small-T verify, and of
// several rows a warp), and UNROLL x R 16-byte weight loads are issued before the first use
// so that enough bytes are in flight. Each acc[r][t] sums its chunks in ascending order
// whatever T, R and UNROLL are, so a position's result does not depend on how many positions
// or rows share the launch. With FOLD, x is taken as x·(1+norm.w) and norm.ss[t] sums x[t]².
// With `wait`, the first batch of weights is loaded before pdl_begin (EARLY_REGS): it arrives
// while the previous kernel ends. `after` (its src set) is loaded once the wait has passed,
// before the activations.
template <int UNROLL, int R, int T, bool FOLD = false, typename Rows, typename XT>
__device__ __forceinline__ void rows_dot_lane_u(const Rows& rows, int nrows, const XT* __restrict__ x, int nchunks,
                                                int lane, int nlanes, float (&acc)[R][T],
                                                FoldedNorm<T>* norm = nullptr, bool wait = false,
                                                AfterWait* after = nullptr) {
    const int step = nlanes * UNROLL;
    uint4 wv[UNROLL][R];
    // For one position the folded norm's weights travel with the batch: weights too, they
    // are loaded before the wait, so that x is all the batch reads after it (several
    // positions' kernels have no registers to spare for them).
    constexpr bool NORM_BATCH = FOLD && T == 1;
    uint4 nv[NORM_BATCH ? UNROLL : 1];
    load_weight_batch<UNROLL, R>(wv, rows, nrows, nchunks, lane, nlanes);
    if constexpr (NORM_BATCH) load_norm_batch<UNROLL>(nv, norm->w, nchunks, lane, nlanes);
    if (wait) pdl_begin();
    if (after != nullptr && after->src != nullptr) after->value = *after->src;
    for (int c0 = lane; c0 < nchunks; c0 += step) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int c = c0 + nlanes * u;
            if (c >= nchunks) break;
            float nf[8];
            if constexpr (NORM_BATCH) unpack8(nv[u], nf);
            else if constexpr (FOLD) load_x8(norm->w, c, nf);
#pragma unroll
            for (int t = 0; t < T; ++t) {
                float xf[8];
                load_x8(x + (size_t)t * nchunks * 8, c, xf);
                if constexpr (FOLD) {
#pragma unroll
                    for (int i = 0; i < 8; ++i) {
                        norm->ss[t] = fmaf(xf[i], xf[i], norm->ss[t]);
                        xf[i] *= 1.0f + nf[i];
                    }
                }
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    float wf[8];
                    unpack8(wv[u][r], wf);
#pragma unroll
                    for (int i = 0; i < 8; ++i) acc[r][t] = fmaf(wf[i], xf[i], acc[r][t]);
                }
            }
        }
        if (c0 + step < nchunks) {
            load_weight_batch<UNROLL, R>(wv, rows, nrows, nchunks, c0 + step, nlanes);
            if constexpr (NORM_BATCH) load_norm_batch<UNROLL>(nv, norm->w, nchunks, c0 + step, nlanes);
        }
    }
}

// rows_dot_lane_u with 8 loads in flight per lane (R >= 4: 2R).
template <int R, int T, bool FOLD = false, typename XT>
__device__ __forceinline__ void rows_dot_lane(const bf16* __restrict__ wrow, ptrdiff_t stride, int nrows,
                                              const XT* __restrict__ x, int nchunks, int lane, int nlanes,
                                              float (&acc)[R][T], FoldedNorm<T>* norm = nullptr, bool wait = false) {
    rows_dot_lane_u<(R >= 4 ? 2 : 8 / R), R, T, FOLD>(StridedRows{wrow, stride}, nrows, x, nchunks, lane, nlanes, acc,
                                                      norm, wait);
}

// Sums acc[R][T] over the block (warp shuffles, then shared memory); afterwards thread
// r*T + t (for r < R, t < T) holds the total of acc[r][t] in `out`. With FOLD, the norm's
// Σx² are summed in the same pass and each total is scaled by its position's
// 1/rms = rsqrt(Σx²/n + eps).
template <int R, int T, bool FOLD = false>
__device__ __forceinline__ void block_sum_rows(float (&acc)[R][T], float* out, const FoldedNorm<T>* norm = nullptr,
                                               int n = 0, float eps = 0.0f) {
    __shared__ float red[32][(R + (FOLD ? 1 : 0)) * T];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int t = 0; t < T; ++t) {
            const float s = warp_sum(acc[r][t]);
            if (lane == 0) red[warp][r * T + t] = s;
        }
    if constexpr (FOLD) {
#pragma unroll
        for (int t = 0; t < T; ++t) {
            const float s = warp_sum(norm->ss[t]);
            if (lane == 0) red[warp][R * T + t] = s;
        }
    }
    __syncthreads();
    if (threadIdx.x < R * T) {
        float s = 0.0f;
        for (int w = 0; w < nwarps; ++w) s += red[w][threadIdx.x];
        if constexpr (FOLD) {
            float ss = 0.0f;
            for (int w = 0; w < nwarps; ++w) ss += red[w][R * T + threadIdx.x % T];
            s *= rsqrtf(ss / (float)n + eps);
        }
        *out = s;
    }
}

// ---- The decode GEMV's block (kernels/gemv.cu; the MoE's output projection, kernels/moe.cu) ----

#define GEMV_ROWS 4
#define GEMV_BATCH 2

// What the block does before the wait for the previous kernel (`early`, EARLY_* bits): its
// weights (up to GEMV_ROWS whole rows from row0) into the L2; with EARLY_REGS the wait comes
// later, in gemv_body, after the first weights are loaded.
__device__ __forceinline__ void gemv_prologue(const bf16* __restrict__ W, int rows, int cols, int row0, int early) {
    const int n = max(0, min(GEMV_ROWS, rows - row0));
    if (early & EARLY_L2) prefetch_l2(W + (size_t)row0 * cols, (size_t)n * cols * sizeof(bf16), threadIdx.x, blockDim.x);
    if (!(early & EARLY_REGS)) pdl_begin();
}

template <int T, bool FOLD = false, typename XT>
__device__ __forceinline__ void gemv_body(const bf16* __restrict__ W, const XT* __restrict__ x,
                                          float* __restrict__ y, int rows, int cols, int accumulate,
                                          int row0, int early, const bf16* __restrict__ nw = nullptr,
                                          float eps = 0.0f, const float* __restrict__ resid = nullptr) {
    float acc[GEMV_ROWS][T];
#pragma unroll
    for (int r = 0; r < GEMV_ROWS; ++r)
#pragma unroll
        for (int t = 0; t < T; ++t) acc[r][t] = 0.0f;
    FoldedNorm<T> norm;
    norm.w = nw;
#pragma unroll
    for (int t = 0; t < T; ++t) norm.ss[t] = 0.0f;
    // Thread r*T + t writes row r of position t; the residual it adds onto is loaded right
    // after the wait.
    const int r = threadIdx.x / T, t = threadIdx.x % T;
    const bool writes = threadIdx.x < GEMV_ROWS * T && row0 + r < rows;
    AfterWait residual;
    if (accumulate && writes) residual.src = (resid != nullptr ? resid : y) + (size_t)t * rows + row0 + r;
    rows_dot_lane_u<GEMV_BATCH, GEMV_ROWS, T, FOLD>(StridedRows{W + (size_t)row0 * cols, cols}, rows - row0, x,
                                                    cols >> 3, threadIdx.x, blockDim.x, acc, &norm,
                                                    early & EARLY_REGS, &residual);
    float s;
    block_sum_rows<GEMV_ROWS, T, FOLD>(acc, &s, &norm, cols, eps);
    if (writes) y[(size_t)t * rows + row0 + r] = accumulate ? residual.value + s : s;
}
