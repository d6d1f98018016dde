//! A hook's body optimised for what its point tells about its inputs
//! (issue 13): the constants its arguments are, and EXEC (one lane for a
//! once-per-wave hook; never no lane, the sequence skips the body then).
//!
//! Three exact steps, repeated while they change something:
//! 1. What every register holds before each instruction, as far as it is
//!    known — a constant, EXEC's value at the entry (`E`, a half of it),
//!    the index of its one lane when it has one, what an SGPR holds (a
//!    copy), a half of the address a global-offset-table entry holds —
//!    found over the paths
//!    that can run (a branch whose condition is known has one successor),
//!    so a loop whose exit is known on its first pass is seen to run once.
//!    A VGPR's value means its value in every lane of `E`.
//! 2. Folds: a conditional branch on a known condition becomes a branch or
//!    nothing; an instruction whose results the registers already hold is
//!    dropped; one whose live results are known becomes the move of them
//!    (one instruction at most); code no path reaches is dropped.
//! 3. Dead code: instructions with no effect but registers, none of them
//!    read before being written again or before the body ends (where only
//!    EXEC is read: the hook's registers are dead at its point, and SCC,
//!    VCC and M0 are saved around the body when the point needs them).
//!
//! And two rewrites the values make possible: a global atomic run in one
//! lane on uniform operands becomes the scalar atomic (instruction
//! selection: see [`scalar_atomic`] for when that is exact), after which
//! nothing vector may be left and the inliner sets no lane; and a 32-bit
//! move of a constant becomes a 64-bit one when that saves the move of
//! the pair's other half.
//!
//! Each fold is made only when the instruction's AMD semantics are known
//! here for certain (a short list of SALU and VALU operations); any other
//! instruction makes what it writes unknown and is kept unless dead.

use inlay_isa::{info, Encoding, Instruction, InstructionInfo, Operand, RegFile};

use super::asm::Asm;
use super::inline::Kind;
use crate::regs::{self as bits, RegSet};

/// What the point tells about a body's inputs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(super) struct Facts {
    /// EXEC holds exactly one lane (a once-per-wave hook).
    pub(super) one_lane: bool,
    /// VGPRs (the hook's numbers) holding a known value in every lane.
    pub(super) vgprs: Vec<(u16, u32)>,
    /// Entries of the module's global offset table ([`Kind::Got`]
    /// distances) and the alignment (bytes) of the address each holds.
    pub(super) got_align: Vec<(i64, u64)>,
    /// The one family of atomic operation ([`atomic_family`]) every memory
    /// access of the module's hooks in this kernel makes, global-offset-
    /// table loads aside: then a one-lane global atomic of it may become
    /// the scalar one (see [`scalar_atomic`]).
    pub(super) scalar_atomics: Option<&'static str>,
}

/// What a 32-bit register holds, as far as it is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum V {
    Unknown,
    C(u32),
    /// The low or high half of EXEC's value where the body starts.
    ExecLo,
    ExecHi,
    /// The index of the one lane of that EXEC (one-lane bodies only).
    Lane,
    /// What SGPR `n` holds now (in a VGPR: in every lane of `E`). A write
    /// of `n` makes every copy of it unknown.
    Copy(u16),
    /// The low or high half of the address the global-offset-table entry
    /// this far from the hook's entry holds (a global of the module; 32
    /// bits keep a value, and the states copied per instruction, small:
    /// an entry farther away is not followed).
    GotLo(i32),
    GotHi(i32),
}

use V::*;

// (States hold a value per tracked register and are copied per
// instruction: a value is kept to 8 bytes.)
const _: () = assert!(std::mem::size_of::<V>() == 8);

/// Bits of [`RegSet`] layout tracked here: scalar ones up to SCC, VGPRs.
const SCALARS: usize = bits::SCC as usize + 1;
const SCC: usize = bits::SCC as usize;
const EXEC: usize = bits::EXEC as usize;
const VCC: usize = bits::VCC as usize;

/// VGPRs tracked (hooks' arguments and ABI inputs are below 32; higher
/// ones are always unknown, which keeps states small to copy).
const VGPRS: usize = 64;

#[derive(Clone, PartialEq)]
struct State {
    s: [V; SCALARS],
    v: [V; VGPRS],
}

impl State {
    fn join(&mut self, o: &State) -> bool {
        let mut changed = false;
        for (a, b) in self
            .s
            .iter_mut()
            .zip(&o.s)
            .chain(self.v.iter_mut().zip(&o.v))
        {
            if *a != *b && *a != Unknown {
                *a = Unknown;
                changed = true;
            }
        }
        changed
    }

    fn exec_is_entry(&self) -> bool {
        self.s[EXEC] == ExecLo && self.s[EXEC + 1] == ExecHi
    }

    fn get(&self, bit: u16) -> V {
        let b = usize::from(bit);
        if b < SCALARS {
            self.s[b]
        } else if (bits::VGPR_BASE..bits::AGPR_BASE).contains(&bit) {
            self.v
                .get(b - usize::from(bits::VGPR_BASE))
                .copied()
                .unwrap_or(Unknown)
        } else {
            Unknown
        }
    }

    /// Applies an instruction's writes (values computed before it).
    fn apply(&mut self, writes: &[(u16, V)]) {
        let written = |n: u16| writes.iter().any(|&(b, _)| b == n);
        // (Copies are of SGPRs only: a write of none leaves them all.)
        if writes.iter().any(|&(b, _)| b < bits::NUM_SGPRS) {
            for slot in self.s.iter_mut().chain(self.v.iter_mut()) {
                if matches!(*slot, Copy(n) if written(n)) {
                    *slot = Unknown;
                }
            }
        }
        for &(b, x) in writes {
            // (A copy of a register written here, itself included, would
            // stand for its new value.)
            let x = match x {
                Copy(n) if written(n) => Unknown,
                x => x,
            };
            self.set(b, x);
        }
    }

    /// SGPR `n`'s value as a source: what it holds, or a copy of it.
    fn sgpr(&self, n: u16) -> V {
        match self.get(n) {
            Unknown if n < bits::NUM_SGPRS => Copy(n),
            x => x,
        }
    }

    fn set(&mut self, bit: u16, x: V) {
        let b = usize::from(bit);
        if b < SCALARS {
            self.s[b] = x;
        } else if let Some(v) = (bits::VGPR_BASE..bits::AGPR_BASE)
            .contains(&bit)
            .then(|| self.v.get_mut(b - usize::from(bits::VGPR_BASE)))
            .flatten()
        {
            *v = x;
        }
    }

    /// A 32-bit source.
    fn op32(&self, o: Option<Operand>) -> V {
        match o {
            Some(Operand::Sgpr { first, count: 1 }) => self.sgpr(first),
            Some(Operand::Special { code, count: 1 }) => self.get(u16::from(code)),
            Some(Operand::Vgpr { first, count: 1 }) => self.get(bits::VGPR_BASE + first),
            Some(Operand::Literal(v)) => C(v),
            Some(Operand::Inline(c)) => inline_int(c).map_or(Unknown, |v| C(v as u32)),
            _ => Unknown,
        }
    }

    /// A 64-bit scalar source, as its halves.
    fn op64(&self, o: Option<Operand>) -> [V; 2] {
        match o {
            Some(Operand::Sgpr { first, count: 2 }) => [self.sgpr(first), self.sgpr(first + 1)],
            Some(Operand::Special { code, count: 2 }) => {
                let c = u16::from(code);
                [self.get(c), self.get(c + 1)]
            }
            Some(Operand::Inline(c)) => inline_int(c).map_or([Unknown; 2], |v| {
                let v = i64::from(v) as u64;
                [C(v as u32), C((v >> 32) as u32)]
            }),
            _ => [Unknown; 2],
        }
    }
}

/// An integer inline constant's value.
pub(super) fn inline_int(c: u8) -> Option<i32> {
    match c {
        128..=192 => Some(i32::from(c) - 128),
        193..=208 => Some(192 - i32::from(c)),
        _ => None,
    }
}

/// The first bit of a 32- or 64-bit scalar destination.
fn dest(o: Option<Operand>) -> Option<u16> {
    match o? {
        Operand::Sgpr { first, .. } => Some(first),
        Operand::Special { code, .. } => Some(u16::from(code)),
        Operand::Vgpr { first, .. } => Some(bits::VGPR_BASE + first),
        _ => None,
    }
}

fn both_c(x: [V; 2]) -> Option<u64> {
    match x {
        [C(l), C(h)] => Some(u64::from(l) | u64::from(h) << 32),
        _ => None,
    }
}

fn halves(v: u64) -> [V; 2] {
    [C(v as u32), C((v >> 32) as u32)]
}

/// Whether a 64-bit value is known not to be zero.
fn nonzero64(x: [V; 2]) -> Option<bool> {
    match x {
        [ExecLo, ExecHi] => Some(true), // the body runs with lanes on
        _ => both_c(x).map(|v| v != 0),
    }
}

fn scc_of(b: Option<bool>) -> V {
    b.map_or(Unknown, |b| C(u32::from(b)))
}

/// A bitwise operation on one half.
fn bitwise(op: &str, a: V, b: V) -> V {
    match (op, a, b) {
        (_, C(x), C(y)) => C(match op {
            "and" => x & y,
            "or" => x | y,
            "xor" => x ^ y,
            _ => x & !y, // andn2
        }),
        ("and" | "or", x, y) if x == y && x != Unknown => x,
        ("xor" | "andn2", x, y) if x == y && x != Unknown => C(0),
        ("and", C(0), _) | ("and", _, C(0)) | ("andn2", C(0), _) => C(0),
        ("and", C(u32::MAX), x) | ("and", x, C(u32::MAX)) => x,
        ("or" | "xor", C(0), x) | ("or" | "xor" | "andn2", x, C(0)) => x,
        ("andn2", _, C(u32::MAX)) => C(0),
        ("or", C(u32::MAX), _) | ("or", _, C(u32::MAX)) => C(u32::MAX),
        _ => Unknown,
    }
}

/// A 64-bit bitwise result and its SCC (the result is not zero).
fn bitwise64(op: &str, a: [V; 2], b: [V; 2]) -> ([V; 2], V) {
    let r = [bitwise(op, a[0], b[0]), bitwise(op, a[1], b[1])];
    (r, scc_of(nonzero64(r)))
}

