/*
 * Inlay's tool API for tools written in C or C++.
 *
 * A tool is a shared library that `inlay run --tool ./mytool.so -- PROGRAM`
 * loads into the program's process (the runtime dlopens it when the
 * program calls hsa_init). It exports inlay_tool_init() and the callbacks
 * below that it needs; it calls the inlay_* functions, which the runtime
 * (libhsa-runtime64.so.1) defines: build it with `-shared -fPIC` and leave
 * them undefined (no -Wl,-z,defs).
 *
 * The life of a tool:
 *   inlay_tool_init        once: read options, give the hook module
 *   inlay_at_code_object_load  each code object the program loads
 *   inlay_at_launch        before each launch: run it with the hooks?
 *   inlay_instrument       the first time a kernel runs with the hooks:
 *                          walk its instructions, insert calls (NVBit's way)
 *   inlay_at_hooks_load    a copy of the kernel loaded its own instance of
 *                          the hook module: set up its globals
 *   inlay_at_launch_end    after each launch: read the hook module's globals
 *   inlay_at_term          when the runtime shuts down or the process exits
 *
 * Callbacks may run on several threads at once (one per queue). Pointers
 * the runtime hands a callback are valid until it returns. Functions that
 * can fail return 0 on success and -1 on failure; inlay_error() then says
 * why (per thread).
 *
 * docs/writing-tools.md explains it all with examples (examples/tools/).
 */
#ifndef INLAY_TOOL_H
#define INLAY_TOOL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INLAY_TOOL_ABI 1

typedef struct inlay_tool inlay_tool_t;       /* this tool, as the runtime holds it */
typedef struct inlay_kernel inlay_kernel_t;   /* a kernel being instrumented */
typedef struct inlay_globals inlay_globals_t; /* one instance of the hook module */

/* ---- Registers ------------------------------------------------------- */

typedef enum {
  INLAY_REG_SGPR = 0,
  INLAY_REG_VGPR = 1,
  INLAY_REG_AGPR = 2,
  INLAY_REG_TTMP = 3,
  INLAY_REG_VCC = 4,  /* first 0 = vcc_lo, 1 = vcc_hi */
  INLAY_REG_EXEC = 5, /* first 0 = exec_lo, 1 = exec_hi */
  INLAY_REG_M0 = 6,
  INLAY_REG_SCC = 7,
  INLAY_REG_FLAT_SCRATCH = 8,
  INLAY_REG_XNACK_MASK = 9,
  INLAY_REG_PC = 10,
  INLAY_REG_HWREG = 11
} inlay_reg_file_t;

/* How an instruction accesses a register (bits). */
#define INLAY_ACCESS_READ 1u
#define INLAY_ACCESS_WRITE 2u
#define INLAY_ACCESS_CONDITIONAL 4u /* written only if a condition holds */

/* `count` consecutive 32-bit registers of one file from `first`. */
typedef struct {
  uint32_t file; /* inlay_reg_file_t */
  uint32_t first;
  uint32_t count; /* 0: no register */
  uint32_t access; /* INLAY_ACCESS_* (in inlay_instr_t.regs) */
} inlay_reg_t;

/* Convenience constructors. */
static inline inlay_reg_t inlay_sgpr(uint32_t n, uint32_t count) {
  inlay_reg_t r = {INLAY_REG_SGPR, n, count, 0};
  return r;
}
static inline inlay_reg_t inlay_vgpr(uint32_t n, uint32_t count) {
  inlay_reg_t r = {INLAY_REG_VGPR, n, count, 0};
  return r;
}
static inline inlay_reg_t inlay_exec(void) {
  inlay_reg_t r = {INLAY_REG_EXEC, 0, 2, 0};
  return r;
}

/* ---- Instructions ------------------------------------------------------ */

/* What kind of instruction (bits of inlay_instr_t.flags). */
#define INLAY_INSTR_SCALAR (1u << 0)      /* once per wave: SALU, SMEM, SOPP */
#define INLAY_INSTR_VECTOR (1u << 1)      /* per lane under EXEC */
#define INLAY_INSTR_MEMORY (1u << 2)      /* accesses memory (any space) */
#define INLAY_INSTR_LOAD (1u << 3)        /* reads memory into registers */
#define INLAY_INSTR_STORE (1u << 4)       /* writes memory */
#define INLAY_INSTR_ATOMIC (1u << 5)      /* read-modify-write of memory */
#define INLAY_INSTR_BRANCH (1u << 6)      /* may change the PC */
#define INLAY_INSTR_CALL (1u << 7)        /* s_swappc_b64, s_call_b64 */
#define INLAY_INSTR_ENDS_WAVE (1u << 8)   /* s_endpgm */
#define INLAY_INSTR_LANE_ACCESS (1u << 9) /* v_readlane, v_readfirstlane, v_writelane */
#define INLAY_INSTR_LDS (1u << 10)        /* DS instructions */
#define INLAY_INSTR_HAS_ADDRESS (1u << 11) /* FLAT/GLOBAL: INLAY_ARG_MEMORY_ADDRESS works */

