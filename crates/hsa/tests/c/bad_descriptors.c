/* Code objects whose kernel descriptors the target makes impossible are
 * refused by hsa_executable_load_agent_code_object with
 * HSA_STATUS_ERROR_INVALID_CODE_OBJECT (ROCr's status for a code object its
 * loader rejects); the executable holds no such kernel and still loads a
 * good code object afterwards. argv: the good code object, then damaged ones. */
#include "check.h"

static unsigned char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    unsigned char *buf = malloc(1 << 20);
    *size = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

static hsa_status_t load(env_t *e, hsa_executable_t exe, const char *path) {
    size_t size;
    unsigned char *bytes = slurp(path, &size);
    hsa_code_object_reader_t reader;
    OK(hsa_code_object_reader_create_from_memory(bytes, size, &reader));
    hsa_status_t s = hsa_executable_load_agent_code_object(exe, e->gpu, reader, NULL, NULL);
    OK(hsa_code_object_reader_destroy(reader));
    free(bytes);
    return s;
}

int main(int argc, char **argv) {
    CHECK(argc >= 3);
    env_t e = setup();
    hsa_executable_t exe;
    OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &exe));
    for (int i = 2; i < argc; i++) {
        hsa_status_t s = load(&e, exe, argv[i]);
        if (s != HSA_STATUS_ERROR_INVALID_CODE_OBJECT) {
            fprintf(stderr, "%s: load returned 0x%x, want HSA_STATUS_ERROR_INVALID_CODE_OBJECT\n", argv[i], (unsigned)s);
            return 1;
        }
    }
    OK(hsa_executable_freeze(exe, NULL));
    hsa_executable_symbol_t sym;
    CHECK_STATUS(hsa_executable_get_symbol_by_name(exe, "vector_add.kd", &e.gpu, &sym), HSA_STATUS_ERROR_INVALID_SYMBOL_NAME);
    OK(hsa_executable_destroy(exe));

    OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &exe));
    OK(load(&e, exe, argv[1]));
    OK(hsa_executable_freeze(exe, NULL));
    OK(hsa_executable_get_symbol_by_name(exe, "vector_add.kd", &e.gpu, &sym));
    OK(hsa_executable_destroy(exe));
    OK(hsa_shut_down());
    printf("PASS %d damaged descriptors refused\n", argc - 2);
    return 0;
}
