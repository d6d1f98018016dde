/* Bad input to EVERY export, each with the status a caller expects.
 *
 * This is the status table: every call is a ROW, which names the status
 * ROCr returns for that input and where in ROCr's source it comes from.
 * Each ROW (and VALUE) first prints "COVER <function>" on stdout; the Rust
 * driver (tests/hsa/bad_input_all.rs) compares those names with the library's
 * export list (nm -D) and fails if an export was never called here. Only
 * calls that actually ran count. Functions returning a value or nothing
 * cannot report a bad handle; ROCr aborts the process for one, and
 * tests/hsa/hostile.rs checks that each of them does so here too.
 *
 * Kinds of bad input: null pointers, zero and made-up handles, destroyed
 * objects (signals, signal groups, queues, executables, readers, memory),
 * wrong sizes and attributes, corrupt code objects (truncated, garbage, wrong
 * target), malformed AQL packets. After each group a normal call must still
 * work. argv: a gfx90a code object, a gfx908 code object. */
#define _GNU_SOURCE
#include "check.h"
#include <hsa/hsa_ext_image.h>
#include <hsa/hsa_ven_amd_loader.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>

static void cover(const char *fn) { printf("COVER %s\n", fn); }

/* One row of the status table: the call must return `want`, the status
 * ROCr's source gives it. `rocr` names where (file under
 * projects/rocr-runtime/runtime/hsa-runtime/ of rocm-systems, function,
 * check). Where ROCr has no check and would crash or do something undefined
 * (a made-up handle is read as a pointer; a null out-pointer is written),
 * `rocr` says so and `want` is what Inlay answers instead. */
#define ROW(want, rocr, fn, ...) do { cover(#fn); hsa_status_t s_ = fn(__VA_ARGS__); if (s_ != (hsa_status_t)(want)) { \
    fprintf(stderr, "%s:%d: %s(%s) returned 0x%x, want 0x%x (%s), as ROCr: %s\n", __FILE__, __LINE__, #fn, #__VA_ARGS__, \
            (unsigned)s_, (unsigned)(want), #want, rocr); exit(1); } } while (0)
/* A function returning a value (not a status) must return `want`. */
#define VALUE(want, fn, ...) do { cover(#fn); long long v_ = (long long)fn(__VA_ARGS__); if (v_ != (long long)(want)) { \
    fprintf(stderr, "%s:%d: %s(%s) returned %lld, want %lld\n", __FILE__, __LINE__, #fn, #__VA_ARGS__, v_, (long long)(want)); exit(1); } } while (0)

#define INVARG HSA_STATUS_ERROR_INVALID_ARGUMENT

static hsa_status_t pool_cb(hsa_amd_memory_pool_t p, void *d) { (void)p; (void)d; return HSA_STATUS_SUCCESS; }
static hsa_status_t region_cb(hsa_region_t r, void *d) { (void)r; (void)d; return HSA_STATUS_SUCCESS; }
static hsa_status_t isa_cb(hsa_isa_t i, void *d) { (void)i; (void)d; return HSA_STATUS_SUCCESS; }
static hsa_status_t wave_cb(hsa_wavefront_t w, void *d) { (void)w; (void)d; return HSA_STATUS_SUCCESS; }
static hsa_status_t sym_cb(hsa_executable_t e, hsa_executable_symbol_t s, void *d) { (void)e; (void)s; (void)d; return HSA_STATUS_SUCCESS; }
static hsa_status_t agent_sym_cb(hsa_executable_t e, hsa_agent_t a, hsa_executable_symbol_t s, void *d) { (void)e; (void)a; (void)s; (void)d; return HSA_STATUS_SUCCESS; }
static bool handler_cb(hsa_signal_value_t v, void *d) { (void)v; (void)d; return false; }
static void async_fn(void *d) { (void)d; }
static hsa_status_t event_cb(const hsa_amd_event_t *ev, void *d) { (void)ev; (void)d; return HSA_STATUS_SUCCESS; }
static hsa_status_t lco_cb(hsa_executable_t e, hsa_loaded_code_object_t l, void *d) { (void)e; (void)l; (void)d; return HSA_STATUS_SUCCESS; }
static hsa_status_t exec_cb(hsa_executable_t e, void *d) { (void)e; (void)d; return HSA_STATUS_SUCCESS; }
static hsa_status_t stop_agent(hsa_agent_t a, void *d) { (void)a; (*(int *)d)++; return HSA_STATUS_INFO_BREAK; }
int main(int argc, char **argv);

static unsigned char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long n = ftell(f);
    CHECK(n > 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)n);
    CHECK(buf != NULL);
    *size = fread(buf, 1, (size_t)n, f);
    CHECK(*size == (size_t)n);
    fclose(f);
    return buf;
}

static env_t E;

/* A normal call still works: a signal round trip and an allocation. */
static void still_working(void) {
    hsa_signal_t s;
    OK(hsa_signal_create(2, 0, NULL, &s));
    hsa_signal_subtract_scacq_screl(s, 2);
    CHECK(hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, HSA_WAIT_STATE_BLOCKED) == 0);
    OK(hsa_signal_destroy(s));
    void *p = NULL;
    OK(hsa_amd_memory_pool_allocate(E.device, 64, 0, &p));
    OK(hsa_amd_memory_pool_free(p));
}

