//! Building instructions for code the engine inserts: typed operands,
//! the checked builder, forward branches to the end of a snippet.

use inlay_isa::{Builder, Encoding, Instruction, Operand};

use super::{RewriteError, SGPRS};
use crate::fast_hash::FastHash;

pub(super) struct Asm {
    pub(super) b: Builder,
    /// The last `s_atomic_add_x2` built, by its (data, base) registers:
    /// hooks differ only in the offset, which is set on a copy (building
    /// through the checked builder per hook is the slow part of
    /// instrumenting every instruction).
    pub(super) atomic: std::cell::Cell<Option<(u16, u16, Instruction)>>,
    pub(super) setups: std::cell::RefCell<std::collections::HashMap<(u16, u16), [Instruction; 3]>>,
    pub(super) decoder: inlay_isa::Decoder,
    /// Instructions built so far, by form: inserted code repeats a few
    /// forms many times (a call at every instruction builds the same saves
    /// and moves again and again), and the checked builder, which finds the
    /// mnemonic in the tables and decodes its result again, is the slow part.
    pub(super) built:
        std::cell::RefCell<std::collections::HashMap<BuildKey, Instruction, FastHash>>,
    /// An instruction built so far per shape (its form with every register
    /// number zeroed): a new form of a known shape is a copy with its
    /// registers renamed, not a search of the tables (call sequences
    /// differ mostly in the registers their saves use), with where each
    /// operand's register is encoded, found once.
    shapes: std::cell::RefCell<std::collections::HashMap<BuildKey, Shape, FastHash>>,
    /// The moves call sequences are mostly made of, built before, by a
    /// word naming the move and its operands (see [`Asm::quick`]): one
    /// slot compared, where [`Asm::build`] makes and hashes a form's key.
    quick: std::cell::RefCell<Vec<(u64, Instruction)>>,
    /// Hazard facts of the instructions of inserted code, each distinct
    /// one's found once: for the padding inside every snippet, and then at
    /// the seams.
    pub(super) facts: std::cell::RefCell<super::hazards::FactsTable>,
}

/// An instruction form: encoding, mnemonic (by address: they are literals)
/// and operands packed into integers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct BuildKey {
    enc: Encoding,
    mnemonic: usize,
    ops: [u64; 6],
}

impl std::hash::Hash for BuildKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        // Word by word: the derived hash feeds integer arrays as bytes.
        h.write_u64(self.mnemonic as u64 ^ (self.enc as u64) << 56);
        for &o in &self.ops {
            h.write_u64(o);
        }
    }
}

/// An instruction of a shape (see [`Asm::shapes`]) and where each of its
/// register operands is encoded (`None`: no register there).
#[derive(Clone, Copy)]
struct Shape {
    inst: Instruction,
    registers: [Option<inlay_isa::RegisterSlot>; 6],
}

/// Slots of [`Asm::quick`] (a power of two).
const QUICK_SLOTS: usize = 4096;

/// A register, special register, inline constant or small literal as 18
/// bits (see [`Asm::quick`]); `None` for any other operand.
fn small(o: &Operand) -> Option<u64> {
    let reg = |kind: u64, first: u16, count: u8| {
        (first < 1024 && count < 32).then(|| kind << 15 | u64::from(first) << 5 | u64::from(count))
    };
    match *o {
        Operand::Vgpr { first, count } => reg(1, first, count),
        Operand::Agpr { first, count } => reg(2, first, count),
        Operand::Sgpr { first, count } => reg(3, first, count),
        Operand::Special { code, count } => reg(4, u16::from(code), count),
        Operand::Inline(c) => Some(5 << 15 | u64::from(c)),
        // (The zero a patched constant argument's move holds.)
        Operand::Literal(v) if v < 1 << 15 => Some(6 << 15 | u64::from(v)),
        _ => None,
    }
}

/// The moves [`Asm::quick`] keeps, each its own tag.
#[derive(Clone, Copy)]
enum Move {
    VMov = 1,
    WriteLane,
    ReadLane,
    SMov,
    SMov64,
}

