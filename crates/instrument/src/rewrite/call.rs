//! Calls to compiled hooks (see [`crate::hooks`] for the sequence): which
//! registers each call saves and where, and its code.

use inlay_isa::{Encoding, Instruction, Operand, RegFile, Register};

use super::asm::{Asm, EXEC};
use super::inline::Placing;
use super::preamble::{sgpr_pair, Home, Homes, ModuleValue, Needs};
use super::snippet::{Settled, Snippet, Template};
use super::*;
use crate::fast_hash::FastHash;
use crate::hooks::{clobberable, Arg, HookCall, HookInfo, LaunchValue, Point, ARG_VGPRS};
use crate::regs::{self as bits, RegSet};
use std::sync::Arc;

/// Where a call goes, once `Point::Exits` is expanded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Site {
    Before(InstId),
    After(InstId),
    Entry,
}

/// A call to make, checked against the kernel.
pub(super) struct Request<'a> {
    pub(super) site: Site,
    /// The instruction the site is at (for addresses and messages).
    pub(super) inst: InstId,
    pub(super) hook: &'a HookInfo,
    pub(super) call: &'a HookCall,
    /// The instruction whose liveness before it is the site's.
    pub(super) live_at: InstId,
}

/// How hooks get the implicit-argument pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Implicit {
    /// The kernel's own block at this offset of its arguments.
    Kernarg(u32),
    /// A block the instrumented code object carries.
    Block,
}

fn describe(an: &Analysis, site: Site, inst: InstId) -> String {
    let addr = an.program.insts.get(inst).map_or(0, |i| i.addr);
    match site {
        Site::Before(_) => format!("before the instruction at {addr:#x}"),
        Site::After(_) => format!("after the instruction at {addr:#x}"),
        Site::Entry => "at the kernel's entry".into(),
    }
}

pub(super) fn call_error(
    an: &Analysis,
    call: &HookCall,
    where_: String,
    reason: String,
) -> RewriteError {
    RewriteError::Call {
        kernel: an.program.kernel.clone(),
        hook: call.hook.to_string(),
        point: where_,
        reason,
    }
}

/// A plan's calls, each at each of its sites, checked; with what the
/// later stages need of all of them, found in the same pass (a pass over
/// a call at every instruction streams megabytes).
pub(super) struct Survey<'a> {
    pub(super) reqs: Vec<Request<'a>>,
    /// The hooks called, in order of first use.
    called: Vec<CalledHook<'a>>,
    /// The launch values the calls' arguments read.
    arg_needs: Needs,
    /// Which constant argument dwords vary between a hook's calls.
    varying: Varying,
}

/// The calls of a plan, each at each of its sites, checked.
pub(super) fn requests<'a>(an: &Analysis, plan: &'a Plan) -> Result<Survey<'a>, RewriteError> {
    let prog = &an.program;
    let entry = prog
        .functions
        .first()
        .and_then(|f| prog.inst_at(0, f.entry));
    let mut out = Vec::with_capacity(plan.calls.len());
    let mut called: Vec<CalledHook<'a>> = Vec::new();
    let mut arg_needs = Needs::default();
    let mut constants = Constants::default();
    // The last hook found and checked (calls in a row name the same one).
    let mut last: Option<(usize, &str, &HookInfo)> = None;
    let mut last_args: Option<(&[Arg], &HookInfo)> = None;
    for call in &plan.calls {
        // Only for errors: built when one is.
        let point_text = || match call.point {
            Point::Before(i) | Point::After(i) => describe(
                an,
                if matches!(call.point, Point::Before(_)) {
                    Site::Before(i)
                } else {
                    Site::After(i)
                },
                i,
            ),
            Point::Entry => "at the kernel's entry".into(),
            Point::Exits => "at the kernel's exits".into(),
        };
        let fail = |reason: String| call_error(an, call, point_text(), reason);
        let hook = match last {
            // (Calls in a row mostly share one name: the same string is
            // the same name, without comparing its bytes.)
            Some((m, name, hook))
                if m == call.module && (std::ptr::eq(name, &*call.hook) || name == &*call.hook) =>
            {
                hook
            }
            _ => {
                let module = plan
                    .modules
                    .get(call.module)
                    .ok_or_else(|| fail(format!("the plan has no hook module {}", call.module)))?;
                let hook = module.hook(&call.hook).map_err(|e| fail(e.reason))?;
                if module.target().processor.name() != "gfx90a" {
                    return Err(fail(format!(
                        "the hook module is built for {}, the kernel for gfx90a",
                        module.target().processor.name()
                    )));
                }
                if hook.inputs.lds_kernel_id {
                    return Err(fail(
                        "the hook reads the LDS kernel id (it uses LDS variables of its own), which an instrumented kernel cannot give it".into(),
                    ));
                }
                last = Some((call.module, &call.hook, hook));
                hook
            }
        };
        // (Arguments equal to the last call's to the same hook were
        // checked and noted with it; arguments alike but for constant
        // values, a hook passed each point's index, were checked with it,
        // a constant's check and needs not depending on its value.)
        let last_same_hook = last_args
            .filter(|&(_, h)| std::ptr::eq(h, hook))
            .map(|x| x.0);
        let same_args = last_same_hook.is_some_and(|a| a == &call.args[..]);
        let alike_args = same_args
            || last_same_hook.is_some_and(|a| args_alike(a, &call.args, |_, _, _, _| true));
        if !alike_args {
            let dwords: u32 = call.args.iter().map(Arg::dwords).sum();
            if dwords > ARG_VGPRS {
                return Err(fail(format!(
                    "its arguments take {dwords} VGPRs; at most {ARG_VGPRS} (v0..v30) pass arguments"
                )));
            }
            // Fewer dwords than `hook.arg_dwords` are not refused: that
            // count is what some path may read, and clang's code reads
            // registers it never wrote where the value does not matter
            // (mem_trace's hook did).
            for a in &call.args {
                check_arg(a).map_err(&fail)?;
            }
        }
        let entry = entry.ok_or_else(|| fail("the kernel has no entry instruction".into()))?;
        // (A point is one site but the exits: no list built for one.)
        let one;
        let exits: Vec<(Site, InstId)>;
        let sites: &[(Site, InstId)] = match call.point {
            Point::Before(i) | Point::After(i) if i >= prog.insts.len() => {
                return Err(fail(format!("the program has no instruction {i}")));
            }
            Point::Before(i) => {
                one = [(Site::Before(i), i)];
                &one
            }
            Point::After(i) => {
                one = [(Site::After(i), i)];
                &one
            }
            Point::Entry => {
                one = [(Site::Entry, entry)];
                &one
            }
            Point::Exits => {
                exits = prog
                    .wave_ends()
                    .into_iter()
                    .filter(|&i| prog.blocks[prog.insts[i].block].function == 0)
                    .map(|i| (Site::Before(i), i))
                    .collect();
                &exits
            }
        };
        // (What a call with no site passes is needed nowhere.)
        if !sites.is_empty() && !same_args {
            match last_same_hook.filter(|_| alike_args) {
                // (Only the constants that differ from the last call's can
                // show one varies.)
                Some(last) => constants.note_changes(hook, last, &call.args),
                None => {
                    for a in &call.args {
                        arg_needs.add_arg(a);
                    }
                    constants.note(hook, &call.args);
                }
            }
            last_args = Some((&call.args, hook));
        }
        for &(site, inst) in sites {
            let live_at = match site {
                Site::Before(i) => i,
                Site::Entry => entry,
                Site::After(i) => {
                    let ins = &prog.insts[i];
                    if crate::lift::flow(&ins.inst, ins.addr) != crate::lift::Flow::Next {
                        return Err(fail(
                            "the instruction branches, calls or ends the wave: nothing runs after it on a fall-through path".into(),
                        ));
                    }
                    let f = prog.blocks[ins.block].function;
                    prog.inst_at(f, ins.addr + ins.inst.len() as u64)
                        .ok_or_else(|| fail("no instruction follows it".into()))?
                }
            };
            if call.args.contains(&Arg::Address) && !has_address(&prog.insts[inst].inst) {
                return Err(call_error(
                    an,
                    call,
                    describe(an, site, inst),
                    "the instruction there has no address to pass (only FLAT and GLOBAL ones have)"
                        .into(),
                ));
            }
            let inlinable = call.placement != crate::hooks::Placement::Call;
            match called.iter_mut().rev().find(|h| std::ptr::eq(h.info, hook)) {
                Some(h) => {
                    h.sites += 1;
                    h.inlinable |= inlinable;
                }
                None => called.push(CalledHook {
                    info: hook,
                    first: out.len(),
                    sites: 1,
                    inlinable,
                }),
            }
            out.push(Request {
                site,
                inst,
                hook,
                call,
                live_at,
            });
        }
    }
    Ok(Survey {
        reqs: out,
        called,
        arg_needs,
        varying: constants.varying(),
    })
}

fn check_arg(a: &Arg) -> Result<(), String> {
    let reg_ok = |r: &Register, by_ref: bool| -> Result<(), String> {
        let count_ok = matches!(r.count, 1 | 2);
        let ok = match r.file {
            RegFile::Sgpr => count_ok && r.first + u16::from(r.count) <= bits::NUM_SGPRS,
            RegFile::Vgpr | RegFile::Agpr => count_ok && r.first + u16::from(r.count) <= 256,
            RegFile::Vcc | RegFile::Exec => count_ok && r.first + u16::from(r.count) <= 2,
            RegFile::M0 => r.count == 1 && r.first == 0,
            RegFile::Scc => r.count == 1 && r.first == 0 && !by_ref,
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "{:?} {} x{} cannot be passed{}",
                r.file,
                r.first,
                r.count,
                if by_ref { " by reference" } else { "" }
            ))
        }
    };
    match a {
        Arg::Value(r) => reg_ok(r, false),
        Arg::Reference(r) => reg_ok(r, true),
        Arg::Launch(
            LaunchValue::GridSize(d)
            | LaunchValue::WorkgroupSize(d)
            | LaunchValue::WorkgroupId(d)
            | LaunchValue::WorkitemId(d),
        ) if *d > 2 => Err(format!("dimension {d} does not exist")),
        Arg::Launch(LaunchValue::KernargDword(o)) if o % 4 != 0 || *o >= 1 << 20 => Err(format!(
            "kernel-argument offset {o:#x} is not a dword offset a scalar load takes"
        )),
        _ => Ok(()),
    }
}

/// The launch values the calls need kept for the whole kernel: those the
/// `hooks` called read, and those the calls pass.
pub(super) fn needs(
    hooks: &[CalledHook<'_>],
    arg_needs: Needs,
    implicit: Option<Implicit>,
) -> Needs {
    let mut n = Needs {
        implicit,
        ..arg_needs
    };
    for h in hooks {
        let i = &h.info.inputs;
        n.vsharp |= i.private_segment;
        n.flat_scratch |= i.private_segment;
        n.dispatch |= i.dispatch_ptr;
        n.queue |= i.queue_ptr;
        n.dispatch_id |= i.dispatch_id;
        for d in 0..3 {
            n.workgroup_id[d] |= i.workgroup_id[d];
        }
        n.workitem |= i.workitem_id;
    }
    n
}

impl Needs {
    /// Notes what argument `a` reads.
    fn add_arg(&mut self, a: &Arg) {
        match a {
            Arg::Reference(_) => {
                self.vsharp = true;
                self.flat_scratch = true;
            }
            Arg::Launch(v) => match v {
                LaunchValue::GridSize(_)
                | LaunchValue::WorkgroupSize(_)
                | LaunchValue::DispatchPtr => self.dispatch = true,
                LaunchValue::WorkgroupId(d) => self.workgroup_id[usize::from(*d)] = true,
                LaunchValue::WorkitemId(_) => self.workitem = true,
                LaunchValue::KernargDword(_) | LaunchValue::KernargPtr => self.kernarg = true,
            },
            _ => {}
        }
    }
}

/// A scalar save slot: an SGPR, or a lane of a VGPR.
type Slot = Home;

/// Where a vector register is saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VSave {
    Vgpr(u16),
    /// Byte offset in the call's save area.
    Scratch(u32),
}

/// What the kernel-wide context gives every call.
pub(super) struct Ctx<'a> {
    pub(super) an: &'a Analysis,
    pub(super) asm: &'a Asm,
    pub(super) homes: &'a Homes,
    /// Registers held for the whole kernel (homes, built-in hooks' SGPRs).
    pub(super) taken: RegSet,
    /// VGPRs below this may hold saves (the instrumented kernel's allocation).
    pub(super) vgpr_limit: u16,
    /// VGPRs from `vgpr_limit` up to this one (excluded) are used by nothing:
    /// a call that finds no VGPR free takes its temporaries there, growing
    /// the allocation (the register file holds them, AGPRs included).
    pub(super) vgpr_ceiling: u16,
    /// Lane offset of the instrumentation area in private memory.
    pub(super) stack_base: u32,
    pub(super) save_all: bool,
    /// Inlined hooks borrow every SGPR they need (`Plan::inline_borrowing`).
    pub(super) borrow_all: bool,
    /// Registers the kernel's memory instructions write: at a point, a
    /// load may still be writing them (see [`loaded_registers`]).
    pub(super) loaded: RegSet,
    /// The SGPRs the kernel may use without growing its allocation, the
    /// most often dead first (see [`sgprs_by_deadness`]; found when a call
    /// is first planned or inlined).
    pub(super) sgprs_often_dead: std::cell::OnceCell<Vec<u16>>,
    /// The scalar slots the last call to save the same scalar registers
    /// was given (see [`ScalarSlots`]).
    pub(super) scalar_slots: std::cell::RefCell<ScalarSlots>,
    /// Hazard facts of the instructions call sequences use (each built
    /// once, for padding inside every sequence and then at the seams).
    pub(super) facts: std::cell::RefCell<super::hazards::FactsTable>,
    /// The ids of `facts` met before, looked up first.
    pub(super) fact_ids: std::cell::RefCell<super::snippet::IdCache>,
    /// The shared parts of call sequences built so far (see
    /// [`Ctx::core`]).
    pub(super) cores: std::cell::RefCell<std::collections::HashMap<Box<[u64]>, Core, FastHash>>,
    /// What each distinct instruction of inlined copies names (see
    /// [`super::inline::Named`]), found once.
    pub(super) named: std::cell::RefCell<super::inline::NamedTable>,
    /// The constant argument dwords (hook, argument, dword) whose value
    /// differs between the hook's calls: their code holds a literal each
    /// copy patches, so calls that differ only there share one (a hook
    /// passed each point's index).
    pub(super) varying: Varying,
}

