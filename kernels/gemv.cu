// bf16 GEMV for decode and speculative verify: y[t] = W x[t] (+ y[t] when accumulate), for
// T = 1..8 positions sharing one read of W [rows][cols] (row-major bf16, cols a multiple of 8).
// A block of up to 256 threads per four rows, its threads splitting the columns, so that
// even a 2048-row projection spreads over 512 blocks; the activations are loaded once for
// the four rows. Accumulation is fp32; `accumulate` folds the residual add into the projection.

#define GEMV_ROWS 4

template <int T, typename XT>
__device__ __forceinline__ void gemv_body(const bf16* __restrict__ W, const XT* __restrict__ x,
                                          float* __restrict__ y, int rows, int cols, int accumulate,
                                          int row0) {
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
        gemv_body<T>(W, x, y, rows, cols, accumulate, blockIdx.x * GEMV_ROWS);                                              \
    }                                                                                               \
    extern "C" __global__ void __launch_bounds__(256) gemv_bf16_t##T(                               \
        const bf16* __restrict__ W, const bf16* __restrict__ x, float* __restrict__ y, int rows,    \
        int cols, int accumulate) {                                                                 \
        gemv_body<T>(W, x, y, rows, cols, accumulate, blockIdx.x * GEMV_ROWS);                                              \
    }
GEMV(1) GEMV(2) GEMV(3) GEMV(4) GEMV(5) GEMV(6) GEMV(7) GEMV(8)

// Up to four projections of one fp32 input in one launch (a GDN layer's q||k||v, z, b and a;
// an attention layer's q, k and v): segment s is rows [e(s-1), e(s)) of the virtual
// concatenation, its weights Ws [rows_s][cols] and its output ys [T][rows_s] apart in memory.
// Segment ends are multiples of GEMV_ROWS, so that a block stays inside one segment; an unused
// segment repeats the previous end.
#define GEMV_MULTI(T)                                                                               \
    extern "C" __global__ void __launch_bounds__(256) gemv_multi_t##T(                              \
        const bf16* __restrict__ W0, const bf16* __restrict__ W1, const bf16* __restrict__ W2,      \
        const bf16* __restrict__ W3, float* y0, float* y1, float* y2, float* y3, int e0, int e1,    \
        int e2, int e3, const float* __restrict__ x, int cols) {                                    \
        const int row = blockIdx.x * GEMV_ROWS;                                                     \
        if (row < e0) gemv_body<T>(W0, x, y0, e0, cols, 0, row);                                    \
        else if (row < e1) gemv_body<T>(W1, x, y1, e1 - e0, cols, 0, row - e0);                     \
        else if (row < e2) gemv_body<T>(W2, x, y2, e2 - e1, cols, 0, row - e1);                     \
        else if (row < e3) gemv_body<T>(W3, x, y3, e3 - e2, cols, 0, row - e2);                     \
    }
GEMV_MULTI(1) GEMV_MULTI(2) GEMV_MULTI(3) GEMV_MULTI(4) GEMV_MULTI(5) GEMV_MULTI(6) GEMV_MULTI(7) GEMV_MULTI(8)
