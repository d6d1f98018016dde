// HIP's runtime API on the common paths: streams, events, synchronous and
// asynchronous copies from pageable and pinned host memory, memsets, shared
// memory, atomics, a 2-D grid, pitched allocations with 2-D copies, and a
// kernel launched through its host-side handle. Every result is compared
// with the same computation on the host.
#include "common.h"
#include <vector>

// Sum of each block's 256 inputs, by a tree in shared memory.
__global__ void block_sums(const float* in, float* out, int n) {
    __shared__ float part[256];
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    part[threadIdx.x] = g < n ? in[g] : 0.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

// A histogram of `data % bins` with global atomics, and the total with a float atomic.
__global__ void histogram(const unsigned* data, int n, unsigned* bins, int nbins, float* total) {
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g < n) {
        atomicAdd(&bins[data[g] % nbins], 1u);
        atomicAdd(total, 0.5f);
    }
}

// out(x, y) = in(y, x) for a w × h matrix, one thread per element of a 2-D grid.
__global__ void transpose(const int* in, int* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) out[x * h + y] = in[y * w + x];
}

// Adds 1 to every element of a pitched w × h matrix of floats.
__global__ void add_one_pitched(float* m, size_t pitch, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    if (x < w && y < h) {
        float* row = (float*)((char*)m + y * pitch);
        row[x] += 1.0f;
    }
}

__global__ void scale(float* v, float s, int n) {
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g < n) v[g] *= s;
}

static void test_streams_events_and_copies() {
    const int n = 4096;
    std::vector<float> in(n), want(n / 256, 0.0f);
    for (int i = 0; i < n; i++) {
        in[i] = (float)(i % 97) - 40.0f;  // partial sums stay exact in float
        want[i / 256] += in[i];
    }
    float *d_in, *d_out, *pinned;
    HIP(hipMalloc(&d_in, n * sizeof(float)));
    HIP(hipMalloc(&d_out, n / 256 * sizeof(float)));
    HIP(hipHostMalloc((void**)&pinned, n / 256 * sizeof(float), hipHostMallocDefault));
    hipStream_t s1, s2;
    HIP(hipStreamCreate(&s1));
    HIP(hipStreamCreateWithFlags(&s2, hipStreamNonBlocking));
    hipEvent_t start, copied, done;
    HIP(hipEventCreate(&start));
    HIP(hipEventCreate(&copied));
    HIP(hipEventCreate(&done));

    HIP(hipEventRecord(start, s1));
    // Pageable source: HIP stages or pins it.
    HIP(hipMemcpyAsync(d_in, in.data(), n * sizeof(float), hipMemcpyHostToDevice, s1));
    HIP(hipEventRecord(copied, s1));
    // The second stream waits for the copy through the event.
    HIP(hipStreamWaitEvent(s2, copied, 0));
    hipLaunchKernelGGL(block_sums, dim3(n / 256), dim3(256), 0, s2, d_in, d_out, n);
    HIP(hipGetLastError());
    HIP(hipMemcpyAsync(pinned, d_out, n / 256 * sizeof(float), hipMemcpyDeviceToHost, s2));
    HIP(hipEventRecord(done, s2));
    HIP(hipEventSynchronize(done));
    CHECK(hipEventQuery(done) == hipSuccess, "event not complete after synchronize");
    check_equal("block_sums", pinned, want.data(), n / 256);

    float ms = -1;
    HIP(hipEventElapsedTime(&ms, start, done));
    CHECK(ms > 0 && ms < 60000, "elapsed time %f ms", ms);

    // Device to device, then back to pageable memory with the synchronous copy.
    float* d_copy;
    HIP(hipMalloc(&d_copy, n * sizeof(float)));
    HIP(hipMemcpy(d_copy, d_in, n * sizeof(float), hipMemcpyDeviceToDevice));
    hipLaunchKernelGGL(scale, dim3(n / 256), dim3(256), 0, 0, d_copy, 2.0f, n);
    std::vector<float> back(n), twice(n);
    HIP(hipMemcpy(back.data(), d_copy, n * sizeof(float), hipMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) twice[i] = 2.0f * in[i];
    check_equal("scale", back.data(), twice.data(), n);

    HIP(hipStreamSynchronize(s1));
    HIP(hipStreamDestroy(s1));
    HIP(hipStreamDestroy(s2));
    HIP(hipEventDestroy(start));
    HIP(hipEventDestroy(copied));
    HIP(hipEventDestroy(done));
    HIP(hipFree(d_in));
    HIP(hipFree(d_out));
    HIP(hipFree(d_copy));
    HIP(hipHostFree(pinned));
}

static void test_memsets_and_atomics() {
    const int n = 10000, nbins = 37;
    std::vector<unsigned> data(n);
    std::vector<unsigned> want(nbins, 1000u);  // memset below starts every bin at 1000
    for (int i = 0; i < n; i++) {
        data[i] = (unsigned)(i * 2654435761u);
        want[data[i] % nbins]++;
    }
    unsigned *d_data, *d_bins;
    float* d_total;
    HIP(hipMalloc(&d_data, n * sizeof(unsigned)));
    HIP(hipMalloc(&d_bins, nbins * sizeof(unsigned)));
    HIP(hipMalloc(&d_total, sizeof(float)));
    HIP(hipMemcpy(d_data, data.data(), n * sizeof(unsigned), hipMemcpyHostToDevice));
    HIP(hipMemsetD32((hipDeviceptr_t)d_bins, 1000, nbins));
    HIP(hipMemsetAsync(d_total, 0, sizeof(float), 0));
    hipLaunchKernelGGL(histogram, dim3((n + 255) / 256), dim3(256), 0, 0, d_data, n, d_bins, nbins,
                       d_total);
    std::vector<unsigned> bins(nbins);
    float total = 0;
    HIP(hipMemcpy(bins.data(), d_bins, nbins * sizeof(unsigned), hipMemcpyDeviceToHost));
    HIP(hipMemcpy(&total, d_total, sizeof(float), hipMemcpyDeviceToHost));
    check_equal("histogram", bins.data(), want.data(), nbins);
    CHECK(total == 0.5f * n, "float atomic total %f", total);

    // Byte memset of an odd length and offset.
    unsigned char* d_bytes;
    HIP(hipMalloc(&d_bytes, 1000));
    HIP(hipMemset(d_bytes, 0x11, 1000));
    HIP(hipMemset(d_bytes + 3, 0xab, 501));
    std::vector<unsigned char> bytes(1000), want_bytes(1000, 0x11);
    for (int i = 3; i < 504; i++) want_bytes[i] = 0xab;
    HIP(hipMemcpy(bytes.data(), d_bytes, 1000, hipMemcpyDeviceToHost));
    check_equal("memset", bytes.data(), want_bytes.data(), 1000);
    HIP(hipFree(d_data));
    HIP(hipFree(d_bins));
    HIP(hipFree(d_total));
    HIP(hipFree(d_bytes));
}

static void test_2d_grid_and_pitched() {
    const int w = 67, h = 45;
    std::vector<int> m(w * h), want(w * h), got(w * h);
    for (int i = 0; i < w * h; i++) m[i] = i * 7 - 300;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) want[x * h + y] = m[y * w + x];
    int *d_in, *d_out;
    HIP(hipMalloc(&d_in, w * h * sizeof(int)));
    HIP(hipMalloc(&d_out, w * h * sizeof(int)));
    HIP(hipMemcpy(d_in, m.data(), w * h * sizeof(int), hipMemcpyHostToDevice));
    dim3 block(16, 8), grid((w + 15) / 16, (h + 7) / 8);
    hipLaunchKernelGGL(transpose, grid, block, 0, 0, d_in, d_out, w, h);
    HIP(hipMemcpy(got.data(), d_out, w * h * sizeof(int), hipMemcpyDeviceToHost));
    check_equal("transpose", got.data(), want.data(), w * h);
    HIP(hipFree(d_in));
    HIP(hipFree(d_out));

    // A pitched matrix: rows padded by HIP, copied in and out by rows.
    const int pw = 50, ph = 20;
    std::vector<float> host(pw * ph), back(pw * ph), plus(pw * ph);
    for (int i = 0; i < pw * ph; i++) {
        host[i] = (float)i * 0.25f;
        plus[i] = host[i] + 1.0f;
    }
    float* d_m;
    size_t pitch = 0;
    HIP(hipMallocPitch((void**)&d_m, &pitch, pw * sizeof(float), ph));
    CHECK(pitch >= pw * sizeof(float) && pitch % 4 == 0, "pitch %zu", pitch);
    HIP(hipMemcpy2D(d_m, pitch, host.data(), pw * sizeof(float), pw * sizeof(float), ph,
                    hipMemcpyHostToDevice));
    hipLaunchKernelGGL(add_one_pitched, dim3(1, ph), dim3(64), 0, 0, d_m, pitch, pw, ph);
    HIP(hipMemcpy2D(back.data(), pw * sizeof(float), d_m, pitch, pw * sizeof(float), ph,
                    hipMemcpyDeviceToHost));
    check_equal("pitched", back.data(), plus.data(), pw * ph);
    HIP(hipFree(d_m));
}

