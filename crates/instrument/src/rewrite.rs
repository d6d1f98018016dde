//! Rewriting a lifted kernel with hooks: hook code inserted before chosen
//! instructions, the kernel and the device functions it calls laid out anew
//! in one block of code, branches re-aimed, PC-relative computations kept
//! pointing where they pointed, and the kernel descriptor grown for the
//! registers the hooks use.
//!
//! # Where the new code points
//! The rewritten code runs from an address known only once it is loaded,
//! while everything it computes from its own PC must keep its meaning. So:
//! - `s_getpc_b64` that starts a call (`s_getpc_b64`, `s_add_u32`,
//!   `s_addc_u32`, then `s_swappc_b64`/`s_setpc_b64` of that pair) to a
//!   function in the new code stays a `s_getpc_b64`, and the two literals are
//!   recomputed for the callee's new place: calls reach the rewritten callee.
//! - Any other `s_getpc_b64` becomes two `s_mov_b32` of the address the
//!   original instruction would have produced (the original code object is
//!   loaded at a known place), so data references reach the original code
//!   object's variables, which the rewritten kernel therefore shares.
//! - Branches are re-aimed at the new place of their target, or rather at
//!   the hook code before it, so a hook before a branch target runs on every
//!   path that reaches it.
//!
//! # Registers
//! Hooks count with scalar memory atomics (`s_atomic_add_x2`), which need no
//! VGPR and leave EXEC, VCC and SCC alone: a pair holding the counters' base
//! address and a pair holding (1, 0). When the kernel and its callees leave
//! SGPRs unused above the highest one they name (and, if they make calls this
//! code cannot see into, above s33, the callee-saved range), those are
//! reserved for the whole kernel and set once per wave — by the one hooked
//! block no other hooked block dominates, when it runs at most once, else by
//! a preamble before the kernel's first instruction; the kernel's initial
//! registers stay where it expects them. Otherwise each hook takes SGPRs dead
//! at its point (from liveness) and sets them itself, borrowing SGPRs through
//! the lanes of a dead (or one extra) VGPR when too few are dead. Counting
//! active lanes needs `s_bcnt1_i32_b64`, which writes SCC: SCC is saved and
//! restored around it when it is live.
//!
//! A branch that cannot reach its target once hooks are in becomes a long
//! jump (`s_getpc_b64`, `s_add_u32`, `s_addc_u32`, `s_setpc_b64`, SCC saved
//! and put back before the jump; the inverse condition skips it).

use std::collections::BTreeMap;

use inlay_codeobj::KernelDescriptor;
use inlay_isa::tables::{ImmKind, Slot};
use inlay_isa::{encode, Builder, Encoding, Instruction, Operand, Target};

use crate::lift::{Callee, InstId};
use crate::Analysis;

/// Code a hook runs, chosen from the engine's built-in set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Adds 1 to the u64 counter at byte `offset` of the counter buffer,
    /// once per wave that gets there.
    Count { offset: u32 },
    /// Adds the number of lanes EXEC enables there to the u64 at `offset`.
    CountLanes { offset: u32 },
    /// Adds a value to the u64 at `offset`, once per wave that gets there.
    Add { offset: u32, value: Value },
}

impl Hook {
    /// Byte offset of the counter it updates.
    pub fn offset(&self) -> u32 {
        match *self {
            Hook::Count { offset } | Hook::CountLanes { offset } | Hook::Add { offset, .. } => {
                offset
            }
        }
    }
}

/// A hook argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// A constant.
    Const(u32),
    /// The value SGPR `n` holds before the instruction (zero-extended).
    Sgpr(u16),
}

/// What to insert: hooks before instructions, counting into a buffer.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Device address of the counter buffer (8-byte aligned).
    pub counters: u64,
    /// Hooks before instructions (several per instruction run in order).
    pub hooks: Vec<(InstId, Hook)>,
    /// Take only registers dead at each hook, never SGPRs reserved for
    /// the whole kernel (which may grow its SGPR allocation).
    pub dead_registers_only: bool,
    /// Emit every branch in the long form used when a target is out of
    /// reach (to exercise that form; it is slower).
    pub all_branches_long: bool,
}

/// The rewritten kernel.
#[derive(Debug, Clone)]
pub struct Rewritten {
    /// Its code: the kernel's entry first, then the device functions.
    pub code: Vec<u8>,
    /// The original descriptor with SGPRs grown; its entry offset is left
    /// for whoever places the code (the code-object writer sets it).
    pub descriptor: KernelDescriptor,
    /// Instructions added in total (static count), by hooks alone, and by
    /// the preamble each wave runs once.
    pub added: usize,
    pub added_by_hooks: usize,
    pub preamble: usize,
    /// New offset of each original instruction of the program (index = InstId).
    pub new_offset: Vec<u64>,
    /// Calls left pointing at the original code: (call instruction, why).
    pub calls_to_original: Vec<(InstId, &'static str)>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RewriteError {
    #[error("counter offset {0:#x} does not fit a scalar memory offset (20 bits)")]
    CounterOffset(u32),
    #[error("no registers for hook code before the instruction at {addr:#x}: too few SGPRs are dead there and no VGPR can hold them (spilling to memory is not implemented)")]
    NoRegisters { addr: u64 },
    #[error(
        "branch at {addr:#x} cannot reach its target after rewriting (more than 128 KiB away)"
    )]
    BranchRange { addr: u64 },
    #[error("cannot build {0}: {1}")]
    Build(&'static str, inlay_isa::BuildError),
    #[error("a hook reads s{0}, which gfx90a code cannot name")]
    NoSuchSgpr(u16),
    #[error("a hook names instruction {0}, which the lifted program does not have")]
    NoInstruction(usize),
    #[error("gfx908 and gfx942 rewriting is not supported yet (scalar atomics)")]
    Target,
}