/* ---- system, agents, ISAs, regions, pools ------------------------------ */
static void system_and_agents(void) {
    hsa_agent_t zero = {0}, junk = {0xdeadbeef};
    hsa_isa_t noisa = {0}, junkisa = {0x1234567}, isa = {0};
    hsa_region_t noregion = {0}, junkregion = {0x99999};
    hsa_amd_memory_pool_t nopool = {0}, junkpool = {0x77777};
    hsa_wavefront_t nowave = {0};
    char buf[256];
    bool yes = false;
    uint16_t minor = 0, mask = 0;
    const char *txt = NULL;

    ROW(INVARG, "hsa.cpp hsa_status_string: IS_BAD_PTR(status_string)", hsa_status_string, HSA_STATUS_SUCCESS, NULL);
    ROW(INVARG, "hsa.cpp hsa_status_string: default case", hsa_status_string, (hsa_status_t)0x4242, &txt);
    ROW(INVARG, "hsa.cpp hsa_system_get_info: IS_BAD_PTR(value)", hsa_system_get_info, HSA_SYSTEM_INFO_VERSION_MAJOR, NULL);
    ROW(INVARG, "runtime.cpp Runtime::GetSystemInfo: default case", hsa_system_get_info, (hsa_system_info_t)0x7777, buf);
    ROW(INVARG, "hsa.cpp hsa_system_extension_supported: result == NULL", hsa_system_extension_supported, HSA_EXTENSION_AMD_LOADER, 1, 0, NULL);
    ROW(INVARG, "hsa.cpp hsa_system_extension_supported: extension out of range", hsa_system_extension_supported, 0x7777, 1, 0, NULL);
    ROW(INVARG, "hsa.cpp hsa_system_major_extension_supported: IS_BAD_PTR(version_minor)", hsa_system_major_extension_supported, HSA_EXTENSION_AMD_LOADER, 1, NULL, &yes);
    ROW(INVARG, "hsa.cpp hsa_system_major_extension_supported: IS_BAD_PTR(result)", hsa_system_major_extension_supported, HSA_EXTENSION_AMD_LOADER, 1, &minor, NULL);
    ROW(INVARG, "hsa.cpp hsa_system_get_major_extension_table: IS_BAD_PTR(table)", hsa_system_get_extension_table, HSA_EXTENSION_AMD_LOADER, 1, 0, NULL);
    ROW(INVARG, "hsa.cpp get_extension_table_length: 0 for an unknown extension, then table_length == 0", hsa_system_get_extension_table, 0x7777, 1, 0, buf);
    ROW(INVARG, "hsa.cpp hsa_system_get_major_extension_table: IS_BAD_PTR(table)", hsa_system_get_major_extension_table, HSA_EXTENSION_AMD_LOADER, 1, 64, NULL);
    ROW(INVARG, "hsa.cpp hsa_system_get_major_extension_table: table_length == 0", hsa_system_get_major_extension_table, HSA_EXTENSION_AMD_LOADER, 1, 0, buf);
    ROW(HSA_STATUS_ERROR, "hsa.cpp hsa_system_get_major_extension_table: loader version_major != 1", hsa_system_get_major_extension_table, HSA_EXTENSION_AMD_LOADER, 99, 64, buf);
    ROW(HSA_STATUS_ERROR, "hsa.cpp hsa_system_get_major_extension_table: no table for the extension", hsa_system_get_major_extension_table, 0x7fff, 1, 64, buf);
    ROW(INVARG, "hsa.cpp hsa_extension_get_name: IS_BAD_PTR(name)", hsa_extension_get_name, HSA_EXTENSION_AMD_LOADER, NULL);
    ROW(INVARG, "hsa.cpp hsa_extension_get_name: default case", hsa_extension_get_name, 0x7777, &txt);
    ROW(HSA_STATUS_SUCCESS, "hsa_ext_amd.cpp hsa_amd_register_system_event_handler: no check (Runtime::SetCustomSystemEventHandler stores it)", hsa_amd_register_system_event_handler, NULL, NULL);

    ROW(INVARG, "hsa.cpp hsa_iterate_agents: IS_BAD_PTR(callback)", hsa_iterate_agents, NULL, NULL);
    int calls = 0;
    ROW(HSA_STATUS_INFO_BREAK, "runtime.cpp Runtime::IterateAgent: a callback's status other than success ends the walk and is returned", hsa_iterate_agents, stop_agent, &calls);
    CHECK(calls == 1);
    ROW(INVARG, "hsa.cpp hsa_agent_get_info: IS_BAD_PTR(value)", hsa_agent_get_info, E.gpu, HSA_AGENT_INFO_NAME, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa.cpp hsa_agent_get_info: IS_VALID(agent)", hsa_agent_get_info, zero, HSA_AGENT_INFO_NAME, buf);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa.cpp hsa_agent_get_info: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_agent_get_info, junk, HSA_AGENT_INFO_NAME, buf);
    ROW(INVARG, "amd_gpu_agent.cpp GpuAgent::GetInfo: default case", hsa_agent_get_info, E.gpu, (hsa_agent_info_t)0x5555, buf);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa.cpp hsa_agent_extension_supported: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_agent_extension_supported, HSA_EXTENSION_AMD_LOADER, junk, 1, 0, &yes);
    ROW(INVARG, "hsa.cpp hsa_agent_extension_supported: result == NULL", hsa_agent_extension_supported, HSA_EXTENSION_AMD_LOADER, E.gpu, 1, 0, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa.cpp hsa_agent_major_extension_supported: IS_VALID(agent)", hsa_agent_major_extension_supported, HSA_EXTENSION_AMD_LOADER, zero, 1, &minor, &yes);
    ROW(INVARG, "hsa.cpp hsa_agent_major_extension_supported: writes *version_minor unchecked (crash); Inlay refuses", hsa_agent_major_extension_supported, HSA_EXTENSION_AMD_LOADER, E.gpu, 1, NULL, &yes);
    ROW(INVARG, "hsa.cpp hsa_agent_major_extension_supported: result == NULL", hsa_agent_major_extension_supported, HSA_EXTENSION_AMD_LOADER, E.gpu, 1, &minor, NULL);

    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa.cpp hsa_agent_iterate_isas: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_agent_iterate_isas, junk, isa_cb, NULL);
    ROW(INVARG, "hsa.cpp hsa_agent_iterate_isas: IS_BAD_PTR(callback)", hsa_agent_iterate_isas, E.gpu, NULL, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_ISA_NAME, "hsa.cpp hsa_isa_from_name: IsaRegistry::GetIsa finds none", hsa_isa_from_name, "amdgcn-amd-amdhsa--gfx9999", &isa);
    ROW(INVARG, "hsa.cpp hsa_isa_from_name: IS_BAD_PTR(name)", hsa_isa_from_name, NULL, &isa);
    ROW(INVARG, "hsa.cpp hsa_isa_from_name: IS_BAD_PTR(isa)", hsa_isa_from_name, "amdgcn-amd-amdhsa--gfx90a", NULL);
    OK(hsa_isa_from_name("amdgcn-amd-amdhsa--gfx90a", &isa));
    ROW(HSA_STATUS_ERROR_INVALID_ISA, "hsa.cpp hsa_isa_get_info_alt: IS_VALID(isa_object)", hsa_isa_get_info_alt, noisa, HSA_ISA_INFO_NAME_LENGTH, buf);
    ROW(HSA_STATUS_ERROR_INVALID_ISA, "hsa.cpp hsa_isa_get_info_alt: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_isa_get_info_alt, junkisa, HSA_ISA_INFO_NAME_LENGTH, buf);
    ROW(INVARG, "hsa.cpp hsa_isa_get_info_alt: IS_BAD_PTR(value)", hsa_isa_get_info_alt, isa, HSA_ISA_INFO_NAME_LENGTH, NULL);
    ROW(INVARG, "hsa.cpp hsa_isa_get_info_alt: Isa::GetInfo false", hsa_isa_get_info_alt, isa, (hsa_isa_info_t)0x4444, buf);
    ROW(HSA_STATUS_ERROR_INVALID_ISA, "hsa.cpp hsa_isa_get_info: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_isa_get_info, junkisa, HSA_ISA_INFO_NAME_LENGTH, 0, buf);
    ROW(HSA_STATUS_ERROR_INVALID_INDEX, "hsa.cpp hsa_isa_get_info: index != 0", hsa_isa_get_info, isa, HSA_ISA_INFO_CALL_CONVENTION_INFO_WAVEFRONT_SIZE, 1, buf);
    ROW(INVARG, "hsa.cpp hsa_isa_get_info: IS_BAD_PTR(value)", hsa_isa_get_info, isa, HSA_ISA_INFO_NAME_LENGTH, 0, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_ISA, "hsa.cpp hsa_isa_iterate_wavefronts: IS_VALID(isa_object)", hsa_isa_iterate_wavefronts, noisa, wave_cb, NULL);
    ROW(INVARG, "hsa.cpp hsa_isa_iterate_wavefronts: IS_BAD_PTR(callback)", hsa_isa_iterate_wavefronts, isa, NULL, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_WAVEFRONT, "hsa.cpp hsa_wavefront_get_info: Wavefront::Object null", hsa_wavefront_get_info, nowave, HSA_WAVEFRONT_INFO_SIZE, buf);
    ROW(HSA_STATUS_ERROR_INVALID_ISA, "hsa.cpp hsa_isa_compatible: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_isa_compatible, junkisa, isa, &yes);
    ROW(HSA_STATUS_ERROR_INVALID_ISA, "hsa.cpp hsa_isa_compatible: IS_VALID(agent_isa_object)", hsa_isa_compatible, isa, noisa, &yes);
    ROW(INVARG, "hsa.cpp hsa_isa_compatible: IS_BAD_PTR(result)", hsa_isa_compatible, isa, isa, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_ISA, "hsa.cpp hsa_isa_get_exception_policies: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_isa_get_exception_policies, junkisa, HSA_PROFILE_FULL, &mask);
    ROW(INVARG, "hsa.cpp hsa_isa_get_exception_policies: IS_BAD_PTR(mask)", hsa_isa_get_exception_policies, isa, HSA_PROFILE_FULL, NULL);
    ROW(INVARG, "hsa.cpp hsa_isa_get_exception_policies: IS_BAD_PROFILE", hsa_isa_get_exception_policies, isa, (hsa_profile_t)7, &mask);
    hsa_round_method_t rm;
    ROW(HSA_STATUS_ERROR_INVALID_ISA, "hsa.cpp hsa_isa_get_round_method: IS_VALID(isa_object)", hsa_isa_get_round_method, noisa, HSA_FP_TYPE_32, HSA_FLUSH_MODE_FTZ, &rm);
    ROW(INVARG, "hsa.cpp hsa_isa_get_round_method: IS_BAD_PTR(round_method)", hsa_isa_get_round_method, isa, HSA_FP_TYPE_32, HSA_FLUSH_MODE_FTZ, NULL);
    ROW(INVARG, "hsa.cpp hsa_isa_get_round_method: IS_BAD_FP_TYPE", hsa_isa_get_round_method, isa, (hsa_fp_type_t)0x99, HSA_FLUSH_MODE_FTZ, &rm);

    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa.cpp hsa_agent_iterate_regions: IS_VALID(agent)", hsa_agent_iterate_regions, zero, region_cb, NULL);
    ROW(INVARG, "hsa.cpp hsa_agent_iterate_regions: IS_BAD_PTR(callback)", hsa_agent_iterate_regions, E.gpu, NULL, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_REGION, "hsa.cpp hsa_region_get_info: IS_VALID(mem_region)", hsa_region_get_info, noregion, HSA_REGION_INFO_SIZE, buf);
    ROW(HSA_STATUS_ERROR_INVALID_REGION, "hsa.cpp hsa_region_get_info: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_region_get_info, junkregion, HSA_REGION_INFO_SIZE, buf);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa_ext_amd.cpp hsa_amd_agent_iterate_memory_pools: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_amd_agent_iterate_memory_pools, junk, pool_cb, NULL);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_agent_iterate_memory_pools: IS_BAD_PTR(callback)", hsa_amd_agent_iterate_memory_pools, E.gpu, NULL, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_MEMORY_POOL, "hsa_ext_amd.cpp hsa_amd_memory_pool_get_info: mem_region == NULL", hsa_amd_memory_pool_get_info, nopool, HSA_AMD_MEMORY_POOL_INFO_SIZE, buf);
    ROW(HSA_STATUS_ERROR_INVALID_MEMORY_POOL, "hsa_ext_amd.cpp hsa_amd_memory_pool_get_info: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_amd_memory_pool_get_info, junkpool, HSA_AMD_MEMORY_POOL_INFO_SIZE, buf);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_memory_pool_get_info: IS_BAD_PTR(value)", hsa_amd_memory_pool_get_info, E.device, HSA_AMD_MEMORY_POOL_INFO_SIZE, NULL);
    ROW(INVARG, "amd_memory_region.cpp MemoryRegion::GetPoolInfo: default case", hsa_amd_memory_pool_get_info, E.device, (hsa_amd_memory_pool_info_t)0x3333, buf);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa_ext_amd.cpp hsa_amd_agent_memory_pool_get_info: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_amd_agent_memory_pool_get_info, junk, E.device, HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS, buf);
    ROW(HSA_STATUS_ERROR_INVALID_MEMORY_POOL, "hsa_ext_amd.cpp hsa_amd_agent_memory_pool_get_info: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_amd_agent_memory_pool_get_info, E.gpu, junkpool, HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS, buf);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_agent_memory_pool_get_info: value == NULL", hsa_amd_agent_memory_pool_get_info, E.gpu, E.device, HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_MEMORY_POOL, "hsa_ext_amd.cpp hsa_amd_memory_pool_can_migrate: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_amd_memory_pool_can_migrate, junkpool, E.device, &yes);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_memory_pool_can_migrate: result == NULL", hsa_amd_memory_pool_can_migrate, E.kernarg, E.device, NULL);

    hsa_amd_coherency_type_t ct;
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa_ext_amd.cpp hsa_amd_coherency_get_type: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_amd_coherency_get_type, junk, &ct);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa_ext_amd.cpp hsa_amd_coherency_get_type: not a GPU", hsa_amd_coherency_get_type, E.cpu, &ct);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_coherency_get_type: IS_BAD_PTR(type)", hsa_amd_coherency_get_type, E.gpu, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa_ext_amd.cpp hsa_amd_coherency_set_type: IS_VALID(agent)", hsa_amd_coherency_set_type, zero, HSA_AMD_COHERENCY_TYPE_COHERENT);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_coherency_set_type: type out of range", hsa_amd_coherency_set_type, E.gpu, (hsa_amd_coherency_type_t)9);

    uint64_t tick;
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa_ext_amd.cpp hsa_amd_profiling_convert_tick_to_system_domain: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_amd_profiling_convert_tick_to_system_domain, junk, 5, &tick);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_profiling_convert_tick_to_system_domain: IS_BAD_PTR(system_tick)", hsa_amd_profiling_convert_tick_to_system_domain, E.gpu, 5, NULL);

    /* Images and samplers: the extension is there (as on an MI210) but every image and
       sampler is refused with the extension's own status; bad agents are still told apart. */
    hsa_ext_image_descriptor_t desc; memset(&desc, 0, sizeof desc);
    hsa_ext_image_t img = {0};
    hsa_ext_sampler_t smp = {0};
    hsa_ext_sampler_descriptor_t sdesc; memset(&sdesc, 0, sizeof sdesc);
    hsa_ext_image_data_info_t dinfo;
    hsa_ext_image_region_t region; memset(&region, 0, sizeof region);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "image/hsa_ext_image.cpp hsa_ext_image_create: Inlay's linear-image checks (images.rs)", hsa_ext_image_create, junk, &desc, buf, HSA_ACCESS_PERMISSION_RW, &img);
    ROW(HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED, "image/hsa_ext_image.cpp hsa_ext_image_create_with_layout: Inlay's linear-image checks (images.rs)", hsa_ext_image_create_with_layout, E.gpu, &desc, buf, HSA_ACCESS_PERMISSION_RW, HSA_EXT_IMAGE_DATA_LAYOUT_LINEAR, 0, 0, &img);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "image/hsa_ext_image.cpp hsa_ext_image_destroy: Inlay's linear-image checks (images.rs)", hsa_ext_image_destroy, zero, img);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "image/hsa_ext_image.cpp hsa_ext_image_data_get_info: Inlay's linear-image checks (images.rs)", hsa_ext_image_data_get_info, E.cpu, &desc, HSA_ACCESS_PERMISSION_RW, &dinfo);
    ROW(INVARG, "image/hsa_ext_image.cpp hsa_ext_image_export: Inlay's linear-image checks (images.rs)", hsa_ext_image_export, E.gpu, img, buf, 0, 0, &region);
    ROW(INVARG, "image/hsa_ext_image.cpp hsa_ext_image_import: Inlay's linear-image checks (images.rs)", hsa_ext_image_import, E.gpu, buf, 0, 0, img, &region);
    ROW(HSA_EXT_STATUS_ERROR_SAMPLER_DESCRIPTOR_UNSUPPORTED, "image/hsa_ext_image.cpp hsa_ext_sampler_create: Inlay's linear-image checks (images.rs)", hsa_ext_sampler_create, E.gpu, &sdesc, &smp);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "image/hsa_ext_image.cpp hsa_ext_sampler_destroy: Inlay's linear-image checks (images.rs)", hsa_ext_sampler_destroy, junk, smp);
    ROW(HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED, "image/hsa_ext_image.cpp hsa_amd_image_create: Inlay's linear-image checks (images.rs)", hsa_amd_image_create, E.gpu, &desc, NULL, buf, HSA_ACCESS_PERMISSION_RW, &img);
    hsa_ext_image_format_t fmt = {HSA_EXT_IMAGE_CHANNEL_TYPE_FLOAT, HSA_EXT_IMAGE_CHANNEL_ORDER_R};
    uint32_t caps; uint32_t dim;
    hsa_dim3_t origin = {0, 0, 0};
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "image/hsa_ext_image.cpp hsa_ext_image_get_capability: Inlay's linear-image checks (images.rs)", hsa_ext_image_get_capability, junk, HSA_EXT_IMAGE_GEOMETRY_2D, &fmt, &caps);
    ROW(INVARG, "image/hsa_ext_image.cpp hsa_ext_image_get_capability: Inlay's linear-image checks (images.rs)", hsa_ext_image_get_capability, E.gpu, HSA_EXT_IMAGE_GEOMETRY_2D, NULL, &caps);
    ROW(INVARG, "image/hsa_ext_image.cpp hsa_ext_image_get_capability_with_layout: Inlay's linear-image checks (images.rs)", hsa_ext_image_get_capability_with_layout, E.gpu, HSA_EXT_IMAGE_GEOMETRY_2D, &fmt, HSA_EXT_IMAGE_DATA_LAYOUT_LINEAR, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "image/hsa_ext_image.cpp hsa_ext_image_data_get_info_with_layout: Inlay's linear-image checks (images.rs)", hsa_ext_image_data_get_info_with_layout, junk, &desc, HSA_ACCESS_PERMISSION_RW, HSA_EXT_IMAGE_DATA_LAYOUT_LINEAR, 0, 0, &dinfo);
    ROW(INVARG, "image/hsa_ext_image.cpp hsa_ext_image_copy: Inlay's linear-image checks (images.rs)", hsa_ext_image_copy, E.gpu, img, &origin, img, &origin, &origin);
    ROW(INVARG, "image/hsa_ext_image.cpp hsa_ext_image_clear: Inlay's linear-image checks (images.rs)", hsa_ext_image_clear, E.gpu, img, buf, &region);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "image/hsa_ext_image.cpp hsa_amd_image_get_info_max_dim: Inlay's linear-image checks (images.rs)", hsa_amd_image_get_info_max_dim, E.cpu, HSA_EXT_AGENT_INFO_IMAGE_1D_MAX_ELEMENTS, &dim);
    ROW(INVARG, "image/hsa_ext_image.cpp hsa_amd_image_get_info_max_dim: Inlay's linear-image checks (images.rs)", hsa_amd_image_get_info_max_dim, E.gpu, HSA_AGENT_INFO_NAME, &dim);
    still_working();
}

