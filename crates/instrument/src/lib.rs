//! The instrumentation engine: lifting a kernel into functions, basic
//! blocks and a call graph, register liveness at every instruction (aware
//! of EXEC masking and calls), then rewriting it with hooks and emitting the
//! result as a code object.
//!
//! The path: [`analyse`] (lift + liveness) → [`counting::plan`] (which
//! blocks need a counting hook; the rest follow from flow conservation) →
//! [`rewrite::rewrite`] (hooks inserted on registers dead at their point or
//! never used by the kernel, code laid out anew with branches and
//! PC-relative computations fixed) → [`emit::code_object`] (a code object
//! holding the rewritten kernel, loadable beside the original). The
//! `inlay-tools` crate drives it from the HSA runtime.
//!
//! Hooks are of two kinds, placed by the same steps (the point, registers
//! free there, the code, the layout). Built-in ones ([`rewrite::Hook`])
//! count (once per wave, or the lanes EXEC enables), add a value to a
//! counter, or append a record to a trace buffer through an atomic cursor:
//! a value per wave (constants, SGPRs, EXEC, VCC, kernel arguments,
//! dispatch-packet fields, workgroup ids) or per lane (VGPRs, the address a
//! FLAT/GLOBAL instruction accesses). Compiled ones ([`hooks`]) are device
//! functions of a code object a tool builds with clang; the kernel calls
//! them under AMDGPU's calling convention at any point, with arguments,
//! saving only what is live there and changed by the hook.
//!
//! # Model
//! [`lift()`] starts at a kernel's entry and decodes by recursive descent
//! (fall-through, SOPP branches, call targets), so nothing that is not code
//! is ever decoded. The result, a [`Program`], holds:
//! - [`Function`]s: the kernel (index 0) and every device function it can
//!   reach through `s_swappc_b64` calls and `s_setpc_b64` tail calls;
//! - [`Block`]s with successor/predecessor edges and how each ends
//!   ([`Exit`]: fall-through, branch, conditional branch, `s_endpgm`,
//!   return, tail call, unresolved jump); calls do not end blocks;
//! - [`CallSite`]s: direct calls (`s_getpc_b64` + `s_add_u32`/`s_addc_u32`
//!   with literal offsets or `R_AMDGPU_REL32_LO/HI` relocations), calls
//!   through a pointer loaded from a known address (GOT entry, relocated data
//!   word), calls through a table indexed at run time (every entry of the
//!   data symbol becomes a possible callee), external symbols, and
//!   unresolved targets.
//!
//! Addresses are virtual addresses in linked code objects; in relocatable
//! ones (`.o`), a section's file offset plus the offset inside it.
//!
//! # Liveness and EXEC
//! A VALU or vector-memory write reaches only the lanes EXEC enables; the
//! other lanes keep their old value. Treating such a write as killing the
//! register (as ordinary scalar dataflow would) is wrong: in
//! ```text
//!     v_mov_b32 v1, 1
//!     s_and_saveexec_b64 s[6:7], vcc   ; some lanes off
//!     v_mov_b32 v1, 2                  ; writes only the lanes still on
//!     s_or_b64 exec, exec, s[6:7]      ; all lanes back
//!     global_store_dword v[2:3], v1, off
//! ```
//! `v1` is live before the second `v_mov`: the switched-off lanes still need
//! the `1`. The rule chosen here keeps two sets per program point
//! ([`Live`]): `active` (needed later in lanes enabled here, plus all live
//! scalar registers) and `inactive` (vector registers needed later in lanes
//! disabled here). A vector write kills only in `active`; an EXEC write
//! re-expresses the sets in the lanes before it: when it can only narrow
//! EXEC (`s_and_saveexec_b64`, `s_andn2_b64 exec, exec, …`, `v_cmpx_*`) the
//! lanes enabled before may be disabled after, so `inactive` joins `active`;
//! when it can only widen EXEC (`s_or_b64 exec, exec, …`,
//! `s_or_saveexec_b64`, `s_mov_b64 exec, -1`) the lanes disabled before may
//! be enabled after, so `active` vector registers join `inactive`;
//! `s_andn2_saveexec_b64` (EXEC = S0 & ~EXEC, LLVM's switch to an `else`
//! side) enables only lanes that were off: before it, `active` is the
//! vector part of `inactive` after it, and `active` after it joins
//! `inactive`; any other EXEC write does both of the first two. Reads that
//! can see disabled lanes (DPP, `v_readlane`, `ds_swizzle`/`ds_permute`/
//! `ds_bpermute`) count in both sets.
//!
//! Why this rule rather than "vector writes never kill unless EXEC is
//! provably full": it is as safe (a register is reported dead only if no
//! lane's value is needed), it needs no forward analysis of EXEC values, and
//! it stays precise inside divergent regions (a temporary written and read
//! inside one side of a branch is dead before its write there), where almost
//! all of a typical kernel's code runs. It relies only on the direction of
//! each EXEC write, which the instruction's semantics give.
//!
//! In the kernel's prologue — every point that no path from the entry
//! reaches through an EXEC write or a call — `inactive` is empty: lanes EXEC
//! disables at launch have never been enabled, hence never written, so no
//! later read can need their values there. (This makes a VGPR defined in the
//! prologue dead before its definition even when later code switches lanes
//! off and on.)
//!
//! Operands the def/use tables cannot pin down are read conservatively:
//! `s_movrels*`/`v_movrels*` read a register M0 past the named one, so they
//! count as reading every register of that file from the named one up, and
//! `*_movreld` writes kill nothing; the same holds for VGPR operands of
//! instructions between `s_set_gpr_idx_on` and `s_set_gpr_idx_off` (for a
//! whole function if a block ends with the mode still on).
//!
//! Scalar registers (SGPRs, VCC, SCC, EXEC, M0, TTMPs, FLAT_SCRATCH) follow
//! ordinary backward dataflow and are exact: a plain write kills, a
//! read-modify-write (`s_addc_u32`'s SCC, `s_cmov`) does not. VALU writes of
//! SGPRs/VCC (compares, carries) are full writes: lanes EXEC disables get 0.
//!
//! Calls use the callee's summary, computed over the call graph to a
//! fixpoint: per register, the effect of a callee from its return to its
//! entry distributes over union, so three solutions of the callee (return
//! state empty, all-active, all-inactive) give it exactly ([`Summary`]).
//! Unresolved and external callees follow LLVM's AMDGPU calling convention:
//! they may read s0–s33, v0–v31, EXEC and FLAT_SCRATCH (in any lane) and
//! are assumed to kill nothing, which is conservative. A device function's
//! returns see the union of the states after all its call sites. An
//! unresolved jump makes everything live.
//!
//! # Queries for insertion
//! [`Analysis::free_before`] lists, before any instruction, the SGPRs,
//! VGPRs and AGPRs that are dead (within what the kernel descriptor
//! allocates) and whether SCC, VCC, EXEC and M0 are live;
//! [`Analysis::resources`] compares the descriptor's allocation with the
//! registers the code uses.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let bytes = std::fs::read("fixtures/gfx90a/v5/device_call.hsaco")?;
//! let co = inlay_codeobj::CodeObject::parse(&bytes)?;
//! let a = inlay_instrument::analyse(&co, "call_direct")?;
//! for (i, inst) in a.program.insts.iter().enumerate() {
//!     let free = a.free_before(i);
//!     println!("{:#x}: {} dead SGPRs, {} dead VGPRs, SCC live: {}",
//!              inst.addr, free.sgprs.len(), free.vgprs.len(), free.scc_live);
//! }
//! # Ok(()) }
//! ```
//!
//! # Tests and measurements
//! `tests/instrument/liveness.rs`: hand-written code assembled with llvm-mc-19 (and
//! linked with ld.lld-19) whose liveness is worked out by hand;
//! `tests/instrument/fixtures.rs`: every fixture kernel lifts with sound structure,
//! calls agree with llvm-readelf/llvm-objdump, liveness agrees with an
//! independent per-register reachability oracle (scalar registers exactly,
//! vector registers at least), and random code never panics;
//! `tests/instrument/clobber_vgpu.rs`: on the virtual GPU, overwriting any register
//! reported free at an `s_waitcnt`/`s_nop` of a fixture kernel (callees
//! included) leaves its output bit-identical; `examples/check_liveness.rs`
//! runs the oracle over a corpus. `examples/bench_lift.rs` times lifting and liveness per kernel
//! (BENCHMARKS.md, issue 6); `examples/dump.rs` prints a lifted kernel with
//! its liveness.

