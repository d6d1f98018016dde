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
//! # Records and launch values
//! A recording hook claims room in its trace with one returning
//! `s_atomic_add_x2` on the trace's cursor, skips the write when the claim
//! lies past the capacity, and stores with `global_store_dwordx2` from a
//! dead aligned VGPR pair and a dead VGPR offset (ones above the allocation
//! when none are dead): a per-wave value from lane 0 alone (EXEC saved and
//! put back), per-lane values (a VGPR, or a memory instruction's address,
//! rebuilt from its operands with `v_mad_u64_u32`/`v_mad_i64_i32`, which
//! leave VCC alone) under the wave's own EXEC. Launch values are read from
//! the SGPRs the kernel receives them in (AMDGPUUsage's initial state) where
//! the kernel cannot have overwritten them yet; elsewhere from copies that
//! the preamble makes into SGPRs above the reserved ones.
//!
//! A branch that cannot reach its target once hooks are in becomes a long
//! jump (`s_getpc_b64`, `s_add_u32`, `s_addc_u32`, `s_setpc_b64`, SCC saved
//! and put back before the jump; the inverse condition skips it).

use std::collections::BTreeMap;

use inlay_codeobj::descriptor::InitialSgprs;
use inlay_codeobj::KernelDescriptor;
use inlay_isa::tables::{ImmKind, Slot};
use inlay_isa::{encode, encode_into, Builder, Encoding, Instruction, Modifier, Operand, Target};

use crate::hooks::{HookCall, HookModule};
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
    /// Appends a [`SCALAR_RECORD`]-byte record to `trace`, once per wave
    /// that gets there: `id` (u32), 0 (u32), the value (u64).
    Record { trace: Trace, id: u32, value: Value },
    /// Appends a [`LANE_RECORD`]-byte record to `trace`, once per wave that
    /// gets there with some lane enabled: `id` (u32), 0 (u32), EXEC (u64),
    /// then one u64 per lane, lane 0 first; disabled lanes' are not written.
    RecordLanes {
        trace: Trace,
        id: u32,
        value: LaneValue,
    },
}

/// Bytes of a [`Hook::Record`] record.
pub const SCALAR_RECORD: u32 = 16;
/// Bytes of a [`Hook::RecordLanes`] record.
pub const LANE_RECORD: u32 = 16 + 64 * 8;

/// A buffer that hooks append records to: a u64 cursor in the counter
/// buffer counts the bytes claimed (claims past `capacity` go on counting,
/// so the reader knows how much was lost, but write nothing), and the
/// records start at `records`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trace {
    /// Byte offset of the cursor in the counter buffer (8-byte aligned).
    pub cursor: u32,
    /// Device address of the first record (8-byte aligned).
    pub records: u64,
    /// Bytes available at `records`.
    pub capacity: u32,
}

impl Hook {
    /// Byte offset in the counter buffer of the counter or cursor it updates.
    pub fn offset(&self) -> u32 {
        match *self {
            Hook::Count { offset } | Hook::CountLanes { offset } | Hook::Add { offset, .. } => {
                offset
            }
            Hook::Record { trace, .. } | Hook::RecordLanes { trace, .. } => trace.cursor,
        }
    }

    fn writes_scc(&self) -> bool {
        !matches!(self, Hook::Count { .. } | Hook::Add { .. })
    }

    fn records(&self) -> bool {
        matches!(self, Hook::Record { .. } | Hook::RecordLanes { .. })
    }

    fn value(&self) -> Option<Value> {
        match *self {
            Hook::Add { value, .. } | Hook::Record { value, .. } => Some(value),
            _ => None,
        }
    }

    /// VGPRs it needs, and whether they must be dead in every lane (the
    /// hook writes lanes EXEC disables) or only in the enabled ones.
    fn vgprs(&self) -> Option<Lanes> {
        match self {
            Hook::Record { .. } => Some(Lanes::All),
            Hook::RecordLanes { .. } => Some(Lanes::Enabled),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Lanes {
    Enabled,
    All,
}

/// A hook argument: one value per wave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// A constant.
    Const(u32),
    /// The value SGPR `n` holds before the instruction (zero-extended).
    Sgpr(u16),
    /// The 64-bit value of SGPRs `n` and `n + 1`.
    SgprPair(u16),
    Exec,
    Vcc,
    /// The dword at byte `offset` of the kernel's arguments.
    KernArg(u32),
    /// The dword at byte `offset` of the AQL dispatch packet (workgroup
    /// sizes at 4 and 6, grid sizes at 12, 16 and 20).
    Packet(u32),
    /// The workgroup's id in dimension 0, 1 or 2.
    WorkgroupId(u8),
}

impl Value {
    fn is_64_bit(&self) -> bool {
        matches!(self, Value::SgprPair(_) | Value::Exec | Value::Vcc)
    }
}

/// Whether [`LaneValue::Address`] is defined before `i`: FLAT and GLOBAL
/// instructions (not SCRATCH ones, whose addresses are private offsets).
pub fn has_address(i: &Instruction) -> bool {
    matches!(i.encoding(), Encoding::Flat | Encoding::Global)
}

/// A hook argument with one value per lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneValue {
    /// VGPR `n` (zero-extended).
    Vgpr(u16),
    /// VGPRs `n` and `n + 1` as one 64-bit value.
    VgprPair(u16),
    /// The address the instruction (a FLAT or GLOBAL one) accesses.
    Address,
}

/// What to insert: built-in hooks before instructions (counting into a
/// buffer, recording into traces) and calls to compiled hooks.
///
/// At one instruction, built-in hooks run first (in order), then the calls
/// placed before it (in order); calls placed after an instruction run in
/// order after it.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Device address of the counter buffer (8-byte aligned).
    pub counters: u64,
    /// Hooks before instructions (several per instruction run in order).
    pub hooks: Vec<(InstId, Hook)>,
    /// Calls to compiled hooks ([`crate::hooks`]).
    pub calls: Vec<HookCall>,
    /// The hook modules calls name (by index).
    pub modules: Vec<HookModule>,
    /// Take only registers dead at each hook, never SGPRs reserved for
    /// the whole kernel (which may grow its SGPR allocation).
    pub dead_registers_only: bool,
    /// Emit every branch in the long form used when a target is out of
    /// reach (to exercise that form; it is slower).
    pub all_branches_long: bool,
    /// Save, around every call, every register the calling convention lets
    /// a callee clobber (within the kernel's allocation) instead of the
    /// ones live at the point and clobbered by the hook: the baseline the
    /// engine's register finding is measured against.
    pub save_all_clobberable: bool,
}