/// Largest offset `s_atomic_*` takes as an immediate on gfx9.
const MAX_SMEM_OFFSET: u32 = (1 << 20) - 1;
/// SGPRs gfx90a code can name (s0..s101).
const SGPRS: u16 = 102;
/// First SGPR a callee must preserve under LLVM's AMDGPU calling convention
/// (s30-s33 hold the return address, stack and frame pointers).
const FIRST_SAFE_ACROSS_CALLS: u16 = 34;

/// Registers hook code runs with.
#[derive(Clone, Copy, Debug)]
struct Regs {
    /// Pair holding the counter buffer's address.
    base: u16,
    /// Pair holding (1, 0), or (lanes, 0) while counting lanes.
    data: u16,
    /// One SGPR saving SCC around code that writes it.
    scc: u16,
    /// Two pairs translating a code address loaded from memory (a table
    /// call) to the rewritten callee's.
    t: u16,
    u: u16,
}

struct Asm {
    b: Builder,
    /// The last `s_atomic_add_x2` built, by its (data, base) registers:
    /// hooks differ only in the offset, which is patched into its bytes
    /// (building through the checked builder per hook is the slow part of
    /// instrumenting every instruction).
    atomic: std::cell::Cell<Option<(u16, u16, [u8; 8])>>,
    decoder: inlay_isa::Decoder,
}

impl Asm {
    fn sgpr(n: u16, count: u8) -> Operand {
        Operand::Sgpr { first: n, count }
    }

    fn konst(v: u32) -> Operand {
        if v <= 64 {
            Operand::Inline(128 + v as u8)
        } else {
            Operand::Literal(v)
        }
    }

    fn build(
        &self,
        enc: Encoding,
        m: &'static str,
        ops: &[Operand],
    ) -> Result<Instruction, RewriteError> {
        self.b
            .build(enc, m, ops)
            .map_err(|e| RewriteError::Build(m, e))
    }

    fn mov(&self, d: u16, v: u32) -> Result<Instruction, RewriteError> {
        self.build(
            Encoding::Sop1,
            "s_mov_b32",
            &[Self::sgpr(d, 1), Self::konst(v)],
        )
    }

    /// A branch from `here` to `target` as a jump through `s[r.t:r.t+1]`:
    /// a conditional one becomes the inverse condition skipping the jump.
    /// SCC, which the address arithmetic writes, is saved in `r.scc` and
    /// put back before the jump, so the target sees it unchanged.
    fn long_branch(
        &self,
        branch: &Instruction,
        r: &Regs,
        here: u64,
        target: u64,
    ) -> Result<Vec<Instruction>, RewriteError> {
        let mut out = Vec::new();
        let mut at = here;
        let name = branch.opcode().map_or("", |o| o.name());
        if name != "s_branch" {
            let inverse = match name {
                "s_cbranch_scc0" => "s_cbranch_scc1",
                "s_cbranch_scc1" => "s_cbranch_scc0",
                "s_cbranch_vccz" => "s_cbranch_vccnz",
                "s_cbranch_vccnz" => "s_cbranch_vccz",
                "s_cbranch_execz" => "s_cbranch_execnz",
                "s_cbranch_execnz" => "s_cbranch_execz",
                _ => {
                    return Err(RewriteError::Build(
                        "a long branch",
                        inlay_isa::BuildError::Unknown(name.to_string()),
                    ))
                }
            };
            // Skip the 32 bytes of jump when the branch is not taken.
            let mut skip = self.build(Encoding::Sopp, inverse, &[Operand::Imm(0)])?;
            skip.set_branch_target(at, at + 4 + 32)
                .map_err(|e| RewriteError::Build(inverse, e))?;
            out.push(skip);
            at += 4;
        }
        out.push(self.build(
            Encoding::Sop2,
            "s_cselect_b32",
            &[Self::sgpr(r.scc, 1), Self::konst(1), Self::konst(0)],
        )?);
        out.push(self.build(Encoding::Sop1, "s_getpc_b64", &[Self::sgpr(r.t, 2)])?);
        let dist = target.wrapping_sub(at + 8);
        out.push(self.add_lit("s_add_u32", r.t, dist as u32)?);
        out.push(self.add_lit("s_addc_u32", r.t + 1, (dist >> 32) as u32)?);
        out.push(self.build(
            Encoding::Sopc,
            "s_cmp_lg_u32",
            &[Self::sgpr(r.scc, 1), Self::konst(0)],
        )?);
        out.push(self.build(Encoding::Sop1, "s_setpc_b64", &[Self::sgpr(r.t, 2)])?);
        Ok(out)
    }

    /// `v_writelane_b32 vV, sS, lane` or `v_readlane_b32 sS, vV, lane`.
    fn lane(
        &self,
        m: &'static str,
        v: u16,
        sgpr: u16,
        lane: u8,
    ) -> Result<Instruction, RewriteError> {
        let (vop, sop) = (Operand::Vgpr { first: v, count: 1 }, Self::sgpr(sgpr, 1));
        let ops = if m == "v_writelane_b32" {
            [vop, sop, Self::konst(u32::from(lane))]
        } else {
            [sop, vop, Self::konst(u32::from(lane))]
        };
        self.build(Encoding::Vop3, m, &ops)
    }

    /// `s_mov_b32 sd, v` with `v` as a literal whatever its value, so the
    /// size does not depend on the value.
    fn mov_lit(&self, d: u16, v: u32) -> Result<Instruction, RewriteError> {
        self.build(
            Encoding::Sop1,
            "s_mov_b32",
            &[Self::sgpr(d, 1), Operand::Literal(v)],
        )
    }

