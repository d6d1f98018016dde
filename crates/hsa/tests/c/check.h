/* Tiny assertion helpers shared by the C tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); exit(1); } } while (0)
#define CHECK_STATUS(call, want) do { hsa_status_t s_ = (call); if (s_ != (want)) { \
    fprintf(stderr, "%s:%d: %s returned 0x%x, want 0x%x\n", __FILE__, __LINE__, #call, (unsigned)s_, (unsigned)(want)); exit(1); } } while (0)
#define OK(call) CHECK_STATUS(call, HSA_STATUS_SUCCESS)

typedef struct { hsa_agent_t cpu, gpu; hsa_amd_memory_pool_t kernarg, device, coarse_sys; } env_t;

static hsa_status_t find_agent(hsa_agent_t a, void *data) {
    env_t *e = data;
    hsa_device_type_t t;
    OK(hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t));
    if (t == HSA_DEVICE_TYPE_GPU) e->gpu = a; else e->cpu = a;
    return HSA_STATUS_SUCCESS;
}

static hsa_status_t find_cpu_pool(hsa_amd_memory_pool_t p, void *data) {
    env_t *e = data;
    uint32_t flags = 0;
    OK(hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags));
    if (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) e->kernarg = p;
    if (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) e->coarse_sys = p;
    return HSA_STATUS_SUCCESS;
}

static hsa_status_t find_gpu_pool(hsa_amd_memory_pool_t p, void *data) {
    env_t *e = data;
    hsa_amd_segment_t seg;
    OK(hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg));
    if (seg == HSA_AMD_SEGMENT_GLOBAL) e->device = p;
    return HSA_STATUS_SUCCESS;
}

/* hsa_init and find the CPU and GPU agents and their pools. */
static env_t setup(void) {
    env_t e; memset(&e, 0, sizeof e);
    OK(hsa_init());
    OK(hsa_iterate_agents(find_agent, &e));
    CHECK(e.cpu.handle != 0 && e.gpu.handle != 0);
    OK(hsa_amd_agent_iterate_memory_pools(e.cpu, find_cpu_pool, &e));
    OK(hsa_amd_agent_iterate_memory_pools(e.gpu, find_gpu_pool, &e));
    CHECK(e.kernarg.handle != 0 && e.device.handle != 0);
    return e;
}
