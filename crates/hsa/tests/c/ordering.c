/* Ordering: barrier-AND and barrier-OR packets across two queues with their
 * dependency signals set from other threads; the barrier bit holds later
 * packets back; completion signals go down in packet order; several threads
 * submit to one queue at once; chains of async copies ordered only by their
 * dependency signals, mixed with barrier packets. */
#include "check.h"
#include <unistd.h>
#include <pthread.h>
#include <time.h>

static env_t E;
static void sleep_ms(int ms) { struct timespec ts = {0, ms * 1000000L}; nanosleep(&ts, NULL); }

static void wait_zero(hsa_signal_t s) {
    CHECK(hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
}

/* Writes a barrier packet (header last, with release) and rings the doorbell. */
static uint64_t submit_barrier(hsa_queue_t *q, uint16_t type, int barrier_bit, const hsa_signal_t *deps, int ndeps, hsa_signal_t done) {
    uint64_t id = hsa_queue_add_write_index_scacq_screl(q, 1);
    while (id - hsa_queue_load_read_index_scacquire(q) >= q->size) sleep_ms(1);
    hsa_barrier_and_packet_t *p = (hsa_barrier_and_packet_t *)q->base_address + (id & (q->size - 1));
    memset((char *)p + 2, 0, sizeof *p - 2);
    for (int i = 0; i < ndeps; i++) p->dep_signal[i] = deps[i];
    p->completion_signal = done;
    uint16_t header = (uint16_t)(type << HSA_PACKET_HEADER_TYPE) | (uint16_t)(barrier_bit << HSA_PACKET_HEADER_BARRIER)
        | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE)
        | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
    __atomic_store_n(&p->header, header, __ATOMIC_RELEASE);
    hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)id);
    return id;
}

static hsa_signal_t new_signal(hsa_signal_value_t v) {
    hsa_signal_t s;
    OK(hsa_signal_create(v, 0, NULL, &s));
    return s;
}

/* A thread that sets signals to 0, one every `gap_ms`, in the order given. */
typedef struct { hsa_signal_t *sigs; int n; int gap_ms; } setter_t;
static void *setter(void *arg) {
    setter_t *s = arg;
    for (int i = 0; i < s->n; i++) {
        sleep_ms(s->gap_ms);
        hsa_signal_store_screlease(s->sigs[i], 0);
    }
    return NULL;
}

/* 1. One queue, N barrier-AND packets with the barrier bit, packet i gated by
 * gate[i]. Another thread opens the gates last-to-first, except gate 0: no
 * packet may complete (packet 0 holds the rest back), the read index stays.
 * Opening gate 0 lets all complete, and they complete in order: each
 * completion signal's async handler sees the earlier ones already at 0. */
#define N 8
static hsa_signal_t done1[N];
static volatile int order_ok = 1, handled = 0;
static bool on_done(hsa_signal_value_t v, void *arg) {
    int i = (int)(intptr_t)arg;
    (void)v;
    for (int j = 0; j < i; j++)
        if (hsa_signal_load_scacquire(done1[j]) != 0) order_ok = 0;
    __atomic_add_fetch(&handled, 1, __ATOMIC_SEQ_CST);
    return false;
}

static void barrier_bit_holds_later_packets(hsa_queue_t *q) {
    hsa_signal_t gate[N], reverse[N - 1];
    for (int i = 0; i < N; i++) { gate[i] = new_signal(1); done1[i] = new_signal(1); }
    uint64_t first = hsa_queue_load_write_index_relaxed(q);
    for (int i = 0; i < N; i++) submit_barrier(q, HSA_PACKET_TYPE_BARRIER_AND, 1, &gate[i], 1, done1[i]);
    for (int i = 0; i < N; i++) OK(hsa_amd_signal_async_handler(done1[i], HSA_SIGNAL_CONDITION_EQ, 0, on_done, (void *)(intptr_t)i));
    for (int i = 0; i < N - 1; i++) reverse[i] = gate[N - 1 - i];
    setter_t st = {reverse, N - 1, 3};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, setter, &st) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    sleep_ms(30);
    for (int i = 0; i < N; i++) CHECK(hsa_signal_load_scacquire(done1[i]) == 1);
    CHECK(hsa_queue_load_read_index_scacquire(q) == first);
    hsa_signal_store_screlease(gate[0], 0);
    wait_zero(done1[N - 1]);
    for (int i = 0; i < N; i++) CHECK(hsa_signal_load_scacquire(done1[i]) == 0);
    CHECK(hsa_queue_load_read_index_scacquire(q) == first + N);
    for (int i = 0; i < 2000 && handled < N; i++) sleep_ms(1);
    CHECK(handled == N && order_ok);
    for (int i = 0; i < N; i++) { OK(hsa_signal_destroy(gate[i])); OK(hsa_signal_destroy(done1[i])); }
}