/// A relocation the loader applies to the rewritten code: the 32-bit word
/// at `offset` (from the start of [`Rewritten::code`]) gets the low
/// (`high` false) or high half of `S + addend - P`, `S` the address of
/// `symbol`, `P` the word's (`R_AMDGPU_REL32_LO` / `_HI`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeReloc {
    pub offset: u64,
    pub symbol: String,
    pub high: bool,
    pub addend: i64,
}

/// An implicit-argument block the instrumented code object carries because
/// the kernel has none its hooks can use: `size` bytes at symbol
/// [`crate::emit::implicit_args_name`] of the instrumented code object,
/// which the host fills before each dispatch
/// ([`crate::hooks::implicit_args_block`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImplicitArgs {
    pub size: u32,
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
    /// Relocations of the calls to compiled hooks (undefined symbols the
    /// loader resolves against the hook modules at freeze).
    pub relocations: Vec<CodeReloc>,
    /// An implicit-argument block the host must fill before each dispatch.
    pub implicit_args: Option<ImplicitArgs>,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
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
    #[error("a hook reads the {0}, which the kernel's descriptor does not have its waves receive")]
    NotReceived(&'static str),
    #[error("a hook before the instruction at {addr:#x} reads the {what}, which the kernel may have overwritten by then, and no SGPRs are free to keep a copy in")]
    Overwritten { what: &'static str, addr: u64 },
    #[error("the instruction at {addr:#x} has no address for a hook to record (only FLAT and GLOBAL ones have)")]
    NoAddress { addr: u64 },
    #[error("a trace needs 8-byte aligned records and cursor, and room for one record")]
    Trace,
    #[error("argument offset {0:#x} is not a dword offset a scalar load takes")]
    ArgumentOffset(u32),
    /// A call to a compiled hook that cannot be made.
    #[error("kernel {kernel}: cannot call hook {hook} {point}: {reason}")]
    Call {
        kernel: String,
        hook: String,
        /// Where: "before the instruction at 0x..", "at the kernel's entry", ...
        point: String,
        reason: String,
    },
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
    /// hooks differ only in the offset, which is set on a copy (building
    /// through the checked builder per hook is the slow part of
    /// instrumenting every instruction).
    atomic: std::cell::Cell<Option<(u16, u16, Instruction)>>,
    setups: std::cell::RefCell<std::collections::HashMap<(u16, u16), [Instruction; 3]>>,
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
        if let Some((data, base, mut i)) = self.atomic.get() {
            if (data, base) == (r.data, r.base) && i.set_modifier(Modifier::Offset(offset as i32)) {
                return Ok(i);
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
        self.atomic.set(Some((r.data, r.base, i)));
        Ok(i)
    }

    /// Sets up `r`: the base address, and data = (1, 0) in one 64-bit move
    /// of the inline constant 1.
    /// Built once per (base, data): the counters' address is the same
    /// for every hook of a rewrite.
    fn setup(&self, r: &Regs, counters: u64) -> Result<Vec<Instruction>, RewriteError> {
        if let Some(code) = self.setups.borrow().get(&(r.base, r.data)) {
            return Ok(code.to_vec());
        }
        let code = [
            self.mov(r.base, counters as u32)?,
            self.mov(r.base + 1, (counters >> 32) as u32)?,
            self.build(
                Encoding::Sop1,
                "s_mov_b64",
                &[Self::sgpr(r.data, 2), Self::konst(1)],
            )?,
        ];
        self.setups.borrow_mut().insert((r.base, r.data), code);
        Ok(code.to_vec())
    }

    /// The code of one hook.
    fn hook(
        &self,
        h: Hook,
        r: &Regs,
        at: &Point,
        out: &mut Vec<Instruction>,
    ) -> Result<(), RewriteError> {
        match h {
            Hook::Count { offset } => out.push(self.atomic_add(r, offset)?),
            Hook::Add { offset, value } => {
                // data = (value, 0) for the atomic (a 32-bit value leaves
                // the high half 0), then (1, 0) again for the hooks that follow.
                self.value_into(value, r.data, false, at, out)?;
                out.push(self.atomic_add(r, offset)?);
                out.push(self.reset_data(r, value.is_64_bit())?);
            }
            Hook::CountLanes { offset } => {
                if at.scc_live {
                    out.push(self.save_scc(r)?);
                }
                out.push(self.build(
                    Encoding::Sop1,
                    "s_bcnt1_i32_b64",
                    &[Self::sgpr(r.data, 1), EXEC],
                )?);
                out.push(self.atomic_add(r, offset)?);
                out.push(self.mov(r.data, 1)?);
                if at.scc_live {
                    out.push(self.restore_scc(r)?);
                }
            }
            Hook::Record { trace, id, value } => {
                let mut code = Code::default();
                if at.scc_live {
                    code.push(self.save_scc(r)?);
                }
                // The value first: it may be EXEC, which the store changes.
                self.value_into(value, r.u, true, at, &mut code.insts)?;
                self.claim(r, trace, SCALAR_RECORD, &mut code)?;
                // Lane 0 alone stores: (value) at 8, then (id, 0) at 0.
                let (pair, off) = at
                    .vgprs
                    .ok_or(RewriteError::NoRegisters { addr: at.addr })?;
                code.push(self.build(Encoding::Sop1, "s_mov_b64", &[Self::sgpr(r.t, 2), EXEC])?);
                code.push(self.build(Encoding::Sop1, "s_mov_b64", &[EXEC, Self::konst(1)])?);
                code.push(self.vmov(off, Self::konst(0))?);
                code.push(self.vmov(pair, Self::sgpr(r.u, 1))?);
                code.push(self.vmov(pair + 1, Self::sgpr(r.u + 1, 1))?);
                code.push(self.store(off, pair, r.data, 8)?);
                code.push(self.vmov(pair, Operand::Literal(id))?);
                code.push(self.vmov(pair + 1, Self::konst(0))?);
                code.push(self.store(off, pair, r.data, 0)?);
                code.push(self.build(Encoding::Sop1, "s_mov_b64", &[EXEC, Self::sgpr(r.t, 2)])?);
                self.finish_record(r, at, code, out)?;
            }
            Hook::RecordLanes { trace, id, value } => {
                let mut code = Code::default();
                if at.scc_live {
                    code.push(self.save_scc(r)?);
                }
                code.branch_to_end(self.build(
                    Encoding::Sopp,
                    "s_cbranch_execz",
                    &[Operand::Imm(0)],
                )?);
                self.claim(r, trace, LANE_RECORD, &mut code)?;
                let (pair, off) = at
                    .vgprs
                    .ok_or(RewriteError::NoRegisters { addr: at.addr })?;
                // Every enabled lane stores the same header: (id, 0) at 0,
                // EXEC at 8; then its own value at 16 + 8 * lane.
                code.push(self.vmov(off, Self::konst(0))?);
                code.push(self.vmov(pair, Operand::Literal(id))?);
                code.push(self.vmov(pair + 1, Self::konst(0))?);
                code.push(self.store(off, pair, r.data, 0)?);
                code.push(self.vmov(
                    pair,
                    Operand::Special {
                        code: 126,
                        count: 1,
                    },
                )?);
                code.push(self.vmov(
                    pair + 1,
                    Operand::Special {
                        code: 127,
                        count: 1,
                    },
                )?);
                code.push(self.store(off, pair, r.data, 8)?);
                let v1 = |n: u16| Operand::Vgpr { first: n, count: 1 };
                let minus_one = Operand::Inline(193);
                code.push(self.build(
                    Encoding::Vop3,
                    "v_mbcnt_lo_u32_b32",
                    &[v1(off), minus_one, Self::konst(0)],
                )?);
                code.push(self.build(
                    Encoding::Vop3,
                    "v_mbcnt_hi_u32_b32",
                    &[v1(off), minus_one, v1(off)],
                )?);
                code.push(self.build(
                    Encoding::Vop2,
                    "v_lshlrev_b32_e32",
                    &[v1(off), Self::konst(3), v1(off)],
                )?);
                self.lane_value_into(value, pair, r, at, &mut code.insts)?;
                code.push(self.store(off, pair, r.data, 16)?);
                self.finish_record(r, at, code, out)?;
            }
        }
        Ok(())
    }

    /// `s_cselect_b32 scc_save, 1, 0`: SCC into an SGPR.
    fn save_scc(&self, r: &Regs) -> Result<Instruction, RewriteError> {
        self.build(
            Encoding::Sop2,
            "s_cselect_b32",
            &[Self::sgpr(r.scc, 1), Self::konst(1), Self::konst(0)],
        )
    }

    /// `s_cmp_lg_u32 scc_save, 0`: SCC back from the SGPR.
    fn restore_scc(&self, r: &Regs) -> Result<Instruction, RewriteError> {
        self.build(
            Encoding::Sopc,
            "s_cmp_lg_u32",
            &[Self::sgpr(r.scc, 1), Self::konst(0)],
        )
    }

    /// data = (1, 0) again after a hook used it for something else.
    fn reset_data(&self, r: &Regs, both: bool) -> Result<Instruction, RewriteError> {
        if both {
            self.build(
                Encoding::Sop1,
                "s_mov_b64",
                &[Self::sgpr(r.data, 2), Self::konst(1)],
            )
        } else {
            self.mov(r.data, 1)
        }
    }

    fn vmov(&self, d: u16, src: Operand) -> Result<Instruction, RewriteError> {
        self.build(
            Encoding::Vop1,
            "v_mov_b32_e32",
            &[Operand::Vgpr { first: d, count: 1 }, src],
        )
    }

    /// `global_store_dwordx2 v_off, v[pair:pair+1], s[base:base+1] offset:at`.
    fn store(&self, off: u16, pair: u16, base: u16, at: i32) -> Result<Instruction, RewriteError> {
        let mut i = self.build(
            Encoding::Global,
            "global_store_dwordx2",
            &[
                Operand::Vgpr {
                    first: off,
                    count: 1,
                },
                Operand::Vgpr {
                    first: pair,
                    count: 2,
                },
                Self::sgpr(base, 2),
            ],
        )?;
        if !i.set_modifier(inlay_isa::Modifier::Offset(at)) {
            return Err(RewriteError::Trace);
        }
        Ok(i)
    }

    /// Puts `v` in SGPR `p` (and `p + 1`: its high half, or 0 when `both`).
    fn value_into(
        &self,
        v: Value,
        p: u16,
        both: bool,
        at: &Point,
        out: &mut Vec<Instruction>,
    ) -> Result<(), RewriteError> {
        let pair = |src: Operand| self.build(Encoding::Sop1, "s_mov_b64", &[Self::sgpr(p, 2), src]);
        let load = |base: u16, offset: u32| {
            self.build(
                Encoding::Smem,
                "s_load_dword",
                &[Self::sgpr(p, 1), Self::sgpr(base, 2), Operand::Imm(offset)],
            )
        };
        match v {
            Value::Const(c) => out.push(self.mov(p, c)?),
            Value::Sgpr(n) => out.push(self.build(
                Encoding::Sop1,
                "s_mov_b32",
                &[Self::sgpr(p, 1), Self::sgpr(n, 1)],
            )?),
            Value::WorkgroupId(d) => {
                let n = at.launch.workgroup_id[usize::from(d)]
                    .ok_or(RewriteError::NotReceived("workgroup id"))?;
                out.push(self.build(
                    Encoding::Sop1,
                    "s_mov_b32",
                    &[Self::sgpr(p, 1), Self::sgpr(n, 1)],
                )?);
            }
            Value::SgprPair(n) => out.push(pair(Self::sgpr(n, 2))?),
            Value::Exec => out.push(pair(EXEC)?),
            Value::Vcc => out.push(pair(Operand::Special {
                code: 106,
                count: 2,
            })?),
            Value::KernArg(offset) | Value::Packet(offset) => {
                let base = match v {
                    Value::KernArg(_) => at.launch.kernarg_segment_ptr,
                    _ => at.launch.dispatch_ptr,
                };
                let base = base.ok_or(RewriteError::NotReceived(launch_name(v)))?;
                out.push(load(base, offset)?);
                // lgkmcnt(0): the loaded value is there before it is used.
                out.push(self.build(Encoding::Sopp, "s_waitcnt", &[Operand::Imm(0xC07F)])?);
            }
        }
        if both && !v.is_64_bit() {
            out.push(self.mov(p + 1, 0)?);
        }
        Ok(())
    }

    /// Puts each enabled lane's `v` in VGPRs `d`, `d + 1`; `r.t` and `r.u`
    /// are free SGPRs (address arithmetic carries into `r.t`).
    fn lane_value_into(
        &self,
        v: LaneValue,
        d: u16,
        r: &Regs,
        at: &Point,
        out: &mut Vec<Instruction>,
    ) -> Result<(), RewriteError> {
        let v1 = |n: u16| Operand::Vgpr { first: n, count: 1 };
        match v {
            LaneValue::Vgpr(n) => {
                out.push(self.vmov(d, v1(n))?);
                out.push(self.vmov(d + 1, Self::konst(0))?);
            }
            LaneValue::VgprPair(n) => {
                out.push(self.vmov(d, v1(n))?);
                out.push(self.vmov(d + 1, v1(n + 1))?);
            }
            LaneValue::Address => {
                let i = at.inst;
                let no = || RewriteError::NoAddress { addr: at.addr };
                let w0 = *i.words().first().ok_or_else(no)?;
                let w1 = *i.words().get(1).ok_or_else(no)?;
                let vaddr = (w1 & 0xff) as u16;
                let saddr = (w1 >> 16 & 0x7f) as u16;
                let (offset, scalar_base) = match i.encoding() {
                    Encoding::Flat => ((w0 & 0xfff) as i32, None),
                    Encoding::Global => (
                        ((w0 & 0x1fff) << 19) as i32 >> 19,
                        (saddr != 0x7f).then_some(saddr),
                    ),
                    _ => return Err(no()),
                };
                let mad = |m: &'static str, a: Operand, b: Operand, c: Operand| {
                    self.build(
                        Encoding::Vop3,
                        m,
                        &[
                            Operand::Vgpr { first: d, count: 2 },
                            Self::sgpr(r.t, 2),
                            a,
                            b,
                            c,
                        ],
                    )
                };
                match scalar_base {
                    // saddr + zero-extended vaddr, in one multiply-add by 1.
                    Some(s) => out.push(mad(
                        "v_mad_u64_u32",
                        v1(vaddr),
                        Self::konst(1),
                        scalar_pair(s),
                    )?),
                    None => {
                        out.push(self.vmov(d, v1(vaddr))?);
                        out.push(self.vmov(d + 1, v1(vaddr + 1))?);
                    }
                }
                if offset != 0 {
                    // The signed offset, sign-extended, added the same way.
                    let o = if (-16..=64).contains(&offset) {
                        Operand::Inline(if offset >= 0 {
                            128 + offset as u8
                        } else {
                            (192 - offset) as u8
                        })
                    } else {
                        out.push(self.mov(r.u, offset as u32)?);
                        Self::sgpr(r.u, 1)
                    };
                    out.push(mad(
                        "v_mad_i64_i32",
                        o,
                        Self::konst(1),
                        Operand::Vgpr { first: d, count: 2 },
                    )?);
                }
            }
        }
        Ok(())
    }

    /// Claims `size` bytes of `trace` (data = the claim's address), or
    /// branches to the end when they are not all within its capacity.
    fn claim(
        &self,
        r: &Regs,
        trace: Trace,
        size: u32,
        code: &mut Code,
    ) -> Result<(), RewriteError> {
        code.push(self.mov(r.data, size)?);
        code.push(self.mov(r.data + 1, 0)?);
        code.push(self.atomic_add_returning(r, trace.cursor)?);
        code.push(self.build(Encoding::Sopp, "s_waitcnt", &[Operand::Imm(0xC07F)])?);
        // Past 4 GiB, or past the capacity less one record: no room.
        code.push(self.build(
            Encoding::Sopc,
            "s_cmp_lg_u32",
            &[Self::sgpr(r.data + 1, 1), Self::konst(0)],
        )?);
        code.branch_to_end(self.build(Encoding::Sopp, "s_cbranch_scc1", &[Operand::Imm(0)])?);
        code.push(self.build(
            Encoding::Sopc,
            "s_cmp_gt_u32",
            &[
                Self::sgpr(r.data, 1),
                Operand::Literal(trace.capacity - size),
            ],
        )?);
        code.branch_to_end(self.build(Encoding::Sopp, "s_cbranch_scc1", &[Operand::Imm(0)])?);
        code.push(self.add_lit("s_add_u32", r.data, trace.records as u32)?);
        code.push(self.add_lit("s_addc_u32", r.data + 1, (trace.records >> 32) as u32)?);
        Ok(())
    }

    /// Ends a record's code: its branches land on the SCC restore (or the
    /// data reset), which every path runs.
    fn finish_record(
        &self,
        r: &Regs,
        at: &Point,
        mut code: Code,
        out: &mut Vec<Instruction>,
    ) -> Result<(), RewriteError> {
        code.end();
        if at.scc_live {
            code.push(self.restore_scc(r)?);
        }
        code.push(self.reset_data(r, true)?);
        code.resolve()?;
        out.extend(code.insts);
        Ok(())
    }

    /// `s_atomic_add_x2 ... glc`: the counter's old value comes back in data.
    /// (The glc bit is set in its bytes, which are decoded again, so the
    /// instruction is whatever the decoder makes of the returning form.)
    fn atomic_add_returning(&self, r: &Regs, offset: u32) -> Result<Instruction, RewriteError> {
        let mut bytes = encode(&self.atomic_add(r, offset)?);
        bytes[2] |= 1; // glc, bit 16 of the first word
        self.decoder.decode(&bytes).map_err(|_| {
            RewriteError::Build(
                "s_atomic_add_x2 glc",
                inlay_isa::BuildError::Unknown("glc".into()),
            )
        })
    }
}

/// The 64-bit scalar operand a 7-bit SGPR field names: an SGPR pair, a
/// trap temporary pair, or VCC and the like.
fn scalar_pair(code: u16) -> Operand {
    match code {
        0..SGPRS => Operand::Sgpr {
            first: code,
            count: 2,
        },
        108..=123 => Operand::Ttmp {
            first: code - 108,
            count: 2,
        },
        _ => Operand::Special {
            code: code as u8,
            count: 2,
        },
    }
}

/// EXEC as a 64-bit scalar operand.
const EXEC: Operand = Operand::Special {
    code: 126,
    count: 2,
};

/// Hook code with forward branches to its end.
#[derive(Default)]
struct Code {
    insts: Vec<Instruction>,
    /// Indices of branches to the end.
    to_end: Vec<usize>,
    end: Option<usize>,
}

impl Code {
    fn push(&mut self, i: Instruction) {
        self.insts.push(i);
    }
    fn branch_to_end(&mut self, i: Instruction) {
        self.to_end.push(self.insts.len());
        self.insts.push(i);
    }
    /// The end is here: before the next instruction pushed.
    fn end(&mut self) {
        self.end = Some(self.insts.len());
    }
    fn resolve(&mut self) -> Result<(), RewriteError> {
        let at: Vec<u64> = self
            .insts
            .iter()
            .scan(0u64, |a, i| {
                let here = *a;
                *a += i.len() as u64;
                Some(here)
            })
            .collect();
        let end_at = match self.end {
            Some(e) if e < at.len() => at[e],
            _ => self.insts.iter().map(|i| i.len() as u64).sum(),
        };
        for &b in &self.to_end {
            self.insts[b]
                .set_branch_target(at[b], end_at)
                .map_err(|e| RewriteError::Build("a branch in hook code", e))?;
        }
        Ok(())
    }
}

/// What hook code knows about the point it runs at.
struct Point<'a> {
    inst: &'a Instruction,
    addr: u64,
    scc_live: bool,
    launch: &'a InitialSgprs,
    /// VGPR pair and single VGPR for records.
    vgprs: Option<(u16, u16)>,
}