typedef enum {
  INLAY_SPACE_FLAT = 0,
  INLAY_SPACE_GLOBAL = 1,
  INLAY_SPACE_SCRATCH = 2,
  INLAY_SPACE_BUFFER = 3,
  INLAY_SPACE_IMAGE = 4,
  INLAY_SPACE_SCALAR = 5,
  INLAY_SPACE_LDS = 6
} inlay_space_t;

/* How a memory instruction forms its address; absent parts have count 0. */
typedef struct {
  uint32_t space; /* inlay_space_t */
  inlay_reg_t vector_base;   /* per-lane address or offset (VGPRs) */
  inlay_reg_t scalar_base;   /* wave-uniform base or resource (SGPRs) */
  inlay_reg_t scalar_offset; /* SGPR offset */
  int64_t offset;            /* immediate offset */
} inlay_address_operand_t;

typedef struct {
  uint32_t index;    /* what insertion takes */
  uint32_t function; /* index of its function (0: the kernel) */
  uint32_t block;    /* index of its basic block */
  uint32_t size;     /* bytes: 4 or 8 */
  uint64_t address;  /* in its code object */
  const char *opcode;   /* v_add_f32 (the same across encodings) */
  const char *mnemonic; /* v_add_f32_e32 */
  const char *text;     /* as llvm-objdump prints it */
  uint32_t flags;       /* INLAY_INSTR_* */
  uint32_t num_regs;
  const inlay_reg_t *regs; /* every register read or written, implicit ones too */
  int has_address_operand;
  inlay_address_operand_t address_operand;
} inlay_instr_t;

typedef struct {
  const char *name; /* the symbol at its entry, or NULL */
  int is_kernel;
  uint64_t entry;
  uint32_t first_block, num_blocks;
  uint32_t first_instr, num_instrs;
} inlay_function_t;

typedef struct {
  uint32_t function;
  uint32_t first_instr, num_instrs;
  int ends_wave; /* ends with s_endpgm */
  int returns;   /* returns to the caller */
  uint32_t num_succs;
  const uint32_t *succs;
} inlay_block_t;

const char *inlay_kernel_name(const inlay_kernel_t *k);
/* The kernel object its launches dispatch (inlay_launch_t.kernel_object). */
uint64_t inlay_kernel_object(const inlay_kernel_t *k);
uint32_t inlay_kernel_instr_count(const inlay_kernel_t *k);
const inlay_instr_t *inlay_kernel_instr(const inlay_kernel_t *k, uint32_t i);
uint32_t inlay_kernel_function_count(const inlay_kernel_t *k);
const inlay_function_t *inlay_kernel_function(const inlay_kernel_t *k, uint32_t i);
uint32_t inlay_kernel_block_count(const inlay_kernel_t *k);
const inlay_block_t *inlay_kernel_block(const inlay_kernel_t *k, uint32_t i);

/* ---- Insertion (in inlay_instrument) ------------------------------------ */

typedef enum {
  INLAY_BEFORE = 0,       /* before instruction `instr` */
  INLAY_AFTER = 1,        /* after it (it must not branch) */
  INLAY_KERNEL_ENTRY = 2, /* at the kernel's start (`instr` ignored) */
  INLAY_KERNEL_EXITS = 3  /* before every s_endpgm of the kernel (`instr` ignored) */
} inlay_point_t;

/* Flags of inlay_insert_call. */
#define INLAY_ONCE_PER_WAVE 1u /* run in one lane (the lowest on, or lane 0) */

/* Values the dispatch gives every wave. */
typedef enum {
  INLAY_GRID_SIZE_X = 0, INLAY_GRID_SIZE_Y, INLAY_GRID_SIZE_Z,
  INLAY_WORKGROUP_SIZE_X, INLAY_WORKGROUP_SIZE_Y, INLAY_WORKGROUP_SIZE_Z,
  INLAY_WORKGROUP_ID_X, INLAY_WORKGROUP_ID_Y, INLAY_WORKGROUP_ID_Z,
  INLAY_KERNARG_SEGMENT, /* 64-bit device address of the kernel's arguments */
  INLAY_DISPATCH_PACKET, /* 64-bit device address of the AQL packet */
  INLAY_WORKITEM_ID_X, INLAY_WORKITEM_ID_Y, INLAY_WORKITEM_ID_Z /* per lane */
} inlay_launch_value_t;

/* Calls hook `hook` (a function of the tool's hook module) at a point;
 * the inlay_add_call_arg_* calls that follow give its arguments, in order. */
int inlay_insert_call(inlay_kernel_t *k, uint32_t instr, inlay_point_t where,
                      const char *hook, uint32_t flags);
