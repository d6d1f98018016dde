/* The memory model a HIP runtime relies on, through ROCr's C API, with the
 * fixture kernel vector_add(a, b, c, n) (c[i] = a[i] + b[i]):
 *  - what ROCr reports for a dGPU with XNACK off (pageable memory is not
 *    reachable by default);
 *  - locked host memory is reached through a distinct agent address until
 *    it is unlocked; hsa_amd_pointer_info describes it as ROCr does;
 *  - shared virtual memory: attributes set and queried per range, a
 *    prefetch, kernels on the range once the GPU may access it;
 *  - the rectangular async copy;
 *  - signals are amd_signal_t in memory; profiling stamps dispatches;
 *  - a kernel storing to pageable memory faults at that address (a GPU
 *    memory fault event, as ROCr raises it).
 *   usage: memory_model FIXTURES_DIR (gfx90a/v5) */
#include "dispatch.h"
#include <hsa/amd_hsa_signal.h>
#include <stdatomic.h>
#include <sys/mman.h>

static hsa_agent_t g_gpu;

/* The arguments of vector_add. */
struct args { const float *a, *b; float *c; uint32_t n; };

static void add(const env_t *e, hsa_queue_t *q, kernel_t k, const float *a, const float *b, float *c,
                uint32_t n) {
    struct args x = {a, b, c, n};
    uint32_t grid[3] = {n, 1, 1};
    uint16_t wg[3] = {64, 1, 1};
    launch(e, q, k, &x, sizeof x, grid, wg);
}

static void check_sums(const float *a, const float *b, const float *c, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (c[i] != a[i] + b[i]) {
            fprintf(stderr, "c[%u] = %f, want %f\n", i, c[i], a[i] + b[i]);
            exit(1);
        }
}

static hsa_amd_pointer_info_t info_of(const void *p) {
    hsa_amd_pointer_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    OK(hsa_amd_pointer_info(p, &info, NULL, NULL, NULL));
    return info;
}

static void test_system_info(void) {
    bool svm = false, by_default = true;
    OK(hsa_system_get_info(HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED, &svm));
    OK(hsa_system_get_info(HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT, &by_default));
    CHECK(svm && !by_default);
}

