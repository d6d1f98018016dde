// Pitched memory: hipMallocPitch with hipMemcpy2D (host to device, device
// to device, device to host), hipMemset2D, hipMemcpy2DAsync on a stream,
// a kernel that walks the rows by their pitch, and hipMalloc3D with
// hipMemcpy3D (each copy a rectangle between two pitched layouts). Every
// result is checked against the same operations done on the host.
#include "common.h"
#include <vector>

// Row y of a pitched allocation.
template <typename T>
__host__ __device__ T* row(T* base, size_t pitch, size_t y) {
    return reinterpret_cast<T*>(reinterpret_cast<char*>(base) + y * pitch);
}

// v = 2v + y for every element of a w x h pitched array.
__global__ void scale_rows(float* p, size_t pitch, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        float* r = row(p, pitch, y);
        r[x] = 2.0f * r[x] + (float)y;
    }
}

static void test_2d() {
    const int w = 37, h = 23;
    // The host layout has its own pitch (w + 5 floats), wider than the rows.
    const size_t hpitch = (w + 5) * sizeof(float);
    std::vector<float> host(h * (w + 5), -1.0f);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) row(host.data(), hpitch, y)[x] = 100.0f * y + x;

    float *a = nullptr, *b = nullptr;
    size_t pa = 0, pb = 0;
    HIP(hipMallocPitch((void**)&a, &pa, w * sizeof(float), h));
    HIP(hipMallocPitch((void**)&b, &pb, w * sizeof(float), h));
    CHECK(pa >= w * sizeof(float) && pa % sizeof(float) == 0, "pitch %zu for %zu-byte rows", pa,
          w * sizeof(float));
    CHECK(pb == pa, "pitches %zu and %zu for the same shape", pa, pb);

    HIP(hipMemcpy2D(a, pa, host.data(), hpitch, w * sizeof(float), h, hipMemcpyHostToDevice));
    dim3 block(16, 8), grid((w + 15) / 16, (h + 7) / 8);
    hipLaunchKernelGGL(scale_rows, grid, block, 0, 0, a, pa, w, h);
    HIP(hipGetLastError());

    // b: zero bytes everywhere, then a's rows 3..13, columns 4..24 on top.
    HIP(hipMemset2D(b, pb, 0, w * sizeof(float), h));
    const int x0 = 4, y0 = 3, cw = 21, ch = 11;
    HIP(hipMemcpy2D(row(b, pb, y0) + x0, pb, row(a, pa, y0) + x0, pa, cw * sizeof(float), ch,
                    hipMemcpyDeviceToDevice));
    // And 0xff bytes (NaNs) over row 0, columns 1..9.
    HIP(hipMemset2D(b + 1, pb, 0xff, 9 * sizeof(float), 1));

    // Both back through a stream, into pinned memory with yet another pitch.
    const size_t opitch = (w + 2) * sizeof(float);
    float *out_a = nullptr, *out_b = nullptr;
    HIP(hipHostMalloc((void**)&out_a, h * opitch, hipHostMallocDefault));
    HIP(hipHostMalloc((void**)&out_b, h * opitch, hipHostMallocDefault));
    hipStream_t s;
    HIP(hipStreamCreate(&s));
    HIP(hipMemcpy2DAsync(out_a, opitch, a, pa, w * sizeof(float), h, hipMemcpyDeviceToHost, s));
    HIP(hipMemcpy2DAsync(out_b, opitch, b, pb, w * sizeof(float), h, hipMemcpyDeviceToHost, s));
    HIP(hipStreamSynchronize(s));

    std::vector<float> got_a(w * h), got_b(w * h), want_a(w * h), want_b(w * h);
    std::vector<unsigned> bits_b(w * h), want_bits(w * h);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float v = 2.0f * (100.0f * y + x) + (float)y;
            want_a[y * w + x] = v;
            got_a[y * w + x] = row(out_a, opitch, y)[x];
            bool copied = y >= y0 && y < y0 + ch && x >= x0 && x < x0 + cw;
            bool nan = y == 0 && x >= 1 && x < 10;
            float wb = copied ? v : 0.0f;
            memcpy(&want_bits[y * w + x], &wb, 4);
            if (nan) want_bits[y * w + x] = 0xffffffffu;
            memcpy(&bits_b[y * w + x], &row(out_b, opitch, y)[x], 4);
        }
    check_equal("2-D copy, kernel by pitch", got_a.data(), want_a.data(), w * h);
    check_equal("2-D sub-rectangle and memset (bits)", bits_b.data(), want_bits.data(), w * h);

    HIP(hipStreamDestroy(s));
    HIP(hipHostFree(out_a));
    HIP(hipHostFree(out_b));
    HIP(hipFree(a));
    HIP(hipFree(b));
}

static void test_3d() {
    const size_t w = 13, h = 7, d = 5;  // floats, rows, slices
    hipPitchedPtr dev;
    HIP(hipMalloc3D(&dev, make_hipExtent(w * sizeof(float), h, d)));
    CHECK(dev.pitch >= w * sizeof(float), "3-D pitch %zu", dev.pitch);

    std::vector<float> src(w * h * d), back(w * h * d, -1.0f);
    for (size_t i = 0; i < src.size(); i++) src[i] = 0.5f * i - 7.0f;

    hipMemcpy3DParms up = {};
    up.srcPtr = make_hipPitchedPtr(src.data(), w * sizeof(float), w, h);
    up.dstPtr = dev;
    up.extent = make_hipExtent(w * sizeof(float), h, d);
    up.kind = hipMemcpyHostToDevice;
    HIP(hipMemcpy3D(&up));

    // Back only the box x 2..10, y 1..5, z 1..3, into the same place.
    const size_t bx = 2, by = 1, bz = 1, bw = 9, bh = 5, bd = 3;
    hipMemcpy3DParms down = {};
    down.srcPtr = dev;
    down.srcPos = make_hipPos(bx * sizeof(float), by, bz);
    down.dstPtr = make_hipPitchedPtr(back.data(), w * sizeof(float), w, h);
    down.dstPos = make_hipPos(bx * sizeof(float), by, bz);
    down.extent = make_hipExtent(bw * sizeof(float), bh, bd);
    down.kind = hipMemcpyDeviceToHost;
    HIP(hipMemcpy3D(&down));

    std::vector<float> want(w * h * d, -1.0f);
    for (size_t z = bz; z < bz + bd; z++)
        for (size_t y = by; y < by + bh; y++)
            for (size_t x = bx; x < bx + bw; x++) {
                size_t i = (z * h + y) * w + x;
                want[i] = src[i];
            }
    check_equal("3-D box", back.data(), want.data(), want.size());
    HIP(hipFree(dev.ptr));
}

int main() {
    test_2d();
    test_3d();
    return finish("pitched");
}
