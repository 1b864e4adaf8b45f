// Chunked prefill projections: Y[T][N] = X[T][K] W[N][K]^T (+ Y when accumulate), X fp32,
// W bf16, fp32 accumulate. A 64x64 output tile per block of 256 threads, 4x4 outputs per
// thread, K in steps of 32 through shared memory (padded rows avoid bank conflicts).

#define TILE 64
#define KSTEP 32

extern "C" __global__ void __launch_bounds__(256) gemm_bf16(const float* __restrict__ X,
                                                            const bf16* __restrict__ W,
                                                            float* __restrict__ Y, int T, int N,
                                                            int K, int accumulate) {
    __shared__ float xs[KSTEP][TILE + 1];
    __shared__ float ws[KSTEP][TILE + 1];
    const int t0 = blockIdx.y * TILE, n0 = blockIdx.x * TILE;
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += KSTEP) {
        // 64 rows x 32 columns of X and of W: 2048 values each, 8 per thread.
        for (int e = threadIdx.x; e < TILE * KSTEP; e += 256) {
            const int r = e / KSTEP, c = e % KSTEP;
            const int k = k0 + c;
            xs[c][r] = (t0 + r < T && k < K) ? X[(size_t)(t0 + r) * K + k] : 0.0f;
            ws[c][r] = (n0 + r < N && k < K) ? __bfloat162float(W[(size_t)(n0 + r) * K + k]) : 0.0f;
        }
        __syncthreads();
#pragma unroll 8
        for (int c = 0; c < KSTEP; ++c) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) { a[i] = xs[c][ty + 16 * i]; b[i] = ws[c][tx + 16 * i]; }
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int t = t0 + ty + 16 * i;
        if (t >= T) continue;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int n = n0 + tx + 16 * j;
            if (n >= N) continue;
            float* dst = Y + (size_t)t * N + n;
            *dst = accumulate ? *dst + acc[i][j] : acc[i][j];
        }
    }
}
