//! Per-opcode tests: tiny kernels assembled with llvm-mc-19 at test time,
//! patched into a fixture's kernel body, run on one wave of 64 lanes; the
//! expected per-lane results are hand-computed from the ISA's semantics.
//!
//! Harness: v0 holds the lane id; the body leaves a 64-bit result in v[1:2]
//! (both start at 0), which is stored to out[lane]. gfx90a wants VGPR
//! tuples even-aligned, so bodies compute pairs in v[6:7] / v[8:9] and copy.

mod common;

use common::asm::*;
use common::*;
use inlay_codeobj::CodeObject;
use inlay_vgpu::kernarg::Args;
use inlay_vgpu::Device;

fn f32b(x: f32) -> u64 {
    x.to_bits() as u64
}

#[test]
fn salu() {
    let dev = Device::new();
    // Carry out of s_add_u32 lands in SCC.
    check(&dev, "s_mov_b32 s10, 0xffffffff\ns_add_u32 s11, s10, 2\ns_cselect_b32 s12, 1, 0\nv_mov_b32 v1, s11\nv_mov_b32 v2, s12", |_| 1 | 1 << 32);
    // Borrow of s_sub_u32.
    check(
        &dev,
        "s_sub_u32 s11, 1, 2\ns_cselect_b32 s12, 1, 0\nv_mov_b32 v1, s11\nv_mov_b32 v2, s12",
        |_| 0xffff_ffff | 1 << 32,
    );
    // s_bfe_i64: width 4 at offset 12 of 0xf000 is 0b1111, sign-extended.
    check(&dev, "s_mov_b64 s[10:11], 0xf000\ns_bfe_i64 s[12:13], s[10:11], 0x4000c\nv_mov_b32 v1, s12\nv_mov_b32 v2, s13", |_| u64::MAX);
    check(
        &dev,
        "s_mov_b32 s10, 0x12345678\ns_bfe_u32 s11, s10, 0x80008\nv_mov_b32 v1, s11",
        |_| 0x56,
    );
    check(
        &dev,
        "s_lshl_b64 s[10:11], 1, 40\nv_mov_b32 v1, s10\nv_mov_b32 v2, s11",
        |_| 1 << 40,
    );
    check(
        &dev,
        "s_ashr_i32 s10, 0x80000000, 4\nv_mov_b32 v1, s10",
        |_| 0xf800_0000,
    );
    check(
        &dev,
        "s_bcnt1_i32_b64 s10, -1\ns_ff1_i32_b32 s11, 0x100\nv_mov_b32 v1, s10\nv_mov_b32 v2, s11",
        |_| 64 | 8 << 32,
    );
    check(
        &dev,
        "s_flbit_i32_b32 s10, 0x100\ns_brev_b32 s11, 1\nv_mov_b32 v1, s10\nv_mov_b32 v2, s11",
        |_| 23 | 0x8000_0000 << 32,
    );
    check(
        &dev,
        "s_mul_hi_u32 s10, -1, -1\ns_mul_i32 s11, -3, 7\nv_mov_b32 v1, s10\nv_mov_b32 v2, s11",
        |_| 0xffff_fffe | ((-21i32) as u32 as u64) << 32,
    );
    check(
        &dev,
        "s_min_i32 s10, -5, 3\ns_max_u32 s11, -5, 3\nv_mov_b32 v1, s10\nv_mov_b32 v2, s11",
        |_| 0xffff_fffb | 0xffff_fffb << 32,
    );
    // s_cmp + conditional branch: taken skips the first move.
    check(
        &dev,
        "s_cmp_lt_i32 -1, 1\ns_cbranch_scc1 1\nv_mov_b32 v1, 5\nv_add_u32 v1, v1, 3",
        |_| 3,
    );
    check(
        &dev,
        "s_cmp_lt_u32 -1, 1\ns_cbranch_scc1 1\nv_mov_b32 v1, 5\nv_add_u32 v1, v1, 3",
        |_| 8,
    );
    // Hardware registers: MODE round-trips a field written by s_setreg.
    check(&dev, "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 3\ns_getreg_b32 s10, hwreg(HW_REG_MODE, 4, 2)\nv_mov_b32 v1, s10", |_| 3);
    // FP_DENORM = 0 flushes f32 denormals: 2^-126 · 0.5 is 0 instead of 2^-127.
    check(&dev, "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 0\ns_mov_b32 s10, 0x800000\nv_mul_f32 v1, 0.5, s10", |_| 0);
    check(&dev, "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 3\ns_mov_b32 s10, 0x800000\nv_mul_f32 v1, 0.5, s10", |_| 0x40_0000);
    // s_getpc / s_setpc: jump over an 8-byte v_mov with a literal.
    check(&dev, "s_getpc_b64 s[10:11]\ns_add_u32 s10, s10, 20\ns_addc_u32 s11, s11, 0\ns_setpc_b64 s[10:11]\nv_mov_b32 v1, 99\nv_mov_b32 v1, 7", |_| 7);
}

