// Benchmark (issue 11): a tiled HIP matrix multiply, C = A·B with
// 128×128×128 floats, 16×16 tiles in shared memory, checked against the
// host's product; the script times the whole process (init, copies, the
// kernel, the check). Also prints the kernel's time from HIP events.
#include <hip/hip_runtime.h>
#include <cmath>
#include <cstdio>
#include <vector>

constexpr int T = 16;

__global__ void matmul(const float* a, const float* b, float* c, int n) {
    __shared__ float ta[T][T], tb[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0;
    for (int k0 = 0; k0 < n; k0 += T) {
        ta[threadIdx.y][threadIdx.x] = a[row * n + k0 + threadIdx.x];
        tb[threadIdx.y][threadIdx.x] = b[(k0 + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < T; k++) acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
        __syncthreads();
    }
    c[row * n + col] = acc;
}

int main() {
    const int n = 128;
    std::vector<float> a(n * n), b(n * n), c(n * n);
    for (int i = 0; i < n * n; i++) {
        a[i] = (float)(i % 7) - 3.0f;
        b[i] = (float)(i % 5) * 0.5f;
    }
    float *da, *db, *dc;
    hipMalloc(&da, n * n * 4);
    hipMalloc(&db, n * n * 4);
    hipMalloc(&dc, n * n * 4);
    hipMemcpy(da, a.data(), n * n * 4, hipMemcpyHostToDevice);
    hipMemcpy(db, b.data(), n * n * 4, hipMemcpyHostToDevice);
    hipEvent_t start, stop;
    hipEventCreate(&start);
    hipEventCreate(&stop);
    hipEventRecord(start, 0);
    hipLaunchKernelGGL(matmul, dim3(n / T, n / T), dim3(T, T), 0, 0, da, db, dc, n);
    hipEventRecord(stop, 0);
    hipMemcpy(c.data(), dc, n * n * 4, hipMemcpyDeviceToHost);
    float kernel_ms = 0;
    hipEventElapsedTime(&kernel_ms, start, stop);
    int bad = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            float want = 0;
            for (int k = 0; k < n; k++) want += a[i * n + k] * b[k * n + j];
            if (std::fabs(c[i * n + j] - want) > 1e-3f * std::fmax(1.0f, std::fabs(want))) bad++;
        }
    printf("matmul 128x128x128: %s, kernel %.2f ms (HIP events)\n", bad ? "WRONG" : "correct", kernel_ms);
    return bad != 0;
}