static void test_launch_through_the_kernel_handle() {
    // The host-side handle clang emits with the kernel's mangled name is
    // what <<<>>> launches through; here it is passed explicitly.
    const int n = 300;
    std::vector<float> v(n), want(n);
    for (int i = 0; i < n; i++) {
        v[i] = (float)i;
        want[i] = 3.0f * i;
    }
    float* d;
    HIP(hipMalloc(&d, n * sizeof(float)));
    HIP(hipMemcpy(d, v.data(), n * sizeof(float), hipMemcpyHostToDevice));
    float s = 3.0f;
    int count = n;
    void* args[] = {&d, &s, &count};
    HIP(hipLaunchKernel(reinterpret_cast<const void*>(&scale), dim3((n + 63) / 64), dim3(64), args,
                        0, 0));
    hipFuncAttributes attr;
    HIP(hipFuncGetAttributes(&attr, reinterpret_cast<const void*>(&scale)));
    CHECK(attr.maxThreadsPerBlock >= 64, "maxThreadsPerBlock %d", attr.maxThreadsPerBlock);
    HIP(hipMemcpy(v.data(), d, n * sizeof(float), hipMemcpyDeviceToHost));
    check_equal("launch by handle", v.data(), want.data(), n);
    HIP(hipFree(d));
}

int main() {
    int count = 0;
    HIP(hipGetDeviceCount(&count));
    CHECK(count == 1, "%d devices", count);
    hipDeviceProp_t prop;
    HIP(hipGetDeviceProperties(&prop, 0));
    CHECK(prop.warpSize == 64, "warp size %d", prop.warpSize);
    test_streams_events_and_copies();
    test_memsets_and_atomics();
    test_2d_grid_and_pitched();
    test_launch_through_the_kernel_handle();
    HIP(hipDeviceSynchronize());
    return finish("runtime_api");
}
