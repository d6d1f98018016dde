//! Tests for the instructions added so that every mnemonic in the gfx90a
//! code objects of Debian's librocsparse0 predecodes to an operation (see
//! `examples/coverage.rs`). Same harness as `opcodes.rs`: a tiny kernel
//! assembled with llvm-mc-19 at test time runs on one wave; the expected
//! per-lane values are computed here from the ISA's definitions.
//!
//! Harness: v0 holds the lane id; the body leaves a 64-bit result in v[1:2],
//! which is stored to out[lane].

#![allow(dead_code)]

use crate::common;

use common::asm::*;
use inlay_vgpu::Device;

fn pair(lo: u32, hi: u32) -> u64 {
    lo as u64 | (hi as u64) << 32
}

#[test]
fn scalar_bit_compares() {
    let dev = Device::new();
    // SCC = (S0 >> S1[4:0]) & 1 == 1 (bitcmp1) or == 0 (bitcmp0); each
    // outcome lands in one bit of v1.
    let v: u32 = 0x8000_0005;
    let body = "s_mov_b32 s10, 0x80000005\n\
                s_bitcmp1_b32 s10, 2\ns_cselect_b32 s12, 1, 0\n\
                s_bitcmp1_b32 s10, 1\ns_cselect_b32 s13, 2, 0\n\
                s_bitcmp0_b32 s10, 1\ns_cselect_b32 s14, 4, 0\n\
                s_bitcmp0_b32 s10, 31\ns_cselect_b32 s15, 8, 0\n\
                s_bitcmp1_b32 s10, 63\ns_cselect_b32 s16, 16, 0\n\
                s_or_b32 s12, s12, s13\ns_or_b32 s12, s12, s14\n\
                s_or_b32 s12, s12, s15\ns_or_b32 s12, s12, s16\n\
                s_mov_b32 s20, 0\ns_mov_b32 s21, 0x100\n\
                s_bitcmp1_b64 s[20:21], 40\ns_cselect_b32 s17, 1, 0\n\
                s_bitcmp0_b64 s[20:21], 40\ns_cselect_b32 s18, 2, 0\n\
                s_bitcmp0_b64 s[20:21], 39\ns_cselect_b32 s19, 4, 0\n\
                s_or_b32 s17, s17, s18\ns_or_b32 s17, s17, s19\n\
                v_mov_b32 v1, s12\nv_mov_b32 v2, s17";
    let bit = |x: u64, n: u32| x >> n & 1;
    let lo = bit(v as u64, 2)
        | bit(v as u64, 1) << 1
        | (1 - bit(v as u64, 1)) << 2
        | (1 - bit(v as u64, 31)) << 3
        // Only bits 4:0 of S1 count: 63 selects bit 31.
        | bit(v as u64, 63 & 31) << 4;
    let w: u64 = 1 << 40;
    let hi = bit(w, 40) | (1 - bit(w, 40)) << 1 | (1 - bit(w, 39)) << 2;
    check(&dev, body, |_| lo | hi << 32);
}

#[test]
fn cache_invalidates_are_no_ops() {
    let dev = Device::new();
    check(
        &dev,
        "v_mov_b32 v1, v0\nbuffer_wbinvl1_vol\nbuffer_wbinvl1\nv_mov_b32 v2, 7",
        |l| l | 7 << 32,
    );
}

/// x = lane * 0x13579 + 0xfff0 and y = lane * 0x2b3 + 0x12340005 (both with
/// high halves the 16-bit operations must ignore) in v3 and v4.
const XY: &str = "s_mov_b32 s10, 0x13579\ns_mov_b32 s11, 0xfff0\n\
                  v_mul_lo_u32 v3, v0, s10\nv_add_u32 v3, s11, v3\n\
                  s_mov_b32 s10, 0x2b3\ns_mov_b32 s11, 0x12340005\n\
                  v_mul_lo_u32 v4, v0, s10\nv_add_u32 v4, s11, v4\n";