/* ---- memory -------------------------------------------------------------- */
static void memory(void) {
    hsa_agent_t junk = {0xdeadbeef};
    hsa_amd_memory_pool_t nopool = {0};
    hsa_region_t noregion = {0};
    hsa_signal_t junksig = {0x12345678};
    char buf[256];
    void *p = NULL;

    ROW(HSA_STATUS_ERROR_INVALID_MEMORY_POOL, "hsa_ext_amd.cpp hsa_amd_memory_pool_allocate: mem_region == NULL", hsa_amd_memory_pool_allocate, nopool, 4096, 0, &p);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_memory_pool_allocate: ptr == NULL", hsa_amd_memory_pool_allocate, E.device, 4096, 0, NULL);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_memory_pool_allocate: size == 0", hsa_amd_memory_pool_allocate, E.device, 0, 0, &p);
    ROW(HSA_STATUS_ERROR_INVALID_ALLOCATION, "amd_memory_region.cpp MemoryRegion::AllocateImpl: size > max_single_alloc_size_", hsa_amd_memory_pool_allocate, E.device, SIZE_MAX, 0, &p);
    ROW(HSA_STATUS_SUCCESS, "hsa_ext_amd.cpp hsa_amd_memory_pool_allocate: unknown flag bits are ignored", hsa_amd_memory_pool_allocate, E.device, 4096, 0x80, &p);
    OK(hsa_amd_memory_pool_free(p));
    ROW(HSA_STATUS_ERROR_INVALID_REGION, "hsa.cpp hsa_memory_allocate: IS_VALID(mem_region)", hsa_memory_allocate, noregion, 4096, &p);
    ROW(HSA_STATUS_SUCCESS, "hsa.cpp hsa_memory_free: ptr == NULL is success", hsa_amd_memory_pool_free, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_ALLOCATION, "runtime.cpp Runtime::FreeMemory: not in allocation_map_", hsa_amd_memory_pool_free, buf);
    ROW(HSA_STATUS_ERROR_INVALID_ALLOCATION, "runtime.cpp Runtime::FreeMemory: not in allocation_map_", hsa_memory_free, buf);
    ROW(INVARG, "hsa.cpp hsa_memory_copy: dst == NULL", hsa_memory_copy, NULL, buf, 8);
    ROW(INVARG, "runtime.cpp Runtime::CopyMemory: memcpy into read-only code (crash); Inlay refuses", hsa_memory_copy, (void *)main, buf, 8);
    ROW(INVARG, "runtime.cpp Runtime::CopyMemory: unknown memory is memcpy'd (crash); Inlay refuses", hsa_memory_copy, buf, (void *)0x10, 8);
    ROW(INVARG, "runtime.cpp Runtime::CopyMemory: unknown memory is memcpy'd (crash); Inlay refuses", hsa_memory_copy, buf, buf + 8, SIZE_MAX / 2);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_memory_fill: ptr == nullptr", hsa_amd_memory_fill, NULL, 0, 4);
    ROW(HSA_STATUS_ERROR_INVALID_ALLOCATION, "runtime.cpp Runtime::FillMemory: in no allocation PtrInfo knows", hsa_amd_memory_fill, (void *)0x1000, 0, 4);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_memory_fill: ptr % 4 != 0", hsa_amd_memory_fill, buf + 1, 0, 4); /* misaligned */
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_pointer_info: IS_BAD_PTR(info)", hsa_amd_pointer_info, buf, NULL, NULL, NULL, NULL);
    hsa_amd_pointer_info_t info; info.size = 2;
    ROW(HSA_STATUS_SUCCESS, "runtime.cpp Runtime::PtrInfo: only info->size == 0 is refused; 2 bytes are filled", hsa_amd_pointer_info, buf, &info, NULL, NULL, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "runtime.cpp Runtime::VMemoryMapAllowAccess: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_amd_agents_allow_access, 1, &junk, NULL, buf);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_agents_allow_access: num_agents == 0", hsa_amd_agents_allow_access, 0, NULL, NULL, buf);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_agents_allow_access: ptr == NULL", hsa_amd_agents_allow_access, 1, &E.gpu, NULL, NULL);
    ROW(HSA_STATUS_SUCCESS, "hsa.cpp hsa_memory_register: only size == 0 with an address is refused", hsa_memory_register, NULL, 64);
    ROW(INVARG, "hsa.cpp hsa_memory_register: size == 0 && address != NULL", hsa_memory_register, buf, 0);
    ROW(HSA_STATUS_SUCCESS, "hsa.cpp hsa_memory_deregister: no check", hsa_memory_deregister, NULL, 64);
    ROW(INVARG, "hsa.cpp hsa_memory_assign_agent: ptr == NULL", hsa_memory_assign_agent, NULL, E.gpu, HSA_ACCESS_PERMISSION_RW);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa.cpp hsa_memory_assign_agent: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_memory_assign_agent, buf, junk, HSA_ACCESS_PERMISSION_RW);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_memory_lock: host_ptr == nullptr", hsa_amd_memory_lock, NULL, 64, NULL, 0, &p);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_memory_lock: agent_ptr == nullptr", hsa_amd_memory_lock, buf, 64, NULL, 0, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "amd_memory_region.cpp MemoryRegion::Lock: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_amd_memory_lock, buf, 64, &junk, 1, &p);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_memory_lock_to_pool: agent_ptr == nullptr", hsa_amd_memory_lock_to_pool, buf, 64, NULL, 0, E.kernarg, 0, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_MEMORY_POOL, "hsa_ext_amd.cpp hsa_amd_memory_lock_to_pool: mem_region == nullptr", hsa_amd_memory_lock_to_pool, buf, 64, NULL, 0, nopool, 0, &p);
    ROW(HSA_STATUS_SUCCESS, "amd_memory_region.cpp MemoryRegion::Unlock: no check, success", hsa_amd_memory_unlock, NULL);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_memory_migrate: ptr == NULL", hsa_amd_memory_migrate, NULL, E.device, 0);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_ipc_memory_create: IS_BAD_PTR(ptr)", hsa_amd_ipc_memory_create, NULL, 64, (hsa_amd_ipc_memory_t *)buf);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_ipc_memory_create: IS_BAD_PTR(handle)", hsa_amd_ipc_memory_create, buf, 64, NULL);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_ipc_memory_attach: IS_BAD_PTR(mapped_ptr)", hsa_amd_ipc_memory_attach, (hsa_amd_ipc_memory_t *)buf, 64, 0, NULL, NULL);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_ipc_memory_detach: IS_BAD_PTR(mapped_ptr)", hsa_amd_ipc_memory_detach, NULL);
    size_t sz = 0, mdsz = 0; const void *md = NULL;
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_interop_map_buffer: IS_BAD_PTR(ptr)", hsa_amd_interop_map_buffer, 1, &E.gpu, -1, 0, &sz, NULL, &mdsz, &md);
    ROW(HSA_STATUS_SUCCESS, "hsa_ext_amd.cpp hsa_amd_interop_unmap_buffer: always success", hsa_amd_interop_unmap_buffer, NULL);
    ROW(HSA_STATUS_ERROR, "runtime.cpp Runtime::SetSvmAttrib: the driver refuses the range (hsaKmtSVMSetAttr)", hsa_amd_svm_attributes_set, NULL, 64, NULL, 0);
    ROW(HSA_STATUS_SUCCESS, "runtime.cpp Runtime::GetSvmAttrib: nothing asked, nothing to do", hsa_amd_svm_attributes_get, NULL, 64, NULL, 0);
    ROW(INVARG, "runtime.cpp Runtime::SvmPrefetch: no check, the made-up signal is used later (crash); Inlay refuses", hsa_amd_svm_prefetch_async, NULL, 64, E.gpu, 0, NULL, junksig);
    hsa_pitched_ptr_t pp; memset(&pp, 0, sizeof pp);
    hsa_dim3_t off = {0, 0, 0}, range = {0, 0, 0};
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL, "hsa_ext_amd.cpp hsa_amd_memory_async_copy_rect: Signal::Convert(completion_signal)", hsa_amd_memory_async_copy_rect, &pp, &off, &pp, &off, &range, E.gpu, hsaHostToDevice, 0, NULL, junksig);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_memory_async_copy_rect: dir == hsaHostToHost", hsa_amd_memory_async_copy_rect, &pp, &off, &pp, &off, &range, E.gpu, hsaHostToHost, 0, NULL, junksig);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_memory_async_copy_rect: dst == nullptr", hsa_amd_memory_async_copy_rect, NULL, NULL, NULL, NULL, NULL, E.gpu, hsaHostToDevice, 0, NULL, junksig);

    /* Async copies: unknown agents and signals, unmapped memory, past the end. */
    hsa_signal_t done;
    OK(hsa_signal_create(1, 0, NULL, &done));
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa_ext_amd.cpp hsa_amd_memory_async_copy: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_amd_memory_async_copy, buf, junk, buf + 8, E.cpu, 8, 0, NULL, done);
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL, "hsa_ext_amd.cpp hsa_amd_memory_async_copy: Signal::Convert(completion_signal)", hsa_amd_memory_async_copy, buf, E.cpu, buf + 8, E.cpu, 8, 0, NULL, junksig);
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL, "hsa_ext_amd.cpp hsa_amd_memory_async_copy: Signal::Convert(dep_signals[0])", hsa_amd_memory_async_copy, buf, E.cpu, buf + 8, E.cpu, 8, 1, &junksig, done);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_memory_async_copy: num_dep_signals > 0 && dep_signals == nullptr", hsa_amd_memory_async_copy, buf, E.cpu, buf + 8, E.cpu, 8, 1, NULL, done);
    ROW(INVARG, "runtime.cpp Runtime::CopyMemory: the copy thread writes unknown memory (crash); Inlay refuses", hsa_amd_memory_async_copy, (void *)0x10, E.cpu, buf, E.cpu, 8, 0, NULL, done);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_memory_async_copy: IS_BAD_PTR(dst)", hsa_amd_memory_async_copy, NULL, E.cpu, buf, E.cpu, 8, 0, NULL, done);
    uint32_t *d = NULL;
    OK(hsa_amd_memory_pool_allocate(E.device, 4096, 0, (void **)&d));
    ROW(INVARG, "runtime.cpp Runtime::CopyMemory: no check, the DMA faults past the end; Inlay refuses", hsa_amd_memory_async_copy, d, E.gpu, buf, E.cpu, 4097, 0, NULL, done);
    CHECK(hsa_signal_load_relaxed(done) == 1); /* refused copies never complete the signal */

    /* Freed memory. */
    OK(hsa_amd_memory_pool_free(d));
    ROW(HSA_STATUS_ERROR_INVALID_ALLOCATION, "runtime.cpp Runtime::FreeMemory: not in allocation_map_ any more", hsa_amd_memory_pool_free, d);
    ROW(HSA_STATUS_ERROR_INVALID_ALLOCATION, "runtime.cpp Runtime::FillMemory: in no allocation PtrInfo knows", hsa_amd_memory_fill, d, 0, 4);
    ROW(HSA_STATUS_ERROR_INVALID_ALLOCATION, "runtime.cpp Runtime::VMemoryMapAllowAccess: no mapped handle", hsa_amd_agents_allow_access, 1, &E.cpu, NULL, d);
    ROW(INVARG, "runtime.cpp Runtime::CopyMemory: no check, the DMA faults on freed memory; Inlay refuses", hsa_amd_memory_async_copy, d, E.gpu, buf, E.cpu, 8, 0, NULL, done);
    hsa_region_t reg = {0};
    /* hsa_memory_allocate/free on a real region, then free twice. */
    hsa_status_t first_region(hsa_region_t r, void *data);
    OK(hsa_agent_iterate_regions(E.gpu, first_region, &reg));
    CHECK(reg.handle != 0);
    ROW(INVARG, "hsa.cpp hsa_memory_allocate: size == 0", hsa_memory_allocate, reg, 0, &p);
    ROW(INVARG, "hsa.cpp hsa_memory_allocate: ptr == NULL", hsa_memory_allocate, reg, 64, NULL);
    OK(hsa_memory_allocate(reg, 64, &p));
    OK(hsa_memory_free(p));
    ROW(HSA_STATUS_ERROR_INVALID_ALLOCATION, "runtime.cpp Runtime::FreeMemory: not in allocation_map_ any more", hsa_memory_free, p);
    OK(hsa_signal_destroy(done));
    still_working();
}

