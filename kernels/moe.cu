// Sparse MoE for T positions in three launches after the router GEMV, with no host round trip
// (a decode round stays capturable as a CUDA graph):
//   moe_route:   softmax over the router logits, top-k, renormalise; the shared expert's
//                sigmoid gate goes to slot k.
//   moe_gate_up: act[t][slot] = silu(Wg[e] x[t]) * (Wu[e] x[t]) for the k routed experts and
//                the shared expert (slot k).
//   moe_down:    y[t] (+)= sum_j w[t][j] Wd[e_j] act[t][j] + w[t][k] Wsd act[t][k].
// Expert weights are stacked: Wg, Wu [E][I][H], Wd [E][H][I]; the shared expert's are
// Wsg, Wsu [Is][H], Wsd [H][Is].

#define MAX_TOPK 16

#define MAX_EXPERTS_PER_LANE 16

// One block per position. idx [T][k], wts [T][k+1]. Warp 0 picks the top k with the logits
// in registers (up to 512 experts, no block barriers); the other warps compute the shared
// expert's gate meanwhile.
extern "C" __global__ void moe_route(const float* __restrict__ logits, int E, int k,
                                     const float* __restrict__ x, const bf16* __restrict__ shared_gate_w,
                                     int H, int* __restrict__ idx, float* __restrict__ wts) {
    __shared__ float partial[32];
    const int t = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nwarps = blockDim.x >> 5;
    if (warp == 0) {
        const float* l = logits + (size_t)t * E;
        float v[MAX_EXPERTS_PER_LANE];
#pragma unroll
        for (int i = 0; i < MAX_EXPERTS_PER_LANE; ++i) v[i] = lane + 32 * i < E ? l[lane + 32 * i] : -INFINITY;
        float first = 0.0f, sum = 0.0f, mine = 0.0f;
        int my_expert = 0;
        for (int j = 0; j < k; ++j) {
            // This lane's best, then the warp's (ties to the lower expert index).
            float bv = -INFINITY;
            int bi = 0x7fffffff;
#pragma unroll
            for (int i = 0; i < MAX_EXPERTS_PER_LANE; ++i)
                if (v[i] > bv) { bv = v[i]; bi = lane + 32 * i; }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
                const float ov = __shfl_xor_sync(FULL_MASK, bv, o);
                const int oi = __shfl_xor_sync(FULL_MASK, bi, o);
                if (ov > bv || (ov == bv && oi < bi)) { bv = ov; bi = oi; }
            }
            if ((bi & 31) == lane) {
#pragma unroll
                for (int i = 0; i < MAX_EXPERTS_PER_LANE; ++i)
                    if (lane + 32 * i == bi) v[i] = -INFINITY;
            }
            if (j == 0) first = bv;
            // softmax then renormalising over the top k equals a softmax over the chosen logits.
            const float p = expf(bv - first);
            sum += p;
            if (lane == j) { mine = p; my_expert = bi; }
        }
        if (lane < k) {
            idx[(size_t)t * k + lane] = my_expert;
            wts[(size_t)t * (k + 1) + lane] = mine / sum;
        }
    } else {
        const float* xt = x + (size_t)t * H;
        float dot = 0.0f;
        for (int i = threadIdx.x - 32; i < H; i += blockDim.x - 32) dot += xt[i] * __bfloat162float(shared_gate_w[i]);
        dot = warp_sum(dot);
        if (lane == 0) partial[warp] = dot;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float dot = 0.0f;
        for (int w = 1; w < nwarps; ++w) dot += partial[w];
        wts[(size_t)t * (k + 1) + k] = sigmoid(dot);
    }
}

