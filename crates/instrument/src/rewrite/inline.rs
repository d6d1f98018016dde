//! Compiled hooks inlined at their points (issue 13): the hook's own
//! machine code placed where a call would go, its registers renamed onto
//! registers dead there, so that nothing is saved and nothing is called.
//!
//! A hook can be inlined when its code is one function (it calls nothing),
//! uses no private memory (no stack, no spills: `s[0:3]`, `s32`, `s33`
//! unread), names `s[30:31]` only to return, jumps only to its own
//! instructions, and names SGPRs, VGPRs and AGPRs only through operands
//! (no implicit ones) — [`Body::new`] says why not otherwise. Its registers
//! are grouped into runs that move together (the tuples its instructions
//! name, overlapping ones joined), and each run is placed on registers
//! dead at the point (liveness in every lane for vector ones), keeping its
//! alignment; VGPRs may also come from above every VGPR the kernel and
//! the hooks name, growing the allocation, and SGPRs may be borrowed from
//! live ones (not read by the arguments, not held for the kernel), kept in
//! lanes of a free VGPR meanwhile, as the call path borrows them. When
//! even that fails the call path takes over (or, inlining forced, the tool
//! gets the reason).
//!
//! The body placed is the hook's code simplified for what the point tells
//! (its constant arguments, EXEC one lane for a once-per-wave hook: see
//! [`super::simplify`]), once per hook and facts.
//!
//! At the point, in order:
//! 1. `s_waitcnt 0` when the code names a register a load of the kernel
//!    writes (an outstanding load may still be writing it; registers no
//!    load writes are taken first); borrowed SGPRs into their lanes; SCC,
//!    VCC and M0 into dead SGPRs when live and written by what follows;
//!    EXEC likewise for a once-per-wave hook.
//! 2. EXEC: one lane for a once-per-wave hook (the lowest on, lane 0 when
//!    none is) whose simplified body names anything vector (a body left
//!    scalar runs once whatever EXEC holds: EXEC is left alone), in which
//!    its arguments are computed, straight into the
//!    registers the hook reads them from (a dword the body does not read
//!    is not computed; a constant is an inline constant or a literal the
//!    template patches; EXEC and SCC come from their saves once changed).
//! 3. The ABI inputs the body reads, from their homes, into the registers
//!    it reads them from (the call path's homes: see [`crate::hooks`]).
//! 4. A per-lane hook's code is skipped when no lane is on.
//! 5. The body: each instruction with its registers renamed, the leading
//!    `s_waitcnt 0` of the calling convention dropped (and any wait before
//!    the body's first memory instruction: step 1 did what they did; and
//!    any wait no later instruction of the body needs: see
//!    [`waits_for_something`]),
//!    branches re-aimed inside the copy, `s_setpc_b64 s[30:31]` a branch to
//!    the end (the last one falls through), each `s_getpc_b64` (with the
//!    offset clang adds to it) as an `s_getpc_b64` and relocated adds that
//!    give the address the original would have had in the loaded hook
//!    module, and a load of the module's global offset table (a global's
//!    address) read from the kernel's home for it when it keeps one.
//! 6. A `s_waitcnt 0` when a load of the hook may still be writing a
//!    register, then EXEC, M0, VCC, SCC and borrowed SGPRs back. The hook's
//!    code itself leaves EXEC as it found it (the calling convention).

use std::sync::Arc;

use inlay_isa::{info, Encoding, Instruction, InstructionInfo, Operand, RegFile, RegisterSlot};

use super::asm::{Asm, EXEC};
use super::call::{
    address_operands, arg_vgprs, constant, reg_bits, scalar_operand, CallPlan, Ctx, Request,
};
use super::preamble::{sgpr_pair, Home};
use super::simplify::{simplify_alike, Facts};
use super::snippet::Snippet;
use super::RewriteError;
use crate::fast_hash::FastHash;
use crate::hooks::{Arg, HookInfo, LaunchValue, Placement};
use crate::lift::{flow, Flow};
use crate::regs::{self as bits, RegSet};

/// What one body instruction becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Plain,
    /// A branch to the body instruction of this index.
    Branch(usize),
    Return,
    /// `s_getpc_b64`, with the adds that followed it in the hook folded
    /// in: its pair gets the address this far from the hook's entry (read
    /// from the kernel's home for it when there is one, else found with
    /// relocations).
    Getpc(i64),
    /// An `s_getpc_b64` of the pair that stands for `s_getpc_b64` and
    /// `s_load_dwordx2` of the 64-bit entry of the module's global offset
    /// table this far from the hook's entry (a global's address): read
    /// from the kernel's home for it when there is one.
    Got(i64),
    /// The calling convention's `s_waitcnt 0` at the entry.
    EntryWait,
}

/// Registers of one file that move together, and the alignment their
/// tuples need (a renaming moves them by a multiple of it).
#[derive(Debug, Clone, Copy)]
struct Run {
    file: RegFile,
    first: u16,
    count: u16,
    align: u16,
}

/// A register operand a renaming sets: its slot, where the instruction
/// encodes it (none: it cannot be renamed), and the run of its first
/// register with the register's place in it (none: the return's).
type Renamed = (u8, Option<RegisterSlot>, Option<(u16, u16)>);

/// A hook's code as the inliner takes it.
#[derive(Debug)]
pub(super) struct Body {
    insts: Vec<(u64, Instruction, Kind)>,
    /// Per instruction, the register operands a renaming sets, as its
    /// def/use lists them (fixed slots that name one included, a GLOBAL
    /// saddr).
    operands: Vec<Vec<Renamed>>,
    runs: Vec<Run>,
    /// SGPRs and VGPRs (RegSet bits, the hook's numbers) it writes.
    written: RegSet,
    writes_vcc: bool,
    writes_m0: bool,
    /// SCC is written: by the hook, or by the sequence around it.
    writes_scc: bool,
    /// A memory instruction writes registers: they may still be arriving
    /// when the body ends.
    loads: bool,
    /// It names EXEC, VGPRs or AGPRs (or runs under EXEC): a once-per-wave
    /// hook's body then runs in one lane; one that does not runs as it
    /// finds the wave (its scalar code runs once whatever EXEC holds).
    vector: bool,
    entry: u64,
    /// Registers it reads before writing them (its inputs: arguments and
    /// ABI inputs not in it need not be set).
    live_in: RegSet,
    /// SGPR pairs written only by [`Kind::Getpc`] of one address or
    /// [`Kind::Got`] of one table entry (its distance, and whether it is
    /// loaded): they may be the value's home.
    module_pairs: Vec<(u16, (i64, bool))>,
    /// SGPR pairs written only by `s_mov_b64` of one 64-bit inline
    /// constant (its value): when the body does not read them first, they
    /// may be a home of that constant.
    constant_pairs: Vec<(u16, u64)>,
    /// Per instruction: whether a wait there may be needed by the body
    /// (see [`waits_for_something`]).
    waits_for: Vec<bool>,
}

impl Body {
    /// The hook's body, or why it cannot be inlined.
    pub(super) fn new(h: &HookInfo) -> Result<Body, String> {
        let prog = &h.program;
        if !prog.calls.is_empty() || prog.functions.len() != 1 {
            return Err("it calls other functions".into());
        }
        if h.inputs.private_segment {
            return Err("it uses private memory (a stack or spills)".into());
        }
        let mut ids: Vec<usize> = (0..prog.insts.len()).collect();
        ids.sort_by_key(|&i| prog.insts[i].addr);
        let index_of = |addr: u64| ids.iter().position(|&i| prog.insts[i].addr == addr);
        let mut insts = Vec::with_capacity(ids.len());
        for (k, &id) in ids.iter().enumerate() {
            let ins = &prog.insts[id];
            let i = ins.inst;
            let at = ins.addr;
            let next = ins.addr + i.len() as u64;
            let falls_to_next = || ids.get(k + 1).map(|&n| prog.insts[n].addr) == Some(next);
            let kind = match flow(&i, at) {
                Flow::Next | Flow::CondBranch(_) if !falls_to_next() => {
                    return Err(format!(
                        "the instruction at {at:#x} runs on past the code the engine lifted"
                    ))
                }
                Flow::Next if i.mnemonic() == "s_getpc_b64" => Kind::Getpc(0),
                Flow::Next if k == 0 && is_full_wait(&i) => Kind::EntryWait,
                Flow::Next => Kind::Plain,
                Flow::Branch(t) | Flow::CondBranch(t) => Kind::Branch(
                    index_of(t)
                        .ok_or_else(|| format!("the branch at {at:#x} leaves the hook's code"))?,
                ),
                Flow::SetPc if i.operand(0) == Some(Asm::sgpr(30, 2)) => Kind::Return,
                Flow::SetPc | Flow::Unresolved => {
                    return Err(format!("the jump at {at:#x} is indirect"))
                }
                Flow::Call => return Err(format!("it calls a function at {at:#x}")),
                Flow::End => return Err(format!("it ends the wave at {at:#x}")),
            };
            insts.push((at, i, kind));
        }
        Body::of(got_loads(fold_pc_offsets(insts, h.address), h), h.address)
    }