hsa_status_t first_region(hsa_region_t r, void *data) {
    hsa_region_t *out = data;
    if (out->handle == 0) *out = r;
    return HSA_STATUS_SUCCESS;
}

/* ---- signals and signal groups --------------------------------------- */
static void signals(void) {
    hsa_signal_t nosig = {0}, junksig = {0x12345678}, s, t;
    hsa_agent_t junk = {0xdeadbeef};
    hsa_signal_group_t group, nogroup = {0}, junkgroup = {0x4444};
    hsa_signal_value_t v = 0;
    volatile hsa_signal_value_t *ptr = NULL;
    hsa_signal_condition_t conds[2] = {HSA_SIGNAL_CONDITION_EQ, HSA_SIGNAL_CONDITION_EQ};
    hsa_signal_value_t vals[2] = {0, 0};

    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_signal_create: IS_BAD_PTR(hsa_signal)", hsa_signal_create, 0, 0, NULL, NULL);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_signal_create: IS_BAD_PTR(consumers)", hsa_signal_create, 0, 2, NULL, &s);
    ROW(HSA_STATUS_SUCCESS, "hsa_ext_amd.cpp hsa_amd_signal_create: consumers are only compared with the CPU agents", hsa_signal_create, 0, 1, &junk, &s);
    OK(hsa_signal_destroy(s));
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_signal_create: IS_BAD_PTR(hsa_signal)", hsa_amd_signal_create, 0, 0, NULL, 0, NULL);
    ROW(HSA_STATUS_SUCCESS, "hsa_ext_amd.cpp hsa_amd_signal_create: unknown attribute bits are ignored", hsa_amd_signal_create, 0, 0, NULL, 0x100, &s);
    OK(hsa_signal_destroy(s));
    ROW(HSA_STATUS_SUCCESS, "hsa_ext_amd.cpp hsa_amd_signal_create: consumers are only compared with the CPU agents", hsa_amd_signal_create, 0, 1, &junk, 0, &s);
    OK(hsa_signal_destroy(s));
    ROW(INVARG, "signal.h Signal::Convert: a null handle", hsa_signal_destroy, nosig);
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL, "signal.h Signal::Convert: !IsValid() (a handle in unmapped memory crashes instead)", hsa_signal_destroy, junksig);
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL, "signal.h Signal::Convert: !IsValid()", hsa_amd_signal_value_pointer, junksig, &ptr);
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL, "signal.h Signal::Convert: !IsValid()", hsa_amd_signal_async_handler, junksig, HSA_SIGNAL_CONDITION_EQ, 0, handler_cb, NULL);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_async_function: IS_BAD_PTR(callback)", hsa_amd_async_function, NULL, NULL);
    hsa_amd_profiling_async_copy_time_t ct;
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL, "signal.h Signal::Convert: !IsValid()", hsa_amd_profiling_get_async_copy_time, junksig, &ct);
    hsa_amd_profiling_dispatch_time_t dt;
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL, "signal.h Signal::Convert: !IsValid()", hsa_amd_profiling_get_dispatch_time, E.gpu, junksig, &dt);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa_ext_amd.cpp hsa_amd_profiling_get_dispatch_time: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_amd_profiling_get_dispatch_time, junk, junksig, &dt);
    /* Value functions (loads, stores, waits) given these handles abort the
     * process, as ROCr's do: tests/hsa/hostile.rs runs each in a child. */

    OK(hsa_signal_create(1, 0, NULL, &s));
    OK(hsa_signal_create(1, 0, NULL, &t));
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_signal_value_pointer: IS_BAD_PTR(value_ptr)", hsa_amd_signal_value_pointer, s, NULL);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_signal_async_handler: IS_BAD_PTR(handler)", hsa_amd_signal_async_handler, s, HSA_SIGNAL_CONDITION_EQ, 0, NULL, NULL);
    ROW(HSA_STATUS_SUCCESS, "runtime.cpp Runtime::SetAsyncSignalHandler: the condition is not checked (it never holds)", hsa_amd_signal_async_handler, s, (hsa_signal_condition_t)9, 0, handler_cb, NULL);
    /* signal.h CheckSignalCondition: an unknown condition never holds, so the
     * wait times out (after 0 ns) and returns the value, 1. */
    VALUE(1, hsa_signal_wait_scacquire, s, (hsa_signal_condition_t)9, 0, 0, HSA_WAIT_STATE_BLOCKED);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_profiling_get_async_copy_time: IS_BAD_PTR(time)", hsa_amd_profiling_get_async_copy_time, s, NULL);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_profiling_get_dispatch_time: IS_BAD_PTR(time)", hsa_amd_profiling_get_dispatch_time, E.gpu, s, NULL);
    /* wait_any: zero count, null arrays, unknown signals, bad conditions.
     * hsa_ext_amd.cpp hsa_amd_signal_wait_any skips invalid signals and
     * answers UINT32_MAX when none is left or none is satisfied in time; it
     * reads null arrays unchecked (crash), where Inlay answers UINT32_MAX. */
    hsa_signal_t pair[2] = {s, junksig};
    VALUE(UINT32_MAX, hsa_amd_signal_wait_any, 0, pair, conds, vals, 0, HSA_WAIT_STATE_BLOCKED, &v);
    VALUE(UINT32_MAX, hsa_amd_signal_wait_any, 2, NULL, conds, vals, 0, HSA_WAIT_STATE_BLOCKED, &v);
    VALUE(UINT32_MAX, hsa_amd_signal_wait_any, 2, pair, conds, vals, 0, HSA_WAIT_STATE_BLOCKED, &v);
    pair[1] = t;
    VALUE(UINT32_MAX, hsa_amd_signal_wait_any, 2, pair, NULL, vals, 0, HSA_WAIT_STATE_BLOCKED, &v);
    hsa_signal_condition_t badconds[2] = {(hsa_signal_condition_t)9, HSA_SIGNAL_CONDITION_EQ};
    VALUE(UINT32_MAX, hsa_amd_signal_wait_any, 2, pair, badconds, vals, 0, HSA_WAIT_STATE_BLOCKED, &v);
    /* signal.cpp Signal::WaitMultiple scans in order: an unknown condition
     * ends the wait at once (even with no time limit), unless a signal
     * before it is already satisfied. */
    VALUE(UINT32_MAX, hsa_amd_signal_wait_any, 2, pair, badconds, vals, UINT64_MAX, HSA_WAIT_STATE_BLOCKED, &v);
    hsa_signal_condition_t lastbad[2] = {HSA_SIGNAL_CONDITION_EQ, (hsa_signal_condition_t)9};
    hsa_signal_value_t ones[2] = {1, 1};
    VALUE(0, hsa_amd_signal_wait_any, 2, pair, lastbad, ones, UINT64_MAX, HSA_WAIT_STATE_BLOCKED, &v);
    /* A made-up handle is skipped and the valid signal after it still counts. */
    hsa_signal_t skip[2] = {junksig, t};
    hsa_signal_store_relaxed(t, 0);
    VALUE(1, hsa_amd_signal_wait_any, 2, skip, conds, vals, 0, HSA_WAIT_STATE_BLOCKED, &v);
    hsa_signal_store_relaxed(t, 1);

    /* Signal groups. */
    ROW(INVARG, "hsa.cpp hsa_signal_group_create: num_signals == 0", hsa_signal_group_create, 0, pair, 0, NULL, &group);
    ROW(INVARG, "hsa.cpp hsa_signal_group_create: reads signals[0] unchecked (crash); Inlay refuses", hsa_signal_group_create, 2, NULL, 0, NULL, &group);
    ROW(INVARG, "hsa.cpp hsa_signal_group_create: writes *signal_group unchecked (crash); Inlay refuses", hsa_signal_group_create, 2, pair, 0, NULL, NULL);
    hsa_signal_t badpair[2] = {s, junksig};
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL, "signal.h Signal::Convert: !IsValid()", hsa_signal_group_create, 2, badpair, 0, NULL, &group);
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP, "hsa.cpp hsa_signal_group_destroy: IS_VALID(group)", hsa_signal_group_destroy, nogroup);
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP, "hsa.cpp hsa_signal_group_destroy: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_signal_group_destroy, junkgroup);
    hsa_signal_t which;
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP, "hsa.cpp hsa_signal_group_wait_any_relaxed: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_signal_group_wait_any_relaxed, junkgroup, conds, vals, HSA_WAIT_STATE_BLOCKED, &which, &v);
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP, "hsa.cpp hsa_signal_group_wait_any_scacquire: IS_VALID(group)", hsa_signal_group_wait_any_scacquire, nogroup, conds, vals, HSA_WAIT_STATE_BLOCKED, &which, &v);
    OK(hsa_signal_group_create(2, pair, 0, NULL, &group));
    ROW(INVARG, "hsa.cpp hsa_signal_group_wait_any_relaxed: waits, then writes *signal unchecked (crash); Inlay refuses", hsa_signal_group_wait_any_relaxed, group, conds, vals, HSA_WAIT_STATE_BLOCKED, NULL, &v);
    ROW(INVARG, "hsa.cpp hsa_signal_group_wait_any_scacquire: reads conditions unchecked (crash); Inlay refuses", hsa_signal_group_wait_any_scacquire, group, NULL, vals, HSA_WAIT_STATE_BLOCKED, &which, &v);
    ROW(INVARG, "hsa.cpp hsa_signal_group_wait_any_scacquire: an unknown condition never holds (waits forever); Inlay refuses", hsa_signal_group_wait_any_scacquire, group, badconds, vals, HSA_WAIT_STATE_BLOCKED, &which, &v);
    OK(hsa_signal_group_destroy(group));
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP, "hsa.cpp hsa_signal_group_destroy: a destroyed group is freed memory (undefined); Inlay: as for a null one", hsa_signal_group_destroy, group);
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP, "hsa.cpp hsa_signal_group_wait_any_relaxed: a destroyed group is freed memory (undefined); Inlay: as for a null one", hsa_signal_group_wait_any_relaxed, group, conds, vals, HSA_WAIT_STATE_BLOCKED, &which, &v);

    /* Destroyed signals: refused by status functions, inert for value functions. */
    volatile hsa_signal_value_t *live = NULL;
    OK(hsa_amd_signal_value_pointer(s, &live));
    OK(hsa_signal_destroy(s));
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL, "signal.h Signal::Convert: !IsValid() (the destroyed signal's id is cleared)", hsa_signal_destroy, s);
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL, "signal.h Signal::Convert: !IsValid()", hsa_amd_signal_value_pointer, s, &ptr);
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL, "signal.h Signal::Convert: !IsValid()", hsa_amd_signal_async_handler, s, HSA_SIGNAL_CONDITION_EQ, 0, handler_cb, NULL);
    pair[0] = s;
    VALUE(UINT32_MAX, hsa_amd_signal_wait_any, 2, pair, conds, vals, 0, HSA_WAIT_STATE_BLOCKED, &v);
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL, "signal.h Signal::Convert: !IsValid()", hsa_signal_group_create, 2, pair, 0, NULL, &group);
    /* Operations on the destroyed signal never reached the live one. */
    CHECK(hsa_signal_load_relaxed(t) == 1);
    OK(hsa_signal_destroy(t));
    still_working();
}

