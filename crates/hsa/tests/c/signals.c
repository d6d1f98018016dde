/* Every signal operation and wait condition, timeouts, the async handler. */
#include "check.h"
#include <pthread.h>
#include <time.h>

static hsa_signal_t shared_sig;
static void *store_later(void *arg) {
    (void)arg;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    hsa_signal_store_screlease(shared_sig, 0);
    return NULL;
}

static volatile int handler_calls;
static volatile hsa_signal_value_t handler_value;
static bool on_signal(hsa_signal_value_t v, void *arg) {
    CHECK(arg == (void *)&handler_calls);
    handler_value = v;
    handler_calls++;
    return false; /* once */
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

int main(void) {
    env_t e = setup();
    hsa_signal_t s;
    OK(hsa_signal_create(10, 0, NULL, &s));
    CHECK(hsa_signal_load_relaxed(s) == 10);
    hsa_signal_add_relaxed(s, 5); hsa_signal_add_scacquire(s, 1); hsa_signal_add_screlease(s, 1); hsa_signal_add_scacq_screl(s, 1);
    CHECK(hsa_signal_load_scacquire(s) == 18);
    hsa_signal_subtract_relaxed(s, 1); hsa_signal_subtract_scacquire(s, 1); hsa_signal_subtract_screlease(s, 1); hsa_signal_subtract_scacq_screl(s, 1);
    CHECK(hsa_signal_load_relaxed(s) == 14);
    hsa_signal_store_relaxed(s, 0xff);
    hsa_signal_and_relaxed(s, 0xf0); hsa_signal_and_scacquire(s, 0xf0); hsa_signal_and_screlease(s, 0xf0); hsa_signal_and_scacq_screl(s, 0x70);
    CHECK(hsa_signal_load_relaxed(s) == 0x70);
    hsa_signal_or_relaxed(s, 1); hsa_signal_or_scacquire(s, 2); hsa_signal_or_screlease(s, 4); hsa_signal_or_scacq_screl(s, 8);
    CHECK(hsa_signal_load_relaxed(s) == 0x7f);
    hsa_signal_xor_relaxed(s, 1); hsa_signal_xor_scacquire(s, 2); hsa_signal_xor_screlease(s, 4); hsa_signal_xor_scacq_screl(s, 8);
    CHECK(hsa_signal_load_relaxed(s) == 0x70);
    CHECK(hsa_signal_exchange_relaxed(s, 1) == 0x70);
    CHECK(hsa_signal_exchange_scacquire(s, 2) == 1);
    CHECK(hsa_signal_exchange_screlease(s, 3) == 2);
    CHECK(hsa_signal_exchange_scacq_screl(s, 4) == 3);
    CHECK(hsa_signal_cas_relaxed(s, 4, 5) == 4);
    CHECK(hsa_signal_cas_scacquire(s, 99, 6) == 5); /* fails: value stays 5 */
    CHECK(hsa_signal_cas_screlease(s, 5, 6) == 5);
    CHECK(hsa_signal_cas_scacq_screl(s, 6, 7) == 6);
    CHECK(hsa_signal_load_relaxed(s) == 7);
    hsa_signal_silent_store_relaxed(s, 8);
    hsa_signal_silent_store_screlease(s, 9);
    hsa_signal_store_screlease(s, 9);
    CHECK(hsa_signal_load_relaxed(s) == 9);

    /* Each condition, satisfied at once. */
    CHECK(hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 9, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 9);
    CHECK(hsa_signal_wait_relaxed(s, HSA_SIGNAL_CONDITION_NE, 8, UINT64_MAX, HSA_WAIT_STATE_ACTIVE) == 9);
    CHECK(hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_LT, 10, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 9);
    CHECK(hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_GTE, 9, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 9);
    /* Unsatisfied with a 50 ms timeout hint (1 GHz timestamp): returns the current value after about that long. */
    uint64_t freq = 0;
    OK(hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &freq));
    double t0 = now();
    CHECK(hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, freq / 20, HSA_WAIT_STATE_BLOCKED) == 9);
    double waited = now() - t0;
    CHECK(waited >= 0.045 && waited < 2.0);

    /* Another thread wakes a blocked waiter. */
    shared_sig = s;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, store_later, NULL) == 0);
    CHECK(hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    pthread_join(th, NULL);

    /* Async handler runs on another thread once the condition holds. */
    hsa_signal_store_relaxed(s, 1);
    OK(hsa_amd_signal_async_handler(s, HSA_SIGNAL_CONDITION_LT, 1, on_signal, (void *)&handler_calls));
    CHECK(handler_calls == 0);
    hsa_signal_store_screlease(s, -3);
    for (int i = 0; i < 2000 && handler_calls == 0; i++) { struct timespec ts = {0, 1000000}; nanosleep(&ts, NULL); }
    CHECK(handler_calls == 1 && handler_value == -3);

    /* The value pointer aliases the signal. */
    volatile hsa_signal_value_t *vp = NULL;
    OK(hsa_amd_signal_value_pointer(s, &vp));
    CHECK(vp && *vp == -3);

    /* Wait on any of several signals: the satisfied one's index, or UINT32_MAX on timeout. */
    hsa_signal_t pair[2];
    OK(hsa_signal_create(5, 0, NULL, &pair[0]));
    OK(hsa_signal_create(6, 0, NULL, &pair[1]));
    hsa_signal_condition_t conds[2] = {HSA_SIGNAL_CONDITION_EQ, HSA_SIGNAL_CONDITION_LT};
    hsa_signal_value_t vals[2] = {0, 0}, got = 99;
    CHECK(hsa_amd_signal_wait_any(2, pair, conds, vals, freq / 50, HSA_WAIT_STATE_BLOCKED, &got) == UINT32_MAX);
    hsa_signal_store_screlease(pair[1], -1);
    CHECK(hsa_amd_signal_wait_any(2, pair, conds, vals, UINT64_MAX, HSA_WAIT_STATE_BLOCKED, &got) == 1 && got == -1);
    OK(hsa_signal_destroy(pair[0]));
    OK(hsa_signal_destroy(pair[1]));

    hsa_signal_t amd;
    OK(hsa_amd_signal_create(1, 1, &e.gpu, 0, &amd));
    CHECK(hsa_signal_load_relaxed(amd) == 1);
    OK(hsa_signal_destroy(amd));
    OK(hsa_signal_destroy(s));
    CHECK_STATUS(hsa_signal_destroy(s), HSA_STATUS_ERROR_INVALID_SIGNAL);
    OK(hsa_shut_down());
    puts("PASS");
    return 0;
}