    /// A body of these instructions (the hook's registers grouped into
    /// runs), or why it cannot be inlined.
    fn of(insts: Vec<(u64, Instruction, Kind)>, entry: u64) -> Result<Body, String> {
        let mut tuples: Vec<(RegFile, u16, u16)> = Vec::new();
        let mut written = RegSet::new();
        let (mut writes_vcc, mut writes_m0, mut writes_scc, mut loads) =
            (false, false, false, false);
        let mut operands = Vec::with_capacity(insts.len());
        let mut vector = false;
        // (Each instruction's registers, found once for all that follows.)
        let infos: Vec<InstructionInfo> = insts.iter().map(|(_, i, _)| info(i)).collect();
        for (&(at, i, kind), inf) in insts.iter().zip(&infos) {
            let is_memory = is_memory(&i);
            let mut named = Vec::new();
            for u in inf.used_registers() {
                let r = u.register;
                vector |= matches!(r.file, RegFile::Vgpr | RegFile::Agpr | RegFile::Exec)
                    && kind != Kind::Return;
                match r.file {
                    RegFile::Sgpr | RegFile::Vgpr | RegFile::Agpr => {
                        if let Some(slot) = u.operand {
                            named.push((slot, r.file, r.first));
                        }
                        if kind == Kind::Return {
                            continue;
                        }
                        if u.is_implicit() {
                            return Err(format!(
                                "the instruction at {at:#x} names a register implicitly"
                            ));
                        }
                        let end = r.first + u16::from(r.count);
                        if r.file == RegFile::Sgpr && r.first < 34 && end > 30 {
                            return Err(format!(
                                "the instruction at {at:#x} names s30..s33 (the return address, stack and frame pointers)"
                            ));
                        }
                        loads |= is_memory && u.access.writes();
                        if u.access.writes() {
                            written.union_with(&RegSet::of(&r));
                        }
                        tuples.push((r.file, r.first, u16::from(r.count)));
                    }
                    RegFile::Vcc => writes_vcc |= u.access.writes(),
                    RegFile::M0 => writes_m0 |= u.access.writes(),
                    RegFile::Scc => writes_scc |= u.access.writes(),
                    // The PC of branches and s_getpc_b64 (placed anew),
                    // what FLAT instructions read.
                    RegFile::Exec | RegFile::Pc => {}
                    RegFile::FlatScratch | RegFile::XnackMask | RegFile::HwReg
                        if !u.access.writes() => {}
                    f => {
                        return Err(format!(
                            "the instruction at {at:#x} {} {f:?}",
                            if u.access.writes() { "writes" } else { "reads" }
                        ))
                    }
                }
            }
            operands.push(named);
        }
        let runs = runs(tuples);
        // (Each operand's run found once, not per copy.)
        let operands = operands
            .into_iter()
            .zip(&insts)
            .map(|(named, (_, inst, _)): (Vec<(u8, RegFile, u16)>, _)| {
                named
                    .into_iter()
                    .map(|(slot, file, first)| {
                        let run = runs.iter().position(|r| {
                            r.file == file && (r.first..r.first + r.count).contains(&first)
                        });
                        (
                            slot,
                            inst.register_slot(usize::from(slot)),
                            run.map(|k| (k as u16, first - runs[k].first)),
                        )
                    })
                    .collect()
            })
            .collect();
        Ok(Body {
            operands,
            runs,
            written,
            writes_vcc,
            writes_m0,
            writes_scc,
            loads,
            vector,
            entry,
            live_in: RegSet::all(),
            module_pairs: module_pairs(&insts, &infos),
            constant_pairs: constant_pairs(&insts, &infos),
            waits_for: waits_for_something(&insts, &infos),
            insts,
        })
    }

    /// The body optimised for what its point tells (see [`simplify`]),
    /// and whether it is also the body for any inline constants in the
    /// VGPRs `opaque`, which `facts` leaves unknown (see
    /// [`simplify_alike`]).
    fn simplified(&self, asm: &Asm, facts: &Facts, opaque: &[u16]) -> Result<(Body, bool), String> {
        // Nothing of the hook's is read after it but EXEC (its registers
        // are dead at the point; SCC, VCC and M0 are saved around it).
        let (insts, live_in, alike) =
            simplify_alike(asm, &self.insts, facts, &RegSet::new(), opaque);
        Ok((
            Body {
                live_in,
                ..Body::of(insts, self.entry)?
            },
            alike,
        ))
    }

    /// The constants of [`Body::constant_pairs`] the body does not read
    /// before setting (a home of one may stand for its pair).
    fn home_constants(&self) -> impl Iterator<Item = u64> + '_ {
        self.constant_pairs
            .iter()
            .filter(|&&(p, _)| !self.live_in.any_in(p, 2))
            .map(|&(_, c)| c)
    }

    /// Instructions of the hook's code (what a call runs besides its own
    /// sequence, the entry wait and the return included).
    pub(super) fn len(&self) -> usize {
        self.insts.len()
    }
}

/// The body's instructions some branch of it lands on (a fold that joins
/// an instruction with the one before must not take a target's place).
fn branch_targets(insts: &[(u64, Instruction, Kind)]) -> Vec<usize> {
    insts
        .iter()
        .filter_map(|&(_, _, k)| match k {
            Kind::Branch(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// Each `s_getpc_b64` followed by the `s_add_u32`/`s_addc_u32` of a
/// 64-bit literal offset to its pair (how clang reaches a symbol) as one
/// [`Kind::Getpc`] with the sum, every getpc's address given by its
/// distance from `entry`, the hook's.
fn fold_pc_offsets(
    insts: Vec<(u64, Instruction, Kind)>,
    entry: u64,
) -> Vec<(u64, Instruction, Kind)> {
    let targets = branch_targets(&insts);
    let adds = |k: usize, d: u16| -> Option<i64> {
        let lit = |j: usize, m: &str, r: u16| match insts.get(j) {
            Some(&(_, i, Kind::Plain))
                if i.mnemonic() == m
                    && !targets.contains(&j)
                    && i.operand(0) == Some(Asm::sgpr(r, 1))
                    && i.operand(1) == Some(Asm::sgpr(r, 1)) =>
            {
                match i.operand(2) {
                    Some(Operand::Literal(v)) => Some(u64::from(v)),
                    _ => None,
                }
            }
            _ => None,
        };
        let lo = lit(k + 1, "s_add_u32", d)?;
        let hi = lit(k + 2, "s_addc_u32", d + 1)?;
        Some((lo | hi << 32) as i64)
    };
    let mut keep = vec![true; insts.len()];
    let mut out = insts.clone();
    for (k, &(_, i, kind)) in insts.iter().enumerate() {
        if let (Kind::Getpc(0), Some(Operand::Sgpr { first: d, count: 2 })) = (kind, i.operand(0)) {
            if let Some(off) = adds(k, d) {
                out[k].2 = Kind::Getpc(off);
                keep[k + 1] = false;
                keep[k + 2] = false;
            }
        }
    }
    let mut new_index = vec![0usize; insts.len() + 1];
    let mut n = 0;
    for k in 0..insts.len() {
        new_index[k] = n;
        n += usize::from(keep[k]);
    }
    new_index[insts.len()] = n;
    out.into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|((a, i, kind), _)| match kind {
            Kind::Branch(t) => (a, i, Kind::Branch(new_index[t])),
            // (The value s_getpc_b64 gives is the address after it.)
            Kind::Getpc(off) => (
                a,
                i,
                Kind::Getpc(((a + 4).wrapping_sub(entry) as i64).wrapping_add(off)),
            ),
            k => (a, i, k),
        })
        .collect()
}

/// Each `s_getpc_b64` (with its offset) followed by the `s_load_dwordx2`
/// of an entry of the module's global offset table into the same pair,
/// as one [`Kind::Got`].
fn got_loads(insts: Vec<(u64, Instruction, Kind)>, h: &HookInfo) -> Vec<(u64, Instruction, Kind)> {
    let Some((start, end)) = h.got else {
        return insts;
    };
    let targets = branch_targets(&insts);
    let mut out = Vec::with_capacity(insts.len());
    let mut new_index = vec![0usize; insts.len() + 1];
    let mut skip = false;
    for (k, &(addr, i, kind)) in insts.iter().enumerate() {
        new_index[k] = out.len();
        if std::mem::take(&mut skip) {
            continue;
        }
        if let (Kind::Getpc(dist), Some(pair @ Operand::Sgpr { count: 2, .. })) =
            (kind, i.operand(0))
        {
            let slot = h.address.wrapping_add(dist as u64);
            let load = insts.get(k + 1).filter(|&&(_, l, lk)| {
                lk == Kind::Plain
                    && !targets.contains(&(k + 1))
                    && l.mnemonic() == "s_load_dwordx2"
                    && l.operand(0) == Some(pair)
                    && l.operand(1) == Some(pair)
                    && l.operand(2) == Some(Operand::Imm(0))
                    && l.words()[0] & (1 << 16) == 0 // no glc
            });
            if load.is_some() && slot.is_multiple_of(8) && slot >= start && slot + 8 <= end {
                out.push((addr, i, Kind::Got(dist)));
                skip = true;
                continue;
            }
        }
        out.push((addr, i, kind));
    }
    new_index[insts.len()] = out.len();
    out.into_iter()
        .map(|(a, i, kind)| match kind {
            Kind::Branch(t) => (a, i, Kind::Branch(new_index[t])),
            k => (a, i, k),
        })
        .collect()
}

/// See [`Body::module_pairs`].
fn module_pairs(
    insts: &[(u64, Instruction, Kind)],
    infos: &[InstructionInfo],
) -> Vec<(u16, (i64, bool))> {
    pairs_only_written_with(insts, infos, |i, kind| match (kind, i.operand(0)) {
        (Kind::Getpc(d), Some(Operand::Sgpr { first, count: 2 })) => Some((first, (d, false))),
        (Kind::Got(d), Some(Operand::Sgpr { first, count: 2 })) => Some((first, (d, true))),
        _ => None,
    })
}

/// See [`Body::constant_pairs`].
fn constant_pairs(
    insts: &[(u64, Instruction, Kind)],
    infos: &[InstructionInfo],
) -> Vec<(u16, u64)> {
    pairs_only_written_with(insts, infos, |i, kind| {
        match (kind, i.mnemonic(), i.operand(0), i.operand(1)) {
            (
                Kind::Plain,
                "s_mov_b64",
                Some(Operand::Sgpr { first, count: 2 }),
                Some(Operand::Inline(c)),
            ) => super::simplify::inline_int(c).map(|v| (first, i64::from(v) as u64)),
            _ => None,
        }
    })
}

/// The SGPR pairs every write of which gives them the same value `v`,
/// where `value_of` says which pair an instruction sets to what (any other
/// write of a pair rules it out); `infos` are the instructions' registers.
fn pairs_only_written_with<T: Copy + PartialEq>(
    insts: &[(u64, Instruction, Kind)],
    infos: &[InstructionInfo],
    value_of: impl Fn(&Instruction, Kind) -> Option<(u16, T)>,
) -> Vec<(u16, T)> {
    // Per pair written: the value while only it is written there.
    let mut seen: Vec<(u16, Option<T>)> = Vec::new();
    for (&(_, i, kind), inf) in insts.iter().zip(infos) {
        let set = value_of(&i, kind);
        for u in inf.used_registers() {
            let r = u.register;
            if !u.access.writes() || r.file != RegFile::Sgpr {
                continue;
            }
            for n in r.first..r.first + u16::from(r.count) {
                let pair = n & !1;
                let v = set.filter(|&(p, _)| p == pair).map(|(_, v)| v);
                match seen.iter_mut().find(|(p, _)| *p == pair) {
                    Some((_, x)) if *x != v => *x = None,
                    Some(_) => {}
                    None => seen.push((pair, v)),
                }
            }
        }
    }
    seen.into_iter()
        .filter_map(|(p, v)| Some((p, v?)))
        .collect()
}

/// The addresses in the hook's module its inlined code computes, and the
/// global-offset-table entries it loads: distances from the hook's entry,
/// and whether loaded.
pub(super) fn module_values(h: &HookInfo) -> Vec<(i64, bool)> {
    Body::new(h).map_or(Vec::new(), |b| {
        b.insts
            .iter()
            .filter_map(|&(_, _, k)| match k {
                Kind::Getpc(d) => Some((d, false)),
                Kind::Got(d) => Some((d, true)),
                _ => None,
            })
            .collect()
    })
}

/// A memory instruction: one whose results may still be outstanding.
pub(super) fn is_memory(i: &Instruction) -> bool {
    matches!(
        i.encoding(),
        Encoding::Smem
            | Encoding::Flat
            | Encoding::Global
            | Encoding::Scratch
            | Encoding::Ds
            | Encoding::Mubuf
            | Encoding::Mtbuf
            | Encoding::Mimg
    )
}

/// Per instruction: whether a wait there may be needed by the body — some
/// instruction after it is a memory instruction (a table entry's load
/// included) or reads a register a memory instruction of the body writes
/// (meaningful without branches back). A wait that is not needed guards
/// only the body's stores and non-returning atomics (or nothing): dropped,
/// the operations stay outstanding past the body. That is exact: what the
/// body's loads still write is waited for after it (step 6), and the
/// application's own waits only become stricter with one more operation
/// outstanding — a wait for count <= N lets at most N of the
/// application's operations be outstanding still, and it relied on them
/// completing in order among themselves (vmcnt; LLVM waits lgkmcnt(0) for
/// SMEM, which completes out of order), which the extra one does not
/// change.
fn waits_for_something(insts: &[(u64, Instruction, Kind)], infos: &[InstructionInfo]) -> Vec<bool> {
    let mut loaded = RegSet::new();
    for (&(_, i, kind), inf) in insts.iter().zip(infos) {
        for u in inf.used_registers() {
            if (is_memory(&i) || matches!(kind, Kind::Got(_))) && u.access.writes() {
                loaded.union_with(&RegSet::of(&u.register));
            }
        }
    }
    let mut out = vec![false; insts.len()];
    let mut later = false;
    for (k, &(_, i, kind)) in insts.iter().enumerate().rev() {
        out[k] = later;
        later |= is_memory(&i)
            || matches!(kind, Kind::Got(_))
            || infos[k].used_registers().iter().any(|u| {
                u.access.reads() && !RegSet::of(&u.register).intersection(&loaded).is_empty()
            });
    }
    out
}

fn is_full_wait(i: &Instruction) -> bool {
    i.mnemonic() == "s_waitcnt" && i.operand(0) == Some(Operand::Imm(0))
}

/// The tuples as runs: overlapping ones of a file joined.
fn runs(mut tuples: Vec<(RegFile, u16, u16)>) -> Vec<Run> {
    tuples.sort_by_key(|&(f, first, _)| (f as u8, first));
    let mut out: Vec<Run> = Vec::new();
    for (file, first, count) in tuples {
        let align = match (file, count) {
            (_, 1) => 1,
            (RegFile::Sgpr, 2) => 2,
            (RegFile::Sgpr, _) => 4,
            _ => 2,
        };
        match out.last_mut() {
            Some(r) if r.file == file && first < r.first + r.count => {
                r.count = r.count.max(first + count - r.first);
                // The run moves by a multiple of every tuple's alignment
                // (from its own, aligned, place in the hook).
                r.align = r.align.max(align);
            }
            _ => out.push(Run {
                file,
                first,
                count,
                align,
            }),
        }
    }
    out
}

/// The hook's registers on the point's: per run, where it starts.
struct Renaming<'b> {
    runs: &'b [Run],
    to: Vec<u16>,
}

impl Renaming<'_> {
    fn get(&self, file: RegFile, n: u16) -> Option<u16> {
        self.runs
            .iter()
            .zip(&self.to)
            .find(|(r, _)| r.file == file && (r.first..r.first + r.count).contains(&n))
            .map(|(r, &t)| t + (n - r.first))
    }

    fn sgpr(&self, n: u16) -> Option<u16> {
        self.get(RegFile::Sgpr, n)
    }

    fn vgpr(&self, n: u16) -> Option<u16> {
        self.get(RegFile::Vgpr, n)
    }
}

/// Free registers at a point.
struct Free<'h> {
    set: RegSet,
    /// VGPRs above everything (growing the allocation), from here up.
    above: u16,
    ceiling: u16,
    /// Live SGPRs that may be borrowed when too few are dead (saved in
    /// lanes of a VGPR and put back, as the call path does).
    borrow: RegSet,
    borrowed: Vec<u16>,
    /// Registers the kernel's loads write (taken last).
    loaded: RegSet,
    /// The SGPRs it may take without growing the allocation, the most
    /// often dead in the kernel first (taken next).
    sgprs_often_dead: &'h [u16],
    /// What an earlier copy of the same call took for each purpose
    /// ([`Choices`]).
    hints: &'h [u16],
}

