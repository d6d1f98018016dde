/* An executable made of the device-function library and its caller, loaded
 * in both orders: the caller's GOT slot holds the library function's loaded
 * address, the function is an INDIRECT_FUNCTION symbol found by name and
 * listed by iteration, with its size through the Inlay attribute.
 * argv: lib caller scale_value scale_size got_offset bias_value bias_size
 * (numbers from llvm-readelf-19 in the Rust harness). */
#include "dispatch.h"
#include <math.h>
#include <hsa/hsa_ven_amd_loader.h>
#include "../../include/inlay_hsa_ext.h"

static hsa_ven_amd_loader_1_03_pfn_t ldr;

typedef struct { int kernels, variables, functions, found_scale, found_local; hsa_agent_t gpu; } counts_t;

static hsa_status_t count(hsa_executable_t exe, hsa_agent_t agent, hsa_executable_symbol_t sym, void *data) {
    counts_t *c = data;
    (void)exe;
    CHECK(agent.handle == c->gpu.handle);
    hsa_symbol_kind_t kind;
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind));
    uint32_t len = 0;
    char name[256] = {0};
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH, &len));
    CHECK(len < sizeof name);
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME, name));
    if (kind == HSA_SYMBOL_KIND_KERNEL) c->kernels++;
    if (kind == HSA_SYMBOL_KIND_VARIABLE) c->variables++;
    if (kind == HSA_SYMBOL_KIND_INDIRECT_FUNCTION) {
        c->functions++;
        if (strcmp(name, "inlay_lib_scale") == 0) c->found_scale++;
    }
    return HSA_STATUS_SUCCESS;
}

static hsa_status_t stop_at_first(hsa_executable_t exe, hsa_executable_symbol_t sym, void *data) {
    (void)exe; (void)sym;
    (*(int *)data)++;
    return HSA_STATUS_INFO_BREAK;
}

static int64_t delta_of(hsa_loaded_code_object_t lco) {
    int64_t delta;
    OK(ldr.hsa_ven_amd_loader_loaded_code_object_get_info(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_DELTA, &delta));
    return delta;
}

static hsa_status_t count_lco(hsa_executable_t exe, hsa_loaded_code_object_t lco, void *data) {
    (void)exe;
    hsa_agent_t agent;
    OK(ldr.hsa_ven_amd_loader_loaded_code_object_get_info(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_AGENT, &agent));
    uint64_t base, size;
    OK(ldr.hsa_ven_amd_loader_loaded_code_object_get_info(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_BASE, &base));
    OK(ldr.hsa_ven_amd_loader_loaded_code_object_get_info(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_SIZE, &size));
    CHECK(base != 0 && size > 0);
    (*(int *)data)++;
    return HSA_STATUS_SUCCESS;
}

