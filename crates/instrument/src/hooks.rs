//! Compiled hooks: device functions a tool compiles with clang (HIP, or C
//! and OpenCL C for amdgcn) into a code object of its own — the hook module —
//! and asks the engine to call at chosen points of a kernel.
//!
//! A [`HookModule`] lists the module's exported device functions
//! ([`HookModule::new`]) and analyses each the first time a call names it
//! (a tool's module may hold many hooks and a plan name few): the function
//! is lifted with the functions it calls, and the engine keeps, per hook
//! ([`HookInfo`]), the registers it may clobber, the stack it needs, the ABI
//! inputs it reads and its lifted code with liveness (which inlining
//! reuses). The analysis is kept with the module, which clones share. A [`HookCall`] asks for one call: a hook, a
//! [`Point`], its [`Arg`]uments, and whether it runs once per wave. Calls go
//! into [`crate::rewrite::Plan::calls`] beside the built-in hooks; the
//! rewritten kernel reaches the hooks through undefined symbols that the
//! loader resolves at freeze against the module, loaded into the same
//! executable on the same agent.
//!
//! # How a call is made
//! The hook follows LLVM's AMDGPU calling convention for non-kernel
//! functions (AMDGPUUsage, "Call Convention"): arguments in `v0..v30` (a
//! 64-bit value takes two consecutive VGPRs), the private segment buffer
//! V# in `s[0:3]`, the dispatch pointer in `s[4:5]`, the queue pointer in
//! `s[6:7]`, the implicit-argument pointer in `s[8:9]`, the dispatch id in
//! `s[10:11]`, the workgroup ids in `s12..s14`, the LDS kernel id in `s15`,
//! the packed work-item ids in `v31` (x | y << 10 | z << 20), the return
//! address in `s[30:31]` and the stack pointer in `s32`. Only the inputs the
//! hook's code reads are set up.
//!
//! At each point, in order:
//! 1. *Saves.* The registers both live at the point (liveness, any lane) and
//!    clobbered by the call — written by the hook or its callees and not
//!    preserved by the convention, or set up by the call itself — are saved,
//!    and nothing else. Scalar ones (SGPRs, VCC, M0, EXEC, SCC as 0/1) go to
//!    SGPRs dead at the point that the call leaves alone, or else to lanes
//!    of a VGPR that is (`v_writelane`). Vector ones go, whole (all 64
//!    lanes: a callee may write lanes EXEC disables), to VGPRs dead in every
//!    lane that the call leaves alone, or else to the instrumentation stack.
//!    A temporary the call needs when no VGPR is free (the lanes above, the
//!    VGPR an AGPR, an address or a cycle of argument moves goes through)
//!    is one above every VGPR the kernel and the hook name: the allocation
//!    grows by it.
//! 2. *Arguments* are computed into `v0..` under the point's EXEC: constants,
//!    register values (an SGPR's in every lane), the address a FLAT or
//!    GLOBAL instruction accesses, launch values. A register passed by
//!    reference is stored in a slot on the instrumentation stack and the
//!    hook gets a generic (flat) pointer to it (private aperture); after the
//!    hook returns, the slot's value goes back into the register (an SGPR
//!    takes the value of the first lane the hook ran in).
//! 3. *ABI inputs* are copied from where the kernel keeps them (see below)
//!    into the registers the convention names; `s32` points past the
//!    instrumentation stack's save area.
//! 4. *EXEC* stays as at the point, or becomes one lane (the lowest enabled
//!    one, lane 0 when none is) for a once-per-wave hook. A per-lane hook is
//!    skipped when no lane is enabled.
//! 5. *The call*: `s_swappc_b64 s[30:31], s[h:h+1]`, `s[h:h+1]` the home
//!    where the preamble keeps the hook's address (through `s[30:31]` when
//!    that home is two lanes of a VGPR).
//! 6. *Restores* in the reverse order; by-reference values are written back
//!    last; SCC is restored by a final `s_cmp_lg_u32`.
//!
//! # Launch state and the kernel preamble
//! A hook may read launch values the kernel never asked the hardware for.
//! The instrumented kernel's descriptor enables what the hooks need (the
//! private segment buffer and wave offset, dispatch and queue pointers,
//! kernel-argument pointer, dispatch id, workgroup ids, all three work-item
//! ids), and a preamble each wave runs once copies those values to their
//! homes — SGPRs no instruction of the kernel names and no hook writes, or
//! lanes of a VGPR nobody else uses; the work-item ids to such a VGPR —
//! then moves the initial SGPRs the original kernel expects back where it
//! expects them and masks `v0` back to the work-item ids it enabled. The
//! V# home holds the private segment buffer with the wave's offset added,
//! as LLVM's kernel prologue makes it for callees.
//!
//! The implicit-argument pointer is the kernel's own (kernel-argument
//! pointer plus the offset of its `hidden_block_count_x`) when the kernel
//! has a block of the hook module's code object version; otherwise the
//! instrumented code object carries a block of its own
//! ([`crate::rewrite::Rewritten::implicit_args`]) that the host fills before
//! each dispatch ([`implicit_args_block`]). The preamble computes it once
//! into a home, and likewise the address of every hook called: `s_getpc_b64`
//! and the two literals of a PC-relative offset (relocations
//! `R_AMDGPU_REL32_LO/HI` against the hook's name, resolved at freeze), so
//! the code carries two relocations per hook (and two for a block of its
//! own), not per call.
//!
//! # Scratch
//! The instrumentation stack lives in each lane's private memory above the
//! application's own (its private segment size rounded up to 16 bytes): the
//! save area of the call that needs the most, then the deepest stack of the
//! hooks called. The descriptor's private segment size grows by that much and
//! scratch is enabled if the kernel had none.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use inlay_codeobj::symbols::{Binding, SymbolKind};
use inlay_codeobj::CodeObject;
use inlay_isa::{RegFile, Register};

