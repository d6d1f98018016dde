/* Bad input: null pointers, zero and made-up handles, destroyed objects,
 * wrong sizes. Each call must return an error status and the runtime must
 * keep working afterwards. */
#include "check.h"

#define BAD(call) do { hsa_status_t s_ = (call); if (s_ == HSA_STATUS_SUCCESS || s_ == HSA_STATUS_INFO_BREAK) { \
    fprintf(stderr, "%s:%d: %s succeeded on bad input\n", __FILE__, __LINE__, #call); exit(1); } } while (0)

static hsa_status_t nop(hsa_agent_t a, void *d) { (void)a; (void)d; return HSA_STATUS_SUCCESS; }
static hsa_status_t nop_pool(hsa_amd_memory_pool_t p, void *d) { (void)p; (void)d; return HSA_STATUS_SUCCESS; }
static hsa_status_t nop_region(hsa_region_t r, void *d) { (void)r; (void)d; return HSA_STATUS_SUCCESS; }
static hsa_status_t nop_isa(hsa_isa_t i, void *d) { (void)i; (void)d; return HSA_STATUS_SUCCESS; }
static hsa_status_t stop_agent(hsa_agent_t a, void *d) { (void)a; (*(int *)d)++; return HSA_STATUS_INFO_BREAK; }

int main(void) {
    hsa_agent_t zero = {0}, junk = {0xdeadbeef};
    hsa_signal_t nosig = {0}, junksig = {0x12345678};
    hsa_amd_memory_pool_t nopool = {0};
    hsa_region_t noregion = {0};
    hsa_isa_t noisa = {0};
    void *p = NULL;

    /* Before init. */
    CHECK_STATUS(hsa_iterate_agents(nop, NULL), HSA_STATUS_ERROR_NOT_INITIALIZED);
    CHECK_STATUS(hsa_signal_create(0, 0, NULL, &nosig), HSA_STATUS_ERROR_NOT_INITIALIZED);
    CHECK_STATUS(hsa_memory_copy(&p, &p, 8), HSA_STATUS_ERROR_NOT_INITIALIZED);
    CHECK(hsa_signal_load_relaxed(junksig) == 0); /* void/value calls do nothing */
    hsa_signal_store_relaxed(junksig, 1);

    env_t e = setup();
    char buf[256];
    /* Null callbacks and out-pointers. */
    CHECK_STATUS(hsa_iterate_agents(NULL, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_agent_get_info(e.gpu, HSA_AGENT_INFO_NAME, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_system_get_info(HSA_SYSTEM_INFO_VERSION_MAJOR, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_system_get_info((hsa_system_info_t)0x7777, buf), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_status_string(HSA_STATUS_SUCCESS, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    const char *txt;
    CHECK_STATUS(hsa_status_string((hsa_status_t)0x4242, &txt), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_isa_from_name(NULL, &noisa), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_signal_create(0, 0, NULL, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_signal_create(0, 2, NULL, &nosig), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_amd_memory_pool_allocate(e.device, 4096, 0, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_memory_copy(NULL, buf, 8), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_amd_memory_fill(NULL, 0, 4), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_amd_pointer_info(buf, NULL, NULL, NULL, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_queue_create(e.gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_amd_signal_async_handler(nosig, HSA_SIGNAL_CONDITION_EQ, 0, NULL, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_system_get_major_extension_table(HSA_EXTENSION_AMD_LOADER, 1, 64, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);

    /* Zero and made-up handles. */
    CHECK_STATUS(hsa_agent_get_info(zero, HSA_AGENT_INFO_NAME, buf), HSA_STATUS_ERROR_INVALID_AGENT);
    CHECK_STATUS(hsa_agent_get_info(junk, HSA_AGENT_INFO_NAME, buf), HSA_STATUS_ERROR_INVALID_AGENT);
    CHECK_STATUS(hsa_agent_get_info(e.gpu, (hsa_agent_info_t)0x5555, buf), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_amd_agent_iterate_memory_pools(junk, nop_pool, NULL), HSA_STATUS_ERROR_INVALID_AGENT);
    CHECK_STATUS(hsa_agent_iterate_regions(zero, nop_region, NULL), HSA_STATUS_ERROR_INVALID_AGENT);
    CHECK_STATUS(hsa_agent_iterate_isas(junk, nop_isa, NULL), HSA_STATUS_ERROR_INVALID_AGENT);
    CHECK_STATUS(hsa_amd_memory_pool_get_info(nopool, HSA_AMD_MEMORY_POOL_INFO_SIZE, buf), HSA_STATUS_ERROR_INVALID_MEMORY_POOL);
    CHECK_STATUS(hsa_region_get_info(noregion, HSA_REGION_INFO_SIZE, buf), HSA_STATUS_ERROR_INVALID_REGION);
    CHECK_STATUS(hsa_amd_agent_memory_pool_get_info(junk, e.device, HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS, buf), HSA_STATUS_ERROR_INVALID_AGENT);
    CHECK_STATUS(hsa_amd_memory_pool_allocate(nopool, 4096, 0, &p), HSA_STATUS_ERROR_INVALID_MEMORY_POOL);
    CHECK_STATUS(hsa_memory_allocate(noregion, 4096, &p), HSA_STATUS_ERROR_INVALID_REGION);
    CHECK_STATUS(hsa_isa_get_info_alt(noisa, HSA_ISA_INFO_NAME_LENGTH, buf), HSA_STATUS_ERROR_INVALID_ISA);
    CHECK_STATUS(hsa_signal_destroy(nosig), HSA_STATUS_ERROR_INVALID_SIGNAL);
    CHECK_STATUS(hsa_signal_destroy(junksig), HSA_STATUS_ERROR_INVALID_SIGNAL);
    CHECK_STATUS(hsa_queue_create(zero, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, (hsa_queue_t **)&p), HSA_STATUS_ERROR_INVALID_AGENT);
    BAD(hsa_queue_create(e.cpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, (hsa_queue_t **)&p));
    CHECK_STATUS(hsa_queue_destroy((hsa_queue_t *)buf), HSA_STATUS_ERROR_INVALID_QUEUE);
    CHECK_STATUS(hsa_queue_destroy(NULL), HSA_STATUS_ERROR_INVALID_QUEUE);
    CHECK(hsa_queue_load_read_index_relaxed((hsa_queue_t *)buf) == 0);
    CHECK(hsa_queue_add_write_index_relaxed(NULL, 1) == 0);
    hsa_signal_t done;
    OK(hsa_signal_create(1, 0, NULL, &done));
    CHECK_STATUS(hsa_amd_memory_async_copy(buf, junk, buf, e.cpu, 8, 0, NULL, done), HSA_STATUS_ERROR_INVALID_AGENT);
    CHECK_STATUS(hsa_amd_memory_async_copy(buf, e.cpu, buf + 8, e.cpu, 8, 0, NULL, junksig), HSA_STATUS_ERROR_INVALID_SIGNAL);
    CHECK_STATUS(hsa_amd_memory_async_copy(buf, e.cpu, buf + 8, e.cpu, 8, 1, &junksig, done), HSA_STATUS_ERROR_INVALID_SIGNAL);
    CHECK_STATUS(hsa_amd_agents_allow_access(1, &junk, NULL, buf), HSA_STATUS_ERROR_INVALID_AGENT);
    CHECK_STATUS(hsa_amd_agents_allow_access(0, NULL, NULL, buf), HSA_STATUS_ERROR_INVALID_ARGUMENT);

    /* Wrong sizes and values. */
    CHECK_STATUS(hsa_queue_create(e.gpu, 100, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, (hsa_queue_t **)&p), HSA_STATUS_ERROR_INVALID_QUEUE_CREATION);
    CHECK_STATUS(hsa_queue_create(e.gpu, 1u << 30, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, (hsa_queue_t **)&p), HSA_STATUS_ERROR_INVALID_QUEUE_CREATION);
    CHECK_STATUS(hsa_queue_create(e.gpu, 64, 77, NULL, NULL, 0, 0, (hsa_queue_t **)&p), HSA_STATUS_ERROR_INVALID_QUEUE_CREATION);
    BAD(hsa_amd_memory_pool_allocate(e.device, 0, 0, &p));
    BAD(hsa_amd_memory_pool_allocate(e.device, SIZE_MAX, 0, &p));
    BAD(hsa_amd_memory_pool_allocate(e.device, 4096, 0x80, &p));
    hsa_amd_pointer_info_t info; info.size = 2;
    CHECK_STATUS(hsa_amd_pointer_info(buf, &info, NULL, NULL, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK(hsa_signal_wait_scacquire(done, (hsa_signal_condition_t)9, 0, 0, HSA_WAIT_STATE_BLOCKED) == 0);
    BAD(hsa_amd_signal_async_handler(done, (hsa_signal_condition_t)9, 0, NULL, NULL));
    BAD(hsa_system_get_major_extension_table(0x7fff, 1, 64, buf));

    /* Pointers to memory that is not mapped (or not writable) are refused, not dereferenced. */
    CHECK_STATUS(hsa_memory_copy((void *)0x10, buf, 8), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_memory_copy(buf, (void *)0x10, 8), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_memory_copy((void *)main, buf, 8), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_memory_copy(buf, buf + 8, SIZE_MAX / 2), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_amd_memory_fill((void *)0x1000, 0, 4), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_amd_memory_async_copy((void *)0x10, e.cpu, buf, e.cpu, 8, 0, NULL, done), HSA_STATUS_ERROR_INVALID_ARGUMENT);

    /* Destroyed objects. */
    uint32_t *d = NULL;
    OK(hsa_amd_memory_pool_allocate(e.device, 4096, 0, (void **)&d));
    OK(hsa_amd_memory_pool_free(d));
    BAD(hsa_amd_memory_pool_free(d));
    BAD(hsa_amd_memory_fill(d, 0, 4));
    BAD(hsa_amd_agents_allow_access(1, &e.cpu, NULL, d));
    BAD(hsa_amd_memory_pool_free(buf)); /* never allocated by us */
    hsa_queue_t *q = NULL;
    OK(hsa_queue_create(e.gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &q));
    hsa_signal_t bell = q->doorbell_signal;
    BAD(hsa_signal_destroy(bell)); /* owned by the queue */
    OK(hsa_queue_destroy(q));
    CHECK_STATUS(hsa_queue_destroy(q), HSA_STATUS_ERROR_INVALID_QUEUE);
    CHECK(hsa_queue_load_write_index_relaxed(q) == 0);
    CHECK_STATUS(hsa_signal_destroy(bell), HSA_STATUS_ERROR_INVALID_SIGNAL);
    OK(hsa_signal_destroy(done));
    CHECK_STATUS(hsa_amd_signal_async_handler(done, HSA_SIGNAL_CONDITION_EQ, 0, NULL, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    hsa_signal_add_relaxed(done, 1);
    CHECK(hsa_signal_load_scacquire(done) == 0);

    /* Executables: garbage loads as no code object (more in loader_badinput.c). */
    memset(buf, 0x77, sizeof buf);
    hsa_code_object_reader_t reader;
    OK(hsa_code_object_reader_create_from_memory(buf, sizeof buf, &reader));
    hsa_executable_t exec;
    OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &exec));
    BAD(hsa_executable_load_agent_code_object(exec, e.gpu, reader, NULL, NULL));
    OK(hsa_executable_destroy(exec));
    OK(hsa_code_object_reader_destroy(reader));

    /* The callback's status ends an iteration and is returned. */
    int calls = 0;
    CHECK_STATUS(hsa_iterate_agents(stop_agent, &calls), HSA_STATUS_INFO_BREAK);
    CHECK(calls == 1);

    /* Still working. */
    hsa_signal_t s;
    OK(hsa_signal_create(3, 0, NULL, &s));
    hsa_signal_subtract_relaxed(s, 3);
    CHECK(hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    OK(hsa_signal_destroy(s));
    OK(hsa_shut_down());
    CHECK_STATUS(hsa_shut_down(), HSA_STATUS_ERROR_NOT_INITIALIZED);
    puts("PASS");
    return 0;
}
