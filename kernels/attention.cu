// Gated full attention, decode and speculative verify over T new positions.
//   attn_prep:    q/k RMSNorm over the head dim (the (1+w) kind), partial rotary (NeoX halves
//                 over the first rot_dim dims, angles from the model's table), k and v
//                 appended to the bf16 cache.
//   split-K attention (flash decoding): block (kv head, t, split) stages its keys through
//   shared memory and takes each tile's scores and values on tensor cores, all q heads of the
//   kv head at once; online softmax over the tiles. Then the splits
//   merge and the output gate sigmoid(gate), read from qg, applies:
//   attn_split + attn_combine:  several positions: the splits' partials go through memory to
//                               a second launch.
//   attn_decode_cluster:        one position (a decode step) in one launch: clusters of splits
//                               merge in distributed shared memory, and the cluster that
//                               finishes a head last merges the clusters.
//   Both merge a position's splits in the same order (speculative verify equals plain decode).
// The first new position is pos0 = *base + offset: the base is read from the device (the
// round's position, written before it), so a captured graph replays with a new context
// length. Position t sees keys 0..pos0+t (causal).
// Layouts: qg [T][Hq][2D], the q projection as it comes (per head the query, then its output
// gate: the kernels read each part in place); q, out [T][Hq][D]; k, v [T][Hkv][D]; caches
// [Hkv][max_ctx][D] bf16.

// Block (head, t) with D threads; heads 0..Hq-1 are queries (read from qg), the next Hkv are keys.
extern "C" __global__ void attn_prep(const float* __restrict__ qg, const float* __restrict__ k_in,
                                     const float* __restrict__ v_in, const bf16* __restrict__ q_norm,
                                     const bf16* __restrict__ k_norm, const float* __restrict__ rope,
                                     const int* __restrict__ base, int offset,
                                     bf16* __restrict__ k_cache, bf16* __restrict__ v_cache,
                                     float* __restrict__ q_out, int Hq, int Hkv, int max_ctx,
                                     int rot_dim, float eps, int early) {
    __shared__ float scratch[32];
    __shared__ float buf[512];
    const int head = blockIdx.x, t = blockIdx.y, d = threadIdx.x, D = blockDim.x;
    const bool is_q = head < Hq;
    const int kvh = head - Hq;
    // With EARLY_REGS the position (written before the round) and what depends on it alone,
    // the rotary angles and the norm weight, are read before the wait; q, k and v after it.
    // rope [max_ctx][rot_dim]: per position the cosines of the half dims, then the sines.
    const bool preload = early & EARLY_REGS;
    if (!preload) pdl_begin();
    const int pos = *base + offset + t;
    const int half = rot_dim / 2, i = d < rot_dim ? d % half : 0;
    const float* angle = rope + (size_t)pos * rot_dim;
    const float cs = d < rot_dim ? angle[i] : 0.0f, sn = d < rot_dim ? angle[half + i] : 0.0f;
    const float nw = 1.0f + __bfloat162float((is_q ? q_norm : k_norm)[d]);
    if (preload) pdl_begin();
    const float* src = is_q ? qg + ((size_t)t * Hq + head) * 2 * D : k_in + ((size_t)t * Hkv + kvh) * D;
    // Both loaded before the norm's barriers, so that they make one trip to memory.
    float x = src[d];
    const float v = is_q ? 0.0f : v_in[((size_t)t * Hkv + kvh) * D + d];
    const float inv = rsqrtf(block_sum(x * x, scratch) / (float)D + eps);
    x *= inv * nw;
    buf[d] = x;
    __syncthreads();
    if (d < rot_dim) x = d < half ? buf[d] * cs - buf[d + half] * sn : buf[d] * cs + buf[d - half] * sn;
    if (is_q) {
        q_out[((size_t)t * Hq + head) * D + d] = x;
    } else {
        const size_t at = ((size_t)kvh * max_ctx + pos) * D + d;
        k_cache[at] = __float2bfloat16_rn(x);
        v_cache[at] = __float2bfloat16_rn(v);
    }
}

// Warps of an attention block (attn_split, attn_decode_cluster): ATTN_WARPS rounded down to a
// multiple of the G (at most 8) q heads of its kv head: 12 for 6, as the engine sizes the launches.
#define ATTN_WARPS 16
template <int G>
struct AttnWarps {
    static constexpr int count = ATTN_WARPS / G * G;
};