/// Scalar slots given before, by what they were for: the scalar
/// registers saved (their bits, a word per 64), whether EXEC and SCC were
/// saved too. A call saving the same takes the same slots when they are
/// all free at its point and cost no more moves than its own: points
/// nearby mostly differ in registers the slots do not touch, and then
/// share one sequence.
pub(super) type ScalarSlots =
    std::collections::HashMap<([u64; 4], bool, bool), KeptSlots, FastHash>;

/// The scalar slots of a call's plan.
#[derive(Clone)]
pub(super) struct KeptSlots {
    scalars: Vec<(u16, Slot)>,
    exec: Option<[Slot; 2]>,
    scc: Option<Slot>,
}

impl KeptSlots {
    fn homes(&self) -> impl Iterator<Item = Slot> + '_ {
        let scalars = self.scalars.iter().map(|x| x.1);
        scalars
            .chain(self.exec.iter().flatten().copied())
            .chain(self.scc)
    }

    /// The least [`KeptSlots::cost`] slots for the scalar registers
    /// `scalar` (and EXEC, SCC when saved) can have: every aligned pair
    /// one move, no lane.
    fn least(scalar: &RegSet, exec: bool, scc: bool) -> (usize, usize) {
        let words = &scalar.words()[..usize::from(bits::VGPR_BASE / 64)];
        let regs: u32 = words.iter().map(|w| w.count_ones()).sum();
        let mut pairs: u32 = words
            .iter()
            .map(|w| (w & w >> 1 & 0x5555_5555_5555_5555).count_ones())
            .sum();
        // (M0 is saved alone.)
        if scalar.contains(bits::M0) && scalar.contains(bits::M0 + 1) {
            pairs -= 1;
        }
        let moves = (regs - pairs) as usize + usize::from(exec) + usize::from(scc);
        (moves, 0)
    }

    /// Moves each way, then lanes among the slots (a lane move is an
    /// 8-byte VALU instruction, an SGPR move a 4-byte SALU one).
    fn cost(&self) -> (usize, usize) {
        let exec = match self.exec {
            Some([Home::Sgpr(a), Home::Sgpr(b)]) if a % 2 == 0 && b == a + 1 => 1,
            Some(_) => 2,
            None => 0,
        };
        // (As `scalar_moves` pairs them.)
        let pairs = self
            .scalars
            .windows(2)
            .filter(|w| match (w[0], w[1]) {
                ((b, Home::Sgpr(t)), (b2, Home::Sgpr(t2))) => {
                    b % 2 == 0 && b2 == b + 1 && t % 2 == 0 && t2 == t + 1
                }
                _ => false,
            })
            .count();
        let moves = self.scalars.len() - pairs + exec + usize::from(self.scc.is_some());
        let lanes = self.homes().filter(|h| matches!(h, Home::Lane(..))).count();
        (moves, lanes)
    }
}

/// The register bit a slot takes (a lane takes its VGPR).
fn home_bit(h: Slot) -> u16 {
    match h {
        Home::Sgpr(t) => t,
        Home::Lane(v, _) => bits::VGPR_BASE + v,
    }
}

/// See [`Ctx::varying`]: (hook, argument, dword) and whether it varies,
/// for each constant dword of the calls (a plan's calls have a few: a
/// list searched is cheaper than a map).
pub(super) type Varying = Vec<((*const HookInfo, usize, u8), bool)>;

/// Whether each constant argument dword differs between calls of the same
/// hook, noted call by call: each with the value it had first.
#[derive(Default)]
struct Constants(Vec<((*const HookInfo, usize, u8), u32, bool)>);

impl Constants {
    fn note(&mut self, hook: &HookInfo, args: &[Arg]) {
        for (k, a) in args.iter().enumerate() {
            if !matches!(a, Arg::Const32(_) | Arg::Const64(_)) {
                continue;
            }
            for dword in 0..a_dwords(a) {
                let key = (hook as *const HookInfo, k, dword);
                let c = constant(a, dword);
                match self.0.iter_mut().find(|(x, _, _)| *x == key) {
                    Some((_, first, varies)) => *varies |= *first != c,
                    None => self.0.push((key, c, false)),
                }
            }
        }
    }

    /// Notes `args`, alike `last` (noted before) but for constant values,
    /// of a call to `hook`: a dword that differs from `last`'s differs from
    /// the first value too, or `last`'s did.
    fn note_changes(&mut self, hook: &HookInfo, last: &[Arg], args: &[Arg]) {
        for (k, (was, a)) in last.iter().zip(args).enumerate() {
            if !matches!(a, Arg::Const32(_) | Arg::Const64(_)) {
                continue;
            }
            for dword in 0..a_dwords(a) {
                let key = (hook as *const HookInfo, k, dword);
                if constant(was, dword) != constant(a, dword) {
                    if let Some((_, _, varies)) = self.0.iter_mut().find(|(x, _, _)| *x == key) {
                        *varies = true;
                    }
                }
            }
        }
    }

    fn varying(self) -> Varying {
        self.0
            .into_iter()
            .map(|(key, _, varies)| (key, varies))
            .collect()
    }
}

/// The operand that sets constant dword `dword` of argument `k` of `r`'s
/// call: its inline constant, or `None` for a literal the template
/// patches per copy (a value that varies between the hook's calls, or
/// one no inline constant holds).
pub(super) fn constant_operand(
    varying: &Varying,
    r: &Request<'_>,
    k: usize,
    dword: u8,
) -> Option<Operand> {
    constant_operand_of(varying, r.hook, k, dword, constant(&r.call.args[k], dword))
}

/// [`constant_operand`] of value `c` as dword `dword` of argument `k` of
/// a call to `hook`.
fn constant_operand_of(
    varying: &Varying,
    hook: &HookInfo,
    k: usize,
    dword: u8,
    c: u32,
) -> Option<Operand> {
    match Asm::konst(c) {
        Operand::Literal(_) => None,
        _ if dword_varies(varying, hook, k, dword) => None,
        op => Some(op),
    }
}

/// Whether constant dword `dword` of argument `k` varies between `hook`'s
/// calls.
fn dword_varies(varying: &Varying, hook: &HookInfo, k: usize, dword: u8) -> bool {
    let key = (hook as *const HookInfo, k, dword);
    varying.iter().any(|&(x, varies)| varies && x == key)
}

/// Registers some memory instruction of the program writes (the only ones
/// an outstanding memory operation can write at any point).
pub(super) fn loaded_registers(an: &Analysis) -> RegSet {
    let mut out = RegSet::new();
    for (id, ins) in an.program.insts.iter().enumerate() {
        if !super::inline::is_memory(&ins.inst) {
            continue;
        }
        for u in an.program.used_registers(id) {
            if u.access.writes() {
                out.union_with(&RegSet::of(&u.register));
            }
        }
    }
    out
}

/// The SGPRs below [`crate::Resources::sgprs_usable`], those dead before
/// more of the instructions sampled first (then in order): call slots and
/// inlined copies take SGPRs in this order, so most points have them free
/// and share a sequence. (Every eighth instruction is sampled, or about
/// 256 spread over the kernel when it is longer.)
pub(super) fn sgprs_by_deadness(an: &Analysis) -> Vec<u16> {
    let usable = an.resources.sgprs_usable.min(u32::from(bits::NUM_SGPRS)) as u16;
    let mut dead = vec![0u32; usize::from(usable)];
    let n = an.program.insts.len();
    for i in (0..n).step_by((n / 256).max(8)) {
        let live = an.live_any_before(i);
        for (w, &word) in live.words().iter().enumerate().take(2) {
            let mut d = !word;
            while d != 0 {
                let n = 64 * w + d.trailing_zeros() as usize;
                d &= d - 1;
                if let Some(c) = dead.get_mut(n) {
                    *c += 1;
                }
            }
        }
    }
    let mut order: Vec<u16> = (0..usable).collect();
    order.sort_by_key(|&n| std::cmp::Reverse(dead[usize::from(n)]));
    order
}

/// The saves of one call, decided before its code (the save area's size
/// sets every hook's stack pointer).
#[derive(Clone)]
pub(super) struct CallPlan<'r, 'a> {
    req: &'r Request<'a>,
    /// Scalar registers (RegSet bits, SCC excluded) and their slots.
    scalars: Vec<(u16, Slot)>,
    scc: Option<Slot>,
    exec: Option<[Slot; 2]>,
    /// Vector registers (RegSet bits) and where they go.
    vectors: Vec<(u16, VSave)>,
    /// Per argument: the area offset of a by-reference slot.
    ref_slots: Vec<Option<u32>>,
    /// A VGPR the call changes (saved before and restored after the AGPRs),
    /// through which AGPRs go to and from scratch.
    agpr_temp: Option<u16>,
    /// Bytes of the save area it uses.
    pub(super) area: u32,
    /// Its code needs the V# in s[0:3] and s33 before its arguments.
    scratch_early: bool,
    /// Registers the call may change (its own and the hook's).
    clobbered: RegSet,
    /// A VGPR free at the site outside everything the call touches, for
    /// breaking cycles among argument moves.
    spare_vgpr: Option<u16>,
    /// Highest SGPR / VGPR the code names (for the descriptor).
    pub(super) max_sgpr: u16,
    pub(super) max_vgpr: u16,
}

fn vgpr_bit(n: u16) -> u16 {
    bits::VGPR_BASE + n
}

/// RegSet bits of a register.
pub(super) fn reg_bits(r: &Register) -> Vec<u16> {
    match bits::bits_of(r) {
        Some((b, n)) => (b..b + n).collect(),
        None => Vec::new(),
    }
}

/// The scalar operand of a RegSet bit (an SGPR, VCC, M0, EXEC half).
pub(super) fn scalar_operand(b: u16) -> Operand {
    if b < bits::NUM_SGPRS {
        Asm::sgpr(b, 1)
    } else {
        Operand::Special {
            code: b as u8,
            count: 1,
        }
    }
}

fn a_dwords(a: &Arg) -> u8 {
    a.dwords() as u8
}

/// Dword `dword` of a constant argument (0 for any other).
pub(super) fn constant(a: &Arg, dword: u8) -> u32 {
    match (a, dword) {
        (Arg::Const32(c), 0) => *c,
        (Arg::Const64(c), 0) => *c as u32,
        (Arg::Const64(c), 1) => (c >> 32) as u32,
        _ => 0,
    }
}

/// Argument slots: the first VGPR of each argument.
pub(super) fn arg_vgprs(args: &[Arg]) -> Vec<u16> {
    let mut at = 0u16;
    args.iter()
        .map(|a| {
            let v = at;
            at += a.dwords() as u16;
            v
        })
        .collect()
}

/// VGPRs (numbered from v0) an argument's value is computed from: a
/// VGPR value's (one or two), an address's offset VGPRs (one with an SGPR
/// base, else two); none for a reference, which passes where the register
/// is, not its value.
#[derive(Clone, Copy)]
struct VgprSources {
    v: [u16; 2],
    n: u8,
}

impl VgprSources {
    fn of(a: &Arg, inst: &Instruction) -> VgprSources {
        let mut out = VgprSources { v: [0; 2], n: 0 };
        match a {
            Arg::Value(r) if r.file == RegFile::Vgpr => {
                for v in r.first..r.first + u16::from(r.count.min(2)) {
                    out.push(v);
                }
            }
            Arg::Address => {
                let (vaddr, saddr, _) = address_operands(inst).unwrap_or((0, None, 0));
                out.push(vaddr);
                if saddr.is_none() && vaddr < 255 {
                    out.push(vaddr + 1);
                }
            }
            _ => {}
        }
        out
    }

    fn push(&mut self, v: u16) {
        self.v[usize::from(self.n)] = v;
        self.n += 1;
    }

    fn as_slice(&self) -> &[u16] {
        &self.v[..usize::from(self.n)]
    }

    fn contains(&self, v: u16) -> bool {
        self.as_slice().contains(&v)
    }
}

/// Adds the registers an argument reads at the point to `set`.
pub(super) fn add_arg_sources(a: &Arg, inst: &Instruction, set: &mut RegSet) {
    match a {
        Arg::Value(r) | Arg::Reference(r) => set.union_with(&RegSet::of(r)),
        Arg::Address => {
            let (vaddr, saddr, _) = address_operands(inst).unwrap_or((0, None, 0));
            set.insert(vgpr_bit(vaddr));
            match saddr {
                Some(s) => set.insert_range(s, 2),
                None => set.insert(vgpr_bit(vaddr + 1)),
            }
        }
        _ => {}
    }
}

/// A FLAT or GLOBAL instruction's address operands: vaddr, the SGPR pair
/// base (GLOBAL with saddr), and the signed offset.
pub(super) fn address_operands(i: &Instruction) -> Option<(u16, Option<u16>, i32)> {
    let w0 = *i.words().first()?;
    let w1 = *i.words().get(1)?;
    let vaddr = (w1 & 0xff) as u16;
    let saddr = (w1 >> 16 & 0x7f) as u16;
    match i.encoding() {
        Encoding::Flat => Some((vaddr, None, (w0 & 0xfff) as i32)),
        Encoding::Global => Some((
            vaddr,
            (saddr != 0x7f).then_some(saddr),
            ((w0 & 0x1fff) << 19) as i32 >> 19,
        )),
        _ => None,
    }
}

/// How a run of scalar saves is moved: one dword, or an aligned pair into
/// an aligned SGPR pair.
enum Moves {
    One(Slot),
    Pair(u16),
}

