// Gated DeltaNet decode over T positions in one launch per stage.
//
// State pool of one layer: [conv s0][conv s1][rec s0][rec s1]; each kernel reads one slot and
// writes another (the same slot updates in place). Conv state: bf16 [3][C], rows x(t-3),
// x(t-2), x(t-1). Recurrent state: fp32 [HV][K=128][V=128].

#define DK 128
#define DV 128

// One channel of the causal depthwise conv (kernel 4): its taps, tap 3 on the newest input,
// and its last three inputs as the state holds them (bf16). Inputs are rounded to bf16 as they
// enter the window, so T positions in one launch equal T launches.
struct ConvChannel {
    float w0, w1, w2, w3;
    bf16 h0, h1, h2;
};

__device__ __forceinline__ void conv_taps(ConvChannel& c, const bf16* __restrict__ w, int ch) {
    c.w0 = __bfloat162float(w[4 * ch]);
    c.w1 = __bfloat162float(w[4 * ch + 1]);
    c.w2 = __bfloat162float(w[4 * ch + 2]);
    c.w3 = __bfloat162float(w[4 * ch + 3]);
}

// The window of channel `ch` from a conv state slot [3][C].
__device__ __forceinline__ void conv_history(ConvChannel& c, const bf16* state, int C, int ch) {
    c.h0 = state[ch];
    c.h1 = state[C + ch];
    c.h2 = state[2 * C + ch];
}

__device__ __forceinline__ void conv_store(const ConvChannel& c, bf16* state, int C, int ch) {
    state[ch] = c.h0;
    state[C + ch] = c.h1;
    state[2 * C + ch] = c.h2;
}

// SiLU of the conv at the next input x, which then enters the window.
__device__ __forceinline__ float conv_push(ConvChannel& c, float x) {
    const bf16 xt = __float2bfloat16_rn(x);
    const float s = c.w0 * __bfloat162float(c.h0) + c.w1 * __bfloat162float(c.h1) +
                    c.w2 * __bfloat162float(c.h2) + c.w3 * __bfloat162float(xt);
    c.h0 = c.h1;
    c.h1 = c.h2;
    c.h2 = xt;
    return silu(s);
}

// The conv then SiLU over T positions, one thread per channel of q||k||v: x, out [T][C];
// w [C][4].
extern "C" __global__ void gdn_conv(const float* __restrict__ x, const bf16* __restrict__ w,
                                    const bf16* state_in, bf16* state_out,
                                    float* __restrict__ out, int T, int C) {
    pdl_begin();
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    ConvChannel ch;
    conv_taps(ch, w, c);
    conv_history(ch, state_in, C, c);
    for (int t = 0; t < T; ++t) out[(size_t)t * C + c] = conv_push(ch, x[(size_t)t * C + c]);
    conv_store(ch, state_out, C, c);
}

#define SLICES (DV / 32)
#define NORM_CHUNK 64
// Warps of a gdn_step block: 8 x 16 key rows, and the output norm's positions in turn.
#define STEP_WARPS 8

// The GDN output norm, y = w * o/rms(o) * silu(z) over each head's 128 columns, for the T
// positions that gdn_step has just written to o. A head's columns are spread over SLICES
// blocks of its cluster (cluster y; its x spans the value heads of one key head): each sums
// the squares of its 32 per position and writes the sum into the shared memory of all SLICES
// blocks, so that one cluster barrier a chunk of positions suffices; each then adds the sums
// in slice order. Chunks alternate between two buffers: a block writes chunk c + 1's sums
// only after the barrier of chunk c, which every block reaches only once it has read chunk
// c - 1's, and after the last barrier no block touches another's shared memory. The first
// position's output and gate come in registers (`first`, warp 0's, which computed that output
// and loaded that gate with the step's inputs): a decode step's norm then waits on no load.
struct NormFirst {
    float w, o, z;  // this thread's column of the norm weight; warp 0: position 0's o and z
};
__device__ __forceinline__ void gdn_gated_norm(const float* __restrict__ o, const float* __restrict__ z,
                                               NormFirst first, float* __restrict__ y, int T, int HV, float eps) {
    __shared__ float part[2][SLICES][NORM_CHUNK];
    constexpr int PER_WARP = NORM_CHUNK / STEP_WARPS;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int h = blockIdx.x, col = blockIdx.y * 32 + lane;
    for (int t0 = 0, c = 0; t0 < T; t0 += NORM_CHUNK, c ^= 1) {
        const int n = min(NORM_CHUNK, T - t0);
        // The gate is loaded with o, before the barrier, so that no load waits behind it.
        float zv[PER_WARP];
#pragma unroll
        for (int j = 0; j < PER_WARP; ++j) {
            const int i = warp + STEP_WARPS * j;
            if (i >= n) break;
            const size_t at = ((size_t)(t0 + i) * HV + h) * DV + col;
            const bool held = t0 + i == 0;
            const float v = held ? first.o : o[at];
            zv[j] = held ? first.z : z[at];
            const float ss = warp_sum(v * v);
            if (lane < SLICES) cluster_store(&part[c][blockIdx.y][i], cluster_x() + lane * cluster_width(), ss);
        }
        cluster_sync();
#pragma unroll
        for (int j = 0; j < PER_WARP; ++j) {
            const int i = warp + STEP_WARPS * j;
            if (i >= n) break;
            float ss = 0.0f;
#pragma unroll
            for (int r = 0; r < SLICES; ++r) ss += part[c][r][i];
            const size_t at = ((size_t)(t0 + i) * HV + h) * DV + col;
            y[at] = first.w * (t0 + i == 0 ? first.o : o[at]) * rsqrtf(ss / (float)DV + eps) * silu(zv[j]);
        }
    }
}