/* 2. A ping-pong chain across two queues: A0 -> B0 -> A1 -> B1 -> ...; each
 * packet waits (AND) on the previous one's completion signal, and all are
 * submitted before any can run (B's first, so only the signals order them).
 * A gate set from another thread holds A3: exactly the packets before it run. */
static void ping_pong_across_queues(hsa_queue_t *qa, hsa_queue_t *qb) {
    enum { STEPS = 12, HELD = 6 /* A3 is step 6 */ };
    hsa_signal_t done[STEPS], gate = new_signal(1), start = new_signal(1);
    for (int i = 0; i < STEPS; i++) done[i] = new_signal(1);
    for (int i = 1; i < STEPS; i += 2) { /* B's packets: odd steps */
        hsa_signal_t dep = done[i - 1];
        submit_barrier(qb, HSA_PACKET_TYPE_BARRIER_AND, 1, &dep, 1, done[i]);
    }
    for (int i = 0; i < STEPS; i += 2) { /* A's packets: even steps */
        hsa_signal_t deps[2] = {i == 0 ? start : done[i - 1], gate};
        submit_barrier(qa, HSA_PACKET_TYPE_BARRIER_AND, 1, deps, i == HELD ? 2 : 1, done[i]);
    }
    sleep_ms(20);
    for (int i = 0; i < STEPS; i++) CHECK(hsa_signal_load_scacquire(done[i]) == 1);
    hsa_signal_store_screlease(start, 0);
    wait_zero(done[HELD - 1]);
    sleep_ms(30);
    for (int i = HELD; i < STEPS; i++) CHECK(hsa_signal_load_scacquire(done[i]) == 1);
    setter_t st = {&gate, 1, 5};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, setter, &st) == 0);
    wait_zero(done[STEPS - 1]);
    CHECK(pthread_join(t, NULL) == 0);
    for (int i = 0; i < STEPS; i++) { CHECK(hsa_signal_load_relaxed(done[i]) == 0); OK(hsa_signal_destroy(done[i])); }
    OK(hsa_signal_destroy(gate)); OK(hsa_signal_destroy(start));
}

/* 3. Barrier-OR: any one dependency at 0 is enough; a negative value is not 0.
 * The dependency is set from another thread while the queue waits. */
static void barrier_or(hsa_queue_t *q) {
    hsa_signal_t never = new_signal(1), negative = new_signal(-1), later = new_signal(5), done = new_signal(1);
    hsa_signal_t deps[5] = {never, negative, {0}, later, never};
    submit_barrier(q, HSA_PACKET_TYPE_BARRIER_OR, 1, deps, 5, done);
    sleep_ms(20);
    CHECK(hsa_signal_load_scacquire(done) == 1);
    hsa_signal_subtract_screlease(later, 4); /* 1: still not 0 */
    sleep_ms(20);
    CHECK(hsa_signal_load_scacquire(done) == 1);
    setter_t st = {&later, 1, 5};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, setter, &st) == 0);
    wait_zero(done);
    CHECK(pthread_join(t, NULL) == 0);
    /* An OR with no dependency at all completes at once (as does an AND). */
    submit_barrier(q, HSA_PACKET_TYPE_BARRIER_OR, 0, NULL, 0, done = new_signal(1));
    wait_zero(done);
    OK(hsa_signal_destroy(done));
    /* AND over five: completes only when the last of them reaches 0. */
    hsa_signal_t five[5];
    for (int i = 0; i < 5; i++) five[i] = new_signal(1);
    done = new_signal(1);
    submit_barrier(q, HSA_PACKET_TYPE_BARRIER_AND, 1, five, 5, done);
    for (int i = 0; i < 4; i++) hsa_signal_store_screlease(five[i], 0);
    sleep_ms(20);
    CHECK(hsa_signal_load_scacquire(done) == 1);
    hsa_signal_store_screlease(five[4], 0);
    wait_zero(done);
    for (int i = 0; i < 5; i++) OK(hsa_signal_destroy(five[i]));
    OK(hsa_signal_destroy(done)); OK(hsa_signal_destroy(never)); OK(hsa_signal_destroy(negative)); OK(hsa_signal_destroy(later));
}