pub mod counting;
pub mod emit;
mod fast_hash;
pub mod hooks;
pub mod lift;
pub mod liveness;
pub mod regs;
pub mod rewrite;

pub use lift::{
    lift, lift_function, Block, BlockId, CallSite, Callee, Exit, FuncId, FuncKind, Function, Inst,
    InstId, LiftError, Program,
};
pub use liveness::{ExecEffect, Live, Liveness, Summary};
pub use regs::RegSet;

use inlay_codeobj::target::Family;
use inlay_codeobj::CodeObject;
use inlay_isa::RegFile;

/// Registers the kernel descriptor allocates and the code uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    /// SGPRs the descriptor allocates (gfx9 granulated count, which also
    /// covers VCC, FLAT_SCRATCH and XNACK_MASK); `None` if it does not say.
    pub sgprs_allocated: Option<u32>,
    /// SGPRs (`s0..`) code may use without growing the descriptor: the
    /// allocation less the 6 registers gfx9 keeps for VCC, FLAT_SCRATCH and
    /// XNACK_MASK, at most 102.
    pub sgprs_usable: u32,
    /// Architectural VGPRs the descriptor allocates (below `accum_offset` on
    /// gfx90a/gfx942; the whole count on gfx908).
    pub vgprs_allocated: u32,
    /// AGPRs the descriptor allocates (the rest of the unified file on
    /// gfx90a/gfx942; on gfx908 AGPRs have their own file of the same size).
    pub agprs_allocated: u32,
    /// One past the highest SGPR / VGPR / AGPR any reachable instruction names.
    pub sgprs_used: u32,
    pub vgprs_used: u32,
    pub agprs_used: u32,
}

