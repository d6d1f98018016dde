// HIP's module API on code objects built apart from the program (the
// project's clang-19 fixtures, code object v4): hipModuleLoad,
// hipModuleGetFunction, hipModuleLaunchKernel with kernel parameters and
// with an argument buffer, hipModuleGetGlobal, hipModuleUnload.
//   usage: module_api FIXTURES_DIR   (fixtures/gfx90a/v4)
#include "common.h"
#include <hip/hip_ext.h>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FIXTURES_DIR\n", argv[0]);
        return 2;
    }
    std::string dir = argv[1];

    // vector_add(const float* a, const float* b, float* c, unsigned n)
    hipModule_t mod;
    HIP(hipModuleLoad(&mod, (dir + "/vector_add.hsaco").c_str()));
    hipFunction_t fn;
    HIP(hipModuleGetFunction(&fn, mod, "vector_add"));
    const unsigned n = 1000;
    std::vector<float> a(n), b(n), c(n), want(n);
    for (unsigned i = 0; i < n; i++) {
        a[i] = 0.5f * i;
        b[i] = 1000.0f - i;
        want[i] = a[i] + b[i];
    }
    float *da, *db, *dc;
    HIP(hipMalloc(&da, n * 4));
    HIP(hipMalloc(&db, n * 4));
    HIP(hipMalloc(&dc, n * 4));
    HIP(hipMemcpy(da, a.data(), n * 4, hipMemcpyHostToDevice));
    HIP(hipMemcpy(db, b.data(), n * 4, hipMemcpyHostToDevice));
    unsigned count = n;
    void* params[] = {&da, &db, &dc, &count};
    HIP(hipModuleLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, 0, params, nullptr));
    HIP(hipMemcpy(c.data(), dc, n * 4, hipMemcpyDeviceToHost));
    check_equal("vector_add (params)", c.data(), want.data(), n);

    // The same with the arguments packed in one buffer (HIP_LAUNCH_PARAM_*).
    struct {
        float* a;
        float* b;
        float* c;
        unsigned n;
    } packed = {db, da, dc, n / 2};
    size_t size = sizeof packed;
    void* extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, &packed, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     HIP_LAUNCH_PARAM_END};
    HIP(hipMemset(dc, 0, n * 4));
    HIP(hipModuleLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, 0, nullptr, extra));
    HIP(hipMemcpy(c.data(), dc, n * 4, hipMemcpyDeviceToHost));
    for (unsigned i = n / 2; i < n; i++) want[i] = 0.0f;
    check_equal("vector_add (buffer)", c.data(), want.data(), n);
    HIP(hipModuleUnload(mod));

    // A device variable: histogram adds n to inlay_hist_total per launch.
    HIP(hipModuleLoad(&mod, (dir + "/histogram.hsaco").c_str()));
    hipFunction_t hist;
    HIP(hipModuleGetFunction(&hist, mod, "histogram"));
    hipDeviceptr_t total;
    size_t total_size = 0;
    HIP(hipModuleGetGlobal(&total, &total_size, mod, "inlay_hist_total"));
    CHECK(total_size == 4, "inlay_hist_total has %zu bytes", total_size);
    unsigned start = 5;
    HIP(hipMemcpyHtoD(total, &start, 4));
    const unsigned m = 777, nbins = 10;
    std::vector<unsigned> data(m), bins(nbins), want_bins(nbins, 0);
    for (unsigned i = 0; i < m; i++) {
        data[i] = i * i;
        want_bins[data[i] % nbins]++;
    }
    unsigned *ddata, *dbins;
    HIP(hipMalloc(&ddata, m * 4));
    HIP(hipMalloc(&dbins, nbins * 4));
    HIP(hipMemcpy(ddata, data.data(), m * 4, hipMemcpyHostToDevice));
    HIP(hipMemset(dbins, 0, nbins * 4));
    unsigned mm = m, nb = nbins;
    void* hparams[] = {&ddata, &mm, &dbins, &nb};
    HIP(hipModuleLaunchKernel(hist, (m + 63) / 64, 1, 1, 64, 1, 1, 0, 0, hparams, nullptr));
    HIP(hipMemcpy(bins.data(), dbins, nbins * 4, hipMemcpyDeviceToHost));
    check_equal("histogram", bins.data(), want_bins.data(), nbins);
    unsigned after = 0;
    HIP(hipMemcpyDtoH(&after, total, 4));
    CHECK(after == start + m, "inlay_hist_total = %u, expected %u", after, start + m);
    HIP(hipModuleUnload(mod));
    HIP(hipFree(da));
    HIP(hipFree(db));
    HIP(hipFree(dc));
    HIP(hipFree(ddata));
    HIP(hipFree(dbins));
    return finish("module_api");
}
