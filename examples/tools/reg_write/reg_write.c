/* reg_write: a fault injector. Flips one bit of one register at one
 * instruction, in every lane that runs it:
 *
 *   inlay run --tool ./reg_write.so \
 *       --tool-opt reg_write:pc=0x1a24 --tool-opt reg_write:reg=v2 \
 *       --tool-opt reg_write:bit=31 [--tool-opt reg_write:when=before] \
 *       [--tool-opt reg_write:kernel=NAME] -- PROGRAM
 *
 * pc is the instruction's address in its code object (as `inlay disasm`
 * or llvm-objdump print it); reg a VGPR (vN) or SGPR (sN); the flip
 * happens after the instruction (when=after, the default: it corrupts what
 * the instruction wrote) or before it (when=before: what it reads). Only
 * kernels named NAME (mangled or demangled) if kernel= is given. Each
 * launch prints how many waves the flip reached. */
#include <inlay/tool.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

INLAY_EMBED_FILE(hooks, "reg_write_hooks.hsaco");

static uint64_t pc;
static inlay_reg_t reg;
static uint32_t bit;
static int before;
static char kernel[512];

static int number(const char *s, int base, unsigned long long max, unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, base);
  if (errno || end == s || *end || v > max) return -1;
  *out = v;
  return 0;
}

static int fail(inlay_tool_t *tool, const char *why) {
  inlay_tool_error(tool, why);
  return 1;
}

int inlay_tool_init(inlay_tool_t *tool) {
  const char *p = inlay_tool_option(tool, "pc"), *r = inlay_tool_option(tool, "reg"),
             *b = inlay_tool_option(tool, "bit"), *w = inlay_tool_option(tool, "when"),
             *k = inlay_tool_option(tool, "kernel");
  unsigned long long v;
  if (!p || number(p, 0, UINT64_MAX, &v)) return fail(tool, "pc=ADDRESS is required (the instruction's address)");
  pc = v;
  if (!r || (r[0] != 'v' && r[0] != 's') || number(r + 1, 10, r[0] == 'v' ? 255 : 101, &v))
    return fail(tool, "reg=vN or reg=sN is required (v0-v255, s0-s101)");
  reg = r[0] == 'v' ? inlay_vgpr((uint32_t)v, 1) : inlay_sgpr((uint32_t)v, 1);
  if (!b || number(b, 10, 31, &v)) return fail(tool, "bit=0..31 is required");
  bit = (uint32_t)v;
  if (w && strcmp(w, "before") != 0 && strcmp(w, "after") != 0) return fail(tool, "when: expected before or after");
  before = w && strcmp(w, "before") == 0;
  if (k) snprintf(kernel, sizeof kernel, "%s", k);
  if (inlay_tool_hooks(tool, hooks_start, (size_t)(hooks_end - hooks_start)) != 0) return fail(tool, inlay_error());
  return 0;
}

static int chosen(const char *mangled, const char *demangled) {
  return !kernel[0] || strcmp(kernel, mangled) == 0 || strcmp(kernel, demangled) == 0;
}

/* Only launches of the chosen kernel run with the hook. */
int inlay_at_launch(inlay_tool_t *tool, const inlay_launch_t *l) {
  (void)tool;
  return chosen(l->kernel, l->kernel_demangled);
}

int inlay_instrument(inlay_tool_t *tool, inlay_kernel_t *k) {
  uint32_t n = inlay_kernel_instr_count(k);
  for (uint32_t i = 0; i < n; i++) {
    const inlay_instr_t *in = inlay_kernel_instr(k, i);
    if (in->address != pc) continue;
    if (inlay_insert_call(k, i, before ? INLAY_BEFORE : INLAY_AFTER, "flip_bits", 0) ||
        inlay_add_call_arg_reg_ref(k, reg) || inlay_add_call_arg_u32(k, 1u << bit)) {
      inlay_tool_error(tool, inlay_error());
      return -1;
    }
  }
  return 0;
}

void inlay_at_launch_end(inlay_tool_t *tool, const inlay_launch_t *l, const inlay_launch_end_t *end) {
  char line[1024];
  uint32_t waves = 0;
  if (!end->instrumented) return;
  if (end->error || inlay_globals_read(end->globals, "waves", 0, &waves, sizeof waves) != 0) {
    snprintf(line, sizeof line, "reg_write: kernel %llu %s: %s", (unsigned long long)l->index,
             l->kernel_demangled, end->error ? end->error : inlay_error());
  } else {
    snprintf(line, sizeof line, "reg_write: kernel %llu %s: bit %u of %c%u flipped %s 0x%llx in %u waves",
             (unsigned long long)l->index, l->kernel_demangled, bit, reg.file == INLAY_REG_VGPR ? 'v' : 's',
             reg.first, before ? "before" : "after", (unsigned long long)pc, waves);
    uint32_t zero = 0;
    inlay_globals_write(end->globals, "waves", 0, &zero, sizeof zero);
  }
  inlay_tool_print(tool, line);
}
