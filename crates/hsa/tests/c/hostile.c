/* Programs that misbehave, each as ROCr's users see it end: kernels that
 * fault with and without a queue error callback and system event handler,
 * kernels that never end (with and without INLAY_DISPATCH_TIMEOUT), queues
 * destroyed and the runtime shut down under running kernels, and value
 * functions given handles that are not signals or queues.
 *
 *   hostile CASE KERNELS.hsaco        one case (see `cases` at the bottom)
 *   hostile misuse NAME...            each NAME (a signal or queue function
 *                                     returning a value or nothing) called
 *                                     with a bad handle in a child process
 *
 * tests/hostile.rs runs each case with a wall-clock bound and checks how it
 * ended (exit status or signal) and what it printed. A case that ends
 * normally prints PASS; lines starting with "SAW " report what the program
 * observed, for the driver to compare with what ROCr's source says. */
#define _GNU_SOURCE
#include "dispatch.h"
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

static env_t E;
static hsa_executable_t EXE;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static volatile int callback_calls;
static volatile hsa_status_t callback_status;
static void on_queue_error(hsa_status_t st, hsa_queue_t *q, void *data) {
    (void)q; (void)data;
    callback_status = st;
    __atomic_add_fetch(&callback_calls, 1, __ATOMIC_SEQ_CST);
}

static volatile int events;
static volatile uint64_t event_address;
static hsa_status_t event_answer = HSA_STATUS_SUCCESS;
static hsa_status_t on_event(const hsa_amd_event_t *ev, void *data) {
    (void)data;
    if (ev->event_type == HSA_AMD_GPU_MEMORY_FAULT_EVENT) {
        event_address = ev->memory_fault.virtual_address;
        __atomic_add_fetch(&events, 1, __ATOMIC_SEQ_CST);
    }
    return event_answer;
}

static hsa_queue_t *new_queue(int with_callback) {
    hsa_queue_t *q = NULL;
    OK(hsa_queue_create(E.gpu, 64, HSA_QUEUE_TYPE_MULTI, with_callback ? on_queue_error : NULL,
                        NULL, UINT32_MAX, UINT32_MAX, &q));
    return q;
}

/* Writes a dispatch of `object` (64-item workgroups) into `q` without
 * waiting; returns its completion signal (initially 1). */
static hsa_signal_t submit(hsa_queue_t *q, uint64_t object, const void *args, uint32_t size,
                           uint32_t grid) {
    void *ka = NULL;
    if (size) {
        ka = host_alloc(&E, size);
        memcpy(ka, args, size);
    }
    hsa_signal_t done;
    OK(hsa_signal_create(1, 0, NULL, &done));
    uint64_t id = hsa_queue_add_write_index_relaxed(q, 1);
    hsa_kernel_dispatch_packet_t *p = (hsa_kernel_dispatch_packet_t *)q->base_address + (id & (q->size - 1));
    memset((uint8_t *)p + 4, 0, sizeof *p - 4);
    p->workgroup_size_x = 64; p->workgroup_size_y = 1; p->workgroup_size_z = 1;
    p->grid_size_x = grid; p->grid_size_y = 1; p->grid_size_z = 1;
    p->kernel_object = object;
    p->kernarg_address = ka;
    p->completion_signal = done;
    uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) | (1 << HSA_PACKET_HEADER_BARRIER)
        | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE)
        | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
    __atomic_store_n((uint32_t *)p, header | (1u << 16), __ATOMIC_RELEASE);
    hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)id);
    return done;
}

static uint64_t kernel(const char *name) { return find_kernel(EXE, E.gpu, name).object; }

/* The address no allocation holds that store_lane's faulting lane writes. */
#define BAD_ADDRESS 0x7e5700000040ull
#define BAD_LANE 37

/* store_lane over one wave: lane BAD_LANE stores to BAD_ADDRESS. */
static hsa_signal_t store_out_of_bounds(hsa_queue_t *q) {
    int *buf = device_alloc(&E, 4096);
    struct { int *buf; uint64_t bad; uint32_t lane, pad; } args = {buf, BAD_ADDRESS, BAD_LANE, 0};
    printf("SAW buffer %p\n", (void *)buf);
    fflush(stdout);
    return submit(q, kernel("store_lane"), &args, sizeof args, 64);
}

/* Waits up to `ms` for `cond` to hold. */
#define WAIT_FOR(cond, ms) do { double t0_ = now(); while (!(cond) && now() - t0_ < (ms) / 1e3) sleep_ms(1); } while (0)