#[test]
fn valu_integer() {
    let dev = Device::new();
    // Carry chain: lane 0 has no carry, every other lane wraps.
    check(
        &dev,
        "v_add_co_u32 v1, vcc, -1, v0\nv_addc_co_u32 v2, vcc, 0, 0, vcc",
        |l| {
            if l == 0 {
                0xffff_ffff
            } else {
                (l - 1) | 1 << 32
            }
        },
    );
    check(
        &dev,
        "s_mov_b32 s10, 0x80000001\nv_mul_hi_u32 v1, v0, s10\nv_mul_lo_u32 v2, v0, s10",
        |l| {
            let p = l * 0x8000_0001;
            (p >> 32) | (p & 0xffff_ffff) << 32
        },
    );
    // l·(2^32 − 1) + l = l·2^32.
    check(&dev, "s_mov_b32 s10, -1\nv_mov_b32 v8, v0\nv_mov_b32 v9, 0\nv_mad_u64_u32 v[6:7], s[20:21], v0, s10, v[8:9]\nv_mov_b32 v1, v6\nv_mov_b32 v2, v7", |l| l << 32);
    check(
        &dev,
        "v_lshl_add_u32 v1, v0, 3, 7\nv_bfe_u32 v2, v0, 1, 3",
        |l| (8 * l + 7) | ((l >> 1) & 7) << 32,
    );
    check(
        &dev,
        "s_mov_b32 s10, 5\nv_alignbit_b32 v1, s10, v0, 4",
        |l| 0x5000_0000 | l >> 4,
    );
    check(&dev, "v_mov_b32 v8, v0\nv_mov_b32 v9, 0\nv_lshlrev_b64 v[6:7], 33, v[8:9]\nv_mov_b32 v1, v6\nv_mov_b32 v2, v7", |l| l << 33);
    check(
        &dev,
        "v_sub_co_u32 v1, vcc, v0, 1\nv_cndmask_b32 v2, 0, 1, vcc",
        |l| (l.wrapping_sub(1) & 0xffff_ffff) | ((l == 0) as u64) << 32,
    );
    check(
        &dev,
        "v_mbcnt_lo_u32_b32 v1, -1, 0\nv_mbcnt_hi_u32_b32 v1, -1, v1",
        |l| l,
    );
    // mbcnt over a sparse mask: lanes below l with bit set in 0xaaaa...
    check(
        &dev,
        "s_mov_b32 s10, 0xaaaaaaaa\nv_mbcnt_lo_u32_b32 v1, s10, 0\nv_mbcnt_hi_u32_b32 v1, s10, v1",
        |l| l / 2,
    );
    check(
        &dev,
        "v_xor_b32 v1, 0x55, v0\ns_movk_i32 s10, 0x100\nv_or3_b32 v2, v0, s10, 1",
        |l| (l ^ 0x55) | (l | 0x101) << 32,
    );
}

