//! Decoding: bytes -> [`Instruction`], into a caller-owned value (no
//! allocation but each table entry's checks, made on its first use).

use crate::fields::Read;
use crate::model::{Encoding as E, Instruction, Target};
use crate::tables::{
    operand_class, scalar_regs, src_name, ConstKind, Field, File, OperandClass, Slot, TargetTables,
    Verdict, SGPR_TUPLE_END, TTMP_TUPLE_END,
};

use std::sync::OnceLock;

/// Why bytes could not be decoded at all. (Unknown encodings are not errors:
/// they decode to an instruction with `Encoding::Invalid` and their word.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("need {needed} bytes, have {have}")]
    Truncated { needed: usize, have: usize },
}

/// Source value that means "a 32-bit literal follows".
const LITERAL: u32 = 255;

/// A decoder for one target. Cheap to copy.
#[derive(Clone, Copy)]
pub struct Decoder {
    target: Target,
    tables: &'static TargetTables,
}

impl Decoder {
    pub fn new(target: Target) -> Decoder {
        Decoder {
            target,
            tables: TargetTables::of(target),
        }
    }

    pub fn target(&self) -> Target {
        self.target
    }

    /// Decodes one instruction from the start of `bytes` into `out` and
    /// returns its size. Unknown words decode to an invalid 4-byte instruction.
    pub fn decode_into(&self, bytes: &[u8], out: &mut Instruction) -> Result<usize, DecodeError> {
        let w0 = read_u32(bytes, 0).ok_or(DecodeError::Truncated {
            needed: 4,
            have: bytes.len(),
        })?;
        let (enc, op, base) = classify(w0);
        out.target = self.target;
        out.words = [w0, 0];
        out.encoding = enc;
        out.len = 4;
        out.desc = 0;
        let desc = self.lookup(enc, op, w0);
        if desc == 0 {
            out.encoding = E::Invalid;
            return Ok(4);
        }
        out.desc = desc;
        let mut unshared = None;
        let checks = entry_checks(out, &mut unshared);
        let mut len = base;
        if base == 4 && needs_literal(out, checks) {
            len = 8;
        }
        if len == 8 {
            out.words[1] = read_u32(bytes, 4).ok_or(DecodeError::Truncated {
                needed: 8,
                have: bytes.len(),
            })?;
        }
        let reject = out.desc().reject_bits;
        let rejected = out.words[0] & reject[0] != 0 || (len == 8 && out.words[1] & reject[1] != 0);
        if rejected
            || !operands_valid(out, checks)
            || !zero_fields_clear(out)
            || !saddr_valid(out, checks)
            || !named_rules_hold(out, checks)
        {
            // LLVM rejects the whole instruction when an operand names no register.
            out.desc = 0;
            out.encoding = E::Invalid;
            out.words[1] = 0;
            return Ok(4);
        }
        out.len = len as u8;
        Ok(len)
    }

    /// The table entry for opcode `op`: memory instructions with glc (sc0)
    /// or lds (DS: gds) set have forms of their own where those differ.
    fn lookup(&self, enc: E, op: u32, w0: u32) -> u16 {
        let (glc, lds) = match enc {
            E::Flat | E::Scratch | E::Global => (w0 >> 16 & 1 != 0, w0 >> 13 & 1 != 0),
            E::Mubuf => (w0 >> 14 & 1 != 0, w0 >> 16 & 1 != 0),
            E::Ds => (false, w0 >> 16 & 1 != 0),
            _ => (false, false),
        };
        let form = match (glc, lds) {
            (true, _) if self.tables.lookup_glc(enc, op) != 0 => self.tables.lookup_glc(enc, op),
            (_, true) => self.tables.lookup_lds(enc, op),
            _ => 0,
        };
        match form {
            0 => self.tables.lookup(enc, op),
            d => d,
        }
    }

    /// Size of the instruction starting with `w0` if it is valid (4 or 8
    /// bytes): cheaper than decoding, reads only the opcode tables.
    pub(crate) fn valid_len(&self, w0: u32) -> usize {
        let (enc, op, base) = classify(w0);
        if base == 8 {
            return 8;
        }
        let desc = self.lookup(enc, op, w0);
        let i = Instruction {
            words: [w0, 0],
            len: 4,
            encoding: enc,
            target: self.target,
            desc,
        };
        if desc != 0 && needs_literal(&i, entry_checks(&i, &mut None)) {
            8
        } else {
            4
        }
    }