    fn add_lit(&self, m: &'static str, d: u16, v: u32) -> Result<Instruction, RewriteError> {
        self.build(
            Encoding::Sop2,
            m,
            &[Self::sgpr(d, 1), Self::sgpr(d, 1), Operand::Literal(v)],
        )
    }

    /// `s_atomic_add_x2 s[data:data+1], s[base:base+1], offset`.
    fn atomic_add(&self, r: &Regs, offset: u32) -> Result<Instruction, RewriteError> {
        if let Some((data, base, mut bytes)) = self.atomic.get() {
            // The immediate offset is the low 21 bits of the second word.
            if (data, base) == (r.data, r.base) && offset < 1 << 20 {
                bytes[4..8].copy_from_slice(&offset.to_le_bytes());
                if let Ok(i) = self.decoder.decode(&bytes) {
                    return Ok(i);
                }
            }
        }
        let i = self.build(
            Encoding::Smem,
            "s_atomic_add_x2",
            &[
                Self::sgpr(r.data, 2),
                Self::sgpr(r.base, 2),
                Operand::Imm(offset),
            ],
        )?;
        if let Ok(bytes) = <[u8; 8]>::try_from(encode(&i).as_slice()) {
            self.atomic.set(Some((r.data, r.base, bytes)));
        }
        Ok(i)
    }

    /// Sets up `r`: the base address, and data = (1, 0) in one 64-bit move
    /// of the inline constant 1.
    fn setup(&self, r: &Regs, counters: u64) -> Result<Vec<Instruction>, RewriteError> {
        Ok(vec![
            self.mov(r.base, counters as u32)?,
            self.mov(r.base + 1, (counters >> 32) as u32)?,
            self.build(
                Encoding::Sop1,
                "s_mov_b64",
                &[Self::sgpr(r.data, 2), Self::konst(1)],
            )?,
        ])
    }

    /// The code of one hook.
    fn hook(
        &self,
        h: Hook,
        r: &Regs,
        scc_live: bool,
        out: &mut Vec<Instruction>,
    ) -> Result<(), RewriteError> {
        match h {
            Hook::Count { offset } => out.push(self.atomic_add(r, offset)?),
            Hook::Add { offset, value } => {
                // data = (value, 0) for the atomic, then (1, 0) again for
                // the hooks that follow.
                out.push(match value {
                    Value::Const(v) => self.mov(r.data, v)?,
                    Value::Sgpr(n) => self.build(
                        Encoding::Sop1,
                        "s_mov_b32",
                        &[Self::sgpr(r.data, 1), Self::sgpr(n, 1)],
                    )?,
                });
                out.push(self.atomic_add(r, offset)?);
                out.push(self.mov(r.data, 1)?);
            }
            Hook::CountLanes { offset } => {
                if scc_live {
                    out.push(self.build(
                        Encoding::Sop2,
                        "s_cselect_b32",
                        &[Self::sgpr(r.scc, 1), Self::konst(1), Self::konst(0)],
                    )?);
                }
                out.push(self.build(
                    Encoding::Sop1,
                    "s_bcnt1_i32_b64",
                    &[
                        Self::sgpr(r.data, 1),
                        Operand::Special {
                            code: 126,
                            count: 2,
                        },
                    ],
                )?);
                out.push(self.atomic_add(r, offset)?);
                out.push(self.mov(r.data, 1)?);
                if scc_live {
                    out.push(self.build(
                        Encoding::Sopc,
                        "s_cmp_lg_u32",
                        &[Self::sgpr(r.scc, 1), Self::konst(0)],
                    )?);
                }
            }
        }
        Ok(())
    }
}

/// Code before a call through a pointer loaded from memory: the original
/// address of each known callee becomes its rewritten copy's.
struct Translation {
    /// The pair holding the target.
    pair: u16,
    /// Entry instruction of each callee, and its original device address.
    callees: Vec<(InstId, u64)>,
    regs: Regs,
    scc_live: bool,
}

impl Translation {
    /// Bytes: per callee getpc (4), add/addc with literals (8 + 8), two
    /// literal moves (8 + 8), s_cmp_eq_u64 (4), s_cselect_b64 (4); SCC save
    /// and restore (4 + 4) when SCC is live.
    fn size(&self) -> u64 {
        self.callees.len() as u64 * 44 + if self.scc_live { 8 } else { 0 }
    }

    /// The code, placed at offset `at`; `label` gives each instruction's new place.
    fn code(&self, asm: &Asm, at: u64, label: &[u64]) -> Result<Vec<Instruction>, RewriteError> {
        let (r, x) = (&self.regs, self.pair);
        let mut out = Vec::new();
        let mut here = at;
        if self.scc_live {
            out.push(asm.build(
                Encoding::Sop2,
                "s_cselect_b32",
                &[Asm::sgpr(r.scc, 1), Asm::konst(1), Asm::konst(0)],
            )?);
            here += 4;
        }
        for &(entry, original) in &self.callees {
            let dist = label[entry].wrapping_sub(here + 4);
            out.push(asm.build(Encoding::Sop1, "s_getpc_b64", &[Asm::sgpr(r.u, 2)])?);
            out.push(asm.add_lit("s_add_u32", r.u, dist as u32)?);
            out.push(asm.add_lit("s_addc_u32", r.u + 1, (dist >> 32) as u32)?);
            out.push(asm.mov_lit(r.t, original as u32)?);
            out.push(asm.mov_lit(r.t + 1, (original >> 32) as u32)?);
            out.push(asm.build(
                Encoding::Sopc,
                "s_cmp_eq_u64",
                &[Asm::sgpr(x, 2), Asm::sgpr(r.t, 2)],
            )?);
            out.push(asm.build(
                Encoding::Sop2,
                "s_cselect_b64",
                &[Asm::sgpr(x, 2), Asm::sgpr(r.u, 2), Asm::sgpr(x, 2)],
            )?);
            here += 44;
        }
        if self.scc_live {
            out.push(asm.build(
                Encoding::Sopc,
                "s_cmp_lg_u32",
                &[Asm::sgpr(r.scc, 1), Asm::konst(0)],
            )?);
        }
        Ok(out)
    }
}

