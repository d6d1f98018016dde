/* The fixture kernels run through the HSA API in the flow of LLVM libc's
 * AMDHSA loader, results checked against references computed here; then a
 * kernel that faults, reported through the queue's error callback and the
 * system event handler, after which the device runs the next dispatch.
 * argv: directory of one fixture set (fixtures/gfx90a/v4 or v5). */
#include "dispatch.h"
#include <math.h>

static const env_t *E;
static char DIR[4096];

static const char *fixture(const char *name) {
    static char path[4200];
    snprintf(path, sizeof path, "%s/%s.hsaco", DIR, name);
    return path;
}

static void *shared_alloc(size_t size) { return host_alloc(E, size); }

static uint32_t rng_state = 12345;
static uint32_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* vector_add over 1000 elements (the last workgroup partial); inputs go to
 * device memory through hsa_memory_copy, the result comes back the same way. */
static void vector_add(hsa_queue_t *q, int from_file) {
    hsa_executable_t exe = load_executable(E, fixture("vector_add"), from_file);
    kernel_t k = find_kernel(exe, E->gpu, "vector_add");
    enum { N = 1000 };
    float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) { a[i] = (float)i * 0.5f; b[i] = (float)(rng() % 1000) / 8.0f; c[i] = -1.0f; }
    float *da = device_alloc(E, sizeof a), *db = device_alloc(E, sizeof b), *dc = device_alloc(E, sizeof c);
    OK(hsa_memory_copy(da, a, sizeof a));
    OK(hsa_memory_copy(db, b, sizeof b));
    OK(hsa_memory_copy(dc, c, sizeof c));
    struct { float *a, *b, *c; uint32_t n; } args = {da, db, dc, N};
    uint32_t grid[3] = {N, 1, 1};
    uint16_t wg[3] = {256, 1, 1};
    launch(E, q, k, &args, 28, grid, wg);
    OK(hsa_memory_copy(c, dc, sizeof c));
    for (int i = 0; i < N; i++) CHECK(c[i] == a[i] + b[i]);
    OK(hsa_amd_memory_pool_free(da));
    OK(hsa_amd_memory_pool_free(db));
    OK(hsa_amd_memory_pool_free(dc));
    OK(hsa_executable_destroy(exe));
}

/* reduce_sum<unsigned>: LDS and barriers; one sum per workgroup of 256. */
static void reduce_sum(hsa_queue_t *q) {
    hsa_executable_t exe = load_executable(E, fixture("reduce_sum"), 0);
    kernel_t k = find_kernel(exe, E->gpu, "_Z10reduce_sumIjEvPKT_PS0_j");
    enum { N = 3000, G = (N + 255) / 256 };
    uint32_t *in = shared_alloc(N * 4), *out = shared_alloc(G * 4);
    for (int i = 0; i < N; i++) in[i] = rng();
    struct { uint32_t *in, *out; uint32_t n; } args = {in, out, N};
    uint32_t grid[3] = {G * 256, 1, 1};
    uint16_t wg[3] = {256, 1, 1};
    launch(E, q, k, &args, 20, grid, wg);
    for (int g = 0; g < G; g++) {
        uint32_t want = 0;
        for (int i = g * 256; i < (g + 1) * 256 && i < N; i++) want += in[i];
        CHECK(out[g] == want);
    }
    OK(hsa_amd_memory_pool_free(in));
    OK(hsa_amd_memory_pool_free(out));
    OK(hsa_executable_destroy(exe));
}

/* histogram: global atomics from every workgroup, and a device variable
 * read back by a second kernel of the same executable. */
