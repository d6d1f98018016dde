// Kernels that misbehave, for the hostile C programs (tests/c/hostile.c).
// Assembled at test time for gfx90a, code object v5:
//   clang-19 -target amdgcn-amd-amdhsa -mcpu=gfx90a -c hostile.s -o hostile.o
//   ld.lld-19 -shared hostile.o -o hostile.hsaco
// Each kernel's only user SGPRs are the kernel-argument pointer, in s[0:1];
// v0 is the work-item id in x.

.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"
.text

// spin(const int *flag): every wave loops until *flag is not 0.
.globl spin
.p2align 8
.type spin,@function
spin:
    s_load_dwordx2 s[2:3], s[0:1], 0x0
    v_mov_b32 v1, 0
    s_waitcnt lgkmcnt(0)
.Lspin:
    global_load_dword v2, v1, s[2:3] glc
    s_waitcnt vmcnt(0)
    v_readfirstlane_b32 s4, v2
    s_cmp_eq_u32 s4, 0
    s_cbranch_scc1 .Lspin
    s_endpgm
.Lspin_end:
.size spin, .Lspin_end-spin

// store_lane(int *buf, int *bad, unsigned lane): work-item i stores 0x1234
// to buf[i], except work-item `lane`, which stores to `bad`.
.globl store_lane
.p2align 8
.type store_lane,@function
store_lane:
    s_load_dwordx4 s[4:7], s[0:1], 0x0
    s_load_dword s8, s[0:1], 0x10
    v_lshlrev_b32 v1, 2, v0
    s_waitcnt lgkmcnt(0)
    v_mov_b32 v3, s5
    v_add_co_u32 v2, vcc, s4, v1
    v_addc_co_u32 v3, vcc, 0, v3, vcc
    v_mov_b32 v4, s6
    v_mov_b32 v5, s7
    v_cmp_eq_u32 vcc, s8, v0
    v_cndmask_b32 v2, v2, v4, vcc
    v_cndmask_b32 v3, v3, v5, vcc
    v_mov_b32 v6, 0x1234
    global_store_dword v[2:3], v6, off
    s_endpgm
.Lstore_lane_end:
.size store_lane, .Lstore_lane_end-store_lane

// illegal(): a word gfx90a does not decode (SOPP opcode 0x1f), which
// llvm-objdump-19 lists as `.long 0xbf9f0000`.
.globl illegal
.p2align 8
.type illegal,@function
illegal:
    s_nop 0
    .long 0xbf9f0000
    s_endpgm
.Lillegal_end:
.size illegal, .Lillegal_end-illegal

.rodata
.p2align 6
.amdhsa_kernel spin
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_next_free_vgpr 8
    .amdhsa_next_free_sgpr 16
    .amdhsa_accum_offset 8
.end_amdhsa_kernel

.p2align 6
.amdhsa_kernel store_lane
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_next_free_vgpr 8
    .amdhsa_next_free_sgpr 16
    .amdhsa_accum_offset 8
.end_amdhsa_kernel

.p2align 6
.amdhsa_kernel illegal
    .amdhsa_user_sgpr_kernarg_segment_ptr 1
    .amdhsa_next_free_vgpr 8
    .amdhsa_next_free_sgpr 16
    .amdhsa_accum_offset 8
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.kernels:
  - .name: spin
    .symbol: spin.kd
    .kernarg_segment_size: 8
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 16
    .vgpr_count: 8
    .max_flat_workgroup_size: 1024
    .args:
      - { .size: 8, .offset: 0, .value_kind: global_buffer, .address_space: global }
  - .name: store_lane
    .symbol: store_lane.kd
    .kernarg_segment_size: 24
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 16
    .vgpr_count: 8
    .max_flat_workgroup_size: 1024
    .args:
      - { .size: 8, .offset: 0, .value_kind: global_buffer, .address_space: global }
      - { .size: 8, .offset: 8, .value_kind: global_buffer, .address_space: global }
      - { .size: 4, .offset: 16, .value_kind: by_value }
  - .name: illegal
    .symbol: illegal.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 16
    .vgpr_count: 8
    .max_flat_workgroup_size: 1024
    .args: []
...
.end_amdgpu_metadata
