// mem_trace's hook: every enabled lane records the address it accesses.
#include "inlay/hooks.h"

struct Access {
  uint64_t address;
  uint32_t site; // which instruction (the tool's numbering)
  uint32_t lane;
};

// Room for this many accesses per launch; claims past it are counted in
// `claimed` but not stored.
#define CAPACITY (1u << 20)

INLAY_GLOBAL uint32_t claimed;
INLAY_GLOBAL Access accesses[CAPACITY];

// Before each FLAT or GLOBAL instruction, in the lanes EXEC enables.
INLAY_HOOK void record_access(uint64_t address, uint32_t site) {
  uint32_t at = inlay_atomic_add_u32(&claimed, 1);
  if (at < CAPACITY) {
    accesses[at].address = address;
    accesses[at].site = site;
    accesses[at].lane = inlay_lane_id();
  }
}