/// Whether VALU instruction `i` writes its whole 32-bit VGPR destination
/// in every lane EXEC enables (no partial or 16-bit writes, no lane masks).
fn full_vector_write(i: &Instruction) -> bool {
    let m = i.mnemonic();
    if m.contains("16") || m.starts_with("v_writelane") || m.starts_with("v_movrel") {
        return false;
    }
    match i.encoding() {
        Encoding::Vop1 | Encoding::Vop2 => true,
        Encoding::Vop3 => {
            matches!(
                m,
                "v_bcnt_u32_b32"
                    | "v_mbcnt_lo_u32_b32"
                    | "v_mbcnt_hi_u32_b32"
                    | "v_cndmask_b32_e64"
                    | "v_add_co_u32_e64"
                    | "v_addc_co_u32_e64"
                    | "v_add_u32_e64"
                    | "v_mad_u64_u32"
                    | "v_lshlrev_b64"
            ) && i.words()[0] & 0x7800 == 0 // no op_sel
        }
        Encoding::Vop3p => m == "v_pk_mov_b32",
        _ => false,
    }
}

/// Whether `i` does nothing but write registers (so it may go when they
/// are dead, or be replaced by moves of what it writes).
fn is_pure(i: &Instruction, inf: &InstructionInfo) -> bool {
    let m = i.mnemonic();
    let ok = match i.encoding() {
        Encoding::Sop1 => {
            !matches!(
                m,
                "s_setpc_b64" | "s_swappc_b64" | "s_rfe_b64" | "s_cbranch_join"
            ) && !m.starts_with("s_movrel")
                && !m.starts_with("s_set_gpr_idx")
        }
        Encoding::Sop2 | Encoding::Sopc => !m.starts_with("s_cbranch") && m != "s_set_gpr_idx_on",
        Encoding::Sopk => m == "s_movk_i32",
        Encoding::Vop1 | Encoding::Vop2 | Encoding::Vopc | Encoding::Vop3 | Encoding::Vop3p => {
            !m.starts_with("v_movrel") && !m.starts_with("v_nop")
        }
        _ => false,
    };
    // No registers written, nothing to drop it for (s_nop and the like
    // keep their wait states).
    ok && inf.used_registers().iter().any(|u| u.access.writes())
}

/// What `i` writes, as (bit, value) pairs, run with state `st`;
/// `one_lane`: EXEC at the entry is one lane.
fn transfer(i: &Instruction, inf: &InstructionInfo, st: &State, one_lane: bool) -> Vec<(u16, V)> {
    let mut out: Vec<(u16, V)> = Vec::new();
    if let Some(known) = evaluate(i, st, one_lane) {
        out = known;
    }
    // Everything else written (or the whole of an unknown instruction)
    // becomes unknown.
    for u in inf.used_registers() {
        if !u.access.writes() {
            continue;
        }
        if let Some((start, n)) = bits::bits_of(&u.register) {
            for b in start..start + n {
                if !out.iter().any(|&(x, _)| x == b) {
                    out.push((b, Unknown));
                }
            }
        }
    }
    out
}

/// The known results of the operations modelled here.
fn evaluate(i: &Instruction, st: &State, one_lane: bool) -> Option<Vec<(u16, V)>> {
    let m = i.mnemonic();
    let op = |k| i.operand(k);
    let scc = bits::SCC;
    let d = dest(op(0));
    match i.encoding() {
        Encoding::Sop1 | Encoding::Sop2 | Encoding::Sopc => {}
        Encoding::Vop1 | Encoding::Vop2 | Encoding::Vop3 | Encoding::Vopc | Encoding::Vop3p => {
            return evaluate_vector(i, st, one_lane)
        }
        _ => return None,
    }
    let s32 = |k| st.op32(op(k));
    let s64 = |k| st.op64(op(k));
    let pair = |d: u16, x: [V; 2]| vec![(d, x[0]), (d + 1, x[1])];
    Some(match m {
        "s_mov_b32" => vec![(d?, s32(1))],
        "s_mov_b64" => pair(d?, s64(1)),
        "s_cselect_b32" | "s_cselect_b64" => {
            let pick = match st.s[SCC] {
                C(1) => 1,
                C(0) => 2,
                _ => return None,
            };
            if m.ends_with("32") {
                vec![(d?, s32(pick))]
            } else {
                pair(d?, s64(pick))
            }
        }
        "s_and_b64" | "s_or_b64" | "s_xor_b64" | "s_andn2_b64" => {
            let (r, c) = bitwise64(&m[2..m.len() - 4], s64(1), s64(2));
            let mut v = pair(d?, r);
            v.push((scc, c));
            v
        }
        "s_and_b32" | "s_or_b32" | "s_xor_b32" | "s_andn2_b32" => {
            let r = bitwise(&m[2..m.len() - 4], s32(1), s32(2));
            let c = match r {
                C(x) => C(u32::from(x != 0)),
                _ => Unknown,
            };
            vec![(d?, r), (scc, c)]
        }
        "s_and_saveexec_b64" | "s_or_saveexec_b64" => {
            let exec = [st.s[EXEC], st.s[EXEC + 1]];
            let (r, c) = bitwise64(&m[2..m.len() - 13], s64(1), exec);
            let mut v = pair(d?, exec);
            v.extend(pair(bits::EXEC, r));
            v.push((scc, c));
            v
        }
        "s_lshl_b64" => {
            let (a, n) = (s64(1), s32(2));
            let r = match (both_c(a), n) {
                (Some(a), C(n)) => halves(a << (n & 63)),
                (Some(1), Lane) if one_lane => [ExecLo, ExecHi],
                _ => [Unknown; 2],
            };
            let mut v = pair(d?, r);
            v.push((scc, scc_of(nonzero64(r))));
            v
        }
        "s_lshl_b32" => {
            let r = match (s32(1), s32(2)) {
                (C(a), C(n)) => C(a << (n & 31)),
                _ => Unknown,
            };
            let c = match r {
                C(x) => C(u32::from(x != 0)),
                _ => Unknown,
            };
            vec![(d?, r), (scc, c)]
        }
        "s_ff1_i32_b64" => {
            let a = s64(1);
            let r = match (both_c(a), a) {
                (Some(0), _) => C(u32::MAX),
                (Some(v), _) => C(v.trailing_zeros()),
                (None, [ExecLo, ExecHi]) if one_lane => Lane,
                _ => Unknown,
            };
            vec![(d?, r)]
        }
        "s_bcnt1_i32_b64" => {
            let a = s64(1);
            let r = match (both_c(a), a) {
                (Some(v), _) => C(v.count_ones()),
                (None, [ExecLo, ExecHi]) if one_lane => C(1),
                _ => Unknown,
            };
            let c = match r {
                C(x) => C(u32::from(x != 0)),
                _ => Unknown,
            };
            vec![(d?, r), (scc, c)]
        }
        "s_add_u32" | "s_addc_u32" | "s_sub_u32" => {
            let carry_in = match (m, st.s[SCC]) {
                ("s_addc_u32", C(c)) => u64::from(c),
                ("s_addc_u32", _) => return None,
                _ => 0,
            };
            // Adding 0 (no carry in): the other operand, no carry out.
            match (m, s32(1), s32(2)) {
                (_, x, C(0)) | ("s_add_u32" | "s_addc_u32", C(0), x) if carry_in == 0 => {
                    return Some(vec![(d?, x), (scc, C(0))])
                }
                _ => {}
            }
            let (C(a), C(b)) = (s32(1), s32(2)) else {
                return None;
            };
            let (r, c) = if m == "s_sub_u32" {
                (a.wrapping_sub(b), b > a)
            } else {
                let s = u64::from(a) + u64::from(b) + carry_in;
                (s as u32, s >> 32 != 0)
            };
            vec![(d?, C(r)), (scc, C(u32::from(c)))]
        }
        "s_cmp_eq_u64" | "s_cmp_lg_u64" => {
            let (a, b) = (s64(0), s64(1));
            let eq = match (both_c(a), both_c(b)) {
                (Some(a), Some(b)) => Some(a == b),
                _ if a == b && a == [ExecLo, ExecHi] => Some(true),
                (_, Some(0)) => nonzero64(a).map(|nz| !nz),
                (Some(0), _) => nonzero64(b).map(|nz| !nz),
                _ => None,
            };
            vec![(scc, scc_of(eq.map(|e| e == (m == "s_cmp_eq_u64"))))]
        }
        "s_cmp_eq_u32" | "s_cmp_lg_u32" => {
            let (a, b) = (s32(0), s32(1));
            let eq = match (a, b) {
                (C(a), C(b)) => Some(a == b),
                (x, y) if x == y && x != Unknown => Some(true),
                _ => None,
            };
            vec![(scc, scc_of(eq.map(|e| e == (m == "s_cmp_eq_u32"))))]
        }
        _ => return None,
    })
}

