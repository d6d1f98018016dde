// A rocRAND client. The quasi-random Sobol32 generator in one dimension is
// an exact sequence: value n is the XOR of the direction numbers selected
// by the Gray code of n, and the first dimension's direction numbers are
// 2^31, 2^30, ..., 1, so value n is Gray(n) with its 32 bits reversed. The
// host computes that and compares every value. A pseudo-random generator
// (Philox4x32-10) is checked for what can be known without its layout:
// uniform floats in (0, 1] with a mean near 1/2, and the same numbers again
// for the same seed.
#include "common.h"
#include <rocrand/rocrand.h>
#include <vector>

#define RAND(call)                                                                \
    do {                                                                          \
        rocrand_status st_ = (call);                                              \
        if (st_ != ROCRAND_STATUS_SUCCESS) {                                      \
            fprintf(stderr, "%s:%d: %s: rocrand status %d\n", __FILE__, __LINE__, #call, \
                    (int)st_);                                                    \
            exit(2);                                                              \
        }                                                                         \
    } while (0)

static unsigned reverse_bits(unsigned v) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= ((v >> i) & 1u) << (31 - i);
    return r;
}

int main() {
    const size_t n = 1 << 14;
    unsigned* d;
    HIP(hipMalloc(&d, n * sizeof(unsigned)));
    rocrand_generator gen;
    RAND(rocrand_create_generator(&gen, ROCRAND_RNG_QUASI_SOBOL32));
    RAND(rocrand_set_quasi_random_generator_dimensions(gen, 1));
    RAND(rocrand_generate(gen, d, n));
    std::vector<unsigned> got(n), want(n);
    HIP(hipMemcpy(got.data(), d, n * sizeof(unsigned), hipMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) want[i] = reverse_bits((unsigned)(i ^ (i >> 1)));
    check_equal("sobol32", got.data(), want.data(), n);
    RAND(rocrand_destroy_generator(gen));

    float* f;
    HIP(hipMalloc(&f, n * sizeof(float)));
    std::vector<float> u(n), again(n);
    for (int round = 0; round < 2; round++) {
        RAND(rocrand_create_generator(&gen, ROCRAND_RNG_PSEUDO_PHILOX4_32_10));
        RAND(rocrand_set_seed(gen, 0x1234abcdULL));
        RAND(rocrand_generate_uniform(gen, f, n));
        HIP(hipMemcpy(round ? again.data() : u.data(), f, n * sizeof(float), hipMemcpyDeviceToHost));
        RAND(rocrand_destroy_generator(gen));
    }
    double sum = 0;
    size_t outside = 0;
    for (size_t i = 0; i < n; i++) {
        sum += u[i];
        outside += !(u[i] > 0.0f && u[i] <= 1.0f);
    }
    CHECK(outside == 0, "%zu uniform values outside (0, 1]", outside);
    CHECK(std::fabs(sum / n - 0.5) < 0.01, "mean %f", sum / n);
    check_equal("philox repeat", again.data(), u.data(), n);
    HIP(hipFree(d));
    HIP(hipFree(f));
    return finish("rocrand_sobol");
}
