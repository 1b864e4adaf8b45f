// Embedding gather: out[t] = table[ids[t]] widened to fp32. The ids live on the device so that
// a captured decode round reads the token chosen by the previous round's argmax.

extern "C" __global__ void embed_gather(const bf16* __restrict__ table, const int* __restrict__ ids,
                                        float* __restrict__ out, int hidden) {
    pdl_begin();
    const int t = blockIdx.y;
    const uint4* row = reinterpret_cast<const uint4*>(table + (size_t)ids[t] * hidden);
    float4* dst = reinterpret_cast<float4*>(out + (size_t)t * hidden);
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < hidden / 8; c += gridDim.x * blockDim.x) {
        float f[8];
        unpack8(__ldg(row + c), f);
        dst[2 * c] = make_float4(f[0], f[1], f[2], f[3]);
        dst[2 * c + 1] = make_float4(f[4], f[5], f[6], f[7]);
    }
}