/// VALU operations: results known in every lane of `E` (EXEC must be
/// `E` for that), and lane reads.
fn evaluate_vector(i: &Instruction, st: &State, one_lane: bool) -> Option<Vec<(u16, V)>> {
    let m = i.mnemonic();
    let op = |k| i.operand(k);
    let v32 = |k| st.op32(op(k));
    let d = dest(op(0));
    let w = i.words();
    // VOP3a input and output modifiers, op_sel: none (integer operations
    // read and write plain values then).
    let plain3 = i.encoding() != Encoding::Vop3 || (w[0] & 0xff00 == 0 && w[1] >> 27 == 0);
    if !plain3 {
        return None;
    }
    let on_e = st.exec_is_entry();
    // A lane's value read from a VGPR: known when it is one of E's lanes.
    match m {
        "v_readlane_b32" => {
            let lane = v32(2);
            let x = v32(1);
            return Some(vec![(d?, if lane == Lane { x } else { Unknown })]);
        }
        "v_readfirstlane_b32" => return Some(vec![(d?, if on_e { v32(1) } else { Unknown })]),
        _ => {}
    }
    if !on_e {
        return None;
    }
    if i.encoding() == Encoding::Vop3p {
        // v_pk_mov_b32: the low dword from src0, the high one from src1,
        // each the half op_sel picks; no neg, neg_hi or clamp.
        if m != "v_pk_mov_b32" || w[0] & 0x8700 != 0 || w[1] >> 29 != 0 {
            return None;
        }
        let half = |k: usize, hi: bool| match op(k) {
            Some(Operand::Sgpr { first, count: 2 }) => st.sgpr(first + u16::from(hi)),
            Some(Operand::Vgpr { first, count: 2 }) => {
                st.get(bits::VGPR_BASE + first + u16::from(hi))
            }
            _ => Unknown,
        };
        let d = d?;
        return Some(vec![
            (d, half(1, w[0] >> 11 & 1 == 1)),
            (d + 1, half(2, w[0] >> 12 & 1 == 1)),
        ]);
    }
    Some(match m {
        "v_mov_b32_e32" => vec![(d?, v32(1))],
        "v_cndmask_b32_e32" => {
            let r = match [st.s[VCC], st.s[VCC + 1]] {
                [ExecLo, ExecHi] => v32(2),
                [C(0), C(0)] => v32(1),
                _ => Unknown,
            };
            vec![(d?, r)]
        }
        "v_bcnt_u32_b32" => match (v32(1), v32(2)) {
            (C(a), C(b)) => vec![(d?, C(a.count_ones().wrapping_add(b)))],
            _ => return None,
        },
        // Lanes of the mask below the lane: none, when the mask is E (or a
        // half of it) and the lane E's only one.
        "v_mbcnt_lo_u32_b32" | "v_mbcnt_hi_u32_b32" => {
            let half = if m.contains("_lo_") { ExecLo } else { ExecHi };
            match (v32(1), v32(2)) {
                (C(0), x) => vec![(d?, x)],
                (h, x) if h == half && one_lane => vec![(d?, x)],
                _ => return None,
            }
        }
        _ if m.starts_with("v_cmp_") && i.encoding() == Encoding::Vopc => {
            let (C(a), C(b)) = (v32(1), v32(2)) else {
                return None;
            };
            let mut parts = m[6..].split('_');
            let (cond, ty) = (parts.next()?, parts.next()?);
            let (x, y) = match ty {
                "u32" => (i64::from(a), i64::from(b)),
                "i32" => (i64::from(a as i32), i64::from(b as i32)),
                _ => return None,
            };
            let t = match cond {
                "eq" => x == y,
                "ne" => x != y,
                "lt" => x < y,
                "le" => x <= y,
                "gt" => x > y,
                "ge" => x >= y,
                _ => return None,
            };
            // Inactive lanes' bits are written 0: the mask is E or 0.
            let r = if t { [ExecLo, ExecHi] } else { [C(0), C(0)] };
            vec![(bits::VCC, r[0]), (bits::VCC + 1, r[1])]
        }
        _ => return None,
    })
}

/// The body's control flow: successors of instruction `k` (`n` = the end).
fn successors(insts: &[(u64, Instruction, Kind)], k: usize, taken: Option<bool>) -> Vec<usize> {
    let (_, i, kind) = &insts[k];
    match *kind {
        Kind::Return => vec![insts.len()],
        Kind::Branch(t) => {
            let conditional = i.mnemonic() != "s_branch";
            match (conditional, taken) {
                (false, _) | (true, Some(true)) => vec![t],
                (true, Some(false)) => vec![k + 1],
                (true, None) => vec![k + 1, t],
            }
        }
        _ => vec![k + 1],
    }
}

/// Whether a conditional branch is taken, if known.
fn branch_taken(i: &Instruction, st: &State) -> Option<bool> {
    let exec = nonzero64([st.s[EXEC], st.s[EXEC + 1]]);
    let vcc = nonzero64([st.s[VCC], st.s[VCC + 1]]);
    let scc = match st.s[SCC] {
        C(c) => Some(c != 0),
        _ => None,
    };
    match i.mnemonic() {
        "s_cbranch_scc0" => scc.map(|c| !c),
        "s_cbranch_scc1" => scc,
        "s_cbranch_vccz" => vcc.map(|n| !n),
        "s_cbranch_vccnz" => vcc,
        "s_cbranch_execz" => exec.map(|n| !n),
        "s_cbranch_execnz" => exec,
        _ => None,
    }
}

/// The state before each instruction (None: no path reaches it).
fn analyse(
    insts: &[(u64, Instruction, Kind)],
    infos: &[InstructionInfo],
    facts: &Facts,
) -> Vec<Option<State>> {
    let mut entry = State {
        s: [Unknown; SCALARS],
        v: [Unknown; VGPRS],
    };
    entry.s[EXEC] = ExecLo;
    entry.s[EXEC + 1] = ExecHi;
    for &(v, x) in &facts.vgprs {
        if let Some(slot) = entry.v.get_mut(usize::from(v)) {
            *slot = C(x);
        }
    }
    let mut at: Vec<Option<State>> = vec![None; insts.len()];
    let mut work = vec![0usize];
    if !insts.is_empty() {
        at[0] = Some(entry);
    }
    while let Some(k) = work.pop() {
        let Some(st) = &at[k] else { continue };
        let (_, i, kind) = &insts[k];
        let writes = match (*kind, i.operand(0)) {
            // The table entry's address, loaded into the pair.
            (Kind::Got(d), Some(Operand::Sgpr { first, count: 2 })) => {
                let (lo, hi) =
                    i32::try_from(d).map_or((Unknown, Unknown), |d| (GotLo(d), GotHi(d)));
                vec![(first, lo), (first + 1, hi), (bits::SCC, Unknown)]
            }
            // An address, found with adds (SCC written) where no home
            // keeps it.
            (Kind::Getpc(_), Some(Operand::Sgpr { first, count: 2 })) => {
                vec![(first, Unknown), (first + 1, Unknown), (bits::SCC, Unknown)]
            }
            _ => transfer(i, &infos[k], st, facts.one_lane),
        };
        let taken = branch_taken(i, st);
        let mut out = st.clone();
        out.apply(&writes);
        for s in successors(insts, k, taken) {
            if s >= insts.len() {
                continue;
            }
            let changed = match &mut at[s] {
                slot @ None => {
                    *slot = Some(out.clone());
                    true
                }
                Some(old) => old.join(&out),
            };
            if changed {
                work.push(s);
            }
        }
    }
    at
}

/// Registers live after each instruction (`end` at the end), and before
/// the first.
fn liveness(
    insts: &[(u64, Instruction, Kind)],
    infos: &[InstructionInfo],
    at: &[Option<State>],
    end: &RegSet,
) -> (Vec<RegSet>, RegSet) {
    let n = insts.len();
    // VGPR writes are whole only if EXEC is E wherever the body runs (or
    // no lane): then a write with EXEC = E writes every lane read later.
    let stable = at
        .iter()
        .flatten()
        .all(|s| s.exec_is_entry() || (s.s[EXEC] == C(0) && s.s[EXEC + 1] == C(0)));
    let mut after = vec![RegSet::new(); n];
    let mut before = vec![RegSet::new(); n];
    loop {
        let mut changed = false;
        for k in (0..n).rev() {
            let mut out = RegSet::new();
            for s in successors(insts, k, None) {
                out.union_with(if s >= n { end } else { &before[s] });
            }
            let (_, i, _) = &insts[k];
            let mut live = out;
            let whole_vector =
                stable && at[k].as_ref().is_some_and(State::exec_is_entry) && full_vector_write(i);
            for u in infos[k].used_registers() {
                let kills = matches!(u.access, inlay_isa::Access::Write)
                    && match u.register.file {
                        RegFile::Vgpr => whole_vector,
                        RegFile::Agpr => false,
                        _ => true,
                    };
                if kills {
                    live.subtract(&RegSet::of(&u.register));
                }
            }
            for u in infos[k].used_registers() {
                if u.access.reads() {
                    live.union_with(&RegSet::of(&u.register));
                }
            }
            if out != after[k] || live != before[k] {
                changed = true;
            }
            after[k] = out;
            before[k] = live;
        }
        if !changed {
            let entry = before.first().copied().unwrap_or(*end);
            return (after, entry);
        }
    }
}

/// `x` as a source operand at a point with state `st`.
fn operand_of(x: V, st: &State) -> Option<Operand> {
    match x {
        C(c) => Some(Asm::inline_int(c as i32).unwrap_or(Operand::Literal(c))),
        Copy(n) => Some(Asm::sgpr(n, 1)),
        ExecLo if st.exec_is_entry() => Some(Operand::Special {
            code: bits::EXEC as u8,
            count: 1,
        }),
        ExecHi if st.exec_is_entry() => Some(Operand::Special {
            code: bits::EXEC as u8 + 1,
            count: 1,
        }),
        _ => None,
    }
}

/// One move writing `writes` (bit, value), if one instruction can.
fn mov_of(asm: &Asm, writes: &[(u16, V)], st: &State) -> Option<Instruction> {
    match writes {
        [(b, x)] if *b < bits::NUM_SGPRS || (*b as usize) == VCC || (*b as usize) == VCC + 1 => asm
            .build(
                Encoding::Sop1,
                "s_mov_b32",
                &[scalar_reg(*b, 1), operand_of(*x, st)?],
            )
            .ok(),
        [(b, x)] if (bits::VGPR_BASE..bits::AGPR_BASE).contains(b) => {
            asm.vmov(b - bits::VGPR_BASE, operand_of(*x, st)?).ok()
        }
        [(b, x), (b1, y)]
            if *b1 == b + 1 && b % 2 == 0 && (*b < bits::NUM_SGPRS || *b as usize == VCC) =>
        {
            let src = match (*x, *y) {
                (ExecLo, ExecHi) if st.exec_is_entry() => Operand::Special {
                    code: bits::EXEC as u8,
                    count: 2,
                },
                (C(l), C(h)) => {
                    let v = u64::from(l) | u64::from(h) << 32;
                    // (A 64-bit inline constant is sign-extended.)
                    let small = Some(v as i64).filter(|v| (-16..=64).contains(v))?;
                    Asm::inline_int(small as i32)?
                }
                _ => return None,
            };
            asm.build(Encoding::Sop1, "s_mov_b64", &[scalar_reg(*b, 2), src])
                .ok()
        }
        _ => None,
    }
}

