/* The flow of LLVM libc's AMDHSA loader (utils/gpu/loader/amdgpu) up to the
 * dispatch: find the agents and pools, load a code object from memory and
 * from a file, look the kernel up by "<name>.kd", read its kernel object and
 * segment sizes, allocate the kernel arguments from the kernarg pool.
 * argv: file kernel kd_value kernarg_size kernarg_align group private dynamic
 * (the numbers come from llvm-readelf-19 in the Rust harness). */
#include "check.h"
#include <fcntl.h>
#include <unistd.h>
#include <hsa/hsa_ven_amd_loader.h>

static hsa_ven_amd_loader_1_03_pfn_t ldr;

static void check_kernel(hsa_executable_t exe, hsa_agent_t gpu, hsa_loaded_code_object_t lco,
                         const char *name, char **argv, const unsigned char *file) {
    char kd[256];
    snprintf(kd, sizeof kd, "%s.kd", name);
    hsa_executable_symbol_t sym;
    OK(hsa_executable_get_symbol_by_name(exe, kd, &gpu, &sym));
    hsa_symbol_kind_t kind;
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind));
    CHECK(kind == HSA_SYMBOL_KIND_KERNEL);
    uint64_t object = 0;
    uint32_t kernarg_size = 0, kernarg_align = 0, group = 0, priv = 0, len = 0;
    bool dynamic = true;
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &object));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &kernarg_size));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT, &kernarg_align));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, &group));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, &priv));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK, &dynamic));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH, &len));
    char got_name[256] = {0};
    CHECK(len == strlen(kd));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_NAME, got_name));
    CHECK(memcmp(got_name, kd, len) == 0);
    hsa_agent_t owner;
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_AGENT, &owner));
    CHECK(owner.handle == gpu.handle);
    CHECK(kernarg_size == strtoul(argv[4], NULL, 0));
    CHECK(kernarg_align == strtoul(argv[5], NULL, 0));
    CHECK(group == strtoul(argv[6], NULL, 0));
    CHECK(priv == strtoul(argv[7], NULL, 0));
    CHECK(dynamic == (strcmp(argv[8], "true") == 0));
    /* kernel object = load delta + the .kd symbol's value; its 64 bytes are the file's. */
    int64_t delta = 0;
    OK(ldr.hsa_ven_amd_loader_loaded_code_object_get_info(lco, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_LOAD_DELTA, &delta));
    uint64_t kd_value = strtoull(argv[3], NULL, 16);
    CHECK(object == (uint64_t)delta + kd_value);
    CHECK(memcmp((const void *)object, file + kd_value, 64) == 0);
    /* The kernel object is a loaded address the loader extension knows. */
    const void *host = NULL;
    OK(ldr.hsa_ven_amd_loader_query_host_address((const void *)object, &host));
    CHECK(host == (const void *)object);
    hsa_executable_t owner_exe;
    OK(ldr.hsa_ven_amd_loader_query_executable((const void *)object, &owner_exe));
    CHECK(owner_exe.handle == exe.handle);
    /* A plain kernel name is not a symbol, as with ROCr. */
    CHECK_STATUS(hsa_executable_get_symbol_by_name(exe, name, &gpu, &sym), HSA_STATUS_ERROR_INVALID_SYMBOL_NAME);
}

int main(int argc, char **argv) {
    CHECK(argc == 9);
    env_t e = setup();
    OK(hsa_system_get_major_extension_table(HSA_EXTENSION_AMD_LOADER, 1, sizeof ldr, &ldr));

    FILE *f = fopen(argv[1], "rb");
    CHECK(f != NULL);
    static unsigned char file[1 << 20];
    size_t size = fread(file, 1, sizeof file, f);
    fclose(f);
    CHECK(size > 0 && size < sizeof file);

    /* From memory. */
    hsa_code_object_reader_t reader;
    OK(hsa_code_object_reader_create_from_memory(file, size, &reader));
    hsa_executable_t exe;
    OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, "", &exe));
    hsa_loaded_code_object_t lco;
    OK(hsa_executable_load_agent_code_object(exe, e.gpu, reader, "", &lco));
    OK(hsa_executable_freeze(exe, ""));
    uint32_t result = 1;
    OK(hsa_executable_validate(exe, &result));
    CHECK(result == 0);
    hsa_executable_state_t st;
    OK(hsa_executable_get_info(exe, HSA_EXECUTABLE_INFO_STATE, &st));
    CHECK(st == HSA_EXECUTABLE_STATE_FROZEN);
    check_kernel(exe, e.gpu, lco, argv[2], argv, file);

    /* Kernel arguments from the kernarg pool, reachable by the GPU. */
    hsa_executable_symbol_t sym;
    char kd[256];
    snprintf(kd, sizeof kd, "%s.kd", argv[2]);
    OK(hsa_executable_get_symbol_by_name(exe, kd, &e.gpu, &sym));
    uint32_t kernarg_size = 0;
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &kernarg_size));
    void *args = NULL;
    OK(hsa_amd_memory_pool_allocate(e.kernarg, kernarg_size, 0, &args));
    OK(hsa_amd_agents_allow_access(1, &e.gpu, NULL, args));
    memset(args, 0, kernarg_size);
    OK(hsa_amd_memory_pool_free(args));

    /* From a file: a second executable, the same answers at another address. */
    int fd = open(argv[1], O_RDONLY);
    CHECK(fd >= 0);
    hsa_code_object_reader_t file_reader;
    OK(hsa_code_object_reader_create_from_file(fd, &file_reader));
    hsa_executable_t exe2;
    OK(hsa_executable_create(HSA_PROFILE_FULL, HSA_EXECUTABLE_STATE_UNFROZEN, NULL, &exe2));
    hsa_loaded_code_object_t lco2;
    OK(hsa_executable_load_agent_code_object(exe2, e.gpu, file_reader, NULL, &lco2));
    OK(hsa_executable_freeze(exe2, NULL));
    check_kernel(exe2, e.gpu, lco2, argv[2], argv, file);
    uint32_t uri_len = 0;
    OK(ldr.hsa_ven_amd_loader_loaded_code_object_get_info(lco2, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI_LENGTH, &uri_len));
    char uri[4096] = {0};
    CHECK(uri_len < sizeof uri);
    OK(ldr.hsa_ven_amd_loader_loaded_code_object_get_info(lco2, HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_INFO_URI, uri));
    CHECK(strncmp(uri, "file://", 7) == 0 && strstr(uri, ".hsaco") != NULL);
    CHECK(lseek(fd, 0, SEEK_CUR) == 0); /* the caller's descriptor is left alone */
    close(fd);

    OK(hsa_executable_destroy(exe));
    OK(hsa_executable_destroy(exe2));
    OK(hsa_code_object_reader_destroy(reader));
    OK(hsa_code_object_reader_destroy(file_reader));
    OK(hsa_shut_down());
    printf("PASS\n");
    return 0;
}
