// Shared by the project's HIP test programs: every HIP call is checked, a
// failed check names the call and its line, and each program ends with
// PASS (exit 0) or the number of failed checks (exit 1).
#pragma once
#include <hip/hip_runtime.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>

static int g_failures = 0;

#define HIP(call)                                                                 \
    do {                                                                          \
        hipError_t err_ = (call);                                                 \
        if (err_ != hipSuccess) {                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,         \
                    hipGetErrorString(err_));                                     \
            exit(2);                                                              \
        }                                                                         \
    } while (0)

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                         \
            fprintf(stderr, "\n");                                                \
            g_failures++;                                                         \
        }                                                                         \
    } while (0)

// Compares n values with a host reference; reports the first few mismatches.
template <typename T>
static void check_equal(const char* what, const T* got, const T* want, size_t n, double tol = 0) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double d = std::fabs((double)got[i] - (double)want[i]);
        double limit = tol * std::fmax(1.0, std::fabs((double)want[i]));
        if (!(d <= limit)) {
            if (bad < 4)
                fprintf(stderr, "%s[%zu] = %.17g, expected %.17g\n", what, i, (double)got[i],
                        (double)want[i]);
            bad++;
        }
    }
    if (bad) {
        fprintf(stderr, "%s: %zu of %zu values wrong\n", what, bad, n);
        g_failures++;
    }
}

static int finish(const char* name) {
    if (g_failures) {
        printf("%s: FAIL (%d checks)\n", name, g_failures);
        return 1;
    }
    printf("%s: PASS\n", name);
    return 0;
}