use crate::lift::{lift_function, Callee, InstId, Program};
use crate::liveness::Liveness;
use crate::regs::{self, RegSet};

/// Where a hook is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Point {
    /// Before the instruction (on every path that reaches it, branches to
    /// it included).
    Before(InstId),
    /// After the instruction, on its fall-through path: it must not branch,
    /// jump, call or end the wave. A hook here sees what the instruction
    /// wrote (an atomic's returned value once `s_waitcnt` says it is there:
    /// the engine waits for outstanding memory operations before the call).
    After(InstId),
    /// Once at the kernel's start, before its first instruction (not on
    /// branches back to it).
    Entry,
    /// Before every instruction of the kernel that ends the wave (`s_endpgm`).
    Exits,
}

/// A value the launch gives every wave, as a hook argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LaunchValue {
    /// Work-items of the grid in dimension 0, 1 or 2 (u32).
    GridSize(u8),
    /// Work-items of a workgroup in dimension 0, 1 or 2 (u32).
    WorkgroupSize(u8),
    /// The wave's workgroup id in dimension 0, 1 or 2 (u32).
    WorkgroupId(u8),
    /// Each lane's work-item id in its workgroup, dimension 0, 1 or 2 (u32, per lane).
    WorkitemId(u8),
    /// The dword at this byte offset of the kernel's arguments (u32; a
    /// multiple of 4).
    KernargDword(u32),
    /// Address of the kernel's arguments (u64).
    KernargPtr,
    /// Address of the AQL dispatch packet (u64).
    DispatchPtr,
}

/// One hook argument. Arguments take consecutive VGPRs from `v0`: 32-bit
/// ones one, 64-bit ones two (low dword first), at most 31 dwords in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// A 32-bit constant.
    Const32(u32),
    /// A 64-bit constant.
    Const64(u64),
    /// The value a register holds at the point: one or two dwords of an
    /// SGPR, VGPR or AGPR (`count` 1 or 2), VCC, EXEC, M0, or SCC (0 or 1).
    /// A scalar register's value reaches every lane; a vector register's,
    /// each lane its own.
    Value(Register),
    /// A register by reference: the hook receives a generic pointer
    /// (`uint32_t *` or `uint64_t *` for a pair) to a copy of its value,
    /// and what the hook leaves there becomes the register's value. The same
    /// registers as [`Arg::Value`], SCC excepted.
    Reference(Register),
    /// The 64-bit address the instruction at the point accesses, per lane
    /// (FLAT and GLOBAL instructions).
    Address,
    /// A launch value.
    Launch(LaunchValue),
}

