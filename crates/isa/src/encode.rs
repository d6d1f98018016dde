//! Encoding: `Instruction` -> bytes, and a builder that makes instructions
//! from a mnemonic and typed operands, rejecting operands a slot cannot hold.
//!
//! An `Instruction` is its machine words, so `encode(decode(x)) == x` holds by
//! construction; the builder writes fields through the same layouts the
//! decoder reads (`fields.rs`) and checks its result by decoding it again.

use crate::decode::Decoder;
use crate::fields::{put, set};
use crate::model::{Encoding as E, Instruction, Operand, Target};
use crate::tables::{desc, Field, File, ImmKind, Slot, TargetTables};

/// Appends the instruction's bytes (little-endian words) to `out`.
#[inline]
pub fn encode_into(i: &Instruction, out: &mut Vec<u8>) {
    for w in i.words() {
        out.extend_from_slice(&w.to_le_bytes());
    }
}

/// The instruction's bytes.
pub fn encode(i: &Instruction) -> Vec<u8> {
    let mut v = Vec::with_capacity(8);
    encode_into(i, &mut v);
    v
}

/// Why an instruction could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error("no instruction `{0}` in this encoding on this target")]
    Unknown(String),
    #[error("expected {expected} operands, got {got}")]
    OperandCount { expected: usize, got: usize },
    #[error("operand {index}: {reason}")]
    Operand { index: usize, reason: &'static str },
    #[error("branch target out of range")]
    BranchRange,
    #[error("the built words decode to something else")]
    Inconsistent,
}

/// Opcode field of each encoding: fixed bits, opcode low bit, opcode width, size.
pub(crate) fn opcode_layout(enc: E) -> Option<(u32, u32, u32, u8)> {
    Some(match enc {
        E::Sop2 => (0x8000_0000, 23, 7, 4),
        E::Sopk => (0xB000_0000, 23, 5, 4),
        E::Sop1 => (0xBE80_0000, 8, 8, 4),
        E::Sopc => (0xBF00_0000, 16, 7, 4),
        E::Sopp => (0xBF80_0000, 16, 7, 4),
        E::Smem => (0xC000_0000, 18, 8, 8),
        E::Vop2 => (0x0000_0000, 25, 6, 4),
        E::Vop1 => (0x7E00_0000, 9, 8, 4),
        E::Vopc => (0x7C00_0000, 17, 8, 4),
        E::Vop3 => (0xD000_0000, 16, 10, 8),
        E::Vop3p => (0xD380_0000, 16, 7, 8),
        E::Ds => (0xD800_0000, 17, 8, 8),
        E::Flat => (0xDC00_0000, 18, 7, 8),
        E::Scratch => (0xDC00_4000, 18, 7, 8),
        E::Global => (0xDC00_8000, 18, 7, 8),
        E::Mubuf => (0xE000_0000, 18, 7, 8),
        E::Mtbuf => (0xE800_0000, 15, 4, 8),
        E::Mimg => (0xF000_0000, 18, 7, 8),
        E::Vop1Sdwa => (0x7E00_00F9, 9, 8, 8),
        E::Vop2Sdwa => (0x0000_00F9, 25, 6, 8),
        E::VopcSdwa => (0x7C00_00F9, 17, 8, 8),
        E::Vop1Dpp => (0x7E00_00FA, 9, 8, 8),
        E::Vop2Dpp => (0x0000_00FA, 25, 6, 8),
        E::VopcDpp => (0x7C00_00FA, 17, 8, 8),
        E::Exp => (0xC400_0000, 0, 0, 8),
        E::Vintrp => (0xD400_0000, 16, 2, 4),
        E::Invalid => return None,
    })
}

/// Builds instructions for one target.
#[derive(Clone, Copy)]
pub struct Builder {
    target: Target,
}

impl Builder {
    pub fn new(target: Target) -> Builder {
        Builder { target }
    }

