//! Register liveness across the call graph, aware of EXEC masking.
//!
//! The state at a program point is a pair of register sets ([`Live`]):
//! - `active`: registers whose current value some later instruction reads in
//!   a lane that is enabled in EXEC *here* (all scalar registers live here:
//!   SGPRs, VCC, EXEC, M0, SCC, TTMPs, FLAT_SCRATCH, XNACK_MASK);
//! - `inactive`: VGPRs/AGPRs whose value is read later in a lane that is
//!   switched *off* here (for instance by the other side of a branch, or
//!   after the lanes are switched back on).
//!
//! Transfer, backwards over one instruction (see the crate docs for why):
//! 1. If it writes EXEC, re-express the state in the lanes of the EXEC
//!    before it: *narrowing* writes (`s_and_saveexec_b64`, `s_and_b64 exec,
//!    exec, x`, `s_andn2_b64 exec, exec, x`, `v_cmpx_*`: new EXEC ⊆ old)
//!    move `inactive` into `active`; *widening* writes (`s_or_saveexec_b64`,
//!    `s_or_b64 exec, exec, x`, `s_orn2_b64 exec, exec, x`, `s_mov_b64 exec,
//!    -1`: new ⊇ old) copy `active` vector registers into `inactive`;
//!    `s_andn2_saveexec_b64` (EXEC = S0 & ~EXEC: new ∩ old = ∅) makes the
//!    old `inactive` the new `active` and adds the old `active` to
//!    `inactive`; any other EXEC write does both of the first two.
//! 2. Writes kill: a full scalar write removes the register from `active`;
//!    a VGPR/AGPR write (which only reaches enabled lanes) removes it from
//!    `active` only; read-modify-writes and conditional writes kill nothing.
//! 3. Reads add to `active`; reads that can see other lanes whatever EXEC
//!    says (`v_readlane`, DPP, `ds_swizzle`/`ds_permute`/`ds_bpermute`) add
//!    vector registers to `inactive` too.
//!
//! Calls use the callee's summary. Every transfer function is per register
//! and distributes over union, so a function's effect from return to entry
//! is exactly `f(A, I) = G ∪ (A ∩ PA) ∪ (I ∩ PI)` (componentwise), found by
//! solving it for three return states. Unresolved callees follow LLVM's
//! AMDGPU calling convention: they may read the argument and ABI input
//! registers (s0–s33, v0–v31, EXEC, FLAT_SCRATCH) in any lane and are
//! assumed to kill nothing.

use std::borrow::Cow;

use inlay_isa::{info, Operand, RegFile};

use crate::lift::{Callee, Exit, FuncId, FuncKind, InstId, Program};
use crate::regs::{self, RegSet};

/// Liveness at a program point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Live {
    /// Registers needed later in lanes enabled here (and every live scalar register).
    pub active: RegSet,
    /// VGPRs/AGPRs needed later only in lanes disabled here (may overlap `active`).
    pub inactive: RegSet,
}

impl Live {
    /// Every register whose value is needed later, in any lane.
    pub fn any(&self) -> RegSet {
        self.active.union(&self.inactive)
    }
    fn union_with(&mut self, o: &Live) {
        self.active.union_with(&o.active);
        self.inactive.union_with(&o.inactive);
    }
    fn all() -> Live {
        Live {
            active: RegSet::all(),
            inactive: RegSet::vector(),
        }
    }
}

/// What an EXEC write does to the set of enabled lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecEffect {
    None,
    /// New EXEC ⊆ old.
    Narrow,
    /// New EXEC ⊇ old.
    Widen,
    /// New EXEC ∩ old = ∅ (`s_andn2_saveexec_b64`: EXEC = S0 & ~EXEC, the
    /// switch to the `else` side).
    Disjoint,
    Unknown,
}

const VECTOR: RegSet = RegSet::vector();

const KILL: u8 = 0;
const READ: u8 = 1;
const READ_ALL_LANES: u8 = 2;

/// Per-instruction effects, precomputed from inlay-isa's def/use.
pub(crate) struct Effects<'p> {
    /// Word operations on `active` (and `inactive`): (kind, word, mask);
    /// an instruction's kills come before its reads.
    ops: Vec<(u8, u8, u64)>,
    /// Each distinct encoding's effects, then those of the instructions
    /// that need their own (calls, and instructions in GPR-indexing mode).
    by_form: Vec<InstEffects>,
    /// Index in `by_form` of each instruction's effects: the program's
    /// own `form_of` unless some instruction needs its own.
    form_of: Cow<'p, [u32]>,
}

/// What liveness needs of one distinct encoding, or of one instruction.
#[derive(Clone, Copy)]
struct InstEffects {
    /// Its operations in `Effects::ops`: (first, number).
    ops: (u32, u16),
    exec: ExecEffect,
    /// Call site + 1, or 0 (not a call).
    call: u32,
    /// `Some(true)` for `s_set_gpr_idx_on`, `Some(false)` for `_off`.
    gpr_idx: Option<bool>,
}

