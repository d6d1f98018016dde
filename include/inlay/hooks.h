/*
 * Writing hooks: the device side of an Inlay tool.
 *
 * A hook is an ordinary device function that the instrumented kernel calls
 * at the points the tool chose (include/inlay/tool.h). Hooks live in a code
 * object of their own, the hook module, compiled by clang for gfx90a from
 * HIP, OpenCL C or C and linked as a shared object whose hooks stay global
 * symbols (HIP needs -fgpu-rdc for that), with the stack sizes the engine
 * reads (-fstack-size-section):
 *
 *   clang-19 -x hip --cuda-device-only -fgpu-rdc --no-gpu-bundle-output \
 *            --offload-arch=gfx90a -O2 -fstack-size-section \
 *            --rocm-device-lib-path=BITCODE -I include hooks.hip -o hooks.hsaco
 *   clang-19 -x c  --target=amdgcn-amd-amdhsa -mcpu=gfx90a -O2 -nogpulib \
 *            -fstack-size-section -I include hooks.c -o hooks.hsaco
 *   clang-19 -x cl -cl-std=CL2.0 --target=amdgcn-amd-amdhsa -mcpu=gfx90a \
 *            -O2 -nogpulib -fstack-size-section -I include hooks.cl -o hooks.hsaco
 *
 * (BITCODE: ROCm's device libraries, /usr/lib/x86_64-linux-gnu/amdgcn/bitcode
 * on Debian; C and OpenCL C hooks built with -nogpulib cannot use them.)
 *
 * Declare each hook with INLAY_HOOK (C linkage, never inlined, kept even
 * if nothing calls it, exported) and its globals with INLAY_GLOBAL:
 *
 *   INLAY_GLOBAL uint64_t counter;
 *   INLAY_HOOK void count(uint32_t per_lane) { ... }
 *
 * Arguments, in the order the tool adds them (at most 31 dwords):
 *   - a 32-bit constant or register value: uint32_t (int, float ...)
 *   - a 64-bit constant, register pair, address or launch pointer: uint64_t
 *   - a register by reference: uint32_t * (uint64_t * for a pair); what
 *     the hook stores there is in the register when the kernel goes on.
 * A vector register's value (and a memory address) differs per lane; a
 * scalar register's (SGPR, VCC, EXEC, M0, SCC) is the same in every lane.
 *
 * Inside a hook, HIP works as usual: threadIdx, blockIdx, blockDim,
 * gridDim, atomics, __builtin_amdgcn_read_exec(), calls, a stack, inline
 * assembly. A hook runs in the lanes EXEC enables at its point (it is not
 * called when none is), or in one lane when the tool inserted it
 * INLAY_ONCE_PER_WAVE. It must not use LDS (the kernel owns it) or wait at
 * a barrier. Every register, SCC, VCC, EXEC and M0 of the kernel is as
 * before once it returns (by-reference arguments excepted).
 */
#ifndef INLAY_HOOKS_H
#define INLAY_HOOKS_H

#if defined(__HIP__)
#include <hip/hip_runtime.h>
#include <stdint.h>
#define INLAY_HOOK extern "C" __device__ __attribute__((noinline, used, visibility("default")))
#define INLAY_GLOBAL __device__ __attribute__((used, visibility("default")))
#define INLAY_INLINE static __device__ inline __attribute__((always_inline))
typedef uint32_t inlay_u32;
typedef uint64_t inlay_u64;
#else /* OpenCL C or C for amdgcn-amd-amdhsa */
#ifdef __cplusplus
#define INLAY_EXTERN_C extern "C"
#else
#define INLAY_EXTERN_C
#endif
#define INLAY_HOOK INLAY_EXTERN_C __attribute__((noinline, used, visibility("default")))
#define INLAY_GLOBAL __attribute__((used, visibility("default")))
#define INLAY_INLINE static inline __attribute__((always_inline))
typedef __UINT32_TYPE__ inlay_u32;
typedef __UINT64_TYPE__ inlay_u64;
#endif

/* The lanes running this code (the point's EXEC, or one lane). */
INLAY_INLINE inlay_u64 inlay_exec(void) { return __builtin_amdgcn_read_exec(); }

/* This lane's index in the wave, 0 to 63. */
INLAY_INLINE inlay_u32 inlay_lane_id(void) {
  return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}

/* Lanes running, and the lowest of them. */
INLAY_INLINE inlay_u32 inlay_active_lanes(void) {
  return (inlay_u32)__builtin_popcountll(inlay_exec());
}
INLAY_INLINE inlay_u32 inlay_first_lane(void) {
  return (inlay_u32)__builtin_ctzll(inlay_exec());
}
INLAY_INLINE int inlay_is_first_lane(void) { return inlay_lane_id() == inlay_first_lane(); }

/* A 64-bit value of a lane, read by every lane. */
INLAY_INLINE inlay_u64 inlay_read_lane_u64(inlay_u64 v, inlay_u32 lane) {
  inlay_u32 lo = __builtin_amdgcn_readlane((int)(inlay_u32)v, (int)lane);
  inlay_u32 hi = __builtin_amdgcn_readlane((int)(inlay_u32)(v >> 32), (int)lane);
  return ((inlay_u64)hi << 32) | lo;
}

/* Atomic adds to device memory (agent scope); they return the old value. */
#if defined(__HIP__)
INLAY_INLINE inlay_u64 inlay_atomic_add_u64(inlay_u64 *p, inlay_u64 v) {
  return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
INLAY_INLINE inlay_u32 inlay_atomic_add_u32(inlay_u32 *p, inlay_u32 v) {
  return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
#else
INLAY_INLINE inlay_u64 inlay_atomic_add_u64(inlay_u64 *p, inlay_u64 v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
INLAY_INLINE inlay_u32 inlay_atomic_add_u32(inlay_u32 *p, inlay_u32 v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
#endif

/* Adds `v` to *p once for the whole wave (from its first running lane). */
INLAY_INLINE void inlay_wave_add_u64(inlay_u64 *p, inlay_u64 v) {
  if (inlay_is_first_lane()) inlay_atomic_add_u64(p, v);
}

#endif /* INLAY_HOOKS_H */