fn xy(l: u64) -> (u32, u32) {
    let l = l as u32;
    (
        l.wrapping_mul(0x13579).wrapping_add(0xfff0),
        l.wrapping_mul(0x2b3).wrapping_add(0x1234_0005),
    )
}

#[test]
fn sixteen_bit_integer_ops() {
    let dev = Device::new();
    // Operands are the low 16 bits; results are zero-extended to 32 bits.
    type Op = fn(u32, u32) -> u32;
    let cases: [(&str, &str, Op, Op); 6] = [
        (
            "v_add_u16",
            "v_sub_u16",
            |x, y| (x as u16).wrapping_add(y as u16) as u32,
            |x, y| (x as u16).wrapping_sub(y as u16) as u32,
        ),
        (
            "v_mul_lo_u16",
            "v_subrev_u16",
            |x, y| (x as u16).wrapping_mul(y as u16) as u32,
            |x, y| (y as u16).wrapping_sub(x as u16) as u32,
        ),
        // Shifts take the amount from src0 bits 3:0 (here the lane id in v0).
        (
            "v_lshlrev_b16",
            "v_lshrrev_b16",
            |n, v| ((v as u16) << (n & 15)) as u32,
            |n, v| ((v as u16) >> (n & 15)) as u32,
        ),
        (
            "v_ashrrev_i16",
            "v_min_u16",
            |n, v| ((v as i16) >> (n & 15)) as u16 as u32,
            |x, y| (x as u16).min(y as u16) as u32,
        ),
        (
            "v_max_u16",
            "v_min_i16",
            |x, y| (x as u16).max(y as u16) as u32,
            |x, y| (x as i16).min(y as i16) as u16 as u32,
        ),
        (
            "v_max_i16",
            "v_max_i16",
            |x, y| (x as i16).max(y as i16) as u16 as u32,
            |x, y| (x as i16).max(y as i16) as u16 as u32,
        ),
    ];
    for (a, b, fa, fb) in cases {
        // Shifts: amount = lane id (v0), value = x.
        let shift = a.contains("sh");
        let (sa, sb) = (
            if shift { "v0, v3" } else { "v3, v4" },
            if b.contains("sh") { "v0, v3" } else { "v3, v4" },
        );
        let body = format!("{XY}{a} v1, {sa}\n{b} v2, {sb}");
        check(&dev, &body, |l| {
            let (x, y) = xy(l);
            let (ax, ay) = if shift { (l as u32, x) } else { (x, y) };
            let (bx, by) = if b.contains("sh") {
                (l as u32, x)
            } else {
                (x, y)
            };
            pair(fa(ax, ay), fb(bx, by))
        });
    }
}

#[test]
fn unsigned_byte_to_float() {
    let dev = Device::new();
    // v3 = lane * 0x01030507: a different value in each byte.
    let setup = "s_mov_b32 s10, 0x1030507\nv_mul_lo_u32 v3, v0, s10\n";
    let x = |l: u64| (l as u32).wrapping_mul(0x0103_0507);
    let byte = |v: u32, k: u32| ((v >> (8 * k)) as u8 as f32).to_bits();
    check(
        &dev,
        &format!("{setup}v_cvt_f32_ubyte0 v1, v3\nv_cvt_f32_ubyte1 v2, v3"),
        |l| pair(byte(x(l), 0), byte(x(l), 1)),
    );
    check(
        &dev,
        &format!("{setup}v_cvt_f32_ubyte2 v1, v3\nv_cvt_f32_ubyte3 v2, v3"),
        |l| pair(byte(x(l), 2), byte(x(l), 3)),
    );
}