#[test]
fn valu_float() {
    let dev = Device::new();
    check(&dev, "v_cvt_f32_u32 v1, v0\nv_mul_f32 v1, 0.5, v1", |l| {
        f32b(l as f32 * 0.5)
    });
    check(
        &dev,
        "v_cvt_f32_u32 v1, v0\nv_fma_f32 v1, v1, v1, -1.0",
        |l| f32b((l * l) as f32 - 1.0),
    );
    // Output modifier mul:2: ignored while MODE.IEEE is set (the kernel's
    // default) or output denormals are kept (the ISA document: "output
    // modifiers are ignored if the IEEE mode bit is set"; LLVM's
    // SIFoldOperands: "omod is ignored by hardware if IEEE bit is
    // enabled"), applied once both are off (MODE[9:4] = 0x1d: IEEE clear,
    // DX10 clamp, f64 denormals kept, f32 output denormals flushed).
    check(
        &dev,
        "v_cvt_f32_u32 v1, v0\nv_add_f32_e64 v1, v1, v1 mul:2",
        |l| f32b(2.0 * l as f32),
    );
    check(
        &dev,
        "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 6), 0x1d\n\
         v_cvt_f32_u32 v1, v0\nv_add_f32_e64 v1, v1, v1 mul:2",
        |l| f32b(4.0 * l as f32),
    );
    // Input modifiers.
    check(
        &dev,
        "v_cvt_f32_u32 v1, v0\nv_sub_f32_e64 v1, -v1, |v1|",
        |l| f32b(-2.0 * l as f32),
    );
    check(&dev, "v_cvt_f64_u32 v[6:7], v0\nv_add_f64 v[6:7], v[6:7], 0.5\nv_mov_b32 v1, v6\nv_mov_b32 v2, v7", |l| (l as f64 + 0.5).to_bits());
    check(&dev, "v_cvt_f64_u32 v[6:7], v0\nv_ldexp_f64 v[6:7], v[6:7], 3\nv_mov_b32 v1, v6\nv_mov_b32 v2, v7", |l| (8.0 * l as f64).to_bits());
    // SGPR exponents, one in the range of a single multiply by 2^e and two
    // outside it (2^-1030 is subnormal, 2^1100 overflows).
    check(&dev, "v_cvt_f64_u32 v[6:7], v0\ns_movk_i32 s10, 0xfc18\nv_ldexp_f64 v[6:7], v[6:7], s10\nv_mov_b32 v1, v6\nv_mov_b32 v2, v7", |l| {
        (l as f64 * f64::from_bits(23 << 52)).to_bits() // 2^-1000
    });
    check(&dev, "v_cvt_f64_u32 v[6:7], v0\ns_movk_i32 s10, 0xfbfa\nv_ldexp_f64 v[6:7], v[6:7], s10\nv_mov_b32 v1, v6\nv_mov_b32 v2, v7", |l| {
        (l as f64 * f64::from_bits(1 << 44)).to_bits() // 2^-1030
    });
    check(&dev, "v_cvt_f64_u32 v[6:7], v0\ns_movk_i32 s10, 1100\nv_ldexp_f64 v[6:7], v[6:7], s10\nv_mov_b32 v1, v6\nv_mov_b32 v2, v7", |l| {
        if l == 0 { 0.0f64 } else { f64::INFINITY }.to_bits()
    });
    // madmk: S0·K + S1; madak: S0·S1 + K (K = 3.0).
    check(&dev, "v_cvt_f32_u32 v3, v0\nv_madmk_f32 v1, v3, 0x40400000, v3\nv_madak_f32 v2, v3, v3, 0x40400000", |l| {
        let x = l as f32;
        f32b(x * 3.0 + x) | f32b(x * x + 3.0) << 32
    });
    check(&dev, "v_rcp_f32 v1, 4.0\nv_sqrt_f32 v2, 4.0", |_| {
        f32b(0.25) | f32b(2.0) << 32
    });
    check(&dev, "v_cvt_f64_i32 v[6:7], -5\nv_mul_f64 v[6:7], v[6:7], 0.5\nv_cvt_i32_f64 v1, v[6:7]\nv_mov_b32 v2, 0", |_| (-2i32) as u32 as u64);
    check(
        &dev,
        "v_cvt_f32_u32 v1, v0\nv_cvt_u32_f32 v2, -1.0\nv_max_f32 v1, 2.0, v1",
        |l| f32b((l as f32).max(2.0)),
    );
    // v_cmp_class: only lane 0 holds +0.0 (mask bit 6).
    check(&dev, "v_cvt_f64_u32 v[8:9], v0\ns_mov_b32 s10, 0x40\nv_cmp_class_f64_e64 s[20:21], v[8:9], s10\nv_cndmask_b32 v1, 0, 1, s[20:21]", |l| (l == 0) as u64);
    check(
        &dev,
        "v_cvt_f32_u32 v3, v0\nv_cmp_lt_f32 vcc, 10.0, v3\nv_cndmask_b32 v1, 0, 1, vcc",
        |l| (l > 10) as u64,
    );
}