int inlay_add_call_arg_u32(inlay_kernel_t *k, uint32_t value);
int inlay_add_call_arg_u64(inlay_kernel_t *k, uint64_t value);
/* The value a register holds at the point (count 1: 32 bits, 2: 64 bits). */
int inlay_add_call_arg_reg(inlay_kernel_t *k, inlay_reg_t reg);
/* A register by reference: the hook gets a pointer; what it stores there
 * is in the register when the application continues. */
int inlay_add_call_arg_reg_ref(inlay_kernel_t *k, inlay_reg_t reg);
/* The address the instruction accesses, per lane (INLAY_INSTR_HAS_ADDRESS). */
int inlay_add_call_arg_mem_addr(inlay_kernel_t *k);
int inlay_add_call_arg_launch(inlay_kernel_t *k, inlay_launch_value_t value);
/* The dword at byte `offset` (a multiple of 4) of the kernel's arguments. */
int inlay_add_call_arg_kernarg_dword(inlay_kernel_t *k, uint32_t offset);

/* ---- The tool ---------------------------------------------------------- */

/* The value of option KEY (`--tool-opt KEY=VALUE`, or TOOL:KEY=VALUE where
 * TOOL is the library's name without lib and .so), or NULL. Only in
 * inlay_tool_init. Options no tool reads are refused before the program
 * starts. */
const char *inlay_tool_option(inlay_tool_t *tool, const char *key);
/* Why inlay_tool_init fails (return nonzero after it). */
void inlay_tool_error(inlay_tool_t *tool, const char *message);
/* Whether this is `inlay run`'s check of the options, before the program
 * starts (inlay_tool_init runs once there and once in the program): do
 * nothing lasting then. */
int inlay_tool_checking(const inlay_tool_t *tool);
/* The hook module: a gfx90a code object (copied), or a file. */
int inlay_tool_hooks(inlay_tool_t *tool, const void *code_object, size_t size);
int inlay_tool_hooks_file(inlay_tool_t *tool, const char *path);
/* A line of text to the tools' output (standard error, or output=PATH). */
void inlay_tool_print(inlay_tool_t *tool, const char *line);
/* The message of the last failure on this thread. */
const char *inlay_error(void);

/* ---- Launches and globals --------------------------------------------- */

typedef struct {
  uint64_t index;               /* launches so far in this process, from 0 */
  const char *kernel;           /* as in the code object (mangled) */
  const char *kernel_demangled; /* for people */
  uint64_t kernel_object;
  uint32_t dimensions;          /* 1 to 3 */
  uint32_t grid[3];             /* work-items (1 in unused dimensions) */
  uint32_t workgroup[3];        /* work-items per workgroup */
  const void *kernarg;          /* the kernel-argument segment as filled */
  size_t kernarg_size;
  uint64_t kernarg_address;
} inlay_launch_t;

typedef struct {
  int instrumented;         /* ran with this tool's hooks */
  const char *error;        /* why the dispatch or instrumentation failed, or NULL */
  inlay_globals_t *globals; /* this launch's hook module instance, or NULL */
} inlay_launch_end_t;

int inlay_globals_read(const inlay_globals_t *g, const char *name, size_t offset,
                       void *dst, size_t size);
int inlay_globals_write(inlay_globals_t *g, const char *name, size_t offset,
                        const void *src, size_t size);
int inlay_globals_address(const inlay_globals_t *g, const char *name,
                          uint64_t *address, size_t *size);

/* ---- What the tool defines --------------------------------------------- */

/* Required. Return 0, or nonzero after inlay_tool_error(). */
int inlay_tool_init(inlay_tool_t *tool);
/* Optional: */
void inlay_at_code_object_load(inlay_tool_t *tool, const char *name,
                               const void *code_object, size_t size);
int inlay_at_launch(inlay_tool_t *tool, const inlay_launch_t *launch); /* default: 1 */
int inlay_instrument(inlay_tool_t *tool, inlay_kernel_t *kernel);     /* 0, or -1 after inlay_tool_error */
void inlay_at_hooks_load(inlay_tool_t *tool, inlay_globals_t *globals);
void inlay_at_launch_end(inlay_tool_t *tool, const inlay_launch_t *launch,
                         const inlay_launch_end_t *end);
void inlay_at_term(inlay_tool_t *tool);

/* Embeds a file (the hook module) in the tool: defines NAME_start and
 * NAME_end; give `NAME_start, NAME_end - NAME_start` to inlay_tool_hooks.
 * PATH is relative to where the compiler runs. */
#define INLAY_EMBED_FILE(NAME, PATH)                                           \
  __asm__(".pushsection .rodata." #NAME ",\"a\",@progbits\n"                  \
          ".balign 16\n"                                                       \
          ".hidden " #NAME "_start\n.globl " #NAME "_start\n" #NAME "_start:\n" \
          ".incbin \"" PATH "\"\n"                                             \
          ".hidden " #NAME "_end\n.globl " #NAME "_end\n" #NAME "_end:\n"       \
          ".popsection\n");                                                    \
  extern const unsigned char NAME##_start[], NAME##_end[]

#ifdef __cplusplus
}
#endif

#endif /* INLAY_TOOL_H */
