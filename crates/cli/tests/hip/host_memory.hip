// Host memory the GPU may reach: managed memory (hipMallocManaged, with
// advice and prefetch), registered host memory (hipHostRegister, used
// through the device pointer HIP gives for it, then unregistered) and
// mapped pinned memory (hipHostMalloc with hipHostMallocMapped). Results are
// checked against the host's own computation.
#include "common.h"
#include <vector>

__global__ void axpy(float a, const float* x, float* y, int n) {
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g < n) y[g] = a * x[g] + y[g];
}

__global__ void count_up(unsigned* v, int n) {
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g < n) v[g] += (unsigned)g;
}

static void test_managed() {
    const int n = 5000;
    float *x, *y;
    HIP(hipMallocManaged(&x, n * sizeof(float)));
    HIP(hipMallocManaged(&y, n * sizeof(float)));
    std::vector<float> want(n);
    for (int i = 0; i < n; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
        want[i] = 2.0f * i + 1.0f;
    }
    HIP(hipMemAdvise(x, n * sizeof(float), hipMemAdviseSetReadMostly, 0));
    HIP(hipMemPrefetchAsync(x, n * sizeof(float), 0, 0));
    hipLaunchKernelGGL(axpy, dim3((n + 255) / 256), dim3(256), 0, 0, 2.0f, x, y, n);
    HIP(hipDeviceSynchronize());
    check_equal("managed axpy", y, want.data(), n);

    int read_mostly = 0;
    HIP(hipMemRangeGetAttribute(&read_mostly, sizeof read_mostly, hipMemRangeAttributeReadMostly, x,
                                n * sizeof(float)));
    CHECK(read_mostly == 1, "read-mostly attribute %d", read_mostly);
    int last = -2;
    HIP(hipMemRangeGetAttribute(&last, sizeof last, hipMemRangeAttributeLastPrefetchLocation, x,
                                n * sizeof(float)));
    CHECK(last == 0, "last prefetch location %d", last);

    // The host keeps using the memory between kernels.
    for (int i = 0; i < n; i++) y[i] = -y[i];
    hipLaunchKernelGGL(axpy, dim3((n + 255) / 256), dim3(256), 0, 0, 1.0f, x, y, n);
    HIP(hipDeviceSynchronize());
    for (int i = 0; i < n; i++) want[i] = (float)i - want[i];
    check_equal("managed again", y, want.data(), n);
    HIP(hipFree(x));
    HIP(hipFree(y));
}

static void test_registered() {
    const int n = 3000;
    // Ordinary (pageable) memory, not page-aligned on purpose.
    std::vector<unsigned> host(n + 3);
    unsigned* v = host.data() + 3;
    for (int i = 0; i < n; i++) v[i] = 1000u * i;
    HIP(hipHostRegister(v, n * sizeof(unsigned), hipHostRegisterDefault));
    unsigned* dv = nullptr;
    HIP(hipHostGetDevicePointer((void**)&dv, v, 0));
    CHECK(dv != nullptr, "no device pointer");
    hipPointerAttribute_t attr;
    HIP(hipPointerGetAttributes(&attr, v));
    CHECK(attr.memoryType == hipMemoryTypeHost, "memory type %d", (int)attr.memoryType);
    hipLaunchKernelGGL(count_up, dim3((n + 127) / 128), dim3(128), 0, 0, dv, n);
    HIP(hipDeviceSynchronize());
    std::vector<unsigned> want(n);
    for (int i = 0; i < n; i++) want[i] = 1001u * i;
    check_equal("registered", v, want.data(), n);
    // Copies from registered memory go straight to the device.
    unsigned* d;
    HIP(hipMalloc(&d, n * sizeof(unsigned)));
    HIP(hipMemcpy(d, v, n * sizeof(unsigned), hipMemcpyHostToDevice));
    hipLaunchKernelGGL(count_up, dim3((n + 127) / 128), dim3(128), 0, 0, d, n);
    HIP(hipMemcpy(v, d, n * sizeof(unsigned), hipMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) want[i] += i;
    check_equal("registered copies", v, want.data(), n);
    HIP(hipHostUnregister(v));
    HIP(hipFree(d));
}

static void test_mapped_pinned() {
    const int n = 1000;
    unsigned* h;
    HIP(hipHostMalloc((void**)&h, n * sizeof(unsigned), hipHostMallocMapped));
    for (int i = 0; i < n; i++) h[i] = 7;
    unsigned* dh;
    HIP(hipHostGetDevicePointer((void**)&dh, h, 0));
    hipLaunchKernelGGL(count_up, dim3((n + 127) / 128), dim3(128), 0, 0, dh, n);
    HIP(hipDeviceSynchronize());
    std::vector<unsigned> want(n);
    for (int i = 0; i < n; i++) want[i] = 7u + i;
    check_equal("mapped pinned", h, want.data(), n);
    HIP(hipHostFree(h));
}

int main() {
    int managed = 0;
    HIP(hipDeviceGetAttribute(&managed, hipDeviceAttributeManagedMemory, 0));
    CHECK(managed == 1, "managed memory attribute %d", managed);
    test_managed();
    test_registered();
    test_mapped_pinned();
    return finish("host_memory");
}
