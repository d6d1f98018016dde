/* Launches of every shape a tool must get right: vector_add over 1-, 2- and
 * 3-dimensional grids (work-items past x only repeat x's element), and
 * histogram_total, which has no implicit kernel arguments at all, over a
 * 3-dimensional grid. Prints what it computed, so that a test can predict
 * the effect of a tool that changes it (reg_write), and PASS only if every
 * result is right; exits 0 unless the HSA runtime itself fails.
 * argv: directory of one fixture set (fixtures/gfx90a/v5). */
#include "dispatch.h"

static const env_t *E;
static char DIR[4096];

static const char *fixture(const char *name) {
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s.hsaco", DIR, name);
    return path;
}

/* The inputs: exact in f32, so a + b is exact too. */
static float input_a(int i) { return (float)i * 0.25f; }
static float input_b(int i) { return 1000.0f - (float)i * 0.5f; }

/* vector_add over `grid` in workgroups `wg`, n = grid[0]; prints the
 * results' bits when `print`. Returns whether all are right. */
static int vector_add(hsa_queue_t *q, kernel_t k, const char *what, uint32_t n,
                      const uint32_t grid[3], const uint16_t wg[3], int print) {
    float *a = host_alloc(E, n * 4), *b = host_alloc(E, n * 4), *c = host_alloc(E, n * 4);
    for (uint32_t i = 0; i < n; i++) {
        a[i] = input_a((int)i);
        b[i] = input_b((int)i);
        c[i] = -1.0f;
    }
    struct { float *a, *b, *c; uint32_t n; } args = {a, b, c, n};
    launch(E, q, k, &args, 28, grid, wg);
    uint32_t right = 0;
    for (uint32_t i = 0; i < n; i++) right += c[i] == a[i] + b[i];
    printf("%s: %u of %u right\n", what, right, n);
    if (print) {
        for (uint32_t i = 0; i < n; i++) {
            uint32_t bits;
            memcpy(&bits, &c[i], 4);
            printf("%08x%c", bits, i % 8 == 7 || i + 1 == n ? '\n' : ' ');
        }
    }
    OK(hsa_amd_memory_pool_free(a));
    OK(hsa_amd_memory_pool_free(b));
    OK(hsa_amd_memory_pool_free(c));
    return right == n;
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    snprintf(DIR, sizeof DIR, "%s", argv[1]);
    env_t e = setup();
    E = &e;
    hsa_queue_t *q;
    OK(hsa_queue_create(e.gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX, &q));
    int pass = 1;

    hsa_executable_t va = load_executable(E, fixture("vector_add"), 0);
    kernel_t add = find_kernel(va, e.gpu, "vector_add");
    uint32_t g1[3] = {1000, 1, 1}, g2[3] = {128, 3, 1}, g3[3] = {64, 2, 3};
    uint16_t w1[3] = {256, 1, 1}, w2[3] = {64, 1, 1}, w3[3] = {32, 2, 1};
    pass &= vector_add(q, add, "vector_add 1d", 1000, g1, w1, 1);
    pass &= vector_add(q, add, "vector_add 2d", 128, g2, w2, 0);
    pass &= vector_add(q, add, "vector_add 3d", 64, g3, w3, 0);
    OK(hsa_executable_destroy(va));

    /* histogram adds n to a device variable; histogram_total (8 bytes of
     * arguments, no implicit ones) copies it out from every work-item of a
     * 3-dimensional grid. */
    hsa_executable_t hx = load_executable(E, fixture("histogram"), 0);
    kernel_t hist = find_kernel(hx, e.gpu, "histogram");
    kernel_t total = find_kernel(hx, e.gpu, "histogram_total");
    enum { N = 700, BINS = 13 };
    uint32_t *data = host_alloc(E, N * 4), *bins = host_alloc(E, BINS * 4), *out = host_alloc(E, 4);
    for (int i = 0; i < N; i++) data[i] = (uint32_t)i * 7u;
    memset(bins, 0, BINS * 4);
    struct { uint32_t *data; uint32_t n; uint32_t pad; uint32_t *bins; uint32_t nbins; } hargs = {data, N, 0, bins, BINS};
    uint32_t hg[3] = {N, 1, 1};
    uint16_t hw[3] = {128, 1, 1};
    launch(E, q, hist, &hargs, 28, hg, hw);
    out[0] = 0;
    struct { uint32_t *out; } targs = {out};
    uint32_t tg[3] = {4, 3, 2};
    uint16_t tw[3] = {2, 3, 1};
    launch(E, q, total, &targs, 8, tg, tw);
    printf("histogram_total 3d: %u (want %u)\n", out[0], N);
    pass &= out[0] == N;
    OK(hsa_amd_memory_pool_free(data));
    OK(hsa_amd_memory_pool_free(bins));
    OK(hsa_amd_memory_pool_free(out));
    OK(hsa_executable_destroy(hx));

    OK(hsa_queue_destroy(q));
    OK(hsa_shut_down());
    printf(pass ? "PASS\n" : "FAIL\n");
    return 0;
}
