/* Kernels ordered by barrier packets across two queues. A chain
 * y[k+1] = y[k] + 1 (vector_add into a fresh buffer each step) alternates
 * between queues A and B; before each kernel its queue holds a barrier
 * packet on the previous step's completion signal (AND on A, OR with a
 * signal nobody sets on B). Everything is submitted up front, B's packets
 * first, and the first step waits on a gate another thread opens later; an
 * async copy waiting on the last step brings the result home. A step that
 * ran early would read the previous buffer's sentinel, so every buffer is
 * checked. argv: the gfx90a v5 vector_add code object. */
#include "dispatch.h"
#include <unistd.h>
#include <pthread.h>
#include <time.h>

static env_t E;
static void sleep_ms(int ms) { struct timespec ts = {0, ms * 1000000L}; nanosleep(&ts, NULL); }

static volatile hsa_status_t queue_error;
static void on_queue_error(hsa_status_t st, hsa_queue_t *q, void *data) { (void)q; (void)data; queue_error = st; }

static hsa_signal_t new_signal(hsa_signal_value_t v) {
    hsa_signal_t s;
    OK(hsa_signal_create(v, 0, NULL, &s));
    return s;
}

static uint64_t claim(hsa_queue_t *q) {
    uint64_t id = hsa_queue_add_write_index_scacq_screl(q, 1);
    while (id - hsa_queue_load_read_index_scacquire(q) >= q->size) sleep_ms(1);
    return id;
}

static void publish(hsa_queue_t *q, uint64_t id, void *packet, uint32_t word) {
    __atomic_store_n((uint32_t *)packet, word, __ATOMIC_RELEASE);
    hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)id);
}

static const uint16_t FENCES = (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE)
                             | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);

static void submit_barrier(hsa_queue_t *q, uint16_t type, hsa_signal_t a, hsa_signal_t b, hsa_signal_t done) {
    uint64_t id = claim(q);
    hsa_barrier_and_packet_t *p = (hsa_barrier_and_packet_t *)q->base_address + (id & (q->size - 1));
    memset((char *)p + 4, 0, sizeof *p - 4);
    p->dep_signal[0] = a;
    p->dep_signal[1] = b;
    p->completion_signal = done;
    publish(q, id, p, (uint16_t)((type << HSA_PACKET_HEADER_TYPE) | (1 << HSA_PACKET_HEADER_BARRIER) | FENCES));
}

/* Writes a vector_add dispatch c = a + b over n elements; does not wait. */
static void submit_add(hsa_queue_t *q, kernel_t k, float *a, float *b, float *c, uint32_t n, hsa_signal_t done, void **kernarg) {
    struct { float *a, *b, *c; uint32_t n; } args = {a, b, c, n};
    uint32_t size = k.kernarg_size > sizeof args ? k.kernarg_size : sizeof args;
    OK(hsa_amd_memory_pool_allocate(E.kernarg, size, 0, kernarg));
    OK(hsa_amd_agents_allow_access(1, &E.gpu, NULL, *kernarg));
    memset(*kernarg, 0, size);
    memcpy(*kernarg, &args, 28);
    uint32_t grid[3] = {n, 1, 1};
    uint16_t wg[3] = {256, 1, 1};
    fill_implicit(*kernarg, size, 28, grid, wg, 1);
    uint64_t id = claim(q);
    hsa_kernel_dispatch_packet_t *p = (hsa_kernel_dispatch_packet_t *)q->base_address + (id & (q->size - 1));
    memset((char *)p + 4, 0, sizeof *p - 4);
    p->workgroup_size_x = wg[0]; p->workgroup_size_y = 1; p->workgroup_size_z = 1;
    p->grid_size_x = n; p->grid_size_y = 1; p->grid_size_z = 1;
    p->private_segment_size = k.private_size;
    p->group_segment_size = k.group_size;
    p->kernel_object = k.object;
    p->kernarg_address = *kernarg;
    p->completion_signal = done;
    uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) | (1 << HSA_PACKET_HEADER_BARRIER) | FENCES;
    publish(q, id, p, header | (1u << 16));
}

typedef struct { hsa_signal_t s; int ms; } opener_t;
static void *opener(void *arg) {
    opener_t *o = arg;
    sleep_ms(o->ms);
    hsa_signal_store_screlease(o->s, 0);
    return NULL;
}

