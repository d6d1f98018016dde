// instr_count's hooks: Luthier's instruction counter.
#include "inlay/hooks.h"

// Instructions the running launch executed. Every instrumented copy of a
// kernel has its own instance of this module, so this counts one launch;
// the tool reads it and sets it back to 0 when the launch completes.
INLAY_GLOBAL uint64_t instructions;

// Before each vector instruction, once per wave: `exec` is EXEC as the
// instruction sees it. Counts the wave (per_thread 0) or its lanes. Being
// called once per wave, it also counts the waves that run the instruction
// with no lane enabled (a hook running in the point's lanes would not run
// for them), as the virtual GPU and the built-in instr-count do.
INLAY_HOOK void count_vector(uint32_t per_thread, uint64_t exec) {
  inlay_atomic_add_u64(&instructions, per_thread ? (uint64_t)__builtin_popcountll(exec) : 1);
}

// Before each scalar or lane-access instruction (v_readlane_b32,
// v_readfirstlane_b32, v_writelane_b32), once per wave: the wave executes
// it once, whatever EXEC says.
INLAY_HOOK void count_scalar(void) { inlay_atomic_add_u64(&instructions, 1); }