/// The scalar saves as moves, pairs joined.
fn scalar_moves(scalars: &[(u16, Slot)]) -> impl Iterator<Item = (u16, Moves)> + '_ {
    let mut k = 0;
    std::iter::from_fn(move || {
        let &(b, s) = scalars.get(k)?;
        if let (Home::Sgpr(t), Some(&(b2, Home::Sgpr(t2)))) = (s, scalars.get(k + 1)) {
            if b.is_multiple_of(2) && b2 == b + 1 && t.is_multiple_of(2) && t2 == t + 1 {
                k += 2;
                return Some((b, Moves::Pair(t)));
            }
        }
        k += 1;
        Some((b, Moves::One(s)))
    })
}

/// The 64-bit scalar operand of a pair of RegSet bits starting at `b`.
fn scalar_pair_operand(b: u16) -> Operand {
    if b < bits::NUM_SGPRS {
        Asm::sgpr(b, 2)
    } else {
        Operand::Special {
            code: b as u8,
            count: 2,
        }
    }
}

/// Registers free to save into at a call: SGPRs and VGPRs (below a
/// limit) nothing needs there. SGPRs are handed out in the order of
/// [`sgprs_by_deadness`] (then lowest first): points that save the same
/// registers then mostly save them into the same slots, and share one
/// sequence. VGPRs are handed out lowest first.
#[derive(Clone, Copy)]
struct Pool<'o> {
    free: RegSet,
    /// SGPRs, those dead at the most points first.
    order: &'o [u16],
    /// Where the searches of `order` for a single SGPR and for a pair go
    /// on from: registers only leave the pool, so none before is free.
    single_from: usize,
    pair_from: usize,
}

impl<'o> Pool<'o> {
    fn new(busy: &RegSet, vgpr_limit: u16, order: &'o [u16]) -> Pool<'o> {
        let mut free = RegSet::new();
        free.insert_range(0, bits::NUM_SGPRS);
        free.insert_range(bits::VGPR_BASE, vgpr_limit);
        free.subtract(busy);
        Pool {
            free,
            order,
            single_from: 0,
            pair_from: 0,
        }
    }

    fn take(&mut self, start: u16, end: u16) -> Option<u16> {
        let b = self.free.first_in(start, end)?;
        self.free.remove(b);
        Some(b)
    }

    fn sgpr(&mut self) -> Option<u16> {
        let rest = &self.order[self.single_from..];
        match rest.iter().position(|&n| self.free.contains(n)) {
            Some(k) => {
                self.single_from += k + 1;
                let n = rest[k];
                self.free.remove(n);
                Some(n)
            }
            None => {
                self.single_from = self.order.len();
                self.take(0, bits::NUM_SGPRS)
            }
        }
    }

    fn vgpr(&mut self) -> Option<u16> {
        Some(self.take(bits::VGPR_BASE, bits::AGPR_BASE)? - bits::VGPR_BASE)
    }

    /// The free aligned SGPR pairs, as a mask of their first registers.
    fn free_pairs(&self) -> u128 {
        let w = self.free.words();
        let sgprs = (u128::from(w[0]) | u128::from(w[1]) << 64) & ((1 << bits::NUM_SGPRS) - 1);
        sgprs & sgprs >> 1 & 0x5555_5555_5555_5555_5555_5555_5555_5555
    }

    /// The highest free aligned SGPR pair below `end`.
    fn high_sgpr_pair_below(&mut self, end: u16) -> Option<u16> {
        let pairs = self.free_pairs() & ((1u128 << end.saturating_sub(1)) - 1);
        let t = (pairs != 0).then(|| 127 - pairs.leading_zeros() as u16)?;
        self.free.remove_range(t, 2);
        Some(t)
    }

    /// The lowest free aligned SGPR pair.
    fn low_sgpr_pair(&mut self) -> Option<u16> {
        let pairs = self.free_pairs();
        let t = (pairs != 0).then(|| pairs.trailing_zeros() as u16)?;
        self.free.remove_range(t, 2);
        Some(t)
    }

    /// The first free aligned SGPR pair in the order (by its first
    /// register).
    fn ordered_sgpr_pair(&mut self) -> Option<u16> {
        let pairs = self.free_pairs();
        if pairs == 0 {
            return None;
        }
        let rest = &self.order[self.pair_from..];
        let Some(k) = rest.iter().position(|&n| n % 2 == 0 && pairs >> n & 1 != 0) else {
            self.pair_from = self.order.len();
            return None;
        };
        self.pair_from += k + 1;
        let t = rest[k];
        self.free.remove_range(t, 2);
        Some(t)
    }

    /// A free aligned SGPR pair: the first in the order, else the highest.
    fn sgpr_pair(&mut self) -> Option<u16> {
        if let Some(t) = self.ordered_sgpr_pair() {
            return Some(t);
        }
        let pairs = self.free_pairs();
        let t = (pairs != 0).then(|| 127 - pairs.leading_zeros() as u16)?;
        self.free.remove_range(t, 2);
        Some(t)
    }
}

/// The parts of a call's sequence shared by calls alike, each padded
/// within itself: from EXEC set for the vector saves to the arguments, and
/// from the hook's inputs to the vector restores (see [`Ctx::code`]).
#[derive(Clone)]
pub(super) struct Core {
    before_args: Arc<Settled>,
    after_args: Arc<Settled>,
}

/// A slot as one word of a key.
fn home_word(h: Home) -> u64 {
    match h {
        Home::Sgpr(s) => u64::from(s),
        Home::Lane(v, l) => 1 << 32 | u64::from(v) << 8 | u64::from(l),
    }
}

/// MUBUF offsets reach 4095 bytes: the save area must fit.
const MAX_AREA: u32 = 4096;

/// Bytes of private memory a lane may have (gfx9's scratch wave size field:
/// 8191 KiB per wave of 64 lanes, rounded down to what the vgpu allows).
pub(super) const MAX_PRIVATE: u32 = 128 * 1024;

impl CallPlan<'_, '_> {
    /// The registers it keeps values in, which must be free at its
    /// point: the save slots and the spare VGPR (RegSet bits).
    fn slots(&self) -> impl Iterator<Item = u16> + '_ {
        let scalars = self.scalars.iter().map(|x| home_bit(x.1));
        let exec_scc = self
            .exec
            .iter()
            .flatten()
            .chain(&self.scc)
            .map(|&h| home_bit(h));
        let vectors = self.vectors.iter().filter_map(|x| match x.1 {
            VSave::Vgpr(v) => Some(vgpr_bit(v)),
            VSave::Scratch(_) => None,
        });
        scalars
            .chain(exec_scc)
            .chain(vectors)
            .chain(self.spare_vgpr.map(vgpr_bit))
    }

    /// Instructions its call sequence has at least: each scalar save's
    /// move there and back, each vector save's, and the `s_swappc_b64`.
    pub(super) fn min_len(&self) -> usize {
        1 + 2 * (scalar_moves(&self.scalars).count() + self.vectors.len())
    }
}

impl<'a> Ctx<'a> {
    pub(super) fn fail(&self, r: &Request<'_>, reason: String) -> RewriteError {
        call_error(self.an, r.call, describe(self.an, r.site, r.inst), reason)
    }

    /// Decides what a call saves and where.
    pub(super) fn plan<'r>(&self, r: &'r Request<'a>) -> Result<CallPlan<'r, 'a>, RewriteError> {
        let h = r.hook;
        let args = &r.call.args;
        let inst = &self.an.program.insts[r.inst].inst;
        let refs = args.iter().any(|a| matches!(a, Arg::Reference(_)));
        let uses_address_offset = args.iter().any(|a| {
            *a == Arg::Address
                && address_operands(inst).is_some_and(|(_, _, o)| !(-16..=64).contains(&o))
        });

        // What the call changes: the hook's clobbers and the registers the
        // sequence sets.
        let mut c = h.clobbers;
        c.remove_range(bits::EXEC, 2);
        c.insert_range(30, 2); // return address, and temporaries
        c.insert(bits::SCC);
        if uses_address_offset {
            c.insert(29);
        }
        let i = &h.inputs;
        let pairs = [
            (i.dispatch_ptr, 4),
            (i.queue_ptr, 6),
            (i.implicitarg_ptr, 8),
            (i.dispatch_id, 10),
        ];
        for (on, s) in pairs {
            if on {
                c.insert_range(s, 2);
            }
        }
        for d in 0..3 {
            if i.workgroup_id[d] {
                c.insert(12 + d as u16);
            }
        }
        if i.workitem_id {
            c.insert(vgpr_bit(31));
        }
        let dwords: u32 = args.iter().map(Arg::dwords).sum();
        c.insert_range(bits::VGPR_BASE, dwords as u16);
        if i.private_segment {
            c.insert_range(0, 4);
            c.insert(32);
        }

