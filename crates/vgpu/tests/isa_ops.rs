//! Per-opcode tests for the rest of the mnemonics of `tests/mnemonics.txt`
//! (the gfx90a fixtures and librocsparse0), grouped by unit. Each kernel
//! body is assembled with llvm-mc-19 at test time and run on one workgroup;
//! per-lane inputs come from memory (v[4:11]), results from v20.. (see
//! [`common::asm::Lanes`]), and every expected value is computed here from
//! the ISA's definition of the operation, in plain Rust.

// The unordered compares are defined as negated ordered ones.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod common;

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
    let ops: [(&str, Cmp); 10] = [
        ("eq", |a, b| a == b),
        ("ge", |a, b| a >= b),
        ("gt", |a, b| a > b),
        ("le", |a, b| a <= b),
        ("lt", |a, b| a < b),
        ("neq", |a, b| a != b),
        ("nge", |a, b| !(a >= b)),
        ("ngt", |a, b| !(a > b)),
        ("nlt", |a, b| !(a < b)),
        ("o", |a, b| !a.is_nan() && !b.is_nan()),
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
    let names32: Vec<String> = ops.iter().map(|o| format!("v_cmp_{}_f32", o.0)).collect();
    let names64: Vec<String> = ops.iter().map(|o| format!("v_cmp_{}_f64", o.0)).collect();
    let n32: Vec<&str> = names32.iter().map(String::as_str).collect();
    let n64: Vec<&str> = names64.iter().map(String::as_str).collect();
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
            ops.iter().map(|(_, c)| c(t[a], t[b]) as u32).collect()
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
