/* kernarg_access: what a hook reads of the launch through HIP's gridDim,
 * next to the launch's geometry as the packet gives it. The hook runs once
 * per wave before the last instruction of each kernel's first block (as
 * in Luthier's KernelArgumentIntrinsic test), and each launch prints
 *
 *   Kernel N - NAME: Total Grid Size Dims (HSA): (X, Y, Z) Workgroup Dims (HSA): (X, Y, Z) : GridDim (HIP): (X, Y, Z)
 *
 *   inlay run --tool ./kernarg_access.so -- PROGRAM */
#include <inlay/tool.h>

#include <stdio.h>
#include <string.h>

INLAY_EMBED_FILE(hooks, "kernarg_access_hooks.hsaco");

int inlay_tool_init(inlay_tool_t *tool) {
  if (inlay_tool_hooks(tool, hooks_start, (size_t)(hooks_end - hooks_start)) != 0) {
    inlay_tool_error(tool, inlay_error());
    return 1;
  }
  return 0;
}

int inlay_instrument(inlay_tool_t *tool, inlay_kernel_t *k) {
  const inlay_function_t *kernel = inlay_kernel_function(k, 0);
  const inlay_block_t *first = kernel ? inlay_kernel_block(k, kernel->first_block) : NULL;
  if (!first || first->num_instrs == 0) {
    inlay_tool_error(tool, "the kernel has no first block");
    return -1;
  }
  uint32_t last = first->first_instr + first->num_instrs - 1;
  if (inlay_insert_call(k, last, INLAY_BEFORE, "read_grid_dim", INLAY_ONCE_PER_WAVE) != 0) {
    inlay_tool_error(tool, inlay_error());
    return -1;
  }
  return 0;
}

void inlay_at_launch_end(inlay_tool_t *tool, const inlay_launch_t *l, const inlay_launch_end_t *end) {
  uint32_t g[3] = {0, 0, 0};
  char line[1024];
  int n = snprintf(line, sizeof line,
                   "Kernel %llu - %s: Total Grid Size Dims (HSA): (%u, %u, %u) Workgroup Dims (HSA): (%u, %u, %u)",
                   (unsigned long long)l->index, l->kernel_demangled, l->grid[0], l->grid[1], l->grid[2],
                   l->workgroup[0], l->workgroup[1], l->workgroup[2]);
  if (n < 0 || (size_t)n >= sizeof line) n = (int)strlen(line);
  if (!end->instrumented || end->error) {
    snprintf(line + n, sizeof line - (size_t)n, " : GridDim (HIP): not read (%s)",
             end->error ? end->error : "not instrumented");
  } else if (inlay_globals_read(end->globals, "grid_dim", 0, g, sizeof g) != 0) {
    snprintf(line + n, sizeof line - (size_t)n, " : GridDim (HIP): not read (%s)", inlay_error());
  } else {
    snprintf(line + n, sizeof line - (size_t)n, " : GridDim (HIP): (%u, %u, %u)", g[0], g[1], g[2]);
    /* A launch whose hook did not run shows zeros, not the last launch's values. */
    uint32_t zero[3] = {0, 0, 0};
    inlay_globals_write(end->globals, "grid_dim", 0, zero, sizeof zero);
  }
  inlay_tool_print(tool, line);
}
