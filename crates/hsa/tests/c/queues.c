/* Queues: barrier-AND/OR packets ordering work across two queues, completion
 * signals, the packet processor's bookkeeping, the error callback, chained
 * async copies with dependency signals. */
#include "check.h"
#include <time.h>

static void sleep_ms(int ms) { struct timespec ts = {0, ms * 1000000L}; nanosleep(&ts, NULL); }

static uint64_t submit_barrier(hsa_queue_t *q, uint16_t type, hsa_signal_t *deps, int ndeps, hsa_signal_t done) {
    uint64_t id = hsa_queue_add_write_index_screlease(q, 1);
    hsa_barrier_and_packet_t *p = (hsa_barrier_and_packet_t *)q->base_address + (id & (q->size - 1));
    memset((char *)p + 2, 0, sizeof *p - 2);
    for (int i = 0; i < ndeps; i++) p->dep_signal[i] = deps[i];
    p->completion_signal = done;
    uint16_t header = (uint16_t)(type << HSA_PACKET_HEADER_TYPE) | (1 << HSA_PACKET_HEADER_BARRIER)
        | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE)
        | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
    __atomic_store_n(&p->header, header, __ATOMIC_RELEASE);
    hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)id);
    return id;
}

static volatile uint64_t fault_address;
static hsa_status_t on_event(const hsa_amd_event_t *ev, void *data) {
    CHECK(data == (void *)&fault_address);
    if (ev->event_type == HSA_AMD_GPU_MEMORY_FAULT_EVENT) fault_address = ev->memory_fault.virtual_address;
    return HSA_STATUS_SUCCESS;
}

static volatile hsa_status_t queue_error;
static void on_queue_error(hsa_status_t st, hsa_queue_t *q, void *data) { (void)q; (void)data; queue_error = st; }