// Keys of a split are staged through shared memory in tiles of ATTN_TILE_KEYS keys and as many
// values, two tiles in flight (cp.async): the next tile streams in while the warps work on the
// current one, so a split costs about one trip to memory per tile rather than one per key.
// A tile's rows are padded by 16 bytes, so that the 8 rows one ldmatrix reads fall in
// different banks.
#define ATTN_TILE_KEYS 16
template <int D>
struct KvTile {
    static constexpr int STRIDE = D + 8;
    static constexpr int ELEMS = ATTN_TILE_KEYS * STRIDE;
};
// Two tiles of keys and values: [tile][keys, values][key][STRIDE].
template <int D>
using KvTiles = bf16[2][2][KvTile<D>::ELEMS];

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// Starts copying keys and values j0 .. j0+n-1 of one kv head into a tile, the block's threads
// taking the 16-byte chunks in turn. The value rows past n are zeroed: the tile's products
// weigh them by 0, and a stale row could hold a NaN.
template <int D>
__device__ __forceinline__ void load_kv_tile(bf16* ks, bf16* vs, const bf16* __restrict__ kb, const bf16* __restrict__ vb,
                                             int j0, int n) {
    constexpr int CHUNKS = D / 8;
    for (int c = threadIdx.x; c < ATTN_TILE_KEYS * CHUNKS; c += blockDim.x) {
        const int row = c / CHUNKS, col = (c % CHUNKS) * 8;
        bf16* vd = vs + row * KvTile<D>::STRIDE + col;
        if (row < n) {
            const size_t at = (size_t)(j0 + row) * D + col;
            cp_async16(ks + row * KvTile<D>::STRIDE + col, kb + at);
            cp_async16(vd, vb + at);
        } else {
            *reinterpret_cast<uint4*>(vd) = make_uint4(0, 0, 0, 0);
        }
    }
    cp_async_commit();
}

// A position of len keys uses the first min(nsplit, ceil(len / ATTN_SPLIT_KEYS)) of the launch's
// splits, so that a split walks at least ATTN_SPLIT_KEYS keys (the launch's count is set for a
// full cache); the rest do no work and the merges skip them. It depends on the position
// alone, never on T.
#define ATTN_SPLIT_KEYS 32
__device__ __forceinline__ int live_splits(int len, int nsplit) {
    return min(nsplit, (len + ATTN_SPLIT_KEYS - 1) / ATTN_SPLIT_KEYS);
}

// Splits merge in groups of ATTN_CLUSTER consecutive ones, then the groups in order, so that a
// position's output sums in one order whether its splits merge in a cluster's shared memory
// (one position: attn_decode_cluster) or in attn_combine (several).
#define ATTN_CLUSTER 8
// Most groups of splits (the engine's MAX_SPLITS / ATTN_CLUSTER).
#define MAX_SPLIT_GROUPS 32

// Where a split's result goes: for q head g of its group the unnormalised accumulator at
// acc + g * acc_stride, its running maximum and sum at ml + g * ml_stride and the float after.
struct SplitResult {
    float* acc;
    int acc_stride;
    float* ml;
    int ml_stride;
};

// Tensor-core tiles (mma.sync m16n8k16, bf16 in, fp32 out). A's 16 rows are the q heads of a
// kv head (at most 8: rows 8-15, registers a1 and a3, are zero).
__device__ __forceinline__ void ldsm_x2(unsigned& r0, unsigned& r1, const bf16* p) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a) : "memory");
}
__device__ __forceinline__ void ldsm_x2_trans(unsigned& r0, unsigned& r1, const bf16* p) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a) : "memory");
}
// c += A B for A's rows 0-7 (a0: columns 0-7, a2: 8-15).
__device__ __forceinline__ void mma_rows8(float (&c)[4], unsigned a0, unsigned a2, unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(0u), "r"(a2), "r"(0u), "r"(b0), "r"(b1));
}

// x as two bf16, hi + lo within 2^-16 of it: two bf16 products carry an fp32 operand.
__device__ __forceinline__ void split_bf16(float x, bf16& hi, bf16& lo) {
    hi = __float2bfloat16_rn(x);
    lo = __float2bfloat16_rn(x - __bfloat162float(hi));
}

// Rows of the tensor-core tiles: the q heads of one kv head.
#define ATTN_ROWS 8
// Warps that score a tile: its two 8-key halves times four parts of the head dim.
#define SCORE_PARTS 4