    /// Builds `mnemonic` (as printed, e.g. `v_add_f32_e32`) in `enc` from
    /// operands in printed order. Modifiers start at their defaults (SDWA
    /// selects DWORD, DPP masks 0xf, no offset) and can be set afterwards
    /// with [`Instruction::set_modifier`].
    pub fn build(
        &self,
        enc: E,
        mnemonic: &str,
        ops: &[Operand],
    ) -> Result<Instruction, BuildError> {
        let t = TargetTables::of(self.target);
        let (fixed, lo, _, len) =
            opcode_layout(enc).ok_or_else(|| BuildError::Unknown(mnemonic.into()))?;
        let find = |tab: &[u16]| {
            tab.iter()
                .position(|d| *d != 0 && desc(*d).mnemonic == mnemonic)
        };
        // Forms that exist only with glc set (atomics returning a value) are
        // chosen when the operand count asks for them.
        let mut choice = None;
        for (tab, glc) in [(t.table(enc), false), (t.table_glc(enc), true)] {
            if let Some(op) = find(tab) {
                let d = tab[op];
                if desc(d).slots().len() == ops.len() || choice.is_none() {
                    choice = Some((op as u32, d, glc));
                }
            }
        }
        let (op, d, glc) = choice.ok_or_else(|| BuildError::Unknown(mnemonic.into()))?;
        let slots = desc(d).slots();
        if slots.len() != ops.len() {
            return Err(BuildError::OperandCount {
                expected: slots.len(),
                got: ops.len(),
            });
        }
        let mut i = Instruction {
            words: [fixed | op << lo, 0],
            len,
            encoding: enc,
            target: self.target,
            desc: d,
        };
        match enc {
            // SDWA: all selects DWORD (VOP1 has no src1_sel, VOPC no dst_sel).
            // v_nop_sdwa, v_clrexcp_sdwa: LLVM's form has every select zero
            E::Vop1Sdwa if slots.is_empty() => i.words[1] = 0,
            E::Vop1Sdwa => i.words[1] = 6 << 8 | 6 << 16,
            E::Vop2Sdwa => i.words[1] = 6 << 8 | 6 << 16 | 6 << 24,
            E::VopcSdwa => i.words[1] = 6 << 16 | 6 << 24,
            // VOP3P: op_sel_hi defaults to all ones where the opcode says so.
            E::Vop3p
                if desc(d).flags & crate::format::F_OPSEL_HI_ONES != 0
                    && !crate::fields::is_mai_name(mnemonic) =>
            {
                i.words[0] |= 1 << 14;
                i.words[1] |= 3 << 27;
            }
            E::Vop1Dpp | E::Vop2Dpp | E::VopcDpp => i.words[1] = 0xFF00_0000,
            E::Global | E::Scratch => i.words[1] = 0x7F << 16,
            _ => {}
        }
        if glc {
            let bit = if enc == E::Mubuf { 14 } else { 16 };
            i.words[0] |= 1 << bit;
        }
        let mut literal: Option<u32> = None;
        for (index, (slot, op)) in slots.iter().zip(ops).enumerate() {
            let bad = |reason| BuildError::Operand { index, reason };
            match (*slot, *op) {
                (Slot::Fixed(_), Operand::Sgpr { first, .. })
                    if enc == E::Global || enc == E::Scratch =>
                {
                    if !set(&mut i, Field::Saddr, first as u32) {
                        return Err(bad("saddr out of range"));
                    }
                }
                (Slot::Fixed(_), Operand::Vgpr { first, count })
                    if matches!(enc, E::Mubuf | E::Mtbuf) =>
                {
                    // vaddr: one register means offen, two mean idxen + offen
                    let bits = if count == 2 { 3 } else { 1 };
                    if !(set(&mut i, Field::Vaddr, first as u32) && put(&mut i, 0, 12, 2, bits)) {
                        return Err(bad("vaddr out of range"));
                    }
                }
                (Slot::Fixed(t), Operand::Fixed(text)) if Slot::fixed_text(t) == text => {}
                (Slot::Fixed(_), _) => return Err(bad("this operand is fixed text")),
                (Slot::Lit, Operand::Literal(v)) => literal = Some(v),
                (Slot::Lit, _) => return Err(bad("expects a 32-bit literal")),
                (Slot::Imm(k), Operand::Imm(v)) => {
                    let ok = match k {
                        ImmKind::GprIdx if enc == E::Sopc => set(&mut i, Field::Ssrc1, v),
                        ImmKind::SmemOffset => {
                            set(&mut i, Field::Offset, v) && put(&mut i, 0, 17, 1, 1)
                        }
                        _ => set(&mut i, Field::Simm16, v),
                    };
                    if !ok {
                        return Err(bad("immediate out of range"));
                    }
                }
                (Slot::FieldImm(f), Operand::Imm(v)) => {
                    if !set(&mut i, f, v) {
                        return Err(bad("immediate out of range"));
                    }
                }
                (Slot::Imm(_) | Slot::FieldImm(_), _) => return Err(bad("expects an immediate")),
                (
                    Slot::Reg {
                        field, regs, file, ..
                    },
                    op,
                ) => {
                    let v = reg_value(enc, field, regs, file, op, &mut literal).map_err(bad)?;
                    if !set(&mut i, field, v) {
                        return Err(bad("value does not fit the field"));
                    }
                }
            }
        }
        if let Some(v) = literal {
            if i.len != 4 {
                return Err(BuildError::Operand {
                    index: 0,
                    reason: "no literal in this encoding",
                });
            }
            i.words[1] = v;
            i.len = 8;
        }
        // The decoder is the judge: the words must decode back to this desc.
        let bytes = encode(&i);
        match Decoder::new(self.target).decode(&bytes) {
            Ok(back) if back == i => Ok(i),
            _ => Err(BuildError::Inconsistent),
        }
    }
}