/// How one original instruction is emitted.
#[derive(Clone, Copy, Debug)]
enum Emit {
    /// As it was.
    Same,
    /// A branch re-aimed at the new place of the instruction at this address.
    Branch { target: InstId },
    /// `s_getpc_b64 s[d:d+1]` kept (it starts a call into the new code).
    KeepGetpc,
    /// `s_add_u32`/`s_addc_u32` of a kept call sequence: half of the
    /// distance from the `s_getpc_b64` at `getpc` to `callee`'s entry.
    CallLiteral {
        getpc: InstId,
        callee: InstId,
        high: bool,
    },
    /// `s_getpc_b64 s[d:d+1]` made into two moves of `pc` (original address).
    MaterializePc { d: u16, pc: u64 },
}

impl Emit {
    fn size(&self, i: &Instruction) -> u64 {
        match self {
            Emit::MaterializePc { .. } => 16,
            _ => i.len() as u64,
        }
    }
}

/// Rewrites `an`'s kernel with `plan`; `load_delta` is where the original
/// code object is loaded (device address minus virtual address).
pub fn rewrite(
    an: &Analysis,
    load_delta: u64,
    descriptor: &KernelDescriptor,
    plan: &Plan,
) -> Result<Rewritten, RewriteError> {
    let prog = &an.program;
    if prog.target != Target::Gfx90a {
        return Err(RewriteError::Target);
    }
    let asm = Asm {
        b: Builder::new(prog.target),
        atomic: std::cell::Cell::new(None),
        decoder: inlay_isa::Decoder::new(prog.target),
    };
    let mut hooks: BTreeMap<InstId, Vec<Hook>> = BTreeMap::new();
    for &(i, h) in &plan.hooks {
        if i >= prog.insts.len() {
            return Err(RewriteError::NoInstruction(i));
        }
        let offset = h.offset();
        if let Hook::Add {
            value: Value::Sgpr(n),
            ..
        } = h
        {
            if n >= SGPRS {
                return Err(RewriteError::NoSuchSgpr(n));
            }
        }
        if offset > MAX_SMEM_OFFSET - 7 {
            return Err(RewriteError::CounterOffset(offset));
        }
        hooks.entry(i).or_default().push(h);
    }

    let reserved =
        reserve(an, !hooks.is_empty() || has_table_calls(an)).filter(|_| !plan.dead_registers_only);
    let (emits, redirected) = plan_emits(an, load_delta);

    // Hook code per instruction (sizes are known before addresses). Who
    // sets the hooks' registers: once they are set, nothing else writes
    // them. A hook whose block is dominated by another hook's block finds
    // them set; otherwise a hook in kernel code that runs at most once per
    // wave sets them itself, which costs less than a preamble every wave
    // runs. If any hook could run unset more than once (in a loop, in a
    // device function), the preamble sets them for all.
    let hooked: Vec<usize> = hooks.keys().map(|&i| prog.insts[i].block).collect();
    let setup_blocks = blocks_setting_registers(prog, &hooked);
    let needs_preamble = reserved.is_some() && setup_blocks.is_none();
    let mut hook_code: BTreeMap<InstId, Vec<Instruction>> = BTreeMap::new();
    let mut added_by_hooks = 0;
    let mut set_in_block = std::collections::HashSet::new();
    let mut grown_vgpr: Option<u16> = None;
    for (&i, hs) in &hooks {
        // Liveness is needed for the registers of hooks without reserved
        // ones, and for SCC around lane counting.
        let lanes = hs.iter().any(|h| matches!(h, Hook::CountLanes { .. }));
        let (mut dead, scc_live) = if reserved.is_none() || lanes {
            an.free_sgprs_before(i)
        } else {
            (Vec::new(), false)
        };
        // SGPRs a hook reads are not the hook's to take (a dead one may still
        // be asked for).
        dead.retain(|n| {
            !hs.iter()
                .any(|h| matches!(h, Hook::Add { value: Value::Sgpr(m), .. } if *m == *n))
        });
        let block = prog.insts[i].block;
        let (regs, mut code) = match (reserved, &setup_blocks) {
            (Some(r), Some(sb)) if sb.contains(&block) && set_in_block.insert(block) => {
                (r, asm.setup(&r, plan.counters)?)
            }
            (Some(r), _) => (r, Vec::new()),
            (None, _) => {
                match per_point(&dead, lanes && scc_live) {
                    Some(r) => (r, asm.setup(&r, plan.counters)?),
                    None => {
                        // Too few dead SGPRs: borrow five (from s0, past
                        // any the hooks read), saving the live ones in
                        // lanes of a VGPR dead in every lane.
                        let v = match an.free_before(i).vgprs.first() {
                            Some(&v) => v,
                            None => {
                                // No VGPR is dead either: one more VGPR,
                                // above all the kernel allocates, if its
                                // AGPRs leave room.
                                let v = extra_vgpr(an).ok_or(RewriteError::NoRegisters {
                                    addr: prog.insts[i].addr,
                                })?;
                                grown_vgpr = grown_vgpr.max(Some(v));
                                v
                            }
                        };
                        let reads = |n: u16| {
                            hs.iter().any(
                                |h| matches!(h, Hook::Add { value: Value::Sgpr(m), .. } if *m == n),
                            )
                        };
                        let mut k = 0u16;
                        while (k..k + 5).any(reads) {
                            k += 6;
                        }
                        let r = Regs {
                            base: k,
                            data: k + 2,
                            scc: k + 4,
                            t: 0,
                            u: 0,
                        };
                        let saved: Vec<u16> = (k..k + 5).filter(|n| !dead.contains(n)).collect();
                        let mut code = Vec::new();
                        for (lane, &sr) in saved.iter().enumerate() {
                            code.push(asm.lane("v_writelane_b32", v, sr, lane as u8)?);
                        }
                        code.extend(asm.setup(&r, plan.counters)?);
                        for &h in hs {
                            asm.hook(h, &r, scc_live, &mut code)?;
                        }
                        for (lane, &sr) in saved.iter().enumerate() {
                            code.push(asm.lane("v_readlane_b32", v, sr, lane as u8)?);
                        }
                        added_by_hooks += code.len();
                        hook_code.insert(i, code);
                        continue;
                    }
                }
            }
        };
        for &h in hs {
            asm.hook(h, &regs, scc_live, &mut code)?;
        }
        added_by_hooks += code.len();
        hook_code.insert(i, code);
    }
    let mut translations: BTreeMap<InstId, Translation> = BTreeMap::new();
    let mut redirected = redirected;
    for (n, c) in prog.calls.iter().enumerate() {
        let Callee::Table { callees, .. } = &c.callee else {
            continue;
        };
        let Some(pair) = call_pair(&prog.insts[c.inst].inst) else {
            continue;
        };
        let free = an.free_before(c.inst);
        let regs = match reserved {
            Some(r) => r,
            None => per_point_translation(&free.sgprs, free.scc_live).ok_or(
                RewriteError::NoRegisters {
                    addr: prog.insts[c.inst].addr,
                },
            )?,
        };
        let callees = callees
            .iter()
            .filter_map(|&f| {
                let entry = prog.functions[f].entry;
                Some((prog.inst_at(f, entry)?, load_delta.wrapping_add(entry)))
            })
            .collect();
        translations.insert(
            c.inst,
            Translation {
                pair,
                callees,
                regs,
                scc_live: free.scc_live,
            },
        );
        redirected[n] = true;
    }
    let uses_reserved = !hooks.is_empty() || !translations.is_empty();
    let preamble = match reserved {
        Some(r) if needs_preamble => asm.setup(&r, plan.counters)?,
        _ => Vec::new(),
    };

    // Layout: preamble, then every function's instructions in address
    // order, each preceded by its hook code (its label).
    let order: Vec<InstId> = prog
        .functions
        .iter()
        .flat_map(|f| f.blocks.clone())
        .flat_map(|b| prog.blocks[b].insts.clone())
        .collect();
    // Branches that cannot reach their target once hooks are in become
    // long jumps: lay out, find the branches out of range, make them long,
    // lay out again until nothing changes (sizes only grow, so it ends).
    let mut long: BTreeMap<InstId, Regs> = BTreeMap::new();
    let (label, new_offset, at) = loop {
        let mut label = vec![0u64; prog.insts.len()];
        let mut new_offset = vec![0u64; prog.insts.len()];
        let mut at: u64 = preamble.iter().map(|i| i.len() as u64).sum();
        for &i in &order {
            label[i] = at;
            at += hook_code
                .get(&i)
                .map_or(0, |c| c.iter().map(|x| x.len() as u64).sum());
            at += translations.get(&i).map_or(0, Translation::size);
            new_offset[i] = at;
            at += match long.get(&i) {
                Some(_) => long_branch_size(&prog.insts[i].inst),
                None => emits[i].size(&prog.insts[i].inst),
            };
        }
        let mut grew = false;
        for &i in &order {
            let Emit::Branch { target } = emits[i] else {
                continue;
            };
            let delta = (label[target] as i64 - new_offset[i] as i64 - 4) / 4;
            let fits = (-32768..=32767).contains(&delta) && !plan.all_branches_long;
            if long.contains_key(&i) || fits {
                continue;
            }
            let regs = match reserved {
                Some(r) => r,
                None => long_branch_regs(an, i, target).ok_or(RewriteError::BranchRange {
                    addr: prog.insts[i].addr,
                })?,
            };
            long.insert(i, regs);
            grew = true;
        }
        if !grew {
            break (label, new_offset, at);
        }
    };
    let uses_reserved = uses_reserved || !long.is_empty();

    let mut code = Vec::with_capacity(at as usize);
    for i in &preamble {
        code.extend_from_slice(&encode(i));
    }
    let mut added = preamble.len() + added_by_hooks;
    for &i in &order {
        for h in hook_code.get(&i).into_iter().flatten() {
            code.extend_from_slice(&encode(h));
        }
        if let Some(t) = translations.get(&i) {
            let at = code.len() as u64;
            let tc = t.code(&asm, at, &label)?;
            added += tc.len();
            for x in &tc {
                code.extend_from_slice(&encode(x));
            }
            debug_assert_eq!(code.len() as u64 - at, t.size());
        }
        let mut inst = prog.insts[i].inst;
        let here = new_offset[i];
        match emits[i] {
            Emit::Same | Emit::KeepGetpc => {}
            Emit::Branch { target } if long.contains_key(&i) => {
                let seq = asm.long_branch(&inst, &long[&i], here, label[target])?;
                added += seq.len() - 1;
                let (last, first) = seq.split_last().ok_or(RewriteError::BranchRange {
                    addr: prog.insts[i].addr,
                })?;
                for x in first {
                    code.extend_from_slice(&encode(x));
                }
                inst = *last;
            }
            Emit::Branch { target } => {
                inst.set_branch_target(here, label[target]).map_err(|_| {
                    RewriteError::BranchRange {
                        addr: prog.insts[i].addr,
                    }
                })?;
            }
            Emit::CallLiteral {
                getpc,
                callee,
                high,
            } => {
                // The kept s_getpc_b64 yields the address after itself.
                let dist = label[callee].wrapping_sub(new_offset[getpc] + 4);
                let d = sdst(&inst);
                inst = if high {
                    asm.add_lit("s_addc_u32", d, (dist >> 32) as u32)?
                } else {
                    asm.add_lit("s_add_u32", d, dist as u32)?
                };
            }
            Emit::MaterializePc { d, pc } => {
                code.extend_from_slice(&encode(&asm.mov(d, pc as u32)?));
                inst = asm.mov(d + 1, (pc >> 32) as u32)?;
                added += 1;
            }
        }
        code.extend_from_slice(&encode(&inst));
    }
    debug_assert_eq!(code.len() as u64, at);

    let mut kd = *descriptor;
    if let Some(v) = grown_vgpr {
        grow_vgprs(&mut kd, v);
    }
    if let Some(r) = reserved.filter(|_| uses_reserved) {
        grow_sgprs(&mut kd, r.u + 1);
    } else {
        let most = hook_code
            .values()
            .flatten()
            .filter_map(max_sgpr)
            .chain(translations.values().map(|t| t.regs.u.max(t.regs.t) + 1))
            .max();
        if let Some(m) = most {
            grow_sgprs(&mut kd, m);
        }
    }
    let calls_to_original = prog
        .calls
        .iter()
        .enumerate()
        .filter(|(n, _)| !redirected[*n])
        .map(|(_, c)| {
            let why = match &c.callee {
                Callee::Direct(_) => {
                    "its target is not computed by a getpc/add/addc sequence used only for the call"
                }
                Callee::Table { .. } => "called through a pointer loaded from memory",
                Callee::External(_) => "defined in another code object",
                Callee::Unresolved => "target unknown",
            };
            (c.inst, why)
        })
        .collect();
    Ok(Rewritten {
        code,
        descriptor: kd,
        added,
        added_by_hooks,
        preamble: preamble.len(),
        new_offset,
        calls_to_original,
    })
}

