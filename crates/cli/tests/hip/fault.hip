// A kernel that stores past the end of its buffer. On a real MI210, ROCr
// reports the GPU's page fault ("Memory access fault by GPU node-...") and
// HIP 5.2's queue callback aborts the process; the program cannot catch the
// error through HIP. What it can do is catch SIGABRT: the handler reports
// the failure itself and checks that host-visible memory next to the bad
// store was not touched (Inlay refuses the store; it does not land in a
// neighbouring allocation).
//   Exit codes: 3 = aborted as ROCr + ROCclr do, neighbour intact;
//               4 = aborted but the neighbour changed; 0 = no fault seen.
#include "common.h"
#include <csignal>
#include <unistd.h>

static volatile unsigned* g_neighbour;
static const int kNeighbour = 256;

static void on_abort(int) {
    int changed = 0;
    for (int i = 0; i < kNeighbour; i++) changed += g_neighbour[i] != 0x5a5a5a5au;
    char msg[128];
    int len = snprintf(msg, sizeof msg, "fault: HIP aborted the process; neighbour %s\n",
                       changed ? "CHANGED" : "intact");
    if (write(2, msg, len) < 0) _exit(5);
    _exit(changed ? 4 : 3);
}

// Thread i writes out[i + shift]: with shift = n the last workgroup's
// stores run past the end of `out`.
__global__ void store_shifted(unsigned* out, int n, int shift) {
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g < n) out[g + shift] = 0xdeadbeefu;
}

int main() {
    const int n = 1024;
    unsigned *out, *neighbour;
    // Host-visible, so the abort handler can read it; right after `out`.
    HIP(hipHostMalloc((void**)&out, n * sizeof(unsigned), hipHostMallocDefault));
    HIP(hipHostMalloc((void**)&neighbour, kNeighbour * sizeof(unsigned), hipHostMallocDefault));
    for (int i = 0; i < kNeighbour; i++) neighbour[i] = 0x5a5a5a5au;
    g_neighbour = neighbour;
    signal(SIGABRT, on_abort);
    // The first store past the end is thread 0's, at out + n.
    printf("fault: launching the out-of-bounds store; first bad address %p\n", (void*)(out + n));
    fflush(stdout);
    hipLaunchKernelGGL(store_shifted, dim3(n / 64), dim3(64), 0, 0, out, n, n);
    hipError_t err = hipDeviceSynchronize();
    printf("fault: no abort; hipDeviceSynchronize returned %s\n", hipGetErrorString(err));
    return 0;
}
