// HIP's hostcall end to end: device printf and device malloc/free go
// through a buffer the host's listener thread serves, woken by a signal the
// kernel updates (an atomic at the signal's handle + 8) and an interrupt.
// The test runner checks the printed lines; the program checks the
// allocations.
#include "common.h"

// One line per thread of the first wave, in any order: the runner sorts them.
__global__ void say_hello(int base) {
    int t = threadIdx.x;
    if (t < 8) printf("hello from thread %d: %d squared is %d, %s\n", t, base + t, (base + t) * (base + t), t % 2 ? "odd" : "even");
}

// Each thread allocates an array, fills it, sums it, frees it.
__global__ void alloc_and_sum(int* sums, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int len = 16 + t % 5;
    int* a = (int*)malloc(len * sizeof(int));
    if (a == nullptr) {
        sums[t] = -1;
        return;
    }
    for (int i = 0; i < len; i++) a[i] = t * i;
    int s = 0;
    for (int i = 0; i < len; i++) s += a[i];
    free(a);
    if (t < n) sums[t] = s;
}

int main() {
    hipLaunchKernelGGL(say_hello, dim3(1), dim3(64), 0, 0, 40);
    HIP(hipGetLastError());
    HIP(hipDeviceSynchronize());
    fflush(stdout);

    const int n = 128;
    int* d;
    HIP(hipMalloc(&d, n * sizeof(int)));
    hipLaunchKernelGGL(alloc_and_sum, dim3(n / 64), dim3(64), 0, 0, d, n);
    HIP(hipGetLastError());
    int sums[n], want[n];
    HIP(hipMemcpy(sums, d, sizeof sums, hipMemcpyDeviceToHost));
    for (int t = 0; t < n; t++) {
        int len = 16 + t % 5;
        want[t] = t * (len * (len - 1) / 2);
    }
    check_equal("malloc sums", sums, want, n);
    HIP(hipFree(d));
    return finish("hostcall");
}