fn is_src9(f: Field) -> bool {
    matches!(f, Field::Src0 | Field::Src1 | Field::Src2 | Field::Vsrc1)
}

fn is_scalar_src(f: Field) -> bool {
    matches!(f, Field::Ssrc0 | Field::Ssrc1)
}

/// Field value for an operand, or why the slot cannot hold it.
fn reg_value(
    enc: E,
    field: Field,
    regs: u8,
    file: File,
    op: Operand,
    literal: &mut Option<u32>,
) -> Result<u32, &'static str> {
    let takes_scalar = file == File::S || is_scalar_src(field) || is_src9(field);
    let count_ok = |c: u8| c == regs || (field == Field::Addr && enc == E::Global && c == 1);
    match op {
        Operand::Vgpr { first, count } | Operand::Agpr { first, count } => {
            let want = if matches!(op, Operand::Agpr { .. }) {
                File::A
            } else {
                File::V
            };
            if file == File::S || is_scalar_src(field) {
                return Err("expects a scalar operand");
            }
            if file != want {
                return Err("wrong register file (VGPR vs AGPR)");
            }
            if !count_ok(count) {
                return Err("wrong register count");
            }
            Ok(first as u32 + if is_src9(field) { 256 } else { 0 })
        }
        Operand::Sgpr { first, count } | Operand::Ttmp { first, count } => {
            if !takes_scalar {
                return Err("expects a vector register");
            }
            if count != regs {
                return Err("wrong register count");
            }
            let base = if matches!(op, Operand::Ttmp { .. }) {
                108
            } else {
                0
            };
            let v = base + first as u32;
            if (matches!(op, Operand::Sgpr { .. }) && v > 101) || (base == 108 && first > 15) {
                return Err("register out of range");
            }
            Ok(v)
        }
        Operand::Special { code, .. } if takes_scalar => Ok(code as u32),
        Operand::Inline(c) if is_src9(field) || is_scalar_src(field) => match c {
            128..=208 | 240..=248 => Ok(c as u32),
            _ => Err("not an inline constant"),
        },
        Operand::Literal(v) if is_src9(field) || is_scalar_src(field) => {
            if literal.is_some_and(|l| l != v) {
                return Err("only one literal value per instruction");
            }
            *literal = Some(v);
            Ok(255)
        }
        _ => Err("operand kind not accepted here"),
    }
}