#[test]
fn cross_lane() {
    let dev = Device::new();
    check(
        &dev,
        "v_readlane_b32 s10, v0, 37\nv_mov_b32 v1, s10",
        |_| 37,
    );
    check(
        &dev,
        "s_mov_b64 exec, 0xf0\nv_readfirstlane_b32 s10, v0\ns_mov_b64 exec, -1\nv_mov_b32 v1, s10",
        |_| 4,
    );
    check(
        &dev,
        "v_mov_b32 v1, v0\ns_mov_b32 s10, 77\nv_writelane_b32 v1, s10, 5",
        |l| if l == 5 { 77 } else { l },
    );
    // v_cmpx writes EXEC: only lanes below 10 get the move.
    check(
        &dev,
        "v_cmpx_gt_u32 vcc, 10, v0\nv_mov_b32 v1, 5\ns_mov_b64 exec, -1",
        |l| if l < 10 { 5 } else { 0 },
    );
    // DPP row_shr:1 without bound_ctrl: the first lane of each row keeps its old value.
    check(
        &dev,
        "v_mov_b32 v1, 1000\nv_mov_b32_dpp v1, v0 row_shr:1 row_mask:0xf bank_mask:0xf",
        |l| if l % 16 == 0 { 1000 } else { l - 1 },
    );
    // With bound_ctrl the out-of-row source reads as 0.
    check(&dev, "v_mov_b32 v1, 1000\nv_mov_b32_dpp v1, v0 wave_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:1", |l| l.saturating_sub(1));
    // row_bcast:15 into rows 1 and 3 only (row_mask 0xa).
    check(
        &dev,
        "v_mov_b32 v1, 1000\nv_mov_b32_dpp v1, v0 row_bcast:15 row_mask:0xa bank_mask:0xf",
        |l| match l / 16 {
            1 => 15,
            3 => 47,
            _ => 1000,
        },
    );
    check(
        &dev,
        "v_mov_b32 v1, 0\nv_add_u32_dpp v1, v0, v0 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf",
        |l| (l ^ 1) + l,
    );
    check(
        &dev,
        "v_mov_b32 v1, 0\nv_mov_b32_dpp v1, v0 row_mirror row_mask:0xf bank_mask:0xf",
        |l| l / 16 * 16 + 15 - l % 16,
    );
    // ds_bpermute pulls from lane addr/4: rotate by one.
    check(&dev, "v_add_u32 v3, 1, v0\nv_and_b32 v3, 63, v3\nv_lshlrev_b32 v3, 2, v3\nds_bpermute_b32 v1, v3, v0\ns_waitcnt lgkmcnt(0)", |l| (l + 1) % 64);
    // ds_swizzle bitmask mode: and 0x1f, or 0, xor 1 swaps neighbours.
    check(
        &dev,
        "ds_swizzle_b32 v1, v0 offset:swizzle(BITMASK_PERM,\"ppppi\")\ns_waitcnt lgkmcnt(0)",
        |l| l ^ 1,
    );
}

#[test]
fn lds() {
    let dev = Device::new();
    // Each lane writes 2 dwords 64 dwords apart with write2st64, reads back a
    // neighbour's pair with read2 (offsets in dwords).
    check_with(
        &dev,
        "v_lshlrev_b32 v3, 2, v0\n\
         v_add_u32 v4, 0x1000, v0\n\
         ds_write2st64_b32 v3, v0, v4 offset1:1\n\
         s_waitcnt lgkmcnt(0)\n\
         v_xor_b32 v5, 1, v0\n\
         v_lshlrev_b32 v5, 2, v5\n\
         ds_read2_b32 v[6:7], v5 offset1:64\n\
         s_waitcnt lgkmcnt(0)\n\
         v_mov_b32 v1, v6\n\
         v_mov_b32 v2, v7",
        1024,
        0,
        |l| (l ^ 1) | ((l ^ 1) + 0x1000) << 32,
    );
    // ds_add_rtn_u32 on one word from every lane: each lane sees the sum of
    // the lanes before it (lanes run in order), and the final value is 64·65/2.
    check_with(
        &dev,
        "v_mov_b32 v3, 0\n\
         v_add_u32 v4, 1, v0\n\
         ds_add_rtn_u32 v1, v3, v4 offset:8\n\
         s_waitcnt lgkmcnt(0)\n\
         ds_read_b32 v2, v3 offset:8\n\
         s_waitcnt lgkmcnt(0)",
        64,
        0,
        |l| (l * (l + 1) / 2) | ((64 * 65 / 2) << 32),
    );
    // Byte store and sign-extending byte load.
    check_with(
        &dev,
        "v_lshlrev_b32 v3, 2, v0\n\
         v_sub_u32 v4, 0, v0\n\
         ds_write_b8 v3, v4\n\
         s_waitcnt lgkmcnt(0)\n\
         ds_read_i8 v1, v3\n\
         ds_read_u8 v2, v3\n\
         s_waitcnt lgkmcnt(0)",
        256,
        0,
        |l| (l.wrapping_neg() as i8 as i32 as u32 as u64) | ((l.wrapping_neg() & 0xff) << 32),
    );
    // FLAT through the shared aperture reaches the same LDS.
    check_with(
        &dev,
        "v_lshlrev_b32 v3, 2, v0\n\
         ds_write_b32 v3, v0 offset:256\n\
         s_waitcnt lgkmcnt(0)\n\
         s_mov_b64 s[10:11], src_shared_base\n\
         v_add_u32 v8, 0x100, v3\n\
         v_mov_b32 v9, s11\n\
         flat_load_dword v1, v[8:9]\n\
         s_waitcnt vmcnt(0) lgkmcnt(0)",
        512,
        0,
        |l| l,
    );
}

