// RMSNorm over rows of length n, one block per row, eps given by the caller (1e-6 in the model):
//   y = x / sqrt(mean(x^2) + eps) * (w_offset + w)            (w_offset 1: the zero-centred kind)
//   y = ... * silu(z)  when z is not null                      (the GDN gated norm, w_offset 0)
// A row is short (a 2048-wide hidden state, a 128-wide head), so the kernel is bound by
// latency: rows with n a multiple of 4 are read in 16-byte loads, two per thread at n = 2048.

__device__ __forceinline__ float norm_one(float x, bf16 w, const float* zr, int i, float inv, float w_offset) {
    float v = x * inv * (w_offset + __bfloat162float(w));
    return zr != nullptr ? v * silu(zr[i]) : v;
}

extern "C" __global__ void rmsnorm(const float* __restrict__ x, const bf16* __restrict__ w,
                                   const float* __restrict__ z, float* __restrict__ y, int n,
                                   float eps, float w_offset) {
    pdl_begin();
    __shared__ float scratch[32];
    const size_t row = (size_t)blockIdx.x * n;
    const float* xr = x + row;
    const float* zr = z != nullptr ? z + row : nullptr;
    float* yr = y + row;
    if ((n & 3) == 0) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        float ss = 0.0f;
        for (int i = threadIdx.x; i < n / 4; i += blockDim.x) {
            const float4 v = x4[i];
            ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
        }
        const float inv = rsqrtf(block_sum(ss, scratch) / (float)n + eps);
        for (int i = threadIdx.x; i < n / 4; i += blockDim.x) {
            const float4 v = x4[i];
            float4 o;
            o.x = norm_one(v.x, w[4 * i], zr, 4 * i, inv, w_offset);
            o.y = norm_one(v.y, w[4 * i + 1], zr, 4 * i + 1, inv, w_offset);
            o.z = norm_one(v.z, w[4 * i + 2], zr, 4 * i + 2, inv, w_offset);
            o.w = norm_one(v.w, w[4 * i + 3], zr, 4 * i + 3, inv, w_offset);
            reinterpret_cast<float4*>(yr)[i] = o;
        }
        return;
    }
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
    const float inv = rsqrtf(block_sum(ss, scratch) / (float)n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) yr[i] = norm_one(xr[i], w[i], zr, i, inv, w_offset);
}
