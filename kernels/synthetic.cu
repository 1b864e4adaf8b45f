// Synthetic weights: a counter-based hash of (seed, tensor key, index), identical to the CPU
// backend's, so both backends run the same model without a checkpoint.
// Compiled without fast math, and with explicit round-to-nearest operations, so that every
// value is bit-identical to the host's `offset + scale * (2u - 1)` in f32.

__device__ __forceinline__ u64 mix64(u64 z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

extern "C" __global__ void synthetic_fill_bf16(bf16* __restrict__ out, u64 n, u64 seed, u64 key,
                                               float offset, float scale) {
    pdl_wait_only();
    const u64 base = seed * 0x9E3779B97F4A7C15ull ^ key;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u64 h = mix64(base ^ i * 0xD1B54A32D192ED03ull);
        const float u = (float)(h >> 40) / 16777216.0f;
        const float two_u_minus_1 = __fsub_rn(__fmul_rn(2.0f, u), 1.0f);
        out[i] = __float2bfloat16_rn(__fadd_rn(offset, __fmul_rn(scale, two_u_minus_1)));
    }
}

// The identity term of a synthetic matrix [rows][cols]: w[i][i] += identity for i <
// min(rows, cols), rounded to bf16 as the host does (round(v + identity)).
extern "C" __global__ void synthetic_add_identity(bf16* __restrict__ w, int rows, int cols, float identity) {
    pdl_wait_only();
    const int n = rows < cols ? rows : cols;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        bf16* p = w + (size_t)i * cols + i;
        *p = __float2bfloat16_rn(__fadd_rn(__bfloat162float(*p), identity));
    }
}
