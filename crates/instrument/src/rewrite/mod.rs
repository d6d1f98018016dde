//! Rewriting a lifted kernel with hooks: hook code inserted before chosen
//! instructions (and after them, and at the kernel's entry, for calls to
//! compiled hooks), the kernel and the device functions it calls laid out
//! anew in one block of code, branches re-aimed, PC-relative computations
//! kept pointing where they pointed, and the kernel descriptor grown for
//! the registers, initial state and private memory the hooks use.
//!
//! Every hook goes through the same steps, each in a module of its own:
//! the kernel's launch state hooks need, with the preamble that keeps it and
//! the descriptor (`preamble`); registers free at a point — dead there and
//! not held for the whole kernel — or SGPRs held for it (`regs`); the
//! hook's code: built-in counting and records (`builtin`), a call to a
//! compiled hook (`call`, see [`crate::hooks`]) or the compiled hook's
//! own code placed inline on registers dead at the point (`inline`), as
//! snippets (`snippet`) built with `asm`; wait states the hardware does
//! not enforce, padded with `s_nop` inside each snippet and at the seams
//! between inserted and application code ([`hazards`]); and the layout
//! with branch relaxation (`layout`).
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

mod asm;
mod builtin;
mod call;
pub mod hazards;
mod inline;
mod layout;
mod preamble;
mod regs;
mod simplify;
mod snippet;

use std::collections::BTreeMap;

use inlay_codeobj::KernelDescriptor;
use inlay_isa::{encode_into, Encoding, Instruction, Operand, Target};

use crate::hooks::{HookCall, HookModule};
use crate::lift::{Callee, InstId};
use crate::Analysis;

use asm::Asm;
use builtin::{check_hook, launch_name, Point};
use call::Site;
use layout::{call_pair, long_branch_size, plan_emits, sdst, Emit, Translation};
use preamble::{grow_sgprs, grow_vgprs, Launch};
use regs::{
    blocks_setting_registers, extra_vgprs, has_table_calls, long_branch_regs, max_sgpr, per_point,
    per_point_translation, pick_vgprs, reserve, Regs,
};

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
    /// Bytes of private memory per lane the dispatch gives the kernel (its
    /// AQL packet's `private_segment_size`), when known: the
    /// instrumentation stack starts past it and past the kernel's own
    /// fixed size. Needed to call hooks that use private memory from a
    /// kernel whose stack size is only known at run time.
    pub private_segment_size: Option<u32>,
    /// Save, around every call, every register the calling convention lets
    /// a callee clobber (within the kernel's allocation) instead of the
    /// ones live at the point and clobbered by the hook: the baseline the
    /// engine's register finding is measured against.
    pub save_all_clobberable: bool,
    /// Inlined hooks take no dead SGPR: every SGPR they need is borrowed
    /// from a live one and put back (to exercise that path; slower).
    pub inline_borrowing: bool,
}

/// A relocation the loader applies to the rewritten code: the 32-bit word
/// at `offset` (from the start of [`Rewritten::code`]) gets the low
/// (`high` false) or high half of `S + addend - P`, `S` the address of
/// `symbol`, `P` the word's (`R_AMDGPU_REL32_LO` / `_HI`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeReloc {
    pub offset: u64,
    /// Index of the symbol in [`Rewritten::symbols`] (a call at every
    /// instruction makes two relocations per call, naming few symbols).
    pub symbol: u32,
    pub high: bool,
    pub addend: i64,
}

/// Relocations being collected, with the names they refer to (each once),
/// at offsets in a buffer whose code starts `base` bytes in.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Relocations {
    list: Vec<CodeReloc>,
    symbols: Vec<std::sync::Arc<str>>,
    base: u64,
}

impl Relocations {
    pub(super) fn with_capacity(n: usize, base: usize) -> Relocations {
        Relocations {
            list: Vec::with_capacity(n),
            symbols: Vec::new(),
            base: base as u64,
        }
    }