/// The hooked block that must set the hook registers itself (the one no
/// other hooked block dominates), or `None` when a preamble is the better
/// place: when such a block may run more than once per wave, or when there
/// are several of them.
fn blocks_setting_registers(prog: &crate::lift::Program, hooked: &[usize]) -> Option<Vec<usize>> {
    let kernel = prog.functions.first()?;
    let blocks = kernel.blocks.clone();
    let repeats = blocks_that_may_repeat(prog);
    let idom = dominators(prog, blocks.clone());
    let mut is_hooked = vec![false; prog.blocks.len()];
    for &b in hooked {
        is_hooked[b] = true;
    }
    let is_hooked = |b: usize| is_hooked[b];
    let mut out = Vec::new();
    let mut done = vec![false; prog.blocks.len()];
    for &b in hooked {
        if std::mem::replace(&mut done[b], true) {
            continue;
        }
        if !blocks.contains(&b) {
            return None; // a device function's block
        }
        // Walk up the dominator tree looking for another hooked block.
        let mut d = idom[b - blocks.start];
        let mut covered = false;
        while let Some(x) = d {
            if is_hooked(x) {
                covered = true;
                break;
            }
            d = idom[x - blocks.start];
        }
        if !covered {
            if repeats[b] {
                return None;
            }
            out.push(b);
        }
    }
    // Several setting blocks may all run in one wave (a chain of ifs):
    // only a single one is sure to cost no more than the preamble.
    (out.len() <= 1).then_some(out)
}