/* ---- queues and packets ------------------------------------------------ */
static volatile hsa_status_t queue_error;
static void on_queue_error(hsa_status_t st, hsa_queue_t *q, void *data) { (void)q; (void)data; queue_error = st; }
static void sleep_ms(int ms) { struct timespec ts = {0, ms * 1000000L}; nanosleep(&ts, NULL); }


/* Writes one packet (64 bytes; header last, with release) to a fresh queue with
 * an error callback, rings the doorbell and returns the status the callback got. */
static hsa_status_t submit_bad(const void *packet64) {
    hsa_queue_t *q = NULL;
    queue_error = HSA_STATUS_SUCCESS;
    OK(hsa_queue_create(E.gpu, 64, HSA_QUEUE_TYPE_MULTI, on_queue_error, NULL, 0, 0, &q));
    uint64_t id = hsa_queue_add_write_index_relaxed(q, 1);
    char *slot = (char *)q->base_address + (id % q->size) * 64;
    memcpy(slot + 2, (const char *)packet64 + 2, 62);
    uint16_t header; memcpy(&header, packet64, 2);
    __atomic_store_n((uint16_t *)slot, header, __ATOMIC_RELEASE);
    hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)id);
    for (int i = 0; i < 5000 && queue_error == HSA_STATUS_SUCCESS; i++) sleep_ms(1);
    hsa_status_t st = queue_error;
    /* The packet was not consumed: the read index stays where it was. */
    CHECK(hsa_queue_load_read_index_scacquire(q) == id);
    OK(hsa_queue_destroy(q));
    return st;
}

/* A real kernel (vector_add of the gfx90a fixture) so that each bad packet
 * below differs from a valid one only by its edit. */
static void packets(const char *path90a) {
    size_t size;
    unsigned char *co = slurp(path90a, &size);
    hsa_code_object_reader_t reader;
    hsa_executable_t exe;
    hsa_executable_symbol_t sym;
    uint64_t kernel_object = 0;
    OK(hsa_code_object_reader_create_from_memory(co, size, &reader));
    OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &exe));
    OK(hsa_executable_load_agent_code_object(exe, E.gpu, reader, NULL, NULL));
    OK(hsa_executable_freeze(exe, NULL));
    OK(hsa_executable_get_symbol_by_name(exe, "vector_add.kd", &E.gpu, &sym));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &kernel_object));
    CHECK(kernel_object != 0 && kernel_object % 64 == 0);

    hsa_signal_t done;
    OK(hsa_signal_create(1, 0, NULL, &done));
    /* vector_add(const float *a, const float *b, float *c, unsigned n) */
    float *data = NULL;
    OK(hsa_amd_memory_pool_allocate(E.device, 3 * 64 * sizeof(float), 0, (void **)&data));
    OK(hsa_amd_memory_fill(data, 0x3f800000u, 64));       /* a = 1.0f */
    OK(hsa_amd_memory_fill(data + 64, 0x40000000u, 64));  /* b = 2.0f */
    OK(hsa_amd_memory_fill(data + 128, 0xdeadbeefu, 64)); /* c: garbage until the kernel runs */
    void **kernarg = NULL;
    OK(hsa_amd_memory_pool_allocate(E.kernarg, 4096, 0, (void **)&kernarg));
    kernarg[0] = data; kernarg[1] = data + 64; kernarg[2] = data + 128;
    *(uint32_t *)&kernarg[3] = 64;
    hsa_kernel_dispatch_packet_t good; memset(&good, 0, sizeof good);
    good.header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) | (1 << HSA_PACKET_HEADER_BARRIER)
        | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
    good.setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
    good.workgroup_size_x = 64; good.workgroup_size_y = good.workgroup_size_z = 1;
    good.grid_size_x = 64; good.grid_size_y = good.grid_size_z = 1;
    good.kernel_object = kernel_object;
    good.kernarg_address = kernarg;
    good.completion_signal = done;

    hsa_kernel_dispatch_packet_t p;