    pub(super) fn push(
        &mut self,
        offset: u64,
        symbol: &std::sync::Arc<str>,
        high: bool,
        addend: i64,
    ) {
        let symbol = self.symbol(symbol);
        self.list.push(CodeReloc {
            offset: offset - self.base,
            symbol,
            high,
            addend,
        });
    }

    /// The index of `name`, added if new. There are few names (the hooks,
    /// the table entries of their modules): found by address first, as
    /// most relocations share the name their copy's template was built
    /// with, then by text.
    fn symbol(&mut self, name: &std::sync::Arc<str>) -> u32 {
        let known = (self.symbols.iter())
            .position(|n| std::sync::Arc::ptr_eq(n, name))
            .or_else(|| self.symbols.iter().position(|n| **n == **name));
        let k = known.unwrap_or_else(|| {
            self.symbols.push(name.clone());
            self.symbols.len() - 1
        });
        k as u32
    }
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

/// Rewritten code (it derefs to its bytes), in a buffer with
/// [`Code::HEADROOM`] bytes before it: the code object writer puts its
/// headers there and the rest after the code, rather than copying the code
/// (megabytes with a hook at every instruction).
#[derive(Debug)]
pub struct Code(Vec<u8>);

impl Clone for Code {
    /// A copy with the same room after the code.
    fn clone(&self) -> Code {
        let mut buf = Vec::with_capacity(self.0.capacity());
        buf.extend_from_slice(&self.0);
        Code(buf)
    }
}

impl Code {
    /// Bytes before the code: a page, the code's place in the code object.
    pub const HEADROOM: usize = 0x1000;

    /// The buffer, headroom included.
    pub(crate) fn into_buffer(self) -> Vec<u8> {
        self.0
    }
}

impl std::ops::Deref for Code {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0[Self::HEADROOM..]
    }
}

