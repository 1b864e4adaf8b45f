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

// One warp per output row; rows of position t run over k*I routed rows then Is shared rows.
// grid.y = T. act [T][k*I + Is]. The gate and up rows are loaded together, four chunks of
// each per lane in flight.
extern "C" __global__ void __launch_bounds__(256) moe_gate_up(
    const bf16* __restrict__ Wg, const bf16* __restrict__ Wu, const bf16* __restrict__ Wsg,
    const bf16* __restrict__ Wsu, const int* __restrict__ idx, const float* __restrict__ x,
    float* __restrict__ act, int k, int I, int Is, int H) {
    constexpr int UNROLL = 4;
    const int t = blockIdx.y, lane = threadIdx.x & 31;
    const int r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int rows = k * I + Is;
    if (r >= rows) return;
    size_t off;
    const bf16 *gbase, *ubase;
    if (r < k * I) {
        off = ((size_t)idx[(size_t)t * k + r / I] * I + r % I) * H;
        gbase = Wg; ubase = Wu;
    } else {
        off = (size_t)(r - k * I) * H;
        gbase = Wsg; ubase = Wsu;
    }
    const uint4* g = reinterpret_cast<const uint4*>(gbase + off);
    const uint4* u = reinterpret_cast<const uint4*>(ubase + off);
    const float* xt = x + (size_t)t * H;
    const int nchunks = H >> 3;
    float ag = 0.0f, au = 0.0f;
    for (int c0 = lane; c0 < nchunks; c0 += 32 * UNROLL) {
        uint4 gv[UNROLL], uv[UNROLL];
#pragma unroll
        for (int q = 0; q < UNROLL; ++q) {
            const int c = c0 + 32 * q;
            if (c < nchunks) { gv[q] = load_weights16(g + c); uv[q] = load_weights16(u + c); }
        }
#pragma unroll
        for (int q = 0; q < UNROLL; ++q) {
            const int c = c0 + 32 * q;
            if (c >= nchunks) break;
            float gf[8], uf[8], xf[8];
            unpack8(gv[q], gf);
            unpack8(uv[q], uf);
            load_x8(xt, c, xf);
#pragma unroll
            for (int i = 0; i < 8; ++i) { ag = fmaf(gf[i], xf[i], ag); au = fmaf(uf[i], xf[i], au); }
        }
    }
    const float gs = warp_sum(ag), us = warp_sum(au);
    if (lane == 0) act[(size_t)t * rows + r] = silu(gs) * us;
}

// One warp per hidden row h of position t (grid.y = T). The k routed rows and the shared row
// are walked as one virtual row over act[t] (k*I + Is values), so that each lane keeps eight
// 16-byte loads in flight whatever the expert size.
extern "C" __global__ void __launch_bounds__(256) moe_down(
    const bf16* __restrict__ Wd, const bf16* __restrict__ Wsd, const int* __restrict__ idx,
    const float* __restrict__ wts, const float* __restrict__ act, float* __restrict__ y, int k,
    int I, int Is, int H, int accumulate) {
    constexpr int UNROLL = 8;
    __shared__ const bf16* rowbase[MAX_TOPK + 1];
    __shared__ float weight[MAX_TOPK + 1];
    const int t = blockIdx.y, lane = threadIdx.x & 31;
    const int h = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int rows = k * I + Is;
    // Per slot: where row h of that expert starts, shifted so that virtual chunk c indexes it.
    if (threadIdx.x <= k) {
        const int j = threadIdx.x;
        weight[j] = wts[(size_t)t * (k + 1) + j];
        rowbase[j] = j < k ? Wd + (size_t)idx[(size_t)t * k + j] * H * I - (size_t)j * I
                           : Wsd - (size_t)k * I;
    }
    __syncthreads();
    if (h >= H) return;
    const float* a = act + (size_t)t * rows;
    const int nchunks = rows >> 3, per_slot = I >> 3;
    float total = 0.0f;
    for (int c0 = lane; c0 < nchunks; c0 += 32 * UNROLL) {
        uint4 wv[UNROLL];
        int slot[UNROLL];
#pragma unroll
        for (int q = 0; q < UNROLL; ++q) {
            const int c = c0 + 32 * q;
            slot[q] = min(c / per_slot, k);
            const size_t stride = slot[q] < k ? I : Is;
            if (c < nchunks) wv[q] = load_weights16(reinterpret_cast<const uint4*>(rowbase[slot[q]] + h * stride + (size_t)c * 8));
        }
#pragma unroll
        for (int q = 0; q < UNROLL; ++q) {
            const int c = c0 + 32 * q;
            if (c >= nchunks) break;
            float wf[8], af[8];
            unpack8(wv[q], wf);
            load_x8(a, c, af);
            float d = 0.0f;
#pragma unroll
            for (int i = 0; i < 8; ++i) d = fmaf(wf[i], af[i], d);
            total = fmaf(weight[slot[q]], d, total);
        }
    }
    total = warp_sum(total);
    if (lane == 0) {
        float* dst = y + (size_t)t * H + h;
        *dst = accumulate ? *dst + total : total;
    }
}
