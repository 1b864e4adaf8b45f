// Sparse MoE for T positions in three launches, with no host round trip (a decode round stays
// capturable as a CUDA graph):
//   moe_router:  router GEMV (a warp per expert row) and the shared expert's gate logit (one
//                more row) in one cluster, whose first block then does the routing: softmax
//                over the logits, top-k, renormalise; the shared expert's sigmoid gate goes to
//                slot k. `moe_router_norm` reads x RMS-normalised, x/rms·(1+nw) (the layer's
//                post-attention norm, folded in: see FoldedNorm), and its blocks also write
//                the normalised rows for gate||up, sparing the norm a launch.
//   moe_gate_up: act[t][slot] = silu(Wg[e] x[t]) * (Wu[e] x[t]) for the k routed experts and
//                the shared expert (slot k).
//   moe_down:    y[t] (+)= sum_j w[t][j] Wd[e_j] act[t][j] + w[t][k] Wsd act[t][k]
//                (moe_down_rows2 over several positions).
// Expert weights are stacked: Wg, Wu [E][I][H], Wd [E][H][I]; the shared expert's are
// Wsg, Wsu [Is][H], Wsd [H][Is]. Every kernel gives each warp whole rows and reduces with
// shuffles, with 8 (router), 16 (gate||up) or 18 (down) 16-byte loads in flight per lane; a
// position's sums run in the same order for every T (speculative verify equals plain decode).

#define MAX_TOPK 16

#define MAX_EXPERTS_PER_LANE 16
// Most warps per block of moe_gate_up and moe_down (the engine picks the block size per launch).
#define MOE_WARPS 4
#define MOE_UNROLL 8

// A logit as an unsigned int that orders as the float does.
__device__ __forceinline__ unsigned ordered_bits(float v) {
    const unsigned b = __float_as_uint(v);
    return b ^ ((b >> 31) ? 0xffffffffu : 0x80000000u);
}
__device__ __forceinline__ float from_ordered_bits(unsigned o) {
    return __uint_as_float(o ^ ((o >> 31) ? 0x80000000u : 0xffffffffu));
}

// A lane's N logits (expert lane + 32 i) sorted largest first, e their experts: odd-even
// transposition (N rounds sort N values), which swaps neighbours only when strictly out of
// order, so that equal logits stay in expert order.
template <int N>
__device__ __forceinline__ void lane_sort(float (&v)[N], int (&e)[N], int lane) {
#pragma unroll
    for (int i = 0; i < N; ++i) e[i] = lane + 32 * i;
#pragma unroll
    for (int r = 0; r < N; ++r)
#pragma unroll
        for (int i = r & 1; i + 1 < N; i += 2)
            if (v[i + 1] > v[i]) {
                const float tv = v[i];
                v[i] = v[i + 1];
                v[i + 1] = tv;
                const int te = e[i];
                e[i] = e[i + 1];
                e[i + 1] = te;
            }
}

// Top-k routing of one position by one warp from its lanes' logits v (expert lane + 32 i,
// -INFINITY past the experts): each lane sorts its logits once; each round takes the warp's
// largest head with two warp reductions (the value, then the lowest expert holding it) and
// the lane that held it moves on to its next. Writes the chosen experts to idx[0..k) (ties go
// to the lower expert index) and their softmax weights renormalised over the k to wts[0..k).
// A round's critical path is the two reductions and a shift, not a rescan of the lane's N.
template <int N>
__device__ __forceinline__ void route_values(float (&v)[N], int k, int* __restrict__ idx, float* __restrict__ wts) {
    const int lane = threadIdx.x & 31;
    float first = 0.0f, sum = 0.0f, mine = 0.0f;
    int e[N], my_expert = 0;
    lane_sort(v, e, lane);
    for (int j = 0; j < k; ++j) {
        const unsigned head = ordered_bits(v[0]);
        const unsigned top = __reduce_max_sync(FULL_MASK, head);
        const int won = (int)__reduce_min_sync(FULL_MASK, head == top ? (unsigned)e[0] : 0xffffffffu);
        if (e[0] == won) {
#pragma unroll
            for (int i = 0; i + 1 < N; ++i) {
                v[i] = v[i + 1];
                e[i] = e[i + 1];
            }
            v[N - 1] = -INFINITY;
            e[N - 1] = 0x7fffffff;
        }
        const float value = from_ordered_bits(top);
        if (j == 0) first = value;
        // softmax then renormalising over the top k equals a softmax over the chosen logits.
        const float p = expf(value - first);
        sum += p;
        if (lane == j) { mine = p; my_expert = won; }
    }
    if (lane < k) {
        idx[lane] = my_expert;
        wts[lane] = mine / sum;
    }
}

template <int N>
__device__ __forceinline__ void route_warp_n(const float* __restrict__ l, int E, int k, int* __restrict__ idx,
                                             float* __restrict__ wts) {
    const int lane = threadIdx.x & 31;
    float v[N];
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = lane + 32 * i < E ? l[lane + 32 * i] : -INFINITY;
    route_values<N>(v, k, idx, wts);
}

// Top-k routing of one position by one warp from its E logits `l` in global memory (E <= 512).
__device__ __forceinline__ void route_warp(const float* __restrict__ l, int E, int k, int* __restrict__ idx,
                                           float* __restrict__ wts) {
    if (E <= 256) route_warp_n<8>(l, E, k, idx, wts);
    else route_warp_n<MAX_EXPERTS_PER_LANE>(l, E, k, idx, wts);
}