/* 4. Four threads submit to one multi-producer queue at once (smaller than
 * the total, so they wrap the ring and wait for room). */
typedef struct { hsa_queue_t *q; hsa_signal_t done; int n; } producer_t;
static void *producer(void *arg) {
    producer_t *p = arg;
    for (int i = 0; i < p->n; i++) submit_barrier(p->q, HSA_PACKET_TYPE_BARRIER_AND, i & 1, NULL, 0, p->done);
    return NULL;
}
static void many_producers(hsa_queue_t *q) {
    enum { THREADS = 4, EACH = 100 };
    uint64_t first = hsa_queue_load_write_index_relaxed(q);
    producer_t p = {q, new_signal(THREADS * EACH), EACH};
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, producer, &p) == 0);
    for (int i = 0; i < THREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
    wait_zero(p.done);
    CHECK(hsa_queue_load_read_index_scacquire(q) == first + THREADS * EACH);
    CHECK(hsa_queue_load_write_index_scacquire(q) == first + THREADS * EACH);
    OK(hsa_signal_destroy(p.done));
}

/* 5. Chained async copies: host -> d[0] -> d[1] -> ... -> d[K-1] -> back,
 * submitted last-first so only the dependency signals order them; the first
 * waits on a gate another thread opens later. A barrier packet waits on the
 * middle copy; a copy waits on that barrier's completion and on a second
 * signal set later; every stage's data is checked. */