/// Immediate dominators of the blocks of one function (`range`; its first
/// block is the entry), by the iterative algorithm of Cooper, Harvey and
/// Kennedy; `None` for the entry and for unreachable blocks.
fn dominators(prog: &crate::lift::Program, range: std::ops::Range<usize>) -> Vec<Option<usize>> {
    let n = range.len();
    let local = |b: usize| range.contains(&b).then(|| b - range.start);
    // Reverse postorder from the entry.
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    let mut stack = vec![(0usize, 0usize)];
    if n > 0 {
        seen[0] = true;
    }
    while let Some(&mut (v, ref mut k)) = stack.last_mut() {
        let succs = &prog.blocks[range.start + v].succs;
        if let Some(&w) = succs.get(*k) {
            *k += 1;
            if let Some(w) = local(w) {
                if !seen[w] {
                    seen[w] = true;
                    stack.push((w, 0));
                }
            }
            continue;
        }
        order.push(v);
        stack.pop();
    }
    order.reverse();
    let mut rpo = vec![usize::MAX; n];
    for (i, &v) in order.iter().enumerate() {
        rpo[v] = i;
    }
    let mut idom: Vec<Option<usize>> = vec![None; n];
    if n == 0 {
        return idom;
    }
    idom[0] = Some(0);
    let intersect = |idom: &[Option<usize>], mut a: usize, mut b: usize| {
        while a != b {
            while rpo[a] > rpo[b] {
                a = idom[a].unwrap_or(0);
            }
            while rpo[b] > rpo[a] {
                b = idom[b].unwrap_or(0);
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &v in order.iter().skip(1) {
            let mut new: Option<usize> = None;
            for &p in &prog.blocks[range.start + v].preds {
                let Some(p) = local(p) else { continue };
                if idom[p].is_none() {
                    continue;
                }
                new = Some(match new {
                    None => p,
                    Some(x) => intersect(&idom, p, x),
                });
            }
            if new.is_some() && idom[v] != new {
                idom[v] = new;
                changed = true;
            }
        }
    }
    idom[0] = None;
    idom.into_iter()
        .map(|d| d.map(|x| range.start + x))
        .collect()
}

/// Blocks that may run more than once per wave: those on a cycle of their
/// function's control flow, and every block of a device function (it may be
/// called many times).
fn blocks_that_may_repeat(prog: &crate::lift::Program) -> Vec<bool> {
    let n = prog.blocks.len();
    let mut repeat = vec![false; n];
    for f in &prog.functions {
        if f.kind != crate::lift::FuncKind::Kernel {
            for b in f.blocks.clone() {
                repeat[b] = true;
            }
        }
    }
    // Tarjan's strongly connected components, iteratively.
    let (mut index, mut low) = (vec![usize::MAX; n], vec![0usize; n]);
    let (mut on_stack, mut stack, mut next) = (vec![false; n], Vec::new(), 0usize);
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut frames = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut k)) = frames.last_mut() {
            if let Some(&w) = prog.blocks[v].succs.get(*k) {
                *k += 1;
                if w == v {
                    repeat[v] = true;
                }
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    frames.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(u, _)) = frames.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut members = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    members.push(w);
                    if w == v {
                        break;
                    }
                }
                if members.len() > 1 {
                    for w in members {
                        repeat[w] = true;
                    }
                }
            }
        }
    }
    repeat
}

