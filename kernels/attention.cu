// Gated full attention, decode and speculative verify over T new positions.
//   attn_prep:    q/k RMSNorm over the head dim (the (1+w) kind), partial rotary (NeoX halves
//                 over the first rot_dim dims, angles from the model's table), k and v
//                 appended to the bf16 cache.
//   attn_decode:  split-K (flash decoding): block (kv head, t, split) stages its keys through
//                 shared memory, each q head of the group split over warps; online softmax.
//   attn_combine: merges the splits and applies the output gate sigmoid(gate), read from qg.
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

template <int E>
__device__ __forceinline__ void load_bf16(const bf16* p, float* f) {
    if constexpr (E == 8) {
        unpack8(*reinterpret_cast<const uint4*>(p), f);
    } else if constexpr (E == 4) {
        const uint2 v = *reinterpret_cast<const uint2*>(p);
        f[0] = bf16_lo(v.x); f[1] = bf16_hi(v.x); f[2] = bf16_lo(v.y); f[3] = bf16_hi(v.y);
    } else {
        const unsigned int v = *reinterpret_cast<const unsigned int*>(p);
        f[0] = bf16_lo(v); f[1] = bf16_hi(v);
    }
}

// Warps of an attn_decode block: ATTN_WARPS / G warps for each of the G q heads of its kv
// head (at least one), which split each tile's keys between them and merge at the end.
#define ATTN_WARPS 16
template <int G>
struct AttnWarps {
    static constexpr int per_head = G >= ATTN_WARPS ? 1 : ATTN_WARPS / G;
    static constexpr int count = G * per_head;
};

// Keys of a split are staged through shared memory in tiles of ATTN_TILE_BYTES of keys and as
// many of values, two tiles in flight (cp.async): the next tile streams in while the warps
// score the current one, so a split costs about one trip to memory per tile rather than one
// per key step.
#define ATTN_TILE_BYTES 8192

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
    const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// Starts copying keys and values j0 .. j0+n-1 of one kv head into a tile, the block's threads
// taking the 16-byte chunks in turn.
template <int D>
__device__ __forceinline__ void load_kv_tile(bf16* ks, bf16* vs, const bf16* __restrict__ kb, const bf16* __restrict__ vb,
                                             int j0, int n) {
    constexpr int CHUNKS = D / 8;
    for (int c = threadIdx.x; c < n * CHUNKS; c += blockDim.x) {
        const size_t at = (size_t)(j0 + c / CHUNKS) * D + (c % CHUNKS) * 8;
        cp_async16(ks + (size_t)c * 8, kb + at);
        cp_async16(vs + (size_t)c * 8, vb + at);
    }
    cp_async_commit();
}

// A position of len keys uses the first min(nsplit, ceil(len / ATTN_SPLIT_KEYS)) of the launch's
// splits, so that a split walks at least ATTN_SPLIT_KEYS keys (the launch's count is set for a
// full cache); the rest exit at once and the combine skips them. It depends on the position
// alone, never on T.
#define ATTN_SPLIT_KEYS 32
__device__ __forceinline__ int live_splits(int len, int nsplit) {
    return min(nsplit, (len + ATTN_SPLIT_KEYS - 1) / ATTN_SPLIT_KEYS);
}