/// Modifiers settable after building.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modifier {
    /// Memory offset (SMEM, DS, FLAT/MUBUF offset) in bytes.
    Offset(i32),
    /// Cache policy bit 0/1/2 (glc/slc/scc; sc0/nt/sc1 on gfx942).
    Cpol(u8, bool),
    Clamp(bool),
    /// Output modifier: 0 none, 1 mul:2, 2 mul:4, 3 div:2.
    Omod(u8),
}

impl Instruction {
    /// Sets a modifier; `false` if this encoding has no such modifier or the value does not fit.
    pub fn set_modifier(&mut self, m: Modifier) -> bool {
        match (self.encoding, m) {
            // The 21-bit SMEM byte offset (gfx9: unsigned 20 bits in use).
            (E::Smem, Modifier::Offset(o)) => {
                (0..1 << 20).contains(&o) && put(self, 1, 0, 21, o as u32)
            }
            (E::Ds, Modifier::Offset(o)) => {
                (0..=0xFFFF).contains(&o) && put(self, 0, 0, 16, o as u32)
            }
            (E::Flat, Modifier::Offset(o)) => {
                (0..0x1000).contains(&o) && put(self, 0, 0, 12, o as u32)
            }
            (E::Global | E::Scratch, Modifier::Offset(o)) => {
                (-4096..4096).contains(&o) && put(self, 0, 0, 13, (o as u32) & 0x1FFF)
            }
            (E::Mubuf | E::Mtbuf, Modifier::Offset(o)) => {
                (0..0x1000).contains(&o) && put(self, 0, 0, 12, o as u32)
            }
            (E::Flat | E::Global | E::Scratch, Modifier::Cpol(k, on)) if k < 3 => {
                put(self, 0, [16, 17, 25][k as usize], 1, on as u32)
            }
            (E::Mubuf, Modifier::Cpol(k, on)) if k < 3 => {
                put(self, 0, [14, 17, 15][k as usize], 1, on as u32)
            }
            (E::Vop3 | E::Vop3p, Modifier::Clamp(on)) => put(self, 0, 15, 1, on as u32),
            (E::Vop3, Modifier::Omod(v)) => put(self, 1, 27, 2, v as u32),
            _ => false,
        }
    }

    /// Renames the register (or first register of the tuple) of operand
    /// `slot` (printed order) to `first`, in the same register file and of
    /// the same width; `false` when that operand is no SGPR, VGPR or AGPR
    /// or the field cannot hold `first` (SMEM bases count pairs, resource
    /// descriptors quads).
    /// Fixed slots that name registers (`off` holding a GLOBAL/SCRATCH
    /// saddr or a vaddr, a VOPC SDWA SGPR destination) are renamed too.
    pub fn set_register(&mut self, slot: usize, first: u16) -> bool {
        self.register_slot(slot)
            .is_some_and(|r| self.set_register_at(r, first))
    }

