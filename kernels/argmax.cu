// LM head with argmax: the logits never leave the chip. Pass 1 (lm_head_argmax_t*) computes
// the logits like the GEMV and keeps each block's best (value, index) per position;
// pass 2 (argmax_reduce) reduces the block partials to one token id per position, on device.
// Ties go to the lowest index, as on the CPU.

__device__ __forceinline__ bool better(float v, int i, float bv, int bi) {
    return v > bv || (v == bv && i < bi);
}

// Warp-wide (value, index) maximum; every lane gets the result.
__device__ __forceinline__ void warp_argmax(float& v, int& i) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(FULL_MASK, v, o);
        const int oi = __shfl_xor_sync(FULL_MASK, i, o);
        if (better(ov, oi, v, i)) { v = ov; i = oi; }
    }
}

#define LM_ROWS 4

// Eight warps of four rows: 32 rows per block.
template <int T>
__device__ __forceinline__ void lm_head_body(const bf16* __restrict__ W, const float* __restrict__ x,
                                             int rows, int cols, float* __restrict__ part_val,
                                             int* __restrict__ part_idx) {
    __shared__ float sv[T][8];
    __shared__ int si[T][8];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int row0 = (blockIdx.x * 8 + warp) * LM_ROWS;
    float acc[LM_ROWS][T];
#pragma unroll
    for (int r = 0; r < LM_ROWS; ++r)
#pragma unroll
        for (int t = 0; t < T; ++t) acc[r][t] = 0.0f;
    if (row0 < rows) rows_dot_lane<LM_ROWS, T>(W + (size_t)row0 * cols, cols, rows - row0, x, cols >> 3, lane, 32, acc);
#pragma unroll
    for (int t = 0; t < T; ++t) {
        float bv = -INFINITY;
        int bi = 0x7fffffff;
#pragma unroll
        for (int r = 0; r < LM_ROWS; ++r) {
            const float s = warp_sum(acc[r][t]);
            if (row0 + r < rows && better(s, row0 + r, bv, bi)) { bv = s; bi = row0 + r; }
        }
        if (lane == 0) { sv[t][warp] = bv; si[t][warp] = bi; }
    }
    __syncthreads();
    if (warp < T) {
        float v = lane < 8 ? sv[warp][lane] : -INFINITY;
        int i = lane < 8 ? si[warp][lane] : 0x7fffffff;
        warp_argmax(v, i);
        if (lane == 0) {
            part_val[(size_t)warp * gridDim.x + blockIdx.x] = v;
            part_idx[(size_t)warp * gridDim.x + blockIdx.x] = i;
        }
    }
}

#define LM_HEAD(T)                                                                                  \
    extern "C" __global__ void __launch_bounds__(256) lm_head_argmax_t##T(                          \
        const bf16* __restrict__ W, const float* __restrict__ x, int rows, int cols,                \
        float* __restrict__ part_val, int* __restrict__ part_idx) {                                 \
        pdl_begin();                                                                                \
        lm_head_body<T>(W, x, rows, cols, part_val, part_idx);                                      \
    }
LM_HEAD(1) LM_HEAD(2) LM_HEAD(3) LM_HEAD(4) LM_HEAD(5) LM_HEAD(6) LM_HEAD(7) LM_HEAD(8)

// One block per position t: out[t] = index of the maximum of vals[t][0..n). When idx is null
// the position in the row is the index (a plain argmax over logits).
extern "C" __global__ void argmax_reduce(const float* __restrict__ vals, const int* __restrict__ idx,
                                         int n, int* __restrict__ out) {
    pdl_begin();
    __shared__ float sv[32];
    __shared__ int si[32];
    const float* v_row = vals + (size_t)blockIdx.x * n;
    const int* i_row = idx ? idx + (size_t)blockIdx.x * n : nullptr;
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        const float v = v_row[j];
        const int i = i_row ? i_row[j] : j;
        if (better(v, i, bv, bi)) { bv = v; bi = i; }
    }
    warp_argmax(bv, bi);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) { sv[warp] = bv; si[warp] = bi; }
    __syncthreads();
    if (warp == 0) {
        const int nwarps = blockDim.x >> 5;
        bv = lane < nwarps ? sv[lane] : -INFINITY;
        bi = lane < nwarps ? si[lane] : 0x7fffffff;
        warp_argmax(bv, bi);
        if (lane == 0) out[blockIdx.x] = bi;
    }
}

// The end of a plain step: its token becomes the next step's input and is kept in the token
// history at the next position, and the round's position advances, all on the device, so
// that the host queues the next step without reading this one's token first.
extern "C" __global__ void feed_next(const int* __restrict__ tok_out, int* __restrict__ tok_in,
                                     int* __restrict__ history, int history_len, int* __restrict__ base) {
    pdl_begin();
    const int next = *base + 1, token = tok_out[0];
    tok_in[0] = token;
    if (next < history_len) history[next] = token;
    *base = next;
}