        // What must survive: live registers, and those an argument reads
        // (read after the sequence starts writing, they must be saved).
        let mut live = self.an.live_any_before(r.live_at);
        for a in args {
            add_arg_sources(a, inst, &mut live);
        }
        // The baseline saves every clobberable register as if live and
        // changed by the hook; registers really live stay live (they must
        // not become save slots).
        if self.save_all {
            let all = self.all_clobberable();
            live.union_with(&all);
            c.union_with(&all);
        }
        // Vector registers (and by-reference ones) go to scratch when no
        // register holds them; then the V# and s33 are set first.
        let mut plan = CallPlan {
            req: r,
            // (Sized for most plans, which grew these a few times each.)
            scalars: Vec::with_capacity(8),
            scc: None,
            exec: None,
            vectors: Vec::with_capacity(8),
            ref_slots: vec![None; args.len()],
            agpr_temp: None,
            area: 0,
            scratch_early: false,
            clobbered: c,
            spare_vgpr: None,
            max_sgpr: 33,
            max_vgpr: 31,
        };
        // Two rounds: if saves need scratch, s[0:3] and s33 join the
        // registers the call changes, and may need saving themselves.
        for round in 0..2 {
            let mut c = plan.clobbered;
            if plan.scratch_early || refs {
                c.insert_range(0, 4);
                c.insert(33);
            }
            plan.clobbered = c;
            self.assign(&mut plan, &live)?;
            let spills = plan
                .vectors
                .iter()
                .any(|(_, s)| matches!(s, VSave::Scratch(_)));
            let early = spills || refs;
            if early == plan.scratch_early || round == 1 {
                plan.scratch_early = early;
                break;
            }
            plan.scratch_early = early;
        }
        if plan.area > MAX_AREA {
            return Err(self.fail(
                r,
                format!(
                    "the call's save area needs {} bytes of private memory; at most {MAX_AREA}",
                    plan.area
                ),
            ));
        }
        Ok(plan)
    }

    /// Every register the calling convention lets a callee change, within
    /// the kernel's allocation (the baseline the register finding is
    /// measured against).
    fn all_clobberable(&self) -> RegSet {
        let res = &self.an.resources;
        let mut s = RegSet::new();
        for b in 0..res.sgprs_usable.min(102) as u16 {
            if clobberable(b) {
                s.insert(b);
            }
        }
        for v in 0..res.vgprs_allocated.min(256) as u16 {
            if clobberable(vgpr_bit(v)) {
                s.insert(vgpr_bit(v));
            }
        }
        for a in 0..res.agprs_allocated.min(256) as u16 {
            if clobberable(bits::AGPR_BASE + a) {
                s.insert(bits::AGPR_BASE + a);
            }
        }
        s.insert_range(bits::VCC, 2);
        s.insert(bits::M0);
        s.insert(bits::SCC);
        s
    }

    fn assign(&self, p: &mut CallPlan<'_, 'a>, live: &RegSet) -> Result<(), RewriteError> {
        let r = p.req;
        let args = &r.call.args;
        let c = p.clobbered;
        // AGPRs go to scratch through a VGPR the call changes anyway, but
        // not one an argument reads: the saves come before the arguments.
        let inst = &self.an.program.insts[r.inst].inst;
        let mut read_by_args = RegSet::new();
        for a in args {
            add_arg_sources(a, inst, &mut read_by_args);
        }
        p.agpr_temp = c
            .difference(&read_by_args)
            .first_in(bits::VGPR_BASE, bits::AGPR_BASE)
            .map(|b| b - bits::VGPR_BASE);
        let save = live.intersection(&c);
        let busy = live.union(&c).union(&self.taken);
        // Free scalar slots: SGPRs nobody needs here; free VGPRs likewise
        // (in every lane), within the allocation (see `Pool`).
        let order = self
            .sgprs_often_dead
            .get_or_init(|| sgprs_by_deadness(self.an));
        let mut free = Pool::new(&busy, self.vgpr_limit, order);
        // VGPRs above everything, for temporaries only (lanes of scalar
        // saves, a VGPR to move AGPRs or arguments through): never vector
        // saves, which go to scratch rather than grow the allocation a lot.
        let mut above = self.vgpr_limit..self.vgpr_ceiling;
        let ref_regs: Vec<u16> = args
            .iter()
            .filter_map(|a| match a {
                Arg::Reference(r) => Some(reg_bits(r)),
                _ => None,
            })
            .flatten()
            .collect();
        // Vector registers saved: the live ones the call changes, then
        // by-reference ones (in argument order).
        let vector = || {
            save.iter().filter(|&b| b >= bits::VGPR_BASE).chain(
                ref_regs
                    .iter()
                    .copied()
                    .filter(|&b| b >= bits::VGPR_BASE && !save.contains(b)),
            )
        };
        let mut scalar = save;
        scalar.remove_range(bits::VGPR_BASE, bits::NUM_BITS - bits::VGPR_BASE);
        scalar.remove(bits::SCC);
        scalar.remove_range(bits::EXEC, 2);
        let exec_changes = vector().next().is_some()
            || r.call.once_per_wave
            || args.iter().any(|a| matches!(a, Arg::Reference(_)));
        // (The pool as it was before any scalar slot was given: see below.)
        let (pool_before, above_before) = (free, above.clone());
        // A scalar slot: a free SGPR, else a lane of a free VGPR.
        let mut lane_vgpr: Option<(u16, u8)> = None;
        let mut slot = |free: &mut Pool<'_>| -> Option<Slot> {
            if let Some(s) = free.sgpr() {
                return Some(Home::Sgpr(s));
            }
            let (v, l) = match lane_vgpr {
                Some((v, l)) if l < 63 => (v, l + 1),
                _ => (free.vgpr().or_else(|| above.next())?, 0),
            };
            lane_vgpr = Some((v, l));
            Some(Home::Lane(v, l))
        };
        let none = || {
            self.fail(r, "no register is free to save a register in (all SGPRs and VGPRs are live or used by the hook)".into())
        };
        // Scalar slots: the slots the last call saving the same scalar
        // registers was given, when they are all free here and cost no
        // more than the pool's choice, so that both calls share a
        // sequence. (When they cost the least any slots could, the pool is
        // not asked.)
        p.scalars.clear();
        let scc = save.contains(bits::SCC);
        let key = (
            std::array::from_fn(|w| scalar.words()[w]),
            exec_changes,
            scc,
        );
        let mut kept_slots = self.scalar_slots.borrow_mut();
        let kept_cost = kept_slots
            .get(&key)
            .filter(|k| k.homes().all(|h| free.free.contains(home_bit(h))))
            .map(KeptSlots::cost);
        let take_kept = |p: &mut CallPlan<'_, 'a>, free: &mut Pool<'_>| {
            let k = &kept_slots[&key];
            for h in k.homes() {
                free.free.remove(home_bit(h));
            }
            p.scalars.extend_from_slice(&k.scalars);
            (p.exec, p.scc) = (k.exec, k.scc);
        };
        if kept_cost == Some(KeptSlots::least(&scalar, exec_changes, scc)) {
            take_kept(p, &mut free);
        } else {
            let mut next = scalar.first_in(0, bits::VGPR_BASE);
            while let Some(b) = next {
                // An aligned pair saved whole into an aligned free pair: one
                // s_mov_b64 each way.
                let pair = b.is_multiple_of(2) && scalar.contains(b + 1) && b != bits::M0;
                let to = pair.then(|| free.sgpr_pair()).flatten();
                if let Some(t) = to {
                    p.scalars.push((b, Home::Sgpr(t)));
                    p.scalars.push((b + 1, Home::Sgpr(t + 1)));
                    next = scalar.first_in(b + 2, bits::VGPR_BASE);
                    continue;
                }
                let s = slot(&mut free).ok_or_else(none)?;
                p.scalars.push((b, s));
                next = scalar.first_in(b + 1, bits::VGPR_BASE);
            }
            p.exec = if exec_changes {
                // An aligned pair when there is one: one move each way. The
                // first in the order, else the highest the allocation has
                // (many points have those free, so more calls share a
                // sequence), else the lowest.
                let usable = self
                    .an
                    .resources
                    .sgprs_usable
                    .min(u32::from(bits::NUM_SGPRS)) as u16;
                if let Some(t) = free
                    .ordered_sgpr_pair()
                    .or_else(|| free.high_sgpr_pair_below(usable))
                    .or_else(|| free.low_sgpr_pair())
                {
                    Some([Home::Sgpr(t), Home::Sgpr(t + 1)])
                } else {
                    let lo = slot(&mut free).ok_or_else(none)?;
                    let hi = slot(&mut free).ok_or_else(none)?;
                    Some([lo, hi])
                }
            } else {
                None
            };
            p.scc = if save.contains(bits::SCC) {
                Some(slot(&mut free).ok_or_else(none)?)
            } else {
                None
            };
            let fresh = KeptSlots {
                scalars: std::mem::take(&mut p.scalars),
                exec: p.exec,
                scc: p.scc,
            };
            if kept_cost.is_some_and(|c| c <= fresh.cost()) {
                (free, above) = (pool_before, above_before);
                take_kept(p, &mut free);
            } else {
                (p.scalars, p.exec, p.scc) = (fresh.scalars.clone(), fresh.exec, fresh.scc);
                // (Lanes of VGPRs above the allocation are not kept: the
                // pool does not hold them.)
                if fresh
                    .homes()
                    .all(|h| home_bit(h) < bits::VGPR_BASE + self.vgpr_limit)
                {
                    kept_slots.insert(key, fresh);
                }
            }
        }
        // Vector saves: free VGPRs, else scratch; by-reference ones always
        // in scratch (the hook gets a pointer to the slot).
        p.vectors.clear();
        let mut area = 0u32;
        for b in vector() {
            let to = if ref_regs.contains(&b) {
                None
            } else if b >= bits::AGPR_BASE {
                // Through a VGPR the call changes anyway, or one above
                // everything, when none is free.
                match free.vgpr() {
                    Some(v) => Some(v),
                    None if p.agpr_temp.is_some() => None,
                    None => {
                        p.agpr_temp = Some(above.next().ok_or_else(|| {
                            self.fail(
                                r,
                                format!(
                                    "no VGPR is free to save {} through (the kernel uses every VGPR code can name)",
                                    bits::bit_name(b)
                                ),
                            )
                        })?);
                        None
                    }
                }
            } else {
                free.vgpr()
            };
            let at = match to {
                Some(v) => VSave::Vgpr(v),
                None => {
                    let a = area;
                    area += 4;
                    VSave::Scratch(a)
                }
            };
            p.vectors.push((b, at));
        }
        // By-reference slots: a vector register's is its save slot; a
        // scalar's, a slot of its own.
        for (k, a) in args.iter().enumerate() {
            if let Arg::Reference(reg) = a {
                let first = reg_bits(reg).first().copied().unwrap_or(0);
                p.ref_slots[k] = if first >= bits::VGPR_BASE {
                    p.vectors.iter().find_map(|&(b, s)| match s {
                        VSave::Scratch(o) if b == first => Some(o),
                        _ => None,
                    })
                } else {
                    let a = area;
                    area += 4 * u32::from(reg.count);
                    Some(a)
                };
            }
        }
        p.area = area;
        // A VGPR to break cycles among argument moves and to compute an
        // address through; one above everything only when it may be needed.
        p.spare_vgpr = free
            .vgpr()
            .or_else(|| self.needs_spare(p).then(|| above.next()).flatten());
        let mut max_s = 33u16;
        let mut max_v = 31u16;
        let mut note = |h: Home| match h {
            Home::Sgpr(s) => max_s = max_s.max(s),
            Home::Lane(v, _) => max_v = max_v.max(v),
        };
        for &(_, s) in &p.scalars {
            note(s);
        }
        p.exec.iter().flatten().for_each(|&s| note(s));
        p.scc.iter().for_each(|&s| note(s));
        for &(_, s) in &p.vectors {
            if let VSave::Vgpr(v) = s {
                max_v = max_v.max(v);
            }
        }
        for v in p.spare_vgpr.into_iter().chain(p.agpr_temp) {
            max_v = max_v.max(v);
        }
        p.max_sgpr = max_s;
        p.max_vgpr = max_v;
        Ok(())
    }

    /// The call's hook, whether once per wave, and its arguments as words
    /// (constants only as far as their encoding goes: inline values, or
    /// "a literal").
    pub(super) fn call_key(&self, r: &Request<'a>, key: &mut Vec<u64>) {
        key.clear();
        let none = u64::MAX;
        key.push(r.hook as *const HookInfo as u64);
        key.push(u64::from(r.call.once_per_wave));
        key.push(r.call.args.len() as u64);
        for (k, a) in r.call.args.iter().enumerate() {
            match a {
                Arg::Const32(_) | Arg::Const64(_) => {
                    key.push(1 << 56 | u64::from(a.dwords()));
                    for d in 0..a_dwords(a) {
                        key.push(match constant_operand(&self.varying, r, k, d) {
                            Some(_) => u64::from(constant(a, d)),
                            None => none,
                        });
                    }
                }
                Arg::Value(reg) | Arg::Reference(reg) => {
                    let tag = if matches!(a, Arg::Value(_)) { 2 } else { 3 };
                    key.push(
                        tag << 56
                            | (reg.file as u64) << 32
                            | u64::from(reg.first) << 8
                            | u64::from(reg.count),
                    );
                }
                Arg::Address => {
                    key.push(4 << 56);
                    let inst = &self.an.program.insts[r.inst].inst;
                    match address_operands(inst) {
                        Some((vaddr, saddr, offset)) => {
                            key.push(u64::from(vaddr));
                            key.push(saddr.map_or(none, u64::from));
                            key.push(u64::from(offset as u32));
                        }
                        None => key.push(none),
                    }
                }
                Arg::Launch(v) => key.push(
                    5 << 56
                        | match *v {
                            LaunchValue::GridSize(d) => 1 << 40 | u64::from(d),
                            LaunchValue::WorkgroupSize(d) => 2 << 40 | u64::from(d),
                            LaunchValue::WorkgroupId(d) => 3 << 40 | u64::from(d),
                            LaunchValue::WorkitemId(d) => 4 << 40 | u64::from(d),
                            LaunchValue::KernargDword(o) => 5 << 40 | u64::from(o),
                            LaunchValue::KernargPtr => 6 << 40,
                            LaunchValue::DispatchPtr => 7 << 40,
                        },
                ),
            }
        }
    }

    /// Everything [`Ctx::code`] reads of a call and its plan, as words —
    /// the call's constant arguments excepted where they are literals,
    /// which a template patches per copy: calls with the same key get the
    /// same code.
    fn template_key(&self, p: &CallPlan<'_, 'a>, key: &mut Vec<u64>) {
        self.call_key(p.req, key);
        let none = u64::MAX;
        key.push(p.scalars.len() as u64);
        for &(b, h) in &p.scalars {
            key.push(u64::from(b));
            key.push(home_word(h));
        }
        key.push(p.scc.map_or(none, home_word));
        self.core_key(p, key);
        key.push(p.spare_vgpr.map_or(none, u64::from));
    }

    /// What [`Ctx::core`] reads of a plan but its scalar slots, as words.
    fn core_key(&self, p: &CallPlan<'_, 'a>, key: &mut Vec<u64>) {
        let none = u64::MAX;
        for h in p.exec.map_or([None, None], |[lo, hi]| [Some(lo), Some(hi)]) {
            key.push(h.map_or(none, home_word));
        }
        key.push(p.vectors.len() as u64);
        for &(b, to) in &p.vectors {
            key.push(u64::from(b));
            key.push(match to {
                VSave::Vgpr(v) => u64::from(v),
                VSave::Scratch(o) => 1 << 32 | u64::from(o),
            });
        }
        for s in &p.ref_slots {
            key.push(s.map_or(none, u64::from));
        }
        key.push(p.agpr_temp.map_or(none, u64::from));
        key.push(u64::from(p.scratch_early));
    }

    /// The call's code; `area` is the largest save area of all calls
    /// (the hook's stack starts past it). All but the scalar saves and
    /// restores and the arguments is built and padded once for every call
    /// with the same (see [`Ctx::core`]).
    pub(super) fn code(&self, p: &CallPlan<'_, 'a>, area: u32) -> Result<Snippet, RewriteError> {
        let core = self.core(p, area)?;
        let mut s = Snippet::default();
        // (Room for most sequences, which grew it a few times each.)
        s.insts.reserve(64);
        self.scalar_saves(p, &mut s)?;
        s.append_settled(&core.before_args);
        let inst = self.an.program.insts[p.req.inst].inst;
        self.arguments(p, &mut s, &inst)?;
        s.append_settled(&core.after_args);
        self.scalar_restores(p, &mut s)?;
        let table = &mut self.facts.borrow_mut();
        s.resolve_cached(table, &mut self.fact_ids.borrow_mut())?;
        debug_assert!(
            s.fully_padded(table),
            "a call sequence joined from its parts lacks wait states"
        );
        Ok(s)
    }

    /// Scalar saves, EXEC, then SCC (through s30, dead or saved by then),
    /// after outstanding memory operations land.
    fn scalar_saves(&self, p: &CallPlan<'_, 'a>, s: &mut Snippet) -> Result<(), RewriteError> {
        let asm = self.asm;
        let b = |e: Encoding, m: &'static str, ops: &[Operand]| asm.build(e, m, ops);
        let s1 = |n: u16| Asm::sgpr(n, 1);
        let zero = Asm::konst(0);
        s.push(b(Encoding::Sopp, "s_waitcnt", &[Operand::Imm(0)])?);
        for (bits_, slots) in scalar_moves(&p.scalars) {
            s.push(match slots {
                Moves::One(slot) => self.write_slot(slot, scalar_operand(bits_))?,
                Moves::Pair(t) => asm.smov64(Asm::sgpr(t, 2), scalar_pair_operand(bits_))?,
            });
        }
        if let Some([lo, hi]) = p.exec {
            self.exec_to_slots(s, lo, hi)?;
        }
        if let Some(slot) = p.scc {
            match slot {
                Home::Sgpr(t) => s.push(b(
                    Encoding::Sop2,
                    "s_cselect_b32",
                    &[s1(t), Asm::konst(1), zero],
                )?),
                Home::Lane(v, l) => {
                    s.push(b(
                        Encoding::Sop2,
                        "s_cselect_b32",
                        &[s1(30), Asm::konst(1), zero],
                    )?);
                    s.push(asm.writelane(v, Asm::sgpr(30, 1), l)?);
                }
            }
        }
        Ok(())
    }

    /// The parts of `p`'s sequence around its arguments, from a memo of
    /// those built: calls of the same hook whose plans differ only in
    /// scalar slots, and whose arguments differ only in what they are
    /// computed from, share them.
    fn core(&self, p: &CallPlan<'_, 'a>, area: u32) -> Result<Core, RewriteError> {
        let r = p.req;
        let mut key = Vec::with_capacity(64);
        key.push(r.hook as *const HookInfo as u64);
        key.push(u64::from(r.call.once_per_wave) | u64::from(area) << 1);
        // Where each argument goes, and the registers passed by reference
        // (their values go to and come from their slots here).
        let mut scalar_refs = false;
        for a in &r.call.args {
            key.push(u64::from(a.dwords()));
            if let Arg::Reference(reg) = a {
                key.push(
                    (reg.file as u64) << 32 | u64::from(reg.first) << 8 | u64::from(reg.count),
                );
                scalar_refs |= !matches!(reg.file, RegFile::Vgpr | RegFile::Agpr);
            }
        }
        // (A scalar passed by reference may be read from its save slot.)
        if scalar_refs {
            for &(b, h) in &p.scalars {
                key.push(u64::from(b));
                key.push(home_word(h));
            }
            key.push(p.scc.map_or(u64::MAX, home_word));
        }
        self.core_key(p, &mut key);
        if let Some(core) = self.cores.borrow().get(key.as_slice()) {
            if cfg!(debug_assertions) {
                let fresh = self.build_core(p, area)?;
                for (a, b) in [
                    (&core.before_args, &fresh.before_args),
                    (&core.after_args, &fresh.after_args),
                ] {
                    let (a, b) = (a.code(), b.code());
                    debug_assert!(
                        a.insts == b.insts && a.relocs == b.relocs && a.constants == b.constants,
                        "a call's shared part differs from the one built for it"
                    );
                }
            }
            return Ok(core.clone());
        }
        let core = self.build_core(p, area)?;
        self.cores.borrow_mut().insert(key.into(), core.clone());
        Ok(core)
    }

    /// Builds and pads the parts of `p`'s sequence around its arguments.
    fn build_core(&self, p: &CallPlan<'_, 'a>, area: u32) -> Result<Core, RewriteError> {
        let r = p.req;
        let asm = self.asm;
        let args = &r.call.args;
        let mut s = Snippet::default();
        let b = |e: Encoding, m: &'static str, ops: &[Operand]| asm.build(e, m, ops);
        let s1 = |n: u16| Asm::sgpr(n, 1);
        let v1 = |n: u16| Operand::Vgpr { first: n, count: 1 };
        let zero = Asm::konst(0);
        let slot_of = |bit: u16| p.scalars.iter().find(|(b, _)| *b == bit).map(|x| x.1);

        // 2. With every lane on: V# and s33 for scratch, vector saves,
        // scalar by-reference values into their slots.
        let all_lanes = !p.vectors.is_empty() || p.ref_slots.iter().any(Option::is_some);
        if all_lanes {
            s.push(asm.smov64(EXEC, Operand::Inline(193))?);
        }
        if p.scratch_early {
            self.set_vsharp(&mut s)?;
            s.push(asm.mov_lit(33, self.stack_base * 64)?);
        }
        // VGPRs before AGPRs (which may go through a VGPR already saved).
        for &(bit, to) in &p.vectors {
            self.save_vector(&mut s, p, bit, to)?;
        }
        let arg_at = arg_vgprs(args);
        for (k, a) in args.iter().enumerate() {
            if let (Arg::Reference(reg), Some(off)) = (a, p.ref_slots[k]) {
                if reg.file == RegFile::Vgpr || reg.file == RegFile::Agpr {
                    continue; // saved above, to this slot
                }
                for (d, bit) in reg_bits(reg).into_iter().enumerate() {
                    let t = arg_at[k];
                    self.scalar_into_vgpr(&mut s, p, bit, t)?;
                    s.push(self.scratch("buffer_store_dword", t, off + 4 * d as u32)?);
                }
            }
        }
        // 3. EXEC as the hook will run: the point's, or one lane of it for a
        // once-per-wave hook (the lowest enabled, lane 0 if none); the
        // arguments are computed in those lanes.
        if let Some([lo, hi]) = p.exec {
            if all_lanes {
                self.exec_from_slots(&mut s, lo, hi)?;
            }
        }
        if r.call.once_per_wave {
            s.push(b(Encoding::Sop1, "s_ff1_i32_b64", &[s1(30), EXEC])?);
            s.push(b(Encoding::Sop2, "s_max_i32", &[s1(30), s1(30), zero])?);
            s.push(b(
                Encoding::Sop2,
                "s_lshl_b64",
                &[EXEC, Asm::konst(1), s1(30)],
            )?);
        }
        let before_args = self.settle(s)?;
        let mut s = Snippet::default();
        // 4. ABI inputs (after the arguments, computed at each call).
        let hi = &r.hook.inputs;
        if hi.workitem_id {
            let w = self
                .homes
                .workitem
                .ok_or_else(|| self.fail(r, "no work-item ids kept".into()))?;
            s.push(asm.vmov(31, v1(w))?);
        }
        if hi.private_segment && !p.scratch_early {
            self.set_vsharp(&mut s)?;
        }
        if hi.private_segment {
            s.push(asm.mov_lit(32, (self.stack_base + area) * 64)?);
        }
        let homes = self.homes;
        for (on, home, at, what) in [
            (hi.dispatch_ptr, homes.dispatch, 4u16, "dispatch pointer"),
            (hi.queue_ptr, homes.queue, 6, "queue pointer"),
            (
                hi.implicitarg_ptr,
                homes.implicit,
                8,
                "implicit-argument pointer",
            ),
            (hi.dispatch_id, homes.dispatch_id, 10, "dispatch id"),
        ] {
            if on {
                let h = home.ok_or_else(|| self.fail(r, format!("no {what} kept")))?;
                self.read_home_pair(&mut s, at, h)?;
            }
        }
        let mut ids = Vec::with_capacity(3);
        for d in 0..3 {
            if hi.workgroup_id[d] {
                let h = homes.workgroup_id[d]
                    .ok_or_else(|| self.fail(r, "no workgroup id kept".into()))?;
                ids.push((12 + d as u16, h));
            }
        }
        // x and y in one move when their homes are an aligned pair.
        match ids.as_slice() {
            [(12, x), (13, y), rest @ ..] => {
                self.read_home_pair(&mut s, 12, [*x, *y])?;
                for &(to, h) in rest {
                    s.push(self.read_home(to, h)?);
                }
            }
            _ => {
                for &(to, h) in &ids {
                    s.push(self.read_home(to, h)?);
                }
            }
        }
        // 5. A per-lane hook is skipped when no lane is enabled.
        let skip = if r.call.once_per_wave {
            None
        } else {
            Some(s.branch(b(Encoding::Sopp, "s_cbranch_execz", &[Operand::Imm(0)])?))
        };
        // 6. The call, to the address the preamble kept (from an SGPR
        // pair directly, else through s[30:31]), or computed here.
        let home = homes
            .hooks
            .iter()
            .find(|(name, _)| **name == *r.call.hook)
            .map(|x| x.1);
        let from = match home.map(|h| (h, sgpr_pair(h))) {
            Some((_, Some(t))) => t,
            Some(([lo, hi], None)) => {
                s.push(self.read_home(30, lo)?);
                s.push(self.read_home(31, hi)?);
                30
            }
            None => {
                s.pc_relative(asm, 30, r.call.hook.clone())?;
                30
            }
        };
        s.push(b(
            Encoding::Sop1,
            "s_swappc_b64",
            &[Asm::sgpr(30, 2), Asm::sgpr(from, 2)],
        )?);
        // 7. Scalar by-reference values back (EXEC is the call's: the first
        // lane the hook ran in gives the value).
        let scalar_refs: Vec<(usize, &Register)> = args
            .iter()
            .enumerate()
            .filter_map(|(k, a)| match a {
                Arg::Reference(reg) if !matches!(reg.file, RegFile::Vgpr | RegFile::Agpr) => {
                    Some((k, reg))
                }
                _ => None,
            })
            .collect();
        if !scalar_refs.is_empty() {
            if r.hook.clobbers.any_in(0, 4) {
                self.set_vsharp(&mut s)?;
            }
            for (k, reg) in scalar_refs {
                let off = p.ref_slots[k].unwrap_or(0);
                let t = arg_at[k];
                for (d, bit) in reg_bits(reg).into_iter().enumerate() {
                    s.push(self.scratch("buffer_load_dword", t, off + 4 * d as u32)?);
                    s.push(b(Encoding::Sopp, "s_waitcnt", &[Operand::Imm(0x0F70)])?);
                    // Into its save slot when it is restored from one.
                    let exec_slot = match (bit, p.exec) {
                        (bits::EXEC, Some([lo, _])) => Some(lo),
                        (127, Some([_, hi])) => Some(hi),
                        _ => None,
                    };
                    match exec_slot.or_else(|| slot_of(bit)) {
                        Some(Home::Sgpr(x)) => {
                            s.push(b(Encoding::Vop1, "v_readfirstlane_b32", &[s1(x), v1(t)])?)
                        }
                        Some(Home::Lane(v, l)) => {
                            s.push(b(Encoding::Vop1, "v_readfirstlane_b32", &[s1(30), v1(t)])?);
                            s.push(asm.writelane(v, Asm::sgpr(30, 1), l)?);
                        }
                        None => s.push(b(
                            Encoding::Vop1,
                            "v_readfirstlane_b32",
                            &[scalar_operand(bit), v1(t)],
                        )?),
                    }
                }
            }
        }
        if let Some(j) = skip {
            s.land(j);
        }
        // 8. Restores: vectors with every lane on (a by-reference VGPR comes
        // back from its slot, where the hook wrote), SCC, EXEC, scalars.
        if !p.vectors.is_empty() {
            if r.hook.clobbers.any_in(0, 4)
                && p.vectors
                    .iter()
                    .any(|(_, t)| matches!(t, VSave::Scratch(_)))
            {
                self.set_vsharp(&mut s)?;
            }
            s.push(asm.smov64(EXEC, Operand::Inline(193))?);
            // AGPRs first, while the VGPR they come through is free.
            for &(bit, from) in p.vectors.iter().rev() {
                self.restore_vector(&mut s, p, bit, from)?;
            }
            if p.vectors
                .iter()
                .any(|(_, t)| matches!(t, VSave::Scratch(_)))
            {
                s.push(b(Encoding::Sopp, "s_waitcnt", &[Operand::Imm(0x0F70)])?);
            }
        }
        Ok(Core {
            before_args,
            after_args: self.settle(s)?,
        })
    }

    /// `s` padded and resolved, to be appended whole.
    fn settle(&self, mut s: Snippet) -> Result<Arc<Settled>, RewriteError> {
        let table = &mut self.facts.borrow_mut();
        s.resolve_cached(table, &mut self.fact_ids.borrow_mut())?;
        Ok(Arc::new(Settled::new(s, table)))
    }

    /// The end of the restores: SCC, EXEC, the scalars.
    fn scalar_restores(&self, p: &CallPlan<'_, 'a>, s: &mut Snippet) -> Result<(), RewriteError> {
        let asm = self.asm;
        let b = |e: Encoding, m: &'static str, ops: &[Operand]| asm.build(e, m, ops);
        let s1 = |n: u16| Asm::sgpr(n, 1);
        let zero = Asm::konst(0);
        if let Some(slot) = p.scc {
            match slot {
                Home::Sgpr(t) => s.push(b(Encoding::Sopc, "s_cmp_lg_u32", &[s1(t), zero])?),
                Home::Lane(v, l) => {
                    s.push(asm.readlane(Asm::sgpr(30, 1), v, l)?);
                    s.push(b(Encoding::Sopc, "s_cmp_lg_u32", &[s1(30), zero])?);
                }
            }
        }
        if let Some([lo, hi]) = p.exec {
            self.exec_from_slots(s, lo, hi)?;
        }
        for (bits_, slots) in scalar_moves(&p.scalars) {
            s.push(match slots {
                Moves::One(slot) => self.read_slot(bits_, slot)?,
                Moves::Pair(t) => asm.smov64(scalar_pair_operand(bits_), Asm::sgpr(t, 2))?,
            });
        }
        Ok(())
    }

    fn write_slot(&self, slot: Slot, src: Operand) -> Result<Instruction, RewriteError> {
        match slot {
            Home::Sgpr(t) => self.asm.smov(Asm::sgpr(t, 1), src),
            Home::Lane(v, l) => self.asm.writelane(v, src, l),
        }
    }

    fn read_slot(&self, bit: u16, slot: Slot) -> Result<Instruction, RewriteError> {
        let d = scalar_operand(bit);
        match slot {
            Home::Sgpr(t) => self.asm.smov(d, Asm::sgpr(t, 1)),
            Home::Lane(v, l) => self.asm.readlane(d, v, l),
        }
    }

    fn exec_to_slots(&self, s: &mut Snippet, lo: Slot, hi: Slot) -> Result<(), RewriteError> {
        if let (Home::Sgpr(a), Home::Sgpr(b)) = (lo, hi) {
            if a % 2 == 0 && b == a + 1 {
                s.push(self.asm.smov64(Asm::sgpr(a, 2), EXEC)?);
                return Ok(());
            }
        }
        s.push(self.write_slot(lo, scalar_operand(bits::EXEC))?);
        s.push(self.write_slot(hi, scalar_operand(bits::EXEC + 1))?);
        Ok(())
    }

    fn exec_from_slots(&self, s: &mut Snippet, lo: Slot, hi: Slot) -> Result<(), RewriteError> {
        if let (Home::Sgpr(a), Home::Sgpr(b)) = (lo, hi) {
            if a % 2 == 0 && b == a + 1 {
                s.push(self.asm.smov64(EXEC, Asm::sgpr(a, 2))?);
                return Ok(());
            }
        }
        s.push(self.read_slot(bits::EXEC, lo)?);
        s.push(self.read_slot(bits::EXEC + 1, hi)?);
        Ok(())
    }

    /// `s{to} = home` (an SGPR move or a lane read).
    pub(super) fn read_home(&self, to: u16, home: Home) -> Result<Instruction, RewriteError> {
        self.read_slot(to, home)
    }

    /// s[0:3] = the V# home.
    fn set_vsharp(&self, s: &mut Snippet) -> Result<(), RewriteError> {
        let h = self.homes.vsharp.ok_or(RewriteError::Build(
            "the private segment buffer",
            inlay_isa::BuildError::Unknown("no V# kept".into()),
        ))?;
        for (k, home) in h.iter().enumerate() {
            s.push(self.read_home(k as u16, *home)?);
        }
        Ok(())
    }

    /// `s[to:to+1]` = a pair of homes: one move when they are an aligned
    /// SGPR pair.
    pub(super) fn read_home_pair(
        &self,
        s: &mut Snippet,
        to: u16,
        h: [Home; 2],
    ) -> Result<(), RewriteError> {
        match sgpr_pair(h) {
            Some(a) => s.push(self.asm.smov64(Asm::sgpr(to, 2), Asm::sgpr(a, 2))?),
            None => {
                s.push(self.read_home(to, h[0])?);
                s.push(self.read_home(to + 1, h[1])?);
            }
        }
        Ok(())
    }

    /// A dword of the save area through s[0:3] and s33.
    fn scratch(&self, m: &'static str, v: u16, off: u32) -> Result<Instruction, RewriteError> {
        let mut i = self.asm.build(
            Encoding::Mubuf,
            m,
            &[
                Operand::Vgpr { first: v, count: 1 },
                Operand::Fixed("off"),
                Asm::sgpr(0, 4),
                Asm::sgpr(33, 1),
            ],
        )?;
        if !i.set_modifier(inlay_isa::Modifier::Offset(off as i32)) {
            return Err(RewriteError::Build(
                m,
                inlay_isa::BuildError::Operand {
                    index: 4,
                    reason: "offset out of range",
                },
            ));
        }
        Ok(i)
    }

    fn save_vector(
        &self,
        s: &mut Snippet,
        p: &CallPlan<'_, 'a>,
        bit: u16,
        to: VSave,
    ) -> Result<(), RewriteError> {
        let asm = self.asm;
        if bit >= bits::AGPR_BASE {
            let (t, slot) = match to {
                VSave::Vgpr(t) => (t, None),
                VSave::Scratch(o) => (p.agpr_temp.unwrap_or(0), Some(o)),
            };
            s.push(asm.build(
                Encoding::Vop3p,
                "v_accvgpr_read_b32",
                &[
                    Operand::Vgpr { first: t, count: 1 },
                    Operand::Agpr {
                        first: bit - bits::AGPR_BASE,
                        count: 1,
                    },
                ],
            )?);
            if let Some(o) = slot {
                s.push(self.scratch("buffer_store_dword", t, o)?);
            }
            return Ok(());
        }
        let v = bit - bits::VGPR_BASE;
        s.push(match to {
            VSave::Vgpr(t) => asm.vmov(t, Operand::Vgpr { first: v, count: 1 })?,
            VSave::Scratch(o) => self.scratch("buffer_store_dword", v, o)?,
        });
        Ok(())
    }

    fn restore_vector(
        &self,
        s: &mut Snippet,
        p: &CallPlan<'_, 'a>,
        bit: u16,
        from: VSave,
    ) -> Result<(), RewriteError> {
        let asm = self.asm;
        if bit >= bits::AGPR_BASE {
            let t = match from {
                VSave::Vgpr(t) => t,
                VSave::Scratch(o) => {
                    let t = p.agpr_temp.unwrap_or(0);
                    s.push(self.scratch("buffer_load_dword", t, o)?);
                    s.push(asm.build(Encoding::Sopp, "s_waitcnt", &[Operand::Imm(0x0F70)])?);
                    t
                }
            };
            s.push(asm.build(
                Encoding::Vop3p,
                "v_accvgpr_write_b32",
                &[
                    Operand::Agpr {
                        first: bit - bits::AGPR_BASE,
                        count: 1,
                    },
                    Operand::Vgpr { first: t, count: 1 },
                ],
            )?);
            return Ok(());
        }
        let v = bit - bits::VGPR_BASE;
        s.push(match from {
            VSave::Vgpr(t) => asm.vmov(v, Operand::Vgpr { first: t, count: 1 })?,
            VSave::Scratch(o) => self.scratch("buffer_load_dword", v, o)?,
        });
        Ok(())
    }

    /// Whether computing the arguments may need a spare VGPR: one
    /// argument's destination is another's source (a cycle may need
    /// breaking), or an address's SGPR base is in save slots while its
    /// offset VGPR lies in the destination pair.
    fn needs_spare(&self, p: &CallPlan<'_, 'a>) -> bool {
        let args = &p.req.call.args;
        let inst = &self.an.program.insts[p.req.inst].inst;
        let at = arg_vgprs(args);
        args.iter().enumerate().any(|(k, a)| {
            let dest = at[k]..at[k] + a.dwords() as u16;
            let feeds_another = args.iter().enumerate().any(|(j, b)| {
                j != k
                    && VgprSources::of(b, inst)
                        .as_slice()
                        .iter()
                        .any(|v| dest.contains(v))
            });
            let address_through = *a == Arg::Address
                && address_operands(inst).is_some_and(|(vaddr, saddr, _)| {
                    saddr.is_some_and(|sb| self.overwritten(p, sb) || self.overwritten(p, sb + 1))
                        && dest.contains(&vaddr)
                });
            feeds_another || address_through
        })
    }

    /// Registers the sequence has written before the arguments are read:
    /// their application values are in their save slots.
    fn overwritten(&self, p: &CallPlan<'_, 'a>, bit: u16) -> bool {
        let once = p.req.call.once_per_wave;
        bit == 30
            || bit == 31
            || (p.scratch_early && (bit < 4 || bit == 33))
            || (once && (bit == bits::EXEC || bit == bits::EXEC + 1 || bit == bits::SCC))
    }

    /// The save slot of scalar `bit` (EXEC's and SCC's included).
    fn slot_of(&self, p: &CallPlan<'_, 'a>, bit: u16) -> Option<Slot> {
        match (bit, p.exec) {
            (bits::EXEC, Some([lo, _])) => Some(lo),
            (127, Some([_, hi])) => Some(hi),
            (bits::SCC, _) => p.scc,
            _ => p.scalars.iter().find(|(b, _)| *b == bit).map(|x| x.1),
        }
    }

    /// `v[t]` (every enabled lane) = the application's value of scalar `bit`.
    fn scalar_into_vgpr(
        &self,
        s: &mut Snippet,
        p: &CallPlan<'_, 'a>,
        bit: u16,
        t: u16,
    ) -> Result<(), RewriteError> {
        let asm = self.asm;
        let src = if self.overwritten(p, bit) {
            match self.slot_of(p, bit) {
                Some(Home::Sgpr(x)) => Asm::sgpr(x, 1),
                Some(Home::Lane(v, l)) => {
                    s.push(asm.readlane(Asm::sgpr(30, 1), v, l)?);
                    s.push(asm.vmov(t, Asm::sgpr(30, 1))?);
                    return Ok(());
                }
                // Not saved: not live and not read, so any value does.
                None => scalar_operand(bit),
            }
        } else {
            scalar_operand(bit)
        };
        s.push(asm.vmov(t, src)?);
        Ok(())
    }

    /// Computes the arguments into v0.. in an order that reads every
    /// source before it is overwritten.
    fn arguments(
        &self,
        p: &CallPlan<'_, 'a>,
        s: &mut Snippet,
        inst: &Instruction,
    ) -> Result<(), RewriteError> {
        let args = &p.req.call.args;
        let at = arg_vgprs(args);
        // VGPRs each argument reads and writes.
        let mut sources: Vec<VgprSources> = args.iter().map(|a| VgprSources::of(a, inst)).collect();
        let dests = |k: usize| at[k]..at[k] + args[k].dwords() as u16;
        // Renamed sources (after a cycle is broken through a spare VGPR).
        let mut rename: Vec<(u16, u16)> = Vec::new();
        let mut pending: Vec<usize> = (0..args.len()).collect();
        while !pending.is_empty() {
            let ready = pending.iter().position(|&k| {
                pending
                    .iter()
                    .all(|&j| j == k || dests(k).all(|d| !sources[j].contains(d)))
            });
            match ready {
                Some(pos) => {
                    let k = pending.remove(pos);
                    self.argument(p, s, inst, k, at[k], &rename)?;
                }
                None => {
                    // A cycle: move one source out of the way.
                    let k = pending[0];
                    let d = dests(k)
                        .find(|&d| pending.iter().any(|&j| j != k && sources[j].contains(d)))
                        .unwrap_or(at[k]);
                    let spare = p.spare_vgpr.ok_or_else(|| {
                        self.fail(
                            p.req,
                            "no VGPR free to reorder the arguments through".into(),
                        )
                    })?;
                    s.push(self.asm.vmov(spare, Operand::Vgpr { first: d, count: 1 })?);
                    rename.push((d, spare));
                    for src in sources.iter_mut() {
                        for v in src.v.iter_mut().take(usize::from(src.n)) {
                            if *v == d {
                                *v = spare;
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// One argument into `v[d]..`.
    fn argument(
        &self,
        p: &CallPlan<'_, 'a>,
        s: &mut Snippet,
        inst: &Instruction,
        k: usize,
        d: u16,
        rename: &[(u16, u16)],
    ) -> Result<(), RewriteError> {
        let asm = self.asm;
        let b = |e: Encoding, m: &'static str, ops: &[Operand]| asm.build(e, m, ops);
        let v1 = |n: u16| Operand::Vgpr {
            first: rename
                .iter()
                .rev()
                .find(|(f, _)| *f == n)
                .map_or(n, |x| x.1),
            count: 1,
        };
        let r = p.req;
        match &r.call.args[k] {
            Arg::Const32(_) | Arg::Const64(_) => {
                for dword in 0..a_dwords(&r.call.args[k]) {
                    match constant_operand(&self.varying, r, k, dword) {
                        // Each copy of the template patches its own value
                        // in: the code holds 0, one form for every call.
                        None => s.push_constant(
                            asm.vmov(d + u16::from(dword), Operand::Literal(0))?,
                            k,
                            dword,
                        ),
                        Some(op) => s.push(asm.vmov(d + u16::from(dword), op)?),
                    }
                }
            }
            Arg::Value(reg) => match reg.file {
                RegFile::Vgpr => {
                    // Like memmove: high dword first when the destination
                    // overlaps the source from above.
                    let order: Vec<u16> = if d > reg.first {
                        (0..u16::from(reg.count)).rev().collect()
                    } else {
                        (0..u16::from(reg.count)).collect()
                    };
                    for j in order {
                        s.push(asm.vmov(d + j, v1(reg.first + j))?);
                    }
                }
                RegFile::Agpr => {
                    for j in 0..u16::from(reg.count) {
                        s.push(b(
                            Encoding::Vop3p,
                            "v_accvgpr_read_b32",
                            &[
                                Operand::Vgpr {
                                    first: d + j,
                                    count: 1,
                                },
                                Operand::Agpr {
                                    first: reg.first + j,
                                    count: 1,
                                },
                            ],
                        )?);
                    }
                }
                // SCC as 0 or 1 (from its slot once EXEC's setup wrote it).
                RegFile::Scc if self.overwritten(p, bits::SCC) => {
                    self.scalar_into_vgpr(s, p, bits::SCC, d)?;
                }
                RegFile::Scc => {
                    s.push(b(
                        Encoding::Sop2,
                        "s_cselect_b32",
                        &[Asm::sgpr(30, 1), Asm::konst(1), Asm::konst(0)],
                    )?);
                    s.push(asm.vmov(d, Asm::sgpr(30, 1))?);
                }
                _ => {
                    for (j, bit) in reg_bits(reg).into_iter().enumerate() {
                        self.scalar_into_vgpr(s, p, bit, d + j as u16)?;
                    }
                }
            },
            Arg::Reference(reg) => {
                let off = p.ref_slots[k].ok_or_else(|| {
                    self.fail(r, "no slot for a register passed by reference".into())
                })?;
                let _ = reg;
                s.push(asm.vmov(d, Operand::Literal(self.stack_base + off))?);
                s.push(asm.vmov(
                    d + 1,
                    Operand::Special {
                        code: 237,
                        count: 1,
                    },
                )?);
            }
            Arg::Address => {
                let (vaddr, saddr, offset) = address_operands(inst)
                    .ok_or_else(|| self.fail(r, "the instruction has no address".into()))?;
                let pair = Operand::Vgpr { first: d, count: 2 };
                match saddr {
                    // saddr + zero-extended vaddr in one multiply-add by 1,
                    // reading both before writing.
                    Some(sb) if !self.overwritten(p, sb) && !self.overwritten(p, sb + 1) => {
                        s.push(b(
                            Encoding::Vop3,
                            "v_mad_u64_u32",
                            &[
                                pair,
                                Asm::sgpr(30, 2),
                                v1(vaddr),
                                Asm::konst(1),
                                super::asm::scalar_pair(sb),
                            ],
                        )?);
                    }
                    Some(sb) => {
                        // The base is in save slots: vaddr out of the way first.
                        let mut va = v1(vaddr);
                        if vaddr == d || vaddr == d + 1 {
                            let spare = p.spare_vgpr.ok_or_else(|| {
                                self.fail(r, "no VGPR free to compute the address through".into())
                            })?;
                            s.push(asm.vmov(spare, va)?);
                            va = Operand::Vgpr {
                                first: spare,
                                count: 1,
                            };
                        }
                        self.scalar_into_vgpr(s, p, sb, d)?;
                        self.scalar_into_vgpr(s, p, sb + 1, d + 1)?;
                        s.push(b(
                            Encoding::Vop3,
                            "v_mad_u64_u32",
                            &[pair, Asm::sgpr(30, 2), va, Asm::konst(1), pair],
                        )?);
                    }
                    None if d > vaddr => {
                        s.push(asm.vmov(d + 1, v1(vaddr + 1))?);
                        s.push(asm.vmov(d, v1(vaddr))?);
                    }
                    None => {
                        s.push(asm.vmov(d, v1(vaddr))?);
                        s.push(asm.vmov(d + 1, v1(vaddr + 1))?);
                    }
                }
                if offset != 0 {
                    let o = match Asm::inline_int(offset) {
                        Some(o) => o,
                        None => {
                            s.push(asm.mov_lit(29, offset as u32)?);
                            Asm::sgpr(29, 1)
                        }
                    };
                    s.push(b(
                        Encoding::Vop3,
                        "v_mad_i64_i32",
                        &[pair, Asm::sgpr(30, 2), o, Asm::konst(1), pair],
                    )?);
                }
            }
            Arg::Launch(v) => self.launch_value(p.req, s, *v, d, 30)?,
        }
        Ok(())
    }

    /// Launch value `v` into `v[d]`, through the SGPR pair `s[t:t+1]`
    /// (which it changes, and SCC).
    pub(super) fn launch_value(
        &self,
        r: &Request<'_>,
        s: &mut Snippet,
        v: LaunchValue,
        d: u16,
        t: u16,
    ) -> Result<(), RewriteError> {
        let asm = self.asm;
        let homes = self.homes;
        let b = |e: Encoding, m: &'static str, ops: &[Operand]| asm.build(e, m, ops);
        let missing = |what: &str| self.fail(r, format!("no {what} kept"));
        // A home's value into s30 (and s31), then into VGPRs.
        let load = |s: &mut Snippet, ptr: [Home; 2], offset: u32| -> Result<(), RewriteError> {
            s.push(self.read_home(t, ptr[0])?);
            s.push(self.read_home(t + 1, ptr[1])?);
            s.push(b(
                Encoding::Smem,
                "s_load_dword",
                &[Asm::sgpr(t, 1), Asm::sgpr(t, 2), Operand::Imm(offset)],
            )?);
            s.push(b(Encoding::Sopp, "s_waitcnt", &[Operand::Imm(0xC07F)])?);
            Ok(())
        };
        match v {
            LaunchValue::GridSize(dim) => {
                load(
                    s,
                    homes.dispatch.ok_or_else(|| missing("dispatch pointer"))?,
                    12 + 4 * u32::from(dim),
                )?;
                s.push(asm.vmov(d, Asm::sgpr(t, 1))?);
            }
            LaunchValue::WorkgroupSize(dim) => {
                let at = 4 + 2 * u32::from(dim);
                load(
                    s,
                    homes.dispatch.ok_or_else(|| missing("dispatch pointer"))?,
                    at & !3,
                )?;
                if at % 4 == 2 {
                    s.push(b(
                        Encoding::Sop2,
                        "s_lshr_b32",
                        &[Asm::sgpr(t, 1), Asm::sgpr(t, 1), Asm::konst(16)],
                    )?);
                } else {
                    s.push(b(
                        Encoding::Sop2,
                        "s_and_b32",
                        &[Asm::sgpr(t, 1), Asm::sgpr(t, 1), Operand::Literal(0xffff)],
                    )?);
                }
                s.push(asm.vmov(d, Asm::sgpr(t, 1))?);
            }
            LaunchValue::WorkgroupId(dim) => {
                let h =
                    homes.workgroup_id[usize::from(dim)].ok_or_else(|| missing("workgroup id"))?;
                s.push(self.read_home(t, h)?);
                s.push(asm.vmov(d, Asm::sgpr(t, 1))?);
            }
            LaunchValue::WorkitemId(dim) => {
                let w = homes.workitem.ok_or_else(|| missing("work-item ids"))?;
                s.push(b(
                    Encoding::Vop3,
                    "v_bfe_u32",
                    &[
                        Operand::Vgpr { first: d, count: 1 },
                        Operand::Vgpr { first: w, count: 1 },
                        Asm::konst(10 * u32::from(dim)),
                        Asm::konst(10),
                    ],
                )?);
            }
            LaunchValue::KernargDword(off) => {
                load(
                    s,
                    homes
                        .kernarg
                        .ok_or_else(|| missing("kernel-argument pointer"))?,
                    off,
                )?;
                s.push(asm.vmov(d, Asm::sgpr(t, 1))?);
            }
            LaunchValue::KernargPtr | LaunchValue::DispatchPtr => {
                let h = if v == LaunchValue::KernargPtr {
                    homes.kernarg
                } else {
                    homes.dispatch
                }
                .ok_or_else(|| missing("pointer"))?;
                for (j, home) in h.iter().enumerate() {
                    s.push(self.read_home(t, *home)?);
                    s.push(asm.vmov(d + j as u16, Asm::sgpr(t, 1))?);
                }
            }
        }
        Ok(())
    }
}

/// One past the highest VGPR a kernel with `agprs` AGPRs may name: code
/// names 256, and on gfx90a VGPRs (rounded up to 4) and AGPRs share a file
/// of 512.
fn vgpr_ceiling(agprs: u32) -> u16 {
    if agprs == 0 {
        256
    } else {
        (512u32.saturating_sub(agprs) & !3).min(256) as u16
    }
}

/// A hook the calls name, and how often.
pub(super) struct CalledHook<'a> {
    info: &'a HookInfo,
    /// Its first request, and its number of sites.
    first: usize,
    sites: usize,
    /// Some call of it may be inlined (is not placed as a call).
    inlinable: bool,
}

/// Call sites of one hook from which its address is kept for the whole
/// kernel. Keeping it costs every wave three instructions (`s_getpc_b64`
/// and two adds, in the preamble) and saves three per call; a hook called
/// from few sites (a few memory instructions a wave may never reach) is
/// cheaper to reach from each call, as it costs no wave that makes none.
const KEEP_ADDRESS_FROM: usize = 16;

/// The calls of a plan with the kernel-wide state they share.
pub(super) struct Calls<'a> {
    an: &'a Analysis,
    reqs: Vec<Request<'a>>,
    /// Which constant argument dwords vary between a hook's calls.
    varying: Varying,
    implicit: Option<Implicit>,
    state: super::preamble::LaunchState,
    /// Registers any called hook writes.
    hooks_write: RegSet,
    /// Lane offset of the instrumentation area, and the deepest hook stack.
    stack_base: u32,
    max_stack: u32,
    /// One past the highest SGPR / VGPR / AGPR a called hook names.
    hook_sgprs: u16,
    hook_vgprs: u16,
    hook_agprs: u16,
    /// The inlined hooks' bodies, simplified while planning (for the
    /// constants they read), for placing.
    bodies: std::cell::RefCell<super::inline::Bodies>,
}

/// One call's code: its template (by index), and the call whose
/// constants it takes.
#[derive(Clone, Copy)]
struct CallCode<'a> {
    template: u32,
    args: &'a [Arg],
}

/// The calls at one site, in order, with the templates they copy.
pub(super) struct SiteCode<'p> {
    calls: &'p [CallCode<'p>],
    templates: &'p [Template],
}

impl SiteCode<'_> {
    fn templates(&self) -> impl Iterator<Item = &Template> {
        self.calls
            .iter()
            .map(|c| &self.templates[c.template as usize])
    }

    #[inline(always)]
    pub(super) fn bytes(&self) -> u64 {
        self.templates().map(Template::bytes).sum()
    }

    /// The templates the calls copy, in order (indices in
    /// [`Placed::templates`]).
    pub(super) fn template_ids(&self) -> impl Iterator<Item = usize> + '_ {
        self.calls.iter().map(|c| c.template as usize)
    }

    /// Appends the calls' code (most sites have none: only that is
    /// checked inline).
    #[inline(always)]
    pub(super) fn encode(&self, code: &mut Vec<u8>, relocs: &mut super::Relocations) {
        if !self.calls.is_empty() {
            self.encode_calls(code, relocs);
        }
    }

    fn encode_calls(&self, code: &mut Vec<u8>, relocs: &mut super::Relocations) {
        for c in self.calls {
            let args = c.args;
            self.templates[c.template as usize].encode(code, relocs, |arg, dword| {
                args.get(usize::from(arg)).map_or(0, |a| constant(a, dword))
            });
        }
    }
}