/// A `v_cndmask_b32_e32` whose condition is known in every lane, as the
/// move of the source it selects.
fn select_of(asm: &Asm, i: &Instruction, st: &State) -> Option<Instruction> {
    if i.mnemonic() != "v_cndmask_b32_e32" || !st.exec_is_entry() {
        return None;
    }
    let pick = match [st.s[VCC], st.s[VCC + 1]] {
        [ExecLo, ExecHi] => 2,
        [C(0), C(0)] => 1,
        _ => return None,
    };
    let Some(Operand::Vgpr { first, count: 1 }) = i.operand(0) else {
        return None;
    };
    asm.vmov(first, i.operand(pick)?).ok()
}

fn scalar_reg(b: u16, count: u8) -> Operand {
    if b < bits::NUM_SGPRS {
        Operand::Sgpr { first: b, count }
    } else {
        Operand::Special {
            code: b as u8,
            count,
        }
    }
}

/// The body simplified for `facts`, with `live_out` read after it (EXEC
/// always is), and the registers the result reads before writing them
/// (the last round's analysis, which changed nothing, found them).
#[cfg(test)]
pub(super) fn simplify(
    asm: &Asm,
    body: &[(u64, Instruction, Kind)],
    facts: &Facts,
    live_out: &RegSet,
) -> (Vec<(u64, Instruction, Kind)>, RegSet) {
    let (insts, live_in, _) = simplify_alike(asm, body, facts, live_out, &[]);
    (insts, live_in)
}

/// [`simplify`], and whether its result is also the body simplified for
/// `facts` with any inline constants in VGPRs `opaque` (which `facts`
/// leaves unknown): no fold of any pass could have depended on their
/// values (see [`entry_values_unused`]). Calls that differ only in such
/// a constant then share one simplified body.
pub(super) fn simplify_alike(
    asm: &Asm,
    body: &[(u64, Instruction, Kind)],
    facts: &Facts,
    live_out: &RegSet,
    opaque: &[u16],
) -> (Vec<(u64, Instruction, Kind)>, RegSet, bool) {
    let mut end = *live_out;
    end.insert_range(bits::EXEC, 2);
    let mut insts = body.to_vec();
    let mut alike = true;
    for _ in 0..8 {
        let mut changed = false;
        let mut entry = RegSet::new();
        for pass in [Pass::SameState, Pass::SameLive] {
            let (c, live, a) = fold(asm, &mut insts, facts, &end, pass, opaque);
            changed |= c;
            alike &= a;
            entry = live;
        }
        if !changed {
            return (insts, entry, alike);
        }
    }
    let infos: Vec<InstructionInfo> = insts.iter().map(|(_, i, _)| info(i)).collect();
    let at = analyse(&insts, &infos, facts);
    alike &= entry_values_unused(&insts, &infos, &at, facts.one_lane, opaque);
    let entry = liveness(&insts, &infos, &at, &end).1;
    (insts, entry, alike)
}

/// Whether the states `at` of `insts` (which leave the VGPRs `opaque`
/// unknown at the entry) are those a pass would find with any inline
/// constants there, but for those VGPRs while they hold their entry
/// value, and no fold of the pass depends on that value: wherever the
/// entry value may still be held, such a VGPR is read only as the data
/// of a GLOBAL or FLAT store (which no fold changes) and written only
/// with a value that is no constant (a write of a constant it already
/// held would be dropped). Nothing else is computed from it, so every
/// other register's state, and every branch taken, is the same.
fn entry_values_unused(
    insts: &[(u64, Instruction, Kind)],
    infos: &[InstructionInfo],
    at: &[Option<State>],
    one_lane: bool,
    opaque: &[u16],
) -> bool {
    let n = insts.len();
    for &v in opaque {
        let bit = bits::VGPR_BASE + v;
        // Instructions before which the entry value may be held.
        let mut held = vec![false; n];
        let mut work = Vec::new();
        if n > 0 {
            held[0] = true;
            work.push(0);
        }
        while let Some(k) = work.pop() {
            let Some(st) = &at[k] else { continue };
            let (_, i, _) = &insts[k];
            let names = |write: bool| {
                infos[k].used_registers().iter().any(|u| {
                    (if write {
                        u.access.writes()
                    } else {
                        u.access.reads()
                    }) && bits::bits_of(&u.register).is_some_and(|(b, c)| (b..b + c).contains(&bit))
                })
            };
            if names(false) && !is_store_data(i, v) {
                return false;
            }
            if names(true) {
                let x = transfer(i, &infos[k], st, one_lane)
                    .into_iter()
                    .find(|&(b, _)| b == bit);
                if matches!(x, Some((_, C(_)))) {
                    return false;
                }
                // (Its entry value is gone past the write.)
                continue;
            }
            for s in successors(insts, k, branch_taken(i, st)) {
                if s < n && !held[s] {
                    held[s] = true;
                    work.push(s);
                }
            }
        }
    }
    true
}

/// Whether `i` is a GLOBAL or FLAT store that reads VGPR `v` only as the
/// data it stores (not as its address).
fn is_store_data(i: &Instruction, v: u16) -> bool {
    let m = i.mnemonic();
    if !(m.starts_with("global_store") || m.starts_with("flat_store")) {
        return false;
    }
    match super::call::address_operands(i) {
        Some((vaddr, saddr, _)) => {
            let address = vaddr..vaddr + if saddr.is_some() { 1 } else { 2 };
            !address.contains(&v)
        }
        None => false,
    }
}

/// What a pass of folds keeps, so that its folds may be made together.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Every register's value at every point (branches on known
    /// conditions, code no path reaches, writes of what the register
    /// already holds, global atomics made scalar, a 32-bit constant move
    /// made the 64-bit one when the pair's other half holds what that
    /// gives it — a move that set it may then go).
    SameState,
    /// The values of the registers live at every point (dead writes).
    SameLive,
}

/// The family of an atomic operation (`add`, `or`, ... without `_x2`)
/// whose applications commute with each other — the order two of them
/// reach a location in does not change what it ends up holding — or None.
pub(super) fn atomic_family(op: &str) -> Option<&'static str> {
    Some(match op {
        "add" | "sub" => "add",
        "and" => "and",
        "or" => "or",
        "xor" => "xor",
        "smin" => "smin",
        "umin" => "umin",
        "smax" => "smax",
        "umax" => "umax",
        _ => return None,
    })
}

/// A global atomic `i` that runs once, as the scalar atomic doing the same
/// (reading SGPRs: the one-lane EXEC set-up around the body may then go),
/// or None; `fresh`: SGPRs the body names nowhere (an even first one) for
/// data that only constants give.
///
/// Exact when all of this holds, each checked here:
/// - it runs in exactly one lane: the body's EXEC is `E` and `E` is one
///   lane (a once-per-wave hook), so the vector form makes one access, as
///   the scalar form (which ignores EXEC) does;
/// - GLOBAL, never FLAT (a flat address may be LDS or private memory,
///   which scalar memory cannot reach); no return (glc), and the default
///   cache policy (no slc, scc/sc1, nt) and no LDS bit, so that what it
///   does is the read-modify-write alone, performed at the device-coherent
///   level (L2) by both forms;
/// - the address is a global of the module (a register pair loaded from
///   its global offset table) plus a known offset: the VGPR offset of a
///   saddr form known in every lane, the 64-bit VGPR address of the `off`
///   form a copy of that table entry; the sum in 0..2^20 (the SMEM
///   immediate our encoder writes) and a multiple of the access size;
/// - the global's address is aligned to the access size (`facts.got_align`,
///   from its symbol and the module's segment alignment): scalar memory
///   drops the low address bits, the vector path would use them;
/// - the data is known in every lane of `E`: a copy of an SGPR tuple (or
///   SGPRs holding those constants), or constants moved into `fresh`.
///   Scalar memory reads its data SGPRs when it issues (LLVM's
///   SIInsertWaitcnts tracks no write-after-read of SMEM sources on gfx9,
///   the built-in counting hook relies on the same);
/// - its operation is of `facts.scalar_atomics`, the one family every
///   memory access of the module's hooks in this kernel makes (global-
///   offset-table loads aside): the scalar and vector paths do not order
///   a wave's accesses between them, and with nothing but commuting,
///   non-returning updates of the module's globals (which only its hooks
///   name) no order of them can be told apart — not by a later hook run,
///   not by the tool reading the globals after the launch.
///
/// Its counter is lgkmcnt instead of vmcnt: a body's wait for it is a
/// wait for nothing it reads (the inliner drops such trailing waits).
fn scalar_atomic(
    asm: &Asm,
    i: &Instruction,
    st: &State,
    facts: &Facts,
    fresh: impl FnOnce() -> Option<u16>,
) -> Option<Vec<Instruction>> {
    let family = facts.scalar_atomics?;
    if !facts.one_lane || !st.exec_is_entry() || i.encoding() != Encoding::Global {
        return None;
    }
    let op = i.mnemonic().strip_prefix("global_atomic_")?;
    let (base_op, wide) = match op.strip_suffix("_x2") {
        Some(b) => (b, true),
        None => (op, false),
    };
    if atomic_family(base_op)? != family {
        return None;
    }
    let w = i.words();
    // lds (13), glc (16), slc (17), scc/sc1 (25); nt/nv (word 1, bit 23).
    if w[0] & (1 << 13 | 1 << 16 | 1 << 17 | 1 << 25) != 0 || w[1] & 1 << 23 != 0 {
        return None;
    }
    let (vaddr, saddr, offset) = super::call::address_operands(i)?;
    let v = |n: u16| st.get(bits::VGPR_BASE + n);
    let (base_vals, off) = match saddr {
        Some(s) => {
            let C(o) = v(vaddr) else { return None };
            ([st.get(s), st.get(s + 1)], i64::from(o) + i64::from(offset))
        }
        None => ([v(vaddr), v(vaddr + 1)], i64::from(offset)),
    };
    let [GotLo(d), GotHi(d1)] = base_vals else {
        return None;
    };
    let size: u64 = if wide { 8 } else { 4 };
    let align = facts.got_align.iter().find(|&&(x, _)| x == i64::from(d))?.1;
    if d1 != d || align < size || off.rem_euclid(size as i64) != 0 || !(0..1 << 20).contains(&off) {
        return None;
    }
    let base = holding(st, &base_vals)?;
    let dwords = if wide { 2 } else { 1 };
    let data = (w[1] >> 8 & 0xff) as u16;
    let vals: Vec<V> = (0..dwords).map(|j| v(data + j)).collect();
    let mut code = Vec::new();
    let sdata = match holding(st, &vals) {
        Some(n) => n,
        None => {
            let n = fresh()?;
            let consts: Vec<u32> = vals
                .iter()
                .map(|x| match x {
                    C(c) => Some(*c),
                    _ => None,
                })
                .collect::<Option<_>>()?;
            let v64 = consts
                .iter()
                .rev()
                .fold(0u64, |a, &c| a << 32 | u64::from(c)) as i64;
            match Asm::inline_int(v64 as i32).filter(|_| wide && (-16..=64).contains(&v64)) {
                Some(k) => code.push(
                    asm.build(Encoding::Sop1, "s_mov_b64", &[Asm::sgpr(n, 2), k])
                        .ok()?,
                ),
                None => {
                    for (j, &c) in consts.iter().enumerate() {
                        code.push(
                            asm.build(
                                Encoding::Sop1,
                                "s_mov_b32",
                                &[Asm::sgpr(n + j as u16, 1), Asm::konst(c)],
                            )
                            .ok()?,
                        );
                    }
                }
            }
            n
        }
    };
    code.push(
        asm.build(
            Encoding::Smem,
            scalar_name(op)?,
            &[
                Asm::sgpr(sdata, dwords as u8),
                Asm::sgpr(base, 2),
                Operand::Imm(off as u32),
            ],
        )
        .ok()?,
    );
    Some(code)
}