    /// Decodes one instruction into a new value.
    #[inline]
    pub fn decode(&self, bytes: &[u8]) -> Result<Instruction, DecodeError> {
        let mut i = Instruction::default();
        self.decode_into(bytes, &mut i)?;
        Ok(i)
    }
}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Size an instruction starting with `w0` has before any literal: 8 for
/// encodings whose second dword is always part of them (VOP3, SDWA, DPP,
/// memory), 4 otherwise.
pub(crate) fn base_len(w0: u32) -> usize {
    classify(w0).2
}

/// Encoding, opcode number and base size (SDWA/DPP count their extra dword).
// Inlining is forced here and in decode_into's other small checks: LLVM
// kept them out of line, and for most words the calls cost more than the
// work (a match on the encoding decode_into has already made).
#[inline(always)]
fn classify(w0: u32) -> (E, u32, usize) {
    if w0 >> 31 == 0 {
        let (enc, op) = match w0 >> 25 {
            0x3F => (E::Vop1, (w0 >> 9) & 0xFF),
            0x3E => (E::Vopc, (w0 >> 17) & 0xFF),
            _ => (E::Vop2, (w0 >> 25) & 0x3F),
        };
        return match (w0 & 0x1FF, enc) {
            (0xF9, E::Vop1) => (E::Vop1Sdwa, op, 8),
            (0xF9, E::Vop2) => (E::Vop2Sdwa, op, 8),
            (0xF9, _) => (E::VopcSdwa, op, 8),
            (0xFA, E::Vop1) => (E::Vop1Dpp, op, 8),
            (0xFA, E::Vop2) => (E::Vop2Dpp, op, 8),
            (0xFA, _) => (E::VopcDpp, op, 8),
            _ => (enc, op, 4),
        };
    }
    if w0 >> 30 == 2 {
        return match w0 >> 23 {
            0x17D => (E::Sop1, (w0 >> 8) & 0xFF, 4),
            0x17E => (E::Sopc, (w0 >> 16) & 0x7F, 4),
            0x17F => (E::Sopp, (w0 >> 16) & 0x7F, 4),
            _ if w0 >> 28 == 0xB => (E::Sopk, (w0 >> 23) & 0x1F, 4),
            _ => (E::Sop2, (w0 >> 23) & 0x7F, 4),
        };
    }
    match w0 >> 26 {
        0x30 => (E::Smem, (w0 >> 18) & 0xFF, 8),
        0x34 if w0 >> 23 == 0x1A7 => (E::Vop3p, (w0 >> 16) & 0x7F, 8),
        0x34 => (E::Vop3, (w0 >> 16) & 0x3FF, 8),
        0x36 => (E::Ds, (w0 >> 17) & 0xFF, 8),
        0x37 => {
            let enc = match (w0 >> 14) & 3 {
                0 => E::Flat,
                1 => E::Scratch,
                2 => E::Global,
                _ => E::Invalid,
            };
            (enc, (w0 >> 18) & 0x7F, 8)
        }
        0x38 => (E::Mubuf, (w0 >> 18) & 0x7F, 8),
        0x3A => (E::Mtbuf, (w0 >> 15) & 0xF, 8),
        // bit 0 is the opcode's eighth bit (no gfx9 image opcode has it)
        0x3C => (E::Mimg, (w0 >> 18) & 0x7F | (w0 & 1) << 7, 8),
        0x31 => (E::Exp, 0, 8),
        0x35 => (E::Vintrp, (w0 >> 16) & 3, 4),
        _ => (E::Invalid, 0, 4),
    }
}

/// A 4-byte instruction takes a literal dword if a scalar source says so
/// or its operand list has a literal (v_madmk/madak, s_setreg_imm32).
fn needs_literal(i: &Instruction, checks: &EntryChecks) -> bool {
    // The source fields of 4-byte encodings are bits 0..9 (src0), 0..8
    // (ssrc0) and 8..16 (ssrc1): with neither low byte 0xFF none holds
    // 255, and reading them (half of decoding a VOP1/VOP2/SOP) is no use.
    let maybe_literal_source = i.words[0] & 0xFF == 0xFF || (i.words[0] >> 8) & 0xFF == 0xFF;
    checks.literal
        || maybe_literal_source
            && checks
                .operands
                .iter()
                .any(|c| c.literal_source && c.code.value(i) == LITERAL)
}