/// Registers free for hook code before one instruction.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FreeRegisters {
    /// Dead SGPRs below [`Resources::sgprs_usable`].
    pub sgprs: Vec<u16>,
    /// VGPRs dead in every lane, below [`Resources::vgprs_allocated`].
    pub vgprs: Vec<u16>,
    /// VGPRs dead in the lanes enabled here but live in disabled ones: hook
    /// code may write them only under the current EXEC.
    pub vgprs_active_lanes: Vec<u16>,
    /// AGPRs dead in every lane, below [`Resources::agprs_allocated`].
    pub agprs: Vec<u16>,
    pub scc_live: bool,
    pub vcc_live: bool,
    pub exec_live: bool,
    pub m0_live: bool,
}

/// A lifted kernel with liveness.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub program: Program,
    pub liveness: Liveness,
    pub resources: Resources,
    pub launch: LaunchFacts,
}

/// What the code object's metadata says of the kernel's launch, for hooks
/// that read launch state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LaunchFacts {
    pub code_object_version: u8,
    /// Offset in the kernel-argument segment of its implicit arguments in
    /// code object version 5's layout (`hidden_block_count_x` first), if
    /// its metadata lists them.
    pub implicit_args_v5: Option<u32>,
    /// Bytes of private memory per lane the kernel uses, and whether its
    /// stack size is only known at run time.
    pub private_segment_size: u32,
    pub dynamic_stack: bool,
}

/// Lifts `kernel` and computes liveness at every instruction.
pub fn analyse(co: &CodeObject<'_>, kernel: &str) -> Result<Analysis, LiftError> {
    let program = lift(co, kernel)?;
    let liveness = liveness::analyse(&program);
    let resources = resources(co, kernel, &program);
    Ok(Analysis {
        program,
        liveness,
        resources,
        launch: launch_facts(co, kernel),
    })
}