/// Each register a placing chose, by purpose: the body's runs in order,
/// then the sequence's registers ([`Sequence::purposes`]); `NONE` where
/// none was taken.
type Choices = Vec<u16>;

const NONE: u16 = u16::MAX;

fn choices(to: &[u16], seq: &Sequence) -> Choices {
    to.iter()
        .copied()
        .chain(seq.purposes().map(|r| r.unwrap_or(NONE)))
        .collect()
}

impl Free<'_> {
    /// `count` registers of `file` from one congruent to `first` modulo
    /// `align` for `purpose`: those an earlier copy took for it when they
    /// are free here too (then points share that copy rather than each
    /// building its own), else the lowest.
    fn take(
        &mut self,
        file: RegFile,
        first: u16,
        count: u16,
        align: u16,
        purpose: usize,
    ) -> Option<u16> {
        let (base, end) = match file {
            RegFile::Sgpr => (0, bits::NUM_SGPRS),
            RegFile::Vgpr => (bits::VGPR_BASE, bits::AGPR_BASE),
            _ => (bits::AGPR_BASE, bits::NUM_BITS),
        };
        let hint = self.hints.get(purpose).copied().filter(|&h| h != NONE);
        let fits = |set: &RegSet| {
            let r = first % align;
            let free_at =
                |n: u16| base + n + count <= end && (n..n + count).all(|k| set.contains(base + k));
            if let Some(h) = hint.filter(|&h| h % align == r && free_at(h)) {
                return Some(h);
            }
            let mut n = r;
            while base + n + count <= end {
                // On to the first free one from `n` (those before it are
                // not), at the alignment.
                let f = set.first_in(base + n, end)? - base;
                n = r + (f - r).div_ceil(align) * align;
                if base + n + count > end {
                    return None;
                }
                if (n..n + count).all(|k| set.contains(base + k)) {
                    return Some(n);
                }
                n += align;
            }
            None
        };
        // Registers no load writes first (the entry wait is then not
        // needed). SGPRs: the hint, else those dead most often in the
        // kernel (by the first of the run), not the lowest: most points
        // have them free and share one copy.
        let often_dead = |set: &RegSet| {
            if file != RegFile::Sgpr {
                return None;
            }
            let r = first % align;
            let end = self.sgprs_often_dead.len() as u16;
            let free_at = |n: u16| n + count <= end && (n..n + count).all(|k| set.contains(k));
            if let Some(h) = hint.filter(|&h| h % align == r && free_at(h)) {
                return Some(h);
            }
            self.sgprs_often_dead
                .iter()
                .copied()
                .find(|&n| n % align == r && free_at(n))
        };
        let unloaded = self.set.difference(&self.loaded);
        if let Some(n) = often_dead(&unloaded)
            .or_else(|| fits(&unloaded))
            .or_else(|| fits(&self.set))
        {
            self.set.remove_range(base + n, count);
            return Some(n);
        }
        if file == RegFile::Sgpr {
            let n = fits(&self.set.union(&self.borrow))?;
            for b in n..n + count {
                if !self.set.contains(b) {
                    self.borrowed.push(b);
                }
            }
            self.set.remove_range(n, count);
            self.borrow.remove_range(n, count);
            return Some(n);
        }
        if file != RegFile::Vgpr {
            return None;
        }
        let n = self.above.next_multiple_of(align) + first % align;
        (n + count <= self.ceiling).then(|| {
            self.above = n + count;
            n
        })
    }
}

/// What an instruction names: its highest SGPR and VGPR (0 when none),
/// and whether it names a register some load of the kernel writes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Named {
    max_sgpr: u16,
    max_vgpr: u16,
    loaded: bool,
}

/// [`Named`] of each distinct instruction met (copies repeat a few).
#[derive(Default)]
pub(super) struct NamedTable(std::collections::HashMap<(u64, u64), Named, FastHash>);