#define BAD_PACKET(want, edit) do { p = good; edit; hsa_status_t st_ = submit_bad(&p); if (st_ != (want)) { \
        fprintf(stderr, "%s:%d: packet with %s: error callback got 0x%x, want 0x%x\n", __FILE__, __LINE__, #edit, (unsigned)st_, (unsigned)(want)); exit(1); } } while (0)
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, p.header = (p.header & ~0xff) | HSA_PACKET_TYPE_VENDOR_SPECIFIC);
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, p.header = (p.header & ~0xff) | HSA_PACKET_TYPE_AGENT_DISPATCH);
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, p.header = (p.header & ~0xff) | 0x77);
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, p.header |= 1 << 13);                    /* reserved header bits */
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, p.header |= 3 << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE); /* no such scope */
    /* What the packet processor reports and ROCr's AqlQueue::ExceptionHandler
     * maps (amd_aql_queue.cpp): EC_QUEUE_PACKET_DISPATCH_DIM_INVALID ->
     * INCOMPATIBLE_ARGUMENTS, _GROUP_SEGMENT_SIZE_INVALID -> INVALID_ALLOCATION,
     * _CODE_INVALID ("invalid (or NULL) code") -> INVALID_CODE_OBJECT,
     * _WORK_GROUP_SIZE_INVALID -> INVALID_ARGUMENT; malformed and unsupported
     * packets -> INVALID_PACKET_FORMAT. */
    BAD_PACKET(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS, p.setup = 0);                           /* zero dimensions */
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, p.setup = 4);
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, p.setup = 1 | (1 << 5));                 /* reserved setup bits */
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, p.grid_size_x = 0);
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, p.grid_size_z = 0);
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_ARGUMENT, p.workgroup_size_y = 0);
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_ARGUMENT, p.workgroup_size_x = 1024; p.workgroup_size_y = 2);
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_ALLOCATION, p.group_segment_size = 1u << 20);
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_CODE_OBJECT, p.kernel_object = 0);
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_CODE_OBJECT, p.kernel_object = 0x1001);                /* descriptors are 64-byte aligned */
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, p.kernarg_address = (char *)kernarg + 4); /* kernargs are 16-byte aligned */
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, p.reserved0 = 1);
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, p.reserved2 = 1);
    BAD_PACKET(HSA_STATUS_ERROR_INVALID_SIGNAL, p.completion_signal.handle = 0x12345678);
    /* Barrier packets: an unknown dependency or completion signal. */
    hsa_barrier_and_packet_t b; memset(&b, 0, sizeof b);
    b.header = (HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE) | (1 << HSA_PACKET_HEADER_BARRIER);
    b.dep_signal[2].handle = 0x12345678;
    CHECK(submit_bad(&b) == HSA_STATUS_ERROR_INVALID_SIGNAL);
    b.header = (HSA_PACKET_TYPE_BARRIER_OR << HSA_PACKET_HEADER_TYPE);
    CHECK(submit_bad(&b) == HSA_STATUS_ERROR_INVALID_SIGNAL);
    b.dep_signal[2].handle = 0;
    b.reserved1 = 7; /* reserved fields */
    CHECK(submit_bad(&b) == HSA_STATUS_ERROR_INVALID_PACKET_FORMAT);
    /* None of them completed the signal. */
    CHECK(hsa_signal_load_relaxed(done) == 1);
    /* The unedited packet is well formed: it runs and completes. */
    hsa_queue_t *q = NULL;
    queue_error = HSA_STATUS_SUCCESS;
    OK(hsa_queue_create(E.gpu, 64, HSA_QUEUE_TYPE_MULTI, on_queue_error, NULL, 0, 0, &q));
    uint64_t id = hsa_queue_add_write_index_relaxed(q, 1);
    hsa_kernel_dispatch_packet_t *slot = (hsa_kernel_dispatch_packet_t *)q->base_address + id;
    memcpy((char *)slot + 2, (char *)&good + 2, 62);
    __atomic_store_n(&slot->header, good.header, __ATOMIC_RELEASE);
    hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)id);
    for (int i = 0; i < 5000 && queue_error == HSA_STATUS_SUCCESS && hsa_signal_load_scacquire(done) != 0; i++) sleep_ms(1);
    CHECK(queue_error == HSA_STATUS_SUCCESS && hsa_signal_load_scacquire(done) == 0);
    float host[64];
    OK(hsa_memory_copy(host, data + 128, sizeof host));
    for (int i = 0; i < 64; i++) CHECK(host[i] == 3.0f);
    OK(hsa_queue_destroy(q));
    OK(hsa_amd_memory_pool_free(kernarg));
    OK(hsa_amd_memory_pool_free(data));
    OK(hsa_signal_destroy(done));
    OK(hsa_executable_destroy(exe));
    OK(hsa_code_object_reader_destroy(reader));
    free(co);
}

static void queues(const char *path90a) {
    hsa_agent_t zero = {0};
    char buf[512] __attribute__((aligned(64)));
    memset(buf, 0, sizeof buf);
    hsa_queue_t *q = NULL, *fake = (hsa_queue_t *)buf;
    hsa_signal_t junksig = {0x12345678};
    uint32_t cu[2] = {~0u, ~0u};

    ROW(INVARG, "hsa.cpp hsa_queue_create: queue == nullptr", hsa_queue_create, E.gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa.cpp hsa_queue_create: IS_VALID(agent)", hsa_queue_create, zero, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &q);
    ROW(HSA_STATUS_ERROR, "amd_cpu_agent.cpp CpuAgent::QueueCreate: no packet processor", hsa_queue_create, E.cpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &q);
    ROW(INVARG, "hsa.cpp hsa_queue_create: size == 0", hsa_queue_create, E.gpu, 0, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &q);
    ROW(INVARG, "hsa.cpp hsa_queue_create: !IsPowerOfTwo(size)", hsa_queue_create, E.gpu, 100, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &q);
    ROW(HSA_STATUS_ERROR_OUT_OF_RESOURCES, "amd_gpu_agent.cpp GpuAgent::QueueCreate: size > maxAqlSize_", hsa_queue_create, E.gpu, 1u << 30, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &q);
    ROW(INVARG, "hsa.cpp hsa_queue_create: type > HSA_QUEUE_TYPE_COOPERATIVE", hsa_queue_create, E.gpu, 64, 77, NULL, NULL, 0, 0, &q);
    ROW(HSA_STATUS_SUCCESS, "hsa.cpp hsa_queue_create: group_segment_size is not checked", hsa_queue_create, E.gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 1u << 20, &q);
    OK(hsa_queue_destroy(q));
    hsa_region_t noregion = {0};
    ROW(INVARG, "hsa.cpp hsa_soft_queue_create: queue == NULL", hsa_soft_queue_create, noregion, 64, HSA_QUEUE_TYPE_MULTI, 0, junksig, NULL);
    ROW(INVARG, "hsa.cpp hsa_soft_queue_create: region.handle == 0", hsa_soft_queue_create, noregion, 64, HSA_QUEUE_TYPE_MULTI, 0, junksig, &q);
    ROW(INVARG, "hsa.cpp hsa_queue_destroy: IS_BAD_PTR(queue)", hsa_queue_destroy, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_QUEUE, "hsa.cpp hsa_queue_destroy: Queue::Convert of a fake queue reads its neighbour (undefined); Inlay: IS_VALID fails", hsa_queue_destroy, fake);
    ROW(INVARG, "hsa.cpp hsa_queue_inactivate: IS_BAD_PTR(queue)", hsa_queue_inactivate, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_QUEUE, "hsa.cpp hsa_queue_inactivate: Queue::Convert of a fake queue (undefined); Inlay: IS_VALID fails", hsa_queue_inactivate, fake);
    ROW(HSA_STATUS_ERROR_INVALID_QUEUE, "hsa_ext_amd.cpp hsa_amd_queue_cu_set_mask: Queue::Convert of a fake queue (undefined); Inlay: IS_VALID fails", hsa_amd_queue_cu_set_mask, fake, 32, cu);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_queue_set_priority: IS_BAD_PTR(queue)", hsa_amd_queue_set_priority, NULL, HSA_AMD_QUEUE_PRIORITY_LOW);
    ROW(HSA_STATUS_ERROR_INVALID_QUEUE, "hsa_ext_amd.cpp hsa_amd_profiling_set_profiler_enabled: Queue::Convert of a fake queue (undefined); Inlay: IS_VALID fails", hsa_amd_profiling_set_profiler_enabled, fake, 1);
    /* Index functions given these abort, as in ROCr: tests/hsa/hostile.rs. */
    for (size_t i = 0; i < sizeof buf; i++) CHECK(buf[i] == 0); /* a fake queue is never written */

    OK(hsa_queue_create(E.gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &q));
    ROW(HSA_STATUS_SUCCESS, "amd_aql_queue.cpp AqlQueue::SetCUMasking: a count of 0 resets the mask", hsa_amd_queue_cu_set_mask, q, 0, cu);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_queue_cu_set_mask: num_cu_mask_count % 32 != 0", hsa_amd_queue_cu_set_mask, q, 33, cu);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_queue_cu_set_mask: IS_BAD_PTR(cu_mask)", hsa_amd_queue_cu_set_mask, q, 32, NULL);
    ROW(INVARG, "hsa_ext_amd.cpp hsa_amd_queue_set_priority: not in ext_kmt_priomap", hsa_amd_queue_set_priority, q, (hsa_amd_queue_priority_t)9);
    hsa_signal_t bell = q->doorbell_signal;
    ROW(HSA_STATUS_SUCCESS, "signal.h DoorbellSignal::doDestroySignal: a queue's doorbell ignores a destroy", hsa_signal_destroy, bell);
    OK(hsa_queue_destroy(q));
    /* Destroyed queue: every use is refused or inert. */
    ROW(HSA_STATUS_ERROR_INVALID_QUEUE, "hsa.cpp hsa_queue_destroy: a destroyed queue is freed memory (undefined); Inlay: IS_VALID fails", hsa_queue_destroy, q);
    ROW(HSA_STATUS_ERROR_INVALID_QUEUE, "hsa.cpp hsa_queue_inactivate: a destroyed queue is freed memory (undefined); Inlay: IS_VALID fails", hsa_queue_inactivate, q);
    ROW(HSA_STATUS_ERROR_INVALID_QUEUE, "hsa_ext_amd.cpp hsa_amd_queue_set_priority: a destroyed queue (undefined); Inlay: IS_VALID fails", hsa_amd_queue_set_priority, q, HSA_AMD_QUEUE_PRIORITY_LOW);
    ROW(HSA_STATUS_ERROR_INVALID_QUEUE, "hsa_ext_amd.cpp hsa_amd_queue_cu_set_mask: a destroyed queue (undefined); Inlay: IS_VALID fails", hsa_amd_queue_cu_set_mask, q, 32, cu);
    ROW(HSA_STATUS_ERROR_INVALID_QUEUE, "hsa_ext_amd.cpp hsa_amd_profiling_set_profiler_enabled: a destroyed queue (undefined); Inlay: IS_VALID fails", hsa_amd_profiling_set_profiler_enabled, q, 1);
    ROW(HSA_STATUS_ERROR_INVALID_SIGNAL, "signal.h Signal::Convert: the doorbell went with its queue (freed memory, undefined); Inlay: !IsValid()", hsa_signal_destroy, bell);

    /* An inactivated queue processes nothing more; destroying it still works. */
    OK(hsa_queue_create(E.gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, 0, 0, &q));
    OK(hsa_queue_inactivate(q));
    hsa_signal_t done;
    OK(hsa_signal_create(1, 0, NULL, &done));
    uint64_t id = hsa_queue_add_write_index_relaxed(q, 1);
    hsa_barrier_and_packet_t *bp = (hsa_barrier_and_packet_t *)q->base_address + id;
    memset((char *)bp + 2, 0, sizeof *bp - 2);
    bp->completion_signal = done;
    __atomic_store_n(&bp->header, (uint16_t)(HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE), __ATOMIC_RELEASE);
    hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)id);
    sleep_ms(30);
    CHECK(hsa_signal_load_relaxed(done) == 1);
    OK(hsa_queue_destroy(q));
    OK(hsa_signal_destroy(done));

    packets(path90a);
    still_working();
}