// The delta rule for one value head and a slice of 32 value columns per block (grid HV x 4),
// 8 warps x 16 key rows each; lane = value column. Each column of S is independent given q and
// k, so the state stays in registers over all T positions: read once, written once. The
// launch's clusters are (HV/HK) x 4 blocks: the value heads of one key head, each head's 4
// slices. With y not null the output norm follows (gdn_gated_norm), sparing the decode chain a
// launch. With conv_w not null, qkv is the projection before the conv and the conv runs here
// too (conv_w [C][4], its state read from conv_in and written to conv_out, slots [3][C]),
// sparing another: every block convolves its key head's q and k and its 32 v columns, and the
// cluster's first block writes the q, k window once every block of the cluster has read it
// (the slots may be one).
//   qkv [T][C] (conv output, q||k||v, or the projection with conv_w), C = 2*HK*128 + HV*128
//   b, a [T][HV]; A_log, dt_bias [HV]; o [T][HV][128]; z, y [T][HV][128]; norm_w [128]
extern "C" __global__ void __launch_bounds__(STEP_WARPS * 32) gdn_step(
    const float* __restrict__ qkv, const float* __restrict__ b, const float* __restrict__ a,
    const bf16* __restrict__ A_log, const bf16* __restrict__ dt_bias, const float* rec_in,
    float* rec_out, float* __restrict__ o, int T, int HK, int HV, int early, const float* __restrict__ z,
    const bf16* __restrict__ norm_w, float* __restrict__ y, float eps, const bf16* __restrict__ conv_w,
    const bf16* conv_in, bf16* conv_out) {
    constexpr int ROWS = DK / 8;
    __shared__ float qs[DK], ks[DK];
    __shared__ float sums[8];
    __shared__ float red[8][32];
    const int h = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int col = blockIdx.y * 32 + lane;
    const int kh = h / (HV / HK);
    const int C = 2 * HK * DK + HV * DV;
    const size_t head = (size_t)h * DK * DV;
    // Threads 0..127 hold q, 128..255 hold k (channel c_qk); every warp holds v at its column.
    const int d = threadIdx.x & (DK - 1);
    const int c_qk = threadIdx.x < DK ? kh * DK + d : HK * DK + kh * DK + d;
    const int c_v = 2 * HK * DK + h * DV + col;
    const bool conv = conv_w != nullptr;
    ConvChannel conv_qk, conv_v;
    // The block's slice of the state (128 rows of 32 columns) into the L2 while the previous
    // kernel finishes: it was written a round ago (EARLY_L2).
    if ((early & EARLY_L2) && threadIdx.x < DK)
        prefetch_l2(rec_in + head + (size_t)threadIdx.x * DV + blockIdx.y * 32, 32 * sizeof(float), 0, 1);
    float s[ROWS];
    bf16 a_log, dt_b, norm_wc;
    // The block's slice of the state, its conv window and its weights. The state and the
    // window were written by this layer's step a round ago, with the rest of the model between,
    // so with EARLY_REGS they are loaded before the wait, while the input projection streams.
    const auto load_state = [&] {
#pragma unroll
        for (int i = 0; i < ROWS; ++i) s[i] = __ldcg(rec_in + head + (size_t)(warp * ROWS + i) * DV + col);
        if (conv) {
            conv_taps(conv_qk, conv_w, c_qk);
            conv_taps(conv_v, conv_w, c_v);
            conv_history(conv_qk, conv_in, C, c_qk);
            conv_history(conv_v, conv_in, C, c_v);
        }
        a_log = A_log[h];
        dt_b = dt_bias[h];
        if (y != nullptr) norm_wc = norm_w[col];
    };
    const bool preload = early & EARLY_REGS;
    if (preload) load_state();
    pdl_begin();
    if (!preload) load_state();
    NormFirst first{y != nullptr ? __bfloat162float(norm_wc) : 0.0f, 0.0f, 0.0f};
    if (y != nullptr && warp == 0) first.z = z[(size_t)h * DV + col];

    const float neg_A = -expf(__bfloat162float(a_log));
    const float bias = __bfloat162float(dt_b);
    for (int t = 0; t < T; ++t) {
        const float* row = qkv + (size_t)t * C;
        // Every input of the position is loaded before the first barrier, so that the loads
        // make one trip to memory, not one each side of it.
        const float x_qk = row[c_qk], x_v = row[c_v];
        const float b_t = b[(size_t)t * HV + h], a_t = a[(size_t)t * HV + h];
        // Warps 0-3 and 4-7 sum the squares of q and k.
        const float val = conv ? conv_push(conv_qk, x_qk) : x_qk;
        const float sq = warp_sum(val * val);
        if (lane == 0) sums[warp] = sq;
        __syncthreads();
        const int g0 = threadIdx.x < DK ? 0 : 4;
        const float norm = rsqrtf(sums[g0] + sums[g0 + 1] + sums[g0 + 2] + sums[g0 + 3] + 1e-6f);
        if (threadIdx.x < DK) qs[d] = val * norm * rsqrtf((float)DK);
        else ks[d] = val * norm;

        const float beta = sigmoid(b_t);
        const float alpha = expf(neg_A * softplus(a_t + bias));
        const float v = conv ? conv_push(conv_v, x_v) : x_v;
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
            if (t == 0) first.o = out;
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < ROWS; ++i) rec_out[head + (size_t)(warp * ROWS + i) * DV + col] = s[i];
    if (y != nullptr) gdn_gated_norm(o, z, first, y, T, HV, eps);
    if (conv) {
        if (warp == 0) conv_store(conv_v, conv_out, C, c_v);
        // Past the norm's barrier every block of the cluster has read its window.
        if (y == nullptr) cluster_sync();
        if (cluster_rank() == 0) conv_store(conv_qk, conv_out, C, c_qk);
    }
}