fn has_table_calls(an: &Analysis) -> bool {
    an.program
        .calls
        .iter()
        .any(|c| matches!(c.callee, Callee::Table { .. }))
}

/// The SGPR pair a `s_swappc_b64` or `s_setpc_b64` jumps to.
fn call_pair(i: &Instruction) -> Option<u16> {
    let n = match i.opcode()?.name() {
        "s_swappc_b64" => 1,
        "s_setpc_b64" => 0,
        _ => return None,
    };
    match i.operand(n)? {
        Operand::Sgpr { first, count: 2 } => Some(first),
        _ => None,
    }
}

/// First SGPR written by `i`, for an instruction whose destination is one.
fn sdst(i: &Instruction) -> u16 {
    match i.operand(0) {
        Some(Operand::Sgpr { first, .. }) => first,
        _ => 0,
    }
}

fn max_sgpr(i: &Instruction) -> Option<u16> {
    i.operands()
        .filter_map(|o| match o {
            Operand::Sgpr { first, count } => Some(first + u16::from(count) - 1),
            _ => None,
        })
        .max()
}

/// SGPRs no instruction of the program names, if enough of them (aligned
/// pairs for base and data, one for SCC) lie below s102.
fn reserve(an: &Analysis, wanted: bool) -> Option<Regs> {
    if !wanted {
        return None;
    }
    let opaque_calls = an
        .program
        .calls
        .iter()
        .any(|c| matches!(c.callee, Callee::External(_) | Callee::Unresolved));
    let mut first = an.resources.sgprs_used as u16;
    if opaque_calls {
        first = first.max(FIRST_SAFE_ACROSS_CALLS);
    }
    let first = first.next_multiple_of(2);
    (first + 10 <= SGPRS).then_some(Regs {
        base: first,
        data: first + 2,
        scc: first + 4,
        t: first + 6,
        u: first + 8,
    })
}

/// Even SGPRs starting a dead pair, and the first dead SGPR outside
/// `taken` pairs.
fn dead_pairs(dead: &[u16]) -> impl Iterator<Item = u16> + '_ {
    dead.iter()
        .copied()
        .filter(|&n| n % 2 == 0 && dead.contains(&(n + 1)))
}

fn dead_single(dead: &[u16], taken: &[u16]) -> Option<u16> {
    dead.iter().copied().find(|&n| !taken.contains(&(n & !1)))
}

/// Registers for a hook among SGPRs dead before it: the base and data
/// pairs, and an SGPR saving SCC if the hook must.
fn per_point(dead: &[u16], save_scc: bool) -> Option<Regs> {
    let mut pairs = dead_pairs(dead);
    let (base, data) = (pairs.next()?, pairs.next()?);
    let scc = if save_scc {
        dead_single(dead, &[base, data])?
    } else {
        0
    };
    Some(Regs {
        base,
        data,
        scc,
        t: 0,
        u: 0,
    })
}

/// Registers for a table-call translation among SGPRs dead before it.
fn per_point_translation(dead: &[u16], save_scc: bool) -> Option<Regs> {
    let mut pairs = dead_pairs(dead);
    let (t, u) = (pairs.next()?, pairs.next()?);
    let scc = if save_scc {
        dead_single(dead, &[t, u])?
    } else {
        0
    };
    Some(Regs {
        base: 0,
        data: 0,
        scc,
        t,
        u,
    })
}

/// Bytes of a long branch: the inverse branch (conditional ones), then
/// s_cselect (4), s_getpc (4), s_add/s_addc with literals (8 + 8),
/// s_cmp (4), s_setpc (4).
fn long_branch_size(branch: &Instruction) -> u64 {
    let conditional = branch.opcode().map_or("", |o| o.name()) != "s_branch";
    32 + if conditional { 4 } else { 0 }
}

/// A pair and an SGPR for a long branch when no SGPRs are reserved: dead
/// both before the branch and at its target (the jump writes them and
/// control goes on there).
fn long_branch_regs(an: &Analysis, branch: InstId, target: InstId) -> Option<Regs> {
    let (here, there) = (an.free_before(branch), an.free_before(target));
    let dead: Vec<u16> = here
        .sgprs
        .iter()
        .copied()
        .filter(|n| there.sgprs.contains(n))
        .collect();
    let t = dead_pairs(&dead).next()?;
    let scc = dead_single(&dead, &[t])?;
    Some(Regs {
        base: 0,
        data: 0,
        scc,
        t,
        u: 0,
    })
}

/// A VGPR above everything the kernel allocates, when it uses no AGPRs
/// (whose file starts right after the VGPRs on gfx90a).
fn extra_vgpr(an: &Analysis) -> Option<u16> {
    let r = &an.resources;
    (r.agprs_used == 0 && r.vgprs_allocated < 512).then_some(r.vgprs_allocated as u16)
}