impl NamedTable {
    /// `i`'s [`Named`], `loaded` being the registers the kernel's loads
    /// write (the same for every call on one table).
    fn of(&mut self, i: &Instruction, loaded: &RegSet) -> Named {
        let w = i.words();
        let word = |k: usize| u64::from(w.get(k).copied().unwrap_or(0));
        let key = (
            word(0) | word(1) << 32,
            i.len() as u64 | (i.encoding() as u64) << 8 | (i.target() as u64) << 16,
        );
        *self.0.entry(key).or_insert_with(|| {
            let mut n = Named {
                max_sgpr: 0,
                max_vgpr: 0,
                loaded: false,
            };
            for u in info(i).used_registers() {
                let last = u.register.first + u16::from(u.register.count).max(1) - 1;
                match u.register.file {
                    RegFile::Sgpr => n.max_sgpr = n.max_sgpr.max(last),
                    RegFile::Vgpr => n.max_vgpr = n.max_vgpr.max(last),
                    _ => {}
                }
                n.loaded |= bits::bits_of(&u.register).is_some_and(|(at, c)| loaded.any_in(at, c));
            }
            n
        })
    }
}

/// How one call is made.
pub(super) enum Placing<'r, 'a> {
    Call(CallPlan<'r, 'a>),
    /// Inlined: one of the distinct copies (shared by the points that
    /// place the same body on the same registers).
    Inline(Arc<Inlined>),
}

/// Each hook's body, or why it cannot be inlined, found once per rewrite;
/// its simplified forms, once per distinct set of facts, and which of them
/// each call takes (found once per call, when the calls are read); its
/// inlined copies, once per distinct placing (see [`Ctx::inline`]).
#[derive(Default)]
pub(super) struct Bodies {
    hooks: std::collections::HashMap<*const HookInfo, Result<Arc<Body>, String>>,
    /// Each distinct simplified body (or why there is none), in order of
    /// first use.
    simplified: Vec<Result<Arc<Body>, String>>,
    /// Per call (index in the requests): its entry of `simplified`, or
    /// `NO_BODY` for a call placed as a call.
    of_call: Vec<u32>,
    /// Per hook module (index): the one atomic family every memory access
    /// of its hooks placed in the kernel makes (see [`Facts`]).
    families: std::collections::HashMap<usize, Option<&'static str>>,
    copies: std::collections::HashMap<Box<[u64]>, Arc<Inlined>, FastHash>,
    /// Per call up to its registers (a copy's key without them), the
    /// registers its latest placing chose.
    hints: std::collections::HashMap<Box<[u64]>, Choices, FastHash>,
    /// The key being looked up (kept to spare an allocation per point).
    key: Vec<u64>,
    /// Each simplification made, by hook, facts and VGPRs left opaque
    /// (finding the opaque constants and then the body they allow ask
    /// for the same one).
    made: SimplifiedMemo,
}

type SimplifiedMemo = std::collections::HashMap<
    (*const HookInfo, Facts, Vec<u16>),
    Result<(Arc<Body>, bool), String>,
>;

/// [`Bodies::of_call`] of a call placed as a call.
const NO_BODY: u32 = u32::MAX;

impl Bodies {
    /// Bodies for the hooks of `reqs`, each call's simplified for its
    /// point.
    pub(super) fn new(asm: &Asm, reqs: &[Request<'_>], any_inlinable: bool) -> Bodies {
        let mut b = Bodies::default();
        // (Calls placed as calls need no body.)
        if !any_inlinable {
            b.of_call = vec![NO_BODY; reqs.len()];
            return b;
        }
        let mut modules: Vec<usize> = reqs.iter().map(|r| r.call.module).collect();
        modules.sort_unstable();
        modules.dedup();
        for m in modules {
            let mut family = None;
            let mut seen: Vec<*const HookInfo> = Vec::new();
            let mut ok = true;
            for r in reqs.iter().filter(|r| r.call.module == m) {
                if seen.contains(&(r.hook as *const HookInfo)) {
                    continue;
                }
                seen.push(r.hook);
                ok &= b
                    .get(r.hook)
                    .is_ok_and(|body| accesses_commute(&body.insts, &mut family));
            }
            b.families.insert(m, family.filter(|_| ok));
        }
        // Calls alike (hook, one lane or not, inline constants) have the
        // same facts: they are worked out, and the body simplified, once.
        let mut by_facts: std::collections::HashMap<Box<[u64]>, u32, FastHash> = Default::default();
        // And calls that differ only in inline constants no fold depends on
        // (a hook storing an id it is passed) share one simplified body:
        // per shape (the facts key without values), the VGPRs of such
        // constants, found by simplifying with each left unknown; per key
        // with them left out, that body (None: some fold may depend on them
        // with these other facts).
        let mut opaque_of: std::collections::HashMap<Box<[u64]>, Vec<u16>, FastHash> =
            Default::default();
        let mut by_alike: std::collections::HashMap<Box<[u64]>, Option<u32>, FastHash> =
            Default::default();
        let (mut key, mut last) = (Vec::new(), Vec::new());
        let mut last_id = NO_BODY;
        let mut last_req: Option<&Request<'_>> = None;
        b.of_call = Vec::with_capacity(reqs.len());
        for r in reqs {
            if r.call.placement == Placement::Call {
                b.of_call.push(NO_BODY);
                continue;
            }
            // (Calls in a row are often alike: no key, no lookup then.)
            if last_req.is_some_and(|l| same_facts_key(l, r)) {
                b.of_call.push(last_id);
                continue;
            }
            last_req = Some(r);
            facts_key(r, &mut key);
            if last_id != NO_BODY && key == last {
                b.of_call.push(last_id);
                continue;
            }
            let id = match by_facts.get(key.as_slice()) {
                Some(&id) => id,
                None => {
                    let facts = facts(r, &b);
                    let shape: Vec<u64> = key[..3]
                        .iter()
                        .copied()
                        .chain(facts.vgprs.iter().map(|&(v, _)| u64::from(v)))
                        .collect();
                    let opaque = match opaque_of.get(shape.as_slice()) {
                        Some(o) => o.clone(),
                        None => {
                            let o = b.opaque_constants(asm, r.hook, &facts);
                            opaque_of.insert(shape.into(), o.clone());
                            o
                        }
                    };
                    let mut alike_facts = facts.clone();
                    alike_facts.vgprs.retain(|(v, _)| !opaque.contains(v));
                    let alike_key: Vec<u64> = key[..3]
                        .iter()
                        .copied()
                        .chain(facts.vgprs.iter().map(|&(v, c)| {
                            let c = if opaque.contains(&v) {
                                u64::MAX >> 32
                            } else {
                                u64::from(c)
                            };
                            u64::from(v) << 32 | c
                        }))
                        .collect();
                    let shared = if opaque.is_empty() {
                        None
                    } else if let Some(&known) = by_alike.get(alike_key.as_slice()) {
                        known
                    } else {
                        let alike = match b.get(r.hook) {
                            Ok(body) => {
                                match b.simplified(asm, r.hook, &body, &alike_facts, &opaque) {
                                    Ok((s, true)) => Some(Ok(s)),
                                    Ok((_, false)) => None,
                                    Err(e) => Some(Err(e)),
                                }
                            }
                            Err(e) => Some(Err(e)),
                        };
                        let known = alike.map(|body| {
                            b.simplified.push(body);
                            b.simplified.len() as u32 - 1
                        });
                        by_alike.insert(alike_key.into(), known);
                        known
                    };
                    let id = match shared {
                        Some(id) => id,
                        None => {
                            let body = b.get(r.hook).and_then(|body| {
                                b.simplified(asm, r.hook, &body, &facts, &[])
                                    .map(|(s, _)| s)
                            });
                            b.simplified.push(body);
                            b.simplified.len() as u32 - 1
                        }
                    };
                    by_facts.insert(key.as_slice().into(), id);
                    id
                }
            };
            b.of_call.push(id);
            std::mem::swap(&mut key, &mut last);
            last_id = id;
        }
        b
    }

    /// The 64-bit constants the simplified bodies of the calls that may be
    /// inlined set into a pair they only read otherwise, each set at
    /// `min_sites` sites or more (in order of first use).
    pub(super) fn constants(&self, min_sites: usize) -> Vec<u64> {
        let mut sites = vec![0usize; self.simplified.len()];
        for &id in self.of_call.iter().filter(|&&id| id != NO_BODY) {
            sites[id as usize] += 1;
        }
        // Bodies in order of first use, each body's constants in order:
        // the constants come in order of first use.
        let mut count: Vec<(u64, usize)> = Vec::new();
        for (body, &n) in self.simplified.iter().zip(&sites) {
            let Ok(body) = body else { continue };
            for c in body.home_constants() {
                match count.iter_mut().find(|(x, _)| *x == c) {
                    Some((_, m)) => *m += n,
                    None => count.push((c, n)),
                }
            }
        }
        count
            .into_iter()
            .filter(|&(_, n)| n >= min_sites)
            .map(|(c, _)| c)
            .collect()
    }

    /// The VGPRs of `facts`' inline constants that, each left unknown
    /// with the others kept, no fold of `h`'s simplification depends on.
    fn opaque_constants(&mut self, asm: &Asm, h: &HookInfo, facts: &Facts) -> Vec<u16> {
        let Ok(body) = self.get(h) else {
            return Vec::new();
        };
        facts
            .vgprs
            .iter()
            .map(|&(v, _)| v)
            .filter(|&v| {
                let mut f = facts.clone();
                f.vgprs.retain(|&(x, _)| x != v);
                matches!(self.simplified(asm, h, &body, &f, &[v]), Ok((_, true)))
            })
            .collect()
    }

    /// `body` (`h`'s) simplified for `facts` with `opaque` left unknown
    /// ([`Body::simplified`]), made once.
    fn simplified(
        &mut self,
        asm: &Asm,
        h: &HookInfo,
        body: &Body,
        facts: &Facts,
        opaque: &[u16],
    ) -> Result<(Arc<Body>, bool), String> {
        let key = (h as *const HookInfo, facts.clone(), opaque.to_vec());
        self.made
            .entry(key)
            .or_insert_with(|| {
                body.simplified(asm, facts, opaque)
                    .map(|(s, alike)| (Arc::new(s), alike))
            })
            .clone()
    }

    fn get(&mut self, h: &HookInfo) -> Result<Arc<Body>, String> {
        self.hooks
            .entry(h as *const HookInfo)
            .or_insert_with(|| Body::new(h).map(Arc::new))
            .clone()
    }

    /// Call `k`'s hook's body simplified for its point (not for a call
    /// placed as a call).
    fn simplified_for(&self, k: usize) -> Result<Arc<Body>, String> {
        match self.of_call.get(k) {
            Some(&id) if id != NO_BODY => self.simplified[id as usize].clone(),
            _ => Err("the call is not to be inlined".into()),
        }
    }
}

/// Whether every memory access of `insts` (global-offset-table loads
/// aside) is a non-returning global atomic of one family, the same as
/// `family`'s when it is set (it is set to it then).
fn accesses_commute(insts: &[(u64, Instruction, Kind)], family: &mut Option<&'static str>) -> bool {
    insts.iter().all(|&(_, i, kind)| {
        if matches!(kind, Kind::Got(_)) || !is_memory(&i) {
            return true;
        }
        let op = i.mnemonic().strip_prefix("global_atomic_");
        let f = op.and_then(|op| super::simplify::atomic_family(op.trim_end_matches("_x2")));
        let returns = i.words()[0] & 1 << 16 != 0;
        match (f, *family) {
            (Some(f), None) if !returns => {
                *family = Some(f);
                true
            }
            (Some(f), Some(g)) => f == g && !returns,
            _ => false,
        }
    })
}

/// The VGPRs (the hook's numbers) that `args`' inline constants set, and
/// their values (a literal one is patched per copy, so its value is not
/// the code's).
fn inline_constants(args: &[Arg]) -> impl Iterator<Item = (u16, u32)> + '_ {
    // (Each argument's first VGPR, as `arg_vgprs` gives them.)
    let firsts = args.iter().scan(0u16, |at, a| {
        let first = *at;
        *at += a.dwords() as u16;
        Some(first)
    });
    args.iter()
        .zip(firsts)
        .filter(|(a, _)| matches!(a, Arg::Const32(_) | Arg::Const64(_)))
        .flat_map(|(a, first)| {
            (0..a.dwords() as u8).filter_map(move |j| {
                let c = constant(a, j);
                (!matches!(Asm::konst(c), Operand::Literal(_))).then_some((first + u16::from(j), c))
            })
        })
}