// Routing from router logits [T][E] computed elsewhere (the prefill's GEMM): a warp per
// position, which also takes the shared expert's gate, x[t] . shared_gate_w, into slot k.
extern "C" __global__ void moe_route(const float* __restrict__ logits, int E, int k,
                                     const float* __restrict__ x, const bf16* __restrict__ shared_gate_w,
                                     int H, int T, int* __restrict__ idx, float* __restrict__ wts) {
    pdl_begin();
    const int t = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (t >= T) return;
    route_warp(logits + (size_t)t * E, E, k, idx + (size_t)t * k, wts + (size_t)t * (k + 1));
    float dot = 0.0f;
    for (int i = lane; i < H; i += 32) dot = fmaf(x[(size_t)t * H + i], __bfloat162float(shared_gate_w[i]), dot);
    dot = warp_sum(dot);
    if (lane == 0) wts[(size_t)t * (k + 1) + k] = sigmoid(dot);
}

// Router GEMV and routing in one launch of one cluster: ROUTER_BLOCKS blocks of ROUTER_WARPS
// warps, a warp per row of [Wr; shared_gate_w] (E + 1 rows, the shared expert's gate logit
// last; row e goes to block (e mod ROUTER_ROWS) / ROUTER_WARPS, so up to ROUTER_ROWS - 1
// experts take one trip to memory). Each block keeps its logits in shared memory; after a
// cluster barrier warp t of the first block reads position t's through distributed shared
// memory and routes it, so no logit goes through global memory and no block waits on a
// counter. With FOLD the rows are read normalised (each warp sums x² in the same order, so
// all hold the same 1/rms) and every block writes its share of the normalised rows to xn for
// gate||up, with the first block's 1/rms, sparing the norm a launch.
#define ROUTER_BLOCKS 16
#define ROUTER_WARPS 17
#define ROUTER_ROWS (ROUTER_BLOCKS * ROUTER_WARPS)
#define ROUTER_TRIPS 2
// Routing of position t by a warp of the cluster's first block, from the logits that the
// cluster's blocks hold in `part`: the warp reads them into registers, arrives at the cluster
// barrier (the other blocks may then exit), and routes.
template <int N, int T>
__device__ __forceinline__ void route_from_cluster(float (&part)[ROUTER_TRIPS][ROUTER_WARPS][T], int t, int E, int k,
                                                   int* __restrict__ idx, float* __restrict__ wts) {
    const int lane = threadIdx.x & 31;
    const auto logit = [&](int e) {
        const int r = e % ROUTER_ROWS;
        return cluster_load(&part[e / ROUTER_ROWS][r % ROUTER_WARPS][t], r / ROUTER_WARPS);
    };
    float v[N];
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = lane + 32 * i < E ? logit(lane + 32 * i) : -INFINITY;
    const float shared_gate = logit(E);
    cluster_arrive();
    route_values<N>(v, k, idx + (size_t)t * k, wts + (size_t)t * (k + 1));
    if (lane == 0) wts[(size_t)t * (k + 1) + k] = sigmoid(shared_gate);
}

template <int T, bool FOLD>
__device__ __forceinline__ void moe_router_body(const bf16* __restrict__ Wr, const float* __restrict__ x, int E,
                                                int k, int H, const bf16* __restrict__ shared_gate_w,
                                                int* __restrict__ idx, float* __restrict__ wts,
                                                const bf16* __restrict__ nw, float eps, float* __restrict__ xn,
                                                int early) {
    __shared__ float part[ROUTER_TRIPS][ROUTER_WARPS][T];
    __shared__ float inv_rms[T];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned rank = cluster_rank();
    // This thread's first element of xn, and its norm weight (a weight: read before the wait).
    // The cluster's last threads take the first elements, so that the first block's routing
    // warps write none and route as soon as the logits are in.
    const int nthreads = ROUTER_BLOCKS * blockDim.x, i0 = nthreads - 1 - (int)(rank * blockDim.x + threadIdx.x);
    const float w0 = FOLD && i0 < H ? 1.0f + __bfloat162float(nw[i0]) : 0.0f;
    for (int trip = 0; trip < ROUTER_TRIPS; ++trip) {
        const int e = trip * ROUTER_ROWS + rank * ROUTER_WARPS + warp;
        if (e > E) {
            if (trip == 0) pdl_begin();
            break;
        }
        float acc[1][T];
        FoldedNorm<T> norm;
        norm.w = nw;
#pragma unroll
        for (int t = 0; t < T; ++t) acc[0][t] = norm.ss[t] = 0.0f;
        const bf16* row = e < E ? Wr + (size_t)e * H : shared_gate_w;
        rows_dot_lane_u<MOE_UNROLL, 1, T, FOLD>(StridedRows{row, H}, 1, x, H >> 3, lane, 32, acc, &norm,
                                                trip == 0 && (early & EARLY_REGS));
#pragma unroll
        for (int t = 0; t < T; ++t) {
            float s = warp_sum(acc[0][t]);
            if constexpr (FOLD) {
                const float inv = rsqrtf(warp_sum(norm.ss[t]) / (float)H + eps);
                s *= inv;
                if (e == 0 && lane == 0) inv_rms[t] = inv;
            }
            if (lane == 0) part[trip][warp][t] = s;
        }
    }
    // The logits (and the first block's 1/rms) are visible to the whole cluster past here.
    cluster_sync();
    if constexpr (FOLD) {
        if (i0 < H) {
            float inv[T];
#pragma unroll
            for (int t = 0; t < T; ++t) inv[t] = cluster_load(&inv_rms[t], 0);
            for (int i = i0; i < H; i += nthreads) {
                const float w = i == i0 ? w0 : 1.0f + __bfloat162float(nw[i]);
#pragma unroll
                for (int t = 0; t < T; ++t) xn[(size_t)t * H + i] = __ldg(x + (size_t)t * H + i) * inv[t] * w;
            }
        }
    }
    // Warp t of the first block routes position t (T <= ROUTER_WARPS); every other warp is done
    // with the logits.
    if (rank == 0 && warp < T) {
        if (E <= 256) route_from_cluster<8, T>(part, warp, E, k, idx, wts);
        else route_from_cluster<MAX_EXPERTS_PER_LANE, T>(part, warp, E, k, idx, wts);
    } else {
        cluster_arrive();
    }
    // No block may exit while the first still reads its logits.
    cluster_wait();
}