/// Appends `(kind, word, mask)` operations covering bits `b..b + n` (some
/// registers' bits, as [`regs::bits_of`] gives them: `n` is not 0 and
/// they end by [`regs::NUM_BITS`]). One in the same word as the last of
/// `ops[from..]` and of its kind joins it (`v_add_f32 v0, v1, v2` reads
/// v1 and v2 in one operation: fewer for every transfer to apply).
#[inline(always)]
fn push_ops(ops: &mut Vec<(u8, u8, u64)>, from: usize, kind: u8, b: u16, n: u16) {
    debug_assert!(n > 0 && b + n <= regs::NUM_BITS);
    let (w, lo) = (b / 64, b % 64);
    if lo + n <= 64 {
        // Within one word (nearly every operand).
        let (w, mask) = (w as u8, u64::MAX >> (64 - n) << lo);
        let own = ops.len() > from;
        match ops.last_mut() {
            Some(last) if own && last.0 == kind && last.1 == w => last.2 |= mask,
            _ => ops.push((kind, w, mask)),
        }
    } else {
        push_ops_across(ops, kind, b, n);
    }
}

/// [`push_ops`] for bits over several words (or a whole one).
#[inline(never)]
fn push_ops_across(ops: &mut Vec<(u8, u8, u64)>, kind: u8, b: u16, n: u16) {
    ops.extend(regs::word_masks(b, n).map(|(w, m)| (kind, w as u8, m)));
}

fn is_exec(op: Option<Operand>) -> bool {
    matches!(op, Some(Operand::Special { code: 126, .. }))
}

/// How an instruction changes EXEC (by its semantics, not its syntax alone).
pub fn exec_effect(i: &inlay_isa::Instruction) -> ExecEffect {
    let writes_exec = info(i)
        .used_registers()
        .iter()
        .any(|u| u.register.file == RegFile::Exec && u.access.writes());
    exec_effect_of(i, writes_exec)
}

#[inline]
fn exec_effect_of(i: &inlay_isa::Instruction, writes_exec: bool) -> ExecEffect {
    if !writes_exec {
        return ExecEffect::None;
    }
    exec_write_effect(i)
}

/// [`exec_effect_of`] an instruction that writes EXEC.
fn exec_write_effect(i: &inlay_isa::Instruction) -> ExecEffect {
    let name = i.opcode().map(|o| o.name()).unwrap_or("");
    let dst_exec = is_exec(i.operand(0));
    let src = |k: usize| i.operand(k);
    match name {
        // D = EXEC; EXEC = S0 & EXEC  /  EXEC = ~S0 & EXEC.
        "s_and_saveexec_b64" | "s_andn1_saveexec_b64" | "s_andn1_wrexec_b64" => ExecEffect::Narrow,
        "s_or_saveexec_b64" | "s_orn1_saveexec_b64" => ExecEffect::Widen,
        "s_andn2_saveexec_b64" => ExecEffect::Disjoint,
        "s_and_b64" if dst_exec && (is_exec(src(1)) || is_exec(src(2))) => ExecEffect::Narrow,
        "s_andn2_b64" if dst_exec && is_exec(src(1)) => ExecEffect::Narrow,
        "s_or_b64" if dst_exec && (is_exec(src(1)) || is_exec(src(2))) => ExecEffect::Widen,
        "s_orn2_b64" if dst_exec && is_exec(src(1)) => ExecEffect::Widen,
        "s_mov_b64" if dst_exec && src(1) == Some(Operand::Inline(193)) => ExecEffect::Widen,
        // Inactive lanes get 0 in the compare result that becomes EXEC.
        _ if name.starts_with("v_cmpx_") => ExecEffect::Narrow,
        _ => ExecEffect::Unknown,
    }
}

/// Whether the instruction's VGPR reads may see lanes EXEC disables.
/// (By the name's first letters first: this runs for every distinct
/// encoding, and few names can match.)
fn reads_other_lanes(i: &inlay_isa::Instruction, name: &str) -> bool {
    i.encoding().is_dpp()
        || match name.as_bytes() {
            [b'v', b'_', b'r', ..] => name.starts_with("v_readlane_"),
            [b'd', b's', b'_', ..] => {
                name.starts_with("ds_swizzle")
                    || name.starts_with("ds_permute")
                    || name.starts_with("ds_bpermute")
            }
            _ => false,
        }
}

/// Whether the instruction is an M0-relative move that reads
/// (`s_movrels*`, `v_movrels*`, `v_movrelsd*`) or writes (`s_movreld*`,
/// `v_movreld*`) a register M0 past the named one.
fn relative_move(name: &str) -> (bool, bool) {
    match name.as_bytes() {
        [b's' | b'v', b'_', b'm', b'o', b'v', b'r', b'e', b'l', c, ..] => (*c == b's', *c == b'd'),
        _ => (false, false),
    }
}

