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

// What it costs a decode stage to wait for the one before, both ways, with and without the
// one handoff every real stage has (reading, after its wait, a value another block wrote
// before it: `in` or `data` not null). The handoffs also check the wait:
//   stage_step:    a kernel that only waits; with `in`, thread 0 of each block writes one more
//                  than another block's value of the launch before, so after n launches from
//                  zeros every value is n unless a launch read one too early. A graph of them,
//                  launched with dependent launch, costs per launch what the decode chain pays
//                  between two stages.
//   grid_barriers: `rounds` grid-wide barriers inside one launch of one block per SM (thread 0
//                  of each block adds itself to `count` with release semantics and spins until
//                  the round's every block has, with acquire), the alternative a persistent
//                  decode kernel would pay. With `data` (zeros), each block writes the round
//                  into its slot before the barrier and, after it, counts the rounds in which
//                  another block's slot still held an older one into data[gridDim.x + block]:
//                  zero unless the barrier let it through early. `count` starts at 0.
extern "C" __global__ void stage_step(const unsigned* in, unsigned* out) {
    pdl_begin();
    if (in != nullptr && threadIdx.x == 0) out[blockIdx.x] = __ldcg(in + (blockIdx.x + 1) % gridDim.x) + 1;
}

extern "C" __global__ void grid_barriers(unsigned* count, unsigned* data, int rounds) {
    pdl_begin();
    unsigned early = 0;
    for (int r = 1; r <= rounds; ++r) {
        __syncthreads();
        if (threadIdx.x == 0) {
            if (data != nullptr) __stcg(data + blockIdx.x, (unsigned)r);
            asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(count) : "memory");
            unsigned seen;
            do {
                asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(count) : "memory");
            } while (seen < (unsigned)r * gridDim.x);
            if (data != nullptr) early += __ldcg(data + (blockIdx.x + 1) % gridDim.x) < (unsigned)r;
        }
        __syncthreads();
    }
    if (data != nullptr && threadIdx.x == 0) data[gridDim.x + blockIdx.x] = early;
}