/// `v_readlane_b32` of the one lane of `E` with EXEC `E`, as the
/// `v_readfirstlane_b32` reading the same (it needs no lane index).
fn first_lane_read(asm: &Asm, i: &Instruction, st: &State, facts: &Facts) -> Option<Instruction> {
    if i.mnemonic() != "v_readlane_b32" || !facts.one_lane || !st.exec_is_entry() {
        return None;
    }
    if st.op32(i.operand(2)) != Lane || i.words()[0] & 0xff00 != 0 || i.words()[1] >> 29 != 0 {
        return None;
    }
    asm.build(
        Encoding::Vop1,
        "v_readfirstlane_b32",
        &[i.operand(0)?, i.operand(1)?],
    )
    .ok()
}

/// The scalar atomic of a global one's operation (`add_x2`, ...).
fn scalar_name(op: &str) -> Option<&'static str> {
    const NAMES: [&str; 18] = [
        "s_atomic_add",
        "s_atomic_sub",
        "s_atomic_and",
        "s_atomic_or",
        "s_atomic_xor",
        "s_atomic_smin",
        "s_atomic_umin",
        "s_atomic_smax",
        "s_atomic_umax",
        "s_atomic_add_x2",
        "s_atomic_sub_x2",
        "s_atomic_and_x2",
        "s_atomic_or_x2",
        "s_atomic_xor_x2",
        "s_atomic_smin_x2",
        "s_atomic_umin_x2",
        "s_atomic_smax_x2",
        "s_atomic_umax_x2",
    ];
    NAMES.into_iter().find(|n| n[9..] == *op)
}

/// The first of SGPRs (aligned as a tuple of their number) holding `vals`
/// now, if some do.
fn holding(st: &State, vals: &[V]) -> Option<u16> {
    let n = vals.len() as u16;
    let align = if n > 1 { 2 } else { 1 };
    (0..bits::NUM_SGPRS.saturating_sub(n - 1))
        .step_by(align)
        .find(|&first| {
            vals.iter()
                .zip(first..)
                .all(|(&x, r)| x != Unknown && (st.get(r) == x || x == Copy(r)))
        })
}

/// SGPRs no instruction of the body (`infos`) names and not read after
/// it (`end`), `count` from an even one (the
/// hook's numbers, which the inliner places on dead registers; not s30..s33,
/// the return address, stack and frame pointers).
fn unnamed_sgprs(infos: &[InstructionInfo], end: &RegSet, count: u16) -> Option<u16> {
    let mut named = *end;
    named.insert_range(30, 4);
    for inf in infos {
        for u in inf.used_registers() {
            if u.register.file == RegFile::Sgpr {
                named.union_with(&RegSet::of(&u.register));
            }
        }
    }
    (0..bits::NUM_SGPRS.saturating_sub(count - 1))
        .step_by(2)
        .find(|&n| (n..n + count).all(|b| !named.contains(b)))
}

/// An `s_mov_b32` of a constant as the `s_mov_b64` of the inline constant
/// that gives it, when `fine(other half, what the move gives it)`.
fn widened(asm: &Asm, i: &Instruction, fine: impl Fn(u16, u32) -> bool) -> Option<Instruction> {
    if i.mnemonic() != "s_mov_b32" {
        return None;
    }
    let (Some(Operand::Sgpr { first: d, count: 1 }), Some(src)) = (i.operand(0), i.operand(1))
    else {
        return None;
    };
    let x = match src {
        Operand::Literal(c) => c,
        Operand::Inline(c) => inline_int(c)? as u32,
        _ => return None,
    };
    let pair = d & !1;
    if pair + 1 >= bits::NUM_SGPRS {
        return None;
    }
    // The 64-bit inline constant is the sign-extended integer.
    let k: i32 = if d % 2 == 0 {
        Some(x as i32).filter(|v| (-16..=64).contains(v))?
    } else {
        match x {
            0 => 0,
            u32::MAX => -1,
            _ => return None,
        }
    };
    let v = i64::from(k) as u64;
    let other = if d % 2 == 0 {
        (v >> 32) as u32
    } else {
        v as u32
    };
    if !fine(d ^ 1, other) {
        return None;
    }
    asm.build(
        Encoding::Sop1,
        "s_mov_b64",
        &[Asm::sgpr(pair, 2), Asm::inline_int(k)?],
    )
    .ok()
}

/// One pass of folds over `insts`; whether it changed them.
fn fold(
    asm: &Asm,
    insts: &mut Vec<(u64, Instruction, Kind)>,
    facts: &Facts,
    end: &RegSet,
    pass: Pass,
    opaque: &[u16],
) -> (bool, RegSet, bool) {
    let infos: Vec<InstructionInfo> = insts.iter().map(|(_, i, _)| info(i)).collect();
    let at = analyse(insts, &infos, facts);
    let alike = entry_values_unused(insts, &infos, &at, facts.one_lane, opaque);
    let (live, entry) = liveness(insts, &infos, &at, end);
    // Per instruction, what replaces it (nothing: dropped).
    let mut out: Vec<Vec<(u64, Instruction, Kind)>> = Vec::with_capacity(insts.len());
    let mut changed = false;
    for (k, &(addr, i, kind)) in insts.iter().enumerate() {
        let Some(st) = &at[k] else {
            changed = true;
            out.push(Vec::new());
            continue;
        };
        if let (Kind::Branch(t), Pass::SameState) = (kind, pass) {
            match branch_taken(&i, st) {
                Some(false) => {
                    changed = true;
                    out.push(Vec::new());
                    continue;
                }
                Some(true) if i.mnemonic() != "s_branch" => {
                    if let Ok(b) = asm.build(Encoding::Sopp, "s_branch", &[Operand::Imm(0)]) {
                        changed = true;
                        out.push(vec![(addr, b, Kind::Branch(t))]);
                        continue;
                    }
                }
                _ if t == k + 1 => {
                    changed = true;
                    out.push(Vec::new());
                    continue;
                }
                _ => {}
            }
        }
        let same_half = |b: u16, x: u32| st.get(b) == C(x);
        let one_lane_read = || first_lane_read(asm, &i, st, facts);
        if let (Kind::Plain, Pass::SameState, Some(m)) = (
            kind,
            pass,
            widened(asm, &i, same_half).or_else(one_lane_read),
        ) {
            changed = true;
            out.push(vec![(addr, m, kind)]);
            continue;
        }
        if let (Kind::Plain, Pass::SameState) = (kind, pass) {
            let fresh = || unnamed_sgprs(&infos, end, 2);
            if let Some(code) = scalar_atomic(asm, &i, st, facts, fresh) {
                changed = true;
                out.push(code.into_iter().map(|m| (addr, m, kind)).collect());
                continue;
            }
        }
        if kind != Kind::Plain || !is_pure(&i, &infos[k]) {
            out.push(vec![(addr, i, kind)]);
            continue;
        }
        let is_exec = |b: u16| b == bits::EXEC || b == bits::EXEC + 1;
        // The writes the pass must keep: those that change the register,
        // or those read later (EXEC always: moves made here may read it).
        let needed: Vec<(u16, V)> = transfer(&i, &infos[k], st, facts.one_lane)
            .into_iter()
            .filter(|&(b, x)| {
                let same = x != Unknown && st.get(b) == x;
                match pass {
                    Pass::SameState => !same,
                    // (EXEC's writes are never dropped as dead, so its
                    // value is kept everywhere: one that writes what EXEC
                    // holds may still go.)
                    Pass::SameLive => live[k].contains(b) && !is_exec(b) || is_exec(b) && !same,
                }
            })
            .collect();
        if needed.is_empty() {
            changed = true;
            out.push(Vec::new());
            continue;
        }
        if needed.iter().any(|&(b, _)| is_exec(b)) {
            out.push(vec![(addr, i, kind)]);
            continue;
        }
        // (Not a 64-bit move back into a 32-bit one: it was made wide.)
        let narrowing =
            |m: &Instruction| i.mnemonic() == "s_mov_b64" && m.mnemonic() == "s_mov_b32";
        match mov_of(asm, &needed, st).or_else(|| select_of(asm, &i, st)) {
            Some(m) if m != i && !narrowing(&m) => {
                changed = true;
                out.push(vec![(addr, m, kind)]);
            }
            _ => out.push(vec![(addr, i, kind)]),
        }
    }
    // Branch targets move to the first instruction of what replaces
    // theirs, or the next kept.
    let mut new_index = vec![0usize; insts.len() + 1];
    let mut n = 0;
    for (k, o) in out.iter().enumerate() {
        new_index[k] = n;
        n += o.len();
    }
    new_index[insts.len()] = n;
    *insts = out
        .into_iter()
        .flatten()
        .map(|(a, i, kind)| match kind {
            Kind::Branch(t) => (a, i, Kind::Branch(new_index[t])),
            k => (a, i, k),
        })
        .collect();
    // (Registers live at the entry of the body as it was: as it is, when
    // nothing changed.)
    (changed, entry, alike)
}

