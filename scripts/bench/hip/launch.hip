// Benchmark (issue 11): an empty kernel's hipLaunchKernel +
// hipStreamSynchronize, timed per iteration on the host; median and 99th
// percentile. argv: iterations.
#include <hip/hip_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void empty() {}

int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 5000;
    hipStream_t s;
    if (hipStreamCreate(&s) != hipSuccess) return 2;
    // Warm-up: the first launches load the code object and build queues.
    for (int i = 0; i < 100; i++) {
        hipLaunchKernel(reinterpret_cast<const void*>(&empty), dim3(1), dim3(64), nullptr, 0, s);
        hipStreamSynchronize(s);
    }
    std::vector<double> t(n);
    for (int i = 0; i < n; i++) {
        auto t0 = std::chrono::steady_clock::now();
        hipError_t e = hipLaunchKernel(reinterpret_cast<const void*>(&empty), dim3(1), dim3(64), nullptr, 0, s);
        hipError_t f = hipStreamSynchronize(s);
        auto t1 = std::chrono::steady_clock::now();
        if (e != hipSuccess || f != hipSuccess) {
            fprintf(stderr, "launch failed: %s / %s\n", hipGetErrorString(e), hipGetErrorString(f));
            return 1;
        }
        t[i] = std::chrono::duration<double, std::micro>(t1 - t0).count();
    }
    std::sort(t.begin(), t.end());
    printf("%-34s median %7.2f us   p99 %7.2f us   (%d launches)\n",
           "hipLaunchKernel + hipStreamSynchronize", t[n / 2], t[n * 99 / 100], n);
    return 0;
}