/// The effects of an instruction whose registers are `used` (`indexed`
/// if it may run in GPR-indexing mode), its operations (kills, then
/// reads) appended to `ops`.
fn instruction_effects(
    i: &inlay_isa::Instruction,
    used: &[inlay_isa::UsedRegister],
    indexed: bool,
    ops: &mut Vec<(u8, u8, u64)>,
) -> InstEffects {
    let start = ops.len() as u32;
    let name = i.opcode().map(|o| o.name()).unwrap_or("");
    let all_lanes = reads_other_lanes(i, name);
    // M0-relative moves read / write a register M0 past the named
    // one; under s_set_gpr_idx_on, VALU VGPR operands are offset by
    // M0 too. Their reads reach every register from the named one
    // up, and their writes kill nothing.
    let (rel_read, rel_write) = relative_move(name);
    let any_relative = rel_read || rel_write || indexed;
    let relative = |u: &inlay_isa::UsedRegister| {
        let file = u.register.file;
        any_relative
            && (rel_read || rel_write || matches!(file, RegFile::Vgpr | RegFile::Agpr))
            && matches!(file, RegFile::Sgpr | RegFile::Vgpr | RegFile::Agpr)
            && !u.is_implicit()
    };
    // Two passes, kills then reads (each register is looked up once
    // but for read-modify-writes, which kill nothing).
    let mut writes_exec = false;
    for u in used.iter().filter(|u| u.access.writes()) {
        writes_exec |= u.register.file == RegFile::Exec;
        if u.access != inlay_isa::Access::Write || relative(u) {
            continue;
        }
        if let Some((b, n)) = regs::bits_of(&u.register) {
            push_ops(ops, start as usize, KILL, b, n);
        }
    }
    for u in used {
        if !u.access.reads() {
            continue;
        }
        let Some((b, n)) = regs::bits_of(&u.register) else {
            continue;
        };
        let vector = b >= regs::VGPR_BASE;
        let n = if relative(u) {
            let end = match u.register.file {
                RegFile::Sgpr => regs::NUM_SGPRS,
                RegFile::Vgpr => regs::VGPR_BASE + 256,
                _ => regs::AGPR_BASE + 256,
            };
            end.saturating_sub(b).max(n)
        } else {
            n
        };
        let kind = if vector && all_lanes {
            READ_ALL_LANES
        } else {
            READ
        };
        push_ops(ops, start as usize, kind, b, n);
    }
    InstEffects {
        ops: (start, (ops.len() as u32 - start) as u16),
        exec: exec_effect_of(i, writes_exec),
        call: 0,
        gpr_idx: match name {
            "s_set_gpr_idx_on" => Some(true),
            "s_set_gpr_idx_off" => Some(false),
            _ => None,
        },
    }
}

impl<'p> Effects<'p> {
    /// Each distinct encoding's effects worked out once; an instruction
    /// takes its encoding's, or its own if it is a call or may run in
    /// GPR-indexing mode.
    pub(crate) fn new(prog: &'p Program) -> Effects<'p> {
        let (forms, form_of) = prog.forms();
        // (Nearly every distinct encoding has 3 or 4 operations, a few
        // more; indexed instructions add theirs.)
        let mut ops = Vec::with_capacity(forms.list.len() * 5);
        let mut indexing = false;
        let mut by_form: Vec<InstEffects> = forms
            .list
            .iter()
            .enumerate()
            .map(|(k, form)| {
                let fx = instruction_effects(&form.inst, forms.used(k), false, &mut ops);
                indexing |= fx.gpr_idx == Some(true);
                fx
            })
            .collect();
        let mut form_of = Cow::Borrowed(form_of);
        let indexed = if indexing {
            gpr_indexed(prog, &form_of, &by_form)
        } else {
            Vec::new()
        };
        for (id, _) in indexed.iter().enumerate().filter(|(_, on)| **on) {
            let used = forms.used(form_of[id] as usize);
            let own = instruction_effects(&prog.insts[id].inst, used, true, &mut ops);
            form_of.to_mut()[id] = by_form.len() as u32;
            by_form.push(own);
        }
        for (site, c) in prog.calls.iter().enumerate() {
            if c.tail || c.inst >= form_of.len() {
                continue;
            }
            let own = InstEffects {
                call: site as u32 + 1,
                ..by_form[form_of[c.inst] as usize]
            };
            form_of.to_mut()[c.inst] = by_form.len() as u32;
            by_form.push(own);
        }
        Effects {
            ops,
            by_form,
            form_of,
        }
    }

    /// Makes the word of each operation its position in the states of
    /// `layout` (a kill of a word the layout drops, never live, then
    /// kills nothing). Those of `active` are where [`Layout::full`] has
    /// them: the solver takes the operations as they are in that layout.
    fn place(&mut self, layout: &Layout) {
        let mut at = [None; RegSet::WORDS];
        for (p, &k) in layout.kept.iter().enumerate() {
            if let Some(a) = at.get_mut(usize::from(k)) {
                *a = Some(p as u8);
            }
        }
        for op in &mut self.ops {
            match at[usize::from(op.1)] {
                Some(p) => op.1 = p,
                None => {
                    debug_assert_eq!(op.0, KILL, "a read of a word the layout drops");
                    *op = (KILL, 0, 0);
                }
            }
        }
    }

    /// The effects of instruction `id`.
    #[inline]
    fn of(&self, id: InstId) -> &InstEffects {
        &self.by_form[self.form_of[id] as usize]
    }
}

/// Instructions that may run in GPR-indexing mode: those between
/// `s_set_gpr_idx_on` and `s_set_gpr_idx_off` in a block; if a block ends
/// with the mode still on, every vector instruction of that function.
fn gpr_indexed(prog: &Program, form_of: &[u32], by_form: &[InstEffects]) -> Vec<bool> {
    let mut out = vec![false; prog.insts.len()];
    let mut leaky = vec![false; prog.functions.len()];
    for b in &prog.blocks {
        let mut on = false;
        for id in b.insts.clone() {
            match by_form[form_of[id] as usize].gpr_idx {
                Some(true) => on = true,
                Some(false) => on = false,
                None if on => out[id] = true,
                None => {}
            }
        }
        if on {
            leaky[b.function] = true;
        }
    }
    for b in &prog.blocks {
        if leaky[b.function] {
            for id in b.insts.clone() {
                out[id] = true;
            }
        }
    }
    out
}

/// A callee's effect from its return back to its entry (see module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Summary {
    pub gen: Live,
    pub from_active: Live,
    pub from_inactive: Live,
}

