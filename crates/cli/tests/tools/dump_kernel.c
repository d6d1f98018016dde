/* A test tool: prints every kernel as include/inlay/tool.h shows it to
 * inlay_instrument (functions, blocks, instructions with their facts), and
 * inserts nothing. crates/cli/tests/cli/tool_api.rs compares what it prints
 * with llvm-objdump-19's listing of the same code object. */
#include <inlay/tool.h>

#include <stdio.h>
#include <string.h>

int inlay_tool_init(inlay_tool_t *tool) {
  (void)tool;
  return 0;
}

static const char *files[] = {"s", "v", "a", "ttmp", "vcc", "exec", "m0", "scc", "flat_scratch", "xnack_mask", "pc", "hwreg"};

int inlay_instrument(inlay_tool_t *tool, inlay_kernel_t *k) {
  char line[2048];
  uint32_t nf = inlay_kernel_function_count(k), nb = inlay_kernel_block_count(k), ni = inlay_kernel_instr_count(k);
  snprintf(line, sizeof line, "kernel %s: %u functions, %u blocks, %u instructions", inlay_kernel_name(k), nf, nb, ni);
  inlay_tool_print(tool, line);
  for (uint32_t f = 0; f < nf; f++) {
    const inlay_function_t *fn = inlay_kernel_function(k, f);
    snprintf(line, sizeof line, "function %u %s entry=0x%llx kernel=%d blocks=%u+%u instrs=%u+%u", f,
             fn->name ? fn->name : "?", (unsigned long long)fn->entry, fn->is_kernel, fn->first_block,
             fn->num_blocks, fn->first_instr, fn->num_instrs);
    inlay_tool_print(tool, line);
  }
  for (uint32_t b = 0; b < nb; b++) {
    const inlay_block_t *bl = inlay_kernel_block(k, b);
    int n = snprintf(line, sizeof line, "block %u function=%u instrs=%u+%u ends_wave=%d returns=%d succs=", b,
                     bl->function, bl->first_instr, bl->num_instrs, bl->ends_wave, bl->returns);
    for (uint32_t s = 0; s < bl->num_succs && n < (int)sizeof line - 16; s++)
      n += snprintf(line + n, sizeof line - (size_t)n, "%s%u", s ? "," : "", bl->succs[s]);
    inlay_tool_print(tool, line);
  }
  for (uint32_t i = 0; i < ni; i++) {
    const inlay_instr_t *in = inlay_kernel_instr(k, i);
    int n = snprintf(line, sizeof line, "instr %u 0x%llx size=%u function=%u block=%u flags=0x%x opcode=%s|%s|regs=",
                     in->index, (unsigned long long)in->address, in->size, in->function, in->block, in->flags,
                     in->opcode, in->text);
    for (uint32_t r = 0; r < in->num_regs && n < (int)sizeof line - 48; r++) {
      const inlay_reg_t *g = &in->regs[r];
      n += snprintf(line + n, sizeof line - (size_t)n, "%s%s%u+%u:%u", r ? " " : "",
                    g->file < 12 ? files[g->file] : "?", g->first, g->count, g->access);
    }
    if (in->has_address_operand && n < (int)sizeof line - 80)
      snprintf(line + n, sizeof line - (size_t)n, "|address=%u,v%u+%u,s%u+%u,%lld", in->address_operand.space,
               in->address_operand.vector_base.first, in->address_operand.vector_base.count,
               in->address_operand.scalar_base.first, in->address_operand.scalar_base.count,
               (long long)in->address_operand.offset);
    inlay_tool_print(tool, line);
  }
  /* Out of range: NULL, not a crash. */
  if (inlay_kernel_instr(k, ni) != NULL || inlay_kernel_function(k, nf) != NULL || inlay_kernel_block(k, nb) != NULL)
    inlay_tool_print(tool, "out of range: not NULL");
  /* A call to a hook of a module the tool never gave fails when the copy
   * is built, not here; a bad point fails here. */
  if (inlay_insert_call(k, 0, INLAY_BEFORE, "x", INLAY_INLINE | INLAY_CALL) == 0)
    inlay_tool_print(tool, "inline and call forced together accepted");
  if (inlay_insert_call(k, 0, (inlay_point_t)7, "x", 0) == 0) inlay_tool_print(tool, "bad point accepted");
  if (inlay_add_call_arg_u32(k, 1) == 0) inlay_tool_print(tool, "argument without a call accepted");
  snprintf(line, sizeof line, "error: %s", inlay_error());
  inlay_tool_print(tool, line);
  return 0;
}
