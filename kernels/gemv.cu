// bf16 GEMV for decode and speculative verify: y[t] = W x[t] (+ y[t] when accumulate), for
// T = 1..8 positions sharing one read of W [rows][cols] (row-major bf16, cols a multiple of 8).
// A block of up to 256 threads per four rows, its threads splitting the columns, so that
// even a 2048-row projection spreads over 512 blocks; the activations are loaded once for
// the four rows. Accumulation is fp32; `accumulate` folds the residual add into the projection.

#define GEMV_ROWS 4

template <int T, typename XT>
__device__ __forceinline__ void gemv_body(const bf16* __restrict__ W, const XT* __restrict__ x,
                                          float* __restrict__ y, int rows, int cols, int accumulate) {
    const int row0 = blockIdx.x * GEMV_ROWS;
    float acc[GEMV_ROWS][T];
#pragma unroll
    for (int r = 0; r < GEMV_ROWS; ++r)
#pragma unroll
        for (int t = 0; t < T; ++t) acc[r][t] = 0.0f;
    rows_dot_lane<GEMV_ROWS, T>(W + (size_t)row0 * cols, cols, rows - row0, x, cols >> 3, threadIdx.x, blockDim.x, acc);
    float s;
    block_sum_rows(acc, &s);
    const int r = threadIdx.x / T, t = threadIdx.x % T;
    if (threadIdx.x < GEMV_ROWS * T && row0 + r < rows) {
        float* dst = y + (size_t)t * rows + row0 + r;
        *dst = accumulate ? *dst + s : s;
    }
}

#define GEMV(T)                                                                                     \
    extern "C" __global__ void __launch_bounds__(256) gemv_f32_t##T(                                \
        const bf16* __restrict__ W, const float* __restrict__ x, float* __restrict__ y, int rows,   \
        int cols, int accumulate) {                                                                 \
        gemv_body<T>(W, x, y, rows, cols, accumulate);                                              \
    }                                                                                               \
    extern "C" __global__ void __launch_bounds__(256) gemv_bf16_t##T(                               \
        const bf16* __restrict__ W, const bf16* __restrict__ x, float* __restrict__ y, int rows,    \
        int cols, int accumulate) {                                                                 \
        gemv_body<T>(W, x, y, rows, cols, accumulate);                                              \
    }
GEMV(1) GEMV(2) GEMV(3) GEMV(4) GEMV(5) GEMV(6) GEMV(7) GEMV(8)