/* A dispatch that faults: how it ends depends on the callback and handler. */
static void fault_case(hsa_signal_t (*submit_fault)(hsa_queue_t *), int with_callback, int handler) {
    if (handler) {
        event_answer = handler > 0 ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR;
        OK(hsa_amd_register_system_event_handler(on_event, NULL));
    }
    hsa_queue_t *q = new_queue(with_callback);
    hsa_signal_t done = submit_fault(q);
    /* Whatever reports the fault does so well within this; a program that
     * is still here afterwards was not aborted. */
    WAIT_FOR(callback_calls > 0 || events > 0, 20000);
    sleep_ms(200);
    printf("SAW callback %d status 0x%x events %d address 0x%llx signal %lld\n", callback_calls,
           (unsigned)callback_status, events, (unsigned long long)event_address,
           (long long)hsa_signal_load_scacquire(done));
    OK(hsa_queue_destroy(q));
    /* The runtime still works: a new queue runs a kernel that does not fault. */
    hsa_queue_t *q2 = new_queue(1);
    int *buf = device_alloc(&E, 4096);
    struct { int *buf; int *bad; uint32_t lane, pad; } ok = {buf, buf, 64, 0};
    hsa_signal_t fine = submit(q2, kernel("store_lane"), &ok, sizeof ok, 64);
    CHECK(hsa_signal_wait_scacquire(fine, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    for (int i = 0; i < 64; i++) CHECK(buf[i] == 0x1234);
    OK(hsa_queue_destroy(q2));
    OK(hsa_shut_down());
    puts("PASS");
}

static hsa_signal_t null_kernel(hsa_queue_t *q) { return submit(q, 0, NULL, 0, 64); }
static hsa_signal_t illegal_kernel(hsa_queue_t *q) { return submit(q, kernel("illegal"), NULL, 0, 64); }

/* Host memory the spin kernel polls; the kernel ends once it is not 0. */
static int *spin_flag(void) {
    int *flag = host_alloc(&E, 64);
    *flag = 0;
    return flag;
}

/* 4 workgroups of 64 work-items, every wave spinning on `flag`. */
static hsa_signal_t spin(hsa_queue_t *q, int *flag) {
    struct { int *flag; } args = {flag};
    return submit(q, kernel("spin"), &args, sizeof args, 256);
}

/* Still running after `ms`: the completion signal has not moved. */
static void still_running(hsa_signal_t done, int ms) {
    CHECK(hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, (uint64_t)ms * 1000000, HSA_WAIT_STATE_BLOCKED) == 1);
}

static void case_spin_released(void) {
    /* The control: the spinning kernel is a real one that ends when told. */
    hsa_queue_t *q = new_queue(1);
    int *flag = spin_flag();
    hsa_signal_t done = spin(q, flag);
    still_running(done, 300);
    __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
    CHECK(hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    CHECK(callback_calls == 0);
    OK(hsa_queue_destroy(q));
    OK(hsa_shut_down());
    puts("PASS");
}

static void case_spin_timeout(int with_callback) {
    /* INLAY_DISPATCH_TIMEOUT (set by the driver) ends it as a fault would. */
    hsa_queue_t *q = new_queue(with_callback);
    int *flag = spin_flag();
    double t0 = now();
    hsa_signal_t done = spin(q, flag);
    WAIT_FOR(callback_calls > 0, 30000);
    printf("SAW callback %d status 0x%x after %.2f s signal %lld\n", callback_calls,
           (unsigned)callback_status, now() - t0, (long long)hsa_signal_load_scacquire(done));
    OK(hsa_queue_destroy(q));
    OK(hsa_shut_down());
    puts("PASS");
}

static void case_spin_destroy(void) {
    hsa_queue_t *q = new_queue(1);
    int *flag = spin_flag();
    hsa_signal_t done = spin(q, flag);
    still_running(done, 300);
    double t0 = now();
    OK(hsa_queue_destroy(q));
    printf("SAW destroy took %.3f s signal %lld callback %d\n", now() - t0,
           (long long)hsa_signal_load_scacquire(done), callback_calls);
    /* Nothing is corrupted: the runtime runs the next kernel on a new queue. */
    hsa_queue_t *q2 = new_queue(1);
    int *buf = device_alloc(&E, 4096);
    struct { int *buf; int *bad; uint32_t lane, pad; } ok = {buf, buf, 64, 0};
    hsa_signal_t fine = submit(q2, kernel("store_lane"), &ok, sizeof ok, 64);
    CHECK(hsa_signal_wait_scacquire(fine, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    for (int i = 0; i < 64; i++) CHECK(buf[i] == 0x1234);
    OK(hsa_queue_destroy(q2));
    OK(hsa_shut_down());
    puts("PASS");
}

static void case_spin_shutdown(void) {
    hsa_queue_t *q = new_queue(1);
    hsa_queue_t *idle = new_queue(0);
    (void)idle;
    int *flag = spin_flag();
    hsa_signal_t done = spin(q, flag);
    still_running(done, 300);
    double t0 = now();
    OK(hsa_shut_down());
    printf("SAW shut down took %.3f s callback %d\n", now() - t0, callback_calls);
    CHECK_STATUS(hsa_shut_down(), HSA_STATUS_ERROR_NOT_INITIALIZED);
    /* A new init starts afresh. */
    OK(hsa_init());
    OK(hsa_shut_down());
    puts("PASS");
}

static void case_spin_exit(void) {
    /* Returning from main with a kernel running ends the process. */
    hsa_queue_t *q = new_queue(1);
    hsa_signal_t done = spin(q, spin_flag());
    still_running(done, 300);
    puts("PASS");
    fflush(stdout);
}

/* ---- value functions given bad handles --------------------------------- */

typedef uint64_t (*any_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

/* Calls `name` in a child process with a bad handle of kind `kind` (0: zero,
 * 1: never created, 2: destroyed) and prints how the child ended and the
 * first line it wrote to standard error. */
static void misuse(void *lib, const char *name, int kind) {
    int err[2];
    CHECK(pipe(err) == 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(err[1], 2);
        close(err[0]);
        any_fn f = (any_fn)dlvsym(lib, name, "ROCR_1");
        if (!f) _exit(3);
        OK(hsa_init());
        int is_queue = strncmp(name, "hsa_queue_", 10) == 0;
        uint64_t h = 0;
        if (kind == 1) h = is_queue ? (uint64_t)(uintptr_t)err : 0x12345678;
        if (kind == 2) {
            env_t e = setup();
            if (is_queue) {
                hsa_queue_t *q = NULL;
                OK(hsa_queue_create(e.gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &q));
                OK(hsa_queue_destroy(q));
                h = (uint64_t)(uintptr_t)q;
            } else {
                hsa_signal_t s;
                OK(hsa_signal_create(1, 0, NULL, &s));
                OK(hsa_signal_destroy(s));
                h = s.handle;
            }
        }
        /* Arguments after the handle: condition EQ, compare 0, timeout 0, BLOCKED. */
        f(h, 0, 0, 0, 0);
        _exit(0);
    }
    close(err[1]);
    char line[512] = "";
    FILE *in = fdopen(err[0], "r");
    CHECK(in != NULL);
    if (!fgets(line, sizeof line, in)) line[0] = 0;
    char rest[512];
    while (fgets(rest, sizeof rest, in)) {}
    fclose(in);
    line[strcspn(line, "\n")] = 0;
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (WIFSIGNALED(st)) printf("MISUSE %s %d signal %d: %s\n", name, kind, WTERMSIG(st), line);
    else printf("MISUSE %s %d exit %d: %s\n", name, kind, WEXITSTATUS(st), line);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    CHECK(argc >= 2);
    const char *c = argv[1];
    if (strcmp(c, "misuse") == 0) {
        void *lib = dlopen("libhsa-runtime64.so.1", RTLD_NOW);
        CHECK(lib != NULL);
        for (int i = 2; i < argc; i++) misuse(lib, argv[i], (i - 2) % 3);
        puts("PASS");
        return 0;
    }
    CHECK(argc == 3);
    E = setup();
    EXE = load_executable(&E, argv[2], 0);
    if (!strcmp(c, "fault")) fault_case(store_out_of_bounds, 0, 0);
    else if (!strcmp(c, "fault_callback")) fault_case(store_out_of_bounds, 1, 0);
    else if (!strcmp(c, "fault_handler")) fault_case(store_out_of_bounds, 1, 1);
    else if (!strcmp(c, "fault_handler_declines")) fault_case(store_out_of_bounds, 1, -1);
    else if (!strcmp(c, "null_kernel")) fault_case(null_kernel, 0, 0);
    else if (!strcmp(c, "null_kernel_callback")) fault_case(null_kernel, 1, 0);
    else if (!strcmp(c, "illegal")) fault_case(illegal_kernel, 0, 0);
    else if (!strcmp(c, "illegal_callback")) fault_case(illegal_kernel, 1, 0);
    else if (!strcmp(c, "spin_released")) case_spin_released();
    else if (!strcmp(c, "spin_timeout")) case_spin_timeout(0);
    else if (!strcmp(c, "spin_timeout_callback")) case_spin_timeout(1);
    else if (!strcmp(c, "spin_destroy")) case_spin_destroy();
    else if (!strcmp(c, "spin_shutdown")) case_spin_shutdown();
    else if (!strcmp(c, "spin_exit")) case_spin_exit();
    else { fprintf(stderr, "unknown case %s\n", c); return 2; }
    return 0;
}
