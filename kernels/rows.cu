// Row plumbing of the model's blocks that the projection kernels do not cover, each one
// launch over all T rows (so a decode round stays a short graph).

// out[t] = a[t] || b[t]: the MTP fc input. Grid (ceil((wa+wb)/256), T).
extern "C" __global__ void concat_rows(const float* __restrict__ a, const float* __restrict__ b,
                                       float* __restrict__ out, int wa, int wb) {
    pdl_begin();
    const int t = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= wa + wb) return;
    out[(size_t)t * (wa + wb) + i] = i < wa ? a[(size_t)t * wa + i] : b[(size_t)t * wb + i - wa];
}

// The q projection holds per head the query then its gate ([T][H][2D]); the attention
// kernels take them apart: q, gate [T][H][D]. Grid (ceil(H*D/256), T).
extern "C" __global__ void split_query_gate(const float* __restrict__ qg, float* __restrict__ q,
                                            float* __restrict__ gate, int heads, int D) {
    pdl_begin();
    const int t = blockIdx.y, i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= heads * D) return;
    const int h = i / D, d = i % D;
    const float* src = qg + ((size_t)t * heads + h) * 2 * D;
    q[(size_t)t * heads * D + i] = src[d];
    gate[(size_t)t * heads * D + i] = src[D + d];
}

// The dense SwiGLU activation in place: g = silu(g) * u over n values.
extern "C" __global__ void swiglu_act(float* __restrict__ g, const float* __restrict__ u, int n) {
    pdl_begin();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) g[i] = silu(g[i]) * u[i];
}
