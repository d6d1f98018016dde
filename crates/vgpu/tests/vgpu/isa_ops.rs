//! Per-opcode tests for the rest of the mnemonics of `tests/mnemonics.txt`
//! (the gfx90a fixtures and librocsparse0), grouped by unit. Each kernel
//! body is assembled with llvm-mc-19 at test time and run on one workgroup;
//! per-lane inputs come from memory (v[4:11]), results from v20.. (see
//! [`common::asm::Lanes`]), and every expected value is computed here from
//! the ISA's definition of the operation, in plain Rust.

// The unordered compares are defined as negated ordered ones.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use crate::common;

use common::asm::*;
use inlay_vgpu::Device;

/// A reproducible 32-bit value for input `j` of lane `l` (splitmix64).
fn rnd(l: usize, j: u32) -> u32 {
    let mut z = ((l as u64) << 8 | j as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as u32
}

fn random(l: usize) -> [u32; 8] {
    std::array::from_fn(|j| rnd(l, j as u32))
}

fn lo(x: u64) -> u32 {
    x as u32
}
fn hi(x: u64) -> u32 {
    (x >> 32) as u32
}
fn f(x: f32) -> u32 {
    x.to_bits()
}

// ---------------------------------------------------------------- SALU

/// Scalar cases: each line computes s12 (and s13 when it has two results)
/// and sets SCC; the results go to v20.. and the SCC bits, first case in
/// the highest bit, to the last output. Each kernel starts with `setup`.
fn scalar_cases(dev: &Device, setup: &str, cases: &[(&str, Vec<u32>, Option<bool>)]) {
    let mut start = 0;
    while start < cases.len() {
        let mut body = format!("{setup}\ns_mov_b32 s30, 0\n");
        let (mut outs, mut want, mut scc) = (0usize, Vec::new(), 0u32);
        let mut end = start;
        while end < cases.len() && outs + cases[end].1.len() < 16 {
            let (asm, vals, s) = &cases[end];
            body += asm;
            body.push('\n');
            for (k, v) in vals.iter().enumerate() {
                body += &format!("v_mov_b32 v{}, s{}\n", 20 + outs, 12 + k);
                want.push(*v);
                outs += 1;
            }
            if let Some(s) = s {
                body += "s_addc_u32 s30, s30, s30\n";
                scc = scc << 1 | *s as u32;
            }
            end += 1;
        }
        body += &format!("v_mov_b32 v{}, s30\n", 20 + outs);
        want.push(scc);
        check_lanes(dev, &Lanes::new(&body, outs + 1), random, |_, _| {
            want.clone()
        });
        start = end;
    }
}

#[test]
fn salu_arithmetic_and_logic() {
    let dev = Device::new();
    let (a, b) = (0x8000_0005u32, 0x7fff_fffdu32);
    let (ai, bi) = (a as i32, b as i32);
    let x: u64 = 0x8000_0000_0000_0001;
    let y: u64 = 0x0f0f_ff00_3c3c_00ff;
    let set = format!(
        "s_mov_b32 s10, {a:#x}\ns_mov_b32 s11, {b:#x}\n\
         s_mov_b32 s16, {:#x}\ns_mov_b32 s17, {:#x}\n\
         s_mov_b32 s18, {:#x}\ns_mov_b32 s19, {:#x}",
        lo(x),
        hi(x),
        lo(y),
        hi(y)
    );
    let p64 = |v: u64| vec![lo(v), hi(v)];
    let cases: Vec<(&str, Vec<u32>, Option<bool>)> = vec![
        // Signed overflow sets SCC.
        (
            "s_add_i32 s12, s11, s11",
            vec![b.wrapping_add(b)],
            Some(bi.checked_add(bi).is_none()),
        ),
        (
            "s_add_i32 s12, s10, s11",
            vec![a.wrapping_add(b)],
            Some(ai.checked_add(bi).is_none()),
        ),
        (
            "s_sub_i32 s12, s10, s11",
            vec![a.wrapping_sub(b)],
            Some(ai.checked_sub(bi).is_none()),
        ),
        ("s_sub_i32 s12, s11, 3", vec![b - 3], Some(false)),
        // s_subb: S0 - S1 - SCC, SCC = borrow (SCC set by the compare).
        (
            "s_cmp_eq_u32 s10, s10\ns_subb_u32 s12, 5, 7",
            vec![5u32.wrapping_sub(8)],
            Some(true),
        ),
        (
            "s_cmp_lg_u32 s10, s10\ns_subb_u32 s12, 9, 7",
            vec![2],
            Some(false),
        ),
        // SOPK: simm16 sign-extended; s_addk sets SCC on signed overflow.
        (
            "s_mov_b32 s12, 5\ns_addk_i32 s12, 0x8000",
            vec![5u32.wrapping_sub(0x8000)],
            Some(false),
        ),
        (
            "s_mov_b32 s12, 0x7fffffff\ns_addk_i32 s12, 1",
            vec![0x8000_0000],
            Some(true),
        ),
        (
            "s_mov_b32 s12, 0x10001\ns_mulk_i32 s12, 0xfffd",
            vec![(0x10001i32 * -3) as u32],
            None,
        ),
        (
            "s_mul_hi_i32 s12, s10, s11",
            vec![((ai as i64 * bi as i64) >> 32) as u32],
            None,
        ),
        (
            "s_mul_hi_i32 s12, s10, s10",
            vec![((ai as i64 * ai as i64) >> 32) as u32],
            None,
        ),
        // Bitwise: SCC = result != 0.
        ("s_not_b32 s12, s10", vec![!a], Some(true)),
        ("s_not_b32 s12, -1", vec![0], Some(false)),
        ("s_and_b32 s12, s10, s11", vec![a & b], Some(a & b != 0)),
        ("s_and_b32 s12, s10, 2", vec![a & 2], Some(false)),
        ("s_andn2_b32 s12, s10, s11", vec![a & !b], Some(a & !b != 0)),
        ("s_xor_b32 s12, s10, s11", vec![a ^ b], Some(true)),
        ("s_xor_b32 s12, s10, s10", vec![0], Some(false)),
        // Shifts take 5 (6) bits of the amount.
        ("s_lshr_b32 s12, s10, 33", vec![a >> 1], Some(true)),
        ("s_lshr_b32 s12, s10, 31", vec![a >> 31], Some(true)),
        ("s_lshr_b32 s12, 1, 1", vec![0], Some(false)),
        ("s_lshr_b64 s[12:13], s[16:17], 65", p64(x >> 1), Some(true)),
        (
            "s_lshr_b64 s[12:13], s[16:17], 63",
            p64(x >> 63),
            Some(true),
        ),
        (
            "s_ashr_i64 s[12:13], s[16:17], 4",
            p64(((x as i64) >> 4) as u64),
            Some(true),
        ),
        (
            "s_ashr_i64 s[12:13], s[18:19], 36",
            p64(((y as i64) >> 36) as u64),
            Some(true),
        ),
        // min/max: SCC = S0 was chosen.
        (
            "s_max_i32 s12, s10, s11",
            vec![ai.max(bi) as u32],
            Some(ai > bi),
        ),
        (
            "s_max_i32 s12, s11, s10",
            vec![ai.max(bi) as u32],
            Some(bi > ai),
        ),
        ("s_max_i32 s12, -7, -9", vec![-7i32 as u32], Some(true)),
        ("s_min_u32 s12, s10, s11", vec![a.min(b)], Some(a < b)),
        ("s_min_u32 s12, s11, s10", vec![a.min(b)], Some(b < a)),
        ("s_min_u32 s12, 4, 4", vec![4], Some(false)),
        // 64-bit logic.
        (
            "s_and_b64 s[12:13], s[16:17], s[18:19]",
            p64(x & y),
            Some(x & y != 0),
        ),
        ("s_and_b64 s[12:13], s[16:17], 2", p64(0), Some(false)),
        (
            "s_andn2_b64 s[12:13], s[18:19], s[16:17]",
            p64(y & !x),
            Some(true),
        ),
        (
            "s_or_b64 s[12:13], s[16:17], s[18:19]",
            p64(x | y),
            Some(true),
        ),
        ("s_or_b64 s[12:13], 0, 0", p64(0), Some(false)),
        (
            "s_orn2_b64 s[12:13], s[16:17], s[18:19]",
            p64(x | !y),
            Some(true),
        ),
        (
            "s_xor_b64 s[12:13], s[16:17], s[18:19]",
            p64(x ^ y),
            Some(true),
        ),
        (
            "s_xor_b64 s[12:13], s[18:19], s[18:19]",
            p64(0),
            Some(false),
        ),
        ("s_not_b64 s[12:13], s[16:17]", p64(!x), Some(true)),
        ("s_not_b64 s[12:13], -1", p64(0), Some(false)),
        // s_cselect_b64 by SCC (set by the compares).
        (
            "s_cmp_eq_u32 0, 0\ns_cselect_b64 s[12:13], s[16:17], s[18:19]",
            p64(x),
            Some(true),
        ),
        (
            "s_cmp_eq_u32 0, 1\ns_cselect_b64 s[12:13], s[16:17], s[18:19]",
            p64(y),
            Some(false),
        ),
    ];
    scalar_cases(&dev, &set, &cases);
}

#[test]
fn salu_compares() {
    let dev = Device::new();
    type Cmp = fn(u32, u32) -> bool;
    let ops: [(&str, Cmp); 10] = [
        ("s_cmp_eq_u32", |a, b| a == b),
        ("s_cmp_lg_u32", |a, b| a != b),
        ("s_cmp_ge_i32", |a, b| a as i32 >= b as i32),
        ("s_cmp_ge_u32", |a, b| a >= b),
        ("s_cmp_gt_i32", |a, b| a as i32 > b as i32),
        ("s_cmp_gt_u32", |a, b| a > b),
        ("s_cmp_le_i32", |a, b| a as i32 <= b as i32),
        ("s_cmp_le_u32", |a, b| a <= b),
        ("s_cmp_lt_i32", |a, b| (a as i32) < b as i32),
        ("s_cmp_lt_u32", |a, b| a < b),
    ];
    let pairs: [(u32, u32); 4] = [(0xffff_ffff, 1), (5, 5), (1, 0xffff_ffff), (3, 7)];
    let mut cases: Vec<(String, Vec<u32>, Option<bool>)> = Vec::new();
    for (op, f) in ops {
        for (a, b) in pairs {
            cases.push((
                format!("s_mov_b32 s10, {a:#x}\ns_mov_b32 s11, {b:#x}\n{op} s10, s11"),
                vec![],
                Some(f(a, b)),
            ));
        }
    }
    // 64-bit equality: the high halves must count.
    for (a, b) in [
        (1u64 << 40, 0u64),
        (7 << 33 | 5, 7 << 33 | 5),
        (5, 5 | 1 << 63),
    ] {
        for (op, r) in [("s_cmp_eq_u64", a == b), ("s_cmp_lg_u64", a != b)] {
            cases.push((
                format!(
                    "s_mov_b32 s16, {:#x}\ns_mov_b32 s17, {:#x}\ns_mov_b32 s18, {:#x}\ns_mov_b32 s19, {:#x}\n\
                     {op} s[16:17], s[18:19]",
                    lo(a),
                    hi(a),
                    lo(b),
                    hi(b)
                ),
                vec![],
                Some(r),
            ));
        }
    }
    // SOPK compares: simm16 sign-extended (i32) or zero-extended (u32).
    let k: [(&str, u32, u32, bool); 8] = [
        ("s_cmpk_eq_i32", 0xffff_8000, 0x8000, true),
        ("s_cmpk_eq_i32", 0x8000, 0x8000, false),
        ("s_cmpk_lg_i32", 0xffff_fffe, 0xfffe, false),
        ("s_cmpk_lg_i32", 3, 4, true),
        ("s_cmpk_lt_i32", 0xffff_fff0, 0xfffe, true),
        ("s_cmpk_lt_i32", 0, 0xfffe, false),
        ("s_cmpk_lt_u32", 0x9000, 0x8000, false),
        ("s_cmpk_gt_u32", 0x10000, 0xfffe, true),
    ];
    for (op, a, imm, r) in k {
        cases.push((
            format!("s_mov_b32 s10, {a:#x}\n{op} s10, {imm:#x}"),
            vec![],
            Some(r),
        ));
    }
    cases.push((
        "s_mov_b32 s10, 0x7fff\ns_cmpk_lt_u32 s10, 0x8000".into(),
        vec![],
        Some(true),
    ));
    cases.push((
        "s_mov_b32 s10, 0xfffe\ns_cmpk_gt_u32 s10, 0xfffe".into(),
        vec![],
        Some(false),
    ));
    // 32 SCC bits per output.
    for chunk in cases.chunks(31) {
        let c: Vec<(&str, Vec<u32>, Option<bool>)> = chunk
            .iter()
            .map(|(a, v, s)| (a.as_str(), v.clone(), *s))
            .collect();
        scalar_cases(&dev, "", &c);
    }
}

/// Conditional branches, taken and not: each case shifts a bit into s30
/// that is 1 when the branch fell through to the `s_or_b32`.
#[test]
fn scalar_branches() {
    let dev = Device::new();
    let cases: [(&str, &str, bool); 13] = [
        ("", "s_branch", true),
        ("s_cmp_eq_u32 1, 1", "s_cbranch_scc0", false),
        ("s_cmp_eq_u32 1, 2", "s_cbranch_scc0", true),
        ("s_cmp_eq_u32 1, 1", "s_cbranch_scc1", true),
        ("s_cmp_eq_u32 1, 2", "s_cbranch_scc1", false),
        ("s_mov_b64 vcc, 0", "s_cbranch_vccz", true),
        (
            "s_mov_b32 vcc_lo, 0\ns_mov_b32 vcc_hi, 0x100",
            "s_cbranch_vccz",
            false,
        ),
        ("s_mov_b64 vcc, 0", "s_cbranch_vccnz", false),
        (
            "s_mov_b32 vcc_lo, 0\ns_mov_b32 vcc_hi, 0x100",
            "s_cbranch_vccnz",
            true,
        ),
        ("s_mov_b64 exec, 0", "s_cbranch_execz", true),
        (
            "s_mov_b32 exec_lo, 0\ns_mov_b32 exec_hi, 1",
            "s_cbranch_execz",
            false,
        ),
        ("s_mov_b64 exec, 0", "s_cbranch_execnz", false),
        (
            "s_mov_b32 exec_lo, 0\ns_mov_b32 exec_hi, 1",
            "s_cbranch_execnz",
            true,
        ),
    ];
    let mut body = String::from("s_mov_b32 s30, 0\n");
    let mut want = 0u32;
    for (setup, br, taken) in cases {
        body += &format!(
            "s_mov_b64 exec, -1\ns_lshl_b32 s30, s30, 1\n{setup}\n{br} 1\ns_or_b32 s30, s30, 1\n"
        );
        want = want << 1 | !taken as u32;
    }
    // A vector move under the EXEC the branches left (lanes 32..63 when the
    // last fell through, none otherwise) shows the branch did not run it.
    body += "s_mov_b32 exec_lo, 0\ns_mov_b32 exec_hi, -1\ns_cbranch_execz 2\n\
             v_mov_b32 v21, 1\nv_mov_b32 v21, 2\ns_mov_b64 exec, -1\nv_mov_b32 v20, s30";
    let t = Lanes::new(&body, 2);
    check_lanes(&dev, &t, random, |l, _| {
        vec![want, if l >= 32 { 2 } else { 0 }]
    });
}

/// A call: s_swappc_b64 jumps to s[10:11] and leaves the return address
/// (the next instruction) in s[12:13]; the callee returns with s_setpc_b64.
#[test]
fn scalar_call_and_return() {
    let dev = Device::new();
    // Byte offsets from A, the address s_getpc_b64 returns (its successor):
    // A+0 s_mov_b64 (4), A+4 s_add_u32 (4), A+8 s_addc_u32 (4),
    // A+12 s_swappc (4), A+16 s_branch (4), A+20 callee: s_movk (4),
    // A+24 s_setpc (4), A+28 after the callee.
    let body = "s_getpc_b64 s[10:11]\n\
                s_mov_b64 s[16:17], s[10:11]\n\
                s_add_u32 s10, s10, 20\n\
                s_addc_u32 s11, s11, 0\n\
                s_swappc_b64 s[12:13], s[10:11]\n\
                s_branch 2\n\
                s_movk_i32 s14, 0x1234\n\
                s_setpc_b64 s[12:13]\n\
                s_sub_u32 s12, s12, s16\n\
                v_mov_b32 v20, s12\n\
                v_mov_b32 v21, s14\n\
                s_sub_u32 s10, s10, s16\n\
                v_mov_b32 v22, s10";
    check_lanes(&dev, &Lanes::new(body, 3), random, |_, _| {
        vec![16, 0x1234, 20]
    });
}

/// s_nop and s_sleep have no architectural effect: the instructions around
/// them run once each, in order.
#[test]
fn scalar_waits_are_no_ops() {
    let dev = Device::new();
    let body = "v_mov_b32 v20, v4\ns_nop 0\nv_add_u32 v20, v20, v20\ns_nop 7\n\
                s_sleep 1\nv_xor_b32 v20, 0x55, v20\ns_sleep 0\ns_nop 1\nv_mov_b32 v21, 9";
    check_lanes(&dev, &Lanes::new(body, 2), random, |_, i| {
        vec![i[0].wrapping_add(i[0]) ^ 0x55, 9]
    });
}

/// s_and/andn2/or_saveexec_b64: sdst = EXEC, then EXEC = f(S0, EXEC),
/// SCC = EXEC != 0; a vector move shows which lanes EXEC left on.
#[test]
fn saveexec() {
    let dev = Device::new();
    let (s, e): (u64, u64) = (0x0f0f_0f0f_3333_3333, 0x00ff_00ff_00ff_00ff);
    let body = format!(
        "v_mov_b32 v20, 0\nv_mov_b32 v21, 0\nv_mov_b32 v22, 0\n\
         s_mov_b32 s12, {:#x}\ns_mov_b32 s13, {:#x}\n\
         s_mov_b32 exec_lo, {:#x}\ns_mov_b32 exec_hi, {:#x}\n\
         s_mov_b64 s[10:11], exec\n\
         s_and_saveexec_b64 s[14:15], s[12:13]\ns_cselect_b32 s24, 1, 0\nv_mov_b32 v20, 1\n\
         s_mov_b64 exec, s[10:11]\n\
         s_andn2_saveexec_b64 s[16:17], s[12:13]\ns_cselect_b32 s25, 1, 0\nv_mov_b32 v21, 1\n\
         s_mov_b64 exec, s[10:11]\n\
         s_or_saveexec_b64 s[18:19], s[12:13]\ns_cselect_b32 s26, 1, 0\nv_mov_b32 v22, 1\n\
         s_mov_b64 exec, s[10:11]\n\
         s_andn2_saveexec_b64 s[20:21], 0\ns_cselect_b32 s27, 1, 0\n\
         s_mov_b64 exec, -1\n\
         v_mov_b32 v23, s14\nv_mov_b32 v24, s15\nv_mov_b32 v25, s16\nv_mov_b32 v26, s19\n\
         v_mov_b32 v27, s24\nv_mov_b32 v28, s25\nv_mov_b32 v29, s26\nv_mov_b32 v30, s27\n\
         v_mov_b32 v31, s20",
        lo(s),
        hi(s),
        lo(e),
        hi(e)
    );
    check_lanes(&dev, &Lanes::new(&body, 12), random, |l, _| {
        let bit = |m: u64| (m >> l & 1) as u32;
        vec![
            bit(s & e),
            bit(s & !e),
            bit(s | e),
            lo(e),
            hi(e),
            lo(e),
            hi(e),
            (s & e != 0) as u32,
            (s & !e != 0) as u32,
            1,
            0,
            lo(e),
        ]
    });
}

/// s_barrier: two waves exchange values through LDS; without the barrier
/// the first wave would read the second's slots before they are written.
#[test]
fn barrier_orders_lds_between_waves() {
    let dev = Device::new();
    let body = "v_lshlrev_b32 v12, 2, v0\n\
                v_add_u32 v13, 1000, v0\n\
                ds_write_b32 v12, v13\n\
                s_waitcnt lgkmcnt(0)\n\
                s_barrier\n\
                v_xor_b32 v14, 64, v0\n\
                v_lshlrev_b32 v14, 2, v14\n\
                ds_read_b32 v20, v14\n\
                s_waitcnt lgkmcnt(0)";
    let mut t = Lanes::new(body, 1);
    t.items = 128;
    t.lds = 512;
    check_lanes(&dev, &t, random, |l, _| vec![1000 + (l as u32 ^ 64)]);
}

/// Scalar loads of 1, 4, 8 and 16 dwords from the data area.
#[test]
fn scalar_loads() {
    let dev = Device::new();
    let data: Vec<u32> = (0..64).map(|k| rnd(99, k)).collect();
    let mem: Vec<u8> = data.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut body = String::from(
        "s_load_dword s12, s[42:43], 0x1004\n\
         s_mov_b32 s11, 0x1010\n\
         s_load_dwordx4 s[16:19], s[42:43], s11\n\
         s_load_dwordx8 s[24:31], s[42:43], 0x1040\n\
         s_waitcnt lgkmcnt(0)\n\
         v_mov_b32 v20, s12\n",
    );
    for k in 0..4 {
        body += &format!("v_mov_b32 v{}, s{}\n", 21 + k, 16 + k);
    }
    for k in 0..8 {
        body += &format!("v_mov_b32 v{}, s{}\n", 25 + k, 24 + k);
    }
    let mut t = Lanes::new(&body, 13);
    t.mem = mem.clone();
    check_lanes(&dev, &t, random, |_, _| {
        let mut w = vec![data[1]];
        w.extend_from_slice(&data[4..8]);
        w.extend_from_slice(&data[16..24]);
        w
    });
    let mut body =
        String::from("s_load_dwordx16 s[12:27], s[42:43], 0x1080\ns_waitcnt lgkmcnt(0)\n");
    for k in 0..16 {
        body += &format!("v_mov_b32 v{}, s{}\n", 20 + k, 12 + k);
    }
    let mut t = Lanes::new(&body, 16);
    t.mem = mem;
    check_lanes(&dev, &t, random, |_, _| data[32..48].to_vec());
}

// ---------------------------------------------------------------- VALU integer

#[test]
fn valu_integer_three_operand() {
    let dev = Device::new();
    // x, y, z, w = v4..v7 (random); shift amounts use the low bits only.
    let body = "v_add3_u32 v20, v4, v5, v6\n\
                v_add_lshl_u32 v21, v4, v5, v7\n\
                v_and_or_b32 v22, v4, v5, v6\n\
                v_lshl_or_b32 v23, v4, v7, v6\n\
                v_xad_u32 v24, v4, v5, v6\n\
                v_ashrrev_i32 v25, v7, v4\n\
                v_ashrrev_i32_e64 v26, 35, v5\n\
                v_mov_b32 v12, v4\nv_mov_b32 v13, v5\n\
                v_ashrrev_i64 v[14:15], v7, v[12:13]\nv_mov_b32 v27, v14\nv_mov_b32 v28, v15\n\
                v_lshrrev_b64 v[14:15], v6, v[12:13]\nv_mov_b32 v29, v14\nv_mov_b32 v30, v15\n\
                v_bcnt_u32_b32 v31, v4, v5\n\
                v_bfrev_b32 v32, v6\n\
                v_not_b32 v33, v7\n\
                v_or_b32 v34, v4, v7\n\
                v_or_b32 v35, 0x80, v6";
    check_lanes(&dev, &Lanes::new(body, 16), random, |_, i| {
        let [x, y, z, w, ..] = i;
        let xy = (x as u64) | (y as u64) << 32;
        vec![
            x.wrapping_add(y).wrapping_add(z),
            x.wrapping_add(y) << (w & 31),
            (x & y) | z,
            (x << (w & 31)) | z,
            (x ^ y).wrapping_add(z),
            ((x as i32) >> (w & 31)) as u32,
            ((y as i32) >> 3) as u32,
            lo(((xy as i64) >> (w & 63)) as u64),
            hi(((xy as i64) >> (w & 63)) as u64),
            lo(xy >> (z & 63)),
            hi(xy >> (z & 63)),
            x.count_ones().wrapping_add(y),
            z.reverse_bits(),
            !w,
            x | w,
            z | 0x80,
        ]
    });
}

#[test]
fn valu_integer_multiplies_and_min_max() {
    let dev = Device::new();
    let i24 = |v: u32| ((v << 8) as i32) >> 8;
    let body = "v_mul_hi_i32 v20, v4, v5\n\
                v_mul_i32_i24 v21, v4, v5\n\
                v_mul_u32_u24 v22, v4, v5\n\
                v_mad_u32_u24 v23, v4, v5, v6\n\
                v_mad_i64_i32 v[12:13], s[20:21], v4, v5, v[6:7]\nv_mov_b32 v24, v12\nv_mov_b32 v25, v13\n\
                v_max3_i32 v26, v4, v5, v6\n\
                v_max_i32 v27, v4, v5\n\
                v_min_i32 v28, v4, v5\n\
                v_min_u32 v29, v4, v5\n\
                s_movk_i32 s22, 0x1000\nv_min_u32_e64 v30, v6, s22\n\
                v_bfe_i32 v31, v4, v8, v9\n\
                v_ffbl_b32 v32, v10\n\
                v_max_i32 v33, -5, v6";
    let inputs = |l: usize| {
        let mut i = random(l);
        // bfe offset and width within 0..16 (the field inside the dword),
        // width 0 in some lanes; ffbl of 0 in lane 0 and of bit 31 in lane 1.
        i[4] &= 15;
        i[5] = if l.is_multiple_of(5) { 0 } else { i[5] & 15 };
        i[6] = match l {
            0 => 0,
            1 => 1 << 31,
            _ => i[6],
        };
        i
    };
    check_lanes(&dev, &Lanes::new(body, 14), inputs, |_, i| {
        let [x, y, z, w, off, width, b, ..] = i;
        let (xi, yi, zi) = (x as i32, y as i32, z as i32);
        let mad = (xi as i64 * yi as i64).wrapping_add(((w as u64) << 32 | z as u64) as i64) as u64;
        let field = if width == 0 {
            0
        } else {
            let f = (x >> off) & ((1u32 << width) - 1);
            ((f << (32 - width)) as i32 >> (32 - width)) as u32
        };
        vec![
            ((xi as i64 * yi as i64) >> 32) as u32,
            (i24(x) as i64 * i24(y) as i64) as u32,
            ((x & 0xff_ffff) as u64 * (y & 0xff_ffff) as u64) as u32,
            ((x & 0xff_ffff) as u64 * (y & 0xff_ffff) as u64).wrapping_add(z as u64) as u32,
            lo(mad),
            hi(mad),
            xi.max(yi).max(zi) as u32,
            xi.max(yi) as u32,
            xi.min(yi) as u32,
            x.min(y),
            z.min(0x1000),
            field,
            if b == 0 { u32::MAX } else { b.trailing_zeros() },
            zi.max(-5) as u32,
        ]
    });
}

#[test]
fn valu_borrow_chains() {
    let dev = Device::new();
    // VCC in = bit 0 of w; borrows out land in VCC / an SGPR pair.
    let body = "v_and_b32 v12, 1, v7\nv_cmp_ne_u32 vcc, 0, v12\n\
                v_subb_co_u32 v20, vcc, v4, v5, vcc\nv_cndmask_b32 v21, 0, 1, vcc\n\
                v_cmp_ne_u32 vcc, 0, v12\n\
                v_subbrev_co_u32 v22, vcc, v4, v5, vcc\nv_cndmask_b32 v23, 0, 1, vcc\n\
                v_subrev_co_u32 v24, vcc, v4, v5\nv_cndmask_b32 v25, 0, 1, vcc\n\
                v_subrev_co_u32_e64 v26, s[20:21], v6, v6\nv_cndmask_b32_e64 v27, 0, 1, s[20:21]\n\
                v_cmp_ne_u32 s[22:23], 0, v12\n\
                v_subb_co_u32_e64 v28, s[24:25], v6, 0, s[22:23]\nv_cndmask_b32_e64 v29, 0, 1, s[24:25]";
    let inputs = |l: usize| {
        let mut i = random(l);
        // Equal operands in some lanes, so the borrow-in decides.
        if l.is_multiple_of(4) {
            i[1] = i[0];
        }
        if l % 8 == 1 {
            i[2] = 0;
        }
        i
    };
    check_lanes(&dev, &Lanes::new(body, 10), inputs, |_, i| {
        let [x, y, z, w, ..] = i;
        let c = (w & 1) as u64;
        let sub = |a: u32, b: u32, c: u64| {
            let r = (a as u64).wrapping_sub(b as u64).wrapping_sub(c);
            (r as u32, (r >> 63) as u32)
        };
        let (a, ab) = sub(x, y, c);
        let (b, bb) = sub(y, x, c);
        let (d, db) = sub(y, x, 0);
        let (e, eb) = sub(z, z, 0);
        let (g, gb) = sub(z, 0, c);
        vec![a, ab, b, bb, d, db, e, eb, g, gb]
    });
}

// ---------------------------------------------------------------- VALU compares

const SMALL32: [u32; 8] = [
    0,
    1,
    5,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0xffff_fffe,
    6,
];

/// Compares of lane l: a = table[l % 8], b = table[l / 8], so every pair
/// of the table, equal ones included, meets once.
fn pairs(l: usize) -> (usize, usize) {
    (l % 8, l / 8)
}

/// Builds `vK = cmp(...) ? 1 : 0` for each (mnemonic, operands): e32
/// forms write VCC, e64 forms s[20:21].
fn compare_body(ops: &[&str], operands: &str) -> String {
    let mut body = String::new();
    for (k, op) in ops.iter().enumerate() {
        if k % 2 == 0 {
            body += &format!(
                "{op} vcc, {operands}\nv_cndmask_b32 v{}, 0, 1, vcc\n",
                20 + k
            );
        } else {
            body += &format!(
                "{op}_e64 s[20:21], {operands}\nv_cndmask_b32_e64 v{}, 0, 1, s[20:21]\n",
                20 + k
            );
        }
    }
    body
}

#[test]
fn valu_integer_compares() {
    let dev = Device::new();
    type Cmp = fn(u32, u32) -> bool;
    let ops: [(&str, Cmp); 16] = [
        ("v_cmp_eq_u32", |a, b| a == b),
        ("v_cmp_ne_u32", |a, b| a != b),
        ("v_cmp_ge_i32", |a, b| a as i32 >= b as i32),
        ("v_cmp_ge_u32", |a, b| a >= b),
        ("v_cmp_gt_i32", |a, b| a as i32 > b as i32),
        ("v_cmp_gt_u32", |a, b| a > b),
        ("v_cmp_le_i32", |a, b| a as i32 <= b as i32),
        ("v_cmp_le_u32", |a, b| a <= b),
        ("v_cmp_lt_i32", |a, b| (a as i32) < b as i32),
        ("v_cmp_lt_u32", |a, b| a < b),
        // 16-bit compares read the low halves (v6, v7 hold garbage above).
        ("v_cmp_eq_u16", |a, b| a as u16 == b as u16),
        ("v_cmp_ne_u16", |a, b| a as u16 != b as u16),
        ("v_cmp_gt_i16", |a, b| a as i16 > b as i16),
        ("v_cmp_gt_u16", |a, b| a as u16 > b as u16),
        ("v_cmp_lt_i16", |a, b| (a as i16) < b as i16),
        ("v_cmp_lt_u16", |a, b| (a as u16) < b as u16),
    ];
    let names: Vec<&str> = ops.iter().map(|o| o.0).collect();
    let body = compare_body(&names[..10], "v4, v5")
        + &compare_body(&names[10..], "v6, v7")
            .replace("v20,", "v30,")
            .replace("v21,", "v31,")
            .replace("v22,", "v32,")
            .replace("v23,", "v33,")
            .replace("v24,", "v34,")
            .replace("v25,", "v35,");
    let t16: [u32; 8] = [0, 1, 0x7fff, 0x8000, 0xffff, 0xfffe, 5, 0x8001];
    let inputs = |l: usize| {
        let (a, b) = pairs(l);
        let mut i = random(l);
        i[0] = SMALL32[a];
        i[1] = SMALL32[b];
        i[2] = t16[a] | i[2] << 16;
        i[3] = t16[b] | i[3] << 16;
        i
    };
    check_lanes(&dev, &Lanes::new(&body, 16), inputs, |_, i| {
        ops.iter()
            .enumerate()
            .map(|(k, (_, f))| {
                let (a, b) = if k < 10 { (i[0], i[1]) } else { (i[2], i[3]) };
                f(a, b) as u32
            })
            .collect()
    });
}

#[test]
fn valu_64bit_integer_compares() {
    let dev = Device::new();
    type Cmp = fn(u64, u64) -> bool;
    let ops: [(&str, Cmp); 10] = [
        ("v_cmp_eq_u64", |a, b| a == b),
        ("v_cmp_ne_u64", |a, b| a != b),
        ("v_cmp_ge_i64", |a, b| a as i64 >= b as i64),
        ("v_cmp_ge_u64", |a, b| a >= b),
        ("v_cmp_gt_i64", |a, b| a as i64 > b as i64),
        ("v_cmp_gt_u64", |a, b| a > b),
        ("v_cmp_le_i64", |a, b| a as i64 <= b as i64),
        ("v_cmp_le_u64", |a, b| a <= b),
        ("v_cmp_lt_i64", |a, b| (a as i64) < b as i64),
        ("v_cmp_lt_u64", |a, b| a < b),
    ];
    let t: [u64; 8] = [
        0,
        1,
        1 << 32,
        1 << 32 | 1,
        u64::MAX,
        1 << 63,
        i64::MAX as u64,
        0xffff_ffff,
    ];
    let names: Vec<&str> = ops.iter().map(|o| o.0).collect();
    let body = compare_body(&names, "v[4:5], v[6:7]");
    let inputs = |l: usize| {
        let (a, b) = pairs(l);
        let mut i = random(l);
        (i[0], i[1], i[2], i[3]) = (lo(t[a]), hi(t[a]), lo(t[b]), hi(t[b]));
        i
    };
    check_lanes(&dev, &Lanes::new(&body, 10), inputs, |l, _| {
        let (a, b) = pairs(l);
        ops.iter().map(|(_, f)| f(t[a], t[b]) as u32).collect()
    });
}

/// IEEE compares: the ordered ones are false on NaN, the negated
/// (unordered) ones true; -0 equals +0.
#[test]
fn valu_float_compares() {
    let dev = Device::new();
    type Cmp = fn(f64, f64) -> bool;
    let ops: [(&str, &str, Cmp); 10] = [
        ("v_cmp_eq_f32", "v_cmp_eq_f64", |a, b| a == b),
        ("v_cmp_ge_f32", "v_cmp_ge_f64", |a, b| a >= b),
        ("v_cmp_gt_f32", "v_cmp_gt_f64", |a, b| a > b),
        ("v_cmp_le_f32", "v_cmp_le_f64", |a, b| a <= b),
        ("v_cmp_lt_f32", "v_cmp_lt_f64", |a, b| a < b),
        ("v_cmp_neq_f32", "v_cmp_neq_f64", |a, b| a != b),
        ("v_cmp_nge_f32", "v_cmp_nge_f64", |a, b| !(a >= b)),
        ("v_cmp_ngt_f32", "v_cmp_ngt_f64", |a, b| !(a > b)),
        ("v_cmp_nlt_f32", "v_cmp_nlt_f64", |a, b| !(a < b)),
        ("v_cmp_o_f32", "v_cmp_o_f64", |a, b| {
            !a.is_nan() && !b.is_nan()
        }),
    ];
    let t: [f64; 8] = [
        f64::NAN,
        f64::NEG_INFINITY,
        -1.5,
        -0.0,
        0.0,
        1.0,
        3e38,
        f64::INFINITY,
    ];
    let n32: Vec<&str> = ops.iter().map(|o| o.0).collect();
    let n64: Vec<&str> = ops.iter().map(|o| o.1).collect();
    for (names, operands, wide) in [(n32, "v4, v5", false), (n64, "v[4:5], v[6:7]", true)] {
        let body = compare_body(&names, operands);
        let inputs = |l: usize| {
            let (a, b) = pairs(l);
            let mut i = random(l);
            if wide {
                let (x, y) = (t[a].to_bits(), t[b].to_bits());
                (i[0], i[1], i[2], i[3]) = (lo(x), hi(x), lo(y), hi(y));
            } else {
                (i[0], i[1]) = (f(t[a] as f32), f(t[b] as f32));
            }
            i
        };
        check_lanes(&dev, &Lanes::new(&body, 10), inputs, |l, _| {
            let (a, b) = pairs(l);
            ops.iter().map(|(_, _, c)| c(t[a], t[b]) as u32).collect()
        });
    }
}

/// v_cmp_class_f32: bit k of the mask tests class k (0 signaling NaN,
/// 1 quiet NaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0, 7 +denormal,
/// 8 +normal, 9 +inf).
#[test]
fn float_class() {
    let dev = Device::new();
    let vals: [u32; 10] = [
        0x7f80_0001,
        0x7fc0_0000,
        0xff80_0000,
        0xc020_0000,
        0x8000_0100,
        0x8000_0000,
        0,
        0x0000_0003,
        0x3f80_0000,
        0x7f80_0000,
    ];
    let class = |x: u32| -> u32 {
        let (sign, exp, man) = (x >> 31, x >> 23 & 0xff, x & 0x7f_ffff);
        match (exp, man) {
            (0xff, 0) => {
                if sign == 1 {
                    2
                } else {
                    9
                }
            }
            (0xff, m) => {
                if m & 0x40_0000 != 0 {
                    1
                } else {
                    0
                }
            }
            (0, 0) => {
                if sign == 1 {
                    5
                } else {
                    6
                }
            }
            (0, _) => {
                if sign == 1 {
                    4
                } else {
                    7
                }
            }
            _ => {
                if sign == 1 {
                    3
                } else {
                    8
                }
            }
        }
    };
    let body = "v_cmp_class_f32 vcc, v4, v5\nv_cndmask_b32 v20, 0, 1, vcc\n\
                v_cmp_class_f32_e64 s[20:21], v4, v6\nv_cndmask_b32_e64 v21, 0, 1, s[20:21]\n\
                v_cmp_class_f32_e64 s[20:21], -v4, v6\nv_cndmask_b32_e64 v22, 0, 1, s[20:21]";
    let inputs = |l: usize| {
        let mut i = random(l);
        i[0] = vals[l % 10];
        i[1] &= 0x3ff;
        i[2] = 1 << (l / 6 % 10);
        i
    };
    check_lanes(&dev, &Lanes::new(body, 3), inputs, |_, i| {
        let c = class(i[0]);
        let cn = class(i[0] ^ 0x8000_0000);
        vec![i[1] >> c & 1, i[2] >> c & 1, i[2] >> cn & 1]
    });
}

// ---------------------------------------------------------------- VALU float

/// A normal f32 of moderate magnitude (2^-63 .. 2^64) from random bits:
/// no denormal, overflow or NaN in the products and sums below.
fn f32_of(r: u32) -> f32 {
    f32::from_bits((r & 0x807f_ffff) | ((r >> 23 & 0x7f) + 64) << 23)
}
fn f64_of(a: u32, b: u32) -> f64 {
    let r = (a as u64) << 32 | b as u64;
    f64::from_bits((r & 0x800f_ffff_ffff_ffff) | ((r >> 52 & 0x1ff) + 0x300) << 52)
}

#[test]
fn valu_f32() {
    let dev = Device::new();
    let body = "v_mov_b32 v20, v6\nv_fmac_f32 v20, v4, v5\n\
                v_mov_b32 v21, v6\nv_mac_f32 v21, v4, v5\n\
                v_mad_f32 v22, v4, v5, v6\n\
                v_mad_f32 v23, -v4, v5, |v6|\n\
                v_max3_f32 v24, v4, v5, v6\n\
                v_max3_f32 v25, v4, -v5, 1.0\n\
                v_trunc_f32 v26, v7\n\
                v_trunc_f32_e64 v27, -v7\n\
                v_rcp_iflag_f32 v28, v8\n\
                v_cvt_f64_f32 v[12:13], v4\nv_mov_b32 v29, v12\nv_mov_b32 v30, v13\n\
                v_cvt_f64_f32_e64 v[12:13], -v7\nv_mov_b32 v31, v12\nv_mov_b32 v32, v13";
    // rcp of powers of two and of signed zeros and infinities: exact.
    let rcp_in = |l: usize| match l % 8 {
        0 => 0.0f32,
        1 => -0.0,
        2 => f32::INFINITY,
        3 => f32::NEG_INFINITY,
        _ => f32::from_bits(((l as u32 * 7) % 200 + 20) << 23 | (l as u32 & 1) << 31),
    };
    let inputs = |l: usize| {
        let r = random(l);
        let t = (r[3] as i32 as f32) / 1000.0;
        [
            f(f32_of(r[0])),
            f(f32_of(r[1])),
            f(f32_of(r[2])),
            f(t),
            f(rcp_in(l)),
            0,
            0,
            0,
        ]
    };
    check_lanes(&dev, &Lanes::new(body, 13), inputs, |_, i| {
        let [a, b, c, t, r, ..] = i.map(f32::from_bits);
        let w = (-t as f64).to_bits();
        vec![
            f(a.mul_add(b, c)),
            // mac/mad: the product is rounded before the add.
            f(a * b + c),
            f(a * b + c),
            f(-a * b + c.abs()),
            f(a.max(b).max(c)),
            f(a.max(-b).max(1.0)),
            f(t.trunc()),
            f((-t).trunc()),
            f(1.0 / r),
            lo((a as f64).to_bits()),
            hi((a as f64).to_bits()),
            lo(w),
            hi(w),
        ]
    });
}

#[test]
fn valu_f64() {
    let dev = Device::new();
    let body =
        "v_fma_f64 v[12:13], v[4:5], v[6:7], v[8:9]\nv_mov_b32 v20, v12\nv_mov_b32 v21, v13\n\
                v_mov_b32 v14, v8\nv_mov_b32 v15, v9\nv_fmac_f64 v[14:15], v[4:5], v[6:7]\n\
                v_mov_b32 v22, v14\nv_mov_b32 v23, v15\n\
                v_fma_f64 v[12:13], -v[4:5], v[6:7], 1.0\nv_mov_b32 v24, v12\nv_mov_b32 v25, v13\n\
                v_max_f64 v[12:13], v[4:5], v[6:7]\nv_mov_b32 v26, v12\nv_mov_b32 v27, v13\n\
                v_max_f64 v[12:13], -v[4:5], 0.5\nv_mov_b32 v28, v12\nv_mov_b32 v29, v13\n\
                v_rcp_f64 v[12:13], v[10:11]\nv_mov_b32 v30, v12\nv_mov_b32 v31, v13\n\
                v_rsq_f64 v[12:13], v[10:11]\nv_mov_b32 v32, v12\nv_mov_b32 v33, v13";
    // rcp and rsq inputs: even powers of two (exact results), ±0, +inf.
    let special = |l: usize| match l % 8 {
        0 => 0.0f64,
        1 => f64::INFINITY,
        _ => f64::from_bits((((l as u64 * 37) % 1500 + 280) & !1) << 52),
    };
    let inputs = |l: usize| {
        let r = random(l);
        let (a, b, c) = (f64_of(r[0], r[1]), f64_of(r[2], r[3]), f64_of(r[4], r[5]));
        let s = special(l).to_bits();
        let (a, b, c) = (a.to_bits(), b.to_bits(), c.to_bits());
        [lo(a), hi(a), lo(b), hi(b), lo(c), hi(c), lo(s), hi(s)]
    };
    check_lanes(&dev, &Lanes::new(body, 14), inputs, |_, i| {
        let g = |k: usize| f64::from_bits(i[k] as u64 | (i[k + 1] as u64) << 32);
        let (a, b, c, s) = (g(0), g(2), g(4), g(6));
        let mut v = Vec::new();
        // 2^-k for s = 2^(2k) is exact, as is 1/2^(2k).
        for r in [
            a.mul_add(b, c),
            a.mul_add(b, c),
            (-a).mul_add(b, 1.0),
            a.max(b),
            (-a).max(0.5),
            1.0 / s,
            1.0 / s.sqrt(),
        ] {
            v.push(lo(r.to_bits()));
            v.push(hi(r.to_bits()));
        }
        v
    });
}

/// clang-19's f64 division: div_scale, rcp, two Newton steps (fma, fmac),
/// mul, fma, div_fmas, div_fixup; the result is the IEEE quotient, also
/// where div_scale must rescale (huge, tiny and subnormal operands and
/// quotients) and for zeros and infinities.
#[test]
fn f64_division_sequence() {
    let dev = Device::new();
    let body = "v_div_scale_f64 v[12:13], s[20:21], v[6:7], v[6:7], v[4:5]\n\
                v_rcp_f64 v[14:15], v[12:13]\n\
                v_div_scale_f64 v[16:17], vcc, v[4:5], v[6:7], v[4:5]\n\
                v_fma_f64 v[18:19], -v[12:13], v[14:15], 1.0\n\
                v_fmac_f64 v[14:15], v[14:15], v[18:19]\n\
                v_fma_f64 v[18:19], -v[12:13], v[14:15], 1.0\n\
                v_fmac_f64 v[14:15], v[14:15], v[18:19]\n\
                v_mul_f64 v[18:19], v[16:17], v[14:15]\n\
                v_fma_f64 v[12:13], -v[12:13], v[18:19], v[16:17]\n\
                v_div_fmas_f64 v[12:13], v[12:13], v[14:15], v[18:19]\n\
                v_div_fixup_f64 v[12:13], v[12:13], v[6:7], v[4:5]\n\
                v_mov_b32 v20, v12\nv_mov_b32 v21, v13";
    let nd = |l: usize| -> (f64, f64) {
        match l {
            0 => (1.0, 0.0),
            1 => (-1.0, 0.0),
            2 => (0.0, 2.0),
            3 => (f64::INFINITY, 3.0),
            4 => (5.0, f64::NEG_INFINITY),
            5 => (1.0, 3.0),
            // Quotients near the top of the range, subnormal ones, huge and
            // subnormal denominators, tiny numerators: div_scale rescales.
            6 => (1e300, 1e-10),
            7 => (-1.7e308, 0.3),
            8 => (1e-300, 1e10),
            9 => (3e-308, 7.0),
            10 => (0.5, 1.5e308),
            11 => (1e-10, 1.7e308),
            12 => (1.0, 5e-324),
            13 => (3.0, 2.5e-310),
            14 => (2.5e-310, 1e-300),
            15 => (4e-320, 3.0),
            16 => (1e308, 1e-300),
            17 => (1e-300, 1e300),
            18 => (5e-324, 0.75),
            19 => (-1.5e-300, 1.5e-10),
            // NaN results: 0/0 and inf/inf give the ISA's default NaN
            // (negative), a NaN operand comes back quieted.
            20 => (0.0, -0.0),
            21 => (f64::INFINITY, f64::NEG_INFINITY),
            22 => (f64::from_bits(0x7ff0_0000_0000_1234), 2.0),
            23 => (3.0, f64::from_bits(0xfff8_0000_0000_0042)),
            24..=39 => {
                let r = random(l);
                (f64_of(r[0], r[1]), f64_of(r[2], r[3]))
            }
            // Finite values of any exponent, subnormals included.
            _ => {
                let r = random(l);
                let any = |a: u32, b: u32| {
                    let x = (a as u64) << 32 | b as u64;
                    f64::from_bits(x & 0x800f_ffff_ffff_ffff | ((x >> 52 & 0x7ff) % 2047) << 52)
                };
                (any(r[0], r[1]), any(r[2], r[3]))
            }
        }
    };
    let inputs = |l: usize| {
        let (n, d) = nd(l);
        let (n, d) = (n.to_bits(), d.to_bits());
        [lo(n), hi(n), lo(d), hi(d), 0, 0, 0, 0]
    };
    check_lanes(&dev, &Lanes::new(body, 2), inputs, |l, _| {
        let (n, d) = nd(l);
        let q = match l {
            20 | 21 => 0xfff8_0000_0000_0000,
            22 => 0x7ff8_0000_0000_1234,
            23 => 0xfff8_0000_0000_0042,
            _ => (n / d).to_bits(),
        };
        vec![lo(q), hi(q)]
    });
}

#[test]
fn packed_f32_multiply() {
    let dev = Device::new();
    let body = "v_pk_mul_f32 v[12:13], v[4:5], v[6:7]\nv_mov_b32 v20, v12\nv_mov_b32 v21, v13\n\
                v_pk_mul_f32 v[12:13], v[4:5], v[6:7] op_sel:[1,0] op_sel_hi:[0,1] neg_lo:[0,1]\n\
                v_mov_b32 v22, v12\nv_mov_b32 v23, v13";
    let inputs = |l: usize| random(l).map(|r| f(f32_of(r)));
    check_lanes(&dev, &Lanes::new(body, 4), inputs, |_, i| {
        let [a0, a1, b0, b1, ..] = i.map(f32::from_bits);
        // op_sel picks the hi half of src0 for the low result, op_sel_hi
        // the lo half for the high result; neg_lo negates src1 of the low one.
        vec![f(a0 * b0), f(a1 * b1), f(a1 * -b0), f(a0 * b1)]
    });
}

// ---------------------------------------------------------------- MFMA

/// v_mfma_f32_32x32x2f32 with C from AGPRs written by v_accvgpr_write and
/// read back by v_accvgpr_read: D = A·B + C, on the CDNA2 layout (A[i][k]
/// in lane i + 32k, B[k][j] in lane j + 32k, D register r of lane l is
/// row 8(r/4) + 4(l/32) + r%4, column l%32). Inputs are multiples of 1/4
/// below 8, so every product and sum is exact whatever the order.
#[test]
fn mfma_f32_32x32x2f32() {
    let dev = Device::new();
    let mut body = String::new();
    for r in 0..16i32 {
        // C register r of lane l: (l + 3r) / 4 - 20.
        body += &format!(
            "v_add_u32 v12, {}, v0\nv_cvt_f32_i32 v12, v12\nv_mul_f32 v12, 0.25, v12\n\
             v_accvgpr_write_b32 a{r}, v12\n",
            3 * r - 80
        );
    }
    body += "s_nop 1\nv_mfma_f32_32x32x2f32 a[0:15], v4, v5, a[0:15]\ns_nop 15\ns_nop 2\n";
    for r in 0..16 {
        body += &format!("v_accvgpr_read_b32 v{}, a{r}\n", 20 + r);
    }
    let q = |r: u32| ((r % 64) as i32 - 32) as f32 / 4.0;
    let inputs = |l: usize| {
        let r = random(l);
        [f(q(r[0])), f(q(r[1])), 0, 0, 0, 0, 0, 0]
    };
    let a = |i: usize, k: usize| q(random(i + 32 * k)[0]);
    let b = |k: usize, j: usize| q(random(j + 32 * k)[1]);
    check_lanes(&dev, &Lanes::new(&body, 16), inputs, |l, _| {
        (0..16)
            .map(|r| {
                let (i, j) = (8 * (r / 4) + 4 * (l / 32) + r % 4, l % 32);
                let c = (l as i32 + 3 * r as i32 - 80) as f32 / 4.0;
                f(a(i, 0) * b(0, j) + a(i, 1) * b(1, j) + c)
            })
            .collect()
    });
}

// ---------------------------------------------------------------- LDS

fn le(mem: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(mem[at..at + 4].try_into().expect("4 bytes"))
}

#[test]
fn lds_wide_and_narrow() {
    let dev = Device::new();
    // Lane l owns LDS bytes 16l..16l+16: a 128-bit write, then a 96-bit read
    // of its own slot, a 128-bit read of its neighbour's, a 16-bit write into
    // the upper half of its first dword and 16-bit and 32-bit reads of it.
    let body = "v_lshlrev_b32 v12, 4, v0\n\
                ds_write_b128 v12, v[4:7]\n\
                s_waitcnt lgkmcnt(0)\n\
                ds_read_b96 v[20:22], v12\n\
                v_xor_b32 v13, 16, v12\n\
                ds_read_b128 v[24:27], v13\n\
                s_waitcnt lgkmcnt(0)\n\
                ds_write_b16 v12, v8 offset:2\n\
                s_waitcnt lgkmcnt(0)\n\
                ds_read_u16 v28, v12 offset:2\n\
                ds_read_u16 v29, v12\n\
                ds_read_b32 v30, v12\n\
                s_waitcnt lgkmcnt(0)\n\
                v_mov_b32 v23, 0";
    let mut t = Lanes::new(body, 11);
    t.lds = 1024;
    check_lanes(&dev, &t, random, |l, i| {
        let n = random(l ^ 1);
        vec![
            i[0],
            i[1],
            i[2],
            0,
            n[0],
            n[1],
            n[2],
            n[3],
            i[4] & 0xffff,
            i[0] & 0xffff,
            (i[0] & 0xffff) | (i[4] & 0xffff) << 16,
        ]
    });
}

#[test]
fn lds_two_address_forms() {
    let dev = Device::new();
    // write2/read2 offsets count elements (4 or 8 bytes), the st64 forms
    // 64 elements. Lane l: region A = 64l (bytes, 64 each), region B =
    // 4096 + 8l (st64 b64: +512 per unit), region C = 8192 + 4l (st64 b32:
    // +256 per unit). Each lane reads its neighbour's values back.
    let body = "v_lshlrev_b32 v12, 6, v0\n\
                ds_write2_b32 v12, v4, v5 offset0:1 offset1:3\n\
                ds_write2_b64 v12, v[4:5], v[6:7] offset0:2 offset1:5\n\
                v_lshlrev_b32 v13, 3, v0\n\
                v_add_u32 v13, 0x1000, v13\n\
                ds_write2st64_b64 v13, v[8:9], v[10:11] offset1:1\n\
                v_lshlrev_b32 v14, 2, v0\n\
                v_add_u32 v14, 0x2000, v14\n\
                ds_write2st64_b32 v14, v6, v7 offset1:1\n\
                s_waitcnt lgkmcnt(0)\n\
                v_xor_b32 v15, 64, v12\n\
                ds_read2_b32 v[20:21], v15 offset0:1 offset1:3\n\
                ds_read2_b64 v[22:25], v15 offset0:2 offset1:5\n\
                v_xor_b32 v16, 8, v13\n\
                ds_read2st64_b64 v[26:29], v16 offset1:1\n\
                v_xor_b32 v17, 4, v14\n\
                ds_read2st64_b32 v[30:31], v17 offset1:1\n\
                ds_read2st64_b32 v[32:33], v17 offset0:1\n\
                s_waitcnt lgkmcnt(0)";
    let mut t = Lanes::new(body, 14);
    t.lds = 16384;
    check_lanes(&dev, &t, random, |l, _| {
        let n = random(l ^ 1);
        vec![
            n[0], n[1], n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[2], n[3], n[3], n[2],
        ]
    });
}

#[test]
fn lds_atomics_without_return() {
    let dev = Device::new();
    // Slot s = l % 4 starts at 200s (u32) and 0.5 (f32); lane l adds l + 1
    // to the u32 and (l + 1) / 4 to the f32 (sums exact in any order).
    let body = "v_and_b32 v12, 3, v0\n\
                v_lshlrev_b32 v12, 3, v12\n\
                v_cmp_gt_u32 vcc, 4, v0\n\
                s_and_saveexec_b64 s[20:21], vcc\n\
                v_mul_u32_u24 v13, 25, v12\n\
                ds_write_b32 v12, v13\n\
                v_mov_b32 v13, 0.5\n\
                ds_write_b32 v12, v13 offset:4\n\
                s_mov_b64 exec, s[20:21]\n\
                s_waitcnt lgkmcnt(0)\n\
                v_add_u32 v14, 1, v0\n\
                ds_add_u32 v12, v14\n\
                v_cvt_f32_u32 v15, v14\n\
                v_mul_f32 v15, 0.25, v15\n\
                ds_add_f32 v12, v15 offset:4\n\
                s_waitcnt lgkmcnt(0)\n\
                ds_read_b32 v20, v12\n\
                ds_read_b32 v21, v12 offset:4\n\
                s_waitcnt lgkmcnt(0)";
    let mut t = Lanes::new(body, 2);
    t.lds = 64;
    check_lanes(&dev, &t, random, |l, _| {
        let s = l % 4;
        let lanes = (0..64).filter(|k| k % 4 == s);
        let u = 200 * s as u32 + lanes.clone().map(|k| k as u32 + 1).sum::<u32>();
        let x = 0.5f32 + lanes.map(|k| (k as f32 + 1.0) / 4.0).sum::<f32>();
        vec![u, f(x)]
    });
}

// ---------------------------------------------------------------- global, flat, buffer

/// s[44:45] = the data area (input buffer + 4096).
const DATA: &str = "s_add_u32 s44, s42, 0x1000\ns_addc_u32 s45, s43, 0\n";

#[test]
fn global_loads_and_stores() {
    let dev = Device::new();
    let data: Vec<u8> = (0..8192u32).map(|k| rnd(7, k) as u8).collect();
    // Loads from 16l (x1..x4) and of byte 5l + 3; stores of the inputs to
    // the second 4 KiB: a dword at 4096 + 4l, 3 dwords at 4352 + 12l (over
    // bytes other lanes' byte stores do not touch), 4 dwords at 5120 + 16l,
    // a byte at 6144 + l.
    let body = format!(
        "{DATA}v_lshlrev_b32 v12, 4, v0\n\
         global_load_dword v20, v12, s[44:45]\n\
         global_load_dwordx2 v[22:23], v12, s[44:45] offset:4\n\
         global_load_dwordx3 v[24:26], v12, s[44:45] offset:-4\n\
         global_load_dwordx4 v[28:31], v12, s[44:45]\n\
         v_mul_u32_u24 v13, 5, v0\n\
         global_load_ubyte v21, v13, s[44:45] offset:3\n\
         s_waitcnt vmcnt(0)\n\
         s_add_u32 s46, s44, 0x1000\ns_addc_u32 s47, s45, 0\n\
         v_lshlrev_b32 v14, 2, v0\n\
         global_store_dword v14, v4, s[46:47]\n\
         v_mul_u32_u24 v15, 12, v0\n\
         global_store_dwordx3 v15, v[4:6], s[46:47] offset:256\n\
         global_store_dwordx4 v12, v[4:7], s[46:47] offset:1024\n\
         global_store_byte v0, v7, s[46:47] offset:2048\n\
         s_waitcnt vmcnt(0)\n\
         v_mov_b32 v27, 0"
    );
    let mut t = Lanes::new(&body, 12);
    t.mem = data.clone();
    let mem = check_lanes(&dev, &t, random, |l, _| {
        let d = |at: i64| -> u32 {
            if at < 0 {
                0
            } else {
                le(&data, at as usize)
            }
        };
        let a = 16 * l as i64;
        vec![
            d(a),
            data[5 * l + 3] as u32,
            d(a + 4),
            d(a + 8),
            d(a - 4),
            d(a),
            d(a + 4),
            0,
            d(a),
            d(a + 4),
            d(a + 8),
            d(a + 12),
        ]
    });
    let Some(mem) = mem else {
        return;
    };
    for l in 0..64 {
        let i = random(l);
        assert_eq!(le(&mem, 4096 + 4 * l), i[0], "store dword, lane {l}");
        for (k, v) in i.iter().take(3).enumerate() {
            assert_eq!(le(&mem, 4352 + 12 * l + 4 * k), *v, "store x3, lane {l}");
        }
        for (k, v) in i.iter().take(4).enumerate() {
            assert_eq!(le(&mem, 5120 + 16 * l + 4 * k), *v, "store x4, lane {l}");
        }
        assert_eq!(mem[6144 + l], i[3] as u8, "store byte, lane {l}");
    }
    // Bytes next to the stored ones keep their values.
    assert_eq!(mem[6144 + 64], data[6144 + 64]);
    assert_eq!(mem[4095], data[4095]);
}

#[test]
fn flat_and_buffer_access() {
    let dev = Device::new();
    let data: Vec<u8> = (0..8192u32).map(|k| rnd(8, k) as u8).collect();
    // FLAT with 64-bit addresses data + 8l; stores to data + 4096 + 8l and
    // data + 2048 + l. MUBUF with a raw V# (stride 0, 8 KiB) over the data
    // area: offen, soffset and the immediate offset add up.
    let body = format!(
        "{DATA}v_lshlrev_b32 v12, 3, v0\n\
         v_mov_b32 v13, s45\n\
         v_add_co_u32 v12, vcc, s44, v12\n\
         v_addc_co_u32 v13, vcc, 0, v13, vcc\n\
         flat_load_dwordx2 v[20:21], v[12:13]\n\
         flat_load_ubyte v22, v[12:13] offset:5\n\
         v_add_co_u32 v14, vcc, 0x1000, v12\n\
         v_addc_co_u32 v15, vcc, 0, v13, vcc\n\
         flat_store_dwordx2 v[14:15], v[4:5]\n\
         v_add_co_u32 v16, vcc, s44, v0\n\
         v_mov_b32 v17, s45\n\
         v_addc_co_u32 v17, vcc, 0, v17, vcc\n\
         flat_store_byte v[16:17], v6 offset:2048\n\
         s_waitcnt vmcnt(0) lgkmcnt(0)\n\
         s_mov_b32 s48, s44\n\
         s_and_b32 s49, s45, 0xffff\n\
         s_movk_i32 s50, 0x2000\n\
         s_mov_b32 s51, 0x27000\n\
         v_lshlrev_b32 v18, 2, v0\n\
         buffer_load_dword v23, v18, s[48:51], 0 offen\n\
         s_movk_i32 s22, 0x10\n\
         buffer_load_dword v24, v18, s[48:51], s22 offen offset:8\n\
         buffer_load_dword v25, off, s[48:51], 0 offset:12\n\
         buffer_store_dword v7, v18, s[48:51], 0 offen offset:3072\n\
         s_waitcnt vmcnt(0)\n\
         buffer_load_dword v26, v18, s[48:51], s22 offen offset:3056\n\
         s_waitcnt vmcnt(0)"
    );
    let mut t = Lanes::new(&body, 7);
    t.mem = data.clone();
    let mem = check_lanes(&dev, &t, random, |l, i| {
        let d = |at: usize| le(&data, at);
        vec![
            d(8 * l),
            d(8 * l + 4),
            data[8 * l + 5] as u32,
            d(4 * l),
            d(4 * l + 24),
            d(12),
            i[3],
        ]
    });
    let Some(mem) = mem else {
        return;
    };
    for l in 0..64 {
        let i = random(l);
        assert_eq!(le(&mem, 4096 + 8 * l), i[0], "flat x2, lane {l}");
        assert_eq!(le(&mem, 4100 + 8 * l), i[1], "flat x2, lane {l}");
        assert_eq!(mem[2048 + l], i[2] as u8, "flat byte, lane {l}");
        assert_eq!(le(&mem, 3072 + 4 * l), i[3], "buffer store, lane {l}");
    }
    assert_eq!(mem[2048 + 64], data[2048 + 64]);
}

/// Global atomics with glc return the old value; each lane has its own
/// slot (8 bytes) in a region per operation, then all lanes add to one word.
#[test]
fn global_atomics() {
    let dev = Device::new();
    let mut mem: Vec<u8> = (0..12288u32).map(|k| rnd(9, k) as u8).collect();
    // Compare-and-swap operands match the old value in some lanes.
    for l in 0..64 {
        let i = random(l);
        let at = 4096 + 2560 + 8 * l;
        let old = if l % 2 == 0 { i[5] } else { i[5] ^ 1 };
        mem[at..at + 4].copy_from_slice(&old.to_le_bytes());
        let at = 4096 + 3072 + 8 * l;
        let old_hi = if l % 3 == 0 { i[1] } else { i[1] ^ 1 << 31 };
        mem[at..at + 4].copy_from_slice(&i[0].to_le_bytes());
        mem[at + 4..at + 8].copy_from_slice(&old_hi.to_le_bytes());
    }
    mem[8704..8708].copy_from_slice(&1000u32.to_le_bytes());
    let init = mem.clone();
    let body = format!(
        "{DATA}s_add_u32 s46, s44, 0x1000\ns_addc_u32 s47, s45, 0\n\
         s_add_u32 s48, s46, 0x1000\ns_addc_u32 s49, s47, 0\n\
         v_lshlrev_b32 v12, 3, v0\n\
         global_atomic_add v20, v12, v4, s[46:47] glc\n\
         global_atomic_or v21, v12, v5, s[46:47] offset:512 glc\n\
         global_atomic_xor v22, v12, v6, s[46:47] offset:1024 glc\n\
         global_atomic_smax v23, v12, v7, s[46:47] offset:1536 glc\n\
         global_atomic_smin v24, v12, v8, s[46:47] offset:2048 glc\n\
         v_mov_b32 v14, v8\nv_mov_b32 v15, v9\n\
         global_atomic_cmpswap v25, v12, v[14:15], s[46:47] offset:2560 glc\n\
         v_mov_b32 v16, v10\nv_mov_b32 v17, v11\nv_mov_b32 v18, v4\nv_mov_b32 v19, v5\n\
         global_atomic_cmpswap_x2 v[26:27], v12, v[16:19], s[46:47] offset:3072 glc\n\
         global_atomic_umax_x2 v[28:29], v12, v[4:5], s[46:47] offset:3584 glc\n\
         global_atomic_umin_x2 v[30:31], v12, v[6:7], s[48:49] glc\n\
         v_mov_b32 v13, 0\nv_add_u32 v14, 1, v0\n\
         global_atomic_add v13, v14, s[48:49] offset:512\n\
         s_waitcnt vmcnt(0)"
    );
    let mut t = Lanes::new(&body, 12);
    t.mem = mem;
    let w = |m: &[u8], region: usize, l: usize| le(m, 4096 + 512 * region + 8 * l);
    let w64 = |m: &[u8], region: usize, l: usize| {
        w(m, region, l) as u64 | (le(m, 4096 + 512 * region + 8 * l + 4) as u64) << 32
    };
    let after = check_lanes(&dev, &t, random, |l, _| {
        let mut v: Vec<u32> = (0..6).map(|r| w(&init, r, l)).collect();
        for r in 6..9 {
            v.push(lo(w64(&init, r, l)));
            v.push(hi(w64(&init, r, l)));
        }
        v
    });
    let Some(after) = after else {
        return;
    };
    for l in 0..64 {
        let i = random(l);
        let old = |r| w(&init, r, l);
        let x64 = |a: u32, b: u32| a as u64 | (b as u64) << 32;
        assert_eq!(w(&after, 0, l), old(0).wrapping_add(i[0]), "add, lane {l}");
        assert_eq!(w(&after, 1, l), old(1) | i[1], "or, lane {l}");
        assert_eq!(w(&after, 2, l), old(2) ^ i[2], "xor, lane {l}");
        assert_eq!(
            w(&after, 3, l),
            (old(3) as i32).max(i[3] as i32) as u32,
            "smax, lane {l}"
        );
        assert_eq!(
            w(&after, 4, l),
            (old(4) as i32).min(i[4] as i32) as u32,
            "smin, lane {l}"
        );
        let cas = if old(5) == i[5] { i[4] } else { old(5) };
        assert_eq!(w(&after, 5, l), cas, "cmpswap, lane {l}");
        let o6 = w64(&init, 6, l);
        let cas2 = if o6 == x64(i[0], i[1]) {
            x64(i[6], i[7])
        } else {
            o6
        };
        assert_eq!(w64(&after, 6, l), cas2, "cmpswap_x2, lane {l}");
        assert_eq!(
            w64(&after, 7, l),
            w64(&init, 7, l).max(x64(i[0], i[1])),
            "umax_x2, lane {l}"
        );
        assert_eq!(
            w64(&after, 8, l),
            w64(&init, 8, l).min(x64(i[2], i[3])),
            "umin_x2, lane {l}"
        );
    }
    assert_eq!(le(&after, 8704), 1000 + 64 * 65 / 2, "contended add");
}

// ---------------------------------------------------------------- DPP and SDWA

/// The lane a DPP control reads for lane `l` (None: out of range).
fn dpp_source(ctrl: &str, l: usize) -> Option<usize> {
    let (row, col) = (l / 16, l % 16);
    let n = |p: &str| ctrl.strip_prefix(p).and_then(|s| s.parse::<usize>().ok());
    if let Some(q) = ctrl.strip_prefix("quad_perm:[") {
        let sel: Vec<usize> = q
            .trim_end_matches(']')
            .split(',')
            .map(|s| s.parse().unwrap())
            .collect();
        return Some(l & !3 | sel[l & 3]);
    }
    if let Some(k) = n("row_shr:") {
        return (col >= k).then(|| l - k);
    }
    if let Some(k) = n("row_ror:") {
        return Some(row * 16 + (col + 16 - k) % 16);
    }
    match ctrl {
        "row_bcast:15" => (row > 0).then(|| row * 16 - 1),
        "row_bcast:31" => (row >= 2).then_some(31),
        _ => panic!("no model for {ctrl}"),
    }
}

/// The DPP forms of the corpus. Destinations start as v6; a lane is
/// written when row and bank masks allow it and its source is in range
/// (or bound_ctrl makes an out-of-range source read 0).
#[test]
fn dpp_forms() {
    let dev = Device::new();
    let body = "v_mov_b32 v20, v6\nv_mov_b32_dpp v20, v4 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf\n\
                v_mov_b32 v21, v6\nv_mov_b32_dpp v21, v4 quad_perm:[2,3,0,1] row_mask:0xf bank_mask:0xf\n\
                v_mov_b32 v22, v6\nv_mov_b32_dpp v22, v4 quad_perm:[3,2,1,0] row_mask:0xf bank_mask:0xf\n\
                v_mov_b32 v23, v6\nv_mov_b32_dpp v23, v4 row_bcast:15 row_mask:0xa bank_mask:0xf\n\
                v_mov_b32 v24, v6\nv_mov_b32_dpp v24, v4 row_bcast:15 row_mask:0xf bank_mask:0xf\n\
                v_mov_b32 v25, v6\nv_mov_b32_dpp v25, v4 row_bcast:31 row_mask:0xc bank_mask:0xf\n\
                v_mov_b32 v26, v6\nv_mov_b32_dpp v26, v4 row_bcast:31 row_mask:0xf bank_mask:0xf\n\
                v_mov_b32 v27, v6\nv_mov_b32_dpp v27, v4 row_shr:2 row_mask:0xf bank_mask:0xf\n\
                v_mov_b32 v28, v6\nv_mov_b32_dpp v28, v4 row_shr:4 row_mask:0xf bank_mask:0xe\n\
                v_mov_b32 v29, v6\nv_mov_b32_dpp v29, v4 row_shr:4 row_mask:0xf bank_mask:0xf\n\
                v_mov_b32 v30, v6\nv_mov_b32_dpp v30, v4 row_shr:8 row_mask:0xf bank_mask:0xc\n\
                v_mov_b32 v31, v6\nv_mov_b32_dpp v31, v4 row_shr:8 row_mask:0xf bank_mask:0xf\n\
                v_mov_b32 v32, v6\nv_add_u32_dpp v32, v4, v5 row_ror:1 row_mask:0xf bank_mask:0xf bound_ctrl:1\n\
                v_mov_b32 v33, v6\nv_add_u32_dpp v33, v4, v5 row_ror:2 row_mask:0xf bank_mask:0xf bound_ctrl:1\n\
                v_mov_b32 v34, v6\nv_add_u32_dpp v34, v4, v5 row_ror:4 row_mask:0xf bank_mask:0xf bound_ctrl:1\n\
                v_mov_b32 v35, v6\nv_add_u32_dpp v35, v4, v5 row_ror:8 row_mask:0xf bank_mask:0xf bound_ctrl:1";
    // The controls and masks of each DPP line, read back from the body.
    let forms: Vec<(bool, String, u32, u32, bool)> = body
        .lines()
        .filter_map(|line| {
            let (_, dpp) = line.split_once("_dpp ")?;
            let words: Vec<&str> = dpp.split_whitespace().collect();
            let ctrl = words
                .iter()
                .find(|w| w.contains(':') && !w.contains("mask") && !w.starts_with("bound"))?;
            let mask = |k: &str| {
                let w = words.iter().find_map(|w| w.strip_prefix(k)).expect("mask");
                u32::from_str_radix(w.trim_start_matches("0x"), 16).expect("hex")
            };
            Some((
                line.contains("v_add_u32_dpp"),
                ctrl.to_string(),
                mask("row_mask:"),
                mask("bank_mask:"),
                line.contains("bound_ctrl:1"),
            ))
        })
        .collect();
    assert_eq!(forms.len(), 16);
    check_lanes(&dev, &Lanes::new(body, 16), random, |l, i| {
        let x = |s: usize| random(s)[0];
        forms
            .iter()
            .map(|(add, ctrl, rm, bm, bound)| {
                let enabled = rm >> (l / 16) & 1 != 0 && bm >> (l % 16 / 4) & 1 != 0;
                let src = match dpp_source(ctrl, l) {
                    Some(s) => Some(x(s)),
                    None if *bound => Some(0),
                    None => None,
                };
                match src {
                    Some(v) if enabled => {
                        if *add {
                            v.wrapping_add(i[1])
                        } else {
                            v
                        }
                    }
                    _ => i[2],
                }
            })
            .collect()
    });
}

/// The SDWA forms of the corpus: operand selects zero-extend (no sext in
/// these), dst_sel DWORD writes the whole result, WORD_1 with UNUSED_PAD
/// the low word of the result into the high word and zeros below.
#[test]
fn sdwa_forms() {
    let dev = Device::new();
    let body = "v_add_u32_sdwa v20, v4, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_1 src1_sel:DWORD\n\
                v_add_u32_sdwa v21, v4, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_3 src1_sel:DWORD\n\
                v_add_u32_sdwa v22, v4, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:BYTE_0\n\
                v_add_u32_sdwa v23, v4, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:BYTE_3\n\
                v_add_u32_sdwa v24, v4, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1 src1_sel:DWORD\n\
                v_mul_lo_u16_sdwa v25, v4, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:DWORD\n\
                v_mul_lo_u16_sdwa v26, v4, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_1 src1_sel:DWORD\n\
                v_mul_u32_u24_sdwa v27, v4, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_0 src1_sel:DWORD\n\
                v_or_b32_sdwa v28, v4, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:DWORD\n\
                v_or_b32_sdwa v29, v4, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:BYTE_0\n\
                v_or_b32_sdwa v30, v4, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_0 src1_sel:DWORD\n\
                v_mov_b32 v31, v6\n\
                v_or_b32_sdwa v31, v4, v5 dst_sel:WORD_1 dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:DWORD\n\
                v_sub_u32_sdwa v32, v4, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:WORD_0\n\
                v_xor_b32_sdwa v33, v4, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1 src1_sel:DWORD\n\
                v_cmp_eq_u16_sdwa vcc, v4, v5 src0_sel:BYTE_0 src1_sel:DWORD\n\
                v_cndmask_b32 v34, 0, 1, vcc\n\
                v_cmp_ne_u16_sdwa s[20:21], v4, v5 src0_sel:BYTE_0 src1_sel:DWORD\n\
                v_cmp_ne_u32_sdwa vcc, v4, v5 src0_sel:BYTE_0 src1_sel:DWORD\n\
                v_cndmask_b32_e64 v35, 0, 1, s[20:21]\n\
                v_cndmask_b32 v35, v35, 2, vcc\n\
                v_cndmask_b32 v36, 0, 1, vcc\n\
                v_lshlrev_b32 v36, 1, v36\n\
                v_cndmask_b32_e64 v37, 0, 1, s[20:21]\n\
                v_or_b32 v35, v36, v37";
    let inputs = |l: usize| {
        let mut i = random(l);
        // Byte 0 of x equals y (lanes 3k), or y's low half only (3k + 1).
        match l % 3 {
            0 => i[1] = i[0] & 0xff,
            1 => i[1] = i[0] & 0xff | 0x10000,
            _ => {}
        }
        i
    };
    check_lanes(&dev, &Lanes::new(body, 16), inputs, |_, i| {
        let (x, y, old) = (i[0], i[1], i[2]);
        let b = |v: u32, k: u32| v >> (8 * k) & 0xff;
        let w = |v: u32, k: u32| v >> (16 * k) & 0xffff;
        let _ = old;
        vec![
            b(x, 1).wrapping_add(y),
            b(x, 3).wrapping_add(y),
            x.wrapping_add(b(y, 0)),
            x.wrapping_add(b(y, 3)),
            w(x, 1).wrapping_add(y),
            (b(x, 0) as u16).wrapping_mul(y as u16) as u32,
            (b(x, 1) as u16).wrapping_mul(y as u16) as u32,
            w(x, 0).wrapping_mul(y & 0xff_ffff),
            b(x, 0) | y,
            x | b(y, 0),
            w(x, 0) | y,
            ((b(x, 0) | y) & 0xffff) << 16,
            x.wrapping_sub(w(y, 0)),
            w(x, 1) ^ y,
            (b(x, 0) == y & 0xffff) as u32,
            (b(x, 0) != y & 0xffff) as u32 | ((b(x, 0) != y) as u32) << 1,
        ]
    });
}

/// SDWA with scalar operands, as the corpus has them (src1 an SGPR for
/// v_mul_u32_u24, v_add_u32 and v_mul_lo_u16, src0 an SGPR for v_or_b32).
#[test]
fn sdwa_forms_with_scalar_operands() {
    let dev = Device::new();
    let (s, t) = (0x8badf00du32, 0x12345687u32);
    let body = format!(
        "s_mov_b32 s22, {s:#x}\ns_mov_b32 s23, {t:#x}\n\
         v_mul_u32_u24_sdwa v20, v4, s22 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_0 src1_sel:DWORD\n\
         v_add_u32_sdwa v21, v4, s22 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1 src1_sel:DWORD\n\
         v_add_u32_sdwa v22, v4, s23 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_3 src1_sel:DWORD\n\
         v_add_u32_sdwa v23, v4, s23 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_1 src1_sel:DWORD\n\
         v_mul_lo_u16_sdwa v24, v4, s23 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:DWORD\n\
         v_or_b32_sdwa v25, s22, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:BYTE_0"
    );
    check_lanes(&dev, &Lanes::new(&body, 6), random, |_, i| {
        let (x, y) = (i[0], i[1]);
        let b = |v: u32, k: u32| v >> (8 * k) & 0xff;
        vec![
            (x & 0xffff).wrapping_mul(s & 0xff_ffff),
            (x >> 16).wrapping_add(s),
            b(x, 3).wrapping_add(t),
            b(x, 1).wrapping_add(t),
            (b(x, 0) as u16).wrapping_mul(t as u16) as u32,
            s | b(y, 0),
        ]
    });
}

// ---------------------------------------------------------------- conversions

/// Float to integer conversions truncate toward zero and saturate; NaN
/// converts to 0 (Rust's `as` casts have the same definition).
#[test]
fn float_to_integer_conversions() {
    let dev = Device::new();
    let t: [f64; 16] = [
        0.0,
        -0.0,
        0.75,
        -0.75,
        1.5,
        -2.5,
        123456.9,
        -123456.9,
        2147483647.5,
        -2147483649.0,
        4294967295.0,
        4294967296.0,
        1e20,
        -1e20,
        f64::INFINITY,
        f64::NAN,
    ];
    let body = "v_cvt_u32_f32 v20, v4\n\
                v_cvt_u32_f32_e64 v21, |v4|\n\
                v_cvt_i32_f64 v22, v[6:7]\n\
                v_cvt_i32_f64_e64 v23, -v[6:7]\n\
                v_lshrrev_b32 v24, v0, v5\n\
                v_lshrrev_b32_e64 v25, 33, v5";
    let inputs = |l: usize| {
        let mut i = random(l);
        let x = t[l % 16];
        i[0] = f(x as f32);
        (i[2], i[3]) = (lo(x.to_bits()), hi(x.to_bits()));
        i
    };
    check_lanes(&dev, &Lanes::new(body, 6), inputs, |l, i| {
        let x = t[l % 16];
        vec![
            (x as f32) as u32,
            (x as f32).abs() as u32,
            x as i32 as u32,
            (-x) as i32 as u32,
            i[1] >> (l & 31),
            i[1] >> 1,
        ]
    });
}

/// v_cmp_class_f64 over every class, with masks of one class per lane.
#[test]
fn float_class_f64() {
    let dev = Device::new();
    let vals: [u64; 10] = [
        0x7ff0_0000_0000_0001,
        0x7ff8_0000_0000_0000,
        0xfff0_0000_0000_0000,
        0xc004_0000_0000_0000,
        0x8000_0000_0000_0100,
        0x8000_0000_0000_0000,
        0,
        0x0000_0000_0000_0003,
        0x3ff0_0000_0000_0000,
        0x7ff0_0000_0000_0000,
    ];
    let body = "v_cmp_class_f64 vcc, v[4:5], v6\nv_cndmask_b32 v20, 0, 1, vcc\n\
                v_cmp_class_f64_e64 s[20:21], v[4:5], v7\nv_cndmask_b32_e64 v21, 0, 1, s[20:21]";
    let inputs = |l: usize| {
        let mut i = random(l);
        (i[0], i[1]) = (lo(vals[l % 10]), hi(vals[l % 10]));
        i[2] &= 0x3ff;
        i[3] = 1 << (l / 6 % 10);
        i
    };
    check_lanes(&dev, &Lanes::new(body, 2), inputs, |l, i| {
        // The table is in class order: value k is of class k.
        let c = l % 10;
        vec![i[2] >> c & 1, i[3] >> c & 1]
    });
}

/// clang-19's f32 division (as in `opcodes.rs`) where div_scale must
/// rescale: the IEEE quotient for huge, tiny and subnormal operands.
#[test]
fn f32_division_with_rescaling() {
    let dev = Device::new();
    let body = "v_div_scale_f32 v12, s[20:21], v5, v5, v4\n\
                v_div_scale_f32 v13, vcc, v4, v5, v4\n\
                v_rcp_f32 v14, v12\n\
                v_fma_f32 v15, -v12, v14, 1.0\n\
                v_fma_f32 v14, v15, v14, v14\n\
                v_mul_f32 v15, v13, v14\n\
                v_fma_f32 v16, -v12, v15, v13\n\
                v_fma_f32 v15, v16, v14, v15\n\
                v_fma_f32 v12, -v12, v15, v13\n\
                v_div_fmas_f32 v12, v12, v14, v15\n\
                v_div_fixup_f32 v20, v12, v5, v4";
    let nd = |l: usize| -> (f32, f32) {
        match l {
            0 => (1e30, 1e-10),
            1 => (-3e38, 0.3),
            2 => (1e-30, 1e10),
            3 => (3e-38, 7.0),
            4 => (0.5, 3e38),
            5 => (1e-10, 3.3e38),
            6 => (1.0, 1e-45),
            7 => (3.0, 2.5e-40),
            8 => (2.5e-40, 1e-30),
            9 => (4e-44, 3.0),
            10 => (3e38, 1e-30),
            11 => (1e-30, 1e30),
            12 => (1e-45, 0.75),
            13 => (1.0, 3.0),
            // Finite values of any exponent, subnormals included.
            _ => {
                let r = random(l);
                let any = |b: u32| f32::from_bits(b & 0x807f_ffff | ((b >> 23 & 0xff) % 255) << 23);
                (any(r[0]), any(r[1]))
            }
        }
    };
    let inputs = |l: usize| {
        let (n, d) = nd(l);
        [f(n), f(d), 0, 0, 0, 0, 0, 0]
    };
    check_lanes(&dev, &Lanes::new(body, 1), inputs, |l, _| {
        let (n, d) = nd(l);
        vec![f(n / d)]
    });
}

/// DPP with the destination also the source, as the corpus' reductions
/// have it: every lane reads the source as it was before the instruction.
#[test]
fn dpp_in_place() {
    let dev = Device::new();
    let body = "v_mov_b32 v20, v4\n\
                v_mov_b32_dpp v20, v20 row_shr:1 row_mask:0xf bank_mask:0xf\n\
                v_mov_b32 v21, v4\n\
                v_add_u32_dpp v21, v21, v21 row_ror:4 row_mask:0xf bank_mask:0xf bound_ctrl:1\n\
                v_mov_b32 v22, v4\n\
                v_mov_b32_dpp v22, v22 row_bcast:15 row_mask:0xa bank_mask:0xf";
    check_lanes(&dev, &Lanes::new(body, 3), random, |l, i| {
        let x = |s: usize| random(s)[0];
        let (row, col) = (l / 16, l % 16);
        vec![
            if col >= 1 { x(l - 1) } else { i[0] },
            x(row * 16 + (col + 12) % 16).wrapping_add(i[0]),
            if row % 2 == 1 { x(row * 16 - 1) } else { i[0] },
        ]
    });
}

/// MUBUF as clang uses it for the stack: the private segment buffer V# in
/// s[0:3] (swizzled per lane), `off` or a VGPR offset, an immediate offset.
/// Each lane has its own private memory.
#[test]
fn buffer_private_segment() {
    let dev = Device::new();
    let body = "buffer_store_dword v4, off, s[0:3], 0 offset:16\n\
                v_mov_b32 v12, 8\n\
                buffer_store_dword v5, v12, s[0:3], 0 offen offset:4\n\
                buffer_store_dword v6, v12, s[0:3], 0 offen\n\
                s_waitcnt vmcnt(0)\n\
                buffer_load_dword v20, off, s[0:3], 0 offset:16\n\
                buffer_load_dword v21, off, s[0:3], 0 offset:12\n\
                buffer_load_dword v22, v12, s[0:3], 0 offen\n\
                s_waitcnt vmcnt(0)";
    let mut t = Lanes::new(body, 3);
    t.scratch = 64;
    check_lanes(&dev, &t, random, |_, i| vec![i[0], i[1], i[2]]);
}

/// Private memory as bytes, whatever layout holds it: dword pairs at a
/// different offset in each lane, a dword under a partial EXEC at one
/// offset, a byte written into the middle of it, and reads of whole,
/// pair and unaligned dwords.
#[test]
fn buffer_private_mixed_widths() {
    let dev = Device::new();
    let body = "v_and_b32 v12, 3, v0\n\
                v_lshlrev_b32 v12, 3, v12\n\
                buffer_store_dwordx2 v[4:5], v12, s[0:3], 0 offen offset:32\n\
                v_cmp_gt_u32 vcc, 32, v0\n\
                s_and_saveexec_b64 s[20:21], vcc\n\
                buffer_store_dword v6, off, s[0:3], 0 offset:64\n\
                s_mov_b64 exec, s[20:21]\n\
                buffer_store_byte v7, off, s[0:3], 0 offset:66\n\
                s_waitcnt vmcnt(0)\n\
                buffer_load_dwordx2 v[20:21], v12, s[0:3], 0 offen offset:32\n\
                buffer_load_dword v22, off, s[0:3], 0 offset:64\n\
                buffer_load_dword v23, off, s[0:3], 0 offset:65\n\
                s_waitcnt vmcnt(0)";
    let mut t = Lanes::new(body, 4);
    t.scratch = 96;
    check_lanes(&dev, &t, random, |l, i| {
        // Bytes 64..68 of the lane: i[2] where the lane was active (zero
        // elsewhere), byte 66 replaced by i[3]'s low byte; 68.. stay zero.
        let kept = if l < 32 { i[2] } else { 0 };
        let dword = kept & !0x00ff_0000 | (i[3] & 0xff) << 16;
        vec![i[0], i[1], dword, dword >> 8]
    });
}

/// MUBUF to the private buffer with an SGPR offset, as clang addresses the
/// stack of functions: the SGPR offset (the stack pointer s32) is a
/// wavefront-level byte offset, 64 times a lane's (clang makes a lane's
/// pointer to a stack object with `v_lshrrev_b32 v, 6, s32`), added after
/// the swizzle; the immediate and VGPR offsets are the lane's own. So a
/// store at s32 = 0x400 offset:4 is the dword a lane reads at its own
/// offset 0x400 / 64 + 4 = 20.
#[test]
fn buffer_private_stack_pointer_is_wave_scaled() {
    let dev = Device::new();
    let body = "s_mov_b32 s32, 0x400\n\
                buffer_store_dword v4, off, s[0:3], s32 offset:4\n\
                v_lshrrev_b32 v12, 6, s32\n\
                buffer_store_dword v5, v12, s[0:3], 0 offen offset:8\n\
                s_waitcnt vmcnt(0)\n\
                v_mov_b32 v13, 20\n\
                buffer_load_dword v20, v13, s[0:3], 0 offen\n\
                buffer_load_dword v21, off, s[0:3], s32 offset:8\n\
                s_waitcnt vmcnt(0)";
    let mut t = Lanes::new(body, 2);
    t.scratch = 64;
    check_lanes(&dev, &t, random, |_, i| vec![i[0], i[1]]);
}

// ---------------------------------------------------------------- float atomics

/// gfx90a's float atomics with glc return the old value; each lane has its
/// own 8-byte slot in a region per operation. Values are small multiples of
/// 1/4 (exact sums); f16 halves by their IEEE binary16 encodings.
#[test]
fn float_atomics_global_and_flat() {
    let dev = Device::new();
    let a = |l: usize| (l as f64 - 31.5) * 0.75;
    let old = |l: usize| ((l * 7) % 13) as f64 - 6.0;
    let mut mem = vec![0u8; 8192];
    for l in 0..64 {
        for r in [0, 1, 2, 5, 6, 7] {
            let at = 4096 + 512 * r + 8 * l;
            mem[at..at + 8].copy_from_slice(&old(l).to_le_bytes());
        }
        let at = 4096 + 512 * 3 + 8 * l;
        mem[at..at + 4].copy_from_slice(&1.25f32.to_le_bytes());
        // 3.0 (high half), -3.0 (low half).
        let at = 4096 + 512 * 4 + 8 * l;
        mem[at..at + 4].copy_from_slice(&0x4200_c200u32.to_le_bytes());
    }
    let init = mem.clone();
    let body = format!(
        "{DATA}s_add_u32 s46, s44, 0x1000\ns_addc_u32 s47, s45, 0\n\
         v_lshlrev_b32 v12, 3, v0\n\
         global_atomic_add_f64 v[20:21], v12, v[4:5], s[46:47] glc\n\
         global_atomic_min_f64 v[22:23], v12, v[4:5], s[46:47] offset:512 glc\n\
         global_atomic_max_f64 v[24:25], v12, v[4:5], s[46:47] offset:1024 glc\n\
         global_atomic_add_f32 v26, v12, v6, s[46:47] offset:1536 glc\n\
         global_atomic_pk_add_f16 v27, v12, v7, s[46:47] offset:2048 glc\n\
         v_mov_b32 v15, s47\n\
         v_add_co_u32 v14, vcc, s46, v12\n\
         v_addc_co_u32 v15, vcc, 0, v15, vcc\n\
         flat_atomic_add_f64 v[28:29], v[14:15], v[4:5] offset:2560 glc\n\
         flat_atomic_min_f64 v[30:31], v[14:15], v[4:5] offset:3072 glc\n\
         flat_atomic_max_f64 v[32:33], v[14:15], v[4:5] offset:3584 glc\n\
         s_waitcnt vmcnt(0) lgkmcnt(0)"
    );
    let mut t = Lanes::new(&body, 14);
    t.mem = mem;
    let inputs = |l: usize| {
        let x = a(l).to_bits();
        // 2.0 (low half), 1.0 (high half).
        let (f32_in, pk) = ((l as f32 * 0.5).to_bits(), 0x3c00_4000);
        [x as u32, (x >> 32) as u32, f32_in, pk, 0, 0, 0, 0]
    };
    let w64 = |m: &[u8], region: usize, l: usize| {
        let at = 4096 + 512 * region + 8 * l;
        f64::from_le_bytes(m[at..at + 8].try_into().unwrap())
    };
    let split = |x: f64| [x.to_bits() as u32, (x.to_bits() >> 32) as u32];
    let after = check_lanes(&dev, &t, inputs, |l, _| {
        let mut v = Vec::new();
        v.extend(split(old(l)));
        v.extend(split(old(l)));
        v.extend(split(old(l)));
        v.push(1.25f32.to_bits());
        v.push(0x4200_c200);
        for _ in 0..3 {
            v.extend(split(old(l)));
        }
        v
    });
    let Some(after) = after else {
        return;
    };
    for l in 0..64 {
        for (base, what) in [(0, "global"), (5, "flat")] {
            assert_eq!(
                w64(&after, base, l),
                old(l) + a(l),
                "{what} add_f64, lane {l}"
            );
            assert_eq!(
                w64(&after, base + 1, l),
                old(l).min(a(l)),
                "{what} min_f64, lane {l}"
            );
            assert_eq!(
                w64(&after, base + 2, l),
                old(l).max(a(l)),
                "{what} max_f64, lane {l}"
            );
        }
        let f = f32::from_bits(le(&after, 4096 + 512 * 3 + 8 * l));
        assert_eq!(f, 1.25 + l as f32 * 0.5, "add_f32, lane {l}");
        // 3.0 + 1.0 = 4.0 (0x4400) high, -3.0 + 2.0 = -1.0 (0xbc00) low.
        assert_eq!(
            le(&after, 4096 + 512 * 4 + 8 * l),
            0x4400_bc00,
            "pk_add_f16, lane {l}"
        );
    }
    assert_eq!(init.len(), after.len());
}

/// LDS f64 min/max (the new value replaces the old one when less / greater)
/// and the returning form; v_min_f64; s_ff1_i32_b64; the L2 cache
/// maintenance of system-scope fences (no effect on coherent memory).
#[test]
fn lds_min_max_f64_and_friends() {
    let dev = Device::new();
    // Lane l: LDS slot 16l holds l - 20 (written first); min with 0.5, then
    // max of slot 16l + 8 (holds l - 20) with 0.5; the min's result returned.
    let body = "v_lshlrev_b32 v3, 4, v0\n\
                v_subrev_u32 v4, 20, v0\n\
                v_cvt_f64_i32 v[4:5], v4\n\
                ds_write_b64 v3, v[4:5]\n\
                ds_write_b64 v3, v[4:5] offset:8\n\
                v_mov_b32 v6, 0\nv_mov_b32 v7, 0x3fe00000\n\
                ds_min_f64 v3, v[6:7]\n\
                ds_max_f64 v3, v[6:7] offset:8\n\
                ds_min_rtn_f64 v[8:9], v3, v[6:7]\n\
                ds_read_b64 v[10:11], v3 offset:8\n\
                s_waitcnt lgkmcnt(0)\n\
                buffer_wbl2\nbuffer_invl2\n\
                v_min_f64 v[8:9], v[8:9], v[10:11]\n\
                v_mov_b32 v1, v8\nv_mov_b32 v2, v9";
    // min(min(l - 20, 0.5), max(l - 20, 0.5)) = min(l - 20, 0.5).
    check_with(&dev, body, 64 * 16, 0, |l| {
        (l as f64 - 20.0).min(0.5).to_bits()
    });
    // s_ff1_i32_b64: the lowest set bit of a 64-bit value, -1 for 0.
    for (x, want) in [
        (0u64, -1i32),
        (1 << 40, 40),
        (0x8000_0000_0000_0000, 63),
        (6, 1),
    ] {
        let body = format!(
            "s_mov_b32 s2, {:#x}\ns_mov_b32 s3, {:#x}\ns_ff1_i32_b64 s0, s[2:3]\n\
             v_mov_b32 v1, s0",
            x as u32,
            (x >> 32) as u32
        );
        check(&dev, &body, |_| want as u32 as u64);
    }
}

/// GWS on one wave (a dispatch the device runs resident): a semaphore filled
/// by ds_gws_sema_br and ds_gws_sema_v is emptied by as many ds_gws_sema_p,
/// and a barrier of one wave (value 0) releases at once; a wrong count would
/// leave the wave waiting, which ends the dispatch as a deadlock. The
/// resource (9) is named through M0[21:16], as clang's code does.
#[test]
fn gws_semaphore_and_barrier_of_one_wave() {
    let dev = Device::new();
    let body = "s_mov_b32 m0, 0x90000\n\
                v_mov_b32 v4, 0\n\
                ds_gws_init v4 gds\n\
                v_mov_b32 v4, 2\n\
                ds_gws_sema_br v4 gds\n\
                ds_gws_sema_p gds\n\
                ds_gws_sema_v gds\n\
                ds_gws_sema_p gds\n\
                ds_gws_sema_p gds\n\
                v_mov_b32 v4, 0\n\
                ds_gws_barrier v4 gds\n\
                ds_gws_barrier v4 gds\n\
                v_mov_b32 v1, 7";
    check(&dev, body, |_| 7);
}

// ------------------------------------------- what compiled hooks use

/// The forms clang emits for device functions (fixtures/src/hooks_test.hip):
/// FLAT dword accesses to global memory and, through the private aperture,
/// to the lane's private memory at the stack pointer's lane offset
/// (`s32 >> 6`), which MUBUF reaches through s[0:3] with `s32` as soffset:
/// the same bytes. Also a 16-bit global load.
#[test]
fn flat_dwords_global_and_private() {
    let dev = Device::new();
    let data: Vec<u8> = (0..8192u32).map(|k| rnd(10, k) as u8).collect();
    let body = format!(
        "{DATA}v_lshlrev_b32 v12, 2, v0\n\
         v_mov_b32 v13, s45\n\
         v_add_co_u32 v12, vcc, s44, v12\n\
         v_addc_co_u32 v13, vcc, 0, v13, vcc\n\
         flat_load_dword v20, v[12:13]\n\
         flat_store_dword v[12:13], v4 offset:1024\n\
         v_lshlrev_b32 v16, 1, v0\n\
         global_load_ushort v21, v16, s[44:45] offset:2\n\
         s_movk_i32 s32, 0x400\n\
         s_mov_b64 s[46:47], src_private_base\n\
         v_lshrrev_b32_e64 v14, 6, s32\n\
         v_mov_b32 v15, s47\n\
         flat_store_dword v[14:15], v5\n\
         s_waitcnt vmcnt(0) lgkmcnt(0)\n\
         buffer_load_dword v22, off, s[0:3], s32\n\
         buffer_store_dword v6, off, s[0:3], s32 offset:4\n\
         s_waitcnt vmcnt(0)\n\
         v_add_u32 v14, 4, v14\n\
         flat_load_dword v23, v[14:15]\n\
         s_waitcnt vmcnt(0) lgkmcnt(0)"
    );
    let mut t = Lanes::new(&body, 4);
    t.mem = data.clone();
    t.scratch = 64;
    let mem = check_lanes(&dev, &t, random, |l, i| {
        vec![
            le(&data, 4 * l),
            u32::from(u16::from_le_bytes([data[2 * l + 2], data[2 * l + 3]])),
            i[1],
            i[2],
        ]
    });
    let Some(mem) = mem else {
        return;
    };
    for l in 0..64 {
        assert_eq!(le(&mem, 1024 + 4 * l), random(l)[0], "flat store, lane {l}");
    }
}

/// 64-bit global atomic add without return, every lane to one qword
/// (what HIP's atomicAdd on an unsigned long long compiles to once the
/// atomic optimizer has summed the wave).
#[test]
fn global_atomic_add_x2_accumulates() {
    let dev = Device::new();
    let data: Vec<u8> = (0..4096u32).map(|k| rnd(11, k) as u8).collect();
    let body = format!(
        "{DATA}v_mov_b32 v12, 0\n\
         global_atomic_add_x2 v12, v[4:5], s[44:45] offset:8\n\
         s_waitcnt vmcnt(0)\n\
         v_mov_b32 v20, 0"
    );
    let mut t = Lanes::new(&body, 1);
    t.mem = data.clone();
    let mem = check_lanes(&dev, &t, random, |_, _| vec![0]);
    let Some(mem) = mem else {
        return;
    };
    let old = u64::from(le(&data, 8)) | u64::from(le(&data, 12)) << 32;
    let sum = (0..64).fold(old, |a, l| {
        let i = random(l);
        a.wrapping_add(u64::from(i[0]) | u64::from(i[1]) << 32)
    });
    let got = u64::from(le(&mem, 8)) | u64::from(le(&mem, 12)) << 32;
    assert_eq!(got, sum);
}

#[test]
fn salu_find_first_and_compare_immediates() {
    let dev = Device::new();
    let ff1 = |x: u64| if x == 0 { u32::MAX } else { x.trailing_zeros() };
    let setup =
        "s_mov_b32 s2, 0x80000000\ns_mov_b32 s3, 0x10\ns_mov_b64 s[4:5], 0\ns_mov_b32 s6, 0x1234";
    scalar_cases(
        &dev,
        setup,
        &[
            ("s_ff1_i32_b64 s12, s[2:3]", vec![ff1(0x10_8000_0000)], None),
            ("s_ff1_i32_b64 s12, s[4:5]", vec![ff1(0)], None),
            ("s_ff1_i32_b64 s12, exec", vec![ff1(u64::MAX)], None),
            ("s_cmpk_eq_u32 s6, 0x1234", vec![], Some(true)),
            ("s_cmpk_eq_u32 s6, 0x1235", vec![], Some(false)),
        ],
    );
}

/// `s_trap` (device libraries' `__cxa_pure_virtual`) ends the dispatch
/// with a trap fault naming its code.
#[test]
fn s_trap_faults() {
    let dev = Device::new();
    let Some(r) = run_body_result(&dev, "s_trap 2", 0, 0) else {
        return;
    };
    let f = r.expect_err("s_trap must fault");
    assert_eq!(f.kind, inlay_vgpu::FaultKind::Trap(2));
    assert_eq!(f.instruction, "s_trap 2");
}

/// A 16-bit compare of the high word (clang's test of a u16 field of the
/// implicit arguments, in the hook module): the result goes to an SGPR pair;
/// and a shift of a low word (the hook module's address arithmetic).
#[test]
fn sdwa_compare_of_a_high_word() {
    let dev = Device::new();
    let body = "v_cmp_ne_u16_sdwa s[20:21], v4, v5 src0_sel:WORD_1 src1_sel:DWORD\n\
                v_cndmask_b32_e64 v20, 0, 1, s[20:21]\n\
                v_lshlrev_b32_sdwa v21, v4, v5 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:WORD_0";
    let inputs = |l: usize| {
        let mut i = random(l);
        if l.is_multiple_of(2) {
            i[1] = i[1] & 0xffff_0000 | i[0] >> 16; // equal words in half the lanes
        }
        i
    };
    check_lanes(&dev, &Lanes::new(body, 2), inputs, |_, i| {
        vec![
            u32::from((i[0] >> 16) as u16 != i[1] as u16),
            (i[1] & 0xffff) << (i[0] & 31),
        ]
    });
}

/// Signed integer to float, rounded to nearest even (the grid_shapes
/// fixture's complex arithmetic): small, negative and past-2^24 values.
#[test]
fn cvt_f32_i32_rounds_to_nearest_even() {
    let dev = Device::new();
    let body = "v_cvt_f32_i32 v20, v4\n\
                s_mov_b32 s10, 0xffffffb3\n\
                v_cvt_f32_i32_e64 v21, s10";
    let inputs = |l: usize| {
        let mut i = random(l);
        i[0] = match l % 4 {
            0 => (l as i32 - 38) as u32,
            1 => i[0] | 0x8000_0000,
            2 => (1 << 24) + 2 * l as u32 + 1, // halfway cases
            _ => i[0],
        };
        i
    };
    check_lanes(&dev, &Lanes::new(body, 2), inputs, |_, i| {
        vec![(i[0] as i32 as f32).to_bits(), (-77.0f32).to_bits()]
    });
}