/* ---- code objects, executables, symbols, the loader extension --------- */
static void executables(const char *path90a, const char *path908) {
    size_t size, size908;
    unsigned char *good = slurp(path90a, &size), *foreign = slurp(path908, &size908);
    hsa_agent_t junk = {0xdeadbeef};
    hsa_executable_t exe, none = {0}, junkexe = {0x4A6500001234ull};
    hsa_code_object_reader_t reader, bad, noreader = {0};
    hsa_executable_symbol_t sym, nosym = {0}, junksym = {0x4A73000001000001ull};
    hsa_loaded_code_object_t lco;
    char buf[256];
    uint32_t result = 0;

    ROW(INVARG, "hsa.cpp hsa_code_object_reader_create_from_memory: IS_BAD_PTR(code_object)", hsa_code_object_reader_create_from_memory, NULL, 10, &reader);
    ROW(INVARG, "hsa.cpp hsa_code_object_reader_create_from_memory: size == 0", hsa_code_object_reader_create_from_memory, good, 0, &reader);
    ROW(INVARG, "hsa.cpp hsa_code_object_reader_create_from_memory: IS_BAD_PTR(code_object_reader)", hsa_code_object_reader_create_from_memory, good, size, NULL);
    ROW(INVARG, "amd_hsa_loader.cpp CodeObjectReaderImpl::SetFile: descriptor == -1", hsa_code_object_reader_create_from_file, -1, &reader);
    int fd = open(path90a, O_RDONLY);
    CHECK(fd >= 0);
    ROW(INVARG, "hsa.cpp hsa_code_object_reader_create_from_file: IS_BAD_PTR(code_object_reader)", hsa_code_object_reader_create_from_file, fd, NULL);
    close(fd);
    ROW(HSA_STATUS_ERROR_INVALID_FILE, "amd_hsa_loader.cpp CodeObjectReaderImpl::SetFile: lseek fails on a closed descriptor", hsa_code_object_reader_create_from_file, fd, &reader);
    ROW(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER, "hsa.cpp hsa_code_object_reader_destroy: CodeObjectReaderImpl::Object null", hsa_code_object_reader_destroy, noreader);

    ROW(INVARG, "hsa.cpp hsa_executable_create: IS_BAD_PTR(executable)", hsa_executable_create, HSA_PROFILE_FULL, HSA_EXECUTABLE_STATE_UNFROZEN, NULL, NULL);
    ROW(INVARG, "hsa.cpp hsa_executable_create: IS_BAD_PROFILE", hsa_executable_create, (hsa_profile_t)5, HSA_EXECUTABLE_STATE_UNFROZEN, NULL, &exe);
    ROW(INVARG, "hsa.cpp hsa_executable_create_alt: IS_BAD_PTR(executable)", hsa_executable_create_alt, HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, NULL);
    ROW(INVARG, "hsa.cpp hsa_executable_create_alt: IS_BAD_PROFILE", hsa_executable_create_alt, (hsa_profile_t)5, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &exe);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_destroy: Executable::Object null", hsa_executable_destroy, none);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_freeze: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_executable_freeze, junkexe, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_get_info: Executable::Object null", hsa_executable_get_info, none, HSA_EXECUTABLE_INFO_STATE, buf);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_validate: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_executable_validate, junkexe, &result);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_validate: Executable::Object null", hsa_executable_validate_alt, none, NULL, &result);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_iterate_symbols: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_executable_iterate_symbols, junkexe, sym_cb, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_iterate_agent_symbols: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_executable_iterate_agent_symbols, junkexe, E.gpu, agent_sym_cb, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_iterate_program_symbols: Executable::Object null", hsa_executable_iterate_program_symbols, none, sym_cb, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_get_symbol_by_name: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_executable_get_symbol_by_name, junkexe, "vector_add.kd", &E.gpu, &sym);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_get_symbol: Executable::Object null", hsa_executable_get_symbol, none, NULL, "vector_add.kd", E.gpu, 0, &sym);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_global_variable_define: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_executable_global_variable_define, junkexe, "v", buf);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_agent_global_variable_define: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_executable_agent_global_variable_define, junkexe, E.gpu, "v", buf);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_readonly_variable_define: Executable::Object null", hsa_executable_readonly_variable_define, none, E.gpu, "v", buf);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL, "hsa.cpp hsa_executable_symbol_get_info: Symbol::Object null", hsa_executable_symbol_get_info, nosym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, buf);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL, "hsa.cpp hsa_executable_symbol_get_info: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_executable_symbol_get_info, junksym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, buf);

    OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &exe));
    OK(hsa_code_object_reader_create_from_memory(good, size, &reader));
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_load_agent_code_object: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_executable_load_agent_code_object, junkexe, E.gpu, reader, NULL, &lco);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "loader/executable.cpp ExecutableImpl::LoadCodeObject: IsaSupportedByAgent reads the made-up agent (crash); Inlay: INVALID_AGENT", hsa_executable_load_agent_code_object, exe, junk, reader, NULL, &lco);
    ROW(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS, "loader/executable.cpp ExecutableImpl::LoadCodeObject: the CPU supports no code object ISA", hsa_executable_load_agent_code_object, exe, E.cpu, reader, NULL, &lco);
    ROW(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER, "hsa.cpp hsa_executable_load_agent_code_object: CodeObjectReaderImpl::Object null", hsa_executable_load_agent_code_object, exe, E.gpu, noreader, NULL, &lco);
    ROW(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER, "hsa.cpp hsa_executable_load_program_code_object: CodeObjectReaderImpl::Object null", hsa_executable_load_program_code_object, exe, noreader, NULL, &lco);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_load_program_code_object: Executable::Object null", hsa_executable_load_program_code_object, none, reader, NULL, &lco);
    ROW(INVARG, "hsa.cpp hsa_executable_get_info: IS_BAD_PTR(value)", hsa_executable_get_info, exe, HSA_EXECUTABLE_INFO_STATE, NULL);
    ROW(INVARG, "loader/executable.cpp ExecutableImpl::GetInfo: default case", hsa_executable_get_info, exe, (hsa_executable_info_t)0x999, buf);
    ROW(INVARG, "hsa.cpp hsa_executable_validate: IS_BAD_PTR(result)", hsa_executable_validate, exe, NULL);
    ROW(INVARG, "hsa.cpp hsa_executable_iterate_symbols: IS_BAD_PTR(callback)", hsa_executable_iterate_symbols, exe, NULL, NULL);
    ROW(INVARG, "hsa.cpp hsa_executable_iterate_program_symbols: IS_BAD_PTR(callback)", hsa_executable_iterate_program_symbols, exe, NULL, NULL);
    ROW(INVARG, "hsa.cpp hsa_executable_iterate_agent_symbols: IS_BAD_PTR(callback)", hsa_executable_iterate_agent_symbols, exe, E.gpu, NULL, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_AGENT, "hsa.cpp hsa_executable_iterate_agent_symbols: a made-up handle is read as a pointer (crash); Inlay: as for a null one", hsa_executable_iterate_agent_symbols, exe, junk, agent_sym_cb, NULL);
    ROW(INVARG, "hsa.cpp hsa_executable_get_symbol_by_name: IS_BAD_PTR(symbol_name)", hsa_executable_get_symbol_by_name, exe, NULL, &E.gpu, &sym);
    ROW(INVARG, "hsa.cpp hsa_executable_get_symbol_by_name: IS_BAD_PTR(symbol)", hsa_executable_get_symbol_by_name, exe, "x", &E.gpu, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME, "loader/executable.cpp ExecutableImpl::GetSymbol: the agent is not checked, no symbol has it", hsa_executable_get_symbol_by_name, exe, "x", &junk, &sym);
    ROW(INVARG, "hsa.cpp hsa_executable_get_symbol: IS_BAD_PTR(symbol_name)", hsa_executable_get_symbol, exe, NULL, NULL, E.gpu, 0, &sym);
    ROW(INVARG, "hsa.cpp hsa_executable_global_variable_define: IS_BAD_PTR(variable_name)", hsa_executable_global_variable_define, exe, NULL, buf);
    ROW(HSA_STATUS_SUCCESS, "loader/executable.cpp ExecutableImpl::DefineAgentExternalVariable: the address is not checked", hsa_executable_agent_global_variable_define, exe, E.gpu, "v", NULL);
    ROW(HSA_STATUS_SUCCESS, "loader/executable.cpp ExecutableImpl::DefineAgentExternalVariable: the agent is not checked", hsa_executable_agent_global_variable_define, exe, junk, "v", buf);
    ROW(INVARG, "hsa.cpp hsa_executable_readonly_variable_define: IS_BAD_PTR(variable_name)", hsa_executable_readonly_variable_define, exe, E.gpu, NULL, buf);

    /* Corrupt code objects: every truncation, garbage, a foreign target. */
    for (size_t cut = 1; cut < size; cut += (size / 37) + 1) {
        OK(hsa_code_object_reader_create_from_memory(good, cut, &bad));
        ROW(HSA_STATUS_ERROR_INVALID_CODE_OBJECT, "loader/executable.cpp ExecutableImpl::LoadCodeObject: AmdHsaCode::InitAsHandle fails", hsa_executable_load_agent_code_object, exe, E.gpu, bad, NULL, &lco);
        OK(hsa_code_object_reader_destroy(bad));
    }
    memset(buf, 0x5a, sizeof buf);
    OK(hsa_code_object_reader_create_from_memory(buf, sizeof buf, &bad));
    ROW(HSA_STATUS_ERROR_INVALID_CODE_OBJECT, "loader/executable.cpp ExecutableImpl::LoadCodeObject: AmdHsaCode::InitAsHandle fails", hsa_executable_load_agent_code_object, exe, E.gpu, bad, NULL, &lco);
    OK(hsa_code_object_reader_destroy(bad));
    /* An ELF header whose tables point past the end. */
    unsigned char *wild = malloc(size);
    memcpy(wild, good, size);
    memset(wild + 0x20, 0xff, 16); /* e_phoff, e_shoff */
    OK(hsa_code_object_reader_create_from_memory(wild, size, &bad));
    ROW(HSA_STATUS_ERROR_INVALID_CODE_OBJECT, "loader/executable.cpp ExecutableImpl::LoadCodeObject: AmdHsaCode::InitAsHandle fails", hsa_executable_load_agent_code_object, exe, E.gpu, bad, NULL, &lco);
    OK(hsa_code_object_reader_destroy(bad));
    /* Flipped bytes anywhere: any status, but no crash and nothing half-loaded that breaks the next load. */
    for (size_t at = 0; at < size; at += 97) {
        memcpy(wild, good, size);
        wild[at] ^= 0xa5;
        hsa_executable_t scratch;
        OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &scratch));
        OK(hsa_code_object_reader_create_from_memory(wild, size, &bad));
        if (hsa_executable_load_agent_code_object(scratch, E.gpu, bad, NULL, NULL) == HSA_STATUS_SUCCESS)
            (void)hsa_executable_freeze(scratch, NULL);
        OK(hsa_code_object_reader_destroy(bad));
        OK(hsa_executable_destroy(scratch));
    }
    free(wild);
    OK(hsa_code_object_reader_create_from_memory(foreign, size908, &bad));
    ROW(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS, "loader/executable.cpp ExecutableImpl::LoadCodeObject: IsaSupportedByAgent false (gfx908 code, gfx90a agent)", hsa_executable_load_agent_code_object, exe, E.gpu, bad, NULL, &lco);
    OK(hsa_code_object_reader_destroy(bad));
    /* Destroyed reader. */
    ROW(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER, "hsa.cpp hsa_code_object_reader_destroy: a destroyed reader is freed memory (undefined); Inlay: as for a null one", hsa_code_object_reader_destroy, bad);
    ROW(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER, "hsa.cpp hsa_executable_load_agent_code_object: a destroyed reader is freed memory (undefined); Inlay: as for a null one", hsa_executable_load_agent_code_object, exe, E.gpu, bad, NULL, &lco);

    /* The good object loads after all that; twice is a duplicate definition. */
    OK(hsa_executable_load_agent_code_object(exe, E.gpu, reader, NULL, &lco));
    ROW(HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED, "loader/executable.cpp ExecutableImpl::LoadDefinitionSymbol: the agent symbol exists", hsa_executable_load_agent_code_object, exe, E.gpu, reader, NULL, &lco);
    static int host_var;
    OK(hsa_executable_agent_global_variable_define(exe, E.gpu, "host_var", &host_var));
    ROW(HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED, "loader/executable.cpp ExecutableImpl::DefineAgentExternalVariable: the symbol exists", hsa_executable_agent_global_variable_define, exe, E.gpu, "host_var", &host_var);
    ROW(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME, "loader/executable.cpp ExecutableImpl::GetSymbol: not found", hsa_executable_get_symbol_by_name, exe, "no_such_symbol", &E.gpu, &sym);
    OK(hsa_executable_freeze(exe, NULL));
    ROW(HSA_STATUS_ERROR_FROZEN_EXECUTABLE, "loader/executable.cpp ExecutableImpl::Freeze: state_ FROZEN", hsa_executable_freeze, exe, NULL);
    ROW(HSA_STATUS_ERROR_FROZEN_EXECUTABLE, "loader/executable.cpp ExecutableImpl::LoadCodeObject: state_ FROZEN", hsa_executable_load_agent_code_object, exe, E.gpu, reader, NULL, &lco);
    ROW(HSA_STATUS_ERROR_FROZEN_EXECUTABLE, "loader/executable.cpp ExecutableImpl::DefineProgramExternalVariable: state_ FROZEN", hsa_executable_global_variable_define, exe, "late", buf);
    ROW(HSA_STATUS_ERROR_FROZEN_EXECUTABLE, "loader/executable.cpp ExecutableImpl::DefineAgentExternalVariable: state_ FROZEN", hsa_executable_readonly_variable_define, exe, E.gpu, "late", buf);
    OK(hsa_executable_get_symbol_by_name(exe, "host_var", &E.gpu, &sym));
    uint64_t var_addr = 0;
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS, &var_addr));
    CHECK(var_addr == (uint64_t)(uintptr_t)&host_var);

    /* The AMD loader extension table's functions. */
    hsa_ven_amd_loader_1_01_pfn_t ldr;
    OK(hsa_system_get_major_extension_table(HSA_EXTENSION_AMD_LOADER, 1, sizeof ldr, &ldr));
    const void *host = NULL;
    CHECK(ldr.hsa_ven_amd_loader_query_host_address(NULL, &host) == INVARG);
    CHECK(ldr.hsa_ven_amd_loader_query_host_address(buf, &host) == INVARG);
    CHECK(ldr.hsa_ven_amd_loader_query_segment_descriptors(NULL, NULL) == INVARG);
    size_t nseg = 0;
    OK(ldr.hsa_ven_amd_loader_query_segment_descriptors(NULL, &nseg));
    CHECK(nseg > 0);
    size_t wrong = nseg + 1;
    hsa_ven_amd_loader_segment_descriptor_t segs[4];
    if (wrong <= 4) CHECK(ldr.hsa_ven_amd_loader_query_segment_descriptors(segs, &wrong) == INVARG);
    hsa_executable_t found;
    CHECK(ldr.hsa_ven_amd_loader_query_executable(buf, &found) == INVARG);
    CHECK(ldr.hsa_ven_amd_loader_executable_iterate_loaded_code_objects(exe, NULL, NULL) == INVARG);
    CHECK(ldr.hsa_ven_amd_loader_executable_iterate_loaded_code_objects(junkexe, lco_cb, NULL) == HSA_STATUS_ERROR_INVALID_EXECUTABLE);
    hsa_loaded_code_object_t nolco = {0};
    CHECK(ldr.hsa_ven_amd_loader_loaded_code_object_get_info(nolco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_BASE, buf) != HSA_STATUS_SUCCESS);
    CHECK(ldr.hsa_ven_amd_loader_loaded_code_object_get_info(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_BASE, NULL) == INVARG);
    CHECK(ldr.hsa_ven_amd_loader_loaded_code_object_get_info(lco, (hsa_ven_amd_loader_loaded_code_object_info_t)0x777, buf) == INVARG);

    /* Destroyed executable: every use is refused, its symbols too. */
    OK(hsa_executable_get_symbol_by_name(exe, "vector_add.kd", &E.gpu, &sym));
    ROW(INVARG, "hsa.cpp hsa_executable_symbol_get_info: IS_BAD_PTR(value)", hsa_executable_symbol_get_info, sym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, NULL);
    ROW(INVARG, "hsa.cpp hsa_executable_symbol_get_info: Symbol::GetInfo false", hsa_executable_symbol_get_info, sym, (hsa_executable_symbol_info_t)0x7777, buf);
    OK(hsa_executable_destroy(exe));
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_destroy: a destroyed executable is freed memory (undefined); Inlay: as for a null one", hsa_executable_destroy, exe);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_freeze: a destroyed executable (undefined); Inlay: as for a null one", hsa_executable_freeze, exe, NULL);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_get_info: a destroyed executable (undefined); Inlay: as for a null one", hsa_executable_get_info, exe, HSA_EXECUTABLE_INFO_STATE, buf);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_load_agent_code_object: a destroyed executable (undefined); Inlay: as for a null one", hsa_executable_load_agent_code_object, exe, E.gpu, reader, NULL, &lco);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE, "hsa.cpp hsa_executable_get_symbol_by_name: a destroyed executable (undefined); Inlay: as for a null one", hsa_executable_get_symbol_by_name, exe, "vector_add.kd", &E.gpu, &sym);
    ROW(HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL, "hsa.cpp hsa_executable_symbol_get_info: a symbol of a destroyed executable (undefined); Inlay: as for a null one", hsa_executable_symbol_get_info, sym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, buf);
    CHECK(ldr.hsa_ven_amd_loader_executable_iterate_loaded_code_objects(exe, lco_cb, NULL) == HSA_STATUS_ERROR_INVALID_EXECUTABLE);
    CHECK(ldr.hsa_ven_amd_loader_loaded_code_object_get_info(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_BASE, buf) != HSA_STATUS_SUCCESS);
    hsa_ven_amd_loader_1_03_pfn_t ldr3;
    OK(hsa_system_get_major_extension_table(HSA_EXTENSION_AMD_LOADER, 1, sizeof ldr3, &ldr3));
    OK(ldr3.hsa_ven_amd_loader_iterate_executables(exec_cb, NULL));
    CHECK(ldr3.hsa_ven_amd_loader_iterate_executables(NULL, NULL) == INVARG);
    OK(hsa_code_object_reader_destroy(reader));

    /* Still working: the good object loads, freezes and is found. */
    OK(hsa_executable_create(HSA_PROFILE_FULL, HSA_EXECUTABLE_STATE_UNFROZEN, NULL, &exe));
    OK(hsa_code_object_reader_create_from_memory(good, size, &reader));
    OK(hsa_executable_load_agent_code_object(exe, E.gpu, reader, NULL, NULL));
    OK(hsa_executable_freeze(exe, NULL));
    OK(hsa_executable_validate(exe, &result));
    CHECK(result == 0);
    OK(hsa_executable_get_symbol_by_name(exe, "vector_add.kd", &E.gpu, &sym));
    OK(hsa_executable_destroy(exe));
    OK(hsa_code_object_reader_destroy(reader));
    free(good); free(foreign);
    still_working();
}