// What each warp does before the wait (`early`, EARLY_* bits): its first router row into the
// L2; with EARLY_REGS the wait comes later, after the row's first loads.
__device__ __forceinline__ void moe_router_prologue(const bf16* __restrict__ Wr, int E, int H, int early) {
    const int e = cluster_rank() * ROUTER_WARPS + (threadIdx.x >> 5);
    if ((early & EARLY_L2) && e < E) prefetch_l2(Wr + (size_t)e * H, (size_t)H * sizeof(bf16), threadIdx.x & 31, 32);
    if (!(early & EARLY_REGS)) pdl_begin();
}

// Launched as one cluster of ROUTER_BLOCKS blocks of ROUTER_WARPS warps.
#define MOE_ROUTER(NAME, T, FOLD)                                                                   \
    extern "C" __global__ void __launch_bounds__(ROUTER_WARPS * 32) NAME##_t##T(                    \
        const bf16* __restrict__ Wr, const float* __restrict__ x, int E, int k, int H,              \
        const bf16* __restrict__ shared_gate_w, int* __restrict__ idx, float* __restrict__ wts,     \
        const bf16* __restrict__ nw, float eps, float* __restrict__ xn, int early) {                \
        moe_router_prologue(Wr, E, H, early);                                                       \
        moe_router_body<T, FOLD>(Wr, x, E, k, H, shared_gate_w, idx, wts, nw, eps, xn, early);      \
    }
#define MOE_ROUTER_BOTH(T) MOE_ROUTER(moe_router, T, false) MOE_ROUTER(moe_router_norm, T, true)
MOE_ROUTER_BOTH(1) MOE_ROUTER_BOTH(2) MOE_ROUTER_BOTH(3) MOE_ROUTER_BOTH(4)
MOE_ROUTER_BOTH(5) MOE_ROUTER_BOTH(6) MOE_ROUTER_BOTH(7) MOE_ROUTER_BOTH(8)

// Activation rows per warp of moe_gate_up. The launch alone is a little slower than with a
// row a warp, but its 2,304 warps (35B-A3B) fit the device at once and leave room for
// moe_down's blocks, which load their weights before their wait while gate||up still runs:
// the whole MoE is faster (docs/journal.md, seventh pass).
#define GATE_UP_ROWS 2

// The gate and up rows of activation row r of position t: routed rows 0..k*I-1, then the Is
// shared rows.
__device__ __forceinline__ void gate_up_rows(const bf16* __restrict__ Wg, const bf16* __restrict__ Wu,
                                             const bf16* __restrict__ Wsg, const bf16* __restrict__ Wsu,
                                             const int* __restrict__ idx, int t, int r, int k, int I, int H,
                                             const bf16*& g, const bf16*& u) {
    if (r < k * I) {
        const size_t off = ((size_t)idx[(size_t)t * k + r / I] * I + r % I) * H;
        g = Wg + off;
        u = Wu + off;
    } else {
        const size_t off = (size_t)(r - k * I) * H;
        g = Wsg + off;
        u = Wsu + off;
    }
}

// GATE_UP_ROWS activation rows r of position t a warp (grid ceil(rows / (warps a block *
// GATE_UP_ROWS)) x T): act [T][k*I + Is]. The warp's gate and up rows are read in one pass,
// the lanes splitting the hidden dim, so that each chunk of x is loaded once for all of them.
extern "C" __global__ void __launch_bounds__(MOE_WARPS * 32) moe_gate_up(
    const bf16* __restrict__ Wg, const bf16* __restrict__ Wu, const bf16* __restrict__ Wsg,
    const bf16* __restrict__ Wsu, const int* __restrict__ idx, const float* __restrict__ x,
    float* __restrict__ act, int k, int I, int Is, int H, int early) {
    const int t = blockIdx.y, r0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * GATE_UP_ROWS;
    const int lane = threadIdx.x & 31, rows = k * I + Is;
    // The activation rows this warp computes (none past the last).
    const int n = min(GATE_UP_ROWS, rows - r0);
    // The shared expert's rows are known before the routing is: they are fetched while the
    // router finishes (`early`, EARLY_* bits). A warp preloads only when all its rows are
    // shared ones.
    const bool shared = r0 >= k * I && r0 < rows;
    if ((early & EARLY_L2) && t == 0 && shared) {
        const size_t off = (size_t)(r0 - k * I) * H, bytes = (size_t)n * H * sizeof(bf16);
        prefetch_l2(Wsg + off, bytes, lane, 32);
        prefetch_l2(Wsu + off, bytes, lane, 32);
    }
    const bool preload = shared && (early & EARLY_REGS);
    if (!preload) pdl_begin();
    if (n <= 0) return;
    // Rows 2j and 2j + 1 of the pass: activation row r0 + j's gate and up.
    RowList<2 * GATE_UP_ROWS> w;
#pragma unroll
    for (int j = 0; j < GATE_UP_ROWS; ++j)
        if (j < n) gate_up_rows(Wg, Wu, Wsg, Wsu, idx, t, r0 + j, k, I, H, w.row[2 * j], w.row[2 * j + 1]);
    float acc[2 * GATE_UP_ROWS][1] = {};
    rows_dot_lane_u<MOE_UNROLL / GATE_UP_ROWS, 2 * GATE_UP_ROWS, 1>(w, 2 * n, x + (size_t)t * H, H >> 3, lane, 32, acc,
                                                                     nullptr, preload);
#pragma unroll
    for (int j = 0; j < GATE_UP_ROWS; ++j) {
        if (j >= n) break;
        const float gate = warp_sum(acc[2 * j][0]), up = warp_sum(acc[2 * j + 1][0]);
        if (lane == 0) act[(size_t)t * rows + r0 + j] = silu(gate) * up;
    }
}