// part_acc [T][Hq][nsplit][D] (unnormalised), part_ml [T][Hq][nsplit][2] (running max, sum).
// Block (kv head, t, split): the split's keys go through shared memory tile by tile; each warp
// owns one q head and scores every PER_HEAD-th run of KEYS consecutive keys of a tile, lane =
// E consecutive dims, so a warp holds one head's query and accumulator. The KEYS scores of a
// step are reduced as independent shuffle chains, then one online-softmax update. The order
// of every sum depends only on the split and the key, never on T (speculative verify equals
// plain decode).
template <int D, int G>
__device__ __forceinline__ void attn_decode_body(const float* __restrict__ q, const bf16* __restrict__ k_cache,
                                                 const bf16* __restrict__ v_cache, const int* __restrict__ base, int offset,
                                                 float* __restrict__ part_acc, float* __restrict__ part_ml,
                                                 int Hq, int max_ctx, float scale, int early) {
    constexpr int E = D / 32, PER_HEAD = AttnWarps<G>::per_head, KEYS = E >= 8 ? 2 : 4;
    constexpr int TILE = ATTN_TILE_BYTES / (D * 2);
    // Two tiles of keys and values: [tile][keys, values].
    __shared__ __align__(16) bf16 kv[2][2][TILE * D];
    const int kvh = blockIdx.x, t = blockIdx.y, split = blockIdx.z, nsplit = gridDim.z;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = warp / PER_HEAD, sub = warp % PER_HEAD, head = kvh * G + g;
    // With EARLY_REGS the position, and a first tile of keys older than the round's, are read
    // before the wait: the base is written before the round, and keys before pos0 were
    // appended by earlier rounds (or, in a prefill, by the attention of the positions before,
    // three launches back at least); the round's own keys come from attn_prep, the launch before.
    const bool preload = early & EARLY_REGS;
    if (!preload) pdl_begin();
    const int pos0 = *base + offset;
    const int len = pos0 + t + 1, live = live_splits(len, nsplit);
    if (split >= live) {
        // Waits all the same: no block lets a dependent start before the launch before it ends.
        if (preload) pdl_begin();
        return;
    }
    const int chunk = (len + live - 1) / live;
    const int start = split * chunk, end = min(len, start + chunk);
    const bf16* kb = k_cache + (size_t)kvh * max_ctx * D;
    const bf16* vb = v_cache + (size_t)kvh * max_ctx * D;
    const int tiles = end > start ? (end - start + TILE - 1) / TILE : 0;
    const bool tile_early = preload && tiles > 0 && start + min(TILE, end - start) <= pos0;
    if (tile_early) load_kv_tile<D>(kv[0][0], kv[0][1], kb, vb, start, min(TILE, end - start));
    if (preload) pdl_begin();
    if (tiles > 0 && !tile_early) load_kv_tile<D>(kv[0][0], kv[0][1], kb, vb, start, min(TILE, end - start));

    float qr[E], acc[E], m = -INFINITY, l = 0.0f;
#pragma unroll
    for (int e = 0; e < E; ++e) {
        acc[e] = 0.0f;
        qr[e] = q[((size_t)t * Hq + head) * D + lane * E + e] * scale;
    }
    for (int it = 0; it < tiles; ++it) {
        const int j0 = start + it * TILE, n = min(TILE, end - j0);
        if (it + 1 < tiles) {
            const int j1 = j0 + TILE;
            load_kv_tile<D>(kv[(it + 1) & 1][0], kv[(it + 1) & 1][1], kb, vb, j1, min(TILE, end - j1));
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        const bf16* kt = kv[it & 1][0] + lane * E;
        const bf16* vt = kv[it & 1][1] + lane * E;
        for (int p0 = sub * KEYS; p0 < n; p0 += PER_HEAD * KEYS) {
            float kf[KEYS][E], vf[KEYS][E], sc[KEYS];
#pragma unroll
            for (int p = 0; p < KEYS; ++p) {
                const int pk = min(p0 + p, n - 1);
                load_bf16<E>(kt + pk * D, kf[p]);
                load_bf16<E>(vt + pk * D, vf[p]);
            }
#pragma unroll
            for (int p = 0; p < KEYS; ++p) {
                float s = 0.0f;
#pragma unroll
                for (int e = 0; e < E; ++e) s = fmaf(qr[e], kf[p][e], s);
                sc[p] = s;
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
#pragma unroll
                for (int p = 0; p < KEYS; ++p) sc[p] += __shfl_xor_sync(FULL_MASK, sc[p], o);
            float m_new = m;
#pragma unroll
            for (int p = 0; p < KEYS; ++p) {
                if (p0 + p >= n) sc[p] = -INFINITY;
                m_new = fmaxf(m_new, sc[p]);
            }
            const float corr = __expf(m - m_new);
            l *= corr;
#pragma unroll
            for (int e = 0; e < E; ++e) acc[e] *= corr;
#pragma unroll
            for (int p = 0; p < KEYS; ++p) {
                const float w = __expf(sc[p] - m_new);
                l += w;
#pragma unroll
                for (int e = 0; e < E; ++e) acc[e] = fmaf(w, vf[p][e], acc[e]);
            }
            m = m_new;
        }
        // Every warp is done with this tile before the next iteration refills it.
        __syncthreads();
    }
    const size_t part = ((size_t)t * Hq + head) * nsplit + split;
    if constexpr (PER_HEAD > 1) {
        // Merge the head's warps through shared memory; its first warp writes the split.
        // The warps' accumulators go where the tiles were: every warp is past the last tile's
        // barrier.
        static_assert(sizeof(float) * AttnWarps<G>::count * D <= sizeof(kv), "the accumulators exceed the tiles");
        float (*sacc)[D] = reinterpret_cast<float (*)[D]>(&kv[0][0][0]);
        __shared__ float sm[AttnWarps<G>::count], sl[AttnWarps<G>::count];
#pragma unroll
        for (int e = 0; e < E; ++e) sacc[warp][lane * E + e] = acc[e];
        if (lane == 0) { sm[warp] = m; sl[warp] = l; }
        __syncthreads();
        if (sub != 0) return;
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < PER_HEAD; ++w) M = fmaxf(M, sm[warp + w]);
        l = 0.0f;
#pragma unroll
        for (int e = 0; e < E; ++e) acc[e] = 0.0f;
        if (M != -INFINITY) {
#pragma unroll
            for (int w = 0; w < PER_HEAD; ++w) {
                const float c = __expf(sm[warp + w] - M);
                l = fmaf(sl[warp + w], c, l);
#pragma unroll
                for (int e = 0; e < E; ++e) acc[e] = fmaf(sacc[warp + w][lane * E + e], c, acc[e]);
            }
        }
        m = M;
    }
#pragma unroll
    for (int e = 0; e < E; ++e) part_acc[part * D + lane * E + e] = acc[e];
    if (lane == 0) {
        part_ml[2 * part] = m;
        part_ml[2 * part + 1] = l;
    }
}

#define ATTN_DECODE(D, G)                                                                           \
    extern "C" __global__ void __launch_bounds__(ATTN_WARPS * 32) attn_decode_d##D##_g##G(          \
        const float* __restrict__ q, const bf16* __restrict__ k_cache,                              \
        const bf16* __restrict__ v_cache, const int* __restrict__ base, int offset,                 \
        float* __restrict__ part_acc, float* __restrict__ part_ml, int Hq, int max_ctx,             \
        float scale, int early) {                                                                   \
        attn_decode_body<D, G>(q, k_cache, v_cache, base, offset, part_acc, part_ml, Hq, max_ctx, scale, early); \
    }