/// Call code placed in the kernel, and what it needs of the descriptor.
#[derive(Default)]
pub(super) struct Placed<'a> {
    /// Each distinct call sequence, encoded once.
    templates: Vec<Template>,
    /// The calls grouped by site (see [`site_slot`]), each group in the
    /// plan's order: group `g` is `calls[start[g]..start[g + 1]]`.
    start: Vec<u32>,
    calls: Vec<CallCode<'a>>,
    pub(super) max_sgpr: u16,
    pub(super) max_vgpr: u16,
    pub(super) agprs: u16,
    /// Bytes of private memory per lane the instrumented kernel needs.
    pub(super) private_size: Option<u32>,
    pub(super) implicit_block: bool,
    /// Calls placed inline (see `inline`).
    pub(super) inlined: usize,
    /// Hazard facts of the instructions in the templates (and any other
    /// met while building them).
    pub(super) facts: super::hazards::FactsTable,
}

/// A site's group among the placed calls: the entry, then before and
/// after each instruction.
#[inline(always)]
fn site_slot(site: Site) -> usize {
    match site {
        Site::Entry => 0,
        Site::Before(i) => 1 + 2 * i,
        Site::After(i) => 2 + 2 * i,
    }
}

impl<'a> Placed<'a> {
    /// The calls at `site`.
    #[inline(always)]
    pub(super) fn at(&self, site: Site) -> SiteCode<'_> {
        let g = site_slot(site);
        let calls = match (self.start.get(g), self.start.get(g + 1)) {
            (Some(&a), Some(&b)) => &self.calls[a as usize..b as usize],
            _ => &[],
        };
        SiteCode {
            calls,
            templates: &self.templates,
        }
    }

    /// Each distinct call sequence.
    pub(super) fn templates(&self) -> &[Template] {
        &self.templates
    }

    /// Relocations the placed code makes.
    pub(super) fn relocations(&self) -> usize {
        self.calls
            .iter()
            .map(|c| self.templates[c.template as usize].relocations())
            .sum()
    }

    /// The distinct call sequences' instructions (constants not patched in).
    pub(super) fn instructions(&self) -> impl Iterator<Item = &Instruction> {
        self.templates.iter().flat_map(|t| t.code.iter())
    }

    /// Instructions (the static count).
    pub(super) fn insts(&self) -> usize {
        self.calls
            .iter()
            .map(|c| self.templates[c.template as usize].insts)
            .sum()
    }
}