static void histogram(hsa_queue_t *q) {
    hsa_executable_t exe = load_executable(E, fixture("histogram"), 0);
    kernel_t k = find_kernel(exe, E->gpu, "histogram");
    kernel_t total = find_kernel(exe, E->gpu, "histogram_total");
    enum { N = 5000, BINS = 61 };
    uint32_t *data = shared_alloc(N * 4), *bins = shared_alloc(BINS * 4), *out = shared_alloc(4);
    uint32_t want[BINS] = {0};
    for (int i = 0; i < N; i++) { data[i] = rng(); want[data[i] % BINS]++; }
    memset(bins, 0, BINS * 4);
    struct { uint32_t *data; uint32_t n; uint32_t pad; uint32_t *bins; uint32_t nbins; } args = {data, N, 0, bins, BINS};
    uint32_t grid[3] = {N, 1, 1};
    uint16_t wg[3] = {128, 1, 1};
    launch(E, q, k, &args, 28, grid, wg);
    for (int b = 0; b < BINS; b++) CHECK(bins[b] == want[b]);
    struct { uint32_t *out; } targs = {out};
    uint32_t one[3] = {1, 1, 1};
    uint16_t wg1[3] = {1, 1, 1};
    launch(E, q, total, &targs, 8, one, wg1);
    CHECK(out[0] == N);
    OK(hsa_amd_memory_pool_free(data));
    OK(hsa_amd_memory_pool_free(bins));
    OK(hsa_amd_memory_pool_free(out));
    OK(hsa_executable_destroy(exe));
}

/* matmul_tiled: a 2-D grid with partial tiles; small integers keep every
 * f32 sum exact, so the comparison is exact. */
static void matmul(hsa_queue_t *q) {
    hsa_executable_t exe = load_executable(E, fixture("matmul"), 1);
    kernel_t k = find_kernel(exe, E->gpu, "matmul_tiled");
    enum { M = 37, N = 45, K = 29 };
    float *a = shared_alloc(M * K * 4), *b = shared_alloc(K * N * 4), *c = shared_alloc(M * N * 4);
    for (int i = 0; i < M * K; i++) a[i] = (float)(rng() % 7) - 3.0f;
    for (int i = 0; i < K * N; i++) b[i] = (float)(rng() % 5) - 2.0f;
    struct { float *a, *b, *c; uint32_t m, n, k; } args = {a, b, c, M, N, K};
    /* Whole workgroups: the kernel reads tiles every work-item of a 16x16 group writes. */
    uint32_t grid[3] = {(N + 15) / 16 * 16, (M + 15) / 16 * 16, 1};
    uint16_t wg[3] = {16, 16, 1};
    launch(E, q, k, &args, 36, grid, wg);
    for (int r = 0; r < M; r++)
        for (int col = 0; col < N; col++) {
            float want = 0.0f;
            for (int t = 0; t < K; t++) want += a[r * K + t] * b[t * N + col];
            if (c[r * N + col] != want) fprintf(stderr, "matmul c[%d][%d] = %g, want %g\n", r, col, c[r * N + col], want);
            CHECK(c[r * N + col] == want);
        }
    OK(hsa_amd_memory_pool_free(a));
    OK(hsa_amd_memory_pool_free(b));
    OK(hsa_amd_memory_pool_free(c));
    OK(hsa_executable_destroy(exe));
}

/* daxpy in f64: y = a*x + y, rounded once per operation as C does. */
static void daxpy(hsa_queue_t *q) {
    hsa_executable_t exe = load_executable(E, fixture("daxpy"), 0);
    kernel_t k = find_kernel(exe, E->gpu, "daxpy");
    enum { N = 777 };
    double *x = shared_alloc(N * 8), *y = shared_alloc(N * 8), want[N];
    double a = 1.0 / 3.0;
    for (int i = 0; i < N; i++) {
        x[i] = (double)rng() / 7.0;
        y[i] = (double)rng() / 11.0;
        want[i] = fma(a, x[i], y[i]);
    }
    struct { double a; double *x, *y; uint32_t n; } args = {a, x, y, N};
    uint32_t grid[3] = {N, 1, 1};
    uint16_t wg[3] = {64, 1, 1};
    launch(E, q, k, &args, 28, grid, wg);
    for (int i = 0; i < N; i++) CHECK(y[i] == want[i]);
    OK(hsa_amd_memory_pool_free(x));
    OK(hsa_amd_memory_pool_free(y));
    OK(hsa_executable_destroy(exe));
}

static volatile int queue_errors, fault_events;
static volatile hsa_status_t queue_status;
static volatile uint64_t fault_address;

static void on_queue_error(hsa_status_t status, hsa_queue_t *q, void *data) {
    (void)q; (void)data;
    queue_status = status;
    __atomic_add_fetch(&queue_errors, 1, __ATOMIC_SEQ_CST);
}