/// What call `r`'s point tells about its hook's inputs: one lane for a
/// once-per-wave hook, its constant arguments that are inline constants;
/// the alignment of the globals its module's offset table gives, and the
/// atomic family of the module's accesses.
fn facts(r: &Request<'_>, bodies: &Bodies) -> Facts {
    let h = r.hook;
    Facts {
        one_lane: r.call.once_per_wave,
        vgprs: inline_constants(&r.call.args).collect(),
        got_align: h
            .got_align
            .iter()
            .map(|&(slot, align)| (slot.wrapping_sub(h.address) as i64, align))
            .collect(),
        scalar_atomics: bodies.families.get(&r.call.module).copied().flatten(),
    }
}

/// Whether `a` and `b` have the same [`facts_key`], seen from what it reads
/// (of a constant no inline constant holds, nothing).
fn same_facts_key(a: &Request<'_>, b: &Request<'_>) -> bool {
    let literal = |c: u32| matches!(Asm::konst(c), Operand::Literal(_));
    std::ptr::eq(a.hook, b.hook)
        && a.call.module == b.call.module
        && a.call.once_per_wave == b.call.once_per_wave
        && super::call::args_alike(&a.call.args, &b.call.args, |_, _, x, y| {
            literal(x) && literal(y)
        })
}

/// Everything [`facts`] reads of call `r`, as words: its hook (which
/// gives the offset table's alignments), module (the atomic family), one
/// lane or not, and inline constants.
fn facts_key(r: &Request<'_>, key: &mut Vec<u64>) {
    key.clear();
    key.push(r.hook as *const HookInfo as u64);
    key.push(r.call.module as u64);
    key.push(u64::from(r.call.once_per_wave));
    key.extend(inline_constants(&r.call.args).map(|(v, c)| u64::from(v) << 32 | u64::from(c)));
}

/// The registers the sequence around an inlined body uses.
#[derive(Debug)]
struct Sequence {
    /// An SGPR pair for temporaries (once-per-wave lane, launch values,
    /// address carries).
    temp: Option<u16>,
    /// An SGPR for an address offset no inline constant holds.
    offset_temp: Option<u16>,
    save_scc: Option<u16>,
    save_vcc: Option<u16>,
    save_m0: Option<u16>,
    save_exec: Option<u16>,
    /// Live SGPRs borrowed, kept in lanes 0.. of `lanes`.
    borrowed: Vec<u16>,
    lanes: Option<u16>,
}

impl Sequence {
    // Its registers' purposes: indices in `purposes`, and after the body's
    // runs in [`Choices`].
    const TEMP: usize = 0;
    const OFFSET_TEMP: usize = 1;
    const SAVE_SCC: usize = 2;
    const SAVE_VCC: usize = 3;
    const SAVE_M0: usize = 4;
    const SAVE_EXEC: usize = 5;
    const LANES: usize = 6;

    /// Its registers, in order of purpose.
    fn purposes(&self) -> [Option<u16>; 7] {
        [
            self.temp,
            self.offset_temp,
            self.save_scc,
            self.save_vcc,
            self.save_m0,
            self.save_exec,
            self.lanes,
        ]
    }

    /// Its registers as words (a part of a copy's key).
    fn key(&self, key: &mut Vec<u64>) {
        let none = u64::MAX;
        for r in self.purposes() {
            key.push(r.map_or(none, u64::from));
        }
        key.push(self.borrowed.len() as u64);
        key.extend(self.borrowed.iter().map(|&b| u64::from(b)));
    }
}

/// One inlined hook: its code, and the highest registers it names.
pub(super) struct Inlined {
    pub(super) code: Snippet,
    pub(super) max_sgpr: u16,
    pub(super) max_vgpr: u16,
    /// Which of the rewrite's distinct copies it is (numbered from 0 in
    /// order of first use).
    pub(super) copy: usize,
}