/// The rewritten kernel.
#[derive(Debug, Clone)]
pub struct Rewritten {
    /// Its code: the kernel's entry first, then the device functions.
    pub code: Code,
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
    /// The symbols the relocations name, each once.
    pub symbols: Vec<std::sync::Arc<str>>,
    /// An implicit-argument block the host must fill before each dispatch.
    pub implicit_args: Option<ImplicitArgs>,
    /// Calls to compiled hooks placed inline rather than called.
    pub inlined: usize,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum RewriteError {
    #[error("counter offset {0:#x} does not fit a scalar memory offset (20 bits)")]
    CounterOffset(u32),
    /// A limit of the register file: the kernel leaves no VGPR to grow into.
    #[error("no registers for hook code before the instruction at {addr:#x}: too few SGPRs are dead there, no VGPR is dead in every lane, and the kernel leaves fewer than four VGPRs of the register file above its own (AGPRs included)")]
    NoRegisters { addr: u64 },
    #[error("the call through a pointer at {addr:#x} needs two dead SGPR pairs to find its callee's new address, and too few SGPRs are dead there")]
    NoTranslationRegisters { addr: u64 },
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

/// Why calls to `hook` cannot be inlined anywhere (its code does not allow
/// it: see the inliner's module), or `None` when they can be where
/// registers allow.
pub fn inline_refusal(hook: &crate::hooks::HookInfo) -> Option<String> {
    inline::Body::new(hook).err()
}

/// Largest offset `s_atomic_*` takes as an immediate on gfx9.
const MAX_SMEM_OFFSET: u32 = (1 << 20) - 1;

/// SGPRs gfx90a code can name (s0..s101).
const SGPRS: u16 = 102;

/// First SGPR a callee must preserve under LLVM's AMDGPU calling convention
/// (s30-s33 hold the return address, stack and frame pointers).
const FIRST_SAFE_ACROSS_CALLS: u16 = 34;

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
    let asm = Asm::new(prog.target);
    // Room, once, for the facts of the kernel's distinct encodings (about
    // a third of its instructions) and of the inserted code: a facts
    // table that grows copies hundreds of bytes per entry into new pages.
    asm.facts.borrow_mut().reserve(prog.insts.len() / 2);
    // Calls: checked, and the launch values they need kept, in homes the
    // preamble fills (registers nothing else may take).
    let calls = call::Calls::new(an, descriptor, plan, &asm)?;
    let reads_launch = plan.hooks.iter().any(|(_, h)| {
        matches!(
            h.value(),
            Some(Value::KernArg(_) | Value::Packet(_) | Value::WorkgroupId(_))
        )
    });
    let mut launch = Launch::new(an, descriptor, reads_launch, &calls.clobbered_sgprs());
    // The SGPRs hooks read (launch values where the kernel receives them,
    // application SGPRs) are no hook's registers: the kernel may leave them
    // dead (a workgroup id read once at its start) or never name them at
    // all (an initial SGPR it ignores), and hook code anywhere before the
    // read must not take them.
    let read_by_hooks = launch.sgprs_read_by(plan.hooks.iter().filter_map(|(_, h)| h.value()));
    let mut taken = calls.taken();
    for &n in &read_by_hooks {
        taken.insert(n);
    }
    let avail = regs::Free { an, taken };
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

    let reserved = reserve(
        an,
        !hooks.is_empty() || has_table_calls(an),
        calls
            .sgpr_floor()
            .max(read_by_hooks.iter().max().map_or(0, |&n| n + 1)),
    )
    .filter(|_| !plan.dead_registers_only);
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
            avail.sgprs_before(i)
        } else {
            (Vec::new(), false)
        };
        dead.retain(|n| !reads_s.contains(n));
        let per_point_regs = match reserved {
            Some(_) => None,
            None => per_point(&dead, writes_scc && scc_live, temps),
        };
        let borrowing = reserved.is_none() && per_point_regs.is_none();
        let free = (lanes.is_some() || borrowing).then(|| avail.before(i));
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
                    code.push(asm.writelane(v, Asm::sgpr(sr, 1), lane as u8)?);
                }
                code.extend(asm.setup(&r, plan.counters)?);
                for &h in hs {
                    asm.hook(h, &r, &point, &mut code)?;
                }
                for (lane, &sr) in saved.iter().enumerate() {
                    code.push(asm.readlane(Asm::sgpr(sr, 1), v, lane as u8)?);
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
        let free = avail.before(c.inst);
        let regs = match reserved {
            Some(r) => r,
            None => per_point_translation(&free.sgprs, free.scc_live).ok_or(
                RewriteError::NoTranslationRegisters {
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
    // Calls, on registers neither the homes nor the built-in hooks' SGPRs
    // for the whole kernel take.
    let mut held = crate::RegSet::new();
    if let Some(r) = reserved {
        held.insert_range(r.base, r.u + 2 - r.base);
    }
    for &(_, to, n) in saved.iter().flatten() {
        held.insert_range(to, u16::from(n));
    }
    let mut placed = calls.place(&asm, held, plan.save_all_clobberable, plan.inline_borrowing)?;
    let mut emits = emits;
    let scalar_stores = placed
        .instructions()
        .chain(&calls.preamble().insts)
        .chain(hook_code.values().flatten())
        .any(is_scalar_store);
    if scalar_stores {
        for (i, ins) in prog.insts.iter().enumerate() {
            if ins.inst.mnemonic() == "s_endpgm" {
                emits[i] = Emit::WritebackEnd;
            }
        }
    }
    let call_insts = placed.insts();
    added_by_hooks += call_insts;
    // The preamble: the calls' launch state first (it puts the kernel's
    // initial registers back where the rest expects them), then the
    // built-in hooks' registers and copies.
    let mut preamble = calls.preamble().clone();
    if let Some(r) = reserved.filter(|_| needs_preamble) {
        preamble.extend(asm.setup(&r, plan.counters)?);
    }
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
    let mut order: Vec<InstId> = Vec::with_capacity(prog.insts.len());
    for f in &prog.functions {
        for b in f.blocks.clone() {
            order.extend(prog.blocks[b].insts.clone());
        }
    }
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
    for (i, b) in before_bytes.iter_mut().enumerate() {
        *b += placed.at(Site::Before(i)).bytes();
    }
    // Wait states the hardware does not enforce, at the seams of the
    // inserted code (see `hazards`): nops at the start of each inserted
    // sequence and right before each application instruction.
    let facts = std::mem::take(&mut placed.facts);
    let seams = Seams::plan(an, &order, &preamble, &hook_code, &placed, facts);
    for (i, b) in before_bytes.iter_mut().enumerate() {
        *b +=
            seams.bytes(Seams::head(i)) + seams.bytes(Seams::mid(i)) + seams.bytes(Seams::tail(i));
    }
    added_by_hooks += seams.nops();
    // Calls after an instruction sit between it and the next one's label:
    // what follows the label is the instruction itself and those.
    let after_bytes: Vec<u64> = (0..prog.insts.len())
        .map(|i| placed.at(Site::After(i)).bytes() + seams.bytes(Seams::after(i)))
        .collect();
    let mut tail_bytes: Vec<u64> = (0..prog.insts.len())
        .map(|i| emits[i].size(&prog.insts[i].inst) + after_bytes[i])
        .collect();
    let head: u64 = preamble.insts.iter().map(|i| i.len() as u64).sum::<u64>()
        + seams.bytes(Seams::ENTRY)
        + placed.at(Site::Entry).bytes();
    // (Only branches can grow.)
    let branches: Vec<(InstId, InstId)> = order
        .iter()
        .filter_map(|&i| match emits[i] {
            Emit::Branch { target } => Some((i, target)),
            _ => None,
        })
        .collect();
    let mut label = vec![0u64; prog.insts.len()];
    let at = loop {
        let mut at: u64 = head;
        for &i in &order {
            label[i] = at;
            at += before_bytes[i] + tail_bytes[i];
        }
        let mut grew = false;
        for &(i, target) in &branches {
            let from = label[i] + before_bytes[i];
            let delta = (label[target] as i64 - from as i64 - 4) / 4;
            let fits = (-32768..=32767).contains(&delta) && !plan.all_branches_long;
            if long.contains_key(&i) || fits {
                continue;
            }
            let regs = match reserved {
                Some(r) => r,
                None => long_branch_regs(&avail, i, target).ok_or(RewriteError::BranchRange {
                    addr: prog.insts[i].addr,
                })?,
            };
            long.insert(i, regs);
            tail_bytes[i] = long_branch_size(&prog.insts[i].inst) + after_bytes[i];
            grew = true;
        }
        if !grew {
            break at;
        }
    };
    // (Blocks partition the instructions: every one is in `order`.)
    debug_assert_eq!(order.len(), prog.insts.len());
    let new_offset: Vec<u64> = label
        .iter()
        .zip(&before_bytes)
        .map(|(l, b)| l + b)
        .collect();
    let uses_reserved = uses_reserved || !long.is_empty();

    // The code after the headroom; room after it for the rest of the code
    // object (a relocation takes 24 bytes; the metadata note, symbols and
    // headers mostly fit in a page).
    let relocs = preamble.relocs.len() + placed.relocations();
    let mut code = Vec::with_capacity(Code::HEADROOM + at as usize + 24 * relocs + 0x4000);
    code.resize(Code::HEADROOM, 0);
    let here = |code: &Vec<u8>| (code.len() - Code::HEADROOM) as u64;
    let mut relocations = Relocations::with_capacity(relocs, Code::HEADROOM);
    preamble.encode(&mut code, &mut relocations);
    seams.put(prog.target, Seams::ENTRY, &mut code);
    placed.at(Site::Entry).encode(&mut code, &mut relocations);
    let mut added = preamble.insts.len() + added_by_hooks;
    for &i in &order {
        seams.put(prog.target, Seams::head(i), &mut code);
        if let Some(hook) = hook_code.get(&i) {
            for h in hook {
                encode_into(h, &mut code);
            }
        }
        seams.put(prog.target, Seams::mid(i), &mut code);
        placed
            .at(Site::Before(i))
            .encode(&mut code, &mut relocations);
        if let Some(t) = translations.get(&i) {
            let at = here(&code);
            let tc = t.code(&asm, at, &label)?;
            added += tc.len();
            for x in &tc {
                encode_into(x, &mut code);
            }
            debug_assert_eq!(here(&code) - at, t.size());
        }
        seams.put(prog.target, Seams::tail(i), &mut code);
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
            Emit::WritebackEnd => {
                encode_into(&asm.build(Encoding::Smem, "s_dcache_wb", &[])?, &mut code);
                added += 1;
            }
            Emit::MaterializePc { d, pc } => {
                // Literals whatever the halves' values: the layout gave
                // these two moves 16 bytes (an inline constant is 4 fewer).
                encode_into(&asm.mov_lit(d, pc as u32)?, &mut code);
                inst = asm.mov_lit(d + 1, (pc >> 32) as u32)?;
                added += 1;
            }
        }
        encode_into(&inst, &mut code);
        seams.put(prog.target, Seams::after(i), &mut code);
        placed
            .at(Site::After(i))
            .encode(&mut code, &mut relocations);
    }
    debug_assert_eq!(here(&code), at);

    let mut kd = calls.descriptor();
    let highest_vgpr = grown_vgpr.max((call_insts > 0).then_some(placed.max_vgpr));
    grow_vgprs(&mut kd, an, highest_vgpr, placed.agprs);
    if call_insts > 0 {
        grow_sgprs(&mut kd, placed.max_sgpr);
    }
    if let Some(size) = placed.private_size {
        kd.private_segment_fixed_size = kd.private_segment_fixed_size.max(size);
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
        code: Code(code),
        descriptor: kd,
        added,
        added_by_hooks,
        preamble: preamble.insts.len(),
        new_offset,
        calls_to_original,
        relocations: relocations.list,
        symbols: relocations.symbols,
        implicit_args: placed.implicit_block.then_some(ImplicitArgs {
            size: crate::hooks::IMPLICIT_ARGS_V5 as u32,
        }),
        inlined: placed.inlined,
    })
}

/// Nops for hazards at the seams of inserted code: a slot before the entry
/// calls, and for each instruction slots before its built-in hooks (at its
/// label), before the calls placed before it, right before it, and before
/// the calls placed after it; wait states per slot.
struct Seams {
    pads: Vec<u32>,
}

impl Seams {
    const ENTRY: usize = 0;
    fn head(i: InstId) -> usize {
        1 + 4 * i
    }
    fn mid(i: InstId) -> usize {
        2 + 4 * i
    }
    fn tail(i: InstId) -> usize {
        3 + 4 * i
    }
    fn after(i: InstId) -> usize {
        4 + 4 * i
    }

    /// Bytes of slot `s`'s nops.
    #[inline(always)]
    fn bytes(&self, s: usize) -> u64 {
        4 * u64::from(self.pads[s].div_ceil(8))
    }

    /// Appends slot `s`'s nops to `code` (most slots take none: only that
    /// is checked inline).
    #[inline(always)]
    fn put(&self, t: Target, s: usize, code: &mut Vec<u8>) {
        if self.pads[s] > 0 {
            self.put_nops(t, s, code);
        }
    }

    fn put_nops(&self, t: Target, s: usize, code: &mut Vec<u8>) {
        for n in hazards::nops(t, self.pads[s]) {
            encode_into(&n, code);
        }
    }

    /// Instructions the pads take.
    fn nops(&self) -> usize {
        self.pads.iter().map(|&p| p.div_ceil(8) as usize).sum()
    }

    /// Lays the stream out as the rewrite will (long branches and call
    /// translations, scalar code with no hazard of its own, left out: they
    /// only add distance) and finds the pads.
    fn plan(
        an: &Analysis,
        order: &[InstId],
        preamble: &snippet::Snippet,
        hook_code: &BTreeMap<InstId, Vec<Instruction>>,
        placed: &call::Placed<'_>,
        mut table: hazards::FactsTable,
    ) -> Seams {
        use hazards::Run;
        let prog = &an.program;
        let (forms, form_of) = prog.forms();
        // Each call sequence a run, its instructions' facts found once.
        let runs: Vec<Run> = placed
            .templates()
            .iter()
            .map(|t| {
                // (Ids found when the snippet was padded, in this table.)
                let ids: Vec<u32> = if t.ids.len() == t.code.len() {
                    t.ids.clone()
                } else {
                    t.code.iter().map(|i| table.id(i)).collect()
                };
                debug_assert!(
                    t.code.iter().zip(&ids).all(|(i, &id)| table.id(i) == id),
                    "a template's kept facts ids are not its instructions'"
                );
                Run::new(ids, &table.briefs)
            })
            .collect();
        let mut nodes = hazards::Nodes::new(8 * prog.insts.len(), prog.blocks.len());
        for inst in &preamble.insts {
            nodes.inst(table.id(inst), true, &table.briefs);
        }
        nodes.slot(Self::ENTRY);
        for t in placed.at(Site::Entry).template_ids() {
            nodes.run(t as u32, &runs);
        }
        let mut block_end = vec![0; prog.blocks.len()];
        let mut form_facts = vec![u32::MAX; forms.list.len()];
        for &i in order {
            let ins = &prog.insts[i];
            let b = ins.block;
            if prog.blocks[b].insts.start == i {
                nodes.block(b);
            }
            // (A slot another follows with nothing between pads nothing:
            // head, mid and after are left out where no code follows them.)
            if let Some(code) = hook_code.get(&i) {
                nodes.slot(Self::head(i));
                for inst in code {
                    nodes.inst(table.id(inst), true, &table.briefs);
                }
            }
            let before = placed.at(Site::Before(i));
            if before.template_ids().next().is_some() {
                nodes.slot(Self::mid(i));
                for t in before.template_ids() {
                    nodes.run(t as u32, &runs);
                }
            }
            nodes.slot(Self::tail(i));
            // (Facts found once per distinct encoding, not looked up per
            // instruction nor in the table.)
            let facts = match form_of.get(i).and_then(|&k| form_facts.get_mut(k as usize)) {
                Some(f) if *f != u32::MAX => *f,
                Some(f) => {
                    *f = table.add(&ins.inst, prog.used_registers(i));
                    *f
                }
                None => table.id_with(&ins.inst, prog.used_registers(i)),
            };
            nodes.inst(facts, false, &table.briefs);
            let after = placed.at(Site::After(i));
            if after.template_ids().next().is_some() {
                nodes.slot(Self::after(i));
                for t in after.template_ids() {
                    nodes.run(t as u32, &runs);
                }
            }
            block_end[b] = nodes.len();
        }
        let (nodes, tails) = nodes.finish();
        let kernel_entry = prog
            .functions
            .first()
            .and_then(|f| prog.inst_at(0, f.entry));
        let flow = hazards::Flow {
            block_end,
            preds: prog.blocks.iter().map(|b| b.preds.as_slice()).collect(),
            linear_entry: prog
                .blocks
                .iter()
                .map(|b| Some(b.insts.start) == kernel_entry)
                .collect(),
        };
        // (Each distinct encoding looked at once.)
        let mfma = forms.list.iter().any(|f| {
            let name = f.inst.mnemonic();
            name.starts_with("v_mfma") || name.starts_with("v_smfmac")
        });
        let slots = 1 + 4 * prog.insts.len();
        // Pairs inside one sequence were padded when its snippet was
        // resolved; the seam check test finds none left.
        let stream = hazards::Stream {
            nodes: &nodes,
            facts: &table.facts,
            briefs: &table.briefs,
            runs: &runs,
            flow: &flow,
            tails: Some(&tails),
        };
        let pads = hazards::pad(prog.target, &stream, slots, mfma);
        Seams { pads }
    }
}

/// Whether `i` writes memory through the scalar cache (a store or atomic).
fn is_scalar_store(i: &Instruction) -> bool {
    let n = i.mnemonic();
    i.encoding() == Encoding::Smem && (n.contains("store") || n.contains("atomic"))
}
