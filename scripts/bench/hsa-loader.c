/* Benchmark (issue 5), built and run by scripts/bench/hsa-loader against
 * Inlay's libhsa-runtime64.so.1:
 *
 *   hsa-loader CODE_OBJECT ROUNDS [CODE_OBJECT_WITH_DEVICE_FUNCTIONS...]
 *
 * (a) hsa_executable_get_symbol_by_name: ns per lookup of every kernel
 *     (`name.kd`) and every device function, and, in the same process, two
 *     references over the code object's own ELF dynamic symbol table: a
 *     linear scan with strcmp, and the SysV .hash lookup a dynamic linker does.
 * (b) load + freeze: hsa_code_object_reader_create_from_memory +
 *     hsa_executable_create_alt + hsa_executable_load_agent_code_object +
 *     hsa_executable_freeze, median of ROUNDS, against copying the bytes
 *     (memcpy into a freshly allocated buffer) in the same process.
 * Device functions: the further files' are loaded into the same executable
 * (librocsparse's code objects keep none of their own). */
#define _GNU_SOURCE
#include <elf.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OK(call) do { hsa_status_t s_ = (call); if (s_ != HSA_STATUS_SUCCESS) { \
    fprintf(stderr, "%s:%d: %s returned 0x%x\n", __FILE__, __LINE__, #call, (unsigned)s_); exit(1); } } while (0)

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_double);
    return v[n / 2];
}

static unsigned char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    rewind(f);
    unsigned char *buf = malloc(*size);
    if (!buf || fread(buf, 1, *size, f) != *size) { perror(path); exit(1); }
    fclose(f);
    return buf;
}

static hsa_agent_t gpu;
static hsa_status_t find_gpu(hsa_agent_t a, void *d) {
    (void)d;
    hsa_device_type_t t;
    OK(hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t));
    if (t == HSA_DEVICE_TYPE_GPU) gpu = a;
    return HSA_STATUS_SUCCESS;
}

/* Names by symbol kind, as the runtime lists them. */
typedef struct { char **names; int n, cap; } list_t;
static list_t kernels, functions;
static void push(list_t *l, char *s) {
    if (l->n == l->cap) { l->cap = l->cap ? 2 * l->cap : 256; l->names = realloc(l->names, l->cap * sizeof *l->names); }
    l->names[l->n++] = s;
}
static hsa_status_t collect(hsa_executable_t e, hsa_agent_t a, hsa_executable_symbol_t s, void *d) {
    (void)e; (void)a; (void)d;
    hsa_symbol_kind_t kind;
    uint32_t len = 0;
    OK(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_TYPE, &kind));
    OK(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH, &len));
    char *name = calloc(len + 1, 1);
    OK(hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_NAME, name));
    if (kind == HSA_SYMBOL_KIND_KERNEL) push(&kernels, name);
    else if (kind == HSA_SYMBOL_KIND_INDIRECT_FUNCTION) push(&functions, name);
    else free(name);
    return HSA_STATUS_SUCCESS;
}

static double lookup_ns(hsa_executable_t exe, list_t *l) {
    if (l->n == 0) return 0;
    int reps = 1000000 / l->n + 1;
    hsa_executable_symbol_t sym;
    double t = now_ns();
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < l->n; i++)
            OK(hsa_executable_get_symbol_by_name(exe, l->names[i], &gpu, &sym));
    return (now_ns() - t) / ((double)reps * l->n);
}

/* The code object's dynamic symbol table, read straight from the ELF. */
typedef struct { const Elf64_Sym *syms; size_t nsyms; const char *strtab; const uint32_t *hash; } dyn_t;
static dyn_t read_dynsym(const unsigned char *bytes, size_t size) {
    dyn_t d = {0};
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)bytes;
    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > size) {
        fprintf(stderr, "not an ELF64 file\n"); exit(1);
    }
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(bytes + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type == SHT_DYNSYM) {
            d.syms = (const Elf64_Sym *)(bytes + sh[i].sh_offset);
            d.nsyms = sh[i].sh_size / sizeof(Elf64_Sym);
            d.strtab = (const char *)(bytes + sh[sh[i].sh_link].sh_offset);
        }
        if (sh[i].sh_type == SHT_HASH) d.hash = (const uint32_t *)(bytes + sh[i].sh_offset);
    }
    if (!d.syms) { fprintf(stderr, "no .dynsym\n"); exit(1); }
    return d;
}

static const Elf64_Sym *linear(const dyn_t *d, const char *name) {
    for (size_t i = 1; i < d->nsyms; i++)
        if (strcmp(d->strtab + d->syms[i].st_name, name) == 0) return &d->syms[i];
    return NULL;
}

