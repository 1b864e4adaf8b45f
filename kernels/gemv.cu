// bf16 GEMV for decode and speculative verify: y[t] = W x[t] (+ y[t] when accumulate), for
// T = 1..8 positions sharing one read of W [rows][cols] (row-major bf16, cols a multiple of 8).
// A block per four rows, its threads splitting the columns, so that even a 2048-row
// projection spreads over 512 blocks; the activations are loaded once for the four rows. The
// engine gives a block as many warps (up to 8) as let each thread load its chunks of the four
// rows in one batch of GEMV_BATCH chunks a row, one trip to memory: 4 warps for 2048
// columns, 8 for 4096. Accumulation is fp32; `accumulate` folds the residual add into the
// projection.

// GEMV_ROWS, GEMV_BATCH, gemv_prologue and gemv_body are in common.cuh (the MoE's output
// projection with the router, kernels/moe.cu, runs them too).

#define GEMV(T)                                                                                     \
    extern "C" __global__ void __launch_bounds__(256) gemv_f32_t##T(                                \
        const bf16* __restrict__ W, const float* __restrict__ x, float* __restrict__ y, int rows,   \
        int cols, int accumulate, int early) {                                                      \
        gemv_prologue(W, rows, cols, blockIdx.x * GEMV_ROWS, early);                                \
        gemv_body<T>(W, x, y, rows, cols, accumulate, blockIdx.x * GEMV_ROWS, early);               \
    }                                                                                               \
    extern "C" __global__ void __launch_bounds__(256) gemv_bf16_t##T(                               \
        const bf16* __restrict__ W, const bf16* __restrict__ x, float* __restrict__ y, int rows,    \
        int cols, int accumulate, int early) {                                                      \
        gemv_prologue(W, rows, cols, blockIdx.x * GEMV_ROWS, early);                                \
        gemv_body<T>(W, x, y, rows, cols, accumulate, blockIdx.x * GEMV_ROWS, early);               \
    }
GEMV(1) GEMV(2) GEMV(3) GEMV(4) GEMV(5) GEMV(6) GEMV(7) GEMV(8)

// Up to four projections of one fp32 input in one launch (a GDN layer's q||k||v, z, b and a;
// an attention layer's q, k and v): segment s is rows [e(s-1), e(s)) of the virtual
// concatenation, its weights Ws [rows_s][cols] and its output ys [T][rows_s] apart in memory.
// Segment ends are multiples of GEMV_ROWS, so that a block stays inside one segment; an unused
// segment repeats the previous end. gemv_multi_norm_t* first RMS-normalises the input,
// x/rms·(1+nw) (the layer's input norm, folded in: see FoldedNorm); gemv_multi_t* ignores nw.
template <int T, bool FOLD>
__device__ __forceinline__ void gemv_multi_body(const bf16* W0, const bf16* W1, const bf16* W2, const bf16* W3,
                                                float* y0, float* y1, float* y2, float* y3, int e0, int e1,
                                                int e2, int e3, const float* __restrict__ x, int cols,
                                                const bf16* __restrict__ nw, float eps, int early) {
    const int row = blockIdx.x * GEMV_ROWS;
    const int s = row < e0 ? 0 : row < e1 ? 1 : row < e2 ? 2 : 3;
    const bf16* W = s == 0 ? W0 : s == 1 ? W1 : s == 2 ? W2 : W3;
    float* y = s == 0 ? y0 : s == 1 ? y1 : s == 2 ? y2 : y3;
    const int begin = s == 0 ? 0 : s == 1 ? e0 : s == 2 ? e1 : e2;
    const int end = s == 0 ? e0 : s == 1 ? e1 : s == 2 ? e2 : e3;
    gemv_prologue(W, end - begin, cols, row - begin, early);
    gemv_body<T, FOLD>(W, x, y, end - begin, cols, 0, row - begin, early, nw, eps);
}

#define GEMV_MULTI(NAME, T, FOLD)                                                                   \
    extern "C" __global__ void __launch_bounds__(256) NAME##_t##T(                                  \
        const bf16* __restrict__ W0, const bf16* __restrict__ W1, const bf16* __restrict__ W2,      \
        const bf16* __restrict__ W3, float* y0, float* y1, float* y2, float* y3, int e0, int e1,    \
        int e2, int e3, const float* __restrict__ x, int cols, const bf16* __restrict__ nw,         \
        float eps, int early) {                                                                     \
        gemv_multi_body<T, FOLD>(W0, W1, W2, W3, y0, y1, y2, y3, e0, e1, e2, e3, x, cols, nw, eps,  \
                                 early);                                                            \
    }
#define GEMV_MULTI_BOTH(T) GEMV_MULTI(gemv_multi, T, false) GEMV_MULTI(gemv_multi_norm, T, true)
GEMV_MULTI_BOTH(1) GEMV_MULTI_BOTH(2) GEMV_MULTI_BOTH(3) GEMV_MULTI_BOTH(4)
GEMV_MULTI_BOTH(5) GEMV_MULTI_BOTH(6) GEMV_MULTI_BOTH(7) GEMV_MULTI_BOTH(8)