/// Every register operand holds a value its operand class takes (learned
/// per operand: LLVM refuses the instruction otherwise), and register
/// tuples end inside their register file.
fn operands_valid(i: &Instruction, checks: &EntryChecks) -> bool {
    // MAI instructions take other operand classes for vdst and src2 when
    // acc_cd (bit 15) makes them AGPR operands.
    let acc = i.encoding == E::Vop3p && i.bits(0, 15, 1) != 0;
    checks.operands.iter().all(|c| {
        let code = c.code.value(i) + u32::from(c.vgpr_base);
        let class = if acc { c.class_acc } else { c.class };
        class.verdict(code) != Verdict::Reject && (!c.tuple || tuple_fits(i, c.field, code, c.regs))
    })
}

/// What decoding checks of a table entry that the entry alone decides,
/// worked out once per entry: per operand, finding the slot's field, class
/// and code was most of decoding.
#[derive(Clone)]
struct EntryChecks {
    encoding: E,
    /// The operand list has a literal (v_madmk/madak, s_setreg_imm32).
    literal: bool,
    /// Its last slot is an `off` (a GLOBAL/SCRATCH scalar base).
    saddr_slot: bool,
    /// A rule of [`named_rules_hold`] for single operations applies.
    named_rule: bool,
    /// The register operands, in printed order.
    operands: Vec<OperandCheck>,
}

/// What [`operands_valid`] (and [`needs_literal`]) check of one register
/// operand.
#[derive(Clone, Copy)]
struct OperandCheck {
    /// Reads the field (in this encoding); `vgpr_base` added makes it the
    /// operand's 9-bit code ([`operand_code`]).
    code: Read,
    vgpr_base: u16,
    /// Its operand class, and the one once acc_cd makes it an AGPR operand.
    class: &'static OperandClass,
    class_acc: &'static OperandClass,
    field: Field,
    regs: u8,
    /// More than one register (or vdata, sized by other bits): see
    /// whether the tuple ends inside its file.
    tuple: bool,
    /// A scalar source, which 255 makes a literal.
    literal_source: bool,
}

/// The [`EntryChecks`] of `i`'s table entry: kept, or made in `unshared`
/// for an entry shared by two encodings (not a Cow: through one, each use
/// asked which it held).
fn entry_checks<'a>(i: &Instruction, unshared: &'a mut Option<EntryChecks>) -> &'a EntryChecks {
    static CHECKS: OnceLock<Vec<OnceLock<EntryChecks>>> = OnceLock::new();
    let all = CHECKS.get_or_init(|| {
        (0..crate::tables::desc_count())
            .map(|_| OnceLock::new())
            .collect()
    });
    let make = || {
        let operands = i.slots().iter().filter_map(|s| match *s {
            Slot::Reg {
                field,
                regs,
                file,
                class,
                class_acc,
                ..
            } => Some(OperandCheck {
                code: crate::fields::read(i.encoding, field),
                vgpr_base: operand_code(field, file, 0) as u16,
                class: operand_class(class),
                class_acc: operand_class(class_acc),
                field,
                regs,
                tuple: regs != 1 || field == Field::Vdata,
                literal_source: matches!(field, Field::Src0 | Field::Ssrc0 | Field::Ssrc1),
            }),
            _ => None,
        });
        EntryChecks {
            encoding: i.encoding,
            literal: i.slots().iter().any(|s| matches!(s, Slot::Lit)),
            saddr_slot: matches!(i.slots().last(),
                Some(Slot::Fixed(t)) if Slot::fixed_text(*t) == "off"),
            named_rule: has_named_rule(i),
            operands: operands.collect(),
        }
    };
    match all.get(i.desc as usize).map(|cell| cell.get_or_init(make)) {
        Some(checks) if checks.encoding == i.encoding => checks,
        // A table entry shared by two encodings is not memoised.
        _ => unshared.insert(make()),
    }
}

/// The 9-bit source code of a field's value (VGPR n = 256 + n): source
/// fields hold one already, scalar fields a register number or constant,
/// vector fields a VGPR number.
pub(crate) fn operand_code(field: Field, file: File, v: u32) -> u32 {
    match field {
        Field::Src0 | Field::Src1 | Field::Src2 | Field::Vsrc1 => v,
        _ if file == File::S => v,
        _ => 256 + v,
    }
}

/// A slot's operand class; MAI instructions have another one for vdst and
/// src2 when acc_cd (bit 15) makes them AGPR operands.
pub(crate) fn slot_class(i: &Instruction, class: u8, class_acc: u8) -> &'static OperandClass {
    let acc = i.encoding == E::Vop3p && i.bits(0, 15, 1) != 0;
    operand_class(if acc { class_acc } else { class })
}