#[test]
fn twenty_four_bit_multiplies() {
    let dev = Device::new();
    // 24-bit operands taken from the low bits (signed: bit 23 is the sign).
    let i24 = |v: u32| ((v << 8) as i32) >> 8;
    let body = format!("{XY}v_mad_i32_i24 v1, v3, v4, v0\nv_mul_hi_u32_u24 v2, v3, v4");
    check(&dev, &body, |l| {
        let (x, y) = xy(l);
        let mad = (i24(x) as i64 * i24(y) as i64 + l as i64) as u32;
        let hi = (((x & 0xff_ffff) as u64 * (y & 0xff_ffff) as u64) >> 32) as u32;
        pair(mad, hi)
    });
    let body = format!("{XY}v_mul_hi_i32_i24 v1, v3, v4\nv_mov_b32 v2, 0");
    check(&dev, &body, |l| {
        let (x, y) = xy(l);
        pair(((i24(x) as i64 * i24(y) as i64) >> 32) as u32, 0)
    });
}

#[test]
fn clamped_unsigned_add_and_sub_saturate() {
    let dev = Device::new();
    let body = "s_mov_b32 s10, 10\ns_mov_b32 s11, 0xffffffc0\n\
                v_sub_u32_e64 v1, v0, s10 clamp\nv_add_u32_e64 v2, v0, s11 clamp";
    check(&dev, body, |l| {
        let l = l as u32;
        pair(l.saturating_sub(10), l.saturating_add(0xffff_ffc0))
    });
    let body = "s_mov_b32 s10, 10\nv_subrev_u32_e64 v1, v0, s10 clamp\nv_mov_b32 v2, 0";
    check(&dev, body, |l| pair(10u32.saturating_sub(l as u32), 0));
}

#[test]
fn sdwa_compares() {
    let dev = Device::new();
    // src0 byte 0 of (lane * 0x10101 + 0x200): the lane id; src1 a whole dword 5
    // (its low 16 bits for a u16 compare).
    let setup = "s_mov_b32 s10, 0x10101\nv_mul_lo_u32 v3, v0, s10\n\
                 v_add_u32 v3, 0x200, v3\nv_mov_b32 v4, 0x10005\n";
    let body = format!(
        "{setup}v_cmp_ne_u16_sdwa s[10:11], v3, v4 src0_sel:BYTE_0 src1_sel:DWORD\n\
         v_cndmask_b32_e64 v1, 0, 1, s[10:11]\n\
         v_cmp_eq_u16_sdwa vcc, v3, v4 src0_sel:BYTE_0 src1_sel:WORD_0\n\
         v_cndmask_b32_e64 v2, 0, 1, vcc"
    );
    check(&dev, &body, |l| {
        let x = (l as u32).wrapping_mul(0x10101).wrapping_add(0x200) & 0xff;
        pair((x as u16 != 5) as u32, (x as u16 == 5) as u32)
    });
    // u32 compare of a sign-extended byte: 0xff.. for lanes whose byte 1 has bit 7.
    let body = "s_mov_b32 s10, 0x1200\nv_mul_lo_u32 v3, v0, s10\nv_mov_b32 v4, -1\n\
                v_cmp_ne_u32_sdwa s[12:13], sext(v3), v4 src0_sel:BYTE_1 src1_sel:DWORD\n\
                v_cndmask_b32_e64 v1, 0, 1, s[12:13]\nv_mov_b32 v2, 0";
    check(&dev, body, |l| {
        let b = ((l as u32).wrapping_mul(0x1200) >> 8) as u8 as i8 as i32 as u32;
        pair((b != u32::MAX) as u32, 0)
    });
}

/// LDS at byte lane * 8 of a 512-byte LDS; v5 holds that address.
const LDS_ADDR: &str = "v_lshlrev_b32 v5, 3, v0\n";

