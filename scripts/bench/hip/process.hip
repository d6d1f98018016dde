// Benchmark (issue 11): a whole HIP process that initialises, copies 1 MiB
// in, runs one small kernel, copies the result back and exits. Prints when
// each phase ended, from the start of main; the script adds the process's
// wall time (so what happens before main and after it shows too).
#include <hip/hip_runtime.h>
#include <chrono>
#include <cstdio>
#include <vector>

__global__ void scale(float* v, int n) {
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g < n) v[g] *= 2.0f;
}

int main() {
    auto t0 = std::chrono::steady_clock::now();
    auto ms = [&] { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); };
    const int n = 1 << 18;
    std::vector<float> h(n);
    for (int i = 0; i < n; i++) h[i] = (float)i;
    if (hipFree(nullptr) != hipSuccess) return 2;  // initialises the runtime
    double init = ms();
    float* d;
    hipMalloc(&d, n * sizeof(float));
    hipMemcpy(d, h.data(), n * sizeof(float), hipMemcpyHostToDevice);
    double in = ms();
    hipLaunchKernelGGL(scale, dim3(n / 256), dim3(256), 0, 0, d, n);
    hipDeviceSynchronize();
    double kernel = ms();
    hipMemcpy(h.data(), d, n * sizeof(float), hipMemcpyDeviceToHost);
    hipFree(d);
    double out = ms();
    for (int i = 0; i < n; i++)
        if (h[i] != 2.0f * i) {
            printf("wrong result at %d\n", i);
            return 1;
        }
    printf("in main: runtime init %.1f ms, malloc+copy in %.1f ms, kernel %.1f ms, copy out+free %.1f ms, total %.1f ms\n",
           init, in - init, kernel - in, out - kernel, out);
    return 0;
}