impl Summary {
    /// The state before a call given the state after it.
    pub fn apply(&self, after: &Live) -> Live {
        let mut out = self.gen;
        let a = &after.active;
        let i = &after.inactive;
        out.active
            .union_with(&self.from_active.active.intersection(a));
        out.active
            .union_with(&self.from_inactive.active.intersection(i));
        out.inactive
            .union_with(&self.from_active.inactive.intersection(a));
        out.inactive
            .union_with(&self.from_inactive.inactive.intersection(i));
        out
    }
    fn union_with(&mut self, o: &Summary) {
        self.gen.union_with(&o.gen);
        self.from_active.union_with(&o.from_active);
        self.from_inactive.union_with(&o.from_inactive);
    }

    /// An unresolved callee under LLVM's AMDGPU calling convention.
    pub fn calling_convention() -> Summary {
        let mut abi = RegSet::new();
        abi.insert_range(0, 34); // s0-s33: arguments, ABI inputs, return address, SP, FP
        abi.insert_range(regs::VGPR_BASE, 32); // v0-v31: arguments
        abi.insert_range(regs::EXEC, 2);
        abi.insert_range(regs::FLAT_SCRATCH, 2);
        Summary {
            gen: Live {
                active: abi,
                inactive: abi.intersection(&RegSet::vector()),
            },
            from_active: Live {
                active: RegSet::all(),
                inactive: RegSet::new(),
            },
            from_inactive: Live {
                active: RegSet::new(),
                inactive: RegSet::vector(),
            },
        }
    }
}

/// Liveness of every instruction of a lifted program.
#[derive(Debug, Clone)]
pub struct Liveness {
    /// State before each instruction.
    before: Packed,
    /// Callee summaries by function (the kernel's is unused).
    pub summaries: Vec<Summary>,
    /// State at the returns of each function (union over its call sites).
    pub contexts: Vec<Live>,
}

impl Liveness {
    /// State before instruction `i` (empty for an out-of-range id).
    pub fn before(&self, i: InstId) -> Live {
        self.before.get(i)
    }

    /// Every register live before instruction `i` in any lane (`before(i).any()`,
    /// unpacked straight into one set).
    pub fn any_before(&self, i: InstId) -> RegSet {
        RegSet::from_words(self.before.any_words(i))
    }

    /// The words of [`Liveness::any_before`].
    pub(crate) fn any_words_before(&self, i: InstId) -> [u64; RegSet::WORDS] {
        self.before.any_words(i)
    }

    /// The words the state before instruction `i` is stored in: equal
    /// words, equal states (a comparison that unpacks nothing).
    pub(crate) fn words_before(&self, i: InstId) -> &[u64] {
        self.before.slot(i)
    }
}

/// Words of a [`Live`]: `active`'s, then `inactive`'s.
const LIVE_WORDS: usize = 2 * RegSet::WORDS;

/// One state per instruction, keeping only the words of [`Live`] that can
/// be non-zero in this program (a kernel naming no AGPR never has one
/// live, say): a state is 192 bytes, and storing every instruction's in
/// full was most of liveness' time (memory written, and its page faults).
#[derive(Debug, Clone)]
struct Packed {
    /// The words kept, by index in [`LIVE_WORDS`] (increasing: `active`'s,
    /// then `inactive`'s).
    kept: Vec<u8>,
    words: Vec<u64>,
    /// For each word of a set, where a state keeps it in `active` and in
    /// `inactive` (`u8::MAX`: not kept).
    any_at: [[u8; 2]; RegSet::WORDS],
}

impl Packed {
    fn new(kept: Vec<u8>, n: usize) -> Packed {
        debug_assert!(kept.windows(2).all(|w| w[0] < w[1]));
        let mut any_at = [[u8::MAX; 2]; RegSet::WORDS];
        for (at, &k) in kept.iter().enumerate() {
            let k = usize::from(k);
            any_at[k % RegSet::WORDS][k / RegSet::WORDS] = at as u8;
        }
        Packed {
            words: vec![0; kept.len() * n],
            kept,
            any_at,
        }
    }

    /// Stores a solver state whose layout keeps the same words as this
    /// table as instruction `i`'s state.
    fn store(&mut self, i: InstId, st: &State) {
        let w = self.kept.len();
        if let (Some(slot), Some(words)) = (self.words.get_mut(i * w..(i + 1) * w), st.0.get(..w)) {
            slot.copy_from_slice(words);
        }
    }

    /// Stores `st` as instruction `i`'s state; false if a word of it that
    /// is not kept is non-zero (the state is then not stored whole).
    fn set(&mut self, i: InstId, st: &Live) -> bool {
        let w = self.kept.len();
        let mut words = [0u64; LIVE_WORDS];
        words[..RegSet::WORDS].copy_from_slice(st.active.words());
        words[RegSet::WORDS..].copy_from_slice(st.inactive.words());
        if let Some(slot) = self.words.get_mut(i * w..(i + 1) * w) {
            for (s, &k) in slot.iter_mut().zip(&self.kept) {
                *s = std::mem::take(&mut words[usize::from(k)]);
            }
        }
        words.iter().all(|&x| x == 0)
    }