#[test]
fn lds_float_adds() {
    let dev = Device::new();
    // lds32[2 * lane] = lane as f32; ds_add_rtn_f32 of 1.5 returns the old value.
    let body = format!(
        "{LDS_ADDR}v_cvt_f32_u32 v6, v0\nds_write_b32 v5, v6\n\
         v_mov_b32 v7, 1.5\nds_add_rtn_f32 v1, v5, v7\nds_read_b32 v2, v5\ns_waitcnt lgkmcnt(0)"
    );
    let Some(got) = run_body_with(&dev, &body, 512, 0) else {
        return;
    };
    for (l, g) in got.iter().enumerate() {
        let old = l as f32;
        assert_eq!(*g, pair(old.to_bits(), (old + 1.5).to_bits()), "lane {l}");
    }
    // lds64[lane] = lane as f64; ds_add_f64 of 0.25; read back.
    let body = format!(
        "{LDS_ADDR}v_cvt_f64_u32 v[6:7], v0\nds_write_b64 v5, v[6:7]\n\
         v_mov_b32 v8, 0\nv_mov_b32 v9, 0x3fd00000\nds_add_f64 v5, v[8:9]\n\
         ds_read_b64 v[10:11], v5\ns_waitcnt lgkmcnt(0)\nv_mov_b32 v1, v10\nv_mov_b32 v2, v11"
    );
    let Some(got) = run_body_with(&dev, &body, 512, 0) else {
        return;
    };
    for (l, g) in got.iter().enumerate() {
        assert_eq!(*g, (l as f64 + 0.25).to_bits(), "lane {l}");
    }
}

#[test]
fn lds_compare_store() {
    let dev = Device::new();
    // ds_cmpst: DS[A] = (DS[A] == data0) ? data1 : DS[A]; returns the old value.
    let body = format!(
        "{LDS_ADDR}ds_write_b32 v5, v0\nv_mov_b32 v6, 3\nv_add_u32 v7, 100, v0\n\
         ds_cmpst_rtn_b32 v1, v5, v6, v7\nds_read_b32 v2, v5\ns_waitcnt lgkmcnt(0)"
    );
    let Some(got) = run_body_with(&dev, &body, 512, 0) else {
        return;
    };
    for (l, g) in got.iter().enumerate() {
        let l = l as u32;
        assert_eq!(*g, pair(l, if l == 3 { 103 } else { l }), "lane {l}");
    }
    // 64-bit: the old value {lane, 7}; compare with {5, 7}, store {lane, 9}.
    let body = format!(
        "{LDS_ADDR}v_mov_b32 v6, v0\nv_mov_b32 v7, 7\nds_write_b64 v5, v[6:7]\n\
         v_mov_b32 v8, 5\nv_mov_b32 v9, 7\nv_mov_b32 v10, v0\nv_mov_b32 v11, 9\n\
         ds_cmpst_rtn_b64 v[12:13], v5, v[8:9], v[10:11]\nds_read_b64 v[14:15], v5\n\
         s_waitcnt lgkmcnt(0)\nv_mov_b32 v1, v12\nv_mov_b32 v2, v15"
    );
    let Some(got) = run_body_with(&dev, &body, 512, 0) else {
        return;
    };
    for (l, g) in got.iter().enumerate() {
        let l = l as u32;
        // v1 = old low word (the lane), v2 = new high word (9 where it matched).
        assert_eq!(*g, pair(l, if l == 5 { 9 } else { 7 }), "lane {l}");
    }
}

