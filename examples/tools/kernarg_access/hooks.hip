// kernarg_access's hook: Luthier's KernelArgumentIntrinsic test. gridDim
// is HIP's own (ROCm's device library reads it from the implicit kernel
// arguments): the engine gives the hook the launch's implicit-argument
// pointer even in kernels that never asked for one.
#include "inlay/hooks.h"

// The grid in workgroups, as the hook saw it in the running launch.
INLAY_GLOBAL uint32_t grid_dim[3];

INLAY_HOOK void read_grid_dim(void) {
  grid_dim[0] = gridDim.x;
  grid_dim[1] = gridDim.y;
  grid_dim[2] = gridDim.z;
}
