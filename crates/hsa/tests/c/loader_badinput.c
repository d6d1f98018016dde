/* Bad input to the code object and executable API: null and unknown handles,
 * destroyed executables, loading into a frozen executable, corrupt and
 * foreign code objects, closed files. Each returns its status and the
 * runtime keeps working. argv: a gfx90a code object, a gfx908 code object. */
#include "check.h"
#include <fcntl.h>
#include <unistd.h>

static unsigned char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    unsigned char *buf = malloc(1 << 20);
    *size = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

static hsa_status_t never(hsa_executable_t e, hsa_executable_symbol_t s, void *d) { (void)e; (void)s; (void)d; return HSA_STATUS_ERROR; }

int main(int argc, char **argv) {
    CHECK(argc == 3);
    hsa_executable_t exe, none = {0}, junk = {0x4A6500001234ull};
    hsa_code_object_reader_t reader, noreader = {0};
    hsa_executable_symbol_t sym, nosym = {0}, junksym = {0x4A73000001000001ull};
    char buf[64];
    CHECK_STATUS(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &exe), HSA_STATUS_ERROR_NOT_INITIALIZED);
    env_t e = setup();
    size_t size, size908;
    unsigned char *good = slurp(argv[1], &size), *gfx908 = slurp(argv[2], &size908);

    /* Null pointers. */
    CHECK_STATUS(hsa_code_object_reader_create_from_memory(NULL, 10, &reader), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_code_object_reader_create_from_memory(good, 0, &reader), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_code_object_reader_create_from_memory(good, size, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &exe));
    CHECK_STATUS(hsa_executable_get_symbol_by_name(exe, NULL, &e.gpu, &sym), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_executable_get_symbol_by_name(exe, "x", &e.gpu, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_executable_iterate_symbols(exe, NULL, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_executable_get_info(exe, HSA_EXECUTABLE_INFO_STATE, NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_executable_agent_global_variable_define(exe, e.gpu, NULL, buf), HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(hsa_executable_agent_global_variable_define(exe, e.gpu, "v", NULL), HSA_STATUS_ERROR_INVALID_ARGUMENT);

    /* Zero and made-up handles. */
    CHECK_STATUS(hsa_executable_freeze(none, NULL), HSA_STATUS_ERROR_INVALID_EXECUTABLE);
    CHECK_STATUS(hsa_executable_freeze(junk, NULL), HSA_STATUS_ERROR_INVALID_EXECUTABLE);
    CHECK_STATUS(hsa_executable_destroy(junk), HSA_STATUS_ERROR_INVALID_EXECUTABLE);
    CHECK_STATUS(hsa_executable_get_info(none, HSA_EXECUTABLE_INFO_STATE, buf), HSA_STATUS_ERROR_INVALID_EXECUTABLE);
    CHECK_STATUS(hsa_executable_load_agent_code_object(exe, e.gpu, noreader, NULL, NULL), HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER);
    CHECK_STATUS(hsa_code_object_reader_destroy(noreader), HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER);
    CHECK_STATUS(hsa_executable_symbol_get_info(nosym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, buf), HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL);
    CHECK_STATUS(hsa_executable_symbol_get_info(junksym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, buf), HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL);
    CHECK_STATUS(hsa_executable_iterate_symbols(junk, never, NULL), HSA_STATUS_ERROR_INVALID_EXECUTABLE);

    /* A CPU agent has no ISA to load code for. */
    OK(hsa_code_object_reader_create_from_memory(good, size, &reader));
    CHECK_STATUS(hsa_executable_load_agent_code_object(exe, e.cpu, reader, NULL, NULL), HSA_STATUS_ERROR_INVALID_AGENT);

    /* Corrupt and foreign code objects. */
    hsa_code_object_reader_t bad;
    OK(hsa_code_object_reader_create_from_memory(good, size / 3, &bad));
    CHECK_STATUS(hsa_executable_load_agent_code_object(exe, e.gpu, bad, NULL, NULL), HSA_STATUS_ERROR_INVALID_CODE_OBJECT);
    OK(hsa_code_object_reader_destroy(bad));
    memset(buf, 0x5a, sizeof buf);
    OK(hsa_code_object_reader_create_from_memory(buf, sizeof buf, &bad));
    CHECK_STATUS(hsa_executable_load_agent_code_object(exe, e.gpu, bad, NULL, NULL), HSA_STATUS_ERROR_INVALID_CODE_OBJECT);
    OK(hsa_code_object_reader_destroy(bad));
    CHECK_STATUS(hsa_code_object_reader_destroy(bad), HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER);
    OK(hsa_code_object_reader_create_from_memory(gfx908, size908, &bad));
    CHECK_STATUS(hsa_executable_load_agent_code_object(exe, e.gpu, bad, NULL, NULL), HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS);
    OK(hsa_code_object_reader_destroy(bad));

    /* Closed and invalid files. */
    CHECK_STATUS(hsa_code_object_reader_create_from_file(-1, &bad), HSA_STATUS_ERROR_INVALID_FILE);
    int fd = open(argv[1], O_RDONLY);
    close(fd);
    CHECK_STATUS(hsa_code_object_reader_create_from_file(fd, &bad), HSA_STATUS_ERROR_INVALID_FILE);

    /* A name defined twice; unknown symbol names. */
    OK(hsa_executable_load_agent_code_object(exe, e.gpu, reader, NULL, NULL));
    CHECK_STATUS(hsa_executable_load_agent_code_object(exe, e.gpu, reader, NULL, NULL), HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED);
    static int host_var;
    OK(hsa_executable_agent_global_variable_define(exe, e.gpu, "host_var", &host_var));
    CHECK_STATUS(hsa_executable_agent_global_variable_define(exe, e.gpu, "host_var", &host_var), HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED);
    CHECK_STATUS(hsa_executable_get_symbol_by_name(exe, "no_such_symbol", &e.gpu, &sym), HSA_STATUS_ERROR_INVALID_SYMBOL_NAME);

    /* Frozen: no more loading or defining. */
    OK(hsa_executable_freeze(exe, NULL));
    CHECK_STATUS(hsa_executable_freeze(exe, NULL), HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
    CHECK_STATUS(hsa_executable_load_agent_code_object(exe, e.gpu, reader, NULL, NULL), HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
    CHECK_STATUS(hsa_executable_readonly_variable_define(exe, e.gpu, "late", &host_var), HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
    CHECK_STATUS(hsa_executable_global_variable_define(exe, "late", &host_var), HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
    OK(hsa_executable_get_symbol_by_name(exe, "host_var", &e.gpu, &sym));
    uint64_t addr = 0;
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS, &addr));
    CHECK(addr == (uint64_t)(uintptr_t)&host_var);

    /* Destroyed: every use is refused. */
    OK(hsa_executable_destroy(exe));
    CHECK_STATUS(hsa_executable_destroy(exe), HSA_STATUS_ERROR_INVALID_EXECUTABLE);
    CHECK_STATUS(hsa_executable_load_agent_code_object(exe, e.gpu, reader, NULL, NULL), HSA_STATUS_ERROR_INVALID_EXECUTABLE);
    CHECK_STATUS(hsa_executable_get_symbol_by_name(exe, "host_var", &e.gpu, &sym), HSA_STATUS_ERROR_INVALID_EXECUTABLE);
    CHECK_STATUS(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, buf), HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL);
    OK(hsa_code_object_reader_destroy(reader));

    /* Still working. */
    OK(hsa_executable_create(HSA_PROFILE_FULL, HSA_EXECUTABLE_STATE_UNFROZEN, NULL, &exe));
    OK(hsa_executable_destroy(exe));
    OK(hsa_shut_down());
    printf("PASS\n");
    return 0;
}