/// Register tuples end at v255, and scalar tuples of 3+ registers (which
/// start on a multiple of 4) inside the SGPRs or TTMPs LLVM has tuples of.
fn tuple_fits(i: &Instruction, field: Field, code: u32, regs: u8) -> bool {
    // Most operands: one register always fits (vdata's size depends on
    // other bits).
    if regs == 1 && field != Field::Vdata {
        return true;
    }
    let regs = match (field, code) {
        (Field::Vdata, _) => crate::format::vdata_regs(i, regs),
        (_, 0..=101 | 108..=123) => scalar_regs(regs),
        _ => regs,
    };
    let regs = u32::from(regs);
    match code {
        0..=101 if regs > 2 => (code & !3) + regs <= SGPR_TUPLE_END,
        108..=123 if regs > 2 => ((code - 108) & !3) + regs <= TTMP_TUPLE_END,
        256.. => {
            // with a scalar base, a GLOBAL address is one VGPR
            let one = field == Field::Addr && i.encoding == E::Global && i.bits(1, 16, 7) != 0x7F;
            regs <= 1 || one || code - 256 + regs <= 256
        }
        _ => true,
    }
}

/// Rules llvm-mc-19 applies to single operations: ds_nop takes no offset;
/// gfx942's fp8/bf8 conversions write whole dwords under SDWA.
#[inline(always)]
fn named_rules_hold(i: &Instruction, checks: &EntryChecks) -> bool {
    match i.encoding {
        // offen and idxen together take a VGPR pair, which ends at v255
        E::Mubuf | E::Mtbuf => i.field(Field::Vaddr) + i.bits(0, 12, 1) + i.bits(0, 13, 1) <= 256,
        _ if !checks.named_rule => true,
        E::Ds => i.bits(0, 0, 16) == 0,
        // The attribute source of 32-bit VOP3 interpolation has no high half
        // (the 16-bit forms print bit 8 as `high`); LLVM refuses it set.
        E::Vop3 => i.bits(1, 8, 1) == 0,
        E::Vop1Sdwa => i.bits(1, 8, 3) == 6,
        _ => true,
    }
}

/// Whether one of [`named_rules_hold`]'s rules for single operations
/// applies to `i`'s opcode (decided by its name, once per table entry).
fn has_named_rule(i: &Instruction) -> bool {
    let m = i.mnemonic();
    match i.encoding {
        E::Ds => m == "ds_nop",
        E::Vop3 => m.starts_with("v_interp_") && m.trim_end_matches("_e64").ends_with("_f32"),
        E::Vop1Sdwa => crate::format::sdwa_without_dst(m),
        _ => false,
    }
}

/// A GLOBAL/SCRATCH scalar base (any `saddr` but 0x7f, "off") names a
/// register LLVM can print: 64 bits wide for GLOBAL (so not `flat_scratch_hi`,
/// `vcc_hi` or `m0`), 32 bits for SCRATCH.
#[inline(always)]
fn saddr_valid(i: &Instruction, checks: &EntryChecks) -> bool {
    let regs = match i.encoding {
        E::Global => 2,
        E::Scratch => 1,
        // FLAT proper has no scalar base: the field is zero (as llvm-mc-19 decides)
        E::Flat => return i.bits(1, 16, 7) == 0,
        _ => return true,
    };
    let saddr = i.bits(1, 16, 7);
    saddr == 0x7F || !checks.saddr_slot || !src_name(ConstKind::B32, regs, saddr as u8).is_empty()
}

/// Fields this opcode leaves unused are zero (LLVM rejects them otherwise).
fn zero_fields_clear(i: &Instruction) -> bool {
    // The fields the mask names, lowest first.
    let mut mask = i.desc().zero_fields;
    while mask != 0 {
        let k = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        if ALL_FIELDS.get(k).is_some_and(|f| i.field(*f) != 0) {
            return false;
        }
    }
    true
}

/// Fields in the generator's order (`FIELDS` in gen/gen.py).
pub(crate) const ALL_FIELDS: [Field; 23] = [
    Field::Vdst,
    Field::Sdst,
    Field::Src0,
    Field::Src1,
    Field::Src2,
    Field::Vsrc1,
    Field::Ssrc0,
    Field::Ssrc1,
    Field::Simm16,
    Field::Sdata,
    Field::Sbase,
    Field::Offset,
    Field::Soffset,
    Field::Addr,
    Field::Data,
    Field::Data0,
    Field::Data1,
    Field::Saddr,
    Field::Vdata,
    Field::Vaddr,
    Field::Srsrc,
    Field::Ssamp,
    Field::Literal,
];
