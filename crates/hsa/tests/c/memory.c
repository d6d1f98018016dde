/* Agents, pools, ISA, allocation, copies, fills and pointer info. */
#include "check.h"

static hsa_status_t count(hsa_isa_t isa, void *data) { *(hsa_isa_t *)data = isa; return HSA_STATUS_SUCCESS; }

int main(void) {
    hsa_agent_t none = {0};
    char name[64];
    /* Before hsa_init every call is refused. */
    CHECK_STATUS(hsa_agent_get_info(none, HSA_AGENT_INFO_NAME, name), HSA_STATUS_ERROR_NOT_INITIALIZED);
    CHECK_STATUS(hsa_shut_down(), HSA_STATUS_ERROR_NOT_INITIALIZED);

    env_t e = setup();
    OK(hsa_init()); /* reference counted: a second init needs a second shutdown */
    OK(hsa_agent_get_info(e.gpu, HSA_AGENT_INFO_NAME, name));
    CHECK(strcmp(name, "gfx90a") == 0);
    uint32_t wave = 0, cus = 0;
    OK(hsa_agent_get_info(e.gpu, HSA_AGENT_INFO_WAVEFRONT_SIZE, &wave));
    OK(hsa_agent_get_info(e.gpu, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, &cus));
    CHECK(wave == 64 && cus == 104);

    hsa_isa_t isa = {0}, byname = {0};
    OK(hsa_agent_iterate_isas(e.gpu, count, &isa));
    uint32_t len = 0;
    OK(hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME_LENGTH, &len));
    char *isaname = calloc(1, len);
    OK(hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME, isaname));
    CHECK(strcmp(isaname, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-") == 0);
    OK(hsa_isa_from_name(isaname, &byname));
    CHECK(byname.handle == isa.handle);
    CHECK_STATUS(hsa_isa_from_name("amdgcn-amd-amdhsa--gfx1100", &byname), HSA_STATUS_ERROR_INVALID_ISA_NAME);

    /* Kernarg (fine-grained system) and device pools. */
    uint32_t *args = NULL, *dev = NULL, *dev2 = NULL;
    OK(hsa_amd_memory_pool_allocate(e.kernarg, 256, 0, (void **)&args));
    OK(hsa_amd_memory_pool_allocate(e.device, 4096, 0, (void **)&dev));
    OK(hsa_amd_memory_pool_allocate(e.device, 4096, 0, (void **)&dev2));
    CHECK(args && dev && dev2 && ((uintptr_t)dev % 4096) == 0);
    for (int i = 0; i < 64; i++) args[i] = i * 3u;
    OK(hsa_memory_copy(dev, args, 256));
    OK(hsa_amd_memory_fill(dev2, 0xabcd1234u, 1024));
    OK(hsa_memory_copy(args, dev2, 16));
    CHECK(args[0] == 0xabcd1234u && args[3] == 0xabcd1234u);
    OK(hsa_memory_copy(args, dev, 256));
    CHECK(args[63] == 63 * 3u);
    /* Past the end of an allocation: ROCr's Runtime::FillMemory finds no
     * allocation holding the whole range. */
    CHECK_STATUS(hsa_amd_memory_fill(dev2, 0, 1025), HSA_STATUS_ERROR_INVALID_ALLOCATION);

    OK(hsa_amd_agents_allow_access(1, &e.cpu, NULL, dev));
    hsa_amd_pointer_info_t info; memset(&info, 0, sizeof info);
    info.size = sizeof info;
    uint32_t naccess = 0; hsa_agent_t *access = NULL;
    OK(hsa_amd_pointer_info(dev + 10, &info, malloc, &naccess, &access));
    CHECK(info.type == HSA_EXT_POINTER_TYPE_HSA);
    CHECK(info.agentBaseAddress == dev && info.sizeInBytes == 4096);
    CHECK(info.agentOwner.handle == e.gpu.handle);
    CHECK(naccess == 2);
    free(access);
    int local;
    info.size = sizeof info;
    OK(hsa_amd_pointer_info(&local, &info, NULL, NULL, NULL));
    CHECK(info.type == HSA_EXT_POINTER_TYPE_UNKNOWN);

    OK(hsa_amd_memory_pool_free(dev));
    /* ROCr's Runtime::FreeMemory: no longer in the allocation map. */
    CHECK_STATUS(hsa_amd_memory_pool_free(dev), HSA_STATUS_ERROR_INVALID_ALLOCATION);
    /* A freed block is not a valid copy target any more (ROCr would
     * memcpy into it; Inlay refuses). */
    CHECK_STATUS(hsa_memory_copy(dev, args, 16), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    OK(hsa_amd_memory_pool_free(dev2));
    OK(hsa_amd_memory_pool_free(args));

    const char *text = NULL;
    OK(hsa_status_string(HSA_STATUS_ERROR_INVALID_SIGNAL, &text));
    CHECK(text && strstr(text, "signal"));
    OK(hsa_shut_down());
    OK(hsa_shut_down());
    CHECK_STATUS(hsa_iterate_agents(find_agent, &e), HSA_STATUS_ERROR_NOT_INITIALIZED);
    puts("PASS");
    return 0;
}