// Block (kv head, t, split) over keys start..end-1, its G q heads at q + head0 * D: the keys and
// values go through shared memory tile by tile, and per tile on tensor cores: eight warps
// score it (queries as bf16 hi + lo against the keys, each warp a half of the tile's keys over
// a quarter of the head dim), the first 128 threads take the online softmax (one thread a head
// and key), and the warps add the weights (bf16 hi + lo) times the values into the output's
// 8-dim columns, warp w columns w, w + warps, ... Writes for each q head g the unnormalised accumulator, maximum
// and sum to `res`. Every sum's order depends only on the split and the key, never on T
// (speculative verify equals plain decode).
template <int D, int G>
__device__ __forceinline__ void split_attention(const float* __restrict__ q, const bf16* __restrict__ kb,
                                                const bf16* __restrict__ vb, KvTiles<D>& kv, int start, int end,
                                                bool tile_loaded, int head0, float scale, SplitResult res) {
    static_assert(G <= ATTN_ROWS, "a tile's rows hold at most 8 q heads");
    constexpr int WARPS = AttnWarps<G>::count, THREADS = WARPS * 32, STRIDE = KvTile<D>::STRIDE;
    constexpr int TILE = ATTN_TILE_KEYS, KSTEPS = D / 16 / SCORE_PARTS, NTILES = D / 8;
    constexpr int PV_TILES = (NTILES + WARPS - 1) / WARPS, QPT = (ATTN_ROWS * D + THREADS - 1) / THREADS;
    static_assert(WARPS >= 2 * SCORE_PARTS && KSTEPS >= 1, "a tile's scores need eight warps");
    static_assert(ATTN_ROWS * TILE <= THREADS, "the softmax takes a thread a head and key");
    __shared__ __align__(16) bf16 q_hi[ATTN_ROWS][STRIDE], q_lo[ATTN_ROWS][STRIDE];
    __shared__ float partial[SCORE_PARTS][ATTN_ROWS][TILE];
    __shared__ __align__(16) bf16 p_hi[ATTN_ROWS][TILE + 8], p_lo[ATTN_ROWS][TILE + 8];
    __shared__ float row_max[ATTN_ROWS], row_sum[ATTN_ROWS], row_corr[ATTN_ROWS];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int tiles = end > start ? (end - start + TILE - 1) / TILE : 0;
    if (tiles > 0 && !tile_loaded) load_kv_tile<D>(kv[0][0], kv[0][1], kb, vb, start, min(TILE, end - start));
    // The queries are loaded before the second tile is requested and stored after, so that
    // their trip and the tile's overlap.
    float qv[QPT];
#pragma unroll
    for (int i = 0; i < QPT; ++i) {
        const int at = tid + i * THREADS;
        qv[i] = at < G * D ? q[(size_t)head0 * D + at] : 0.0f;
    }
    if (tiles > 1) load_kv_tile<D>(kv[1][0], kv[1][1], kb, vb, start + TILE, min(TILE, end - start - TILE));
#pragma unroll
    for (int i = 0; i < QPT; ++i) {
        const int at = tid + i * THREADS;
        if (at < ATTN_ROWS * D) split_bf16(qv[i] * scale, q_hi[at / D][at % D], q_lo[at / D][at % D]);
    }
    if (tid < ATTN_ROWS) {
        row_max[tid] = -INFINITY;
        row_sum[tid] = 0.0f;
    }
    // ldmatrix x2: lanes 0-7 address the rows of the first 8x8 matrix, lanes 8-15 the second's.
    const int lrow = lane & 7, lhalf = (lane >> 3) & 1;
    float acc[PV_TILES][4] = {};
    for (int it = 0; it < tiles; ++it) {
        const int j0 = start + it * TILE, n = min(TILE, end - j0);
        if (it > 0 && it + 1 < tiles) {
            const int j1 = j0 + TILE;
            load_kv_tile<D>(kv[(it + 1) & 1][0], kv[(it + 1) & 1][1], kb, vb, j1, min(TILE, end - j1));
        }
        if (it + 1 < tiles) cp_async_wait<1>();
        else cp_async_wait<0>();
        __syncthreads();
        const bf16* kt = kv[it & 1][0];
        const bf16* vt = kv[it & 1][1];
        if (warp < 2 * SCORE_PARTS) {
            const int half = warp & 1, part = warp >> 1;
            float c[4] = {};
#pragma unroll
            for (int k = 0; k < KSTEPS; ++k) {
                const int col = (part * KSTEPS + k) * 16 + lhalf * 8;
                unsigned qh0, qh2, ql0, ql2, b0, b1;
                ldsm_x2(qh0, qh2, &q_hi[lrow][col]);
                ldsm_x2(ql0, ql2, &q_lo[lrow][col]);
                ldsm_x2(b0, b1, kt + (half * 8 + lrow) * STRIDE + col);
                mma_rows8(c, qh0, qh2, b0, b1);
                mma_rows8(c, ql0, ql2, b0, b1);
            }
            const int key = half * 8 + 2 * (lane & 3);
            partial[part][lane >> 2][key] = c[0];
            partial[part][lane >> 2][key + 1] = c[1];
        }
        __syncthreads();
        if (tid < ATTN_ROWS * TILE) {
            // Lanes 0-15 and 16-31 of a warp each hold one head's 16 keys.
            const int h = tid / TILE, key = tid % TILE;
            const float s = key < n ? (partial[0][h][key] + partial[1][h][key]) + (partial[2][h][key] + partial[3][h][key])
                                    : -INFINITY;
            float mx = s;
#pragma unroll
            for (int o = TILE / 2; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(FULL_MASK, mx, o));
            const float m_old = row_max[h], m_new = fmaxf(m_old, mx);
            const float w = key < n ? __expf(s - m_new) : 0.0f;
            float sum = w;
#pragma unroll
            for (int o = TILE / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(FULL_MASK, sum, o);
            split_bf16(w, p_hi[h][key], p_lo[h][key]);
            if (key == 0) {
                const float corr = __expf(m_old - m_new);
                row_corr[h] = corr;
                row_sum[h] = fmaf(row_sum[h], corr, sum);
                row_max[h] = m_new;
            }
        }
        __syncthreads();
        {
            const int r = lane >> 2, c2 = 2 * (lane & 3);
            const unsigned ph0 = *reinterpret_cast<const unsigned*>(&p_hi[r][c2]);
            const unsigned ph2 = *reinterpret_cast<const unsigned*>(&p_hi[r][c2 + 8]);
            const unsigned pl0 = *reinterpret_cast<const unsigned*>(&p_lo[r][c2]);
            const unsigned pl2 = *reinterpret_cast<const unsigned*>(&p_lo[r][c2 + 8]);
            const float corr = row_corr[r];
#pragma unroll
            for (int i = 0; i < PV_TILES; ++i) {
                const int nt = warp + i * WARPS;
                if (nt >= NTILES) break;
                acc[i][0] *= corr;
                acc[i][1] *= corr;
                unsigned b0, b1;
                ldsm_x2_trans(b0, b1, vt + (lane & 15) * STRIDE + nt * 8);
                mma_rows8(acc[i], ph0, ph2, b0, b1);
                mma_rows8(acc[i], pl0, pl2, b0, b1);
            }
        }
        // Every thread is done with this tile and its weights before the next iteration refills them.
        __syncthreads();
    }
    const int r = lane >> 2;
    if (r < G) {
#pragma unroll
        for (int i = 0; i < PV_TILES; ++i) {
            const int nt = warp + i * WARPS;
            if (nt >= NTILES) break;
            float* out = res.acc + r * res.acc_stride + nt * 8 + 2 * (lane & 3);
            out[0] = acc[i][0];
            out[1] = acc[i][1];
        }
    }
    if (tid < G) {
        res.ml[tid * res.ml_stride] = row_max[tid];
        res.ml[tid * res.ml_stride + 1] = row_sum[tid];
    }
}

// Merges n (maximum, sum, accumulator) triples of one head for dim d, `part(i, m, l, a)`
// giving the i-th; empty ones (maximum -inf) count for nothing.
template <typename Part>
__device__ __forceinline__ void merge_parts(int n, const Part& part, float& M, float& L, float& A) {
    float m[ATTN_CLUSTER], l[ATTN_CLUSTER], a[ATTN_CLUSTER];
    M = -INFINITY;
    L = A = 0.0f;
    for (int i0 = 0; i0 < n; i0 += ATTN_CLUSTER) {
        // Loaded in batches so that the loads of a batch make one trip.
#pragma unroll
        for (int i = 0; i < ATTN_CLUSTER; ++i)
            if (i0 + i < n) part(i0 + i, m[i], l[i], a[i]);
        float M1 = M;
#pragma unroll
        for (int i = 0; i < ATTN_CLUSTER; ++i)
            if (i0 + i < n) M1 = fmaxf(M1, m[i]);
        if (M1 == -INFINITY) continue;
        const float c = M == -INFINITY ? 0.0f : expf(M - M1);
        L *= c;
        A *= c;
#pragma unroll
        for (int i = 0; i < ATTN_CLUSTER; ++i) {
            if (i0 + i >= n || m[i] == -INFINITY) continue;
            const float w = expf(m[i] - M1);
            L = fmaf(l[i], w, L);
            A = fmaf(a[i], w, A);
        }
        M = M1;
    }
}

// The keys of split `split` of a launch of nsplit, for position t: the position comes from the
// device (base + offset); a position of len keys uses live_splits(len, nsplit) splits.
struct SplitKeys {
    int pos0, live, start, end;
    __device__ __forceinline__ SplitKeys(const int* __restrict__ base, int offset, int t, int split, int nsplit) {
        pos0 = *base + offset;
        const int len = pos0 + t + 1;
        live = live_splits(len, nsplit);
        const int chunk = (len + live - 1) / live;
        start = split * chunk;
        end = min(len, start + chunk);
    }
};

// Everything a split reads before its wait with EARLY_REGS, then the wait: the first tile of
// keys when all of them precede the round's first new position (the base is written before
// the round, and keys before pos0 were appended by earlier rounds or, in a prefill, by the
// attention of the positions before, three launches back at least; the round's own keys come
// from attn_prep, the launch before). Returns whether the tile is on its way.
template <int D>
__device__ __forceinline__ bool split_prologue(KvTiles<D>& kv, const bf16* kb, const bf16* vb,
                                               const SplitKeys& keys, bool active, bool preload) {
    constexpr int TILE = ATTN_TILE_KEYS;
    const bool early = preload && active && keys.end > keys.start && keys.start + min(TILE, keys.end - keys.start) <= keys.pos0;
    if (early) load_kv_tile<D>(kv[0][0], kv[0][1], kb, vb, keys.start, min(TILE, keys.end - keys.start));
    if (preload) pdl_begin();
    return early;
}

// part_acc [T][Hq][nsplit][D] (unnormalised), part_ml [T][Hq][nsplit][2] (maximum, sum).
// Block (kv head, t, split) of several positions' attention: the split's result for each q
// head of the group, merged by attn_combine. With EARLY_REGS the position is read before the
// wait, and a first tile as split_prologue says.
template <int D, int G>
__device__ __forceinline__ void attn_split_body(const float* __restrict__ q, const bf16* __restrict__ k_cache,
                                                const bf16* __restrict__ v_cache, const int* __restrict__ base,
                                                int offset, float* __restrict__ part_acc, float* __restrict__ part_ml,
                                                int Hq, int nsplit, int max_ctx, float scale, int early) {
    __shared__ __align__(16) KvTiles<D> kv;
    const int kvh = blockIdx.x, t = blockIdx.y, split = blockIdx.z;
    const bool preload = early & EARLY_REGS;
    if (!preload) pdl_begin();
    const SplitKeys keys(base, offset, t, split, nsplit);
    const bool active = split < keys.live;
    const bf16* kb = k_cache + (size_t)kvh * max_ctx * D;
    const bf16* vb = v_cache + (size_t)kvh * max_ctx * D;
    // Idle splits wait all the same: no block lets a dependent start before the launch before it ends.
    const bool tile_early = split_prologue<D>(kv, kb, vb, keys, active, preload);
    if (!active) return;
    const size_t first = ((size_t)t * Hq + kvh * G) * nsplit + split;
    const SplitResult res{part_acc + first * D, nsplit * D, part_ml + 2 * first, 2 * nsplit};
    split_attention<D, G>(q + (size_t)t * Hq * D, kb, vb, kv, keys.start, keys.end, tile_early, kvh * G, scale, res);
}

// Block (q head, t, 32 dims) of any number of warps: warp w merges groups w, w + warps, ... of
// the position's live splits (lane = dim), then warp 0 merges the groups and applies the output
// gate sigmoid(gate), read in place from qg. The engine gives a launch of one position a warp a
// group (one trip), of several positions blocks of COMBINE_WARPS, eight an SM (a prefill
// chunk's launch, 8 positions x q heads x dim slices, then runs in one wave). With EARLY_REGS the position and the gate (the
// q projection, three launches back) are read before the wait.
#define COMBINE_WARPS 4
extern "C" __global__ void __launch_bounds__(MAX_SPLIT_GROUPS * 32) attn_combine(
    const float* __restrict__ part_acc, const float* __restrict__ part_ml, const float* __restrict__ qg,
    float* __restrict__ out, int Hq, int D, int nsplit, const int* __restrict__ base, int offset, int early) {
    __shared__ float group_ml[MAX_SPLIT_GROUPS][2], group_acc[MAX_SPLIT_GROUPS][32];
    const int h = blockIdx.x, t = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int d = blockIdx.z * 32 + lane;
    const size_t head = (size_t)t * Hq + h;
    const bool preload = early & EARLY_REGS;
    if (!preload) pdl_begin();
    const float gate = warp == 0 ? qg[(head * 2 + 1) * D + d] : 0.0f;
    const int live = live_splits(*base + offset + t + 1, nsplit), groups = (live + ATTN_CLUSTER - 1) / ATTN_CLUSTER;
    if (preload) pdl_begin();
    for (int c = warp; c < groups; c += blockDim.x >> 5) {
        float M, L, A;
        merge_parts(min(ATTN_CLUSTER, live - c * ATTN_CLUSTER), [&](int i, float& m, float& l, float& a) {
            const size_t s = head * nsplit + c * ATTN_CLUSTER + i;
            m = part_ml[2 * s];
            l = part_ml[2 * s + 1];
            a = part_acc[s * D + d];
        }, M, L, A);
        group_acc[c][lane] = A;
        if (lane == 0) {
            group_ml[c][0] = M;
            group_ml[c][1] = L;
        }
    }
    __syncthreads();
    if (warp == 0) {
        float M, L, A;
        merge_parts(groups, [&](int i, float& m, float& l, float& a) {
            m = group_ml[i][0];
            l = group_ml[i][1];
            a = group_acc[i][lane];
        }, M, L, A);
        out[head * D + d] = A / L * sigmoid(gate);
    }
}

// One position's attention in one launch. part_acc [Hq][groups][D] (unnormalised), part_ml
// [Hq][groups][2] (maximum, sum), tickets [Hq] (zero between launches). Block (kv head, 0,
// split) in clusters of ATTN_CLUSTER splits: each live split attends over its keys; the
// cluster then merges its splits, block r taking q head r of the group, and writes the head's
// group partial; the block that writes a head's last partial (its ticket says so) merges the
// groups and writes out = sigmoid(gate) * softmax(q k^T) v, the gate read in place from qg.
// With EARLY_REGS the position, the gate (the q projection, two launches back) and a first
// tile as split_prologue says are read before the wait.
template <int D, int G>
__device__ __forceinline__ void attn_decode_cluster_body(const float* __restrict__ q, const bf16* __restrict__ k_cache,
                                                         const bf16* __restrict__ v_cache, const int* __restrict__ base,
                                                         int offset, const float* __restrict__ qg,
                                                         float* __restrict__ part_acc, float* __restrict__ part_ml,
                                                         unsigned* __restrict__ tickets, float* __restrict__ out, int Hq,
                                                         int nsplit, int max_ctx, float scale, int early) {
    static_assert(G <= ATTN_CLUSTER, "a cluster's blocks merge one q head each");
    // Two tiles of keys and values; past the last tile the split's result.
    __shared__ __align__(16) KvTiles<D> kv;
    __shared__ float res_ml[G][2];
    __shared__ bool last;
    static_assert(sizeof(float) * G * D <= sizeof(kv), "the split's result exceeds the tiles");
    float* res_acc = reinterpret_cast<float*>(&kv[0][0][0]);
    const int kvh = blockIdx.x, split = blockIdx.z;
    const int rank = split % ATTN_CLUSTER, group = split / ATTN_CLUSTER, ngroups = gridDim.z / ATTN_CLUSTER;
    const bool preload = early & EARLY_REGS;
    if (!preload) pdl_begin();
    const SplitKeys keys(base, offset, 0, split, nsplit);
    const int live_groups = (keys.live + ATTN_CLUSTER - 1) / ATTN_CLUSTER;
    // Block r of a cluster merges q head r of the group, one dim a thread.
    const bool merges = rank < G && (int)threadIdx.x < D;
    const int head = kvh * G + rank, d = threadIdx.x;
    const float gate = merges ? qg[((size_t)head * 2 + 1) * D + d] : 0.0f;
    const bf16* kb = k_cache + (size_t)kvh * max_ctx * D;
    const bf16* vb = v_cache + (size_t)kvh * max_ctx * D;
    const bool active = split < keys.live;
    const bool tile_early = split_prologue<D>(kv, kb, vb, keys, active, preload);
    // A cluster with no live split leaves at once, all its blocks together.
    if (group >= live_groups) return;
    if (active)
        split_attention<D, G>(q, kb, vb, kv, keys.start, keys.end, tile_early, kvh * G, scale,
                              SplitResult{res_acc, D, &res_ml[0][0], 2});

    // The cluster's splits, merged in split order.
    cluster_sync();
    if (merges) {
        float M, L, A;
        merge_parts(min(ATTN_CLUSTER, keys.live - group * ATTN_CLUSTER), [&](int i, float& m, float& l, float& a) {
            m = cluster_load(&res_ml[rank][0], i);
            l = cluster_load(&res_ml[rank][1], i);
            a = cluster_load(&res_acc[rank * D + d], i);
        }, M, L, A);
        const size_t part = (size_t)head * ngroups + group;
        part_acc[part * D + d] = A;
        if (d == 0) {
            part_ml[2 * part] = M;
            part_ml[2 * part + 1] = L;
        }
    }
    // No block reads another's shared memory past here; each waits for the others before it exits.
    cluster_arrive();
    if (rank < G) {
        // The head's partial is out before its ticket is taken (the last-block pattern).
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) {
            last = atomicAdd(&tickets[head], 1u) == (unsigned)live_groups - 1;
            if (last) tickets[head] = 0;
        }
        __syncthreads();
        if (last && merges) {
            float M, L, A;
            merge_parts(live_groups, [&](int i, float& m, float& l, float& a) {
                const size_t part = (size_t)head * ngroups + i;
                m = __ldcg(part_ml + 2 * part);
                l = __ldcg(part_ml + 2 * part + 1);
                a = __ldcg(part_acc + part * D + d);
            }, M, L, A);
            out[(size_t)head * D + d] = A / L * sigmoid(gate);
        }
    }
    cluster_wait();
}

