// Cooperative groups: a kernel launched with hipLaunchCooperativeKernel
// synchronises its whole grid with grid.sync() between two phases that
// read each other's results (phase 2 reads what other workgroups wrote in
// phase 1), and a block-level group reduces with thread_block::sync().
#include "common.h"
#include <hip/hip_cooperative_groups.h>
#include <vector>

namespace cg = cooperative_groups;

// Phase 1: partial[b] = sum of block b's inputs. Phase 2: out[g] = in[g] * total.
__global__ void normalise(const int* in, int* partial, long long* out, int n) {
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    __shared__ int part[128];
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    part[threadIdx.x] = g < n ? in[g] : 0;
    block.sync();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        block.sync();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = part[0];
    grid.sync();
    long long total = 0;
    for (int b = 0; b < gridDim.x; b++) total += partial[b];
    if (g < n) out[g] = (long long)in[g] * total;
}

int main() {
    int coop = 0;
    HIP(hipDeviceGetAttribute(&coop, hipDeviceAttributeCooperativeLaunch, 0));
    CHECK(coop == 1, "cooperative launch attribute %d", coop);
    const int blocks = 8, threads = 128, n = blocks * threads - 5;
    int blocks_per_cu = 0;
    HIP(hipOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_cu, normalise, threads, 0));
    CHECK(blocks_per_cu >= 1, "%d blocks per CU", blocks_per_cu);
    std::vector<int> in(n);
    long long total = 0;
    for (int i = 0; i < n; i++) {
        in[i] = i % 13 - 6;
        total += in[i];
    }
    int *d_in, *d_partial;
    long long* d_out;
    HIP(hipMalloc(&d_in, n * sizeof(int)));
    HIP(hipMalloc(&d_partial, blocks * sizeof(int)));
    HIP(hipMalloc(&d_out, n * sizeof(long long)));
    HIP(hipMemcpy(d_in, in.data(), n * sizeof(int), hipMemcpyHostToDevice));
    int count = n;
    void* args[] = {&d_in, &d_partial, &d_out, &count};
    HIP(hipLaunchCooperativeKernel(reinterpret_cast<const void*>(&normalise), dim3(blocks),
                                   dim3(threads), args, 0, 0));
    std::vector<long long> out(n), want(n);
    HIP(hipMemcpy(out.data(), d_out, n * sizeof(long long), hipMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) want[i] = (long long)in[i] * total;
    check_equal("grid-synchronised", out.data(), want.data(), n);
    HIP(hipFree(d_in));
    HIP(hipFree(d_partial));
    HIP(hipFree(d_out));
    return finish("cooperative");
}
