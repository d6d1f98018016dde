/* mem_trace: the address every enabled lane accesses at every FLAT and
 * GLOBAL instruction of each launch, recorded by a compiled hook
 * (hooks.hip) and summed up per instruction when the launch completes:
 *
 *   mem_trace: kernel N NAME: A lane accesses at I instructions, L distinct 64-byte lines
 *     0xADDR OPCODE: LANES lanes, LINES lines, 0xLOW..=0xHIGH
 *
 * (the built-in mem-trace prints the same lines).
 *
 *   inlay run --tool ./mem_trace.so -- PROGRAM */
#include <inlay/tool.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

INLAY_EMBED_FILE(hooks, "mem_trace_hooks.hsaco");

/* As the hook module lays them out. */
struct access {
  uint64_t address;
  uint32_t site;
  uint32_t lane;
};
#define CAPACITY (1u << 20)

/* The traced instructions of each kernel: site n is sites[n]. */
struct site {
  uint64_t address;
  char opcode[48];
};
struct kernel {
  uint64_t object;
  uint32_t count;
  struct site *sites;
};
static struct kernel *kernels;
static size_t num_kernels;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int inlay_tool_init(inlay_tool_t *tool) {
  if (inlay_tool_hooks(tool, hooks_start, (size_t)(hooks_end - hooks_start)) != 0) {
    inlay_tool_error(tool, inlay_error());
    return 1;
  }
  return 0;
}

int inlay_instrument(inlay_tool_t *tool, inlay_kernel_t *k) {
  uint32_t n = inlay_kernel_instr_count(k), count = 0;
  struct site *sites = calloc(n ? n : 1, sizeof *sites);
  if (!sites) {
    inlay_tool_error(tool, "out of memory");
    return -1;
  }
  for (uint32_t i = 0; i < n; i++) {
    const inlay_instr_t *in = inlay_kernel_instr(k, i);
    if (!(in->flags & INLAY_INSTR_HAS_ADDRESS)) continue;
    if (inlay_insert_call(k, i, INLAY_BEFORE, "record_access", 0) ||
        inlay_add_call_arg_mem_addr(k) || inlay_add_call_arg_u32(k, count)) {
      inlay_tool_error(tool, inlay_error());
      free(sites);
      return -1;
    }
    sites[count].address = in->address;
    snprintf(sites[count].opcode, sizeof sites[count].opcode, "%s", in->opcode);
    count++;
  }
  pthread_mutex_lock(&lock);
  struct kernel *grown = realloc(kernels, (num_kernels + 1) * sizeof *kernels);
  if (grown) {
    kernels = grown;
    kernels[num_kernels++] = (struct kernel){inlay_kernel_object(k), count, sites};
  }
  pthread_mutex_unlock(&lock);
  if (!grown) {
    free(sites);
    inlay_tool_error(tool, "out of memory");
    return -1;
  }
  return 0;
}

static int by_site_then_address(const void *a, const void *b) {
  const struct access *x = a, *y = b;
  if (x->site != y->site) return x->site < y->site ? -1 : 1;
  return x->address < y->address ? -1 : x->address > y->address;
}

static int by_value(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int by_address(const void *a, const void *b) {
  const struct site *x = *(struct site *const *)a, *y = *(struct site *const *)b;
  return x->address < y->address ? -1 : x->address > y->address;
}

static size_t distinct(uint64_t *v, size_t n) {
  qsort(v, n, sizeof *v, by_value);
  size_t d = 0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || v[i] != v[i - 1]) d++;
  return d;
}

void inlay_at_launch_end(inlay_tool_t *tool, const inlay_launch_t *l, const inlay_launch_end_t *end) {
  char line[1024];
  unsigned long long index = (unsigned long long)l->index;
  uint32_t claimed = 0;
  if (!end->instrumented || !end->globals ||
      inlay_globals_read(end->globals, "claimed", 0, &claimed, sizeof claimed) != 0) {
    snprintf(line, sizeof line, "mem_trace: kernel %llu %s: no trace (%s)", index, l->kernel_demangled,
             end->error ? end->error : end->instrumented ? inlay_error() : "not instrumented");
    inlay_tool_print(tool, line);
    return;
  }
  /* A copy: another thread may grow the list meanwhile (site tables are
   * never freed). */
  struct kernel found = {0, 0, NULL}, *kernel = NULL;
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < num_kernels; i++)
    if (kernels[i].object == l->kernel_object) found = kernels[i], kernel = &found;
  pthread_mutex_unlock(&lock);
  uint32_t kept = claimed < CAPACITY ? claimed : CAPACITY;
  struct access *a = malloc((kept ? kept : 1) * sizeof *a);
  uint64_t *lines = malloc((kept ? kept : 1) * sizeof *lines);
  if (!kernel || !a || !lines ||
      inlay_globals_read(end->globals, "accesses", 0, a, kept * sizeof *a) != 0) {
    snprintf(line, sizeof line, "mem_trace: kernel %llu %s: cannot read the trace", index, l->kernel_demangled);
    inlay_tool_print(tool, line);
    free(a);
    free(lines);
    return;
  }
  /* The next launch that uses this copy starts an empty trace. */
  uint32_t zero = 0;
  inlay_globals_write(end->globals, "claimed", 0, &zero, sizeof zero);

  for (uint32_t i = 0; i < kept; i++) lines[i] = a[i].address >> 6;
  size_t all_lines = distinct(lines, kept);
  qsort(a, kept, sizeof *a, by_site_then_address);
  size_t used = 0;
  for (uint32_t i = 0; i < kept; i++)
    if (i == 0 || a[i].site != a[i - 1].site) used++;
  snprintf(line, sizeof line,
           "mem_trace: kernel %llu %s: %u lane accesses at %zu instructions, %zu distinct 64-byte lines%s",
           index, l->kernel_demangled, kept, used, all_lines,
           claimed > kept ? " (trace full: accesses lost)" : "");
  inlay_tool_print(tool, line);

  /* One line per instruction, in address order. */
  struct site **order = calloc(kernel->count ? kernel->count : 1, sizeof *order);
  uint32_t *first = calloc(kernel->count ? kernel->count : 1, sizeof *first);
  uint32_t *count = calloc(kernel->count ? kernel->count : 1, sizeof *count);
  if (order && first && count) {
    for (uint32_t i = 0; i < kept; i++) {
      if (a[i].site >= kernel->count) continue;
      if (count[a[i].site]++ == 0) first[a[i].site] = i;
    }
    for (uint32_t s = 0; s < kernel->count; s++) order[s] = &kernel->sites[s];
    qsort(order, kernel->count, sizeof *order, by_address);
    for (uint32_t o = 0; o < kernel->count; o++) {
      uint32_t s = (uint32_t)(order[o] - kernel->sites);
      if (count[s] == 0) continue;
      const struct access *r = &a[first[s]];
      for (uint32_t i = 0; i < count[s]; i++) lines[i] = r[i].address >> 6;
      snprintf(line, sizeof line, "  0x%llx %s: %u lanes, %zu lines, 0x%llx..=0x%llx",
               (unsigned long long)kernel->sites[s].address, kernel->sites[s].opcode, count[s],
               distinct(lines, count[s]), (unsigned long long)r[0].address,
               (unsigned long long)r[count[s] - 1].address);
      inlay_tool_print(tool, line);
    }
  }
  free(order);
  free(first);
  free(count);
  free(a);
  free(lines);
}