#[test]
fn lds_integer_atomics() {
    let dev = Device::new();
    // Every lane updates slot lane / 2 (two lanes per slot): the result of
    // both updates, in either order, is the same for these operations.
    let body = "v_lshrrev_b32 v5, 1, v0\nv_lshlrev_b32 v5, 3, v5\n\
                v_mov_b32 v6, 0x40\nv_mov_b32 v7, 0\nds_write_b64 v5, v[6:7]\n\
                v_sub_u32 v8, 40, v0\n\
                ds_min_i32 v5, v8\n\
                ds_read_b32 v1, v5\ns_waitcnt lgkmcnt(0)\nv_mov_b32 v2, 0";
    check_lds(&dev, body, |l| {
        let s = l / 2;
        let a = 40i32 - (2 * s) as i32;
        let b = 40i32 - (2 * s + 1) as i32;
        pair(0x40i32.min(a).min(b) as u32, 0)
    });
    let body = "v_lshrrev_b32 v5, 1, v0\nv_lshlrev_b32 v5, 3, v5\n\
                v_mov_b32 v6, 0x100\nv_mov_b32 v7, 1\nds_write_b64 v5, v[6:7]\n\
                v_mov_b32 v8, v0\nv_mov_b32 v9, 1\nds_min_u64 v5, v[8:9]\n\
                ds_read_b64 v[10:11], v5\ns_waitcnt lgkmcnt(0)\n\
                v_mov_b32 v1, v10\nv_mov_b32 v2, v11";
    check_lds(&dev, body, |l| {
        let s = l / 2;
        (0x1_0000_0100u64)
            .min((1 << 32) | (2 * s))
            .min((1 << 32) | (2 * s + 1))
    });
    let body = "v_lshrrev_b32 v5, 1, v0\nv_lshlrev_b32 v5, 3, v5\n\
                v_mov_b32 v6, 0x10000\nv_mov_b32 v7, 0xffffffff\nds_write_b64 v5, v[6:7]\n\
                v_lshlrev_b32 v8, v0, 1\nds_or_b32 v5, v8\n\
                v_mov_b32 v10, v0\nv_mov_b32 v11, 0\nds_add_u64 v5, v[10:11]\n\
                ds_read_b64 v[12:13], v5\ns_waitcnt lgkmcnt(0)\n\
                v_mov_b32 v1, v12\nv_mov_b32 v2, v13";
    check_lds(&dev, body, |l| {
        let s = l / 2;
        let (a, b) = (2 * s, 2 * s + 1);
        // or of the low dwords, then a 64-bit add of both lane ids.
        let lo = 0x10000u64
            | 1u64.wrapping_shl(a as u32 & 31) as u32 as u64
            | 1u64.wrapping_shl(b as u32 & 31) as u32 as u64;
        (lo | 0xffff_ffff << 32).wrapping_add(a + b)
    });
}

fn check_lds(dev: &Device, body: &str, want: impl Fn(u64) -> u64) {
    let Some(got) = run_body_with(dev, body, 512, 0) else {
        return;
    };
    for (l, g) in got.iter().enumerate() {
        let w = want(l as u64);
        assert_eq!(*g, w, "lane {l}: got {g:#x}, want {w:#x} for\n{body}");
    }
}

#[test]
fn ldexp_f64_in_and_out_of_the_fast_range() {
    let dev = Device::new();
    // 1.0 · 2^e for e = 40·lane − 1280 (−1280..=1240): beyond ±1000 in some
    // lanes, overflowing, subnormal and underflowing to zero in others.
    let body = "v_mov_b32 v6, 0\nv_mov_b32 v7, 0x3ff00000\n\
                s_mov_b32 s10, 40\ns_movk_i32 s11, 0x500\n\
                v_mul_lo_u32 v8, v0, s10\nv_subrev_u32 v8, s11, v8\n\
                v_ldexp_f64 v[10:11], v[6:7], v8\nv_mov_b32 v1, v10\nv_mov_b32 v2, v11";
    check(&dev, body, |l| {
        let e = 40 * l as i64 - 1280;
        let v = if e > 1023 {
            f64::INFINITY
        } else if e >= -1022 {
            f64::from_bits(((e + 1023) as u64) << 52)
        } else if e >= -1074 {
            f64::from_bits(1u64 << (e + 1074))
        } else {
            0.0
        };
        v.to_bits()
    });
    // A constant exponent: lane / 8, exactly.
    let body = "v_cvt_f64_u32 v[6:7], v0\nv_ldexp_f64 v[10:11], v[6:7], -3\n\
                v_mov_b32 v1, v10\nv_mov_b32 v2, v11";
    check(&dev, body, |l| (l as f64 / 8.0).to_bits());
}