#[cfg(test)]
mod tests {
    //! The simplified body against the original on the virtual GPU: random
    //! programs of the operations modelled here (and branches, loops),
    //! random register inputs that satisfy the facts, every register the
    //! programs name compared afterwards (in every lane).

    use super::*;
    use inlay_vgpu::wave::{Env, Flow, Wave};
    use inlay_vgpu::{CodeRegion, MemKind, Memory, Program};

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    const SGPRS: u16 = 12;
    /// VGPRs the random operations name; v6 is the offset VGPR of the
    /// random atomics (written by nothing else, small), s[12:13] the pair
    /// their global's address is loaded into ([`Kind::Got`]).
    const VGPRS: u16 = 6;
    const OFFSET_V: u16 = 6;
    const GOT_PAIR: u16 = 12;
    /// Where the random atomics' global is (the test buffer's start + 64,
    /// so negative offsets stay inside), and its size.
    const GLOBAL_AT: u64 = 64;
    const BUFFER: usize = 256;

    fn s1(n: u16) -> Operand {
        Operand::Sgpr { first: n, count: 1 }
    }
    fn s2(n: u16) -> Operand {
        Operand::Sgpr { first: n, count: 2 }
    }
    fn v1(n: u16) -> Operand {
        Operand::Vgpr { first: n, count: 1 }
    }
    const EXEC2: Operand = Operand::Special {
        code: 126,
        count: 2,
    };
    const VCC2: Operand = Operand::Special {
        code: 106,
        count: 2,
    };

    /// One random instruction (`k` its index, `n` the program's length:
    /// branches go anywhere in it).
    fn random_inst(asm: &Asm, rng: &mut Rng, k: usize, n: usize) -> (Instruction, Kind) {
        let s = |rng: &mut Rng| rng.below(u64::from(SGPRS)) as u16;
        let pair = |rng: &mut Rng| 2 * rng.below(u64::from(SGPRS / 2)) as u16;
        let v = |rng: &mut Rng| rng.below(u64::from(VGPRS)) as u16;
        let small = |rng: &mut Rng| Asm::konst([0, 1, 2, 5, 63, 64][rng.below(6) as usize]);
        let src32 = |rng: &mut Rng| match rng.below(3) {
            0 => small(rng),
            _ => s1(s(rng)),
        };
        let src64 = |rng: &mut Rng| match rng.below(4) {
            0 => small(rng),
            1 => EXEC2,
            2 => VCC2,
            _ => s2(pair(rng)),
        };
        let vsrc = |rng: &mut Rng| match rng.below(3) {
            0 => small(rng),
            1 => s1(s(rng)),
            _ => v1(v(rng)),
        };
        let b = |e, m, ops: &[Operand]| asm.build(e, m, ops).unwrap();
        use Encoding::*;
        let i = match rng.below(27) {
            24 => return (b(Sop1, "s_getpc_b64", &[s2(GOT_PAIR)]), Kind::Got(0)),
            25 => {
                // v_pk_mov_b32 v[a:a+1], s[p:p+1], s[p:p+1] op_sel:[0,1]
                // (how clang copies an SGPR pair into VGPRs), or with
                // random op_sel.
                let d = inlay_isa::Decoder::new(inlay_isa::Target::Gfx90a);
                let mut word0: u32 = 0xd3b3_5000;
                if rng.below(3) == 0 {
                    word0 = word0 & !0x1800 | (rng.below(4) as u32) << 11;
                }
                let bytes: Vec<u8> = [word0, 0x1800_0804u32]
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .collect();
                let mut i = d.decode(&bytes).unwrap();
                let p = pair(rng);
                assert!(i.set_register(0, 2 * rng.below(u64::from(VGPRS / 2)) as u16));
                assert!(i.set_register(1, p) && i.set_register(2, p));
                i
            }
            26 => {
                let wide = rng.below(2) == 0;
                let m = [
                    "global_atomic_add",
                    "global_atomic_sub",
                    "global_atomic_or",
                    "global_atomic_umax",
                    "global_atomic_xor",
                    "global_atomic_add_x2",
                    "global_atomic_sub_x2",
                    "global_atomic_or_x2",
                    "global_atomic_umax_x2",
                    "global_atomic_xor_x2",
                ][rng.below(5) as usize + if wide { 5 } else { 0 }];
                let data = Operand::Vgpr {
                    first: 2 * rng.below(u64::from(VGPRS / 2)) as u16,
                    count: if wide { 2 } else { 1 },
                };
                let mut i = b(Global, m, &[v1(OFFSET_V), data, s2(GOT_PAIR)]);
                let off = [-8, 0, 4, 8, 16][rng.below(5) as usize];
                assert!(i.set_modifier(inlay_isa::Modifier::Offset(off)));
                i
            }
            0 => b(Sop1, "s_mov_b32", &[s1(s(rng)), src32(rng)]),
            1 => {
                let d = if rng.below(3) == 0 {
                    VCC2
                } else {
                    s2(pair(rng))
                };
                b(Sop1, "s_mov_b64", &[d, src64(rng)])
            }
            2 => b(Sop2, "s_add_u32", &[s1(s(rng)), s1(s(rng)), src32(rng)]),
            3 => b(Sop2, "s_addc_u32", &[s1(s(rng)), s1(s(rng)), src32(rng)]),
            4 => {
                let m =
                    ["s_and_b64", "s_or_b64", "s_xor_b64", "s_andn2_b64"][rng.below(4) as usize];
                b(Sop2, m, &[s2(pair(rng)), src64(rng), src64(rng)])
            }
            5 => b(
                Sop2,
                "s_lshl_b64",
                &[s2(pair(rng)), Asm::konst(1), s1(s(rng))],
            ),
            6 => b(Sop1, "s_ff1_i32_b64", &[s1(s(rng)), src64(rng)]),
            7 => b(Sop1, "s_bcnt1_i32_b64", &[s1(s(rng)), src64(rng)]),
            8 => b(Sopc, "s_cmp_lg_u64", &[src64(rng), Asm::konst(0)]),
            9 => b(Sopc, "s_cmp_eq_u32", &[s1(s(rng)), src32(rng)]),
            10 => b(Sop2, "s_cselect_b32", &[s1(s(rng)), src32(rng), src32(rng)]),
            11 => b(Sop1, "s_and_saveexec_b64", &[s2(pair(rng)), src64(rng)]),
            12 => b(Sop1, "s_mov_b64", &[EXEC2, s2(pair(rng))]),
            13 => asm.vmov(v(rng), vsrc(rng)).unwrap(),
            14 => {
                let m = ["v_cmp_eq_u32_e32", "v_cmp_ne_u32_e32", "v_cmp_lt_u32_e32"]
                    [rng.below(3) as usize];
                b(Vopc, m, &[Operand::Fixed("vcc"), vsrc(rng), v1(v(rng))])
            }
            15 => b(
                Vop2,
                "v_cndmask_b32_e32",
                &[v1(v(rng)), vsrc(rng), v1(v(rng)), Operand::Fixed("vcc")],
            ),
            16 => b(Vop3, "v_bcnt_u32_b32", &[v1(v(rng)), v1(v(rng)), vsrc(rng)]),
            17 => b(
                Vop3,
                "v_mbcnt_lo_u32_b32",
                &[
                    v1(v(rng)),
                    Operand::Special {
                        code: 126,
                        count: 1,
                    },
                    vsrc(rng),
                ],
            ),
            18 => b(
                Vop3,
                "v_mbcnt_hi_u32_b32",
                &[
                    v1(v(rng)),
                    Operand::Special {
                        code: 127,
                        count: 1,
                    },
                    vsrc(rng),
                ],
            ),
            19 => b(
                Vop3,
                "v_readlane_b32",
                &[s1(s(rng)), v1(v(rng)), s1(s(rng))],
            ),
            20 => b(Vop1, "v_readfirstlane_b32", &[s1(s(rng)), v1(v(rng))]),
            21 => b(Vop2, "v_add_u32_e32", &[v1(v(rng)), vsrc(rng), v1(v(rng))]),
            _ => {
                let m = [
                    "s_cbranch_scc0",
                    "s_cbranch_scc1",
                    "s_cbranch_execz",
                    "s_cbranch_execnz",
                    "s_cbranch_vccz",
                    "s_branch",
                ][rng.below(6) as usize];
                let t = rng.below(n as u64) as usize;
                let _ = k;
                return (b(Sopp, m, &[Operand::Imm(0)]), Kind::Branch(t));
            }
        };
        (i, Kind::Plain)
    }