    /// Instruction `i`'s stored words (none past the end).
    fn slot(&self, i: InstId) -> &[u64] {
        let w = self.kept.len();
        self.words.get(i * w..(i + 1) * w).unwrap_or(&[])
    }

    fn get(&self, i: InstId) -> Live {
        let w = self.kept.len();
        let mut live = Live::default();
        if let Some(slot) = self.words.get(i * w..(i + 1) * w) {
            for (&s, &k) in slot.iter().zip(&self.kept) {
                let k = usize::from(k);
                if k < RegSet::WORDS {
                    live.active.insert_mask(k, s);
                } else {
                    live.inactive.insert_mask(k - RegSet::WORDS, s);
                }
            }
        }
        live
    }

    /// The words of [`Packed::get`]'s union of both sets, each joined from
    /// the state's words where they are.
    fn any_words(&self, i: InstId) -> [u64; RegSet::WORDS] {
        let w = self.kept.len();
        let slot = self.words.get(i * w..(i + 1) * w).unwrap_or(&[]);
        let word = |at: u8| slot.get(usize::from(at)).copied().unwrap_or(0);
        std::array::from_fn(|k| word(self.any_at[k][0]) | word(self.any_at[k][1]))
    }

    /// Empties instruction `i`'s `inactive`.
    fn clear_inactive(&mut self, i: InstId) {
        let w = self.kept.len();
        if let Some(slot) = self.words.get_mut(i * w..(i + 1) * w) {
            for (s, &k) in slot.iter_mut().zip(&self.kept) {
                if usize::from(k) >= RegSet::WORDS {
                    *s = 0;
                }
            }
        }
    }
}

/// Words of a [`State`]: as many as `active` and the vector words of
/// `inactive` (its only ones) have.
const STATE_WORDS: usize = RegSet::WORDS + (regs::NUM_BITS - regs::VGPR_BASE) as usize / 64;

/// A [`Live`] as the solver holds it: the words a [`Layout`] keeps, at
/// its positions, then zeros.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
struct State([u64; STATE_WORDS]);

impl State {
    fn union_with(&mut self, o: &State) {
        for (w, o) in self.0.iter_mut().zip(&o.0) {
            *w |= o;
        }
    }
}

/// Which words of [`Live`] the solver's states keep, and where. Scalar
/// words of `active` come first, then its vector words, then the same
/// vector words of `inactive` (the only ones it can have), so the two
/// halves of a vector word are a fixed distance apart.
struct Layout {
    /// The word of [`Live`] (index in [`LIVE_WORDS`]) at each position.
    kept: Vec<u8>,
    /// Where `active`'s vector words start, and how many there are.
    vector: usize,
    nvector: usize,
}

impl Layout {
    /// A layout of `kept` (increasing; a vector word of `active` is kept
    /// if and only if its `inactive` one is, and no scalar word of
    /// `inactive` is).
    fn new(kept: Vec<u8>) -> Layout {
        let words = RegSet::WORDS as u8;
        let vector = kept
            .iter()
            .filter(|&&k| VECTOR.words()[usize::from(k % words)] == 0)
            .count();
        let nvector = kept.iter().filter(|&&k| k >= words).count();
        debug_assert!(kept.windows(2).all(|w| w[0] < w[1]));
        debug_assert_eq!(vector + 2 * nvector, kept.len(), "{kept:?}");
        debug_assert!(kept.len() <= STATE_WORDS);
        debug_assert!((0..nvector).all(|j| kept[vector + j] + words == kept[vector + nvector + j]));
        Layout {
            kept,
            vector,
            nvector,
        }
    }

    /// Every word a state can have (each word of `active` at its index).
    fn full() -> Layout {
        let vector = VECTOR.words();
        let active = 0..RegSet::WORDS;
        let inactive = (0..RegSet::WORDS).filter(|&k| vector[k] != 0);
        Layout::new(
            active
                .chain(inactive.map(|k| k + RegSet::WORDS))
                .map(|k| k as u8)
                .collect(),
        )
    }

    fn pack(&self, live: &Live) -> State {
        let mut st = State::default();
        for (s, &k) in st.0.iter_mut().zip(&self.kept) {
            let k = usize::from(k);
            *s = match k.checked_sub(RegSet::WORDS) {
                None => live.active.words()[k],
                Some(k) => live.inactive.words()[k],
            };
        }
        debug_assert_eq!(
            self.unpack(&st),
            *live,
            "a state has a word its layout drops"
        );
        st
    }

    fn unpack(&self, st: &State) -> Live {
        let mut live = Live::default();
        for (&s, &k) in st.0.iter().zip(&self.kept) {
            let k = usize::from(k);
            match k.checked_sub(RegSet::WORDS) {
                None => live.active.insert_mask(k, s),
                Some(k) => live.inactive.insert_mask(k, s),
            }
        }
        live
    }

    /// The positions of each vector word kept: (in `active`, in `inactive`).
    fn vector_pairs(&self) -> impl Iterator<Item = (usize, usize)> {
        let (v, n) = (self.vector, self.nvector);
        (v..v + n).map(move |p| (p, p + n))
    }
}

struct Solver<'a> {
    prog: &'a Program,
    /// `fx`'s effects of each instruction: `by_form[form_of[id]]`.
    by_form: &'a [InstEffects],
    form_of: &'a [u32],
    ops: &'a [(u8, u8, u64)],
    layout: Layout,
    summaries: Vec<Summary>,
}