impl Arg {
    /// VGPR dwords the argument takes.
    pub fn dwords(&self) -> u32 {
        match self {
            Arg::Const32(_) => 1,
            Arg::Const64(_) | Arg::Reference(_) | Arg::Address => 2,
            Arg::Value(r) => u32::from(r.count.clamp(1, 2)),
            Arg::Launch(LaunchValue::KernargPtr | LaunchValue::DispatchPtr) => 2,
            Arg::Launch(_) => 1,
        }
    }
}

/// A request: call `hook` of `modules[module]` at `point` with `args`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCall {
    pub point: Point,
    /// Index into [`crate::rewrite::Plan::modules`].
    pub module: usize,
    /// The hook's symbol name.
    pub hook: std::sync::Arc<str>,
    pub args: Vec<Arg>,
    /// Run the hook once per wave (in one lane) instead of in every lane
    /// EXEC enables at the point.
    pub once_per_wave: bool,
    /// Whether the hook's code is placed at the point or called.
    pub placement: Placement,
}

/// How a [`HookCall`] is made (see [`crate::rewrite`]'s inliner).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Placement {
    /// Inlined where the hook's code allows it, called otherwise: an
    /// inlined hook runs the same instructions without the call's own
    /// (return address, branch out and back, register saves).
    #[default]
    Auto,
    /// Inlined; a hook whose code does not allow it is an error.
    Inline,
    /// Called, always.
    Call,
}

/// ABI inputs (AMDGPUUsage's non-kernel function inputs) a hook's code reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AbiInputs {
    /// `s[0:3]` and `s32`: the hook uses private memory (a stack, spills).
    pub private_segment: bool,
    pub dispatch_ptr: bool,
    pub queue_ptr: bool,
    pub implicitarg_ptr: bool,
    pub dispatch_id: bool,
    pub workgroup_id: [bool; 3],
    pub lds_kernel_id: bool,
    /// `v31`: the packed work-item ids.
    pub workitem_id: bool,
}

/// What the engine knows of one hook, from its code.
#[derive(Debug, Clone)]
pub struct HookInfo {
    pub name: String,
    /// Address of its entry in the module (ELF virtual address).
    pub address: u64,
    /// Argument dwords it may read: one past the highest of `v0..v30` some
    /// path reads before writing (a parameter it never uses does not
    /// count). An upper bound, as liveness is: code clang emits may read a
    /// register it never wrote on a path where the value does not matter
    /// (`v_readfirstlane` of an atomic's result after a branch taken when
    /// no lane ran the atomic), so a call may pass fewer dwords than this.
    pub arg_dwords: u32,
    pub inputs: AbiInputs,
    /// Registers a call may leave changed: written by the hook or a
    /// function it calls and not preserved under the calling convention
    /// (VCC, SCC, M0 and EXEC included when written).
    pub clobbers: RegSet,
    /// Registers any of its instructions writes (preserved ones included).
    pub writes: RegSet,
    /// Bytes of private memory per lane its deepest call chain uses.
    pub stack_bytes: u32,
    /// One past the highest SGPR, VGPR and AGPR its code names.
    pub sgprs: u32,
    pub vgprs: u32,
    pub agprs: u32,
    /// Its code and the functions it calls (function 0 is the hook), with
    /// liveness: what inlining works from.
    pub program: Arc<Program>,
    pub liveness: Arc<Liveness>,
    /// The module's global offset table (ELF virtual addresses, start and
    /// end): symbols' addresses, written by the loader and only read after.
    pub got: Option<(u64, u64)>,
    /// Per entry of that table the module's own relocations fill with the
    /// address of a symbol it defines: the entry's address and the
    /// alignment (bytes) that address is known to have (the symbol's
    /// offset's, at most the module's segment alignment, which the loader
    /// keeps).
    pub got_align: Vec<(u64, u64)>,
}

/// Why a hook module or one of its hooks cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hook module {module}{}: {reason}", hook.as_ref().map(|h| format!(", hook {h}")).unwrap_or_default())]
pub struct HookError {
    pub module: String,
    pub hook: Option<String>,
    pub reason: String,
}