impl Move {
    fn form(self) -> (Encoding, &'static str) {
        match self {
            Move::VMov => (Encoding::Vop1, "v_mov_b32_e32"),
            Move::WriteLane => (Encoding::Vop3, "v_writelane_b32"),
            Move::ReadLane => (Encoding::Vop3, "v_readlane_b32"),
            Move::SMov => (Encoding::Sop1, "s_mov_b32"),
            Move::SMov64 => (Encoding::Sop1, "s_mov_b64"),
        }
    }
}

/// The operand's key with its register number zeroed (see [`Asm::shapes`]),
/// or its integer inline constant (a lane, a small count).
fn shape_key(o: &Operand) -> u64 {
    match *o {
        Operand::Vgpr { count, .. } => operand_key(&Operand::Vgpr { first: 0, count }),
        Operand::Agpr { count, .. } => operand_key(&Operand::Agpr { first: 0, count }),
        Operand::Sgpr { count, .. } => operand_key(&Operand::Sgpr { first: 0, count }),
        Operand::Inline(c) if INLINE_INTS.contains(&c) => operand_key(&Operand::Inline(128)),
        _ => operand_key(o),
    }
}

/// Source-field values of the integer inline constants (0..=64, -1..=-16).
const INLINE_INTS: std::ops::RangeInclusive<u8> = 128..=208;

/// Where operand `k` of `i` is encoded when it is a register, or an
/// integer inline constant in a source field (whose value the field holds
/// as it holds a register's number: renamed alike).
fn operand_slot(i: &Instruction, k: usize) -> Option<inlay_isa::RegisterSlot> {
    if let Some(at) = i.register_slot(k) {
        return Some(at);
    }
    match (i.operand(k)?, i.slots().get(k)?) {
        (Operand::Inline(c), &inlay_isa::tables::Slot::Reg { field, .. })
            if INLINE_INTS.contains(&c) =>
        {
            Some(inlay_isa::RegisterSlot::Field {
                field,
                scalar: false,
                src9: false,
            })
        }
        _ => None,
    }
}

/// Encodings whose register operands all sit in plain register fields,
/// which [`Instruction::set_register`] renames exactly as the builder
/// sets them.
fn renamable(enc: Encoding) -> bool {
    matches!(
        enc,
        Encoding::Sop1
            | Encoding::Sop2
            | Encoding::Sopc
            | Encoding::Sopk
            | Encoding::Vop1
            | Encoding::Vop2
            | Encoding::Vopc
            | Encoding::Vop3
            | Encoding::Vop3p
    )
}

fn operand_key(o: &Operand) -> u64 {
    let reg =
        |tag: u64, first: u16, count: u8| tag << 56 | u64::from(first) << 8 | u64::from(count);
    match *o {
        Operand::Vgpr { first, count } => reg(1, first, count),
        Operand::Agpr { first, count } => reg(2, first, count),
        Operand::Sgpr { first, count } => reg(3, first, count),
        Operand::Ttmp { first, count } => reg(4, first, count),
        Operand::Special { code, count } => reg(5, u16::from(code), count),
        Operand::Inline(c) => 6 << 56 | u64::from(c),
        Operand::Literal(v) => 7 << 56 | u64::from(v),
        Operand::Imm(v) => 8 << 56 | u64::from(v),
        Operand::Fixed(t) => 9 << 56 | t.as_ptr() as u64 & 0x00ff_ffff_ffff_ffff,
    }
}

/// The shape of form `key` (of `ops`).
fn shape(key: &BuildKey, ops: &[Operand]) -> BuildKey {
    let mut k = *key;
    for (s, o) in k.ops.iter_mut().zip(ops) {
        *s = shape_key(o);
    }
    k
}

impl Asm {
    pub(super) fn sgpr(n: u16, count: u8) -> Operand {
        Operand::Sgpr { first: n, count }
    }

    pub(super) fn konst(v: u32) -> Operand {
        if v <= 64 {
            Operand::Inline(128 + v as u8)
        } else {
            Operand::Literal(v)
        }
    }

