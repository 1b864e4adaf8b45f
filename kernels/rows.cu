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

// The dense SwiGLU activation in place: g = silu(g) * u over n values.
extern "C" __global__ void swiglu_act(float* __restrict__ g, const float* __restrict__ u, int n) {
    pdl_begin();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) g[i] = silu(g[i]) * u[i];
}