#[test]
fn scratch() {
    let dev = Device::new();
    // scratch_store / scratch_load with a VGPR offset: per-lane private memory,
    // so every lane reads back its own value at the same offset.
    check_with(
        &dev,
        "v_mov_b32 v3, 16\n\
         v_mul_lo_u32 v4, v0, v0\n\
         scratch_store_dword v3, v4, off offset:4\n\
         scratch_load_dword v1, v3, off offset:4\n\
         s_waitcnt vmcnt(0)",
        0,
        64,
        |l| l * l,
    );
    // Private memory through the flat private aperture.
    check_with(
        &dev,
        "s_mov_b64 s[10:11], src_private_base\n\
         v_mov_b32 v8, 32\n\
         v_mov_b32 v9, s11\n\
         v_add_u32 v4, 7, v0\n\
         flat_store_dword v[8:9], v4\n\
         flat_load_dword v1, v[8:9]\n\
         s_waitcnt vmcnt(0) lgkmcnt(0)",
        0,
        64,
        |l| l + 7,
    );
}

#[test]
fn mode_starts_from_the_descriptor() {
    let dev = Device::new();
    // MODE[7:0] = rsrc1[19:12] (rounding, denormals), MODE[8] = DX10 clamp
    // (rsrc1 bit 21), MODE[9] = IEEE (rsrc1 bit 23).
    let bytes = fixture(5, "vector_add");
    let co = CodeObject::parse(&bytes).expect("parse");
    let kd = co
        .kernel("vector_add")
        .expect("kernel")
        .descriptor_file_offset as usize;
    let rsrc1 = u32::from_le_bytes(bytes[kd + 48..kd + 52].try_into().expect("4 bytes"));
    let mode = (rsrc1 >> 12 & 0xff) | (rsrc1 >> 21 & 1) << 8 | (rsrc1 >> 23 & 1) << 9;
    check(
        &dev,
        "s_getreg_b32 s10, hwreg(HW_REG_MODE, 0, 10)\nv_mov_b32 v1, s10",
        |_| mode as u64,
    );
}

#[test]
fn half_conversion_opcodes() {
    let dev = Device::new();
    // 1.0 is 0x3c00 as a half; v_cvt_f32_f16 of 0xc100 is -2.5.
    check(
        &dev,
        "v_cvt_f16_f32 v1, 1.0\ns_movk_i32 s10, 0xc100\nv_cvt_f32_f16 v2, s10",
        |_| 0x3c00 | f32b(-2.5) << 32,
    );
}