static void chained_copies(hsa_queue_t *q) {
    enum { K = 6, WORDS = 1 << 18 }; /* 1 MiB per buffer */
    const size_t bytes = WORDS * sizeof(uint32_t);
    uint32_t *host = NULL, *back = NULL, *side = NULL, *d[K];
    OK(hsa_amd_memory_pool_allocate(E.kernarg, bytes, 0, (void **)&host));
    OK(hsa_amd_memory_pool_allocate(E.kernarg, bytes, 0, (void **)&back));
    OK(hsa_amd_memory_pool_allocate(E.kernarg, bytes, 0, (void **)&side));
    for (int i = 0; i < K; i++) {
        OK(hsa_amd_memory_pool_allocate(E.device, bytes, 0, (void **)&d[i]));
        OK(hsa_amd_memory_fill(d[i], 0xdeadbeef, WORDS));
    }
    OK(hsa_amd_agents_allow_access(1, &E.gpu, NULL, host));
    OK(hsa_amd_agents_allow_access(1, &E.gpu, NULL, back));
    OK(hsa_amd_agents_allow_access(1, &E.gpu, NULL, side));
    for (uint32_t i = 0; i < WORDS; i++) { host[i] = i * 2654435761u; back[i] = side[i] = 0; }

    hsa_signal_t gate = new_signal(1), done[K + 1];
    for (int i = 0; i <= K; i++) done[i] = new_signal(1);
    /* back <- d[K-1] waits on done[K-1]; d[i] <- d[i-1] waits on done[i-1]; d[0] <- host waits on gate. */
    OK(hsa_amd_memory_async_copy(back, E.cpu, d[K - 1], E.gpu, bytes, 1, &done[K - 1], done[K]));
    for (int i = K - 1; i >= 1; i--)
        OK(hsa_amd_memory_async_copy(d[i], E.gpu, d[i - 1], E.gpu, bytes, 1, &done[i - 1], done[i]));
    OK(hsa_amd_memory_async_copy(d[0], E.gpu, host, E.cpu, bytes, 1, &gate, done[0]));
    /* A barrier on the queue waits for the middle copy; a side copy waits on
     * the barrier and on a signal set later by another thread. */
    hsa_signal_t barrier_done = new_signal(1), late = new_signal(1), side_done = new_signal(1);
    hsa_signal_t mid = done[K / 2];
    submit_barrier(q, HSA_PACKET_TYPE_BARRIER_AND, 1, &mid, 1, barrier_done);
    hsa_signal_t side_deps[2] = {barrier_done, late};
    OK(hsa_amd_memory_async_copy(side, E.cpu, d[K / 2], E.gpu, bytes, 2, side_deps, side_done));

    sleep_ms(30);
    for (int i = 0; i <= K; i++) CHECK(hsa_signal_load_scacquire(done[i]) == 1);
    CHECK(hsa_signal_load_scacquire(barrier_done) == 1);
    CHECK(back[1] == 0 && d[0][1] == 0xdeadbeef);
    hsa_signal_t open[2] = {gate, late};
    setter_t st = {open, 2, 10};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, setter, &st) == 0);
    wait_zero(done[K]);
    wait_zero(side_done);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(hsa_signal_load_scacquire(barrier_done) == 0);
    for (int i = 0; i < K; i++) CHECK(memcmp(d[i], host, bytes) == 0);
    CHECK(memcmp(back, host, bytes) == 0);
    CHECK(memcmp(side, host, bytes) == 0);

    /* Completion signals that count several copies: one signal at 3 for three copies. */
    hsa_signal_t three = new_signal(3);
    for (int i = 0; i < 3; i++)
        OK(hsa_amd_memory_async_copy(d[i], E.gpu, back, E.cpu, bytes, 0, NULL, three));
    wait_zero(three);
    for (int i = 0; i < 3; i++) CHECK(memcmp(d[i], host, bytes) == 0);

    for (int i = 0; i <= K; i++) OK(hsa_signal_destroy(done[i]));
    OK(hsa_signal_destroy(three)); OK(hsa_signal_destroy(gate)); OK(hsa_signal_destroy(late));
    OK(hsa_signal_destroy(side_done)); OK(hsa_signal_destroy(barrier_done));
    for (int i = 0; i < K; i++) OK(hsa_amd_memory_pool_free(d[i]));
    OK(hsa_amd_memory_pool_free(host)); OK(hsa_amd_memory_pool_free(back)); OK(hsa_amd_memory_pool_free(side));
}

/* 6. Destroying a queue whose barrier waits on a signal nobody sets returns
 * promptly; the waiting packet and the ones behind it never complete. */
static void destroy_while_blocked(void) {
    hsa_queue_t *q = NULL;
    OK(hsa_queue_create(E.gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &q));
    hsa_signal_t never = new_signal(1), done = new_signal(2);
    submit_barrier(q, HSA_PACKET_TYPE_BARRIER_AND, 1, &never, 1, done);
    submit_barrier(q, HSA_PACKET_TYPE_BARRIER_AND, 1, NULL, 0, done);
    sleep_ms(10);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    OK(hsa_queue_destroy(q));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    CHECK(ms < 1000);
    hsa_signal_store_screlease(never, 0);
    sleep_ms(20);
    CHECK(hsa_signal_load_scacquire(done) == 2);
    OK(hsa_signal_destroy(never)); OK(hsa_signal_destroy(done));
}

/* 7. Callbacks that destroy what called them: a queue's error callback
 * destroys its queue; a signal's async handler destroys its signal. */
