/* Calls every status-returning export named on the command line through
 * dlvsym(name, "ROCR_1") with all-zero arguments (null pointers, zero
 * handles, zero sizes), first before hsa_init, after it, and after the last
 * hsa_shut_down. Each must return an error (NOT_INITIALIZED before init),
 * except the few that ROCr's source accepts all-zero; nothing may crash;
 * afterwards the runtime must still work. Functions returning a value or
 * nothing abort on a zero handle, as ROCr's do (tests/hostile.rs). */
#define _GNU_SOURCE
#include "check.h"
#include <dlfcn.h>

typedef uint64_t (*any_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

/* Functions that return a value or nothing rather than an hsa_status_t. */
static int returns_status(const char *n) {
    static const char *value_prefixes[] = {
        "hsa_signal_load_", "hsa_signal_store_", "hsa_signal_silent_store_", "hsa_signal_add_", "hsa_signal_subtract_",
        "hsa_signal_and_", "hsa_signal_or_", "hsa_signal_xor_", "hsa_signal_exchange_", "hsa_signal_cas_", "hsa_signal_wait_",
        "hsa_queue_load_", "hsa_queue_store_", "hsa_queue_add_", "hsa_queue_cas_", "hsa_amd_signal_wait_any", NULL };
    for (int i = 0; value_prefixes[i]; i++) if (strncmp(n, value_prefixes[i], strlen(value_prefixes[i])) == 0) return 0;
    return 1;
}

/* All-zero arguments are valid for these in ROCr: freeing, deregistering,
 * unlocking or unmapping NULL, registering a null range, registering a
 * (null) event handler, asking for no SVM attributes, disabling profiling. */
static int zero_args_may_succeed(const char *n) {
    static const char *ok[] = {
        "hsa_amd_profiling_async_copy_enable", "hsa_memory_free", "hsa_amd_memory_pool_free",
        "hsa_memory_register", "hsa_memory_deregister", "hsa_amd_memory_unlock",
        "hsa_amd_interop_unmap_buffer", "hsa_amd_register_system_event_handler",
        "hsa_amd_svm_attributes_get", NULL };
    for (int i = 0; ok[i]; i++) if (strcmp(n, ok[i]) == 0) return 1;
    return 0;
}

/* pass 0: runtime not initialized (before hsa_init or after the last
 * hsa_shut_down): every status must be NOT_INITIALIZED. pass 1: initialized:
 * no all-zero call may succeed. */
static int sweep(void *lib, int argc, char **argv, int pass) {
    for (int i = 1; i < argc; i++) {
        const char *n = argv[i];
        if (strcmp(n, "hsa_init") == 0 || strcmp(n, "hsa_shut_down") == 0) continue;
        any_fn f = (any_fn)dlvsym(lib, n, "ROCR_1");
        if (!f) { fprintf(stderr, "%s@ROCR_1 not found\n", n); return 1; }
        if (!returns_status(n)) continue;
        uint32_t st = (uint32_t)f(0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        if (pass == 0 && strcmp(n, "hsa_status_string") != 0 && st != HSA_STATUS_ERROR_NOT_INITIALIZED) {
            fprintf(stderr, "%s without an initialized runtime returned 0x%x\n", n, st); return 1;
        }
        if (pass == 1 && (st == HSA_STATUS_SUCCESS || st == HSA_STATUS_INFO_BREAK) && !zero_args_may_succeed(n)) {
            fprintf(stderr, "%s with zero arguments returned 0x%x\n", n, st); return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    void *lib = dlopen("libhsa-runtime64.so.1", RTLD_NOW);
    CHECK(lib != NULL);
    if (sweep(lib, argc, argv, 0)) return 1;
    OK(hsa_init());
    if (sweep(lib, argc, argv, 1)) return 1;
    /* Still working. */
    env_t e = setup();
    hsa_signal_t s;
    OK(hsa_signal_create(2, 1, &e.gpu, &s));
    hsa_signal_subtract_scacq_screl(s, 2);
    CHECK(hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    OK(hsa_signal_destroy(s));
    OK(hsa_shut_down());
    OK(hsa_shut_down());
    /* After the last shut-down: not initialized again, for every export. */
    if (sweep(lib, argc, argv, 0)) return 1;
    printf("PASS %d symbols\n", argc - 1);
    return 0;
}
