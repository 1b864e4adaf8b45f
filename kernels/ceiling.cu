// The read ceiling: a plain float4 grid-stride read over a large non-zero buffer. The sum is
// written per block so that the compiler cannot drop the loads.

extern "C" __global__ void read_ceiling(const float4* __restrict__ data, u64 n, float* __restrict__ sink) {
    pdl_begin();
    float s = 0.0f;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const float4 a = __ldcs(data + i), b = __ldcs(data + i + stride);
        const float4 c = __ldcs(data + i + 2 * stride), d = __ldcs(data + i + 3 * stride);
        s += (a.x + a.y + a.z + a.w) + (b.x + b.y + b.z + b.w) + (c.x + c.y + c.z + c.w) + (d.x + d.y + d.z + d.w);
    }
    for (; i < n; i += stride) {
        const float4 a = __ldcs(data + i);
        s += a.x + a.y + a.z + a.w;
    }
    s = warp_sum(s);
    if ((threadIdx.x & 31) == 0) atomicAdd(sink + blockIdx.x, s);
}
