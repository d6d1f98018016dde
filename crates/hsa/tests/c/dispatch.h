/* Launching kernels the way LLVM libc's AMDHSA loader does: kernel object
 * and segment sizes from the symbol, kernel arguments in the kernarg pool
 * (code object v5's implicit arguments filled at the end of the segment),
 * an AQL packet written into the queue, the header stored last, the
 * doorbell rung, and the completion signal waited on. */
#include "check.h"
#include <stdint.h>
#include <unistd.h>
#include <fcntl.h>

typedef struct {
    uint64_t object;
    uint32_t kernarg_size, group_size, private_size;
} kernel_t;

static inline kernel_t find_kernel(hsa_executable_t exe, hsa_agent_t gpu, const char *name) {
    char kd[256];
    snprintf(kd, sizeof kd, "%s.kd", name);
    hsa_executable_symbol_t sym;
    OK(hsa_executable_get_symbol_by_name(exe, kd, &gpu, &sym));
    kernel_t k;
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &k.object));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &k.kernarg_size));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE, &k.group_size));
    OK(hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, &k.private_size));
    return k;
}

/* Code object v5 implicit arguments, at the last 256 bytes of the segment
 * when the kernel has them (AMDGPUUsage: hidden_block_count_{x,y,z},
 * hidden_group_size_{x,y,z}, hidden_remainder_{x,y,z}, ..., hidden_grid_dims). */
static inline void fill_implicit(uint8_t *args, uint32_t size, uint32_t explicit_size,
                          const uint32_t grid[3], const uint16_t wg[3], uint16_t dims) {
    if (size < explicit_size + 256) return;
    uint8_t *h = args + size - 256;
    for (int d = 0; d < 3; d++) {
        uint32_t blocks = grid[d] / wg[d];
        uint16_t rem = (uint16_t)(grid[d] % wg[d]);
        memcpy(h + 4 * d, &blocks, 4);
        memcpy(h + 12 + 2 * d, &wg[d], 2);
        memcpy(h + 18 + 2 * d, &rem, 2);
    }
    memcpy(h + 64, &dims, 2);
}

/* Runs kernel `k` over `grid` in workgroups `wg` with `explicit_size` bytes
 * of explicit arguments, and waits for its completion signal. */
/* The kernel-argument segment of a dispatch of `k` over `grid` in
 * workgroups `wg`: the explicit arguments, then the implicit ones (a v5
 * kernel reads its workgroup size there, not from the packet). Freed by the
 * caller with hsa_amd_memory_pool_free. */
static inline void *kernarg_segment(const env_t *e, kernel_t k, const void *explicit_args,
                                    uint32_t explicit_size, const uint32_t grid[3],
                                    const uint16_t wg[3]) {
    uint32_t size = k.kernarg_size > explicit_size ? k.kernarg_size : explicit_size;
    void *args = NULL;
    OK(hsa_amd_memory_pool_allocate(e->kernarg, size ? size : 8, 0, &args));
    OK(hsa_amd_agents_allow_access(1, &e->gpu, NULL, args));
    memset(args, 0, size);
    memcpy(args, explicit_args, explicit_size);
    uint16_t dims = grid[2] > 1 ? 3 : grid[1] > 1 ? 2 : 1;
    fill_implicit(args, size, explicit_size, grid, wg, dims);
    return args;
}

/* Writes a dispatch packet of kernel `k` with `header` into `q` and rings
 * its doorbell; `done` is its completion signal. */
static inline void submit_dispatch(hsa_queue_t *q, kernel_t k, void *args, const uint32_t grid[3],
                          const uint16_t wg[3], hsa_signal_t done, uint16_t header) {
    uint16_t dims = grid[2] > 1 ? 3 : grid[1] > 1 ? 2 : 1;
    uint64_t id = hsa_queue_add_write_index_relaxed(q, 1);
    hsa_kernel_dispatch_packet_t *p =
        (hsa_kernel_dispatch_packet_t *)q->base_address + (id & (q->size - 1));
    memset((uint8_t *)p + 4, 0, sizeof *p - 4);
    p->workgroup_size_x = wg[0];
    p->workgroup_size_y = wg[1];
    p->workgroup_size_z = wg[2];
    p->grid_size_x = grid[0];
    p->grid_size_y = grid[1];
    p->grid_size_z = grid[2];
    p->private_segment_size = k.private_size;
    p->group_segment_size = k.group_size;
    p->kernel_object = k.object;
    p->kernarg_address = args;
    p->completion_signal = done;
    uint32_t word = header | ((uint32_t)dims << 16);
    __atomic_store_n((uint32_t *)p, word, __ATOMIC_RELEASE);
    hsa_signal_store_relaxed(q->doorbell_signal, (hsa_signal_value_t)id);
}

/* The header of a dispatch with system-scope fences. */
#define SYSTEM_FENCES ((HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) | \
                       (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE))

static inline void launch(const env_t *e, hsa_queue_t *q, kernel_t k, const void *explicit_args,
                   uint32_t explicit_size, const uint32_t grid[3], const uint16_t wg[3]) {
    void *args = kernarg_segment(e, k, explicit_args, explicit_size, grid, wg);
    hsa_signal_t done;
    OK(hsa_signal_create(1, 0, NULL, &done));
    submit_dispatch(q, k, args, grid, wg, done,
           (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
               (1 << HSA_PACKET_HEADER_BARRIER) | SYSTEM_FENCES);
    while (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
                                     HSA_WAIT_STATE_BLOCKED) != 0) {
    }
    OK(hsa_signal_destroy(done));
    OK(hsa_amd_memory_pool_free(args));
}

/* Device memory in the GPU's coarse-grained pool, accessible to the CPU. */
static inline void *device_alloc(const env_t *e, size_t size) {
    void *p = NULL;
    OK(hsa_amd_memory_pool_allocate(e->device, size, 0, &p));
    OK(hsa_amd_agents_allow_access(1, &e->cpu, NULL, p));
    return p;
}

/* Memory the host reads and writes directly and the GPU may use:
 * fine-grained system memory (the kernarg pool is one). */
static inline void *host_alloc(const env_t *e, size_t size) {
    void *p = NULL;
    OK(hsa_amd_memory_pool_allocate(e->kernarg, size, 0, &p));
    OK(hsa_amd_agents_allow_access(1, &e->gpu, NULL, p));
    return p;
}

static inline unsigned char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long n = ftell(f);
    CHECK(n > 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)n);
    CHECK(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* Loads one code object (from memory, or from its file descriptor) into a new frozen executable. */
static inline hsa_executable_t load_executable(const env_t *e, const char *path, int from_file) {
    hsa_code_object_reader_t reader;
    int fd = -1;
    unsigned char *bytes = NULL;
    if (from_file) {
        fd = open(path, O_RDONLY);
        CHECK(fd >= 0);
        OK(hsa_code_object_reader_create_from_file(fd, &reader));
    } else {
        size_t size;
        bytes = read_file(path, &size);
        OK(hsa_code_object_reader_create_from_memory(bytes, size, &reader));
    }
    hsa_executable_t exe;
    OK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &exe));
    OK(hsa_executable_load_agent_code_object(exe, e->gpu, reader, NULL, NULL));
    OK(hsa_executable_freeze(exe, NULL));
    OK(hsa_code_object_reader_destroy(reader));
    if (fd >= 0) close(fd);
    free(bytes);
    return exe;
}