// The chunks c0 + 32q (q < UNROLL) of moe_down's virtual rows h0 .. h0+R-1 (rows >= H skipped).
template <int UNROLL, int R>
__device__ __forceinline__ void load_down_batch(uint4 (&wv)[UNROLL][R], const bf16* const* base, const int* stride,
                                                int h0, int H, int c0, int nchunks, int per_slot, int k) {
#pragma unroll
    for (int q = 0; q < UNROLL; ++q) {
        const int c = c0 + 32 * q;
        if (c < nchunks) {
            const int slot = min(c / per_slot, k);
#pragma unroll
            for (int r = 0; r < R; ++r)
                if (h0 + r < H)
                    wv[q][r] = load_weights16(
                        reinterpret_cast<const uint4*>(base[slot] + (size_t)(h0 + r) * stride[slot] + (size_t)c * 8));
        }
    }
}

// ROWS hidden rows h0.. of position t a warp (grid ceil(H / (warps a block * ROWS)) x T). The k
// routed rows and the shared row are walked as one virtual row over act[t] (k*I + Is values),
// split over the lanes; each chunk's dot product is scaled by its slot's routing weight, and
// each chunk of act is loaded once for the ROWS rows. UNROLL * ROWS loads are in flight per
// lane: with one row, 18 cover the whole virtual row of the 35B-A3B shape, (8 + 1) x 512
// values, in one batch (a row costs one trip to memory). Two rows of 9 loads each take two
// trips but read act half as often, which pays when act holds several positions (speculative
// verify): moe_down runs a single position, moe_down_rows2 several. With `accumulate` the sum
// is added onto `resid`: the stream itself (y), or the copy of it that moe_out_logits wrote. Both sum a row's chunks in
// the same order, so verify equals plain decode. With EARLY_REGS (`early`) the routing and
// the first weights are read before the wait for gate||up: the router wrote the routing two
// launches back, and gate||up lets this kernel start only once its own wait has seen the
// router finish.
template <int UNROLL, int ROWS>
__device__ __forceinline__ void moe_down_body(const bf16* __restrict__ Wd, const bf16* __restrict__ Wsd,
                                              const int* __restrict__ idx, const float* __restrict__ wts,
                                              const float* __restrict__ act, const float* resid, float* y, int k,
                                              int I, int Is, int H, int accumulate, int early) {
    const bool preload = early & EARLY_REGS;
    if (!preload) pdl_begin();
    // Per slot: where its weights start, shifted so that virtual chunk c indexes them, and
    // the distance between its rows.
    __shared__ const bf16* base[MAX_TOPK + 1];
    __shared__ int stride[MAX_TOPK + 1];
    __shared__ float weight[MAX_TOPK + 1];
    const int t = blockIdx.y, lane = threadIdx.x & 31;
    const int rows = k * I + Is;
    if (threadIdx.x <= k) {
        const int j = threadIdx.x;
        weight[j] = __ldcg(wts + (size_t)t * (k + 1) + j);
        base[j] = j < k ? Wd + (size_t)__ldcg(idx + (size_t)t * k + j) * H * I - (size_t)j * I : Wsd - (size_t)k * I;
        stride[j] = j < k ? I : Is;
    }
    __syncthreads();
    const int h0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * ROWS;
    const int nchunks = rows >> 3, per_slot = I >> 3;
    uint4 wv[UNROLL][ROWS];
    if (h0 < H) load_down_batch<UNROLL, ROWS>(wv, base, stride, h0, H, lane, nchunks, per_slot, k);
    if (preload) pdl_begin();
    if (h0 >= H) return;
    // The residual this warp adds onto, loaded now so that it arrives with the activations.
    float prev[ROWS] = {};
    if (accumulate && lane == 0) {
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
            if (h0 + r < H) prev[r] = resid[(size_t)t * H + h0 + r];
    }
    const float* a = act + (size_t)t * rows;
    float total[ROWS] = {};
    for (int c0 = lane; c0 < nchunks; c0 += 32 * UNROLL) {
#pragma unroll
        for (int q = 0; q < UNROLL; ++q) {
            const int c = c0 + 32 * q;
            if (c >= nchunks) break;
            float af[8];
            load_x8(a, c, af);
            const float w = weight[min(c / per_slot, k)];
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                float wf[8];
                unpack8(wv[q][r], wf);
                float d = 0.0f;
#pragma unroll
                for (int i = 0; i < 8; ++i) d = fmaf(wf[i], af[i], d);
                total[r] = fmaf(w, d, total[r]);
            }
        }
        if (c0 + 32 * UNROLL < nchunks)
            load_down_batch<UNROLL, ROWS>(wv, base, stride, h0, H, c0 + 32 * UNROLL, nchunks, per_slot, k);
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const float s = warp_sum(total[r]);
        if (lane == 0 && h0 + r < H) y[(size_t)t * H + h0 + r] = accumulate ? prev[r] + s : s;
    }
}

