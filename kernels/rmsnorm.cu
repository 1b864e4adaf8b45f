// RMSNorm over rows of length n, one block per row, eps given by the caller (1e-6 in the model):
//   y = x / sqrt(mean(x^2) + eps) * (w_offset + w)            (w_offset 1: the zero-centred kind)
//   y = ... * silu(z)  when z is not null                      (the GDN gated norm, w_offset 0)

extern "C" __global__ void rmsnorm(const float* __restrict__ x, const bf16* __restrict__ w,
                                   const float* __restrict__ z, float* __restrict__ y, int n,
                                   float eps, float w_offset) {
    __shared__ float scratch[32];
    const float* xr = x + (size_t)blockIdx.x * n;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
    const float inv = rsqrtf(block_sum(ss, scratch) / (float)n + eps);
    float* yr = y + (size_t)blockIdx.x * n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = xr[i] * inv * (w_offset + __bfloat162float(w[i]));
        if (z != nullptr) v *= silu(z[(size_t)blockIdx.x * n + i]);
        yr[i] = v;
    }
}