int main(int argc, char **argv) {
    CHECK(argc == 8);
    env_t e = setup();
    OK(hsa_system_get_major_extension_table(HSA_EXTENSION_AMD_LOADER, 1, sizeof ldr, &ldr));
    size_t lib_size, caller_size;
    unsigned char *lib = read_file(argv[1], &lib_size), *caller = read_file(argv[2], &caller_size);
    uint64_t scale_value = strtoull(argv[3], NULL, 16), scale_size = strtoull(argv[4], NULL, 0);
    uint64_t got_offset = strtoull(argv[5], NULL, 16);
    uint64_t bias_value = strtoull(argv[6], NULL, 16), bias_size = strtoull(argv[7], NULL, 0);

    hsa_code_object_reader_t lib_reader, caller_reader;
    OK(hsa_code_object_reader_create_from_memory(lib, lib_size, &lib_reader));
    OK(hsa_code_object_reader_create_from_memory(caller, caller_size, &caller_reader));

    for (int lib_first = 0; lib_first < 2; lib_first++) {
        hsa_executable_t exe;
        OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &exe));
        hsa_loaded_code_object_t lib_lco, caller_lco;
        if (lib_first) {
            OK(hsa_executable_load_agent_code_object(exe, e.gpu, lib_reader, NULL, &lib_lco));
            OK(hsa_executable_load_agent_code_object(exe, e.gpu, caller_reader, NULL, &caller_lco));
        } else {
            OK(hsa_executable_load_agent_code_object(exe, e.gpu, caller_reader, NULL, &caller_lco));
            /* Alone, the caller's external is unresolved; freeze says so and can be retried. */
            CHECK_STATUS(hsa_executable_freeze(exe, NULL), HSA_STATUS_ERROR_VARIABLE_UNDEFINED);
            OK(hsa_executable_load_agent_code_object(exe, e.gpu, lib_reader, NULL, &lib_lco));
        }
        OK(hsa_executable_freeze(exe, NULL));

        /* The device function by name. */
        hsa_executable_symbol_t f;
        OK(hsa_executable_get_symbol_by_name(exe, "inlay_lib_scale", &e.gpu, &f));
        hsa_symbol_kind_t kind;
        OK(hsa_executable_symbol_get_info(f, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind));
        CHECK(kind == HSA_SYMBOL_KIND_INDIRECT_FUNCTION);
        uint64_t object = 0, size = 0;
        OK(hsa_executable_symbol_get_info(f, HSA_EXECUTABLE_SYMBOL_INFO_INDIRECT_FUNCTION_OBJECT, &object));
        OK(hsa_executable_symbol_get_info(f, INLAY_EXECUTABLE_SYMBOL_INFO_INDIRECT_FUNCTION_SIZE, &size));
        CHECK(object == (uint64_t)delta_of(lib_lco) + scale_value);
        CHECK(size == scale_size);
        hsa_symbol_linkage_t linkage;
        OK(hsa_executable_symbol_get_info(f, HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE, &linkage));
        CHECK(linkage == HSA_SYMBOL_LINKAGE_PROGRAM);
        bool def = false;
        OK(hsa_executable_symbol_get_info(f, HSA_EXECUTABLE_SYMBOL_INFO_IS_DEFINITION, &def));
        CHECK(def);
        hsa_default_float_rounding_mode_t cc = 99;
        OK(hsa_executable_symbol_get_info(f, HSA_EXECUTABLE_SYMBOL_INFO_INDIRECT_FUNCTION_CALL_CONVENTION, &cc));
        CHECK(cc == 0);
        uint32_t mlen = 99;
        OK(hsa_executable_symbol_get_info(f, HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME_LENGTH, &mlen));
        CHECK(mlen == 0);
        /* Attributes of other kinds are refused. */
        CHECK_STATUS(hsa_executable_symbol_get_info(f, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &object), HSA_STATUS_ERROR_INVALID_ARGUMENT);

        /* The caller's GOT slot holds it. */
        uint64_t slot = *(const uint64_t *)(uintptr_t)((uint64_t)delta_of(caller_lco) + got_offset);
        CHECK(slot == object);

        /* The library's variable. */
        hsa_executable_symbol_t v;
        OK(hsa_executable_get_symbol_by_name(exe, "inlay_lib_bias", &e.gpu, &v));
        OK(hsa_executable_symbol_get_info(v, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind));
        CHECK(kind == HSA_SYMBOL_KIND_VARIABLE);
        uint64_t vaddr = 0;
        uint32_t vsize = 0, alloc = 9, seg = 9;
        bool is_const = true;
        OK(hsa_executable_symbol_get_info(v, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS, &vaddr));
        OK(hsa_executable_symbol_get_info(v, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE, &vsize));
        OK(hsa_executable_symbol_get_info(v, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION, &alloc));
        OK(hsa_executable_symbol_get_info(v, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SEGMENT, &seg));
        OK(hsa_executable_symbol_get_info(v, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_IS_CONST, &is_const));
        CHECK(vaddr == (uint64_t)delta_of(lib_lco) + bias_value);
        CHECK(vsize == bias_size);
        CHECK(alloc == HSA_VARIABLE_ALLOCATION_AGENT && seg == HSA_VARIABLE_SEGMENT_GLOBAL && !is_const);
        CHECK(*(const float *)(uintptr_t)vaddr == 1.0f); /* inlay_lib_bias = 1.0 */

        /* Listed by agent iteration, with the kernel and the variables. */
        counts_t c = {0};
        c.gpu = e.gpu;
        OK(hsa_executable_iterate_agent_symbols(exe, e.gpu, count, &c));
        CHECK(c.kernels == 1 && c.found_scale == 1 && c.functions >= 1 && c.variables >= 3);
        int calls = 0;
        CHECK_STATUS(hsa_executable_iterate_symbols(exe, stop_at_first, &calls), HSA_STATUS_INFO_BREAK);
        CHECK(calls == 1);
        calls = 0;
        OK(ldr.hsa_ven_amd_loader_executable_iterate_loaded_code_objects(exe, count_lco, &calls));
        CHECK(calls == 2);
        /* Run the caller: y[i] = inlay_lib_scale(x[i], s) = x[i] * s + inlay_lib_bias,
         * a call from one code object into the other; then again after the
         * host changes the library's variable, which the function reads. */
        hsa_queue_t *q;
        OK(hsa_queue_create(e.gpu, 64, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX, UINT32_MAX, &q));
        kernel_t k = find_kernel(exe, e.gpu, "lib_caller");
        enum { N = 300 };
        float *x = host_alloc(&e, N * 4), *y = host_alloc(&e, N * 4);
        for (int i = 0; i < N; i++) { x[i] = (float)i - 150.0f; y[i] = 0.0f; }
        struct { float *x, *y; float s; uint32_t n; } args = {x, y, 2.5f, N};
        uint32_t grid[3] = {N, 1, 1};
        uint16_t wg[3] = {128, 1, 1};
        for (int round = 0; round < 2; round++) {
            float bias = round == 0 ? 1.0f : -7.25f;
            *(float *)(uintptr_t)vaddr = bias;
            launch(&e, q, k, &args, 24, grid, wg);
            /* The library computes v * s + bias with one fused v_fmac_f32. */
            for (int i = 0; i < N; i++) CHECK(y[i] == fmaf(x[i], 2.5f, bias));
        }
        OK(hsa_queue_destroy(q));
        OK(hsa_amd_memory_pool_free(x));
        OK(hsa_amd_memory_pool_free(y));

        OK(hsa_executable_destroy(exe));
        /* Handles of a destroyed executable are refused. */
        CHECK_STATUS(hsa_executable_symbol_get_info(f, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind), HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL);
        CHECK_STATUS(hsa_executable_freeze(exe, NULL), HSA_STATUS_ERROR_INVALID_EXECUTABLE);
    }
    OK(hsa_code_object_reader_destroy(lib_reader));
    OK(hsa_code_object_reader_destroy(caller_reader));
    OK(hsa_shut_down());
    printf("PASS\n");
    return 0;
}