/// Makes a gfx90a descriptor allocate VGPRs up to `highest`: the unified
/// register file's granule (8) and the AGPRs' offset (in units of 4), which
/// stays at the end of the VGPRs.
fn grow_vgprs(kd: &mut KernelDescriptor, highest: u16) {
    let need = u32::from(highest) + 1;
    let granules = need.div_ceil(8).max(1);
    let old = kd.compute_pgm_rsrc1 & 0x3f;
    if granules - 1 > old {
        kd.compute_pgm_rsrc1 = (kd.compute_pgm_rsrc1 & !0x3f) | (granules - 1);
    }
    let accum = need.div_ceil(4);
    if accum - 1 > kd.compute_pgm_rsrc3 & 0x3f {
        kd.compute_pgm_rsrc3 = (kd.compute_pgm_rsrc3 & !0x3f) | (accum - 1);
    }
}

/// Makes the descriptor allocate SGPRs up to `highest` (plus the six gfx9
/// keeps for VCC, FLAT_SCRATCH and XNACK_MASK).
fn grow_sgprs(kd: &mut KernelDescriptor, highest: u16) {
    let need = u32::from(highest) + 1 + 6;
    let field = need.div_ceil(8).saturating_sub(1).min(15);
    let old = (kd.compute_pgm_rsrc1 >> 6) & 0xf;
    if field > old {
        kd.compute_pgm_rsrc1 = (kd.compute_pgm_rsrc1 & !(0xf << 6)) | field << 6;
    }
}

/// Decides how each instruction is emitted: branches, call sequences into
/// the new code, and every other `s_getpc_b64`; and which call sites
/// (by index) now reach the rewritten callee.
fn plan_emits(an: &Analysis, load_delta: u64) -> (Vec<Emit>, Vec<bool>) {
    let prog = &an.program;
    let mut emits = vec![Emit::Same; prog.insts.len()];
    for (i, ins) in prog.insts.iter().enumerate() {
        let f = prog.blocks[ins.block].function;
        if ins.inst.slots().contains(&Slot::Imm(ImmKind::Branch)) {
            if let crate::lift::Flow::Branch(t) | crate::lift::Flow::CondBranch(t) =
                crate::lift::flow(&ins.inst, ins.addr)
            {
                if let Some(target) = prog.inst_at(f, t) {
                    emits[i] = Emit::Branch { target };
                }
            }
        }
        if ins.inst.opcode().map(|o| o.name()) == Some("s_getpc_b64") {
            let d = sdst(&ins.inst);
            emits[i] = Emit::MaterializePc {
                d,
                pc: load_delta.wrapping_add(ins.addr + 4),
            };
        }
    }
    let mut redirected = vec![false; prog.calls.len()];
    for (n, c) in prog.calls.iter().enumerate() {
        let Callee::Direct(f) = c.callee else {
            continue;
        };
        let Some(entry) = prog.inst_at(f, prog.functions[f].entry) else {
            continue;
        };
        if let Some((g, a, ac)) = call_sequence(an, c.inst) {
            emits[g] = Emit::KeepGetpc;
            emits[a] = Emit::CallLiteral {
                getpc: g,
                callee: entry,
                high: false,
            };
            emits[ac] = Emit::CallLiteral {
                getpc: g,
                callee: entry,
                high: true,
            };
            redirected[n] = true;
        }
    }
    (emits, redirected)
}

/// The `s_getpc_b64 s[X:X+1]; s_add_u32 sX, sX, lit; s_addc_u32 sX+1, sX+1,
/// lit` that computes the target of the call at `call`, if its pair is used
/// for nothing else: not read between the sequence and the call, not live
/// after the call.
fn call_sequence(an: &Analysis, call: InstId) -> Option<(InstId, InstId, InstId)> {
    let prog = &an.program;
    let target = call_pair(&prog.insts[call].inst)?;
    let block = &prog.blocks[prog.insts[call].block];
    let is = |k: InstId, name: &str| prog.insts[k].inst.opcode().map(|o| o.name()) == Some(name);
    let reg_is = |k: InstId, n: usize, want: u16| matches!(prog.insts[k].inst.operand(n), Some(Operand::Sgpr { first, .. }) if first == want);
    let lit = |k: InstId| matches!(prog.insts[k].inst.operand(2), Some(Operand::Literal(_)));
    let mut k = call;
    while k > block.insts.start {
        k -= 1;
        if is(k, "s_getpc_b64") && reg_is(k, 0, target) {
            let (a, c) = (k + 1, k + 2);
            if c >= call
                || !(is(a, "s_add_u32") && reg_is(a, 0, target) && reg_is(a, 1, target) && lit(a))
                || !(is(c, "s_addc_u32")
                    && reg_is(c, 0, target + 1)
                    && reg_is(c, 1, target + 1)
                    && lit(c))
            {
                return None;
            }
            let pair = [target, target + 1];
            let reads_pair = |m: InstId| {
                let info = inlay_isa::info(&prog.insts[m].inst);
                info.used_registers().iter().any(|u| {
                    u.access.reads()
                        && u.register.file == inlay_isa::RegFile::Sgpr
                        && pair.iter().any(|&p| u.register.overlaps(&sgpr_reg(p)))
                })
            };
            if (c + 1..call).any(reads_pair) {
                return None;
            }
            // After a call (not a tail call) the pair must be dead.
            if block.insts.contains(&(call + 1)) {
                let after = an.live_before(call + 1).any();
                if pair.iter().any(|&p| after.has_sgpr(p)) {
                    return None;
                }
            }
            return Some((k, a, c));
        }
    }
    None
}

fn sgpr_reg(n: u16) -> inlay_isa::Register {
    inlay_isa::Register {
        file: inlay_isa::RegFile::Sgpr,
        first: n,
        count: 1,
    }
}