#define MOE_DOWN(NAME, UNROLL, ROWS)                                                                   \
    extern "C" __global__ void __launch_bounds__(MOE_WARPS * 32) NAME(                                 \
        const bf16* __restrict__ Wd, const bf16* __restrict__ Wsd, const int* __restrict__ idx,        \
        const float* __restrict__ wts, const float* __restrict__ act, const float* resid, float* y,     \
        int k, int I, int Is, int H, int accumulate, int early) {                                      \
        moe_down_body<UNROLL, ROWS>(Wd, Wsd, idx, wts, act, resid, y, k, I, Is, H, accumulate, early); \
    }
MOE_DOWN(moe_down, 18, 1)
MOE_DOWN(moe_down_rows2, 9, 2)

// ---- The router's rows in the output projection (decode) ----
// The router reads rmsnorm(x + Wo·a): the residual stream x once the mixer's output a has been
// projected onto it. Its logits are linear in the stream, Wr·((x + Wo·a)·(1+nw)) =
// Wr·(x·(1+nw)) + M·a with M = Wr·diag(1+nw)·Wo ([E+1][C], the shared expert's gate as row E),
// then scaled by 1/rms of the new stream. So the output projection's launch computes them,
// unscaled, beside the stream's rows, from x and a (both final when its wait returns), spread
// over the whole device like the projection's rows; what is left of the router is the
// routing: one small launch that normalises the new stream and routes (moe_route_stream),
// instead of the router cluster's 257 row reads after its wait (docs/journal.md, twenty-first
// pass). M is made once from the weights (moe_router_through_out) as two bf16 terms, hi +
// lo, within 2^-17 of the fp64 product. The projection writes the new stream to xo, leaving
// x as it was for the logit rows; moe_down adds the MoE onto xo and writes the stream.

// Rows 0..E of M = [Wr; sg]·diag(1+nw)·Wo in fp64, 8 rows a thread for one column c (so each
// Wo value loaded serves 8 rows), stored as hi = bf16(M) and lo = bf16(M - hi). Grid
// (ceil(C/256), ceil((E+1)/8)), 256 threads; run once, when the weights are made.
#define THROUGH_ROWS 8
extern "C" __global__ void moe_router_through_out(const bf16* __restrict__ Wr, const bf16* __restrict__ sg,
                                                  const bf16* __restrict__ nw, const bf16* __restrict__ Wo, int E,
                                                  int H, int C, bf16* __restrict__ hi, bf16* __restrict__ lo) {
    pdl_wait_only();
    const int c = blockIdx.x * blockDim.x + threadIdx.x, j0 = blockIdx.y * THROUGH_ROWS;
    if (c >= C) return;
    double acc[THROUGH_ROWS] = {};
    for (int i = 0; i < H; ++i) {
        const double w = (double)__bfloat162float(Wo[(size_t)i * C + c]) * (1.0f + __bfloat162float(nw[i]));
#pragma unroll
        for (int r = 0; r < THROUGH_ROWS; ++r) {
            const int j = j0 + r;
            if (j <= E) acc[r] = fma((double)__bfloat162float(j < E ? Wr[(size_t)j * H + i] : sg[i]), w, acc[r]);
        }
    }
#pragma unroll
    for (int r = 0; r < THROUGH_ROWS; ++r) {
        const int j = j0 + r;
        if (j > E) break;
        const bf16 h = __float2bfloat16_rn((float)acc[r]);
        hi[(size_t)j * C + c] = h;
        lo[(size_t)j * C + c] = __float2bfloat16_rn((float)(acc[r] - (double)__bfloat162float(h)));
    }
}