static uint32_t sysv_hash(const char *s) {
    uint32_t h = 0, g;
    for (; *s; s++) {
        h = (h << 4) + (unsigned char)*s;
        g = h & 0xf0000000u;
        if (g) h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

static const Elf64_Sym *hashed(const dyn_t *d, const char *name) {
    uint32_t nbucket = d->hash[0];
    const uint32_t *bucket = d->hash + 2, *chain = bucket + nbucket;
    for (uint32_t i = bucket[sysv_hash(name) % nbucket]; i != 0; i = chain[i])
        if (strcmp(d->strtab + d->syms[i].st_name, name) == 0) return &d->syms[i];
    return NULL;
}

static double ref_ns(const dyn_t *d, list_t *l, const Elf64_Sym *(*find)(const dyn_t *, const char *), int reps) {
    volatile uintptr_t sink = 0;
    double t = now_ns();
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < l->n; i++) {
            const Elf64_Sym *s = find(d, l->names[i]);
            if (!s) { fprintf(stderr, "%s not in .dynsym\n", l->names[i]); exit(1); }
            sink += (uintptr_t)s;
        }
    (void)sink;
    return (now_ns() - t) / ((double)reps * l->n);
}

static const unsigned char *extra[8];
static size_t extra_size[8];
static int nextra;

static hsa_executable_t load_freeze(const unsigned char *bytes, size_t size, int with_extra, hsa_code_object_reader_t *readers) {
    hsa_executable_t exe;
    OK(hsa_code_object_reader_create_from_memory(bytes, size, &readers[0]));
    OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &exe));
    OK(hsa_executable_load_agent_code_object(exe, gpu, readers[0], NULL, NULL));
    for (int i = 0; with_extra && i < nextra; i++) {
        OK(hsa_code_object_reader_create_from_memory(extra[i], extra_size[i], &readers[1 + i]));
        OK(hsa_executable_load_agent_code_object(exe, gpu, readers[1 + i], NULL, NULL));
    }
    OK(hsa_executable_freeze(exe, NULL));
    return exe;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 3 + 8) { fprintf(stderr, "usage: %s CODE_OBJECT ROUNDS [CODE_OBJECT_WITH_DEVICE_FUNCTIONS...]\n", argv[0]); return 2; }
    size_t size;
    unsigned char *bytes = slurp(argv[1], &size);
    int rounds = atoi(argv[2]);
    if (rounds < 1 || rounds > 1000) rounds = 11;
    for (int i = 3; i < argc; i++) extra[nextra] = slurp(argv[i], &extra_size[nextra]), nextra++;
    OK(hsa_init());
    OK(hsa_iterate_agents(find_gpu, NULL));
    hsa_code_object_reader_t readers[9];

    /* (b) load + freeze of the code object alone, against memcpy of its bytes. */
    double *copy = calloc(rounds, sizeof(double)), *load = calloc(rounds, sizeof(double)), *destroy = calloc(rounds, sizeof(double));
    for (int r = 0; r < rounds; r++) {
        double t = now_ns();
        unsigned char *dst = malloc(size);
        memcpy(dst, bytes, size);
        copy[r] = now_ns() - t;
        if (dst[size / 2] != bytes[size / 2]) return 1;
        free(dst);
    }
    double *phase[3];
    for (int i = 0; i < 3; i++) phase[i] = calloc(rounds, sizeof(double));
    for (int r = 0; r < rounds; r++) {
        /* The same steps as load_freeze, each timed. */
        hsa_executable_t exe;
        double t = now_ns();
        OK(hsa_code_object_reader_create_from_memory(bytes, size, &readers[0]));
        OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &exe));
        double t1 = now_ns();
        OK(hsa_executable_load_agent_code_object(exe, gpu, readers[0], NULL, NULL));
        double t2 = now_ns();
        OK(hsa_executable_freeze(exe, NULL));
        double t3 = now_ns();
        phase[0][r] = t1 - t; phase[1][r] = t2 - t1; phase[2][r] = t3 - t2;
        load[r] = t3 - t;
        t = now_ns();
        OK(hsa_executable_destroy(exe));
        OK(hsa_code_object_reader_destroy(readers[0]));
        destroy[r] = now_ns() - t;
    }
    double c = median(copy, rounds), l = median(load, rounds);
    printf("file: %s (%zu bytes), %d rounds, medians\n", argv[1], size, rounds);
    printf("memcpy of the bytes into a malloc'd buffer (reference; glibc reuses it between rounds, so warm): %.3f ms\n", c / 1e6);
    printf("hsa reader + create + load + freeze: %.3f ms (%.1fx the memcpy)\n", l / 1e6, l / c);
    printf("  of which reader + executable create %.3f ms, load %.3f ms, freeze %.3f ms (medians of each)\n",
           median(phase[0], rounds) / 1e6, median(phase[1], rounds) / 1e6, median(phase[2], rounds) / 1e6);
    printf("hsa destroy (executable + reader): %.3f ms\n", median(destroy, rounds) / 1e6);

    /* (a) lookups by name in an executable holding the code object (and the library). */
    hsa_executable_t exe = load_freeze(bytes, size, 1, readers);
    OK(hsa_executable_iterate_agent_symbols(exe, gpu, collect, NULL));
    /* Kernels of the large code object only (the references look the same
     * descriptor names up in its .dynsym). */
    dyn_t d = read_dynsym(bytes, size);
    int kept = 0;
    for (int i = 0; i < kernels.n; i++)
        if (linear(&d, kernels.names[i])) kernels.names[kept++] = kernels.names[i];
    kernels.n = kept;
    double kl = lookup_ns(exe, &kernels), fl = lookup_ns(exe, &functions);
    double lin = ref_ns(&d, &kernels, linear, 3);
    double hash = d.hash ? ref_ns(&d, &kernels, hashed, 1000000 / (kernels.n + 1) + 1) : 0;
    printf("kernels of the code object: %d; device functions of the %d further code objects: %d; .dynsym entries: %zu\n", kernels.n, nextra, functions.n, d.nsyms);
    printf("hsa_executable_get_symbol_by_name, kernel: %.1f ns per lookup\n", kl);
    if (functions.n) printf("hsa_executable_get_symbol_by_name, device function: %.1f ns per lookup\n", fl);
    printf("reference, linear strcmp scan of .dynsym: %.1f ns per lookup (%.1fx ours)\n", lin, lin / kl);
    if (d.hash) printf("reference, SysV .hash lookup in .dynsym: %.1f ns per lookup (%.2fx ours)\n", hash, hash / kl);
    OK(hsa_executable_destroy(exe));
    OK(hsa_code_object_reader_destroy(readers[0]));
    for (int i = 0; i < nextra; i++) OK(hsa_code_object_reader_destroy(readers[1 + i]));
    OK(hsa_shut_down());
    return 0;
}