    /// A signed integer as an inline constant (-16..=64), if it is one.
    pub(super) fn inline_int(v: i32) -> Option<Operand> {
        match v {
            0..=64 => Some(Operand::Inline(128 + v as u8)),
            -16..=-1 => Some(Operand::Inline((192 - v) as u8)),
            _ => None,
        }
    }

    pub(super) fn new(target: inlay_isa::Target) -> Asm {
        Asm {
            b: Builder::new(target),
            atomic: std::cell::Cell::new(None),
            setups: Default::default(),
            decoder: inlay_isa::Decoder::new(target),
            built: Default::default(),
            shapes: Default::default(),
            quick: Default::default(),
            facts: Default::default(),
        }
    }

    pub(super) fn build(
        &self,
        enc: Encoding,
        m: &'static str,
        ops: &[Operand],
    ) -> Result<Instruction, RewriteError> {
        let mut key = BuildKey {
            enc,
            mnemonic: m.as_ptr() as usize,
            ops: [u64::MAX; 6],
        };
        if ops.len() <= key.ops.len() {
            for (k, o) in key.ops.iter_mut().zip(ops) {
                *k = operand_key(o);
            }
            if let Some(i) = self.built.borrow().get(&key) {
                return Ok(*i);
            }
        }
        let i = match self.renamed(&key, ops) {
            Some(i) => i,
            None => {
                let i = self
                    .b
                    .build(enc, m, ops)
                    .map_err(|e| RewriteError::Build(m, e))?;
                if ops.len() <= key.ops.len() && renamable(enc) {
                    let registers = std::array::from_fn(|k| operand_slot(&i, k));
                    let s = Shape { inst: i, registers };
                    self.shapes.borrow_mut().insert(shape(&key, ops), s);
                }
                i
            }
        };
        if ops.len() <= key.ops.len() {
            self.built.borrow_mut().insert(key, i);
        }
        Ok(i)
    }

    /// The form `key` (of `ops`) as a copy of one of its shape built
    /// before, registers renamed; `None` when there is none or a register
    /// does not fit its field (then the builder says why).
    fn renamed(&self, key: &BuildKey, ops: &[Operand]) -> Option<Instruction> {
        if ops.len() > key.ops.len() || !renamable(key.enc) {
            return None;
        }
        let Shape {
            mut inst,
            registers,
        } = *self.shapes.borrow().get(&shape(key, ops))?;
        for (o, at) in ops.iter().zip(registers) {
            let value = match *o {
                Operand::Vgpr { first, .. }
                | Operand::Agpr { first, .. }
                | Operand::Sgpr { first, .. } => first,
                Operand::Inline(c) if INLINE_INTS.contains(&c) => u16::from(c),
                _ => continue,
            };
            if !at.is_some_and(|at| inst.set_register_at(at, value)) {
                return None;
            }
        }
        debug_assert_eq!(
            Some(inst),
            self.b.build(key.enc, inst.mnemonic(), ops).ok(),
            "a renamed copy differs from the form built"
        );
        Some(inst)
    }

    /// Move `m` of `ops` (at most three), from a slot of a small cache
    /// when it was built before: [`Asm::build`]'s memo is keyed by the
    /// whole form, slower to make and hash than one word.
    fn quick(&self, m: Move, ops: &[Operand]) -> Result<Instruction, RewriteError> {
        let (enc, mnemonic) = m.form();
        let mut key = (m as u64) << 56;
        for (k, o) in ops.iter().enumerate() {
            match small(o) {
                Some(bits) if k < 3 => key |= bits << (18 * k),
                _ => return self.build(enc, mnemonic, ops),
            }
        }
        let slot = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize % QUICK_SLOTS;
        if let Some(&(k, i)) = self.quick.borrow().get(slot) {
            if k == key {
                return Ok(i);
            }
        }
        let i = self.build(enc, mnemonic, ops)?;
        let mut q = self.quick.borrow_mut();
        if q.is_empty() {
            // (A key is never 0: its tag is not.)
            q.resize(QUICK_SLOTS, (0, Instruction::default()));
        }
        q[slot] = (key, i);
        Ok(i)
    }