impl<'a> Ctx<'a> {
    /// How to make call `r`: as its placement says, and for
    /// [`Placement::Auto`], inlined when that is possible and gives no more
    /// instructions than the call sequence and the hook's code together
    /// (the dynamic cost follows: both run the same body, the inlined copy
    /// without the call's fixed part).
    pub(super) fn place_one<'r>(
        &self,
        r: &'r Request<'a>,
        k: usize,
        bodies: &mut Bodies,
    ) -> Result<Placing<'r, 'a>, RewriteError> {
        let mode = r.call.placement;
        if mode == Placement::Call {
            return Ok(Placing::Call(self.plan(r)?));
        }
        // (The call runs the hook's whole code: compared with that.)
        let inlined = bodies.get(r.hook).and_then(|whole| {
            let b = bodies.simplified_for(k)?;
            self.inline(r, &b, bodies).map(|i| (whole, i))
        });
        match (mode, inlined) {
            (Placement::Inline, Ok((_, i))) => Ok(Placing::Inline(i)),
            (_, Err(why)) if mode == Placement::Inline => {
                Err(self.fail(r, format!("it cannot be inlined: {why}")))
            }
            (_, Err(_)) => Ok(Placing::Call(self.plan(r)?)),
            (_, Ok((body, i))) => match self.plan(r) {
                Ok(p) => {
                    // (A copy no longer than the hook's code and the least
                    // the call sequence has is no longer than the call:
                    // its code is not built to compare.)
                    let inline = i.code.insts.len();
                    let shorter = inline <= body.len() + p.min_len()
                        || inline <= self.code(&p, 0)?.insts.len() + body.len();
                    Ok(if shorter {
                        Placing::Inline(i)
                    } else {
                        Placing::Call(p)
                    })
                }
                // No registers to call it with: inlined it is.
                Err(_) => Ok(Placing::Inline(i)),
            },
        }
    }

    /// The code of `r`'s hook inlined at its point, or why it cannot be:
    /// `body` placed on registers free there, and the sequence around it.
    /// The code is a function of the call (its hook, its arguments up to
    /// literal constants, which a template patches per copy), the body,
    /// and the registers chosen: points that choose the same share one
    /// copy, built once (`bodies`).
    pub(super) fn inline(
        &self,
        r: &Request<'a>,
        body: &Arc<Body>,
        bodies: &mut Bodies,
    ) -> Result<Arc<Inlined>, String> {
        let an = self.an;
        let args = &r.call.args;
        if args.iter().any(|a| matches!(a, Arg::Reference(_))) {
            return Err("a register passed by reference needs the call's memory slot".into());
        }
        let inst = an.program.insts[r.inst].inst;
        let live = an.live_any_before(r.live_at);
        // Free: dead, not held for the kernel, not read by an argument.
        let mut sources = RegSet::new();
        for a in args {
            super::call::add_arg_sources(a, &inst, &mut sources);
        }
        let mut busy = live.union(&self.taken).union(&sources);
        if self.borrow_all {
            busy.insert_range(0, bits::NUM_SGPRS);
        }
        let mut borrow = RegSet::new();
        borrow.insert_range(0, bits::NUM_SGPRS);
        if !self.borrow_all {
            borrow = borrow.intersection(&live);
        }
        borrow.subtract(&self.taken.union(&sources));
        let mut set = RegSet::new();
        set.insert_range(0, bits::NUM_SGPRS);
        set.insert_range(bits::VGPR_BASE, self.vgpr_limit);
        set.insert_range(
            bits::AGPR_BASE,
            an.resources.agprs_allocated.min(256) as u16,
        );
        set.subtract(&busy);
        // Everything the code is built from but the kernel-wide context and
        // the registers: what an earlier copy of it took is preferred.
        let mut key = std::mem::take(&mut bodies.key);
        self.call_key(r, &mut key);
        key.push(r.call.module as u64);
        key.push(Arc::as_ptr(body) as u64);
        let prefix = key.len();
        // The registers the latest placing of the same took are taken
        // again where they are free: points then share its copy.
        let (to, seq) = {
            let latest = bodies
                .hints
                .get(key.as_slice())
                .map_or(&[][..], |c| c.as_slice());
            self.choose_registers(r, body, &inst, &live, [set, borrow], latest)
                // (A hint may leave too few aligned registers: then none.)
                .or_else(|_| self.choose_registers(r, body, &inst, &live, [set, borrow], &[]))?
        };
        let choices = choices(&to, &seq);
        match bodies.hints.get_mut(&key[..prefix]) {
            // (A purpose this placing had no need of, saving VCC where it
            // is dead say, keeps the register taken for it last.)
            Some(h) if h.len() == choices.len() => {
                for (hint, &c) in h.iter_mut().zip(&choices) {
                    if c != NONE {
                        *hint = c;
                    }
                }
            }
            Some(h) => *h = choices,
            None => {
                bodies.hints.insert(key[..prefix].into(), choices);
            }
        }
        let map = Renaming {
            runs: &body.runs,
            to,
        };
        key.extend(map.to.iter().map(|&t| u64::from(t)));
        seq.key(&mut key);
        if let Some(c) = bodies.copies.get(key.as_slice()) {
            let c = c.clone();
            bodies.key = key;
            return Ok(c);
        }
        let copy = bodies.copies.len();
        let inlined = self
            .inline_code(r, body, &map, &inst, &seq, copy)
            .map(Arc::new)
            .map_err(|e| e.to_string());
        // (Errors name the point: not shared.)
        if let Ok(i) = &inlined {
            bodies.copies.insert(key.as_slice().into(), i.clone());
        }
        bodies.key = key;
        inlined
    }

    /// Registers for `body` at `r`'s point (`set` free there, `borrow`
    /// live SGPRs it may borrow), preferring `hints` ([`Choices`]): where
    /// each run of the body goes, and the sequence's registers.
    #[allow(clippy::too_many_arguments)]
    fn choose_registers(
        &self,
        r: &Request<'a>,
        body: &Body,
        inst: &Instruction,
        live: &RegSet,
        [set, borrow]: [RegSet; 2],
        hints: &[u16],
    ) -> Result<(Vec<u16>, Sequence), String> {
        let args = &r.call.args;
        let mut free = Free {
            set,
            above: self.vgpr_limit,
            ceiling: self.vgpr_ceiling,
            borrow,
            borrowed: Vec::new(),
            loaded: self.loaded,
            sgprs_often_dead: self
                .sgprs_often_dead
                .get_or_init(|| super::call::sgprs_by_deadness(self.an)),
            hints,
        };
        // Widest alignment first, then longest, so runs pack.
        let mut order: Vec<usize> = (0..body.runs.len()).collect();
        order.sort_by_key(|&k| {
            (
                std::cmp::Reverse(body.runs[k].align),
                std::cmp::Reverse(body.runs[k].count),
            )
        });
        // A register the hook only reads, whose value the point already
        // has in a register (an argument's VGPR, a home), is renamed onto
        // that register: no move.
        let hi = &r.hook.inputs;
        let at = arg_vgprs(args);
        let read_only = |run: &Run| {
            let b = if run.file == RegFile::Sgpr {
                0
            } else {
                bits::VGPR_BASE
            };
            !body.written.any_in(b + run.first, run.count)
        };
        let sgpr_home = |h: Option<Home>| match h {
            Some(Home::Sgpr(x)) => Some(x),
            _ => None,
        };
        // A pair only a module value kept in a home is put into is that
        // home, unless the body reads it first (an ABI input, say: set
        // there, it would overwrite the home).
        let module_pair = |n: u16| -> Option<u16> {
            let &(_, (d, loaded)) = body
                .module_pairs
                .iter()
                .find(|&&(p, _)| p == n && !body.live_in.any_in(p, 2))?;
            sgpr_pair(self.module_home(r, body, d, loaded)?)
        };
        // A pair set only to a constant a home keeps is that home.
        let constant_pair = |n: u16| -> Option<u16> {
            let &(_, c) = body
                .constant_pairs
                .iter()
                .find(|&&(p, _)| p == n && !body.live_in.any_in(p, 2))?;
            self.constant_home(c)
        };
        let same_place = |run: &Run| -> Option<u16> {
            if let (RegFile::Sgpr, 2) = (run.file, run.count) {
                if let Some(h) = module_pair(run.first).or_else(|| constant_pair(run.first)) {
                    return Some(h);
                }
            }
            if !read_only(run) {
                return None;
            }
            match (run.file, run.first, run.count) {
                (RegFile::Vgpr, 31, 1) if hi.workitem_id => self.homes.workitem,
                (RegFile::Sgpr, n @ 12..=14, 1) if hi.workgroup_id[usize::from(n - 12)] => {
                    sgpr_home(self.homes.workgroup_id[usize::from(n - 12)])
                }
                (RegFile::Vgpr, v, 1) => args.iter().zip(&at).find_map(|(a, &first)| match a {
                    Arg::Value(reg) if reg.file == RegFile::Vgpr => {
                        let j = v.checked_sub(first).filter(|&j| j < u16::from(reg.count))?;
                        Some(reg.first + j)
                    }
                    _ => None,
                }),
                _ => None,
            }
        };
        let mut to = vec![0u16; body.runs.len()];
        let mut placed = vec![false; body.runs.len()];
        for (k, run) in body.runs.iter().enumerate() {
            if let Some(x) = same_place(run) {
                to[k] = x;
                placed[k] = true;
                if run.file == RegFile::Sgpr {
                    free.borrow.remove_range(x, run.count);
                }
            }
        }
        for k in order.into_iter().filter(|&k| !placed[k]) {
            let run = body.runs[k];
            to[k] = free
                .take(run.file, run.first, run.count, run.align, k)
                .ok_or_else(|| {
                    format!(
                        "too few {} are dead at the point for the hook's {} (run of {} from {})",
                        match run.file {
                            RegFile::Sgpr => "SGPRs",
                            RegFile::Vgpr => "VGPRs",
                            _ => "AGPRs",
                        },
                        run.count,
                        run.count,
                        run.first
                    )
                })?;
        }
        // A once-per-wave hook's body that names nothing of the vector
        // unit needs no lane set: EXEC is left alone.
        let once = r.call.once_per_wave && body.vector;
        let needs_temp = once
            || args.iter().any(|a| {
                matches!(a, Arg::Address | Arg::Launch(_))
                    || matches!(a, Arg::Value(reg) if reg.file == RegFile::Scc)
            });
        let no_sgprs =
            || "too few SGPRs are dead at the point for the inlined sequence".to_string();
        // (Purposes of the sequence's registers, after the runs.)
        let p = body.runs.len();
        let sgpr_pair = |free: &mut Free, purpose: usize| {
            free.take(RegFile::Sgpr, 0, 2, 2, p + purpose)
                .ok_or_else(no_sgprs)
        };
        let temp = if needs_temp {
            Some(sgpr_pair(&mut free, Sequence::TEMP)?)
        } else {
            None
        };
        let offset_temp = match args.contains(&Arg::Address).then(|| address_operands(inst)) {
            Some(Some((_, _, o))) if Asm::inline_int(o).is_none() => Some(
                free.take(RegFile::Sgpr, 0, 1, 1, p + Sequence::OFFSET_TEMP)
                    .ok_or_else(no_sgprs)?,
            ),
            _ => None,
        };
        let launch_scc = args
            .iter()
            .any(|a| matches!(a, Arg::Launch(LaunchValue::WorkgroupSize(_))));
        // A module value no home keeps is found with s_getpc_b64 and adds.
        let got_scc = body.insts.iter().any(|&(_, _, k)| match k {
            Kind::Getpc(d) => self.module_home(r, body, d, false).is_none(),
            Kind::Got(d) => self.module_home(r, body, d, true).is_none(),
            _ => false,
        });
        let writes_scc = body.writes_scc || got_scc || once || launch_scc;
        let scc_arg = args
            .iter()
            .any(|a| matches!(a, Arg::Value(reg) if reg.file == RegFile::Scc));
        let save_scc = (writes_scc && (live.contains(bits::SCC) || scc_arg))
            .then(|| {
                free.take(RegFile::Sgpr, 0, 1, 1, p + Sequence::SAVE_SCC)
                    .ok_or_else(no_sgprs)
            })
            .transpose()?;
        let save_vcc = (body.writes_vcc && live.any_in(bits::VCC, 2))
            .then(|| sgpr_pair(&mut free, Sequence::SAVE_VCC))
            .transpose()?;
        let save_m0 = (body.writes_m0 && live.contains(bits::M0))
            .then(|| {
                free.take(RegFile::Sgpr, 0, 1, 1, p + Sequence::SAVE_M0)
                    .ok_or_else(no_sgprs)
            })
            .transpose()?;
        let save_exec = once
            .then(|| sgpr_pair(&mut free, Sequence::SAVE_EXEC))
            .transpose()?;
        // Borrowed SGPRs go to lanes of a VGPR dead in every lane.
        let lanes = if free.borrowed.is_empty() {
            None
        } else {
            Some(free.take(RegFile::Vgpr, 0, 1, 1, p + Sequence::LANES).ok_or(
                "too few SGPRs are dead at the point and no VGPR is free to borrow some through",
            )?)
        };
        let seq = Sequence {
            temp,
            offset_temp,
            save_scc,
            save_vcc,
            save_m0,
            save_exec,
            borrowed: std::mem::take(&mut free.borrowed),
            lanes,
        };
        Ok((to, seq))
    }

    /// The homes keeping the address `distance` bytes from `r`'s hook
    /// (`loaded`: the table entry there), if the kernel keeps it.
    fn module_home(
        &self,
        r: &Request<'a>,
        body: &Body,
        distance: i64,
        loaded: bool,
    ) -> Option<[Home; 2]> {
        let address = body.entry.wrapping_add(distance as u64);
        self.homes
            .module_values
            .iter()
            .find(|(g, _)| g.module == r.call.module && g.address == address && g.loaded == loaded)
            .map(|&(_, h)| h)
    }

    /// The SGPR pair keeping the constant `c`, if the kernel keeps it.
    fn constant_home(&self, c: u64) -> Option<u16> {
        self.homes
            .constants
            .iter()
            .find(|&&(x, _)| x == c)
            .map(|&(_, h)| h)
    }

    /// `v[p]` = a home's value (through `s[t]` when it is a lane).
    fn home_into_vgpr(
        &self,
        p: u16,
        h: Home,
        temp: Option<u16>,
    ) -> Result<Vec<Instruction>, RewriteError> {
        Ok(match h {
            Home::Sgpr(x) => vec![self.asm.vmov(p, Asm::sgpr(x, 1))?],
            Home::Lane(..) => {
                let t = temp.ok_or(RewriteError::Build(
                    "an inlined hook",
                    inlay_isa::BuildError::Unknown("no temporary SGPR".into()),
                ))?;
                vec![self.read_home(t, h)?, self.asm.vmov(p, Asm::sgpr(t, 1))?]
            }
        })
    }

    fn inline_code(
        &self,
        r: &Request<'a>,
        body: &Body,
        map: &Renaming<'_>,
        inst: &Instruction,
        seq: &Sequence,
        copy: usize,
    ) -> Result<Inlined, RewriteError> {
        let Sequence {
            temp,
            offset_temp,
            save_scc,
            save_vcc,
            save_m0,
            save_exec,
            ..
        } = *seq;
        let asm = self.asm;
        let b = |e: Encoding, m: &'static str, ops: &[Operand]| asm.build(e, m, ops);
        let s1 = |n: u16| Asm::sgpr(n, 1);
        let v1 = |n: u16| Operand::Vgpr { first: n, count: 1 };
        let zero = Asm::konst(0);
        let vcc = Operand::Special {
            code: bits::VCC as u8,
            count: 2,
        };
        let m0 = Operand::Special {
            code: bits::M0 as u8,
            count: 1,
        };
        let unplaced = |what: &str| {
            RewriteError::Build(
                "an inlined hook",
                inlay_isa::BuildError::Unknown(format!("no register for {what}")),
            )
        };
        let mut s = Snippet::default();
        // 1. Wait, borrowed SGPRs into lanes, saves.
        s.push(b(Encoding::Sopp, "s_waitcnt", &[Operand::Imm(0)])?);
        if let Some(v) = seq.lanes {
            for (lane, &x) in seq.borrowed.iter().enumerate() {
                s.push(asm.writelane(v, Asm::sgpr(x, 1), lane as u8)?);
            }
        }
        if let Some(t) = save_scc {
            s.push(b(
                Encoding::Sop2,
                "s_cselect_b32",
                &[s1(t), Asm::konst(1), zero],
            )?);
        }
        if let Some(t) = save_vcc {
            s.push(b(Encoding::Sop1, "s_mov_b64", &[Asm::sgpr(t, 2), vcc])?);
        }
        if let Some(t) = save_m0 {
            s.push(b(Encoding::Sop1, "s_mov_b32", &[s1(t), m0])?);
        }
        if let Some(t) = save_exec {
            s.push(b(Encoding::Sop1, "s_mov_b64", &[Asm::sgpr(t, 2), EXEC])?);
        }
        // EXEC as the hook runs, and its arguments are computed: one lane
        // (the lowest on, lane 0 if none) for a once-per-wave hook.
        if let (Some(t), Some(_)) = (temp, save_exec) {
            s.push(b(Encoding::Sop1, "s_ff1_i32_b64", &[s1(t), EXEC])?);
            s.push(b(Encoding::Sop2, "s_max_i32", &[s1(t), s1(t), zero])?);
            s.push(b(
                Encoding::Sop2,
                "s_lshl_b64",
                &[EXEC, Asm::konst(1), s1(t)],
            )?);
        }
        // 2. Arguments, into the registers the hook reads them from (EXEC
        // and SCC from their saves once changed).
        let args = &r.call.args;
        let at = arg_vgprs(args);
        // SCC first: computing launch values writes it.
        let scc = |a: &Arg| matches!(a, Arg::Value(reg) if reg.file == RegFile::Scc);
        let order = (0..args.len())
            .filter(|&k| scc(&args[k]))
            .chain((0..args.len()).filter(|&k| !scc(&args[k])));
        for k in order {
            let a = &args[k];
            // Only the dwords the body reads (an address whole if any).
            let read = |j: u16| body.live_in.contains(bits::VGPR_BASE + at[k] + j);
            let any_read = (0..a.dwords() as u16).any(read);
            let d = |j: u16| {
                map.vgpr(at[k] + j)
                    .filter(|_| read(j) || *a == Arg::Address && any_read)
            };
            match a {
                Arg::Const32(_) | Arg::Const64(_) => {
                    for j in 0..a.dwords() as u8 {
                        let Some(p) = d(u16::from(j)) else { continue };
                        match super::call::constant_operand(&self.varying, r, k, j) {
                            // (Patched per copy: the code holds 0.)
                            None => s.push_constant(asm.vmov(p, Operand::Literal(0))?, k, j),
                            Some(op) => s.push(asm.vmov(p, op)?),
                        }
                    }
                }
                Arg::Value(reg) => match reg.file {
                    RegFile::Vgpr | RegFile::Agpr => {
                        for j in 0..u16::from(reg.count) {
                            let Some(p) = d(j) else { continue };
                            if reg.file == RegFile::Vgpr && p == reg.first + j {
                                continue; // renamed onto it
                            }
                            s.push(if reg.file == RegFile::Vgpr {
                                asm.vmov(p, v1(reg.first + j))?
                            } else {
                                b(
                                    Encoding::Vop3p,
                                    "v_accvgpr_read_b32",
                                    &[
                                        v1(p),
                                        Operand::Agpr {
                                            first: reg.first + j,
                                            count: 1,
                                        },
                                    ],
                                )?
                            });
                        }
                    }
                    RegFile::Scc => {
                        if let (Some(p), Some(t)) = (d(0), save_scc) {
                            s.push(asm.vmov(p, s1(t))?);
                        } else if let Some(p) = d(0) {
                            let t = temp.ok_or_else(|| unplaced("SCC"))?;
                            s.push(b(
                                Encoding::Sop2,
                                "s_cselect_b32",
                                &[s1(t), Asm::konst(1), zero],
                            )?);
                            s.push(asm.vmov(p, s1(t))?);
                        }
                    }
                    _ => {
                        for (j, bit) in reg_bits(reg).into_iter().enumerate() {
                            let src = match save_exec {
                                Some(e) if (bits::EXEC..bits::EXEC + 2).contains(&bit) => {
                                    s1(e + bit - bits::EXEC)
                                }
                                _ => scalar_operand(bit),
                            };
                            if let Some(p) = d(j as u16) {
                                s.push(asm.vmov(p, src)?);
                            }
                        }
                    }
                },
                Arg::Reference(_) => return Err(unplaced("a register by reference")),
                Arg::Address => {
                    let (Some(p), Some(p1)) = (d(0), d(1)) else {
                        if d(0).is_some() || d(1).is_some() {
                            return Err(unplaced("half an address"));
                        }
                        continue;
                    };
                    let (vaddr, saddr, offset) =
                        address_operands(inst).ok_or_else(|| unplaced("an address"))?;
                    let t = temp.ok_or_else(|| unplaced("an address"))?;
                    let carry = Asm::sgpr(t, 2);
                    let offset_op = |s: &mut Snippet| -> Result<Operand, RewriteError> {
                        Ok(match Asm::inline_int(offset) {
                            Some(o) => o,
                            None => {
                                let u = offset_temp.ok_or_else(|| unplaced("an offset"))?;
                                s.push(asm.mov_lit(u, offset as u32)?);
                                s1(u)
                            }
                        })
                    };
                    if p1 == p + 1 && p % 2 == 0 {
                        // An aligned pair: 64-bit multiply-adds by 1.
                        let pair = Operand::Vgpr { first: p, count: 2 };
                        match saddr {
                            Some(sb) => s.push(b(
                                Encoding::Vop3,
                                "v_mad_u64_u32",
                                &[
                                    pair,
                                    carry,
                                    v1(vaddr),
                                    Asm::konst(1),
                                    super::asm::scalar_pair(sb),
                                ],
                            )?),
                            None => {
                                s.push(asm.vmov(p, v1(vaddr))?);
                                s.push(asm.vmov(p1, v1(vaddr + 1))?);
                            }
                        }
                        if offset != 0 {
                            let o = offset_op(&mut s)?;
                            s.push(b(
                                Encoding::Vop3,
                                "v_mad_i64_i32",
                                &[pair, carry, o, Asm::konst(1), pair],
                            )?);
                        }
                        continue;
                    }
                    // Apart: 32-bit adds with the carry in s[t:t+1].
                    let add =
                        |s: &mut Snippet, lo: Operand, hi: Operand| -> Result<(), RewriteError> {
                            s.push(b(
                                Encoding::Vop3,
                                "v_add_co_u32_e64",
                                &[v1(p), carry, lo, v1(p)],
                            )?);
                            s.push(b(
                                Encoding::Vop3,
                                "v_addc_co_u32_e64",
                                &[v1(p1), carry, hi, v1(p1), carry],
                            )?);
                            Ok(())
                        };
                    match saddr {
                        Some(sb) => {
                            s.push(asm.vmov(p, v1(vaddr))?);
                            s.push(b(
                                Encoding::Vop3,
                                "v_add_co_u32_e64",
                                &[v1(p), carry, s1(sb), v1(p)],
                            )?);
                            s.push(asm.vmov(p1, s1(sb + 1))?);
                            s.push(b(
                                Encoding::Vop3,
                                "v_addc_co_u32_e64",
                                &[v1(p1), carry, Asm::konst(0), v1(p1), carry],
                            )?);
                        }
                        None => {
                            s.push(asm.vmov(p, v1(vaddr))?);
                            s.push(asm.vmov(p1, v1(vaddr + 1))?);
                        }
                    }
                    if offset != 0 {
                        let o = offset_op(&mut s)?;
                        let sign = Asm::inline_int(offset >> 31).unwrap_or(Asm::konst(0));
                        add(&mut s, o, sign)?;
                    }
                }
                Arg::Launch(v @ (LaunchValue::KernargPtr | LaunchValue::DispatchPtr)) => {
                    let h = if *v == LaunchValue::KernargPtr {
                        self.homes.kernarg
                    } else {
                        self.homes.dispatch
                    }
                    .ok_or_else(|| unplaced("a launch pointer (not kept)"))?;
                    for j in 0..2u16 {
                        if let Some(p) = d(j) {
                            s.extend(self.home_into_vgpr(p, h[usize::from(j)], temp)?);
                        }
                    }
                }
                Arg::Launch(LaunchValue::WorkgroupId(dim)) => {
                    if let Some(p) = d(0) {
                        let h = self.homes.workgroup_id[usize::from(*dim)]
                            .ok_or_else(|| unplaced("a workgroup id (not kept)"))?;
                        s.extend(self.home_into_vgpr(p, h, temp)?);
                    }
                }
                Arg::Launch(v) => {
                    let Some(p) = d(0) else { continue };
                    let t = temp.ok_or_else(|| unplaced("a launch value"))?;
                    self.launch_value(r, &mut s, *v, p, t)?;
                }
            }
        }
        // 3. ABI inputs the hook reads.
        let hi = &r.hook.inputs;
        let homes = self.homes;
        let missing = |what: &str| {
            RewriteError::Build(
                "an inlined hook",
                inlay_isa::BuildError::Unknown(format!("no {what} kept")),
            )
        };
        let reads = |bit: u16| body.live_in.contains(bit);
        if hi.workitem_id && reads(bits::VGPR_BASE + 31) {
            if let Some(p) = map.vgpr(31) {
                let w = homes.workitem.ok_or_else(|| missing("work-item ids"))?;
                if p != w {
                    s.push(asm.vmov(p, v1(w))?);
                }
            }
        }
        for (on, home, at) in [
            (hi.dispatch_ptr, homes.dispatch, 4u16),
            (hi.queue_ptr, homes.queue, 6),
            (hi.dispatch_id, homes.dispatch_id, 10),
        ] {
            if !on {
                continue;
            }
            let h = home.ok_or_else(|| missing("launch pointer"))?;
            // (The pair is the hook's: renamed whole, aligned.)
            for j in (0..2).filter(|&j| reads(at + j)) {
                if let Some(p) = map.sgpr(at + j) {
                    s.push(self.read_home(p, h[usize::from(j)])?);
                }
            }
        }
        if hi.implicitarg_ptr {
            let (p, p1) = (map.sgpr(8), map.sgpr(9));
            if let (Some(p), Some(p1)) = (p, p1) {
                if p1 != p + 1 || p % 2 != 0 {
                    return Err(unplaced("the implicit-argument pointer (split)"));
                }
                let h = homes
                    .implicit
                    .ok_or_else(|| missing("implicit-argument pointer"))?;
                self.read_home_pair(&mut s, p, h)?;
            } else if p.is_some() || p1.is_some() {
                return Err(unplaced("the implicit-argument pointer (half)"));
            }
        }
        for d in 0..3u16 {
            if hi.workgroup_id[usize::from(d)] && reads(12 + d) {
                if let Some(p) = map.sgpr(12 + d) {
                    let h = homes.workgroup_id[usize::from(d)]
                        .ok_or_else(|| missing("workgroup id"))?;
                    if h != Home::Sgpr(p) {
                        s.push(self.read_home(p, h)?);
                    }
                }
            }
        }
        // 4. A per-lane hook's code is skipped when no lane is on.
        let skip = if r.call.once_per_wave {
            None
        } else {
            Some(s.branch(b(Encoding::Sopp, "s_cbranch_execz", &[Operand::Imm(0)])?))
        };
        // 5. The body.
        let symbol: Arc<str> = r.call.hook.clone();
        // (Operands decoded only for the one mnemonic: this runs for every
        // instruction of every copy.)
        let is_home_move = |i: &Instruction| {
            i.mnemonic() == "s_mov_b64"
                && match (i.operand(0), i.operand(1)) {
                    (Some(Operand::Sgpr { first, count: 2 }), Some(Operand::Inline(c))) => {
                        super::simplify::inline_int(c)
                            .is_some_and(|v| self.constant_home(i64::from(v) as u64) == Some(first))
                    }
                    _ => false,
                }
        };
        // (A branch may land at the end, `label[len]`.)
        let mut label = vec![0usize; body.insts.len() + 1];
        let mut branches: Vec<(usize, usize)> = Vec::new();
        let mut to_end: Vec<usize> = Vec::new();
        let last = body.insts.len().saturating_sub(1);
        // A table entry loaded here (no home keeps it).
        let mut loads_got = false;
        // A wait of the body before any memory instruction of it waits for
        // nothing it reads (what the application's loads may still write
        // is waited for at the entry, or not named): dropped, unless a
        // branch back may bring it after one.
        let back = body
            .insts
            .iter()
            .enumerate()
            .any(|(k, &(_, _, kind))| matches!(kind, Kind::Branch(t) if t <= k));
        let mut memory_seen = back;
        let waits_for = &body.waits_for;
        for (k, &(addr, orig, kind)) in body.insts.iter().enumerate() {
            label[k] = s.insts.len();
            if kind == Kind::EntryWait {
                continue;
            }
            // (A table entry loaded by the previous instruction counts.)
            memory_seen |= loads_got;
            if orig.mnemonic() == "s_waitcnt" && (!memory_seen || !back && !waits_for[k]) {
                continue;
            }
            memory_seen |= is_memory(&orig);
            if kind == Kind::Return {
                if k != last {
                    to_end.push(s.branch(b(Encoding::Sopp, "s_branch", &[Operand::Imm(0)])?));
                }
                continue;
            }
            let mut i = orig;
            for &(slot, encoded, run) in &body.operands[k] {
                let (run, at) = run.ok_or_else(|| unplaced("a register"))?;
                let to = map.to[usize::from(run)] + at;
                if !encoded.is_some_and(|e| i.set_register_at(e, to)) {
                    return Err(RewriteError::Build(
                        "an inlined hook",
                        inlay_isa::BuildError::Unknown(format!(
                            "cannot rename operand {slot} of the instruction at {addr:#x}"
                        )),
                    ));
                }
            }
            match kind {
                Kind::Getpc(dist) | Kind::Got(dist) => {
                    let Some(Operand::Sgpr { first: d, .. }) = i.operand(0) else {
                        return Err(unplaced("s_getpc_b64's pair"));
                    };
                    let loaded = matches!(kind, Kind::Got(_));
                    match self.module_home(r, body, dist, loaded) {
                        // Renamed onto it.
                        Some(h) if sgpr_pair(h) == Some(d) => {}
                        Some(h) => self.read_home_pair(&mut s, d, h)?,
                        // The address in the loaded module (the hook's
                        // symbol plus the distance), and the entry there.
                        None => {
                            s.pc_relative_at(asm, d, symbol.clone(), dist)?;
                            if loaded {
                                loads_got = true;
                                s.push(b(
                                    Encoding::Smem,
                                    "s_load_dwordx2",
                                    &[Asm::sgpr(d, 2), Asm::sgpr(d, 2), Operand::Imm(0)],
                                )?);
                            }
                        }
                    }
                }
                Kind::Branch(t) => branches.push((s.branch(i), t)),
                // The move of a constant into its home, renamed onto it:
                // the home holds it already.
                Kind::Plain if is_home_move(&i) => {}
                _ => s.push(i),
            }
        }
        let end = s.insts.len();
        label[body.insts.len()] = end;
        for (at, t) in branches {
            s.aim(at, label[t]);
        }
        for at in to_end {
            s.aim(at, end);
        }
        if let Some(j) = skip {
            s.aim(j, end);
        }
        // 6. Loads land; EXEC, M0, VCC, SCC back.
        if body.loads || loads_got {
            s.push(b(Encoding::Sopp, "s_waitcnt", &[Operand::Imm(0)])?);
        }
        if let Some(t) = save_exec {
            s.push(b(Encoding::Sop1, "s_mov_b64", &[EXEC, Asm::sgpr(t, 2)])?);
        }
        if let Some(t) = save_m0 {
            s.push(b(Encoding::Sop1, "s_mov_b32", &[m0, s1(t)])?);
        }
        if let Some(t) = save_vcc {
            s.push(b(Encoding::Sop1, "s_mov_b64", &[vcc, Asm::sgpr(t, 2)])?);
        }
        if let Some(t) = save_scc {
            s.push(b(Encoding::Sopc, "s_cmp_lg_u32", &[s1(t), zero])?);
        }
        // Last, as SCC's slot may be one of them.
        if let Some(v) = seq.lanes {
            for (lane, &x) in seq.borrowed.iter().enumerate() {
                s.push(asm.readlane(Asm::sgpr(x, 1), v, lane as u8)?);
            }
        }
        // The highest registers named, and whether the code names one an
        // outstanding load of the kernel may still write (the entry wait
        // matters only then).
        let (mut max_sgpr, mut max_vgpr) = (0u16, 0u16);
        let mut names_loaded = false;
        let mut named = self.named.borrow_mut();
        for i in &s.insts[1..] {
            let n = named.of(i, &self.loaded);
            max_sgpr = max_sgpr.max(n.max_sgpr);
            max_vgpr = max_vgpr.max(n.max_vgpr);
            names_loaded |= n.loaded;
        }
        drop(named);
        if !names_loaded {
            s.remove_first();
        }
        s.resolve_cached(
            &mut self.facts.borrow_mut(),
            &mut self.fact_ids.borrow_mut(),
        )?;
        Ok(Inlined {
            code: s,
            max_sgpr,
            max_vgpr,
            copy,
        })
    }
}