#[test]
fn packed_f32() {
    let dev = Device::new();
    // v[4:5] = (l, 100 + l), v[6:7] = (2l, 0.5) as floats.
    let setup = "v_cvt_f32_u32 v4, v0\n\
                 v_add_u32 v5, 100, v0\n\
                 v_cvt_f32_u32 v5, v5\n\
                 v_add_f32 v6, v4, v4\n\
                 v_mov_b32 v7, 0.5\n";
    let f = |x: f32| x.to_bits() as u64;
    // A 64-bit move, and a swap of halves across two sources.
    check(&dev, &format!("{setup}v_pk_mov_b32 v[8:9], v[4:5], v[4:5] op_sel:[0,1]\nv_mov_b32 v1, v8\nv_mov_b32 v2, v9"), |l| f(l as f32) | f(100.0 + l as f32) << 32);
    check(&dev, &format!("{setup}v_pk_mov_b32 v[8:9], v[4:5], v[6:7] op_sel:[1,0]\nv_mov_b32 v1, v8\nv_mov_b32 v2, v9"), |l| f(100.0 + l as f32) | f(2.0 * l as f32) << 32);
    // Lane-wise add of the pairs: (l + 2l, 100 + l + 0.5).
    check(
        &dev,
        &format!("{setup}v_pk_add_f32 v[8:9], v[4:5], v[6:7]\nv_mov_b32 v1, v8\nv_mov_b32 v2, v9"),
        |l| f(3.0 * l as f32) | f(100.5 + l as f32) << 32,
    );
    // fma with selection and negation: lo = -(v5)·v6 + v6 ... per op_sel:
    // lo: src0 hi half (100+l) negated, src1 lo (2l), src2 lo (2l);
    // hi: src0 lo (l), src1 hi (0.5) negated, src2 hi (0.5).
    check(&dev, &format!("{setup}v_pk_fma_f32 v[8:9], v[4:5], v[6:7], v[6:7] op_sel:[1,0,0] op_sel_hi:[0,1,1] neg_lo:[1,0,0] neg_hi:[0,1,0]\nv_mov_b32 v1, v8\nv_mov_b32 v2, v9"), |l| {
        let lf = l as f32;
        f((-(100.0 + lf)).mul_add(2.0 * lf, 2.0 * lf)) | f(lf.mul_add(-0.5, 0.5)) << 32
    });
}

#[test]
fn sdwa() {
    let dev = Device::new();
    // v3 = 0x80 + lane in byte 1, 0x7f in byte 0; v4 = 0x1234_0000 + lane.
    let setup = "v_lshlrev_b32 v3, 8, v0\n\
                 v_add_u32 v3, 0x807f, v3\n\
                 v_add_u32 v4, 0x12340000, v0\n\
                 v_mov_b32 v1, 0xaaaaaaaa\n";
    // Byte 1 of v3 (0x80 + l) sign-extended plus word 1 of v4 (0x1234),
    // written to word 0 of v1 with the upper word preserved.
    check(&dev, &format!("{setup}v_add_u32_sdwa v1, v3, v4 dst_sel:WORD_0 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_1 src1_sel:WORD_1\nv_mov_b32 v2, 0"), |l| {
        let b = (0x80 + l) as u8 as u32 as u64; // zero-extended: no sext modifier
        0xaaaa_0000 | ((b + 0x1234) & 0xffff)
    });
    check(&dev, &format!("{setup}v_add_u32_sdwa v1, sext(v3), v4 dst_sel:BYTE_0 dst_unused:UNUSED_SEXT src0_sel:BYTE_1 src1_sel:BYTE_0\nv_mov_b32 v2, 0"), |l| {
        let b = (0x80 + l) as u8 as i8 as i32; // sign-extended
        let r = (b + l as i32) as u32 & 0xff;
        (r as i8 as i32 as u32) as u64
    });
    check(&dev, &format!("{setup}v_mov_b32_sdwa v1, v4 dst_sel:BYTE_2 dst_unused:UNUSED_PAD src0_sel:BYTE_0\nv_mov_b32 v2, 0"), |l| l << 16);
}

