/* instr_count: how many instructions each kernel launch executes, counted
 * by compiled hooks (hooks.hip) before every instruction, in the manner of
 * Luthier's and NVBit's instruction counters.
 *
 *   inlay run --tool ./instr_count.so [--tool-opt instr_count:count=thread] -- PROGRAM
 *
 * count=wave (the default) counts each instruction once per wave that
 * runs it; count=thread counts a vector instruction once per lane EXEC
 * enables, and scalar and lane-access instructions once per wave. */
#include <inlay/tool.h>

#include <stdio.h>
#include <string.h>

INLAY_EMBED_FILE(hooks, "instr_count_hooks.hsaco");

static int per_thread;
static uint64_t total, launches;

int inlay_tool_init(inlay_tool_t *tool) {
  const char *count = inlay_tool_option(tool, "count");
  if (count && strcmp(count, "wave") != 0 && strcmp(count, "thread") != 0) {
    inlay_tool_error(tool, "count: expected wave or thread");
    return 1;
  }
  per_thread = count && strcmp(count, "thread") == 0;
  if (inlay_tool_hooks(tool, hooks_start, (size_t)(hooks_end - hooks_start)) != 0) {
    inlay_tool_error(tool, inlay_error());
    return 1;
  }
  return 0;
}

/* A call before every instruction: scalar and lane-access ones count the
 * wave, vector ones the wave or its lanes. */
int inlay_instrument(inlay_tool_t *tool, inlay_kernel_t *k) {
  uint32_t n = inlay_kernel_instr_count(k);
  for (uint32_t i = 0; i < n; i++) {
    const inlay_instr_t *in = inlay_kernel_instr(k, i);
    int failed;
    if (in->flags & (INLAY_INSTR_SCALAR | INLAY_INSTR_LANE_ACCESS)) {
      failed = inlay_insert_call(k, i, INLAY_BEFORE, "count_scalar", INLAY_ONCE_PER_WAVE);
    } else {
      failed = inlay_insert_call(k, i, INLAY_BEFORE, "count_vector", INLAY_ONCE_PER_WAVE) ||
               inlay_add_call_arg_u32(k, (uint32_t)per_thread) ||
               inlay_add_call_arg_reg(k, inlay_exec());
    }
    if (failed) {
      inlay_tool_error(tool, inlay_error());
      return -1;
    }
  }
  return 0;
}

void inlay_at_launch_end(inlay_tool_t *tool, const inlay_launch_t *l, const inlay_launch_end_t *end) {
  char line[1024];
  uint64_t n = 0;
  if (!end->instrumented || end->error) {
    snprintf(line, sizeof line, "instr_count: kernel %llu %s: no count (%s)",
             (unsigned long long)l->index, l->kernel_demangled,
             end->error ? end->error : "not instrumented");
  } else if (inlay_globals_read(end->globals, "instructions", 0, &n, sizeof n) != 0) {
    snprintf(line, sizeof line, "instr_count: kernel %llu %s: no count (%s)",
             (unsigned long long)l->index, l->kernel_demangled, inlay_error());
  } else {
    snprintf(line, sizeof line, "instr_count: kernel %llu %s: %llu %s instructions",
             (unsigned long long)l->index, l->kernel_demangled, (unsigned long long)n,
             per_thread ? "thread" : "wave");
    /* The next launch that uses this copy starts from 0. */
    uint64_t zero = 0;
    inlay_globals_write(end->globals, "instructions", 0, &zero, sizeof zero);
    __atomic_add_fetch(&total, n, __ATOMIC_RELAXED);
  }
  __atomic_add_fetch(&launches, 1, __ATOMIC_RELAXED);
  inlay_tool_print(tool, line);
}

void inlay_at_term(inlay_tool_t *tool) {
  char line[256];
  snprintf(line, sizeof line, "instr_count: %llu %s instructions in %llu launches",
           (unsigned long long)total, per_thread ? "thread" : "wave", (unsigned long long)launches);
  inlay_tool_print(tool, line);
}
