// Chunked prefill projections run on the tensor cores through cuBLAS (bf16 products, fp32
// accumulation). The fp32 activations are first split into three bf16 terms x = hi + mid + lo,
// each the bf16 rounding of what the terms before it leave: W is bf16-exact and a bf16 x bf16
// product is exact in fp32, so the three GEMMs summed in fp32 reproduce an fp32-input product
// to fp32 rounding (one bf16 term alone would cost ~3 significant digits).

// out[0..n) = hi, out[n..2n) = mid, out[2n..3n) = lo. Grid-stride over n values.
extern "C" __global__ void split_bf16x3(const float* __restrict__ x, bf16* __restrict__ out, long long n) {
    pdl_begin();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const float v = x[i];
        const bf16 hi = __float2bfloat16_rn(v);
        const float r1 = v - __bfloat162float(hi);
        const bf16 mid = __float2bfloat16_rn(r1);
        out[i] = hi;
        out[n + i] = mid;
        out[2 * n + i] = __float2bfloat16_rn(r1 - __bfloat162float(mid));
    }
}