struct ModuleInner {
    name: String,
    bytes: Arc<[u8]>,
    target: inlay_codeobj::TargetId,
    code_object_version: u8,
    /// Per-function stack sizes (`.stack_sizes`), if the module has them.
    stacks: Option<HashMap<u64, u32>>,
    /// The global device functions, by name, each with its analysis once
    /// made: a hook, or why it cannot be one.
    functions: Vec<(String, OnceLock<Result<HookInfo, String>>)>,
    by_name: HashMap<String, usize>,
}

/// A code object of hooks, each analysed once; cheap to clone.
#[derive(Clone)]
pub struct HookModule(Arc<ModuleInner>);

impl std::fmt::Debug for HookModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookModule")
            .field("name", &self.0.name)
            .field("functions", &self.0.functions.len())
            .finish()
    }
}

impl HookModule {
    /// Parses a hook module: a linked code object (shared object) whose
    /// global device functions are the hooks (each analysed when first
    /// named). `name` names it in errors.
    pub fn new(name: &str, bytes: Arc<[u8]>) -> Result<HookModule, HookError> {
        let err = |hook: Option<&str>, reason: String| HookError {
            module: name.to_string(),
            hook: hook.map(str::to_string),
            reason,
        };
        let co = CodeObject::parse(&bytes).map_err(|e| err(None, e.to_string()))?;
        if co.is_relocatable() {
            return Err(err(
                None,
                "a relocatable object; link it into a shared object (ld.lld -shared)".into(),
            ));
        }
        let stacks = stack_sizes(&co);
        let mut names: Vec<&str> = co
            .symbols
            .all()
            .iter()
            .filter(|s| {
                s.kind == SymbolKind::DeviceFunction
                    && s.is_defined()
                    && s.binding != Binding::Local
            })
            .map(|s| s.name)
            .collect();
        names.sort_unstable();
        names.dedup();
        let by_name = names
            .iter()
            .enumerate()
            .map(|(k, n)| (n.to_string(), k))
            .collect();
        Ok(HookModule(Arc::new(ModuleInner {
            name: name.to_string(),
            target: co.target,
            code_object_version: co.code_object_version,
            bytes: bytes.clone(),
            stacks,
            functions: names
                .into_iter()
                .map(|n| (n.to_string(), OnceLock::new()))
                .collect(),
            by_name,
        })))
    }