static void test_locked(const env_t *e, hsa_queue_t *q, kernel_t k) {
    const uint32_t n = 1000;
    /* Pageable memory, one of them not page-aligned. */
    float *a = malloc(n * sizeof(float) + 12), *b = malloc(n * sizeof(float)), *c = malloc(n * sizeof(float));
    a = (float *)((char *)a + 12);
    for (uint32_t i = 0; i < n; i++) { a[i] = (float)i; b[i] = 0.5f * i; c[i] = -1; }
    CHECK(info_of(a).type == HSA_EXT_POINTER_TYPE_UNKNOWN);

    void *pa, *pb, *pc, *again;
    OK(hsa_amd_memory_lock(a, n * sizeof(float), &e->gpu, 1, &pa));
    OK(hsa_amd_memory_lock_to_pool(b, n * sizeof(float), NULL, 0, e->kernarg, 0, &pb));
    OK(hsa_amd_memory_lock(c, n * sizeof(float), NULL, 0, &pc));
    CHECK(pa != a && pb != b && pc != c);
    CHECK(((uintptr_t)pa & 4095) == ((uintptr_t)a & 4095));
    /* Locking the same range again gives the same address; it needs two unlocks. */
    OK(hsa_amd_memory_lock(a, n * sizeof(float), &e->gpu, 1, &again));
    CHECK(again == pa);
    /* Only CPUs asked for: nothing to map, the pointer itself. */
    OK(hsa_amd_memory_lock(b, 16, &e->cpu, 1, &again));
    CHECK(again == b);

    /* Both addresses describe the lock. */
    hsa_amd_pointer_info_t ia = info_of(a), iaa = info_of((char *)pa + 40);
    CHECK(ia.type == HSA_EXT_POINTER_TYPE_LOCKED && iaa.type == HSA_EXT_POINTER_TYPE_LOCKED);
    CHECK(ia.hostBaseAddress == a && ia.agentBaseAddress == pa && ia.sizeInBytes == n * sizeof(float));
    CHECK(iaa.hostBaseAddress == a && iaa.agentBaseAddress == pa);
    CHECK(ia.agentOwner.handle == e->cpu.handle);
    CHECK(ia.global_flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED);
    CHECK(info_of(b).global_flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);
    uint32_t count = 0;
    hsa_agent_t *list = NULL;
    OK(hsa_amd_pointer_info(a, &ia, malloc, &count, &list));
    CHECK(count == 1 && list[0].handle == e->gpu.handle);
    free(list);

    /* The kernel reaches them through the agent addresses. */
    add(e, q, k, pa, pb, pc, n);
    check_sums(a, b, c, n);

    /* An async copy from locked memory, by its agent address. */
    float *d = device_alloc(e, n * sizeof(float));
    hsa_signal_t done;
    OK(hsa_signal_create(1, 0, NULL, &done));
    OK(hsa_amd_memory_async_copy(d, e->gpu, pc, e->gpu, n * sizeof(float), 0, NULL, done));
    CHECK(hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    check_sums(a, b, d, n);
    OK(hsa_signal_destroy(done));
    OK(hsa_amd_memory_pool_free(d));

    OK(hsa_amd_memory_unlock(a));
    CHECK(info_of(a).type == HSA_EXT_POINTER_TYPE_LOCKED); /* locked twice */
    OK(hsa_amd_memory_unlock(a));
    OK(hsa_amd_memory_unlock(b));
    OK(hsa_amd_memory_unlock(c));
    CHECK(info_of(a).type == HSA_EXT_POINTER_TYPE_UNKNOWN);
    CHECK(info_of(pa).type == HSA_EXT_POINTER_TYPE_UNKNOWN);
    /* As in ROCr, unlocking what is not locked succeeds. */
    OK(hsa_amd_memory_unlock(a));
    free((char *)a - 12);
    free(b);
    free(c);
}

static uint64_t svm_get(void *p, size_t size, uint64_t attr, uint64_t value) {
    hsa_amd_svm_attribute_pair_t q = {attr, value};
    OK(hsa_amd_svm_attributes_get(p, size, &q, 1));
    return attr == HSA_AMD_SVM_ATTRIB_ACCESS_QUERY ? q.attribute : q.value;
}

static void test_svm(const env_t *e, hsa_queue_t *q, kernel_t k) {
    const size_t page = 4096, bytes = 8 * page;
    float *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    const uint32_t n = (uint32_t)(bytes / 3 / sizeof(float));
    float *a = m, *b = m + n, *c = m + 2 * n;
    for (uint32_t i = 0; i < n; i++) { a[i] = 1.0f + i; b[i] = 2.0f * i; c[i] = 0; }
    /* KFD's defaults: no GPU access with XNACK off, host access, fine grained. */
    CHECK(svm_get(m, bytes, HSA_AMD_SVM_ATTRIB_ACCESS_QUERY, e->gpu.handle) == HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS);
    CHECK(svm_get(m, bytes, HSA_AMD_SVM_ATTRIB_ACCESS_QUERY, e->cpu.handle) == HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE);
    CHECK(svm_get(m, bytes, HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG, 0) == HSA_AMD_SVM_GLOBAL_FLAG_FINE_GRAINED);

    hsa_amd_svm_attribute_pair_t set[] = {
        {HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE, e->gpu.handle},
        {HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION, e->gpu.handle},
    };
    OK(hsa_amd_svm_attributes_set(m, bytes, set, 2));
    CHECK(svm_get(m, bytes, HSA_AMD_SVM_ATTRIB_ACCESS_QUERY, e->gpu.handle) == HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE);
    CHECK(svm_get(m, bytes, HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION, 0) == e->gpu.handle);
    /* Half coarse: the whole range is neither. */
    hsa_amd_svm_attribute_pair_t coarse = {HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG, HSA_AMD_SVM_GLOBAL_FLAG_COARSE_GRAINED};
    OK(hsa_amd_svm_attributes_set(m, bytes / 2, &coarse, 1));
    CHECK(svm_get(m, bytes, HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG, 0) == HSA_AMD_SVM_GLOBAL_FLAG_INDETERMINATE);
    CHECK(svm_get(m, page, HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG, 0) == HSA_AMD_SVM_GLOBAL_FLAG_COARSE_GRAINED);
    /* Bad lists, checked as ROCr does. */
    hsa_amd_svm_attribute_pair_t twice[] = {{HSA_AMD_SVM_ATTRIB_READ_MOSTLY, 1}, {HSA_AMD_SVM_ATTRIB_READ_MOSTLY, 0}};
    CHECK_STATUS(hsa_amd_svm_attributes_set(m, bytes, twice, 2), HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS);
    hsa_amd_svm_attribute_pair_t bogus = {0x77, 0};
    CHECK_STATUS(hsa_amd_svm_attributes_set(m, bytes, &bogus, 1), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    hsa_amd_svm_attribute_pair_t noagent = {HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE, 0x1234};
    CHECK_STATUS(hsa_amd_svm_attributes_set(m, bytes, &noagent, 1), HSA_STATUS_ERROR_INVALID_AGENT);

    /* A prefetch to the GPU, recorded as the range's prefetch location. */
    hsa_signal_t done;
    OK(hsa_signal_create(1, 0, NULL, &done));
    OK(hsa_amd_svm_prefetch_async(m, bytes, e->gpu, 0, NULL, done));
    CHECK(hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    OK(hsa_signal_destroy(done));
    CHECK(svm_get(m, bytes, HSA_AMD_SVM_ATTRIB_PREFETCH_LOCATION, 0) == e->gpu.handle);

    /* The kernel works on the range in place; HSA does not know it as its memory. */
    add(e, q, k, a, b, c, n);
    check_sums(a, b, c, n);
    CHECK(info_of(c).type == HSA_EXT_POINTER_TYPE_UNKNOWN);

    /* SVM attributes over a pool allocation: refused, as KFD refuses them. */
    void *dev = device_alloc(e, page);
    CHECK_STATUS(hsa_amd_svm_attributes_set(dev, page, set, 1), HSA_STATUS_ERROR);
    OK(hsa_amd_memory_pool_free(dev));
    munmap(m, bytes);
}

static void test_copy_rect(const env_t *e) {
    /* A 5 x 3 x 2 block (x in bytes: 5 floats) from one pitched layout to another. */
    const size_t sp = 64, ss = 64 * 8, dp = 32, ds = 32 * 4;
    unsigned char *src = device_alloc(e, ss * 3), *dst = device_alloc(e, ds * 2);
    for (size_t i = 0; i < ss * 3; i++) src[i] = (unsigned char)(i * 7 + 1);
    memset(dst, 0, ds * 2);
    hsa_pitched_ptr_t s = {src, sp, ss}, d = {dst, dp, ds};
    hsa_dim3_t so = {8, 2, 1}, dof = {4, 1, 0}, range = {20, 3, 2};
    hsa_signal_t done;
    OK(hsa_signal_create(1, 0, NULL, &done));
    OK(hsa_amd_memory_async_copy_rect(&d, &dof, &s, &so, &range, e->gpu, hsaDeviceToDevice, 0, NULL, done));
    CHECK(hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    for (size_t z = 0; z < 2; z++)
        for (size_t y = 0; y < 4; y++)
            for (size_t x = 0; x < dp; x++) {
                int inside = y >= 1 && y < 4 && x >= 4 && x < 24;
                unsigned char want = inside ? src[(z + 1) * ss + (y - 1 + 2) * sp + (x - 4 + 8)] : 0;
                if (dst[z * ds + y * dp + x] != want) {
                    fprintf(stderr, "rect copy: dst[%zu][%zu][%zu] = %u, want %u\n", z, y, x,
                            dst[z * ds + y * dp + x], want);
                    exit(1);
                }
            }
    /* Rows that do not fit their pitch are refused. */
    hsa_dim3_t wide = {60, 1, 1};
    CHECK_STATUS(hsa_amd_memory_async_copy_rect(&d, &dof, &s, &so, &wide, e->gpu, hsaDeviceToDevice, 0, NULL, done),
                 HSA_STATUS_ERROR_INVALID_ARGUMENT);
    OK(hsa_signal_destroy(done));
    OK(hsa_amd_memory_pool_free(src));
    OK(hsa_amd_memory_pool_free(dst));
}

static void test_signals_are_memory(void) {
    hsa_signal_t s;
    OK(hsa_signal_create(77, 0, NULL, &s));
    amd_signal_t *raw = (amd_signal_t *)s.handle;
    CHECK(raw->kind == AMD_SIGNAL_KIND_USER && raw->value == 77);
    /* An interrupt signal (a CPU may wait): a mailbox and an event id. */
    CHECK(raw->event_mailbox_ptr != 0 && raw->event_id != 0);
    const hsa_signal_value_t *vp;
    OK(hsa_amd_signal_value_pointer(s, &vp));
    CHECK(vp == &raw->value);
    /* A write to the memory (as a kernel's atomic) is the signal's value. */
    atomic_fetch_add((_Atomic int64_t *)&raw->value, 5);
    CHECK(hsa_signal_load_scacquire(s) == 82);
    OK(hsa_signal_destroy(s));
    /* GPU-only signals have no interrupt. */
    OK(hsa_amd_signal_create(0, 0, NULL, HSA_AMD_SIGNAL_AMD_GPU_ONLY, &s));
    CHECK(((amd_signal_t *)s.handle)->event_mailbox_ptr == 0);
    OK(hsa_signal_destroy(s));
}

static void test_profiling(const env_t *e, hsa_queue_t *q, kernel_t k) {
    OK(hsa_amd_profiling_set_profiler_enabled(q, 1));
    const uint32_t n = 4096;
    float *a = host_alloc(e, n * sizeof(float)), *c = host_alloc(e, n * sizeof(float));
    for (uint32_t i = 0; i < n; i++) a[i] = (float)i;
    struct args x = {a, a, c, n};
    const uint32_t grid[3] = {n, 1, 1};
    const uint16_t wg[3] = {64, 1, 1};
    void *args = kernarg_segment(e, k, &x, sizeof x, grid, wg);
    hsa_signal_t done;
    OK(hsa_signal_create(1, 0, NULL, &done));
    uint64_t before, after;
    OK(hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP, &before));
    submit_dispatch(q, k, args, grid, wg, done, (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) | SYSTEM_FENCES);
    CHECK(hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    OK(hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP, &after));
    hsa_amd_profiling_dispatch_time_t t;
    OK(hsa_amd_profiling_get_dispatch_time(e->gpu, done, &t));
    /* The dispatch ran between the two readings of the system clock. */
    if (!(before <= t.start && t.start <= t.end && t.end <= after)) {
        fprintf(stderr, "dispatch time %llu..%llu outside %llu..%llu\n", (unsigned long long)t.start,
                (unsigned long long)t.end, (unsigned long long)before, (unsigned long long)after);
        exit(1);
    }
    check_sums(a, a, c, n);
    OK(hsa_amd_profiling_set_profiler_enabled(q, 0));
    OK(hsa_signal_destroy(done));
    OK(hsa_amd_memory_pool_free(args));
}

static atomic_uint_least64_t g_fault_address;
static atomic_int g_queue_error;

static hsa_status_t on_event(const hsa_amd_event_t *ev, void *data) {
    (void)data;
    if (ev->event_type == HSA_AMD_GPU_MEMORY_FAULT_EVENT)
        atomic_store(&g_fault_address, ev->memory_fault.virtual_address);
    return HSA_STATUS_SUCCESS;
}

static void on_queue_error(hsa_status_t status, hsa_queue_t *q, void *data) {
    (void)q; (void)data;
    atomic_store(&g_queue_error, (int)status);
}

/* The store lands in pageable memory the GPU may not reach: the dispatch
 * faults at that address, the system event handler is told it, and the
 * memory is untouched. */
static void test_pageable_faults(const env_t *e, kernel_t k) {
    OK(hsa_amd_register_system_event_handler(on_event, NULL));
    hsa_queue_t *q;
    OK(hsa_queue_create(e->gpu, 64, HSA_QUEUE_TYPE_MULTI, on_queue_error, NULL, UINT32_MAX, UINT32_MAX, &q));
    const uint32_t n = 64;
    float *a = host_alloc(e, n * sizeof(float));
    float *c = malloc(n * sizeof(float));
    for (uint32_t i = 0; i < n; i++) { a[i] = 1; c[i] = 42; }
    struct args x = {a, a, c, n};
    const uint32_t grid[3] = {n, 1, 1};
    const uint16_t wg[3] = {64, 1, 1};
    void *args = kernarg_segment(e, k, &x, sizeof x, grid, wg);
    hsa_signal_t done;
    OK(hsa_signal_create(1, 0, NULL, &done));
    submit_dispatch(q, k, args, grid, wg, done, HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE);
    for (int i = 0; i < 2000 && atomic_load(&g_fault_address) == 0; i++) usleep(5000);
    uint64_t at = atomic_load(&g_fault_address);
    CHECK(at >= (uintptr_t)c && at < (uintptr_t)(c + n));
    /* As in ROCr, a page fault goes to the system event handler only: the
     * queue's error callback is not called with it (AqlQueue::ExceptionHandler
     * drops HSA_STATUS_ERROR_MEMORY_FAULT), and the dispatch never completes. */
    usleep(20000);
    CHECK(atomic_load(&g_queue_error) == 0);
    CHECK(hsa_signal_load_scacquire(done) == 1);
    for (uint32_t i = 0; i < n; i++) CHECK(c[i] == 42);
    free(c);
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    env_t e = setup();
    g_gpu = e.gpu;
    char path[4096];
    snprintf(path, sizeof path, "%s/vector_add.hsaco", argv[1]);
    hsa_executable_t exe = load_executable(&e, path, 0);
    kernel_t k = find_kernel(exe, e.gpu, "vector_add");
    hsa_queue_t *q;
    OK(hsa_queue_create(e.gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX, &q));
    test_system_info();
    test_locked(&e, q, k);
    test_svm(&e, q, k);
    test_copy_rect(&e);
    test_signals_are_memory();
    test_profiling(&e, q, k);
    OK(hsa_queue_destroy(q));
    test_pageable_faults(&e, k);
    printf("PASS\n");
    return 0;
}