    /// Where operand `slot`'s register is encoded, for
    /// [`Instruction::set_register_at`]: found once, it renames that operand
    /// of this instruction (and of any with the same encoding up to
    /// register numbers) without decoding it again. `None` when the operand
    /// names no SGPR, VGPR or AGPR.
    pub fn register_slot(&self, slot: usize) -> Option<RegisterSlot> {
        match self.slots().get(slot)? {
            Slot::Fixed(_) => {
                let (dword, lo, width, scalar) = crate::info::fixed_register_bits(self, slot)?;
                Some(RegisterSlot::Fixed {
                    dword,
                    lo,
                    width,
                    scalar,
                })
            }
            &Slot::Reg { field, .. } => {
                let src9 = matches!(
                    field,
                    Field::Src0 | Field::Src1 | Field::Src2 | Field::Vsrc1
                );
                match self.operand(slot)? {
                    Operand::Sgpr { .. } => Some(RegisterSlot::Field {
                        field,
                        scalar: true,
                        src9,
                    }),
                    Operand::Vgpr { .. } | Operand::Agpr { .. } => Some(RegisterSlot::Field {
                        field,
                        scalar: false,
                        src9,
                    }),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// [`Instruction::set_register`] for the operand `at` describes (from
    /// [`Instruction::register_slot`] of this instruction).
    pub fn set_register_at(&mut self, at: RegisterSlot, first: u16) -> bool {
        let v = u32::from(first);
        match at {
            RegisterSlot::Fixed {
                dword,
                lo,
                width,
                scalar,
            } => {
                let fits = if scalar { first < 102 } else { first < 256 };
                fits && put(self, dword, lo, width, v)
            }
            RegisterSlot::Field {
                field,
                scalar: true,
                ..
            } => first < 102 && set(self, field, v),
            RegisterSlot::Field { field, src9, .. } => {
                first < 256 && set(self, field, if src9 { 256 + v } else { v })
            }
        }
    }

    /// Re-aims a branch at `target` when the instruction sits at `addr`.
    pub fn set_branch_target(&mut self, addr: u64, target: u64) -> Result<(), BuildError> {
        if !self.slots().contains(&Slot::Imm(ImmKind::Branch)) {
            return Err(BuildError::Operand {
                index: 0,
                reason: "not a branch",
            });
        }
        let delta = (target as i64 - addr as i64 - 4) / 4;
        if (target as i64 - addr as i64) % 4 != 0 || !(-32768..=32767).contains(&delta) {
            return Err(BuildError::BranchRange);
        }
        put(self, 0, 0, 16, delta as i16 as u16 as u32);
        Ok(())
    }

    /// Sets the value of the 32-bit literal the instruction carries;
    /// `false` (and nothing changed) when it carries none. Cheaper than
    /// building the instruction again for each value.
    pub fn set_literal(&mut self, v: u32) -> bool {
        let has_literal =
            self.len() == 8 && self.operands().any(|o| matches!(o, Operand::Literal(_)));
        has_literal && put(self, 1, 0, 32, v)
    }
}

/// Where a register operand is encoded ([`Instruction::register_slot`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterSlot {
    /// A fixed operand's bits (dword, low bit, width), and whether it names
    /// an SGPR.
    Fixed {
        dword: usize,
        lo: u32,
        width: u32,
        scalar: bool,
    },
    /// An operand field, naming an SGPR or not, in 9-bit source encoding
    /// (VGPR n = 256 + n) or not.
    Field {
        field: Field,
        scalar: bool,
        src9: bool,
    },
}

#[cfg(test)]
mod set_register_tests {
    use crate::{Decoder, Operand, Target};

    fn words(ws: &[u32]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn renames_every_register_operand_of_a_global_store_with_saddr() {
        // global_store_dwordx3 v3, v[0:2], s[4:5], as llvm-objdump-19
        // lists it; renamed, it is what llvm-mc-19 encodes for
        // global_store_dwordx3 v7, v[8:10], s[10:11] (0xDC788000 0x000A0807).
        let d = Decoder::new(Target::Gfx90a);
        let mut i = d.decode(&words(&[0xDC788000, 0x00040003])).unwrap();
        assert!(i.set_register(0, 7));
        assert!(i.set_register(1, 8));
        assert!(i.set_register(2, 10));
        assert_eq!(i.words(), &[0xDC788000, 0x000A0807]);
        // The saddr slot takes SGPRs only; "off" stays unrenamable.
        assert!(!i.set_register(2, 200));
        let off = d.decode(&words(&[0xDC788000, 0x007F0003])).unwrap();
        assert!(!off.clone().set_register(2, 4));
        assert!(matches!(off.operand(2), Some(Operand::Fixed("off"))));
    }

    #[test]
    fn sets_a_literal_only_where_there_is_one() {
        use crate::{Builder, Encoding};
        let b = Builder::new(Target::Gfx90a);
        let s4 = Operand::Sgpr { first: 4, count: 1 };
        let add = |v| b.build(Encoding::Sop2, "s_add_u32", &[s4, s4, Operand::Literal(v)]);
        let mut i = add(0).unwrap();
        assert!(i.set_literal(0xdead_beef));
        assert_eq!(i, add(0xdead_beef).unwrap());
        // An inline constant is no literal: refused, nothing changed.
        let inline = b
            .build(Encoding::Sop2, "s_add_u32", &[s4, s4, Operand::Inline(129)])
            .unwrap();
        let mut j = inline;
        assert!(!j.set_literal(7));
        assert_eq!(j, inline);
    }
}
