// Gated DeltaNet decode over T positions in one launch per stage.
//
// State pool of one layer: [conv s0][conv s1][rec s0][rec s1]; each kernel reads one slot and
// writes another (the same slot updates in place). Conv state: bf16 [3][C], rows x(t-3),
// x(t-2), x(t-1). Recurrent state: fp32 [HV][K=128][V=128].

#define DK 128
#define DV 128

// Causal depthwise conv (kernel 4) then SiLU, one thread per channel of q||k||v.
// x, out [T][C]; w [C][4] with tap 3 on the newest input. Inputs are rounded to bf16 as they
// enter the window (the state's precision), so T positions in one launch equal T launches.
extern "C" __global__ void gdn_conv(const float* __restrict__ x, const bf16* __restrict__ w,
                                    const bf16* state_in, bf16* state_out,
                                    float* __restrict__ out, int T, int C) {
    pdl_begin();
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    const float w0 = __bfloat162float(w[4 * c]), w1 = __bfloat162float(w[4 * c + 1]);
    const float w2 = __bfloat162float(w[4 * c + 2]), w3 = __bfloat162float(w[4 * c + 3]);
    bf16 h0 = state_in[c], h1 = state_in[C + c], h2 = state_in[2 * C + c];
    for (int t = 0; t < T; ++t) {
        const bf16 xt = __float2bfloat16_rn(x[(size_t)t * C + c]);
        const float s = w0 * __bfloat162float(h0) + w1 * __bfloat162float(h1) +
                        w2 * __bfloat162float(h2) + w3 * __bfloat162float(xt);
        out[(size_t)t * C + c] = silu(s);
        h0 = h1; h1 = h2; h2 = xt;
    }
    state_out[c] = h0;
    state_out[C + c] = h1;
    state_out[2 * C + c] = h2;
}

// Thread block clusters (sm_90): the blocks of a cluster read each other's shared memory.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
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

#define SLICES (DV / 32)
#define NORM_CHUNK 64

// The GDN output norm, y = w * o/rms(o) * silu(z) over each head's 128 columns, for the T
// positions that gdn_step has just written to o. A head's columns are spread over the SLICES
// blocks of its cluster: each sums the squares of its 32 per position, the cluster exchanges
// the sums through distributed shared memory and adds them in rank order.
__device__ __forceinline__ void gdn_gated_norm(const float* __restrict__ o, const float* __restrict__ z,
                                               const bf16* __restrict__ w, float* __restrict__ y, int T, int HV,
                                               float eps) {
    __shared__ float part[NORM_CHUNK];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const int h = blockIdx.x, col = blockIdx.y * 32 + lane;
    const float wc = __bfloat162float(w[col]);
    for (int t0 = 0; t0 < T; t0 += NORM_CHUNK) {
        const int n = min(NORM_CHUNK, T - t0);
        for (int i = warp; i < n; i += nwarps) {
            const float v = o[((size_t)(t0 + i) * HV + h) * DV + col];
            const float ss = warp_sum(v * v);
            if (lane == 0) part[i] = ss;
        }
        cluster_sync();
        for (int i = warp; i < n; i += nwarps) {
            float ss = 0.0f;
#pragma unroll
            for (int r = 0; r < SLICES; ++r) ss += cluster_load(&part[i], r);
            const size_t at = ((size_t)(t0 + i) * HV + h) * DV + col;
            y[at] = wc * o[at] * rsqrtf(ss / (float)DV + eps) * silu(z[at]);
        }
        // No block may overwrite its sums, or exit, while another still reads them.
        cluster_sync();
    }
}