int main(void) {
    env_t e = setup();
    hsa_queue_t *qa = NULL, *qb = NULL;
    OK(hsa_queue_create(e.gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX, &qa));
    OK(hsa_queue_create(e.gpu, 128, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, 0, 0, &qb));
    CHECK(qa->size == 64 && qb->size == 128 && qa->id != qb->id);
    CHECK(hsa_queue_load_read_index_scacquire(qa) == 0 && hsa_queue_load_write_index_relaxed(qa) == 0);

    /* Queue B waits (AND) on a gate and on queue A's work; A's barrier waits (OR) on a second gate. */
    hsa_signal_t gate1, gate2, a_done, b_done;
    OK(hsa_signal_create(1, 0, NULL, &gate1));
    OK(hsa_signal_create(1, 0, NULL, &gate2));
    OK(hsa_signal_create(1, 0, NULL, &a_done));
    OK(hsa_signal_create(1, 0, NULL, &b_done));
    hsa_signal_t b_deps[2] = {gate1, a_done};
    submit_barrier(qb, HSA_PACKET_TYPE_BARRIER_AND, b_deps, 2, b_done);
    hsa_signal_t never;
    OK(hsa_signal_create(1, 0, NULL, &never));
    hsa_signal_t a_deps[2] = {never, gate2};
    submit_barrier(qa, HSA_PACKET_TYPE_BARRIER_OR, a_deps, 2, a_done);
    sleep_ms(30);
    CHECK(hsa_signal_load_scacquire(a_done) == 1 && hsa_signal_load_scacquire(b_done) == 1);
    hsa_signal_store_screlease(gate1, 0); /* B still needs A */
    sleep_ms(30);
    CHECK(hsa_signal_load_scacquire(b_done) == 1);
    hsa_signal_store_screlease(gate2, 0); /* OR satisfied: A completes, then B */
    CHECK(hsa_signal_wait_scacquire(b_done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    CHECK(hsa_signal_load_relaxed(a_done) == 0);
    /* The processor consumed the packets: header INVALID, read index advanced. */
    CHECK(hsa_queue_load_read_index_scacquire(qa) == 1 && hsa_queue_load_read_index_scacquire(qb) == 1);
    CHECK((((hsa_barrier_and_packet_t *)qa->base_address)[0].header & 0xff) == HSA_PACKET_TYPE_INVALID);

    /* Many packets in order on one queue, each completing the same signal. */
    hsa_signal_t many;
    OK(hsa_signal_create(100, 0, NULL, &many));
    for (int i = 0; i < 100; i++) {
        while (hsa_queue_load_write_index_relaxed(qa) - hsa_queue_load_read_index_scacquire(qa) >= qa->size) sleep_ms(1);
        submit_barrier(qa, HSA_PACKET_TYPE_BARRIER_AND, NULL, 0, many);
    }
    CHECK(hsa_signal_wait_scacquire(many, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    CHECK(hsa_queue_load_read_index_relaxed(qa) == 101);
    /* Write-index cas. */
    uint64_t w = hsa_queue_load_write_index_scacquire(qa);
    CHECK(hsa_queue_cas_write_index_scacq_screl(qa, w + 7, w + 8) == w);

    /* Chained async copies: host -> device waits on a gate; device -> device waits on the first. */
    uint32_t *host = NULL, *d1 = NULL, *d2 = NULL, *back = NULL;
    OK(hsa_amd_memory_pool_allocate(e.kernarg, 4096, 0, (void **)&host));
    OK(hsa_amd_memory_pool_allocate(e.kernarg, 4096, 0, (void **)&back));
    OK(hsa_amd_memory_pool_allocate(e.device, 4096, 0, (void **)&d1));
    OK(hsa_amd_memory_pool_allocate(e.device, 4096, 0, (void **)&d2));
    for (int i = 0; i < 1024; i++) host[i] = 0x1000u + i;
    hsa_signal_t go, c1, c2, c3;
    OK(hsa_signal_create(1, 0, NULL, &go));
    OK(hsa_signal_create(1, 0, NULL, &c1));
    OK(hsa_signal_create(1, 0, NULL, &c2));
    OK(hsa_signal_create(1, 0, NULL, &c3));
    /* Submitted in reverse order: only the dependencies order them. */
    OK(hsa_amd_memory_async_copy(back, e.cpu, d2, e.gpu, 4096, 1, &c2, c3));
    OK(hsa_amd_memory_async_copy(d2, e.gpu, d1, e.gpu, 4096, 1, &c1, c2));
    OK(hsa_amd_memory_async_copy(d1, e.gpu, host, e.cpu, 4096, 1, &go, c1));
    sleep_ms(20);
    CHECK(hsa_signal_load_relaxed(c1) == 1 && back[5] == 0);
    hsa_signal_store_screlease(go, 0);
    CHECK(hsa_signal_wait_scacquire(c3, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    CHECK(back[0] == 0x1000u && back[1023] == 0x1000u + 1023);
    /* A copy past the end of an allocation is refused at submission. */
    CHECK_STATUS(hsa_amd_memory_async_copy(d1, e.gpu, host, e.cpu, 4097, 0, NULL, c3), HSA_STATUS_ERROR_INVALID_ARGUMENT);

    /* The destination is freed while the copy waits for its dependency: the
     * copy must not write to it; the fault goes to the system event handler. */
    OK(hsa_amd_register_system_event_handler(on_event, (void *)&fault_address));
    uint32_t *doomed = NULL;
    OK(hsa_amd_memory_pool_allocate(e.device, 4096, 0, (void **)&doomed));
    hsa_signal_store_relaxed(go, 1);
    hsa_signal_store_relaxed(c1, 1);
    OK(hsa_amd_memory_async_copy(doomed, e.gpu, host, e.cpu, 4096, 1, &go, c1));
    OK(hsa_amd_memory_pool_free(doomed));
    hsa_signal_store_screlease(go, 0);
    CHECK(hsa_signal_wait_scacquire(c1, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    for (int i = 0; i < 2000 && fault_address == 0; i++) sleep_ms(1);
    CHECK(fault_address == (uint64_t)(uintptr_t)doomed);

    /* A kernel dispatch with a null kernel object goes to the error callback. */
    hsa_queue_t *qe = NULL;
    OK(hsa_queue_create(e.gpu, 64, HSA_QUEUE_TYPE_MULTI, on_queue_error, NULL, 0, 0, &qe));
    uint64_t id = hsa_queue_add_write_index_relaxed(qe, 1);
    hsa_kernel_dispatch_packet_t *kp = (hsa_kernel_dispatch_packet_t *)qe->base_address + id;
    memset((char *)kp + 2, 0, sizeof *kp - 2);
    kp->setup = 1; kp->workgroup_size_x = kp->workgroup_size_y = kp->workgroup_size_z = 1;
    kp->grid_size_x = kp->grid_size_y = kp->grid_size_z = 1;
    __atomic_store_n(&kp->header, (uint16_t)(HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE), __ATOMIC_RELEASE);
    hsa_signal_store_screlease(qe->doorbell_signal, (hsa_signal_value_t)id);
    for (int i = 0; i < 2000 && queue_error == 0; i++) sleep_ms(1);
    /* ROCr's AqlQueue::ExceptionHandler: "invalid (or NULL) code". */
    CHECK(queue_error == HSA_STATUS_ERROR_INVALID_CODE_OBJECT);

    OK(hsa_queue_destroy(qe));
    OK(hsa_queue_destroy(qa));
    OK(hsa_queue_destroy(qb));
    CHECK_STATUS(hsa_queue_destroy(qa), HSA_STATUS_ERROR_INVALID_QUEUE);
    OK(hsa_shut_down());
    puts("PASS");
    return 0;
}