impl<'a> Calls<'a> {
    pub(super) fn new(
        an: &'a Analysis,
        descriptor: &KernelDescriptor,
        plan: &'a Plan,
        asm: &Asm,
    ) -> Result<Calls<'a>, RewriteError> {
        let Survey {
            reqs,
            called,
            arg_needs,
            varying,
        } = requests(an, plan)?;
        let fail = |r: &Request<'_>, reason: String| {
            call_error(an, r.call, describe(an, r.site, r.inst), reason)
        };
        let mut implicit = None;
        for h in called.iter().filter(|h| h.info.inputs.implicitarg_ptr) {
            let r = &reqs[h.first];
            let version = plan.modules[r.call.module].code_object_version();
            if version < 5 {
                return Err(fail(
                    r,
                    format!("the hook module is of code object version {version}; hooks that read implicit arguments must be of version 5"),
                ));
            }
            implicit = Some(match an.launch.implicit_args_v5 {
                Some(off) => Implicit::Kernarg(off),
                None => Implicit::Block,
            });
        }
        let mut needs = needs(&called, arg_needs, implicit);
        // Any call may have to save VGPRs on the instrumentation stack
        // (known only once registers are found), so the V# is kept whenever
        // there are calls.
        needs.vsharp |= !reqs.is_empty();
        let mut hooks_write = RegSet::new();
        let (mut hs, mut hv, mut ha, mut stack) = (0u16, 0u16, 0u16, 0u32);
        for h in called.iter().map(|h| h.info) {
            hooks_write.union_with(&h.writes);
            hs = hs.max(h.sgprs as u16);
            hv = hv.max(h.vgprs as u16);
            ha = ha.max(h.agprs as u16);
            if h.inputs.private_segment {
                stack = stack.max(h.stack_bytes);
            }
        }
        if let Some(r) = reqs.first() {
            if needs.vsharp && an.launch.dynamic_stack && plan.private_segment_size.is_none() {
                return Err(fail(
                    r,
                    "the kernel's stack size is known only at run time (dynamic stack) and the plan does not say how much private memory the dispatch gives it, so none can be placed above it".into(),
                ));
            }
        }
        let stack_base = an
            .launch
            .private_segment_size
            .max(descriptor.private_segment_fixed_size)
            .max(plan.private_segment_size.unwrap_or(0))
            .next_multiple_of(16);
        let res = &an.resources;
        // Homes avoid what the kernel names, what hooks write, and what the
        // call sequence sets (s0..s15, s29..s33, v0..v31).
        let mut regs = hooks_write;
        regs.insert_range(0, res.sgprs_used.max(16) as u16);
        regs.insert_range(29, 5);
        regs.insert_range(bits::VGPR_BASE, res.vgprs_used.max(32) as u16);
        let avoid = super::preamble::Avoid {
            regs,
            sgpr_floor: res.sgprs_used.max(16) as u16,
            // Past the VGPRs built-in hooks may take above the allocation.
            vgpr_floor: (res.vgprs_allocated as u16 + 4).max(32).max(hv),
        };
        // The hooks called from many sites: their addresses are kept.
        let hooks: Vec<std::sync::Arc<str>> = called
            .iter()
            .filter(|h| h.sites >= KEEP_ADDRESS_FROM)
            .map(|h| reqs[h.first].call.hook.clone())
            .collect();
        // The addresses in hook modules, and the global-offset-table
        // entries, that hooks inlined from many sites read: found once,
        // into homes.
        // (A value and the sites of the hooks that read it.)
        let mut module_values: Vec<(ModuleValue, usize)> = Vec::new();
        for h in &called {
            let r = &reqs[h.first];
            if !h.inlinable {
                continue;
            }
            let symbol: std::sync::Arc<str> = r.call.hook.clone();
            for (distance, loaded) in super::inline::module_values(h.info) {
                let address = h.info.address.wrapping_add(distance as u64);
                match module_values.iter_mut().find(|(g, _)| {
                    g.module == r.call.module && g.address == address && g.loaded == loaded
                }) {
                    Some((_, sites)) => *sites += h.sites,
                    None => module_values.push((
                        ModuleValue {
                            module: r.call.module,
                            address,
                            loaded,
                            symbol: symbol.clone(),
                            distance,
                        },
                        h.sites,
                    )),
                }
            }
        }
        let module_values: Vec<ModuleValue> = module_values
            .into_iter()
            .filter(|&(_, sites)| sites >= KEEP_ADDRESS_FROM)
            .map(|(g, _)| g)
            .collect();
        // The constants inlined bodies read from many sites: kept too.
        let bodies = super::inline::Bodies::new(asm, &reqs, called.iter().any(|h| h.inlinable));
        let constants = bodies.constants(KEEP_ADDRESS_FROM);
        let state = super::preamble::launch_state(
            asm,
            descriptor,
            &needs,
            &super::preamble::Kept {
                hooks: &hooks,
                module_values: &module_values,
                constants: &constants,
            },
            &an.program.kernel,
            &avoid,
        )
        .map_err(|why| match reqs.first() {
            Some(r) => fail(r, why),
            None => RewriteError::Build("the launch state", inlay_isa::BuildError::Unknown(why)),
        })?;
        Ok(Calls {
            an,
            reqs,
            varying,
            implicit,
            state,
            hooks_write,
            stack_base,
            max_stack: stack,
            hook_sgprs: hs,
            hook_vgprs: hv,
            hook_agprs: ha,
            bodies: std::cell::RefCell::new(bodies),
        })
    }

    /// Registers the homes hold (for the whole kernel).
    pub(super) fn taken(&self) -> RegSet {
        self.state.homes.taken
    }

    /// SGPRs a call may change: launch values there must be read from copies.
    pub(super) fn clobbered_sgprs(&self) -> RegSet {
        let mut s = RegSet::new();
        if !self.reqs.is_empty() {
            s = self.hooks_write;
            s.insert_range(0, 16);
            s.insert_range(29, 5);
        }
        s
    }

    /// The lowest SGPR built-in hooks may hold for the whole kernel: above
    /// the homes and every SGPR a called hook names.
    pub(super) fn sgpr_floor(&self) -> u16 {
        if self.reqs.is_empty() {
            return 0;
        }
        let homes = self
            .state
            .homes
            .taken
            .iter()
            .filter(|&b| b < bits::NUM_SGPRS)
            .map(|b| b + 1)
            .max()
            .unwrap_or(0);
        homes.max(self.hook_sgprs).max(34)
    }

    pub(super) fn preamble(&self) -> &Snippet {
        &self.state.preamble
    }

    /// The descriptor with the initial registers the calls need enabled.
    pub(super) fn descriptor(&self) -> KernelDescriptor {
        self.state.descriptor
    }

    /// Plans and writes every call; `taken` adds the registers built-in
    /// hooks hold for the whole kernel to the homes.
    pub(super) fn place(
        &self,
        asm: &Asm,
        taken: RegSet,
        save_all: bool,
        borrow_all: bool,
    ) -> Result<Placed<'a>, RewriteError> {
        let n = self.an.program.insts.len();
        let mut out = Placed::default();
        if self.reqs.is_empty() {
            out.facts = asm.facts.take();
            return Ok(out);
        }
        let homes_vgpr = self
            .state
            .homes
            .taken
            .iter()
            .filter(|&b| (bits::VGPR_BASE..bits::AGPR_BASE).contains(&b))
            .map(|b| b - bits::VGPR_BASE + 1)
            .max()
            .unwrap_or(0);
        let ctx = Ctx {
            an: self.an,
            asm,
            homes: &self.state.homes,
            taken: taken.union(&self.state.homes.taken),
            vgpr_limit: (self.an.resources.vgprs_allocated as u16)
                .max(self.hook_vgprs)
                .max(homes_vgpr)
                .min(256),
            vgpr_ceiling: vgpr_ceiling(
                self.an
                    .resources
                    .agprs_allocated
                    .max(u32::from(self.hook_agprs)),
            ),
            stack_base: self.stack_base,
            save_all,
            borrow_all,
            loaded: loaded_registers(self.an),
            sgprs_often_dead: Default::default(),
            scalar_slots: Default::default(),
            facts: std::cell::RefCell::new(asm.facts.take()),
            fact_ids: std::cell::RefCell::new(super::snippet::IdCache::new()),
            cores: Default::default(),
            named: Default::default(),
            varying: self.varying.clone(),
        };
        // Calls with the same hook, argument kinds and plan get the same
        // code up to their constants: each distinct plan is kept once (in
        // order of first use), and every call names its plan.
        let mut distinct = Vec::new();
        let mut ids: std::collections::HashMap<Box<[u64]>, usize, FastHash> = Default::default();
        // Each call's template, in request order; and how many calls each
        // site has (at `start[g + 1]`, for the grouping below), and whether
        // the requests came in site order (they mostly do).
        let mut calls: Vec<CallCode<'a>> = Vec::with_capacity(self.reqs.len());
        out.start = vec![0u32; 2 * n + 2];
        let (mut in_order, mut last_slot) = (true, 0);
        let mut key = Vec::new();
        // A plan is a function of the call and the liveness at its site:
        // calls alike at points with the same live registers share it
        // without planning again.
        // (Keyed by the call's part, an index into the distinct ones, and
        // the live registers, hashed and compared as the liveness stores
        // them: no key built per point.)
        let mut by_inputs: hashbrown::HashTable<(u32, RegSet, usize)> = Default::default();
        let inputs_hash =
            |part: u32, words: &[u64]| crate::fast_hash::hash_words(u64::from(part), words);
        let mut call_parts: std::collections::HashMap<Box<[u64]>, u32, FastHash> =
            Default::default();
        let (mut words, mut last_words) = (Vec::new(), Vec::new());
        let mut bodies = self.bodies.borrow_mut();
        let mut inline_ids: std::collections::HashMap<usize, usize, FastHash> = Default::default();
        // (The call part is kept while calls in a row have it alike, or
        // the same words.)
        let (mut last, mut part) = (None::<&Request<'_>>, 0u32);
        // (The last point's part, live registers as stored and as a set,
        // and plan.)
        let mut last_site: Option<(u32, &[u64], [u64; RegSet::WORDS], usize)> = None;
        for (k, r) in self.reqs.iter().enumerate() {
            if !last.is_some_and(|l| same_call_key(&ctx.varying, l, r)) {
                ctx.call_key(r, &mut words);
                words.push(r.call.placement as u64);
                if last.is_none() || words != last_words {
                    part = match call_parts.get(words.as_slice()) {
                        Some(&p) => p,
                        None => {
                            let p = call_parts.len() as u32;
                            call_parts.insert(words.as_slice().into(), p);
                            p
                        }
                    };
                    std::mem::swap(&mut words, &mut last_words);
                }
                last = Some(r);
            }
            // (Most points have the live registers of the point before:
            // compared first as stored, unpacking nothing, then as a set
            // (a point whose registers only moved between the active and
            // inactive lanes' sets), before the map is asked.)
            let words = self.an.liveness.words_before(r.live_at);
            let id = 'plan: {
                if let Some((p, w, _, id)) = last_site {
                    if p == part && w == words {
                        break 'plan id;
                    }
                }
                let live = self.an.liveness.any_words_before(r.live_at);
                if let Some((p, _, last_live, id)) = last_site {
                    if p == part && last_live == live {
                        last_site = Some((part, words, live, id));
                        break 'plan id;
                    }
                }
                let hash = inputs_hash(part, &live);
                let same = |e: &(u32, RegSet, usize)| {
                    e.0 == part && e.1.words().iter().zip(&live).all(|(a, b)| a == b)
                };
                if let Some(&(_, _, id)) = by_inputs.find(hash, same) {
                    last_site = Some((part, words, live, id));
                    break 'plan id;
                }
                let id = match ctx.place_one(r, k, &mut bodies)? {
                    Placing::Call(p) => {
                        ctx.template_key(&p, &mut key);
                        match ids.get(key.as_slice()) {
                            Some(&id) => id,
                            None => {
                                ids.insert(key.clone().into_boxed_slice(), distinct.len());
                                distinct.push(Placing::Call(p));
                                distinct.len() - 1
                            }
                        }
                    }
                    // (Points placing the same copy share its template.)
                    Placing::Inline(i) => match inline_ids.get(&i.copy) {
                        Some(&id) => id,
                        None => {
                            inline_ids.insert(i.copy, distinct.len());
                            distinct.push(Placing::Inline(i));
                            distinct.len() - 1
                        }
                    },
                };
                by_inputs.insert_unique(hash, (part, RegSet::from_words(live), id), |e| {
                    inputs_hash(e.0, e.1.words())
                });
                last_site = Some((part, words, live, id));
                id
            };
            let g = site_slot(r.site);
            in_order &= g >= last_slot;
            last_slot = g;
            out.start[g + 1] += 1;
            calls.push(CallCode {
                template: id as u32,
                args: &r.call.args,
            });
        }
        let plans = || {
            distinct.iter().filter_map(|d| match d {
                Placing::Call(p) => Some(p),
                Placing::Inline(_) => None,
            })
        };
        let area = plans()
            .map(|p| p.area)
            .max()
            .unwrap_or(0)
            .next_multiple_of(16);
        for p in plans() {
            let need = self.stack_base + area + p.req.hook.stack_bytes;
            if need > MAX_PRIVATE {
                return Err(ctx.fail(
                    p.req,
                    format!(
                        "with the hook's stack ({} bytes) on top of the kernel's private segment and the saves, a lane would need {need} bytes of private memory (at most {MAX_PRIVATE})",
                        p.req.hook.stack_bytes
                    ),
                ));
            }
        }
        let mut scratch = self.state.homes.vsharp.is_some();
        // Each distinct plan's code, built and encoded once.
        out.templates = distinct
            .iter()
            .map(|d| {
                Ok(match d {
                    Placing::Call(p) => Template::new(ctx.code(p, area)?),
                    Placing::Inline(i) => Template::new(i.code.clone()),
                })
            })
            .collect::<Result<Vec<_>, RewriteError>>()?;
        for d in &distinct {
            match d {
                Placing::Call(p) => {
                    out.max_sgpr = out.max_sgpr.max(p.max_sgpr);
                    out.max_vgpr = out.max_vgpr.max(p.max_vgpr);
                    scratch |= p.area > 0;
                }
                Placing::Inline(i) => {
                    out.max_sgpr = out.max_sgpr.max(i.max_sgpr);
                    out.max_vgpr = out.max_vgpr.max(i.max_vgpr);
                }
            }
        }
        out.inlined = calls
            .iter()
            .filter(|c| matches!(distinct[c.template as usize], Placing::Inline(_)))
            .count();
        let checked = if cfg!(debug_assertions) {
            calls.len()
        } else {
            0
        };
        for (r, c) in self.reqs.iter().zip(&calls).take(checked) {
            let Placing::Call(shared) = &distinct[c.template as usize] else {
                continue;
            };
            // (Debug builds) the plan of the call's template fits it: its
            // slots are free at the call's point, and the copy is the code
            // built for the call with that plan, its constants patched in.
            let mut live = self.an.live_any_before(r.live_at);
            let inst = &self.an.program.insts[r.inst].inst;
            for a in &r.call.args {
                add_arg_sources(a, inst, &mut live);
            }
            debug_assert!(
                shared.slots().all(|b| !live.contains(b)),
                "a call's shared save slots are live at its point"
            );
            let p = &CallPlan {
                req: r,
                ..shared.clone()
            };
            let (mut built, mut copied) = (Vec::new(), Vec::new());
            let (mut built_relocs, mut copied_relocs) = Default::default();
            let constants = |arg: u8, dword| {
                c.args
                    .get(usize::from(arg))
                    .map_or(0, |a| constant(a, dword))
            };
            Template::new(ctx.code(p, area)?).encode(&mut built, &mut built_relocs, constants);
            out.templates[c.template as usize].encode(&mut copied, &mut copied_relocs, constants);
            debug_assert!(
                built == copied && built_relocs == copied_relocs,
                "a call's code from its template differs from the code built for it"
            );
        }
        // The calls grouped by site, in the plan's order within a site (a
        // counting sort, the counts gathered above; calls already in site
        // order, as a plan mostly lists them, are left so).
        let mut sum = 0;
        for s in &mut out.start {
            sum += *s;
            *s = sum;
        }
        out.calls = if in_order {
            calls
        } else {
            let mut next = out.start.clone();
            let mut order = vec![0usize; calls.len()];
            for (k, r) in self.reqs.iter().enumerate() {
                let g = site_slot(r.site);
                order[next[g] as usize] = k;
                next[g] += 1;
            }
            order.into_iter().map(|k| calls[k]).collect()
        };
        out.max_sgpr = out.max_sgpr.max(self.hook_sgprs.saturating_sub(1));
        out.max_vgpr = out
            .max_vgpr
            .max(self.hook_vgprs.saturating_sub(1))
            .max(homes_vgpr.saturating_sub(1));
        for b in self
            .state
            .homes
            .taken
            .iter()
            .filter(|&b| b < bits::NUM_SGPRS)
        {
            out.max_sgpr = out.max_sgpr.max(b);
        }
        out.agprs = self.hook_agprs;
        if scratch {
            out.private_size = Some(self.stack_base + area + self.max_stack);
        }
        out.implicit_block = self.implicit == Some(Implicit::Block);
        out.facts = ctx.facts.into_inner();
        Ok(out)
    }
}