    /// Runs `body` on a wave with registers `init` and a buffer holding
    /// `memory`; the wave and the buffer after it, or None when it runs
    /// over `limit` instructions (a loop) or faults. A [`Kind::Got`] loads
    /// the address of the buffer's global (`GLOBAL_AT` into it), as the
    /// module's offset table would; s[12:13] holds it from the start.
    fn run(
        body: &[(u64, Instruction, Kind)],
        init: &Wave,
        memory: &[u8],
        limit: u64,
    ) -> Option<(Wave, Vec<u8>)> {
        let mem = Memory::new();
        let buffer = mem.alloc(BUFFER as u64, 4096, MemKind::Device, 0).unwrap();
        mem.write_bytes(buffer, memory).unwrap();
        let global = buffer + GLOBAL_AT;
        let asm = Asm::new(inlay_isa::Target::Gfx90a);
        let mut s = super::super::snippet::Snippet::default();
        let mut branches = Vec::new();
        let mut label = Vec::new();
        for &(_, i, kind) in body {
            label.push(s.insts.len());
            match (kind, i.operand(0)) {
                (Kind::Branch(t), _) => branches.push((s.branch(i), t)),
                (Kind::Got(_), Some(Operand::Sgpr { first, .. })) => {
                    s.push(asm.mov_lit(first, global as u32).unwrap());
                    s.push(asm.mov_lit(first + 1, (global >> 32) as u32).unwrap());
                }
                _ => s.push(i),
            }
        }
        label.push(s.insts.len());
        for (at, t) in branches {
            s.aim(at, label[t]);
        }
        s.push(
            asm.build(Encoding::Sopp, "s_endpgm", &[Operand::Imm(0)])
                .unwrap(),
        );
        s.resolve().unwrap();
        let mut code = Vec::new();
        s.encode(&mut code, &mut Default::default());
        let base = mem
            .alloc(code.len() as u64 + 256, 256, MemKind::Device, 0)
            .unwrap();
        mem.write_bytes(base, &code).unwrap();
        let region = CodeRegion {
            load_base: base,
            text_vaddr: 0,
            text_size: code.len() as u64,
            code_object_version: 5,
            kernels: Vec::new(),
        };
        let program = Program::from_memory(&mem, &[region]).unwrap();
        let gws = inlay_vgpu::gws::Gws::default();
        let mut lds = [0u8; 16];
        let mut env = Env {
            program: &program,
            mem: &mem,
            lds: &mut lds,
            cache: Default::default(),
            interrupt: None,
            gws: &gws,
        };
        let mut w = Wave::new(0);
        w.s = init.s;
        w.s[usize::from(GOT_PAIR)] = global as u32;
        w.s[usize::from(GOT_PAIR) + 1] = (global >> 32) as u32;
        w.scc = init.scc;
        for (r, x) in w.v.iter_mut().zip(&init.v).take(usize::from(OFFSET_V) + 1) {
            *r = *x;
        }
        w.pc = 0;
        for _ in 0..limit {
            let i = &program.insts[w.pc as usize];
            match w.step(i, &mut env).ok()? {
                Flow::Next => w.pc += 1,
                Flow::Jump(t) => w.pc = t,
                Flow::End => {
                    let mut after = vec![0u8; BUFFER];
                    mem.read_bytes(buffer, &mut after).unwrap();
                    return Some((w, after));
                }
                f => panic!("unexpected {f:?}"),
            }
        }
        None
    }

    #[test]
    fn simplified_bodies_compute_what_the_originals_do() {
        let asm = Asm::new(inlay_isa::Target::Gfx90a);
        let b = |e, m, ops: &[Operand]| asm.build(e, m, ops).unwrap();
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut live_out = RegSet::new();
        live_out.insert_range(0, SGPRS);
        live_out.insert_range(bits::VCC, 2);
        live_out.insert(bits::SCC);
        live_out.insert_range(bits::VGPR_BASE, VGPRS);
        let (mut compared, mut shorter, mut selected) = (0, 0, 0);
        let mut alike = 0;
        for round in 0..1000 {
            let n = 4 + rng.below(20) as usize;
            let mut body: Vec<(u64, Instruction, Kind)> = (0..n)
                .map(|k| {
                    let (i, kind) = random_inst(&asm, &mut rng, k, n);
                    (4 * k as u64, i, kind)
                })
                .collect();
            if rng.below(2) == 0 {
                // Often: the global's address loaded first, an atomic last.
                let got = (
                    b(Encoding::Sop1, "s_getpc_b64", &[s2(GOT_PAIR)]),
                    Kind::Got(0),
                );
                body.insert(0, (0, got.0, got.1));
                for (_, _, k) in &mut body {
                    if let Kind::Branch(t) = k {
                        *t += 1;
                    }
                }
                let atomic = loop {
                    let (i, kind) = random_inst(&asm, &mut rng, n, n);
                    if i.encoding() == Encoding::Global {
                        break (i, kind);
                    }
                };
                body.push((4 * n as u64 + 4, atomic.0, atomic.1));
            }
            let one_lane = round % 2 == 0;
            let mut vgprs: Vec<(u16, u32)> = (0..VGPRS)
                .filter_map(|v| {
                    let c = [0, 1, 5, u32::MAX][rng.below(4) as usize];
                    (rng.below(2) == 0).then_some((v, c))
                })
                .collect();
            // The atomics' offset: known (or not), a multiple of 4 or 8.
            let offset = [0, 4, 8, 24][rng.below(4) as usize];
            if rng.below(4) != 0 {
                vgprs.push((OFFSET_V, offset));
            }
            let facts = Facts {
                one_lane,
                vgprs,
                // The global is 64-aligned: what the facts claim is true.
                got_align: vec![(0, [4, 8, 64][rng.below(3) as usize])],
                scalar_atomics: [Some("add"), Some("or"), Some("umax"), Some("xor"), None]
                    [rng.below(8).saturating_sub(3) as usize],
            };
            let simple = simplify(&asm, &body, &facts, &live_out).0;
            shorter += usize::from(simple.len() < body.len());
            // One fact VGPR left unknown: when no fold could depend on its
            // value, the result is the body simplified knowing it.
            if let Some(&(v, _)) = facts.vgprs.get(round % facts.vgprs.len().max(1)) {
                let mut f = facts.clone();
                f.vgprs.retain(|&(x, _)| x != v);
                let (without, _, same) = simplify_alike(&asm, &body, &f, &live_out, &[v]);
                if same {
                    assert!(without == simple, "round {round}: v{v} said not to matter");
                    alike += 1;
                }
            }
            let scalar = |b: &[(u64, Instruction, Kind)]| {
                b.iter()
                    .filter(|(_, i, _)| i.mnemonic().starts_with("s_atomic"))
                    .count()
            };
            selected += usize::from(scalar(&simple) > scalar(&body));
            let memory: Vec<u8> = (0..BUFFER).map(|_| rng.next() as u8).collect();
            for _ in 0..8 {
                let mut w = Wave::new(0);
                for x in w.s.iter_mut().take(usize::from(SGPRS)) {
                    *x = match rng.below(3) {
                        0 => rng.below(70) as u32,
                        _ => rng.next() as u32,
                    };
                }
                let exec = if one_lane {
                    1u64 << rng.below(64)
                } else {
                    rng.next() | 1 << rng.below(64)
                };
                w.set_exec(exec);
                w.s[106] = rng.next() as u32;
                w.s[107] = rng.next() as u32;
                w.scc = rng.below(2) == 1;
                for v in 0..usize::from(VGPRS) {
                    for lane in 0..64 {
                        w.v[v][lane] = rng.next() as u32;
                    }
                }
                w.v[usize::from(OFFSET_V)] = [offset; 64];
                for &(v, c) in &facts.vgprs {
                    for lane in (0..64).filter(|l| exec >> l & 1 == 1) {
                        w.v[usize::from(v)][lane] = c;
                    }
                }
                let Some((want, want_memory)) = run(&body, &w, &memory, 500) else {
                    continue;
                };
                let (got, got_memory) =
                    run(&simple, &w, &memory, 500).expect("the simplified body ends");
                let show = |b: &[(u64, Instruction, Kind)]| {
                    b.iter()
                        .map(|(_, i, k)| {
                            let mut t = String::new();
                            inlay_isa::format::format(i, &mut t);
                            format!("{t} {k:?}")
                        })
                        .collect::<Vec<_>>()
                        .join("\n  ")
                };
                let ctx = || {
                    format!(
                        "round {round}, facts {facts:?}\noriginal:\n  {}\nsimplified:\n  {}",
                        show(&body),
                        show(&simple)
                    )
                };
                assert_eq!(want.exec(), got.exec(), "EXEC, {}", ctx());
                assert_eq!(want.vcc(), got.vcc(), "VCC, {}", ctx());
                assert_eq!(want.scc, got.scc, "SCC, {}", ctx());
                assert_eq!(
                    want.s[..usize::from(SGPRS)],
                    got.s[..usize::from(SGPRS)],
                    "SGPRs, {}",
                    ctx()
                );
                for v in 0..usize::from(VGPRS) {
                    assert_eq!(want.v[v], got.v[v], "v{v}, {}", ctx());
                }
                assert_eq!(want_memory, got_memory, "memory, {}", ctx());
                compared += 1;
            }
        }
        // The test tests something: most runs end, many bodies shrink,
        // some atomics become scalar.
        assert!(compared > 4000, "{compared} runs compared");
        assert!(shorter > 200, "{shorter} bodies simplified");
        assert!(selected >= 5, "{selected} bodies with atomics made scalar");
        assert!(alike > 50, "{alike} bodies found alike whatever a constant");
    }

    /// An id stored as data, then the register reused: no fold depends on
    /// the id (calls that differ only in it share one body); read by an
    /// addition first, it does.
    #[test]
    fn a_constant_only_stored_is_found_not_to_matter() {
        let asm = Asm::new(inlay_isa::Target::Gfx90a);
        let b = |e, m, ops: &[Operand]| asm.build(e, m, ops).unwrap();
        let store = b(
            Encoding::Global,
            "global_store_dword",
            &[v1(1), v1(0), s2(2)],
        );
        let mov = b(Encoding::Vop1, "v_mov_b32_e32", &[v1(0), s1(4)]);
        let add = b(Encoding::Vop2, "v_add_u32_e32", &[v1(2), v1(0), v1(0)]);
        let body = |is: &[Instruction]| -> Vec<(u64, Instruction, Kind)> {
            is.iter()
                .enumerate()
                .map(|(k, &i)| (4 * k as u64, i, Kind::Plain))
                .collect()
        };
        let mut live_out = RegSet::new();
        live_out.insert_range(bits::VGPR_BASE, 3);
        let facts = |c: Option<u32>| Facts {
            vgprs: c.map(|c| (0, c)).into_iter().collect(),
            ..Facts::default()
        };
        let stored = body(&[store, mov, add]);
        let (without, _, same) = simplify_alike(&asm, &stored, &facts(None), &live_out, &[0]);
        assert!(same);
        for c in [0, 1, 7, 64] {
            assert!(without == simplify(&asm, &stored, &facts(Some(c)), &live_out).0);
        }
        let added = body(&[add, store, mov]);
        let (_, _, same) = simplify_alike(&asm, &added, &facts(None), &live_out, &[0]);
        assert!(!same, "v0 is read by an addition");
    }