    /// Function `k`'s analysis, made on first use. A function that cannot
    /// be a hook (a runtime helper the device libraries export, say) is an
    /// error only when a call names it.
    fn analysed(&self, k: usize) -> &Result<HookInfo, String> {
        let (name, cell) = &self.0.functions[k];
        cell.get_or_init(|| {
            let co = CodeObject::parse(&self.0.bytes).map_err(|e| e.to_string())?;
            analyse_hook(&co, name, &self.0.stacks)
        })
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The code object, to load beside the instrumented kernel.
    pub fn bytes(&self) -> &Arc<[u8]> {
        &self.0.bytes
    }

    pub fn target(&self) -> &inlay_codeobj::TargetId {
        &self.0.target
    }

    pub fn code_object_version(&self) -> u8 {
        self.0.code_object_version
    }

    /// Every hook: the module's global device functions the engine can
    /// call, by name (analysing those not analysed yet).
    pub fn hooks(&self) -> Vec<&HookInfo> {
        (0..self.0.functions.len())
            .filter_map(|k| self.analysed(k).as_ref().ok())
            .collect()
    }

    /// The hook called `name`, or why it cannot be one.
    pub fn hook(&self, name: &str) -> Result<&HookInfo, HookError> {
        let err = |reason: String| HookError {
            module: self.0.name.clone(),
            hook: Some(name.to_string()),
            reason,
        };
        match self.0.by_name.get(name) {
            Some(&k) => self.analysed(k).as_ref().map_err(|why| err(why.clone())),
            None => Err(err(
                "no global device function of that name in the module".into()
            )),
        }
    }
}

/// First argument VGPR past the last one a hook may take (`v31` holds the
/// work-item ids).
pub const ARG_VGPRS: u32 = 31;

/// Whether the calling convention lets a callee change register `bit`
/// (a [`RegSet`] bit). Callee-saved: `s30..s39`, `s48..s55`, `s64..s71`,
/// `s80..s87`, `s96..s101` (the striped layout of recent LLVM, whose set is
/// contained in older releases' `s30..s105`), `v40..v47` and every 16
/// registers from there, `a32..a255`; the rest may change (VCC, SCC, M0 too;
/// EXEC must come back as it was).
pub fn clobberable(bit: u16) -> bool {
    match bit {
        0..=101 => !matches!(bit, 30..=39 | 48..=55 | 64..=71 | 80..=87 | 96..=101),
        regs::VCC | 107 | regs::M0 | regs::SCC => true,
        256..=511 => {
            let v = bit - regs::VGPR_BASE;
            !(v >= 40 && (v - 40) % 16 < 8)
        }
        512..=767 => bit - regs::AGPR_BASE < 32,
        _ => false,
    }
}

/// Per-function stack sizes from `.stack_sizes` (clang's
/// `-fstack-size-section`): function address to bytes per lane.
fn stack_sizes(co: &CodeObject<'_>) -> Option<HashMap<u64, u32>> {
    let s = co.section(".stack_sizes")?;
    let data = co.section_data(s);
    let mut out = HashMap::new();
    let mut at = 0usize;
    while at + 8 <= data.len() {
        let addr = u64::from_le_bytes(data[at..at + 8].try_into().ok()?);
        at += 8;
        // ULEB128 size.
        let (mut v, mut shift) = (0u64, 0u32);
        loop {
            let b = *data.get(at)?;
            at += 1;
            v |= u64::from(b & 0x7f) << shift.min(63);
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        out.insert(addr, u32::try_from(v).ok()?);
    }
    Some(out)
}

fn analyse_hook(
    co: &CodeObject<'_>,
    name: &str,
    stacks: &Option<HashMap<u64, u32>>,
) -> Result<HookInfo, String> {
    let program = lift_function(co, name).map_err(|e| e.to_string())?;
    let liveness = crate::liveness::analyse(&program);
    for c in &program.calls {
        match &c.callee {
            Callee::Direct(_) => {}
            Callee::Table { unresolved: 0, .. } => {}
            Callee::Table { .. } | Callee::Unresolved => {
                return Err(format!(
                    "the call at {:#x} has a target the engine cannot find, so what it clobbers is unknown",
                    program.insts[c.inst].addr
                ))
            }
            Callee::External(n) => {
                return Err(format!(
                    "the call at {:#x} goes to {n}, defined outside the module",
                    program.insts[c.inst].addr
                ))
            }
        }
    }
    if program
        .blocks
        .iter()
        .any(|b| b.exit == crate::lift::Exit::Unresolved)
    {
        return Err("it jumps to an address the engine cannot follow".into());
    }
    let mut writes = RegSet::new();
    let (mut s, mut v, mut a) = (0u32, 0u32, 0u32);
    for i in 0..program.insts.len() {
        for u in program.used_registers(i) {
            let r = u.register;
            let end = u32::from(r.first) + u32::from(r.count);
            match r.file {
                RegFile::Sgpr => s = s.max(end),
                RegFile::Vgpr => v = v.max(end),
                RegFile::Agpr => a = a.max(end),
                _ => {}
            }
            if u.access.writes() {
                writes.union_with(&RegSet::of(&r));
            }
        }
    }
    let mut clobbers = RegSet::new();
    for b in writes.iter().filter(|&b| clobberable(b)) {
        clobbers.insert(b);
    }
    if writes.any_in(regs::EXEC, 2) {
        // The convention has EXEC restored at return; a hook whose code
        // breaks that would break the caller anyway. Kept for the record.
        clobbers.insert_range(regs::EXEC, 2);
    }
    // Inputs are read in the lanes the hook runs in (a read the analysis
    // puts in disabled lanes comes from its EXEC saves, not from a caller).
    let live_in = liveness.before(0).active;
    let read_first = vgprs_read_before_written(&program);
    let saved = wwm_saves(&program);
    let has = |b: u16| live_in.contains(b);
    let pair = |b: u16| has(b) || has(b + 1);
    let inputs = AbiInputs {
        private_segment: live_in.any_in(0, 4) || has(32),
        dispatch_ptr: pair(4),
        queue_ptr: pair(6),
        implicitarg_ptr: pair(8),
        dispatch_id: pair(10),
        workgroup_id: [has(12), has(13), has(14)],
        lds_kernel_id: has(15),
        workitem_id: read_first[31],
    };
    let arg_dwords = (0..ARG_VGPRS as u16)
        .rev()
        .find(|&n| read_first[usize::from(n)] && !saved.contains(&n))
        .map_or(0, |n| u32::from(n) + 1);
    let stack_bytes = if inputs.private_segment {
        let sizes = stacks.as_ref().ok_or(
            "it uses private memory and the module has no .stack_sizes section: compile it with -fstack-size-section",
        )?;
        deepest_stack(&program, sizes)?
    } else {
        0
    };
    let address = program.functions.first().map_or(0, |f| f.entry);
    Ok(HookInfo {
        name: name.to_string(),
        address,
        arg_dwords,
        inputs,
        clobbers,
        writes,
        stack_bytes,
        sgprs: s,
        vgprs: v,
        agprs: a,
        program: Arc::new(program),
        liveness: Arc::new(liveness),
        got: co
            .section(".got")
            .map(|g| (g.addr, g.addr.saturating_add(g.size))),
        got_align: got_align(co),
    })
}

/// See [`HookInfo::got_align`].
fn got_align(co: &CodeObject<'_>) -> Vec<(u64, u64)> {
    const PT_LOAD: u32 = 1;
    let Some(got) = co.section(".got") else {
        return Vec::new();
    };
    let segments = co
        .segments
        .iter()
        .filter(|s| s.p_type == PT_LOAD)
        .map(|s| s.align.max(1))
        .max()
        .map_or(1, |a| 1u64 << (63 - a.leading_zeros()));
    co.relocations
        .iter()
        .filter(|r| {
            r.r_type == inlay_codeobj::reloc::RelocType::ABS64
                && (got.addr..got.addr.saturating_add(got.size)).contains(&r.offset)
        })
        .filter_map(|r| {
            let at = r.symbol_value?.wrapping_add(r.addend as u64);
            let align = if at == 0 {
                segments
            } else {
                1 << at.trailing_zeros()
            };
            Some((r.offset, align.min(segments)))
        })
        .collect()
}

/// VGPRs `v0..v31` some path from the entry of function 0 reads before
/// writing them, by plain dataflow (a write kills whatever EXEC says: an
/// argument is read in the lanes the hook runs in). A call reads what its
/// callees read first and kills nothing.
fn vgprs_read_before_written(prog: &Program) -> [bool; 32] {
    let mask = |r: &Register| -> u32 {
        if r.file != RegFile::Vgpr || r.first >= 32 {
            return 0;
        }
        let n = u32::from(r.count).min(32 - u32::from(r.first));
        (((1u64 << n) - 1) << r.first) as u32
    };
    // Per instruction: (reads, writes) over v0..v31.
    let effects: Vec<(u32, u32)> = (0..prog.insts.len())
        .map(|i| {
            let (mut rd, mut wr) = (0u32, 0u32);
            for u in prog.used_registers(i) {
                if u.access.reads() {
                    rd |= mask(&u.register);
                }
                if u.access.writes() && !u.access.reads() {
                    wr |= mask(&u.register);
                }
            }
            (rd, wr)
        })
        .collect();
    let nf = prog.functions.len();
    let mut exposed = vec![0u32; nf];
    let mut live_in = vec![0u32; prog.blocks.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for f in (0..nf).rev() {
            for b in prog.functions[f].blocks.clone().rev() {
                let bl = &prog.blocks[b];
                let mut st = bl.succs.iter().fold(0, |a, &s| a | live_in[s]);
                for id in bl.insts.clone().rev() {
                    let (rd, wr) = effects[id];
                    st &= !wr;
                    st |= rd;
                    if let Some(c) = prog.call_at(id) {
                        let site = prog.calls.iter().position(|x| std::ptr::eq(x, c));
                        for g in site.map(|k| prog.callees(k)).unwrap_or_default() {
                            st |= exposed[g];
                        }
                    }
                }
                if st != live_in[b] {
                    live_in[b] = st;
                    changed = true;
                }
            }
            let entry = prog.functions[f].blocks.start;
            let e = live_in.get(entry).copied().unwrap_or(0);
            if e != exposed[f] {
                exposed[f] = e;
                changed = true;
            }
        }
    }
    let first = exposed.first().copied().unwrap_or(0);
    std::array::from_fn(|n| first >> n & 1 != 0)
}

/// VGPRs the entry block stores to the stack with every lane enabled (after
/// `s_or_saveexec_b64`/`s_xor_saveexec_b64 _, -1`, before EXEC is written
/// again): LLVM's prologue saving the registers it uses in whole-wave mode.
/// Those reads save a caller's value; they are no argument.
fn wwm_saves(prog: &Program) -> Vec<u16> {
    let mut out = Vec::new();
    let Some(entry) = prog
        .functions
        .first()
        .and_then(|f| prog.blocks.get(f.blocks.start))
    else {
        return out;
    };
    let mut whole_wave = false;
    for i in &prog.insts[entry.insts.clone()] {
        let name = i.inst.mnemonic();
        let all_lanes = i.inst.operand(1) == Some(inlay_isa::Operand::Inline(193));
        if matches!(name, "s_or_saveexec_b64" | "s_xor_saveexec_b64") && all_lanes {
            whole_wave = true;
            continue;
        }
        if crate::liveness::exec_effect(&i.inst) != crate::liveness::ExecEffect::None {
            whole_wave = false;
        }
        if whole_wave && name.starts_with("buffer_store_dword") {
            if let Some(inlay_isa::Operand::Vgpr { first, count }) = i.inst.operand(0) {
                out.extend(first..first + u16::from(count));
            }
        }
    }
    out
}

/// Bytes of stack of the deepest call chain from function 0.
fn deepest_stack(prog: &Program, sizes: &HashMap<u64, u32>) -> Result<u32, String> {
    let n = prog.functions.len();
    // Depth-first with a state per function: 0 new, 1 on the path, 2 done.
    let mut state = vec![0u8; n];
    let mut depth = vec![0u32; n];
    fn visit(
        f: usize,
        prog: &Program,
        sizes: &HashMap<u64, u32>,
        state: &mut [u8],
        depth: &mut [u32],
    ) -> Result<u32, String> {
        match state[f] {
            2 => return Ok(depth[f]),
            1 => return Err("it is recursive, so its stack has no bound".into()),
            _ => {}
        }
        state[f] = 1;
        let fun = &prog.functions[f];
        let own = *sizes.get(&fun.entry).ok_or_else(|| {
            format!(
                "no stack size for the function at {:#x} in .stack_sizes",
                fun.entry
            )
        })?;
        let mut deepest = 0;
        for &c in &fun.calls {
            for g in prog.callees(c) {
                deepest = deepest.max(visit(g, prog, sizes, state, depth)?);
            }
        }
        state[f] = 2;
        depth[f] = own.saturating_add(deepest);
        Ok(depth[f])
    }
    if n == 0 {
        return Ok(0);
    }
    visit(0, prog, sizes, &mut state, &mut depth)
}

/// Bytes of the implicit-argument block of code object version 5 that
/// [`implicit_args_block`] fills.
pub const IMPLICIT_ARGS_V5: usize = 256;

/// An implicit-argument block for a dispatch, as ROCclr fills one for code
/// object version 5 kernels (`hidden_block_count_*`, `hidden_group_size_*`,
/// `hidden_remainder_*`, `hidden_grid_dims`; the global offsets and the
/// pointers the runtime would provide are 0): `grid` and `workgroup` in
/// work-items, `dims` the packet's dimension count.
pub fn implicit_args_block(grid: [u32; 3], workgroup: [u32; 3], dims: u16) -> Vec<u8> {
    let mut b = vec![0u8; IMPLICIT_ARGS_V5];
    for d in 0..3 {
        let wg = workgroup[d].max(1);
        b[4 * d..4 * d + 4].copy_from_slice(&(grid[d] / wg).to_le_bytes());
        b[12 + 2 * d..14 + 2 * d].copy_from_slice(&(wg as u16).to_le_bytes());
        b[18 + 2 * d..20 + 2 * d].copy_from_slice(&((grid[d] % wg) as u16).to_le_bytes());
    }
    b[64..66].copy_from_slice(&dims.to_le_bytes());
    b
}