fn launch_facts(co: &CodeObject<'_>, kernel: &str) -> LaunchFacts {
    let k = co.kernel(kernel);
    let md = co
        .metadata
        .as_ref()
        .and_then(|m| m.kernels.iter().find(|km| km.name == kernel));
    let implicit_args_v5 = md
        .filter(|_| co.code_object_version >= 5)
        .and_then(|m| {
            m.args
                .iter()
                .find(|a| a.value_kind == "hidden_block_count_x")
        })
        .and_then(|a| u32::try_from(a.offset).ok());
    LaunchFacts {
        code_object_version: co.code_object_version,
        implicit_args_v5,
        private_segment_size: k.map_or(0, |k| k.descriptor.private_segment_fixed_size),
        dynamic_stack: md.and_then(|m| m.uses_dynamic_stack).unwrap_or(false)
            || k.is_some_and(|k| k.decoded.properties.uses_dynamic_stack),
    }
}

fn resources(co: &CodeObject<'_>, kernel: &str, prog: &Program) -> Resources {
    let (mut s, mut v, mut a) = (0u32, 0u32, 0u32);
    // Over the distinct encodings (every one is some instruction's).
    let (forms, _) = prog.forms();
    for k in 0..forms.list.len() {
        for u in forms.used(k) {
            let end = u.register.first as u32 + u.register.count as u32;
            match u.register.file {
                RegFile::Sgpr => s = s.max(end),
                RegFile::Vgpr => v = v.max(end),
                RegFile::Agpr => a = a.max(end),
                _ => {}
            }
        }
    }
    let d = co.kernel(kernel).map(|k| &k.decoded);
    let family = co.target.processor.family();
    let total = d.map_or(0, |d| d.vgpr_count);
    let (vgprs, agprs) = match (family, d.and_then(|d| d.accum_offset)) {
        (Family::Gfx90a | Family::Gfx94x, Some(off)) => {
            let off = off.min(total);
            (off, total - off)
        }
        (Family::Gfx9, _) if co.target.processor.name() == "gfx908" => (total, total),
        _ => (total, 0),
    };
    let sgprs_allocated = d.and_then(|d| d.sgpr_count);
    Resources {
        sgprs_allocated,
        sgprs_usable: sgprs_allocated.map_or(0, |n| n.saturating_sub(6).min(102)),
        vgprs_allocated: vgprs,
        agprs_allocated: agprs,
        sgprs_used: s,
        vgprs_used: v,
        agprs_used: a,
    }
}

impl Analysis {
    /// Liveness before instruction `i`.
    pub fn live_before(&self, i: InstId) -> Live {
        self.liveness.before(i)
    }

    /// Registers live before instruction `i` in any lane.
    pub fn live_any_before(&self, i: InstId) -> RegSet {
        self.liveness.any_before(i)
    }

    /// The scalar part of [`Analysis::free_before`]: dead SGPRs and whether
    /// SCC is live (all scalar hook code needs, without listing vector registers).
    pub fn free_sgprs_before(&self, i: InstId) -> (Vec<u16>, bool) {
        let any = self.live_any_before(i);
        let sgprs = any.absent_sgprs(self.resources.sgprs_usable as u16);
        (sgprs, any.contains(regs::SCC))
    }

    /// Liveness at the kernel's entry.
    pub fn live_at_entry(&self) -> Live {
        self.live_before(0)
    }

    /// Dead registers and live special registers before instruction `i`.
    pub fn free_before(&self, i: InstId) -> FreeRegisters {
        let l = self.live_before(i);
        let any = l.any();
        let r = &self.resources;
        FreeRegisters {
            sgprs: any.absent_sgprs(r.sgprs_usable as u16),
            vgprs: (0..r.vgprs_allocated.min(256) as u16)
                .filter(|n| !any.has_vgpr(*n))
                .collect(),
            vgprs_active_lanes: (0..r.vgprs_allocated.min(256) as u16)
                .filter(|n| !l.active.has_vgpr(*n) && l.inactive.has_vgpr(*n))
                .collect(),
            agprs: (0..r.agprs_allocated.min(256) as u16)
                .filter(|n| !any.has_agpr(*n))
                .collect(),
            scc_live: any.contains(regs::SCC),
            vcc_live: any.any_in(regs::VCC, 2),
            exec_live: any.any_in(regs::EXEC, 2),
            m0_live: any.contains(regs::M0),
        }
    }
}