// The delta rule for one value head and a slice of 32 value columns per block (grid HV x 4,
// the 4 slices of a head in one cluster), 8 warps x 16 key rows each; lane = value column.
// Each column of S is independent given q and k, so the state stays in registers over all T
// positions: read once, written once. With y not null the output norm follows
// (gdn_gated_norm), sparing the decode chain a launch.
//   qkv [T][C] (conv output, q||k||v), C = 2*HK*128 + HV*128
//   b, a [T][HV]; A_log, dt_bias [HV]; o [T][HV][128]; z, y [T][HV][128]; norm_w [128]
extern "C" __global__ void __cluster_dims__(1, SLICES, 1) __launch_bounds__(256) gdn_step(
    const float* __restrict__ qkv, const float* __restrict__ b, const float* __restrict__ a,
    const bf16* __restrict__ A_log, const bf16* __restrict__ dt_bias, const float* rec_in,
    float* rec_out, float* __restrict__ o, int T, int HK, int HV, int early, const float* __restrict__ z,
    const bf16* __restrict__ norm_w, float* __restrict__ y, float eps) {
    // The block's slice of the state (128 rows of 32 columns) into the L2 while the previous
    // kernel finishes: it was written a round ago (EARLY_L2).
    if ((early & EARLY_L2) && threadIdx.x < DK)
        prefetch_l2(rec_in + (size_t)blockIdx.x * DK * DV + (size_t)threadIdx.x * DV + blockIdx.y * 32, 32 * sizeof(float), 0, 1);
    pdl_begin();
    constexpr int ROWS = DK / 8;
    __shared__ float qs[DK], ks[DK];
    __shared__ float sums[8];
    __shared__ float red[8][32];
    const int h = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int col = blockIdx.y * 32 + lane;
    const int kh = h / (HV / HK);
    const int C = 2 * HK * DK + HV * DV;
    const size_t head = (size_t)h * DK * DV;

    float s[ROWS];
#pragma unroll
    for (int i = 0; i < ROWS; ++i) s[i] = rec_in[head + (size_t)(warp * ROWS + i) * DV + col];

    const float neg_A = -expf(__bfloat162float(A_log[h]));
    const float bias = __bfloat162float(dt_bias[h]);
    for (int t = 0; t < T; ++t) {
        const float* row = qkv + (size_t)t * C;
        // Threads 0..127 hold q, 128..255 hold k; warps 0-3 and 4-7 sum their squares.
        const int d = threadIdx.x & (DK - 1);
        const float val = threadIdx.x < DK ? row[kh * DK + d] : row[HK * DK + kh * DK + d];
        const float sq = warp_sum(val * val);
        if (lane == 0) sums[warp] = sq;
        __syncthreads();
        const int g0 = threadIdx.x < DK ? 0 : 4;
        const float norm = rsqrtf(sums[g0] + sums[g0 + 1] + sums[g0 + 2] + sums[g0 + 3] + 1e-6f);
        if (threadIdx.x < DK) qs[d] = val * norm * rsqrtf((float)DK);
        else ks[d] = val * norm;

        const float beta = sigmoid(b[(size_t)t * HV + h]);
        const float alpha = expf(neg_A * softplus(a[(size_t)t * HV + h] + bias));
        const float v = row[2 * HK * DK + h * DV + col];
        __syncthreads();

        float kv = 0.0f;
#pragma unroll
        for (int i = 0; i < ROWS; ++i) {
            s[i] *= alpha;
            kv = fmaf(s[i], ks[warp * ROWS + i], kv);
        }
        red[warp][lane] = kv;
        __syncthreads();
        kv = 0.0f;
#pragma unroll
        for (int w = 0; w < 8; ++w) kv += red[w][lane];
        const float u = beta * (v - kv);
        float out = 0.0f;
#pragma unroll
        for (int i = 0; i < ROWS; ++i) {
            s[i] = fmaf(ks[warp * ROWS + i], u, s[i]);
            out = fmaf(s[i], qs[warp * ROWS + i], out);
        }
        __syncthreads();
        red[warp][lane] = out;
        __syncthreads();
        if (warp == 0) {
            out = 0.0f;
#pragma unroll
            for (int w = 0; w < 8; ++w) out += red[w][lane];
            o[((size_t)t * HV + h) * DV + col] = out;
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < ROWS; ++i) rec_out[head + (size_t)(warp * ROWS + i) * DV + col] = s[i];
    if (y != nullptr) gdn_gated_norm(o, z, norm_w, y, T, HV, eps);
}
