// reg_write's hook: a fault injector. The register comes by reference:
// what the hook stores through the pointer is in the register when the
// kernel goes on.
#include "inlay/hooks.h"

// Waves that ran the hook in the running launch.
INLAY_GLOBAL uint32_t waves;

INLAY_HOOK void flip_bits(uint32_t *reg, uint32_t mask) {
  *reg ^= mask;
  if (inlay_is_first_lane()) inlay_atomic_add_u32(&waves, 1);
}