#define ATTN_DECODE(D, G)                                                                           \
    extern "C" __global__ void __launch_bounds__(ATTN_WARPS * 32) attn_split_d##D##_g##G(        \
        const float* __restrict__ q, const bf16* __restrict__ k_cache,                              \
        const bf16* __restrict__ v_cache, const int* __restrict__ base, int offset,                 \
        float* __restrict__ part_acc, float* __restrict__ part_ml, int Hq, int nsplit, int max_ctx, \
        float scale, int early) {                                                                   \
        attn_split_body<D, G>(q, k_cache, v_cache, base, offset, part_acc, part_ml, Hq, nsplit, max_ctx, scale, \
                              early);                                                               \
    }                                                                                               \
    extern "C" __global__ void __launch_bounds__(ATTN_WARPS * 32, 2) attn_decode_cluster_d##D##_g##G( \
        const float* __restrict__ q, const bf16* __restrict__ k_cache,                              \
        const bf16* __restrict__ v_cache, const int* __restrict__ base, int offset,                 \
        const float* __restrict__ qg, float* __restrict__ part_acc, float* __restrict__ part_ml,    \
        unsigned* __restrict__ tickets, float* __restrict__ out, int Hq, int nsplit, int max_ctx,   \
        float scale, int early) {                                                                   \
        attn_decode_cluster_body<D, G>(q, k_cache, v_cache, base, offset, qg, part_acc, part_ml, tickets, out, \
                                       Hq, nsplit, max_ctx, scale, early);                          \
    }
#define ATTN_DECODE_GROUPS(D) ATTN_DECODE(D, 1) ATTN_DECODE(D, 2) ATTN_DECODE(D, 4) ATTN_DECODE(D, 6) ATTN_DECODE(D, 8)
ATTN_DECODE_GROUPS(64) ATTN_DECODE_GROUPS(128) ATTN_DECODE_GROUPS(256)