    /// LLVM's atomic optimizer's code for a 64-bit atomic add of
    /// `per_thread ? popcount(exec) : 1` (what clang makes of instr_count's
    /// `count_vector`), the atomic standing as moves of its operands to
    /// v3/v4: the sum reduced over the active lanes in s[4:5], then the
    /// first lane alone.
    fn atomic_optimizer_body(asm: &Asm) -> Vec<(u64, Instruction, Kind)> {
        use Encoding::*;
        let b = |e, m, ops: &[Operand]| asm.build(e, m, ops).unwrap();
        let branch = |m| b(Sopp, m, &[Operand::Imm(0)]);
        let exec_lo = Operand::Special {
            code: 126,
            count: 1,
        };
        let exec_hi = Operand::Special {
            code: 127,
            count: 1,
        };
        let vcc = Operand::Fixed("vcc");
        let code = [
            (
                b(Vop3, "v_bcnt_u32_b32", &[v1(1), v1(1), Asm::konst(0)]),
                Kind::Plain,
            ),
            (
                b(Vop3, "v_bcnt_u32_b32", &[v1(2), v1(2), v1(1)]),
                Kind::Plain,
            ),
            (
                b(Vopc, "v_cmp_ne_u32_e32", &[vcc, Asm::konst(0), v1(0)]),
                Kind::Plain,
            ),
            (b(Sop1, "s_mov_b64", &[s2(6), EXEC2]), Kind::Plain),
            (asm.vmov(1, Asm::konst(0)).unwrap(), Kind::Plain),
            (
                b(
                    Vop2,
                    "v_cndmask_b32_e32",
                    &[v1(0), Asm::konst(1), v1(2), vcc],
                ),
                Kind::Plain,
            ),
            (b(Sop1, "s_mov_b64", &[s2(4), Asm::konst(0)]), Kind::Plain),
            // The loop over the active lanes.
            (b(Sop1, "s_ff1_i32_b64", &[s1(8), s2(6)]), Kind::Plain),
            (
                b(Vop3, "v_readlane_b32", &[s1(10), v1(0), s1(8)]),
                Kind::Plain,
            ),
            (
                b(Vop3, "v_readlane_b32", &[s1(9), v1(1), s1(8)]),
                Kind::Plain,
            ),
            (b(Sop2, "s_add_u32", &[s1(4), s1(4), s1(10)]), Kind::Plain),
            (b(Sop2, "s_addc_u32", &[s1(5), s1(5), s1(9)]), Kind::Plain),
            (
                b(Sop2, "s_lshl_b64", &[s2(8), Asm::konst(1), s1(8)]),
                Kind::Plain,
            ),
            (b(Sop2, "s_andn2_b64", &[s2(6), s2(6), s2(8)]), Kind::Plain),
            (
                b(Sopc, "s_cmp_lg_u64", &[s2(6), Asm::konst(0)]),
                Kind::Plain,
            ),
            (branch("s_cbranch_scc1"), Kind::Branch(7)),
            // The first lane alone.
            (
                b(Vop3, "v_mbcnt_lo_u32_b32", &[v1(0), exec_lo, Asm::konst(0)]),
                Kind::Plain,
            ),
            (
                b(Vop3, "v_mbcnt_hi_u32_b32", &[v1(0), exec_hi, v1(0)]),
                Kind::Plain,
            ),
            (
                b(Vopc, "v_cmp_eq_u32_e32", &[vcc, Asm::konst(0), v1(0)]),
                Kind::Plain,
            ),
            (b(Sop1, "s_and_saveexec_b64", &[s2(6), VCC2]), Kind::Plain),
            (b(Sop2, "s_xor_b64", &[s2(6), EXEC2, s2(6)]), Kind::Plain),
            (branch("s_cbranch_execz"), Kind::Branch(24)),
            (asm.vmov(3, s1(4)).unwrap(), Kind::Plain),
            (asm.vmov(4, s1(5)).unwrap(), Kind::Plain),
            (b(Sop2, "s_or_b64", &[EXEC2, EXEC2, s2(6)]), Kind::Plain),
        ];
        code.into_iter()
            .enumerate()
            .map(|(k, (i, kind))| (4 * k as u64, i, kind))
            .collect()
    }

    #[test]
    fn the_atomic_optimizers_lane_loop_runs_once_in_one_lane_and_goes() {
        let asm = Asm::new(inlay_isa::Target::Gfx90a);
        let body = atomic_optimizer_body(&asm);
        let mut live_out = RegSet::new();
        live_out.insert_range(bits::VGPR_BASE + 3, 2);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for per_thread in [0, 1] {
            let facts = Facts {
                one_lane: true,
                vgprs: vec![(0, per_thread)],
                ..Facts::default()
            };
            let simple = simplify(&asm, &body, &facts, &live_out).0;
            // No branch is left; with a constant count, nothing but the
            // moves of the sum's two halves.
            assert!(
                simple
                    .iter()
                    .all(|&(_, _, k)| !matches!(k, Kind::Branch(_))),
                "{simple:?}"
            );
            if per_thread == 0 {
                assert_eq!(simple.len(), 2, "{simple:?}");
            }
            for _ in 0..50 {
                let mut w = Wave::new(0);
                w.set_exec(1 << rng.below(64));
                for x in w.s.iter_mut().take(usize::from(SGPRS)) {
                    *x = rng.next() as u32;
                }
                w.scc = rng.below(2) == 1;
                // The arguments: per_thread, EXEC as at the point (uniform).
                let app_exec = rng.next();
                for lane in 0..64 {
                    w.v[0][lane] = per_thread;
                    w.v[1][lane] = app_exec as u32;
                    w.v[2][lane] = (app_exec >> 32) as u32;
                    w.v[3][lane] = rng.next() as u32;
                    w.v[4][lane] = rng.next() as u32;
                }
                let (want, _) = run(&body, &w, &[0; BUFFER], 500).expect("the original ends");
                let (got, _) =
                    run(&simple, &w, &[0; BUFFER], 500).expect("the simplified body ends");
                assert_eq!(want.exec(), got.exec());
                let sum = if per_thread == 1 {
                    app_exec.count_ones()
                } else {
                    1
                };
                assert_eq!((want.v[3], want.v[4]), (got.v[3], got.v[4]));
                let lane = w.exec().trailing_zeros() as usize;
                assert_eq!((got.v[3][lane], got.v[4][lane]), (sum, 0));
            }
        }
    }

    /// count_vector's tail as clang writes it: the global's address, the
    /// offset 0, the count copied from s[4:5] into v[0:1], the atomic.
    fn count_tail(asm: &Asm, offset: i32) -> Vec<(u64, Instruction, Kind)> {
        let d = inlay_isa::Decoder::new(inlay_isa::Target::Gfx90a);
        // v_pk_mov_b32 v[0:1], s[4:5], s[4:5] op_sel:[0,1] (llvm-mc-19).
        let bytes = [0x00, 0x50, 0xb3, 0xd3, 0x04, 0x08, 0x00, 0x18];
        let pk = d.decode(&bytes).unwrap();
        let mut atomic = asm
            .build(
                Encoding::Global,
                "global_atomic_add_x2",
                &[v1(2), Operand::Vgpr { first: 0, count: 2 }, s2(8)],
            )
            .unwrap();
        assert!(atomic.set_modifier(inlay_isa::Modifier::Offset(offset)));
        let getpc = asm.build(Encoding::Sop1, "s_getpc_b64", &[s2(8)]).unwrap();
        vec![
            (0, getpc, Kind::Got(0)),
            (4, asm.vmov(2, Asm::konst(0)).unwrap(), Kind::Plain),
            (8, pk, Kind::Plain),
            (16, atomic, Kind::Plain),
        ]
    }

    #[test]
    fn a_one_lane_atomic_of_an_aligned_global_becomes_scalar_and_only_then() {
        let asm = Asm::new(inlay_isa::Target::Gfx90a);
        let facts = Facts {
            one_lane: true,
            got_align: vec![(0, 16)],
            scalar_atomics: Some("add"),
            ..Facts::default()
        };
        let scalar = |b: &[(u64, Instruction, Kind)]| {
            b.iter()
                .filter(|(_, i, _)| i.mnemonic() == "s_atomic_add_x2")
                .count()
        };
        for offset in [0, 8, 16] {
            let body = count_tail(&asm, offset);
            let simple = simplify(&asm, &body, &facts, &RegSet::new()).0;
            // Nothing vector is left: the Got, the scalar atomic.
            assert_eq!(scalar(&simple), 1, "{simple:?}");
            assert_eq!(simple.len(), 2, "{simple:?}");
            // What it adds to memory: the same, in a random lane.
            let mut rng = Rng(0x1234_5678_9abc_def1 ^ offset as u64);
            for _ in 0..20 {
                let mut w = Wave::new(0);
                w.set_exec(1 << rng.below(64));
                w.s[4] = rng.next() as u32;
                w.s[5] = rng.next() as u32;
                let memory: Vec<u8> = (0..BUFFER).map(|_| rng.next() as u8).collect();
                let (_, want) = run(&body, &w, &memory, 100).unwrap();
                let (_, got) = run(&simple, &w, &memory, 100).unwrap();
                assert_eq!(want, got);
                assert_ne!(want, memory, "the atomic changed nothing");
            }
        }
        // Not made scalar: more than one lane may run it; the module's
        // accesses are of another family, or unknown; the global's
        // alignment is below the access size; the offset is not a
        // multiple of it; the VGPR offset is not known.
        let not = |facts: &Facts, body: &[(u64, Instruction, Kind)]| {
            let simple = simplify(&asm, body, facts, &RegSet::new()).0;
            assert_eq!(scalar(&simple), 0, "{facts:?}: {simple:?}");
        };
        let body = count_tail(&asm, 0);
        not(
            &Facts {
                one_lane: false,
                ..facts.clone()
            },
            &body,
        );
        for family in [Some("or"), None] {
            not(
                &Facts {
                    scalar_atomics: family,
                    ..facts.clone()
                },
                &body,
            );
        }
        not(
            &Facts {
                got_align: vec![(0, 4)],
                ..facts.clone()
            },
            &body,
        );
        not(&facts, &count_tail(&asm, 4));
        not(&facts, &count_tail(&asm, -8));
        let mut unknown_offset = body.clone();
        unknown_offset.remove(1);
        not(&facts, &unknown_offset);
    }
}