// Raw logit j [T][E+1]: (hi + lo)·a + [Wr; sg]_j·(x·(1+nw)), each thread's chunks summed in
// that order (the same for every T), then over the block. A thread's weights of the row
// (GEMV_BATCH chunks of each of hi, lo and Wr) are loaded in one batch: one trip to memory.
template <int T>
__device__ __forceinline__ void router_logit_row(const bf16* __restrict__ Mhi, const bf16* __restrict__ Mlo,
                                                 const bf16* __restrict__ wr, const bf16* __restrict__ nw,
                                                 const float* __restrict__ a, const float* __restrict__ x, int E,
                                                 int H, int C, int j, float* __restrict__ logits) {
    const uint4* hi = reinterpret_cast<const uint4*>(Mhi + (size_t)j * C);
    const uint4* lo = reinterpret_cast<const uint4*>(Mlo + (size_t)j * C);
    const uint4* w = reinterpret_cast<const uint4*>(wr);
    const int nc = C >> 3, nh = H >> 3, step = blockDim.x * GEMV_BATCH;
    float acc[1][T] = {};
    for (int c0 = threadIdx.x; c0 < max(nc, nh); c0 += step) {
        uint4 hv[GEMV_BATCH], lv[GEMV_BATCH], wv[GEMV_BATCH], nv[GEMV_BATCH];
#pragma unroll
        for (int u = 0; u < GEMV_BATCH; ++u) {
            const int c = c0 + blockDim.x * u;
            if (c < nc) {
                hv[u] = load_weights16(hi + c);
                lv[u] = load_weights16(lo + c);
            }
            if (c < nh) {
                wv[u] = load_weights16(w + c);
                nv[u] = __ldg(reinterpret_cast<const uint4*>(nw) + c);
            }
        }
#pragma unroll
        for (int u = 0; u < GEMV_BATCH; ++u) {
            const int c = c0 + blockDim.x * u;
            float hf[8], lf[8], wf[8], nf[8];
            unpack8(hv[u], hf);
            unpack8(lv[u], lf);
            unpack8(wv[u], wf);
            unpack8(nv[u], nf);
#pragma unroll
            for (int t = 0; t < T; ++t) {
                float af[8], xf[8];
                if (c < nc) {
                    load_x8(a + (size_t)t * C, c, af);
#pragma unroll
                    for (int i = 0; i < 8; ++i) acc[0][t] = fmaf(hf[i], af[i], fmaf(lf[i], af[i], acc[0][t]));
                }
                if (c < nh) {
                    load_x8(x + (size_t)t * H, c, xf);
#pragma unroll
                    for (int i = 0; i < 8; ++i) acc[0][t] = fmaf(wf[i], xf[i] * (1.0f + nf[i]), acc[0][t]);
                }
            }
        }
    }
    float s;
    block_sum_rows<1, T>(acc, &s);
    if (threadIdx.x < T) logits[(size_t)threadIdx.x * (E + 1) + j] = s;
}

// The output projection xo[t] = x[t] + Wo a[t] (GEMV_ROWS rows of H a block), then raw
// router logit j = blockIdx.x (blocks 0..E). Grid max(ceil(H/GEMV_ROWS), E+1) blocks of 256
// threads. A logit row's weights are prefetched into the L2 before the wait, so that its trip
// after the projection's rows is an L2 hit.
#define MOE_OUT_LOGITS(T)                                                                                       \
    extern "C" __global__ void __launch_bounds__(256) moe_out_logits_t##T(                                      \
        const bf16* __restrict__ Wo, const float* __restrict__ a, const float* __restrict__ x,                  \
        float* __restrict__ xo, int H, int C, const bf16* __restrict__ Mhi, const bf16* __restrict__ Mlo,       \
        const bf16* __restrict__ Wr, const bf16* __restrict__ sg, const bf16* __restrict__ nw, int E,           \
        float* __restrict__ logits, int early) {                                                                \
        const int j = blockIdx.x;                                                                               \
        const bf16* wr = j < E ? Wr + (size_t)j * H : sg;                                                       \
        if (j <= E) {                                                                                           \
            prefetch_l2(Mhi + (size_t)j * C, (size_t)C * sizeof(bf16), threadIdx.x, blockDim.x);               \
            prefetch_l2(Mlo + (size_t)j * C, (size_t)C * sizeof(bf16), threadIdx.x, blockDim.x);               \
            prefetch_l2(wr, (size_t)H * sizeof(bf16), threadIdx.x, blockDim.x);                                \
        }                                                                                                       \
        gemv_prologue(Wo, H, C, blockIdx.x * GEMV_ROWS, early);                                                 \
        if (blockIdx.x * GEMV_ROWS < H) gemv_body<T>(Wo, a, xo, H, C, 1, blockIdx.x * GEMV_ROWS, early, nullptr, 0.0f, x); \
        else if (early & EARLY_REGS) pdl_begin();                                                               \
        if (j <= E) router_logit_row<T>(Mhi, Mlo, wr, nw, a, x, E, H, C, j, logits);                            \
    }
MOE_OUT_LOGITS(1) MOE_OUT_LOGITS(2) MOE_OUT_LOGITS(3) MOE_OUT_LOGITS(4)
MOE_OUT_LOGITS(5) MOE_OUT_LOGITS(6) MOE_OUT_LOGITS(7) MOE_OUT_LOGITS(8)

// The routing of T positions from moe_out_logits's new stream xo and raw logits, by one block
// of ROUTE_WARPS warps: 1/rms of each row (a thread's elements, then the warps in order), the
// normalised rows for gate||up, x/rms·(1+nw), as the router cluster writes them, then warp t
// routes position t from its logits scaled by 1/rms (more than 256 experts: route_scaled).
#define ROUTE_WARPS 8
template <int N>
__device__ __forceinline__ void route_scaled(const float* __restrict__ l, float s, int E, int k, int* __restrict__ idx,
                                             float* __restrict__ wts) {
    const int lane = threadIdx.x & 31;
    float v[N];
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] = lane + 32 * i < E ? l[lane + 32 * i] * s : -INFINITY;
    const float shared_gate = l[E] * s;
    route_values<N>(v, k, idx, wts);
    if (lane == 0) wts[k] = sigmoid(shared_gate);
}

