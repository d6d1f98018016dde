/* Local device functions are symbols too: the three static functions of
 * device_call.hsaco are INDIRECT_FUNCTION symbols with module linkage, named
 * by their code object, found by name and listed by agent iteration; the
 * device table inlay_ops (RELATIVE64 relocations) holds their addresses.
 * Host-defined program and read-only variables are listed as ROCr lists them.
 * argv: file, then name value size for each local function (from llvm-readelf-19). */
#include "check.h"
#include <hsa/hsa_ven_amd_loader.h>
#include "../../include/inlay_hsa_ext.h"

typedef struct { const char *name; uint64_t value, size; int seen; } fn_t;
static fn_t fns[3];
static int64_t delta;
static char uri[4096];

static hsa_status_t visit(hsa_executable_t exe, hsa_agent_t agent, hsa_executable_symbol_t sym, void *data) {
    (void)exe; (void)agent; (void)data;
    hsa_symbol_kind_t kind;
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind));
    if (kind != HSA_SYMBOL_KIND_INDIRECT_FUNCTION) return HSA_STATUS_SUCCESS;
    uint32_t len = 0, mlen = 0;
    char name[256] = {0}, module[4096] = {0};
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH, &len));
    CHECK(len < sizeof name);
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME, name));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME_LENGTH, &mlen));
    CHECK(mlen < sizeof module);
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_MODULE_NAME, module));
    for (int i = 0; i < 3; i++) {
        if (strcmp(name, fns[i].name) != 0) continue;
        uint64_t object = 0, size = 0;
        hsa_symbol_linkage_t linkage;
        OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_INDIRECT_FUNCTION_OBJECT, &object));
        OK(hsa_executable_symbol_get_info(sym, INLAY_EXECUTABLE_SYMBOL_INFO_INDIRECT_FUNCTION_SIZE, &size));
        OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_LINKAGE, &linkage));
        CHECK(object == (uint64_t)delta + fns[i].value);
        CHECK(size == fns[i].size);
        CHECK(linkage == HSA_SYMBOL_LINKAGE_MODULE);
        CHECK(strcmp(module, uri) == 0);
        fns[i].seen++;
    }
    return HSA_STATUS_SUCCESS;
}

static int program_vars;
static hsa_status_t visit_program(hsa_executable_t exe, hsa_executable_symbol_t sym, void *data) {
    (void)exe; (void)data;
    hsa_variable_allocation_t alloc;
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ALLOCATION, &alloc));
    CHECK(alloc == HSA_VARIABLE_ALLOCATION_PROGRAM);
    program_vars++;
    return HSA_STATUS_SUCCESS;
}

int main(int argc, char **argv) {
    CHECK(argc == 11);
    for (int i = 0; i < 3; i++) {
        fns[i].name = argv[2 + 3 * i];
        fns[i].value = strtoull(argv[3 + 3 * i], NULL, 16);
        fns[i].size = strtoull(argv[4 + 3 * i], NULL, 0);
    }
    env_t e = setup();
    hsa_ven_amd_loader_1_03_pfn_t ldr;
    OK(hsa_system_get_major_extension_table(HSA_EXTENSION_AMD_LOADER, 1, sizeof ldr, &ldr));
    FILE *f = fopen(argv[1], "rb");
    CHECK(f != NULL);
    static unsigned char file[1 << 20];
    size_t size = fread(file, 1, sizeof file, f);
    fclose(f);

    hsa_code_object_reader_t reader;
    OK(hsa_code_object_reader_create_from_memory(file, size, &reader));
    hsa_executable_t exe;
    OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &exe));
    hsa_loaded_code_object_t lco;
    OK(hsa_executable_load_agent_code_object(exe, e.gpu, reader, NULL, &lco));
    static int program_var, readonly_var;
    OK(hsa_executable_global_variable_define(exe, "inlay_program_var", &program_var));
    OK(hsa_executable_readonly_variable_define(exe, e.gpu, "inlay_readonly_var", &readonly_var));
    OK(hsa_executable_freeze(exe, NULL));
    OK(ldr.hsa_ven_amd_loader_loaded_code_object_get_info(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_DELTA, &delta));
    OK(ldr.hsa_ven_amd_loader_loaded_code_object_get_info(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI, uri));
    CHECK(strncmp(uri, "memory://", 9) == 0);

    OK(hsa_executable_iterate_agent_symbols(exe, e.gpu, visit, NULL));
    for (int i = 0; i < 3; i++) CHECK(fns[i].seen == 1);

    /* By name, and through the device table that holds them. */
    hsa_executable_symbol_t table, poly;
    OK(hsa_executable_get_symbol_by_name(exe, fns[0].name, &e.gpu, &poly));
    OK(hsa_executable_get_symbol_by_name(exe, "inlay_ops", &e.gpu, &table));
    uint64_t table_addr = 0, poly_addr = 0;
    OK(hsa_executable_symbol_get_info(table, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS, &table_addr));
    OK(hsa_executable_symbol_get_info(poly, HSA_EXECUTABLE_SYMBOL_INFO_INDIRECT_FUNCTION_OBJECT, &poly_addr));
    const uint64_t *ops = (const uint64_t *)(uintptr_t)table_addr;
    for (int i = 0; i < 3; i++) CHECK(ops[i] == (uint64_t)delta + fns[i].value);
    CHECK(ops[0] == poly_addr);

    /* Host-defined variables. */
    OK(hsa_executable_iterate_program_symbols(exe, visit_program, NULL));
    CHECK(program_vars == 1);
    hsa_executable_symbol_t ro;
    OK(hsa_executable_get_symbol_by_name(exe, "inlay_readonly_var", &e.gpu, &ro));
    hsa_variable_segment_t seg;
    bool is_const = false;
    uint64_t ro_addr = 0;
    OK(hsa_executable_symbol_get_info(ro, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SEGMENT, &seg));
    OK(hsa_executable_symbol_get_info(ro, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_IS_CONST, &is_const));
    OK(hsa_executable_symbol_get_info(ro, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS, &ro_addr));
    CHECK(seg == HSA_VARIABLE_SEGMENT_READONLY && is_const && ro_addr == (uint64_t)(uintptr_t)&readonly_var);

    /* Segment descriptors: one per loaded code object, covering the kernel objects. */
    size_t n = 0;
    OK(ldr.hsa_ven_amd_loader_query_segment_descriptors(NULL, &n));
    CHECK(n == 1);
    hsa_ven_amd_loader_segment_descriptor_t d;
    OK(ldr.hsa_ven_amd_loader_query_segment_descriptors(&d, &n));
    CHECK(d.executable.handle == exe.handle && d.agent.handle == e.gpu.handle);
    CHECK((uint64_t)(uintptr_t)d.segment_base <= poly_addr && poly_addr < (uint64_t)(uintptr_t)d.segment_base + d.segment_size);
    CHECK(d.code_object_storage_size == size && memcmp(d.code_object_storage_base, file, size) == 0);

    OK(hsa_executable_destroy(exe));
    OK(ldr.hsa_ven_amd_loader_query_segment_descriptors(NULL, &n));
    CHECK(n == 0);
    OK(hsa_code_object_reader_destroy(reader));
    OK(hsa_shut_down());
    printf("PASS\n");
    return 0;
}