    pub(super) fn mov(&self, d: u16, v: u32) -> Result<Instruction, RewriteError> {
        self.smov(Self::sgpr(d, 1), Self::konst(v))
    }

    /// `s_mov_b32 d, src`.
    pub(super) fn smov(&self, d: Operand, src: Operand) -> Result<Instruction, RewriteError> {
        self.quick(Move::SMov, &[d, src])
    }

    /// `s_mov_b64 d, src`.
    pub(super) fn smov64(&self, d: Operand, src: Operand) -> Result<Instruction, RewriteError> {
        self.quick(Move::SMov64, &[d, src])
    }

    /// `v_writelane_b32 vV, src, lane`.
    pub(super) fn writelane(
        &self,
        v: u16,
        src: Operand,
        lane: u8,
    ) -> Result<Instruction, RewriteError> {
        let vop = Operand::Vgpr { first: v, count: 1 };
        self.quick(Move::WriteLane, &[vop, src, Self::konst(u32::from(lane))])
    }

    /// `v_readlane_b32 d, vV, lane`.
    pub(super) fn readlane(
        &self,
        d: Operand,
        v: u16,
        lane: u8,
    ) -> Result<Instruction, RewriteError> {
        let vop = Operand::Vgpr { first: v, count: 1 };
        self.quick(Move::ReadLane, &[d, vop, Self::konst(u32::from(lane))])
    }

    /// `s_mov_b32 sd, v` with `v` as a literal whatever its value, so the
    /// size does not depend on the value.
    pub(super) fn mov_lit(&self, d: u16, v: u32) -> Result<Instruction, RewriteError> {
        self.build(
            Encoding::Sop1,
            "s_mov_b32",
            &[Self::sgpr(d, 1), Operand::Literal(v)],
        )
    }

    pub(super) fn add_lit(
        &self,
        m: &'static str,
        d: u16,
        v: u32,
    ) -> Result<Instruction, RewriteError> {
        self.build(
            Encoding::Sop2,
            m,
            &[Self::sgpr(d, 1), Self::sgpr(d, 1), Operand::Literal(v)],
        )
    }

    pub(super) fn vmov(&self, d: u16, src: Operand) -> Result<Instruction, RewriteError> {
        self.quick(Move::VMov, &[Operand::Vgpr { first: d, count: 1 }, src])
    }
}

/// The 64-bit scalar operand a 7-bit SGPR field names: an SGPR pair, a
/// trap temporary pair, or VCC and the like.
pub(super) fn scalar_pair(code: u16) -> Operand {
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
pub(super) const EXEC: Operand = Operand::Special {
    code: 126,
    count: 2,
};

/// Hook code with forward branches to its end.
#[derive(Default)]
pub(super) struct Code {
    pub(super) insts: Vec<Instruction>,
    /// Indices of branches to the end.
    pub(super) to_end: Vec<usize>,
    pub(super) end: Option<usize>,
}

impl Code {
    pub(super) fn push(&mut self, i: Instruction) {
        self.insts.push(i);
    }
    pub(super) fn branch_to_end(&mut self, i: Instruction) {
        self.to_end.push(self.insts.len());
        self.insts.push(i);
    }
    /// The end is here: before the next instruction pushed.
    pub(super) fn end(&mut self) {
        self.end = Some(self.insts.len());
    }
    /// Sets the branches' offsets, after padding hazards inside the code
    /// (as a snippet's; the facts of instructions met before in `table`).
    pub(super) fn resolve(
        &mut self,
        table: &mut super::hazards::FactsTable,
    ) -> Result<(), RewriteError> {
        let end = self.end.unwrap_or(self.insts.len()).min(self.insts.len());
        let branches = self.to_end.iter().map(|&b| (b, end)).collect();
        let mut s =
            super::snippet::Snippet::with_branches(std::mem::take(&mut self.insts), branches);
        s.resolve_with(table)?;
        self.insts = s.insts;
        Ok(())
    }
}

pub(super) fn sgpr_reg(n: u16) -> inlay_isa::Register {
    inlay_isa::Register {
        file: inlay_isa::RegFile::Sgpr,
        first: n,
        count: 1,
    }
}