impl<'a> Solver<'a> {
    /// A solver over states of `layout`, whose positions `fx.ops` name
    /// (see [`Effects::place`]).
    fn new(prog: &'a Program, fx: &'a Effects<'a>, layout: Layout) -> Solver<'a> {
        Solver {
            prog,
            by_form: &fx.by_form,
            form_of: &fx.form_of,
            ops: &fx.ops,
            layout,
            summaries: vec![Summary::default(); prog.functions.len()],
        }
    }

    fn site_summary(&self, site: usize) -> Summary {
        let Some(c) = self.prog.calls.get(site) else {
            return Summary::calling_convention();
        };
        // A kernel has no summary (it never returns): calls into one fall
        // back to the calling convention.
        let summary = |f: FuncId| match self.prog.functions.get(f) {
            Some(fun) if fun.kind == FuncKind::Device => self.summaries[f],
            _ => Summary::calling_convention(),
        };
        match &c.callee {
            Callee::Direct(f) => summary(*f),
            Callee::Table {
                callees,
                unresolved,
                ..
            } => {
                let mut s = if *unresolved > 0 || callees.is_empty() {
                    Summary::calling_convention()
                } else {
                    Summary::default()
                };
                for f in callees {
                    s.union_with(&summary(*f));
                }
                s
            }
            Callee::External(_) | Callee::Unresolved => Summary::calling_convention(),
        }
    }

    /// The state before a call (site `site`) given the state after it.
    fn call(&self, site: usize, after: &State) -> State {
        let after = self.layout.unpack(after);
        self.layout.pack(&self.site_summary(site).apply(&after))
    }

    /// Backward over one instruction.
    #[inline(always)]
    fn transfer(&self, id: InstId, state: &mut State) {
        let &InstEffects {
            ops: (start, n),
            exec,
            call,
            ..
        } = &self.by_form[self.form_of[id] as usize];
        if call != 0 {
            *state = self.call(call as usize - 1, state);
        }
        let st = &mut state.0;
        // Only vector words change (and `inactive` has no other).
        match exec {
            ExecEffect::None => {}
            ExecEffect::Narrow => {
                for (a, i) in self.layout.vector_pairs() {
                    st[a] |= st[i];
                }
            }
            ExecEffect::Widen => {
                for (a, i) in self.layout.vector_pairs() {
                    st[i] |= st[a];
                }
            }
            ExecEffect::Disjoint => {
                // Lanes enabled before are disabled after: their needs are
                // among `inactive`; lanes disabled before may be either.
                for (a, i) in self.layout.vector_pairs() {
                    let active = st[a];
                    st[a] = st[i];
                    st[i] |= active;
                }
            }
            ExecEffect::Unknown => {
                for (a, i) in self.layout.vector_pairs() {
                    let any = st[a] | st[i];
                    st[a] = any;
                    st[i] = any;
                }
            }
        }
        // Kills first, then reads (the order `Effects` keeps).
        for &(kind, p, m) in &self.ops[start as usize..start as usize + n as usize] {
            let p = usize::from(p);
            match kind {
                KILL => st[p] &= !m,
                READ => st[p] |= m,
                _ => {
                    st[p] |= m;
                    st[p + self.layout.nvector] |= m;
                }
            }
        }
    }

    /// State at the end of block `b` given its successors' entry states.
    #[inline]
    fn exit_state(&self, f: FuncId, b: usize, ctx: &State, live_in: &[State]) -> State {
        let base = self.prog.functions[f].blocks.start;
        let bl = &self.prog.blocks[b];
        match bl.exit {
            Exit::EndProgram => State::default(),
            Exit::Return => *ctx,
            Exit::TailCall(site) => self.call(site, ctx),
            Exit::Unresolved => self.layout.pack(&Live::all()),
            Exit::FallThrough | Exit::Branch | Exit::CondBranch => {
                let mut s = State::default();
                for &succ in &bl.succs {
                    if let Some(l) = live_in.get(succ - base) {
                        s.union_with(l);
                    }
                }
                s
            }
        }
    }

    /// Block entry states of function `f` when its returns see `ctx`.
    fn solve(&self, f: FuncId, ctx: &State) -> Vec<State> {
        self.solve_visiting(f, ctx, |_, _| {})
    }

    /// [`Solver::solve`], calling `visit(i, state before i)` at every
    /// instruction of every block visit. A block's last visit sees its
    /// final exit state (it is visited again whenever a successor's entry
    /// state changes), so the last call for each instruction gives its
    /// final state.
    fn solve_visiting(
        &self,
        f: FuncId,
        ctx: &State,
        mut visit: impl FnMut(InstId, &State),
    ) -> Vec<State> {
        let blocks = self.prog.functions[f].blocks.clone();
        let base = blocks.start;
        let mut live_in = vec![State::default(); blocks.len()];
        // Sweeps over the blocks in postorder (successors first, but along
        // back edges), each visiting the blocks whose successors changed:
        // most blocks are visited once or twice.
        let order = self.postorder(f);
        let mut dirty = vec![true; blocks.len()];
        let mut any = true;
        while any {
            any = false;
            for &b in &order {
                if !std::mem::replace(&mut dirty[b - base], false) {
                    continue;
                }
                any = true;
                let mut st = self.exit_state(f, b, ctx, &live_in);
                for id in self.prog.blocks[b].insts.clone().rev() {
                    self.transfer(id, &mut st);
                    visit(id, &st);
                }
                if st != live_in[b - base] {
                    live_in[b - base] = st;
                    for &p in &self.prog.blocks[b].preds {
                        if let Some(d) = dirty.get_mut(p.wrapping_sub(base)) {
                            *d = true;
                        }
                    }
                }
            }
        }
        live_in
    }
    /// The blocks of `f` in postorder of a depth-first walk from its entry
    /// (then any block the walk did not reach).
    fn postorder(&self, f: FuncId) -> Vec<usize> {
        let fun = &self.prog.functions[f];
        let (blocks, base) = (fun.blocks.clone(), fun.blocks.start);
        let entry = self
            .prog
            .inst_at(f, fun.entry)
            .map_or(base, |i| self.prog.insts[i].block);
        let mut seen = vec![false; blocks.len()];
        let mut order = Vec::with_capacity(blocks.len());
        // (block, next successor to look at)
        let mut stack: Vec<(usize, usize)> = Vec::new();
        for root in std::iter::once(entry).chain(blocks) {
            if std::mem::replace(&mut seen[root - base], true) {
                continue;
            }
            stack.push((root, 0));
            while let Some((b, k)) = stack.last_mut() {
                let b = *b;
                match self.prog.blocks[b].succs.get(*k) {
                    Some(&s) => {
                        *k += 1;
                        if let Some(seen) = seen.get_mut(s.wrapping_sub(base)) {
                            if !std::mem::replace(seen, true) {
                                stack.push((s, 0));
                            }
                        }
                    }
                    None => {
                        order.push(b);
                        stack.pop();
                    }
                }
            }
        }
        order
    }

    /// The states before each instruction of block `b` (of function `f`,
    /// whose block entry states are `live_in`), in instruction order,
    /// appended to `out`.
    fn block_states(
        &self,
        f: FuncId,
        b: usize,
        ctx: &State,
        live_in: &[State],
        out: &mut Vec<State>,
    ) {
        let start = out.len();
        self.block_states_back(f, b, ctx, live_in, |_, st| out.push(*st));
        out[start..].reverse();
    }

    /// Calls `visit(i, state before i)` for each instruction `i` of block
    /// `b`, last to first.
    fn block_states_back(
        &self,
        f: FuncId,
        b: usize,
        ctx: &State,
        live_in: &[State],
        mut visit: impl FnMut(InstId, &State),
    ) {
        let mut st = self.exit_state(f, b, ctx, live_in);
        for id in self.prog.blocks[b].insts.clone().rev() {
            self.transfer(id, &mut st);
            visit(id, &st);
        }
    }

    fn summarise(&self, f: FuncId) -> Summary {
        let entry = |ctx: Live| {
            let entry = self.solve(f, &self.layout.pack(&ctx));
            entry
                .first()
                .map_or_else(Live::default, |st| self.layout.unpack(st))
        };
        Summary {
            gen: entry(Live::default()),
            from_active: entry(Live {
                active: RegSet::all(),
                inactive: RegSet::new(),
            }),
            from_inactive: entry(Live {
                active: RegSet::new(),
                inactive: RegSet::vector(),
            }),
        }
    }
}

/// The words of [`Live`] a first try at packing keeps: those non-zero in
/// some block entry state or return state, or named by a read (and for
/// vector words, in both halves: EXEC writes move registers between them).
fn kept_words(fx: &Effects, states: impl Iterator<Item = Live>) -> Vec<u8> {
    let mut any = RegSet::new();
    for st in states {
        any.union_with(&st.any());
    }
    // (Whether a read names a word is all that matters here.)
    let mut read = 0u16;
    for &(kind, w, _) in &fx.ops {
        if kind != KILL {
            read |= 1 << w;
        }
    }
    for w in (0..RegSet::WORDS).filter(|w| read >> w & 1 != 0) {
        any.insert_mask(w, u64::MAX);
    }
    let vector = VECTOR.words();
    let mut kept = Vec::new();
    for (k, &w) in any.words().iter().enumerate() {
        if w != 0 {
            kept.push(k as u8);
        }
    }
    for (k, &w) in any.words().iter().enumerate() {
        if w != 0 && vector[k] != 0 {
            kept.push((RegSet::WORDS + k) as u8);
        }
    }
    kept
}

/// Instructions of the kernel reached only along paths from its entry with
/// no EXEC write and no call before them (forward must-analysis).
fn prologue(prog: &Program, fx: &Effects) -> Vec<InstId> {
    // A device function's entry may have lanes off whose values its caller needs.
    let Some(kernel) = prog
        .functions
        .first()
        .filter(|f| f.kind == FuncKind::Kernel)
    else {
        return Vec::new();
    };
    let blocks = kernel.blocks.clone();
    let base = blocks.start;
    let dirty = |id: InstId| {
        let fx = fx.of(id);
        fx.exec != ExecEffect::None || fx.call != 0
    };
    let clean_through = |b: usize| !prog.blocks[b].insts.clone().any(dirty);
    // Greatest fixpoint: start from "clean everywhere", remove until stable.
    let mut clean_in = vec![true; blocks.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for b in blocks.clone() {
            // (The entry is also reached from the launch, which is clean.)
            let c = prog.blocks[b]
                .preds
                .iter()
                .all(|p| clean_in[*p - base] && clean_through(*p));
            if c != clean_in[b - base] {
                clean_in[b - base] = c;
                changed = true;
            }
        }
    }
    let mut out = Vec::new();
    for b in blocks {
        if !clean_in[b - base] {
            continue;
        }
        for id in prog.blocks[b].insts.clone() {
            out.push(id);
            if dirty(id) {
                break;
            }
        }
    }
    out
}

/// Computes liveness before every instruction of `prog`.
pub fn analyse(prog: &Program) -> Liveness {
    let mut fx = Effects::new(prog);
    let nf = prog.functions.len();
    // A function alone (no calls, every exit known, nothing returned to)
    // has live only registers its instructions read (or, for vector
    // registers, their other half: EXEC writes move them between the
    // two), the words `kept_words` keeps from the reads alone. Its states
    // keep only those words, and are stored as the solver visits the
    // blocks, its last visit of each leaving the final one.
    let alone =
        nf == 1 && prog.calls.is_empty() && !prog.blocks.iter().any(|b| b.exit == Exit::Unresolved);
    let (layout, mut stored) = if alone {
        let kept = kept_words(&fx, std::iter::empty());
        let layout = Layout::new(kept.clone());
        fx.place(&layout);
        (layout, Some(Packed::new(kept, prog.insts.len())))
    } else {
        (Layout::full(), None)
    };
    let mut s = Solver::new(prog, &fx, layout);
    // Callee summaries, to a fixpoint (recursion converges from "never returns").
    let mut changed = nf > 1;
    while changed {
        changed = false;
        for f in (0..nf).rev() {
            if prog.functions[f].kind != FuncKind::Device {
                continue;
            }
            let new = s.summarise(f);
            if new != s.summaries[f] {
                s.summaries[f] = new;
                changed = true;
            }
        }
    }
    // Contexts top-down: the state after each call site flows into its
    // callees' returns.
    let mut contexts = vec![Live::default(); nf];
    let mut live_ins: Vec<Vec<State>> = vec![Vec::new(); nf];
    let mut dirty = vec![true; nf];
    let mut states = Vec::new();
    while let Some(f) = dirty.iter().position(|d| *d) {
        dirty[f] = false;
        let ctx = s.layout.pack(&contexts[f]);
        live_ins[f] = match &mut stored {
            Some(before) => s.solve_visiting(f, &ctx, |id, st| before.store(id, st)),
            None => s.solve(f, &ctx),
        };
        let live_in = &live_ins[f];
        let mut updates: Vec<(FuncId, Live)> = Vec::new();
        // (Sites are in address order: a block's states are worked out
        // once for all its calls.)
        let mut states_of = None;
        for &site in &prog.functions[f].calls {
            let c = &prog.calls[site];
            let after = if c.tail {
                contexts[f]
            } else {
                let Some(b) = prog.insts.get(c.inst).map(|i| i.block) else {
                    continue;
                };
                if states_of != Some(b) {
                    states.clear();
                    s.block_states(f, b, &ctx, live_in, &mut states);
                    states_of = Some(b);
                }
                let after = match states.get(c.inst + 1 - prog.blocks[b].insts.start) {
                    Some(st) => *st,
                    None => s.exit_state(f, b, &ctx, live_in),
                };
                s.layout.unpack(&after)
            };
            for callee in prog.callees(site) {
                updates.push((callee, after));
            }
        }
        for (callee, st) in updates {
            let mut c = contexts[callee];
            c.union_with(&st);
            if c != contexts[callee] {
                contexts[callee] = c;
                dirty[callee] = true;
            }
        }
    }
    let mut before = match stored {
        Some(before) => before,
        None => store_all(&s, &fx, &live_ins, &contexts),
    };
    // Lanes EXEC disables at launch are never written until EXEC is first
    // written or a function is called, so up to that point (on every path
    // from the entry) nothing can need their values: `inactive` is empty.
    for id in prologue(prog, &fx) {
        before.clear_inactive(id);
    }
    Liveness {
        before,
        summaries: s.summaries,
        contexts,
    }
}

/// The state before every instruction, from the functions' block entry
/// states `live_ins` and return states `contexts`.
fn store_all(s: &Solver<'_>, fx: &Effects, live_ins: &[Vec<State>], contexts: &[Live]) -> Packed {
    let prog = s.prog;
    let nf = prog.functions.len();
    // Each written once (blocks partition the instructions in order, as
    // lifting lays them out).
    let mut order: Vec<(FuncId, usize)> = (0..nf)
        .flat_map(|f| prog.functions[f].blocks.clone().map(move |b| (f, b)))
        .collect();
    order.sort_by_key(|&(_, b)| prog.blocks[b].insts.start);
    // Stored packed: the words kept are those any block's entry state,
    // any function's return state or any read makes non-zero (the first
    // try; all words if a state has another).
    let entries = live_ins.iter().flatten().map(|st| s.layout.unpack(st));
    let mut kept = kept_words(fx, entries.chain(contexts.iter().copied()));
    let contexts: Vec<State> = contexts.iter().map(|c| s.layout.pack(c)).collect();
    loop {
        let mut before = Packed::new(kept, prog.insts.len());
        let mut whole = true;
        for &(f, b) in &order {
            s.block_states_back(f, b, &contexts[f], &live_ins[f], |id, st| {
                whole &= before.set(id, &s.layout.unpack(st));
            });
        }
        if whole {
            return before;
        }
        kept = (0..LIVE_WORDS as u8).collect();
    }
}