static hsa_status_t on_event(const hsa_amd_event_t *ev, void *data) {
    (void)data;
    if (ev->event_type == HSA_AMD_GPU_MEMORY_FAULT_EVENT) {
        fault_address = ev->memory_fault.virtual_address;
        __atomic_add_fetch(&fault_events, 1, __ATOMIC_SEQ_CST);
    }
    return HSA_STATUS_SUCCESS;
}

/* vector_add storing through a pointer no allocation holds: the
 * memory-fault event reports it (and, handled, keeps the process alive);
 * as in ROCr the queue's error callback does not hear of a memory fault
 * (AqlQueue::ExceptionHandler suppresses it). The completion signal is left
 * alone, and a new queue runs the next dispatch. */
static void fault_then_recover(void) {
    hsa_queue_t *q;
    OK(hsa_queue_create(E->gpu, 64, HSA_QUEUE_TYPE_MULTI, on_queue_error, NULL, UINT32_MAX, UINT32_MAX, &q));
    hsa_executable_t exe = load_executable(E, fixture("vector_add"), 0);
    kernel_t k = find_kernel(exe, E->gpu, "vector_add");
    float *a = shared_alloc(64 * 4);
    for (int i = 0; i < 64; i++) a[i] = (float)i;
    float *bogus = (float *)(uintptr_t)0x7e5700000000ull;
    struct { float *a, *b, *c; uint32_t n; } args = {a, a, bogus, 64};
    void *ka = NULL;
    OK(hsa_amd_memory_pool_allocate(E->kernarg, k.kernarg_size, 0, &ka));
    memset(ka, 0, k.kernarg_size);
    memcpy(ka, &args, 28);
    uint32_t grid[3] = {64, 1, 1};
    uint16_t wg[3] = {64, 1, 1};
    fill_implicit(ka, k.kernarg_size, 28, grid, wg, 1);
    hsa_signal_t done;
    OK(hsa_signal_create(1, 0, NULL, &done));
    uint64_t id = hsa_queue_add_write_index_relaxed(q, 1);
    hsa_kernel_dispatch_packet_t *p = (hsa_kernel_dispatch_packet_t *)q->base_address + (id & (q->size - 1));
    memset((uint8_t *)p + 4, 0, sizeof *p - 4);
    p->workgroup_size_x = 64; p->workgroup_size_y = 1; p->workgroup_size_z = 1;
    p->grid_size_x = 64; p->grid_size_y = 1; p->grid_size_z = 1;
    p->kernel_object = k.object;
    p->kernarg_address = ka;
    p->completion_signal = done;
    __atomic_store_n((uint32_t *)p, (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) | (1u << 16), __ATOMIC_RELEASE);
    hsa_signal_store_relaxed(q->doorbell_signal, (hsa_signal_value_t)id);
    for (int i = 0; i < 10000 && fault_events == 0; i++) usleep(1000);
    usleep(100000);
    CHECK(fault_events == 1);
    CHECK(queue_errors == 0);
    /* The first lane's store faults: c + 0. */
    CHECK(fault_address == (uint64_t)(uintptr_t)bogus);
    CHECK(hsa_signal_load_scacquire(done) == 1);
    OK(hsa_queue_destroy(q));
    OK(hsa_signal_destroy(done));
    OK(hsa_amd_memory_pool_free(ka));
    OK(hsa_amd_memory_pool_free(a));
    OK(hsa_executable_destroy(exe));

    hsa_queue_t *q2;
    OK(hsa_queue_create(E->gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX, &q2));
    vector_add(q2, 0);
    OK(hsa_queue_destroy(q2));
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    snprintf(DIR, sizeof DIR, "%s", argv[1]);
    env_t e = setup();
    E = &e;
    OK(hsa_amd_register_system_event_handler(on_event, NULL));
    hsa_queue_t *q;
    OK(hsa_queue_create(e.gpu, 256, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX, &q));
    vector_add(q, 0);
    vector_add(q, 1);
    reduce_sum(q);
    histogram(q);
    matmul(q);
    daxpy(q);
    OK(hsa_queue_destroy(q));
    fault_then_recover();
    OK(hsa_shut_down());
    printf("PASS\n");
    return 0;
}
