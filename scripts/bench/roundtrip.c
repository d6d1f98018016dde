/* Benchmark (issue 5): round trip of an empty kernel through the drop-in
 * runtime, from writing the AQL packet to observing its completion signal,
 * and of a barrier-AND packet (the queue's own cost, no kernel) for scale.
 * argv: empty.hsaco iterations. Prints median and 99th percentile in µs. */
#include "../../crates/hsa/tests/c/dispatch.h"
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, double *t, int n) {
    qsort(t, n, sizeof *t, cmp);
    printf("%-34s median %7.2f us   p99 %7.2f us   (%d round trips)\n", what, t[n / 2], t[n * 99 / 100], n);
}

/* One packet: write it, store its header, ring, wait for the signal. */
static double round_trip(hsa_queue_t *q, uint16_t type, kernel_t *k, void *args, hsa_signal_t done,
                         hsa_wait_state_t wait) {
    hsa_signal_store_relaxed(done, 1);
    double t0 = now_us();
    uint64_t id = hsa_queue_add_write_index_relaxed(q, 1);
    hsa_kernel_dispatch_packet_t *p = (hsa_kernel_dispatch_packet_t *)q->base_address + (id & (q->size - 1));
    memset((uint8_t *)p + 4, 0, sizeof *p - 4);
    uint32_t setup = 0;
    if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH) {
        p->workgroup_size_x = 64; p->workgroup_size_y = 1; p->workgroup_size_z = 1;
        p->grid_size_x = 64; p->grid_size_y = 1; p->grid_size_z = 1;
        p->kernel_object = k->object;
        p->kernarg_address = args;
        setup = 1;
    }
    p->completion_signal = done;
    __atomic_store_n((uint32_t *)p, (uint32_t)(type << HSA_PACKET_HEADER_TYPE) | (setup << 16), __ATOMIC_RELEASE);
    hsa_signal_store_relaxed(q->doorbell_signal, (hsa_signal_value_t)id);
    while (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, wait) != 0) {
    }
    return now_us() - t0;
}

int main(int argc, char **argv) {
    CHECK(argc == 3);
    int n = atoi(argv[2]);
    CHECK(n >= 100);
    env_t e = setup();
    hsa_executable_t exe = load_executable(&e, argv[1], 0);
    kernel_t k = find_kernel(exe, e.gpu, "empty");
    void *args = host_alloc(&e, k.kernarg_size ? k.kernarg_size : 8);
    memset(args, 0, k.kernarg_size ? k.kernarg_size : 8);
    hsa_queue_t *q;
    OK(hsa_queue_create(e.gpu, 1024, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX, UINT32_MAX, &q));
    hsa_signal_t done;
    OK(hsa_signal_create(1, 0, NULL, &done));
    double *t = malloc(sizeof(double) * n);
    const struct { const char *what; uint16_t type; hsa_wait_state_t wait; } cases[] = {
        {"empty kernel, active wait", HSA_PACKET_TYPE_KERNEL_DISPATCH, HSA_WAIT_STATE_ACTIVE},
        {"empty kernel, blocked wait", HSA_PACKET_TYPE_KERNEL_DISPATCH, HSA_WAIT_STATE_BLOCKED},
        {"barrier-AND packet, active wait", HSA_PACKET_TYPE_BARRIER_AND, HSA_WAIT_STATE_ACTIVE},
    };
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int i = 0; i < n / 10; i++) round_trip(q, cases[c].type, &k, args, done, cases[c].wait); /* warm up */
        for (int i = 0; i < n; i++) t[i] = round_trip(q, cases[c].type, &k, args, done, cases[c].wait);
        report(cases[c].what, t, n);
    }
    OK(hsa_queue_destroy(q));
    OK(hsa_signal_destroy(done));
    OK(hsa_executable_destroy(exe));
    OK(hsa_shut_down());
    return 0;
}