int main(int argc, char **argv) {
    alarm(120); /* a hang fails the test instead of stalling CI */
    CHECK(argc == 3);
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    /* Before hsa_init (sweep.c checks every export this way; here a few with valid-looking arguments). */
    hsa_signal_t s;
    ROW(HSA_STATUS_ERROR_NOT_INITIALIZED, "hsa.cpp hsa_shut_down: IS_OPEN()", hsa_shut_down);
    ROW(HSA_STATUS_ERROR_NOT_INITIALIZED, "hsa.cpp hsa_signal_create -> hsa_amd_signal_create: IS_OPEN()", hsa_signal_create, 1, 0, NULL, &s);
    E = setup();
    cover("hsa_init");
    /* Reference counted: a second init needs a second shut-down. */
    ROW(HSA_STATUS_SUCCESS, "runtime.cpp Runtime::Acquire: reference counted", hsa_init);
    ROW(HSA_STATUS_SUCCESS, "runtime.cpp Runtime::Release: reference counted", hsa_shut_down);
    OK(hsa_signal_create(1, 0, NULL, &s));
    OK(hsa_signal_destroy(s));

    system_and_agents();
    memory();
    signals();
    queues(argv[1]);
    executables(argv[1], argv[2]);
    ROW(HSA_STATUS_SUCCESS, "hsa_ext_amd.cpp hsa_amd_register_system_event_handler: no check (Runtime::SetCustomSystemEventHandler stores it)", hsa_amd_register_system_event_handler, NULL, NULL);
    OK(hsa_amd_register_system_event_handler(event_cb, NULL));
    ROW(HSA_STATUS_SUCCESS, "hsa_ext_amd.cpp hsa_amd_async_function: a valid call", hsa_amd_async_function, async_fn, NULL);
    ROW(HSA_STATUS_SUCCESS, "hsa_ext_amd.cpp hsa_amd_profiling_async_copy_enable: a valid call", hsa_amd_profiling_async_copy_enable, true);

    /* After the last shut-down: NOT_INITIALIZED again, and a new init works. */
    ROW(HSA_STATUS_SUCCESS, "runtime.cpp Runtime::Release: reference counted", hsa_shut_down);
    ROW(HSA_STATUS_ERROR_NOT_INITIALIZED, "hsa.cpp hsa_shut_down: IS_OPEN()", hsa_shut_down);
    ROW(HSA_STATUS_ERROR_NOT_INITIALIZED, "hsa.cpp hsa_signal_create -> hsa_amd_signal_create: IS_OPEN()", hsa_signal_create, 1, 0, NULL, &s);
    hsa_agent_t stale = E.gpu;
    char name[64];
    ROW(HSA_STATUS_ERROR_NOT_INITIALIZED, "hsa.cpp hsa_agent_get_info: IS_OPEN()", hsa_agent_get_info, stale, HSA_AGENT_INFO_NAME, name);
    E = setup();
    OK(hsa_agent_get_info(E.gpu, HSA_AGENT_INFO_NAME, name));
    CHECK(strcmp(name, "gfx90a") == 0);
    still_working();
    OK(hsa_shut_down());
    printf("PASS\n");
    return 0;
}