/// Initial state of a 3-D dispatch: with the descriptor patched to enable
/// workgroup IDs y and z and work-item IDs up to z, each lane stores its
/// packed work-item ID (v0 = x | y << 10 | z << 20 on gfx90a) and the
/// workgroup IDs from s6, s7, s8 at out[64 · linear workgroup + lane].
#[test]
fn three_dimensional_initial_state() {
    let dev = Device::new();
    let src = "s_load_dwordx2 s[40:41], s[4:5], 0x0\n\
               v_mbcnt_lo_u32_b32 v10, -1, 0\n\
               v_mbcnt_hi_u32_b32 v10, -1, v10\n\
               s_mul_i32 s12, s7, 2\n\
               s_add_u32 s12, s12, s6\n\
               s_mul_i32 s13, s8, 6\n\
               s_add_u32 s12, s12, s13\n\
               s_lshl_b32 s12, s12, 6\n\
               v_add_u32 v10, s12, v10\n\
               v_lshlrev_b32 v10, 3, v10\n\
               v_mov_b32 v12, v0\n\
               s_lshl_b32 s13, s7, 8\n\
               s_or_b32 s13, s13, s6\n\
               s_lshl_b32 s14, s8, 16\n\
               s_or_b32 s13, s13, s14\n\
               v_mov_b32 v13, s13\n\
               s_waitcnt lgkmcnt(0)\n\
               global_store_dwordx2 v10, v[12:13], s[40:41]\n\
               s_endpgm\n";
    let Some(code) = assemble(src) else {
        return;
    };
    let mut bytes = fixture(5, "vector_add");
    let co = CodeObject::parse(&bytes).expect("parse");
    let text = co.section(".text").expect(".text");
    let k = co.kernel("vector_add").expect("kernel");
    let off = (k.entry_address.expect("entry") - text.addr + text.offset) as usize;
    let kd = k.descriptor_file_offset as usize;
    drop(co);
    bytes[off..off + code.len()].copy_from_slice(&code);
    // rsrc2 (descriptor byte 52): workgroup ID y, z (bits 8, 9); work-item IDs x, y, z (bits 11-12 = 2).
    let mut rsrc2 = u32::from_le_bytes(bytes[kd + 52..kd + 56].try_into().expect("4"));
    rsrc2 |= 1 << 8 | 1 << 9;
    rsrc2 = (rsrc2 & !(3 << 11)) | 2 << 11;
    bytes[kd + 52..kd + 56].copy_from_slice(&rsrc2.to_le_bytes());
    let p = dev.load(&bytes).expect("load");
    // Workgroups of 4×4×4 = one wave; a 2×3×2 grid of them, the last in
    // each dimension partial: grid 7×10×5.
    let (grid, wg) = ([7u32, 10, 5], [4u32, 4, 4]);
    let out = dev.upload(&vec![0xffu8; 12 * 64 * 8]).expect("alloc");
    dev.dispatch(&p, "vector_add", grid, wg, Args::new().ptr(out).as_bytes())
        .unwrap_or_else(|f| panic!("{f}"));
    let got = dev.download_u64(out, 12 * 64).expect("read");
    for (gz, gy, gx) in
        (0..2).flat_map(|z| (0..3).flat_map(move |y| (0..2).map(move |x| (z, y, x))))
    {
        let size = [
            (grid[0] - gx * 4).min(4),
            (grid[1] - gy * 4).min(4),
            (grid[2] - gz * 4).min(4),
        ];
        let n = size[0] * size[1] * size[2];
        let base = 64 * (gx + 2 * gy + 6 * gz) as usize;
        for lane in 0..64u32 {
            let v = got[base + lane as usize];
            if lane >= n {
                assert_eq!(v, u64::MAX, "lane {lane} of ({gx},{gy},{gz}) must not run");
                continue;
            }
            // Work-items are numbered x fastest within the (partial) workgroup.
            let (x, y, z) = (
                lane % size[0],
                lane / size[0] % size[1],
                lane / (size[0] * size[1]),
            );
            let want = (x | y << 10 | z << 20) as u64 | ((gx | gy << 8 | gz << 16) as u64) << 32;
            assert_eq!(v, want, "lane {lane} of workgroup ({gx},{gy},{gz})");
        }
    }
}

/// clang's correctly rounded f32 division (div_scale, rcp, Newton steps,
/// div_fmas, div_fixup) gives exactly the IEEE quotient.
const FDIV: &str = "v_div_scale_f32 v5, s[20:21], v4, v4, v3\n\
                    v_div_scale_f32 v6, vcc, v3, v4, v3\n\
                    v_rcp_f32 v7, v5\n\
                    v_fma_f32 v8, -v5, v7, 1.0\n\
                    v_fma_f32 v7, v8, v7, v7\n\
                    v_mul_f32 v8, v6, v7\n\
                    v_fma_f32 v9, -v5, v8, v6\n\
                    v_fma_f32 v8, v9, v7, v8\n\
                    v_fma_f32 v5, -v5, v8, v6\n\
                    v_div_fmas_f32 v5, v5, v7, v8\n\
                    v_div_fixup_f32 v1, v5, v4, v3";