// A thread's elements of a row: H <= ROUTE_WARPS * 32 * ROUTE_PER_THREAD.
#define ROUTE_PER_THREAD 16
template <int T>
__device__ __forceinline__ void route_stream_body(const float* __restrict__ xo, const float* __restrict__ logits,
                                                  const bf16* __restrict__ nw, float eps, int E, int k, int H,
                                                  float* __restrict__ xn, int* __restrict__ idx,
                                                  float* __restrict__ wts) {
    __shared__ float part[ROUTE_WARPS][T];
    __shared__ float inv[T];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    // The norm weights before the wait; after it, every load at once: the rows' elements and
    // the routing warp's logits.
    float w[ROUTE_PER_THREAD];
#pragma unroll
    for (int u = 0; u < ROUTE_PER_THREAD; ++u) {
        const int i = threadIdx.x + u * ROUTE_WARPS * 32;
        w[u] = i < H ? 1.0f + __bfloat162float(nw[i]) : 0.0f;
    }
    pdl_begin();
    const float* l = logits + (size_t)min(warp, T - 1) * (E + 1);
    float v[8], shared_gate = 0.0f;
    if (warp < T && E <= 256) {
#pragma unroll
        for (int i = 0; i < 8; ++i) v[i] = lane + 32 * i < E ? l[lane + 32 * i] : -INFINITY;
        shared_gate = l[E];
    }
#pragma unroll
    for (int t = 0; t < T; ++t) {
        float xv[ROUTE_PER_THREAD], ss = 0.0f;
#pragma unroll
        for (int u = 0; u < ROUTE_PER_THREAD; ++u) {
            const int i = threadIdx.x + u * ROUTE_WARPS * 32;
            xv[u] = i < H ? xo[(size_t)t * H + i] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < ROUTE_PER_THREAD; ++u) ss = fmaf(xv[u], xv[u], ss);
        ss = warp_sum(ss);
        if (lane == 0) part[warp][t] = ss;
        __syncthreads();
        if (threadIdx.x == 0) {
            float sum = 0.0f;
            for (int q = 0; q < ROUTE_WARPS; ++q) sum += part[q][t];
            inv[t] = rsqrtf(sum / (float)H + eps);
        }
        __syncthreads();
        const float s = inv[t];
#pragma unroll
        for (int u = 0; u < ROUTE_PER_THREAD; ++u) {
            const int i = threadIdx.x + u * ROUTE_WARPS * 32;
            if (i < H) xn[(size_t)t * H + i] = xv[u] * s * w[u];
        }
    }
    if (warp < T) {
        int* ix = idx + (size_t)warp * k;
        float* wt = wts + (size_t)warp * (k + 1);
        const float s = inv[warp];
        if (E <= 256) {
#pragma unroll
            for (int i = 0; i < 8; ++i) v[i] *= s;
            route_values<8>(v, k, ix, wt);
            if (lane == 0) wt[k] = sigmoid(shared_gate * s);
        } else {
            route_scaled<MAX_EXPERTS_PER_LANE>(l, s, E, k, ix, wt);
        }
    }
}

#define MOE_ROUTE_STREAM(T)                                                                                     \
    extern "C" __global__ void __launch_bounds__(ROUTE_WARPS * 32) moe_route_stream_t##T(                       \
        const float* __restrict__ xo, const float* __restrict__ logits, const bf16* __restrict__ nw, float eps,  \
        int E, int k, int H, float* __restrict__ xn, int* __restrict__ idx, float* __restrict__ wts) {          \
        route_stream_body<T>(xo, logits, nw, eps, E, k, H, xn, idx, wts);                                       \
    }
MOE_ROUTE_STREAM(1) MOE_ROUTE_STREAM(2) MOE_ROUTE_STREAM(3) MOE_ROUTE_STREAM(4)
MOE_ROUTE_STREAM(5) MOE_ROUTE_STREAM(6) MOE_ROUTE_STREAM(7) MOE_ROUTE_STREAM(8)

// ---- Prefill: a chunk of T positions with the experts' work grouped by expert ----
// Each expert's weights are read once per chunk (instead of once per position) by tiles of 64
// assignments x 64 output rows; an assignment a = t*k + j is position t's j-th expert.

#define MAX_EXPERTS 512
#define GT 64
#define GK 32

// One block of 1024 threads: list[offsets[e] .. offsets[e+1]) are the assignments routed to
// expert e (in no particular order: each output is one thread's dot product either way).
extern "C" __global__ void __launch_bounds__(1024) moe_group(const int* __restrict__ idx, int n, int E,
                                                            int* __restrict__ offsets,
                                                            int* __restrict__ list) {
    pdl_begin();
    __shared__ int count[MAX_EXPERTS];
    __shared__ int cursor[MAX_EXPERTS];
    for (int e = threadIdx.x; e < E; e += blockDim.x) count[e] = 0;
    __syncthreads();
    for (int a = threadIdx.x; a < n; a += blockDim.x) atomicAdd(&count[idx[a]], 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        int s = 0;
        for (int e = 0; e < E; ++e) {
            cursor[e] = s;
            offsets[e] = s;
            s += count[e];
        }
        offsets[E] = s;
    }
    __syncthreads();
    for (int a = threadIdx.x; a < n; a += blockDim.x) list[atomicAdd(&cursor[idx[a]], 1)] = a;
}