/// Whether calls `a` and `b` have the same [`Ctx::call_key`] and
/// placement, seen from what the key reads (an address argument reads the
/// instruction; a constant patched per copy, nothing of its value).
fn same_call_key(varying: &Varying, a: &Request<'_>, b: &Request<'_>) -> bool {
    std::ptr::eq(a.hook, b.hook)
        && a.call.once_per_wave == b.call.once_per_wave
        && a.call.placement == b.call.placement
        && args_alike(&a.call.args, &b.call.args, |k, d, x, y| {
            // (Both patched: both literals, or the dword varies; the
            // varying list searched once, not per value.)
            let literal = |c: u32| matches!(Asm::konst(c), Operand::Literal(_));
            literal(x) && literal(y) || dword_varies(varying, a.hook, k, d)
        })
        && (a.inst == b.inst || !a.call.args.iter().any(|x| matches!(x, Arg::Address)))
}

/// Whether argument lists `a` and `b` are the same but for constant
/// dwords that differ where `ignored(argument, dword, a's, b's)` says the
/// value does not matter.
pub(super) fn args_alike(
    a: &[Arg],
    b: &[Arg],
    ignored: impl Fn(usize, u8, u32, u32) -> bool,
) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).enumerate().all(|(k, (x, y))| match (x, y) {
            (Arg::Const32(_), Arg::Const32(_)) | (Arg::Const64(_), Arg::Const64(_)) => {
                (0..a_dwords(x)).all(|d| {
                    let (p, q) = (constant(x, d), constant(y, d));
                    p == q || ignored(k, d, p, q)
                })
            }
            _ => x == y,
        })
}