// One block per activation row r of position t (grid T rows x T): routed rows 0..k*I-1, then
// the Is shared rows; act [T][k*I + Is]. The gate and up rows are read as two rows of one
// pass (`up - gate` apart), the block's threads splitting the hidden dim.
extern "C" __global__ void __launch_bounds__(256) moe_gate_up(
    const bf16* __restrict__ Wg, const bf16* __restrict__ Wu, const bf16* __restrict__ Wsg,
    const bf16* __restrict__ Wsu, const int* __restrict__ idx, const float* __restrict__ x,
    float* __restrict__ act, int k, int I, int Is, int H) {
    const int t = blockIdx.y, r = blockIdx.x;
    const int rows = k * I + Is;
    const bf16 *g, *u;
    if (r < k * I) {
        const size_t off = ((size_t)idx[(size_t)t * k + r / I] * I + r % I) * H;
        g = Wg + off;
        u = Wu + off;
    } else {
        const size_t off = (size_t)(r - k * I) * H;
        g = Wsg + off;
        u = Wsu + off;
    }
    float acc[2][1] = {{0.0f}, {0.0f}};
    rows_dot_lane<2, 1>(g, u - g, 2, x + (size_t)t * H, H >> 3, threadIdx.x, blockDim.x, acc);
    float s;
    block_sum_rows(acc, &s);
    // Thread 0 holds gate . x, thread 1 up . x.
    const float up = __shfl_down_sync(FULL_MASK, s, 1);
    if (threadIdx.x == 0) act[(size_t)t * rows + r] = silu(s) * up;
}

// One block per hidden row h of position t (grid H x T). The k routed rows and the shared
// row are walked as one virtual row over act[t] (k*I + Is values), split over the block's
// threads, eight 16-byte loads in flight per thread.
extern "C" __global__ void __launch_bounds__(256) moe_down(
    const bf16* __restrict__ Wd, const bf16* __restrict__ Wsd, const int* __restrict__ idx,
    const float* __restrict__ wts, const float* __restrict__ act, float* __restrict__ y, int k,
    int I, int Is, int H, int accumulate) {
    constexpr int UNROLL = 8;
    __shared__ const bf16* rowbase[MAX_TOPK + 1];
    __shared__ float weight[MAX_TOPK + 1];
    __shared__ float scratch[32];
    const int t = blockIdx.y, h = blockIdx.x;
    const int rows = k * I + Is;
    // Per slot: where row h of that expert starts, shifted so that virtual chunk c indexes it.
    if (threadIdx.x <= k) {
        const int j = threadIdx.x;
        weight[j] = wts[(size_t)t * (k + 1) + j];
        rowbase[j] = j < k ? Wd + ((size_t)idx[(size_t)t * k + j] * H + h) * I - (size_t)j * I
                           : Wsd + (size_t)h * Is - (size_t)k * I;
    }
    __syncthreads();
    const float* a = act + (size_t)t * rows;
    const int nchunks = rows >> 3, per_slot = I >> 3;
    float total = 0.0f;
    for (int c0 = threadIdx.x; c0 < nchunks; c0 += blockDim.x * UNROLL) {
        uint4 wv[UNROLL];
#pragma unroll
        for (int q = 0; q < UNROLL; ++q) {
            const int c = c0 + blockDim.x * q;
            if (c < nchunks) wv[q] = load_weights16(reinterpret_cast<const uint4*>(rowbase[min(c / per_slot, k)] + (size_t)c * 8));
        }
#pragma unroll
        for (int q = 0; q < UNROLL; ++q) {
            const int c = c0 + blockDim.x * q;
            if (c >= nchunks) break;
            float wf[8], af[8];
            unpack8(wv[q], wf);
            load_x8(a, c, af);
            float d = 0.0f;
#pragma unroll
            for (int i = 0; i < 8; ++i) d = fmaf(wf[i], af[i], d);
            total = fmaf(weight[min(c / per_slot, k)], d, total);
        }
    }
    total = block_sum(total, scratch);
    if (threadIdx.x == 0) {
        float* dst = y + (size_t)t * H + h;
        *dst = accumulate ? *dst + total : total;
    }
}