// acc[w][i][j] = sum_k X[xrow[ty + 16i]][k] * Ww[n0 + tx + 16j][k] for a 64x64 tile (256
// threads, 4x4 outputs each); rows of the tile past m read zeros.
template <int NW>
__device__ __forceinline__ void group_tile(const float* __restrict__ X, const int* xrow, int m,
                                           const bf16* __restrict__ W0, const bf16* __restrict__ W1,
                                           int K, int n0, int N, float (&acc)[NW][4][4]) {
    __shared__ float xs[GK][GT + 1];
    __shared__ float ws[NW][GK][GT + 1];
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    for (int k0 = 0; k0 < K; k0 += GK) {
        for (int e = threadIdx.x; e < GT * GK; e += 256) {
            const int r = e / GK, c = e % GK, k = k0 + c;
            const bool kin = k < K;
            xs[c][r] = (r < m && kin) ? X[(size_t)xrow[r] * K + k] : 0.0f;
            const bool nin = n0 + r < N && kin;
            ws[0][c][r] = nin ? __bfloat162float(W0[(size_t)(n0 + r) * K + k]) : 0.0f;
            if (NW == 2) ws[NW - 1][c][r] = nin ? __bfloat162float(W1[(size_t)(n0 + r) * K + k]) : 0.0f;
        }
        __syncthreads();
#pragma unroll 8
        for (int c = 0; c < GK; ++c) {
            float a[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = xs[c][ty + 16 * i];
#pragma unroll
            for (int w = 0; w < NW; ++w)
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const float b = ws[w][c][tx + 16 * j];
#pragma unroll
                    for (int i = 0; i < 4; ++i) acc[w][i][j] = fmaf(a[i], b, acc[w][i][j]);
                }
        }
        __syncthreads();
    }
}

// Loads the next tile's assignments (list[p0 ..], m of them) into `arow` and their rows of X.
__device__ __forceinline__ void load_tile_rows(const int* __restrict__ list, int p0, int m, int xdiv,
                                               int* arow, int* xrow) {
    __syncthreads();
    if (threadIdx.x < GT) {
        const int a = threadIdx.x < m ? list[p0 + threadIdx.x] : 0;
        arow[threadIdx.x] = a;
        xrow[threadIdx.x] = a / xdiv;
    }
    __syncthreads();
}

// act[a][I] = silu(Wg[e] x[a/k]) * (Wu[e] x[a/k]) for every assignment a of expert e.
// Grid (ceil(I/64), E), 256 threads.
extern "C" __global__ void __launch_bounds__(256) moe_gate_up_grouped(
    const bf16* __restrict__ Wg, const bf16* __restrict__ Wu, const int* __restrict__ offsets,
    const int* __restrict__ list, const float* __restrict__ x, float* __restrict__ act, int k, int I,
    int H) {
    pdl_begin();
    __shared__ int arow[GT], xrow[GT];
    const int e = blockIdx.y, n0 = blockIdx.x * GT;
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    const int begin = offsets[e], end = offsets[e + 1];
    const bf16* g = Wg + (size_t)e * I * H;
    const bf16* u = Wu + (size_t)e * I * H;
    for (int p0 = begin; p0 < end; p0 += GT) {
        const int m = min(GT, end - p0);
        load_tile_rows(list, p0, m, k, arow, xrow);
        float acc[2][4][4] = {};
        group_tile<2>(x, xrow, m, g, u, H, n0, I, acc);
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int r = ty + 16 * i, n = n0 + tx + 16 * j;
                if (r < m && n < I) act[(size_t)arow[r] * I + n] = silu(acc[0][i][j]) * acc[1][i][j];
            }
    }
}

// out[a][H] = Wd[e] act[a] for every assignment a of expert e. Grid (ceil(H/64), E).
extern "C" __global__ void __launch_bounds__(256) moe_down_grouped(
    const bf16* __restrict__ Wd, const int* __restrict__ offsets, const int* __restrict__ list,
    const float* __restrict__ act, float* __restrict__ out, int I, int H) {
    pdl_begin();
    __shared__ int arow[GT], xrow[GT];
    const int e = blockIdx.y, n0 = blockIdx.x * GT;
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    const int begin = offsets[e], end = offsets[e + 1];
    const bf16* d = Wd + (size_t)e * H * I;
    for (int p0 = begin; p0 < end; p0 += GT) {
        const int m = min(GT, end - p0);
        load_tile_rows(list, p0, m, 1, arow, xrow);
        float acc[1][4][4] = {};
        group_tile<1>(act, xrow, m, d, d, I, n0, H, acc);
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int r = ty + 16 * i, n = n0 + tx + 16 * j;
                if (r < m && n < H) out[(size_t)arow[r] * H + n] = acc[0][i][j];
            }
    }
}

// y[t] (+)= sum_j wts[t][j] out[t*k + j], the slots summed in order. Grid (ceil(H/256), T).
extern "C" __global__ void moe_combine(const float* __restrict__ out, const float* __restrict__ wts,
                                       float* __restrict__ y, int k, int H, int accumulate) {
    pdl_begin();
    const int t = blockIdx.y, h = blockIdx.x * blockDim.x + threadIdx.x;
    if (h >= H) return;
    float s = 0.0f;
    for (int j = 0; j < k; ++j) s = fmaf(wts[(size_t)t * (k + 1) + j], out[((size_t)t * k + j) * H + h], s);
    float* dst = y + (size_t)t * H + h;
    *dst = accumulate ? *dst + s : s;
}

// The shared expert's activation with its sigmoid gate folded in, in place:
// g[t][i] = wts[t][k] * silu(g[t][i]) * u[t][i]. Grid (ceil(Is/256), T).
extern "C" __global__ void moe_shared_act(float* __restrict__ g, const float* __restrict__ u,
                                          const float* __restrict__ wts, int k, int Is) {
    pdl_begin();
    const int t = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= Is) return;
    const size_t at = (size_t)t * Is + i;
    g[at] = wts[(size_t)t * (k + 1) + k] * silu(g[at]) * u[at];
}