#[test]
fn f32_division_sequence() {
    let dev = Device::new();
    let body = format!(
        "v_add_u32 v3, 1, v0\n\
         v_cvt_f32_u32 v3, v3\n\
         v_mul_f32 v3, 0x3faf5c29, v3\n\
         v_cvt_f32_u32 v4, v0\n\
         v_mul_f32 v4, 0x3e99999a, v4\n\
         v_subrev_f32 v4, 0x40e1999a, v4\n\
         {FDIV}"
    );
    check(&dev, &body, |l| {
        let n = (l + 1) as f32 * f32::from_bits(0x3faf_5c29); // 1.37
        let d = l as f32 * f32::from_bits(0x3e99_999a) - f32::from_bits(0x40e1_999a); // 0.3, 7.05
        (n / d).to_bits() as u64
    });
    // Zeros: 0/0 is the ISA's default NaN (v_div_fixup: 0xffc00000, negative),
    // 1/0 is +inf, 0/2 is +0, -1/0 is -inf.
    let special = format!(
        "v_mov_b32 v3, 0\n\
         v_mov_b32 v4, 0\n\
         v_cmp_eq_u32 vcc, 1, v0\n\
         v_cndmask_b32 v3, v3, 1.0, vcc\n\
         v_cmp_eq_u32 vcc, 2, v0\n\
         v_cndmask_b32 v4, v4, 2.0, vcc\n\
         v_cmp_eq_u32 vcc, 3, v0\n\
         v_cndmask_b32 v3, v3, -1.0, vcc\n\
         {FDIV}"
    );
    check(&dev, &special, |l| match l {
        1 => f32::INFINITY.to_bits() as u64,
        2 => 0,
        3 => f32::NEG_INFINITY.to_bits() as u64,
        _ => 0xffc0_0000,
    });
}

/// Scalar memory atomics (instrumentation hooks count with them): one
/// read-modify-write per wave; with glc, sdata receives the old value.
#[test]
fn scalar_atomics() {
    let dev = Device::new();
    // out[0] = 0: +7 returns 0, then +(3 + 2^32) returns 7 in s[22:23].
    // out[1] (byte 8) = 0: +9 returns 0; +4 without glc leaves s25 = 4;
    // swap 2 returns 13 in s26. v1 = s22 + s25 = 11, v2 = s26 = 13.
    let body = "s_mov_b32 s20, 7\n s_mov_b32 s21, 0\n\
                s_atomic_add_x2 s[20:21], s[40:41], 0x0 glc\n\
                s_mov_b32 s22, 3\n s_mov_b32 s23, 1\n\
                s_atomic_add_x2 s[22:23], s[40:41], 0x0 glc\n\
                s_mov_b32 s24, 9\n s_atomic_add s24, s[40:41], 0x8 glc\n\
                s_mov_b32 s25, 4\n s_atomic_add s25, s[40:41], 0x8\n\
                s_mov_b32 s26, 2\n s_atomic_swap s26, s[40:41], 0x8 glc\n\
                s_waitcnt lgkmcnt(0)\n\
                s_add_u32 s27, s22, s25\n\
                v_mov_b32 v1, s27\n v_mov_b32 v2, s26";
    check(&dev, body, |_| 13 << 32 | 11);
}

/// SGPRs saved in lanes of a VGPR with constant lane selects and read back
/// (how instrumentation borrows SGPRs): v_writelane/v_readlane ignore EXEC.
#[test]
fn lanes_hold_sgprs_with_constant_selects() {
    let dev = Device::new();
    let body = "s_mov_b32 s20, 11\n s_mov_b32 s21, 22\n s_mov_b32 s22, 33\n\
                s_mov_b64 s[24:25], exec\n s_mov_b64 exec, 0\n\
                v_writelane_b32 v9, s20, 0\n v_writelane_b32 v9, s21, 1\n v_writelane_b32 v9, s22, 2\n\
                s_mov_b32 s20, 0\n s_mov_b32 s21, 0\n s_mov_b32 s22, 0\n\
                v_readlane_b32 s22, v9, 2\n v_readlane_b32 s21, v9, 1\n v_readlane_b32 s20, v9, 0\n\
                s_mov_b64 exec, s[24:25]\n\
                s_lshl_b32 s21, s21, 8\n s_lshl_b32 s22, s22, 16\n\
                s_or_b32 s20, s20, s21\n s_or_b32 s20, s20, s22\n\
                v_mov_b32 v1, s20";
    check(&dev, body, |_| 11 | 22 << 8 | 33 << 16);
}