static volatile int cb_state;
static volatile hsa_status_t cb_destroy_status = HSA_STATUS_ERROR;
static void destroy_from_error_callback(hsa_status_t st, hsa_queue_t *q, void *d) {
    (void)d;
    /* No dimensions: EC_QUEUE_PACKET_DISPATCH_DIM_INVALID, as ROCr maps it. */
    CHECK(st == HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS);
    cb_destroy_status = hsa_queue_destroy(q);
    cb_state = 1;
}
static hsa_signal_t self_destroying;
static bool destroy_from_handler(hsa_signal_value_t v, void *arg) {
    (void)v; (void)arg;
    cb_state = hsa_signal_destroy(self_destroying) == HSA_STATUS_SUCCESS ? 2 : -1;
    return false;
}
static void callbacks_destroy_their_source(void) {
    hsa_queue_t *q = NULL;
    OK(hsa_queue_create(E.gpu, 64, HSA_QUEUE_TYPE_MULTI, destroy_from_error_callback, NULL, 0, 0, &q));
    uint64_t id = hsa_queue_add_write_index_relaxed(q, 1);
    hsa_kernel_dispatch_packet_t *p = (hsa_kernel_dispatch_packet_t *)q->base_address + id;
    memset((char *)p + 2, 0, sizeof *p - 2); /* no dimensions: malformed */
    __atomic_store_n(&p->header, (uint16_t)(HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE), __ATOMIC_RELEASE);
    hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)id);
    for (int i = 0; i < 5000 && cb_state != 1; i++) sleep_ms(1);
    CHECK(cb_state == 1 && cb_destroy_status == HSA_STATUS_SUCCESS);
    CHECK_STATUS(hsa_queue_destroy(q), HSA_STATUS_ERROR_INVALID_QUEUE);
    self_destroying = new_signal(1);
    OK(hsa_amd_signal_async_handler(self_destroying, HSA_SIGNAL_CONDITION_EQ, 0, destroy_from_handler, NULL));
    hsa_signal_store_screlease(self_destroying, 0);
    for (int i = 0; i < 5000 && cb_state != 2; i++) sleep_ms(1);
    CHECK(cb_state == 2);
    CHECK_STATUS(hsa_signal_destroy(self_destroying), HSA_STATUS_ERROR_INVALID_SIGNAL);
}

int main(void) {
    alarm(120); /* a hang fails the test instead of stalling CI */
    E = setup();
    hsa_queue_t *qa = NULL, *qb = NULL;
    OK(hsa_queue_create(E.gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX, &qa));
    uint32_t min_size = 0;
    OK(hsa_agent_get_info(E.gpu, HSA_AGENT_INFO_QUEUE_MIN_SIZE, &min_size));
    CHECK(min_size >= 1 && min_size < 400);
    OK(hsa_queue_create(E.gpu, min_size, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &qb));
    barrier_bit_holds_later_packets(qa);
    ping_pong_across_queues(qa, qb);
    barrier_or(qb);
    many_producers(qb);
    chained_copies(qa);
    destroy_while_blocked();
    callbacks_destroy_their_source();
    OK(hsa_queue_destroy(qa));
    OK(hsa_queue_destroy(qb));

    /* A copy whose dependency never reaches 0 never happens, not even when
     * the runtime shuts down under it (host memory, registered, so it stays
     * readable after the shut-down). */
    static uint32_t src[1024] __attribute__((aligned(4096))), dst[1024] __attribute__((aligned(4096)));
    for (int i = 0; i < 1024; i++) { src[i] = 7; dst[i] = 0; }
    OK(hsa_memory_register(src, sizeof src));
    OK(hsa_memory_register(dst, sizeof dst));
    hsa_signal_t never = new_signal(1), copied = new_signal(1);
    OK(hsa_amd_memory_async_copy(dst, E.cpu, src, E.cpu, sizeof src, 1, &never, copied));
    sleep_ms(20);
    CHECK(dst[0] == 0 && hsa_signal_load_scacquire(copied) == 1);
    OK(hsa_shut_down());
    sleep_ms(200); /* the copy's waiter looks at least every 50 ms */
    for (int i = 0; i < 1024; i++) CHECK(dst[i] == 0);
    puts("PASS");
    return 0;
}