fn launch_name(v: Value) -> &'static str {
    match v {
        Value::KernArg(_) => "kernel argument pointer",
        Value::Packet(_) => "dispatch packet pointer",
        _ => "workgroup id",
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
    if let Some(c) = plan.calls.first() {
        return Err(RewriteError::Call {
            kernel: prog.kernel.clone(),
            hook: c.hook.clone(),
            point: format!("{:?}", c.point),
            reason: "calls to compiled hooks are not implemented yet".into(),
        });
    }
    let asm = Asm {
        b: Builder::new(prog.target),
        atomic: std::cell::Cell::new(None),
        setups: Default::default(),
        decoder: inlay_isa::Decoder::new(prog.target),
    };
    let reads_launch = plan.hooks.iter().any(|(_, h)| {
        matches!(
            h.value(),
            Some(Value::KernArg(_) | Value::Packet(_) | Value::WorkgroupId(_))
        )
    });
    let mut launch = Launch::new(an, descriptor, reads_launch);
    let mut hooks: BTreeMap<InstId, Vec<Hook>> = BTreeMap::new();
    // Launch values a hook reads where the kernel may have overwritten them
    // (with the first such instruction, for the error).
    let mut to_save: Vec<(Value, InstId)> = Vec::new();
    for &(i, h) in &plan.hooks {
        if i >= prog.insts.len() {
            return Err(RewriteError::NoInstruction(i));
        }
        check_hook(&h)?;
        if launch.check(&h, i, an)? {
            to_save.extend(h.value().map(|v| (v, i)));
        }
        hooks.entry(i).or_default().push(h);
    }

    let reserved =
        reserve(an, !hooks.is_empty() || has_table_calls(an)).filter(|_| !plan.dead_registers_only);
    // The state the kernel starts with, kept for hooks: launch values it
    // may overwrite are copied at its start into SGPRs above the reserved
    // ones, which nothing else writes, and hooks read them there.
    let saved = match (to_save.first(), reserved) {
        (None, _) => None,
        (Some(&(v, i)), r) => {
            let overwritten = RewriteError::Overwritten {
                what: launch_name(v),
                addr: prog.insts[i].addr,
            };
            let r = r.ok_or_else(|| overwritten.clone())?;
            let values: Vec<Value> = to_save.iter().map(|x| x.0).collect();
            let (layout, copies) = launch.save(&r, &values).ok_or(overwritten)?;
            launch.effective = layout;
            Some(copies)
        }
    };
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
    let needs_preamble = reserved.is_some() && (setup_blocks.is_none() || saved.is_some());
    let mut hook_code: BTreeMap<InstId, Vec<Instruction>> = BTreeMap::new();
    let mut added_by_hooks = 0;
    let mut set_in_block = std::collections::HashSet::new();
    let mut grown_vgpr: Option<u16> = None;
    for (&i, hs) in &hooks {
        let ins = &prog.insts[i];
        let writes_scc = hs.iter().any(Hook::writes_scc);
        let temps = hs.iter().any(Hook::records);
        let lanes = hs.iter().filter_map(Hook::vgprs).max();
        // Registers the hooks read are not theirs to take (a dead one may
        // still be asked for).
        let reads_s: Vec<u16> = hs
            .iter()
            .filter_map(Hook::value)
            .flat_map(|v| launch.sgprs_read(v))
            .collect();
        let reads_v: Vec<u16> = hs
            .iter()
            .filter_map(|h| match h {
                Hook::RecordLanes {
                    value: LaneValue::Vgpr(n),
                    ..
                } => Some([*n, *n]),
                Hook::RecordLanes {
                    value: LaneValue::VgprPair(n),
                    ..
                } => Some([*n, n + 1]),
                _ => None,
            })
            .flatten()
            .collect();
        // Liveness is needed for the registers of hooks without reserved
        // ones, and for SCC around hooks that write it.
        let (mut dead, scc_live) = if reserved.is_none() || writes_scc {
            an.free_sgprs_before(i)
        } else {
            (Vec::new(), false)
        };
        dead.retain(|n| !reads_s.contains(n));
        let per_point_regs = match reserved {
            Some(_) => None,
            None => per_point(&dead, writes_scc && scc_live, temps),
        };
        let borrowing = reserved.is_none() && per_point_regs.is_none();
        let free = (lanes.is_some() || borrowing).then(|| an.free_before(i));
        let no_registers = || RewriteError::NoRegisters { addr: ins.addr };
        let extra = extra_vgprs(an);
        let mut grow = |v: u16| grown_vgpr = grown_vgpr.max(Some(v));
        // VGPRs for records: dead ones, or ones above the allocation.
        let vgprs = match (lanes, &free) {
            (Some(kind), Some(f)) => Some(match pick_vgprs(f, kind, &reads_v) {
                Some(v) => v,
                None => {
                    let e = extra.ok_or_else(no_registers)?;
                    grow(e + 2);
                    (e, e + 2)
                }
            }),
            _ => None,
        };
        let point = Point {
            inst: &ins.inst,
            addr: ins.addr,
            scc_live,
            launch: &launch.effective,
            vgprs,
        };
        let block = ins.block;
        let mut code = Vec::new();
        let regs = match (reserved, &setup_blocks, per_point_regs) {
            (Some(r), Some(sb), _) if sb.contains(&block) && set_in_block.insert(block) => {
                code.extend(asm.setup(&r, plan.counters)?);
                r
            }
            (Some(r), _, _) => r,
            (None, _, Some(r)) => {
                code.extend(asm.setup(&r, plan.counters)?);
                r
            }
            (None, _, None) => {
                // Too few dead SGPRs: borrow them (from s0, past any the
                // hooks read), saving the live ones in lanes of a VGPR dead
                // in every lane, or of one more VGPR above the allocation.
                let width: u16 = if temps { 10 } else { 5 };
                let mut k = 0u16;
                while (k..k + width).any(|n| reads_s.contains(&n)) {
                    k += width.next_multiple_of(2);
                }
                let r = Regs {
                    base: k,
                    data: k + 2,
                    scc: k + 4,
                    t: k + 6,
                    u: k + 8,
                };
                let taken = |v: &u16| vgprs.is_some_and(|(p, o)| [p, p + 1, o].contains(v));
                let v = match free
                    .as_ref()
                    .and_then(|f| f.vgprs.iter().find(|v| !taken(v) && !reads_v.contains(v)))
                {
                    Some(&v) => v,
                    None => {
                        let e = extra.ok_or_else(no_registers)?;
                        grow(e + 3);
                        e + 3
                    }
                };
                let saved: Vec<u16> = (k..k + width).filter(|n| !dead.contains(n)).collect();
                for (lane, &sr) in saved.iter().enumerate() {
                    code.push(asm.lane("v_writelane_b32", v, sr, lane as u8)?);
                }
                code.extend(asm.setup(&r, plan.counters)?);
                for &h in hs {
                    asm.hook(h, &r, &point, &mut code)?;
                }
                for (lane, &sr) in saved.iter().enumerate() {
                    code.push(asm.lane("v_readlane_b32", v, sr, lane as u8)?);
                }
                added_by_hooks += code.len();
                hook_code.insert(i, code);
                continue;
            }
        };
        for &h in hs {
            asm.hook(h, &regs, &point, &mut code)?;
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
    let mut preamble = match reserved {
        Some(r) if needs_preamble => asm.setup(&r, plan.counters)?,
        _ => Vec::new(),
    };
    for &(from, to, count) in saved.iter().flatten() {
        let m = if count == 2 { "s_mov_b64" } else { "s_mov_b32" };
        preamble.push(asm.build(
            Encoding::Sop1,
            m,
            &[Asm::sgpr(to, count), Asm::sgpr(from, count)],
        )?);
    }

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
    // Bytes before each instruction (hook code, call translation), and of
    // the instruction itself as emitted.
    let mut before_bytes = vec![0u64; prog.insts.len()];
    for (&i, c) in &hook_code {
        before_bytes[i] += c.iter().map(|x| x.len() as u64).sum::<u64>();
    }
    for (&i, t) in &translations {
        before_bytes[i] += t.size();
    }
    let mut own_bytes: Vec<u64> = (0..prog.insts.len())
        .map(|i| emits[i].size(&prog.insts[i].inst))
        .collect();
    let (label, new_offset, at) = loop {
        let mut label = vec![0u64; prog.insts.len()];
        let mut new_offset = vec![0u64; prog.insts.len()];
        let mut at: u64 = preamble.iter().map(|i| i.len() as u64).sum();
        for &i in &order {
            label[i] = at;
            at += before_bytes[i];
            new_offset[i] = at;
            at += own_bytes[i];
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
            own_bytes[i] = long_branch_size(&prog.insts[i].inst);
            grew = true;
        }
        if !grew {
            break (label, new_offset, at);
        }
    };
    let uses_reserved = uses_reserved || !long.is_empty();

    let mut code = Vec::with_capacity(at as usize);
    for i in &preamble {
        encode_into(i, &mut code);
    }
    let mut added = preamble.len() + added_by_hooks;
    for &i in &order {
        for h in hook_code.get(&i).into_iter().flatten() {
            encode_into(h, &mut code);
        }
        if let Some(t) = translations.get(&i) {
            let at = code.len() as u64;
            let tc = t.code(&asm, at, &label)?;
            added += tc.len();
            for x in &tc {
                encode_into(x, &mut code);
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
                    encode_into(x, &mut code);
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
                encode_into(&asm.mov(d, pc as u32)?, &mut code);
                inst = asm.mov(d + 1, (pc >> 32) as u32)?;
                added += 1;
            }
        }
        encode_into(&inst, &mut code);
    }
    debug_assert_eq!(code.len() as u64, at);

    let mut kd = *descriptor;
    if let Some(v) = grown_vgpr {
        grow_vgprs(&mut kd, v);
    }
    let last_saved = saved
        .iter()
        .flatten()
        .map(|&(_, to, n)| to + u16::from(n) - 1)
        .max();
    if let Some(r) = reserved.filter(|_| uses_reserved) {
        grow_sgprs(&mut kd, last_saved.unwrap_or(0).max(r.u + 1));
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
        relocations: Vec::new(),
        implicit_args: None,
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
/// pairs, two more pairs (`t`, `u`) for hooks that record, and an SGPR
/// saving SCC if the hook must.
fn per_point(dead: &[u16], save_scc: bool, temps: bool) -> Option<Regs> {
    let mut pairs = dead_pairs(dead);
    let (base, data) = (pairs.next()?, pairs.next()?);
    let (t, u) = if temps {
        (pairs.next()?, pairs.next()?)
    } else {
        (0, 0)
    };
    let scc = if save_scc {
        let taken: &[u16] = if temps {
            &[base, data, t, u]
        } else {
            &[base, data]
        };
        dead_single(dead, taken)?
    } else {
        0
    };
    Some(Regs {
        base,
        data,
        scc,
        t,
        u,
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

/// The first of four VGPRs above everything the kernel allocates (an
/// aligned pair first), when it uses no AGPRs (whose file starts right
/// after the VGPRs on gfx90a) and code can still name them.
fn extra_vgprs(an: &Analysis) -> Option<u16> {
    let r = &an.resources;
    let first = r.vgprs_allocated.next_multiple_of(2);
    (r.agprs_used == 0 && first + 4 <= 256).then_some(first as u16)
}

/// A dead aligned VGPR pair and one more dead VGPR for a record's code,
/// dead in every lane or (`Lanes::Enabled`) in the lanes EXEC enables.
fn pick_vgprs(f: &crate::FreeRegisters, lanes: Lanes, avoid: &[u16]) -> Option<(u16, u16)> {
    let mut candidates: Vec<u16> = f.vgprs.clone();
    if lanes == Lanes::Enabled {
        candidates.extend(&f.vgprs_active_lanes);
        candidates.sort_unstable();
    }
    candidates.retain(|v| !avoid.contains(v));
    let pair = candidates
        .iter()
        .copied()
        .find(|&v| v % 2 == 0 && candidates.contains(&(v + 1)))?;
    let single = candidates
        .iter()
        .copied()
        .find(|&v| v != pair && v != pair + 1)?;
    Some((pair, single))
}

/// Checks what a hook asks for that does not depend on where it is.
fn check_hook(h: &Hook) -> Result<(), RewriteError> {
    if h.offset() > MAX_SMEM_OFFSET - 7 {
        return Err(RewriteError::CounterOffset(h.offset()));
    }
    if let Hook::Record { trace, .. } | Hook::RecordLanes { trace, .. } = h {
        let size = if h.vgprs() == Some(Lanes::All) {
            SCALAR_RECORD
        } else {
            LANE_RECORD
        };
        if trace.cursor % 8 != 0 || trace.records % 8 != 0 || trace.capacity < size {
            return Err(RewriteError::Trace);
        }
    }
    match h.value() {
        Some(Value::Sgpr(n)) if n >= SGPRS => Err(RewriteError::NoSuchSgpr(n)),
        Some(Value::SgprPair(n)) if n % 2 != 0 || n + 1 >= SGPRS => {
            Err(RewriteError::NoSuchSgpr(n))
        }
        Some(Value::KernArg(o) | Value::Packet(o)) if o % 4 != 0 || o > MAX_SMEM_OFFSET => {
            Err(RewriteError::ArgumentOffset(o))
        }
        Some(Value::WorkgroupId(d)) if d > 2 => Err(RewriteError::NotReceived("workgroup id")),
        _ => match h {
            Hook::RecordLanes {
                value: LaneValue::Vgpr(n),
                ..
            } if *n > 255 => Err(RewriteError::NoSuchSgpr(*n)),
            Hook::RecordLanes {
                value: LaneValue::VgprPair(n),
                ..
            } if *n > 254 => Err(RewriteError::NoSuchSgpr(*n)),
            _ => Ok(()),
        },
    }
}

/// A copy of SGPRs the preamble makes: (from, to, count).
type SgprCopy = (u16, u16, u8);

/// Where the launch values a hook may read are, and whether they are still
/// there at a given instruction: always before the kernel's first one;
/// elsewhere in the kernel only if no instruction of the program (callees
/// included) writes their SGPRs and it calls no code this cannot see.
struct Launch {
    init: InitialSgprs,
    /// Where hooks find them: `init`, or copies the preamble makes.
    effective: InitialSgprs,
    entry: Option<InstId>,
    /// SGPRs some instruction writes (all of them after an opaque call).
    written: Vec<bool>,
}

impl Launch {
    /// `check_writes`: whether any hook reads a launch value (finding the
    /// SGPRs the program writes costs a pass over it).
    fn new(an: &Analysis, descriptor: &KernelDescriptor, check_writes: bool) -> Launch {
        let prog = &an.program;
        let init = descriptor
            .decode(inlay_codeobj::target::Family::Gfx90a, false)
            .initial_sgprs();
        let entry = prog
            .functions
            .first()
            .and_then(|f| prog.inst_at(0, f.entry));
        let opaque = prog
            .calls
            .iter()
            .any(|c| matches!(c.callee, Callee::External(_) | Callee::Unresolved));
        let mut written = vec![opaque; SGPRS as usize];
        for ins in prog.insts.iter().filter(|_| check_writes) {
            for u in inlay_isa::info(&ins.inst).used_registers() {
                if u.access.writes() && u.register.file == inlay_isa::RegFile::Sgpr {
                    let r = u.register;
                    for n in r.first..r.first + u16::from(r.count) {
                        if let Some(w) = written.get_mut(n as usize) {
                            *w = true;
                        }
                    }
                }
            }
        }
        Launch {
            init,
            effective: init,
            entry,
            written,
        }
    }

    /// A layout with `values` moved to SGPRs above `r` (aligned pairs for
    /// pointers), and the copies (from, to, count) that put them there.
    fn save(&self, r: &Regs, values: &[Value]) -> Option<(InitialSgprs, Vec<SgprCopy>)> {
        let mut layout = self.init;
        let mut copies = Vec::new();
        let mut next = (r.u + 2).next_multiple_of(2);
        let mut place = |slot: &mut Option<u16>, count: u16| -> Option<()> {
            let from = (*slot)?;
            if copies.iter().any(|&(f, _, _)| f == from) {
                return Some(());
            }
            let to = if count == 2 {
                next.next_multiple_of(2)
            } else {
                next
            };
            if to + count > SGPRS {
                return None;
            }
            next = to + count;
            copies.push((from, to, count as u8));
            *slot = Some(to);
            Some(())
        };
        for v in values {
            match *v {
                Value::KernArg(_) => place(&mut layout.kernarg_segment_ptr, 2)?,
                Value::Packet(_) => place(&mut layout.dispatch_ptr, 2)?,
                Value::WorkgroupId(d) => place(layout.workgroup_id.get_mut(usize::from(d))?, 1)?,
                _ => {}
            }
        }
        Some((layout, copies))
    }

    /// SGPRs `v` reads.
    fn sgprs_read(&self, v: Value) -> Vec<u16> {
        let pair = |n: Option<u16>| n.map_or(Vec::new(), |n| vec![n, n + 1]);
        match v {
            Value::Sgpr(n) => vec![n],
            Value::SgprPair(n) => vec![n, n + 1],
            Value::KernArg(_) => pair(self.effective.kernarg_segment_ptr),
            Value::Packet(_) => pair(self.effective.dispatch_ptr),
            Value::WorkgroupId(d) => self
                .effective
                .workgroup_id
                .get(usize::from(d))
                .copied()
                .flatten()
                .into_iter()
                .collect(),
            Value::Const(_) | Value::Exec | Value::Vcc => Vec::new(),
        }
    }

    /// Whether `h` before `i` reads a launch value that must be saved at
    /// the kernel's start (the kernel may overwrite it first); an error if
    /// the kernel does not receive it at all.
    fn check(&self, h: &Hook, i: InstId, an: &Analysis) -> Result<bool, RewriteError> {
        let Some(v @ (Value::KernArg(_) | Value::Packet(_) | Value::WorkgroupId(_))) = h.value()
        else {
            return Ok(false);
        };
        let sgprs = self.sgprs_read(v);
        if sgprs.is_empty() {
            return Err(RewriteError::NotReceived(launch_name(v)));
        }
        let prog = &an.program;
        let in_kernel = prog.blocks[prog.insts[i].block].function == 0;
        let kept = in_kernel && sgprs.iter().all(|&n| !self.written[n as usize]);
        Ok(Some(i) != self.entry && !kept)
    }
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