int main(int argc, char **argv) {
    alarm(120); /* a hang fails the test instead of stalling CI */
    CHECK(argc == 2);
    (void)launch; /* dispatch.h's waiting launcher; this test submits without waiting */
    E = setup();
    hsa_executable_t exe = load_executable(&E, argv[1], 0);
    kernel_t k = find_kernel(exe, E.gpu, "vector_add");
    hsa_queue_t *qa = NULL, *qb = NULL;
    OK(hsa_queue_create(E.gpu, 64, HSA_QUEUE_TYPE_MULTI, on_queue_error, NULL, UINT32_MAX, UINT32_MAX, &qa));
    OK(hsa_queue_create(E.gpu, 64, HSA_QUEUE_TYPE_MULTI, on_queue_error, NULL, UINT32_MAX, UINT32_MAX, &qb));

    enum { N = 1000, STEPS = 8 };
    const float SENTINEL = -1.0e6f;
    float *y[STEPS + 1], *ones = device_alloc(&E, N * sizeof(float)), *home = host_alloc(&E, N * sizeof(float));
    float x[N], fill[N];
    for (int i = 0; i < N; i++) { x[i] = (float)(i % 97) * 0.25f; fill[i] = 1.0f; home[i] = SENTINEL; }
    OK(hsa_memory_copy(ones, fill, sizeof fill));
    for (int s = 0; s <= STEPS; s++) {
        y[s] = device_alloc(&E, N * sizeof(float));
        for (int i = 0; i < N; i++) fill[i] = SENTINEL;
        OK(hsa_memory_copy(y[s], s == 0 ? x : fill, sizeof fill));
    }

    hsa_signal_t gate = new_signal(1), never = new_signal(1), copied = new_signal(1);
    hsa_signal_t done[STEPS], ready[STEPS];
    void *kernarg[STEPS];
    for (int s = 0; s < STEPS; s++) { done[s] = new_signal(1); ready[s] = new_signal(1); }
    /* Odd steps on B first, then even steps on A: only the signals order them. */
    for (int pass = 1; pass >= 0; pass--)
        for (int s = pass; s < STEPS; s += 2) {
            hsa_queue_t *q = s % 2 ? qb : qa;
            hsa_signal_t prev = s == 0 ? gate : done[s - 1];
            if (s % 2) submit_barrier(q, HSA_PACKET_TYPE_BARRIER_OR, never, prev, ready[s]);
            else submit_barrier(q, HSA_PACKET_TYPE_BARRIER_AND, prev, (hsa_signal_t){0}, ready[s]);
            submit_add(q, k, y[s], ones, y[s + 1], N, done[s], &kernarg[s]);
        }
    OK(hsa_amd_memory_async_copy(home, E.cpu, y[STEPS], E.gpu, N * sizeof(float), 1, &done[STEPS - 1], copied));

    sleep_ms(30);
    for (int s = 0; s < STEPS; s++) CHECK(hsa_signal_load_scacquire(done[s]) == 1 && hsa_signal_load_scacquire(ready[s]) == 1);
    OK(hsa_memory_copy(fill, y[1], sizeof fill));
    CHECK(fill[0] == SENTINEL && fill[N - 1] == SENTINEL);
    opener_t o = {gate, 10};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, opener, &o) == 0);
    CHECK(hsa_signal_wait_scacquire(copied, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(queue_error == HSA_STATUS_SUCCESS);
    for (int s = 0; s < STEPS; s++) CHECK(hsa_signal_load_scacquire(done[s]) == 0 && hsa_signal_load_scacquire(ready[s]) == 0);
    for (int s = 1; s <= STEPS; s++) {
        OK(hsa_memory_copy(fill, y[s], sizeof fill));
        for (int i = 0; i < N; i++)
            if (fill[i] != x[i] + (float)s) { fprintf(stderr, "step %d, element %d: %f, want %f\n", s, i, fill[i], x[i] + (float)s); return 1; }
    }
    for (int i = 0; i < N; i++) CHECK(home[i] == x[i] + (float)STEPS);
    CHECK(hsa_queue_load_read_index_scacquire(qa) == STEPS && hsa_queue_load_read_index_scacquire(qb) == STEPS);

    for (int s = 0; s < STEPS; s++) {
        OK(hsa_signal_destroy(done[s])); OK(hsa_signal_destroy(ready[s]));
        OK(hsa_amd_memory_pool_free(kernarg[s]));
    }
    for (int s = 0; s <= STEPS; s++) OK(hsa_amd_memory_pool_free(y[s]));
    OK(hsa_amd_memory_pool_free(ones)); OK(hsa_amd_memory_pool_free(home));
    OK(hsa_signal_destroy(gate)); OK(hsa_signal_destroy(never)); OK(hsa_signal_destroy(copied));
    OK(hsa_queue_destroy(qa)); OK(hsa_queue_destroy(qb));
    OK(hsa_executable_destroy(exe));
    OK(hsa_shut_down());
    puts("PASS");
    return 0;
}