#define ATTN_DECODE_GROUPS(D) ATTN_DECODE(D, 1) ATTN_DECODE(D, 2) ATTN_DECODE(D, 4) ATTN_DECODE(D, 6) ATTN_DECODE(D, 8)
ATTN_DECODE_GROUPS(64) ATTN_DECODE_GROUPS(128) ATTN_DECODE_GROUPS(256)

// Block (q head, t, 32 dims): 8 groups of 32 threads, group i summing the live splits i, i+8,
// ..., then the groups summed through shared memory; the gate sigmoid(gate) applied last.
extern "C" __global__ void __launch_bounds__(256) attn_combine(
    const float* __restrict__ part_acc, const float* __restrict__ part_ml, const float* __restrict__ qg,
    float* __restrict__ out, int Hq, int D, int nsplit, const int* __restrict__ pos_base, int offset, int early) {
    __shared__ float weight[256];
    __shared__ float scratch[32];
    __shared__ float partial[8][32];
    const int h = blockIdx.x, t = blockIdx.y, d = blockIdx.z * 32 + (threadIdx.x & 31);
    const int group = threadIdx.x >> 5;
    const size_t head = (size_t)t * Hq + h, base = head * nsplit;
    // With EARLY_REGS the position (written before the round) and the gate (the q projection,
    // three launches back) are read before the wait, the splits after it.
    const bool preload = early & EARLY_REGS;
    if (!preload) pdl_begin();
    const float gate = group == 0 ? qg[head * 2 * D + D + d] : 0.0f;
    const int live = live_splits(*pos_base + offset + t + 1, nsplit);
    if (preload) pdl_begin();
    float m = -INFINITY;
    for (int s = threadIdx.x; s < live; s += blockDim.x) m = fmaxf(m, part_ml[2 * (base + s)]);
    m = warp_max(m);
    if ((threadIdx.x & 31) == 0) scratch[group] = m;
    __syncthreads();
    float M = -INFINITY;
    for (int w = 0; w < 8; ++w) M = fmaxf(M, scratch[w]);
    float l = 0.0f;
    for (int s = threadIdx.x; s < live; s += blockDim.x) {
        const float ms = part_ml[2 * (base + s)];
        // An empty split has m = -inf and contributes nothing.
        weight[s] = ms == -INFINITY ? 0.0f : expf(ms - M);
        l += part_ml[2 * (base + s) + 1] * weight[s];
    }
    const float L = block_sum(l, scratch);
    float a = 0.0f;
#pragma unroll 4
    for (int s = group; s < live; s += 8) a += part_acc[(base + s) * D + d] * weight[s];
    partial[group][threadIdx.x & 31] = a;
    __syncthreads();
    if (group == 0) {
        a = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i) a += partial[i][threadIdx.x];
        out[head * D + d] = a / L * sigmoid(gate);
    }
}
