//! Types of the generated instruction tables (`generated/tables.rs`).
//!
//! For every target and encoding there is a dense array indexed by opcode
//! number giving a [`Desc`] id (0 = no such instruction). A `Desc` names the
//! printed mnemonic, the target-independent [`crate::Opcode`] and the operand
//! [`Slot`]s in printed order. All of it is learned from llvm-mc-19.

use crate::generated::tables as gen;
use crate::model::{Encoding, Target};

/// An instruction field an operand is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    Vdst,
    Sdst,
    Src0,
    Src1,
    Src2,
    Vsrc1,
    Ssrc0,
    Ssrc1,
    Simm16,
    Sdata,
    Sbase,
    Offset,
    Soffset,
    Addr,
    Data,
    Data0,
    Data1,
    Saddr,
    Vdata,
    Vaddr,
    Srsrc,
    Ssamp,
    Literal,
}

/// Register file a register field names (before `acc` bits are applied).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum File {
    /// VGPRs (or, for 9-bit source fields, any scalar source / constant).
    V,
    /// SGPRs and the other scalar operands.
    S,
    /// Accumulation VGPRs.
    A,
}

/// How inline constants and literals print for a source operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConstKind {
    /// 32-bit (float or integer): floats print as 0.5, literals as 0x%x.
    B32,
    /// 64-bit: 1/(2*pi) prints with double precision.
    F64,
    /// 16-bit float: literals print as 16 bits.
    F16,
    /// 16-bit integer: inline floats print as their 16-bit hex pattern.
    I16,
    /// Packed 16-bit floats: inline constants as B32, but a literal names
    /// an f16 constant only when it fits in 16 bits, else prints as 32 bits.
    V2F16,
}

/// How a 16-bit immediate prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImmKind {
    Hex,
    Dec,
    /// Decimal, printed only when not zero (`s_endpgm`).
    DecNonzero,
    /// Signed word offset of a branch; listings annotate the target.
    Branch,
    Waitcnt,
    Sendmsg,
    Hwreg,
    /// `gpr_idx(SRC0,...)` mode of s_set_gpr_idx_on/mode.
    GprIdx,
    /// SMEM byte offset (or soffset register).
    SmemOffset,
}

/// One printed operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    /// A register/source field: `regs` registers wide; `class` says which
    /// values the operand takes ([`OperandClass`], index into the learned
    /// classes), `class_acc` the same once an acc bit makes it an AGPR
    /// operand (MAI vdst/src2).
    Reg {
        field: Field,
        regs: u8,
        file: File,
        ck: ConstKind,
        class: u8,
        class_acc: u8,
    },
    /// The 16-bit immediate of SOPP/SOPK, or the SMEM offset.
    Imm(ImmKind),
    /// A 32-bit literal that follows the instruction (madmk/madak, setreg_imm32).
    Lit,
    /// A field printed as a decimal number (`s_atc_probe`'s sdata).
    FieldImm(Field),
    /// Fixed text such as `vcc` or `off` (index into `FIXED_TEXT`).
    Fixed(u8),
}

impl Slot {
    pub(crate) const fn reg(
        field: Field,
        regs: u8,
        file: File,
        ck: ConstKind,
        class: u8,
        class_acc: u8,
    ) -> Slot {
        Slot::Reg {
            field,
            regs,
            file,
            ck,
            class,
            class_acc,
        }
    }
    pub(crate) const fn imm(k: ImmKind) -> Slot {
        Slot::Imm(k)
    }
    pub(crate) const fn lit() -> Slot {
        Slot::Lit
    }
    pub(crate) const fn field_imm(f: Field) -> Slot {
        Slot::FieldImm(f)
    }
    pub(crate) const fn fixed(i: u8) -> Slot {
        Slot::Fixed(i)
    }
    /// Text of a `Fixed` slot.
    pub fn fixed_text(i: u8) -> &'static str {
        gen::FIXED_TEXT.get(i as usize).copied().unwrap_or("")
    }
}

/// What LLVM's disassembler does with a value in an operand field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The whole instruction is invalid (`.long`).
    Reject,
    Accept,
    /// Printed, then `/*Invalid register, operand has 'CLASS' register class*/`.
    BadRegister,
    /// Printed as a 32-bit immediate, then `/*Invalid immediate*/`.
    BadImmediate,
}

/// The values one operand takes, learned by probing it with one value of
/// each kind (see [`value_kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperandClass {
    /// LLVM's name of the operand's register class, as its annotation says.
    pub name: &'static str,
    /// Two bits per value kind: a [`Verdict`].
    verdicts: u64,
}

impl OperandClass {
    pub(crate) const fn new(name: &'static str, verdicts: u64) -> OperandClass {
        OperandClass { name, verdicts }
    }

    /// What LLVM does with `code` (9-bit source encoding, VGPR n = 256 + n).
    pub fn verdict(&self, code: u32) -> Verdict {
        match self.verdicts >> (2 * value_kind(code)) & 3 {
            0 => Verdict::Reject,
            1 => Verdict::Accept,
            2 => Verdict::BadRegister,
            _ => Verdict::BadImmediate,
        }
    }
}

/// The operand class with index `i` (0: every value accepted).
pub fn operand_class(i: u8) -> &'static OperandClass {
    gen::OPERAND_CLASSES
        .get(usize::from(i))
        .unwrap_or(&gen::OPERAND_CLASSES[0])
}

/// Which kind of value a 9-bit source code is, as LLVM's decoder tells them
/// apart (order of `KIND_VALUES` in gen/learn.py): SGPR, the specials
/// 102-107 one by one, TTMP, 124-127 one by one, inline integer, unused
/// (209-234), 235-239 one by one, inline float, 249-255 one by one, even
/// and odd VGPR.
pub(crate) fn value_kind(code: u32) -> usize {
    // Looked up: every operand of every decoded instruction is checked, and
    // the chain of range compares cost more than the rest of the check.
    match VALUE_KINDS.get(code as usize) {
        Some(&k) => usize::from(k),
        None => value_kind_of(code),
    }
}

/// [`value_kind_of`] of every 9-bit code.
static VALUE_KINDS: [u8; 512] = {
    let mut t = [0; 512];
    let mut code = 0;
    while code < 512 {
        t[code] = value_kind_of(code as u32) as u8;
        code += 1;
    }
    t
};

const fn value_kind_of(code: u32) -> usize {
    (match code {
        0..=101 => 0,
        102..=107 => code - 101,
        108..=123 => 7,
        124..=127 => code - 116,
        128..=208 => 12,
        209..=234 => 13,
        235..=239 => code - 221,
        240..=248 => 19,
        249..=255 => code - 229,
        _ => 27 + code % 2,
    }) as usize
}

/// Registers an SGPR or TTMP operand of `regs` registers names: LLVM has
/// no 32-register scalar tuples, so a 1024-bit operand given an SGPR or
/// TTMP names that one register (a special register keeps its 64-bit name).
pub(crate) fn scalar_regs(regs: u8) -> u8 {
    if regs > 16 {
        1
    } else {
        regs
    }
}

/// One past the last SGPR / TTMP a scalar register tuple of 3+ registers
/// may reach (learned: `s[88:103]` and `ttmp[8:15]` are the last 16-wide ones).
pub(crate) const SGPR_TUPLE_END: u32 = gen::SGPR_TUPLE_END;
pub(crate) const TTMP_TUPLE_END: u32 = gen::TTMP_TUPLE_END;

/// What one opcode number of one encoding is on one target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Desc {
    /// Mnemonic as llvm-objdump prints it (with `_e32`/`_e64`/`_sdwa`/`_dpp`).
    pub mnemonic: &'static str,
    pub(crate) opcode: u16,
    slot_start: u16,
    slot_len: u8,
    /// Modifiers the instruction has (learned: `format::F_*`).
    pub(crate) flags: u8,
    /// Fields (bit = `Field as u32`) that must be zero: LLVM rejects the
    /// instruction otherwise (learned: the probe had to leave them empty).
    pub(crate) zero_fields: u32,
    /// Bits of dwords 0 and 1 that make LLVM reject the instruction when set
    /// (learned by setting each candidate bit on a valid probe).
    pub(crate) reject_bits: [u32; 2],
}

impl Desc {
    pub(crate) const INVALID: Desc = Desc {
        mnemonic: "",
        opcode: u16::MAX,
        slot_start: 0,
        slot_len: 0,
        flags: 0,
        zero_fields: 0,
        reject_bits: [0, 0],
    };
    pub(crate) const fn new(
        mnemonic: &'static str,
        opcode: u16,
        slot_start: u16,
        slot_len: u8,
        flags: u8,
        zero_fields: u32,
        reject_bits: [u32; 2],
    ) -> Desc {
        Desc {
            mnemonic,
            opcode,
            slot_start,
            slot_len,
            flags,
            zero_fields,
            reject_bits,
        }
    }
    /// Operands in printed order.
    pub fn slots(&self) -> &'static [Slot] {
        let s = self.slot_start as usize;
        gen::SLOTS.get(s..s + self.slot_len as usize).unwrap_or(&[])
    }
}

/// Desc by id (0 is the invalid desc).
/// Number of table entries (desc ids are below it).
pub(crate) fn desc_count() -> usize {
    gen::DESCS.len()
}

pub fn desc(id: u16) -> &'static Desc {
    gen::DESCS.get(id as usize).unwrap_or(&gen::DESCS[0])
}

/// Per-target dense opcode maps, one per table encoding.
pub struct TargetTables {
    pub(crate) sop2: &'static [u16],
    pub(crate) sopk: &'static [u16],
    pub(crate) sop1: &'static [u16],
    pub(crate) sopc: &'static [u16],
    pub(crate) sopp: &'static [u16],
    pub(crate) smem: &'static [u16],
    pub(crate) vop2: &'static [u16],
    pub(crate) vop1: &'static [u16],
    pub(crate) vopc: &'static [u16],
    pub(crate) vop3: &'static [u16],
    pub(crate) vop3p: &'static [u16],
    pub(crate) ds: &'static [u16],
    pub(crate) flat: &'static [u16],
    pub(crate) scratch: &'static [u16],
    pub(crate) global: &'static [u16],
    pub(crate) mubuf: &'static [u16],
    pub(crate) mtbuf: &'static [u16],
    pub(crate) mimg: &'static [u16],
    pub(crate) vop1_sdwa: &'static [u16],
    pub(crate) vop1_dpp: &'static [u16],
    pub(crate) vop2_sdwa: &'static [u16],
    pub(crate) vop2_dpp: &'static [u16],
    pub(crate) vopc_sdwa: &'static [u16],
    pub(crate) vopc_dpp: &'static [u16],
    /// Forms with glc (sc0) set, where they differ (atomics that return).
    pub(crate) flat_glc: &'static [u16],
    pub(crate) scratch_glc: &'static [u16],
    pub(crate) global_glc: &'static [u16],
    pub(crate) mubuf_glc: &'static [u16],
    /// Forms with the lds bit set, where they differ (loads into LDS).
    pub(crate) scratch_lds: &'static [u16],
    pub(crate) global_lds: &'static [u16],
    pub(crate) mubuf_lds: &'static [u16],
    /// DS operations that exist only with gds set (GWS).
    pub(crate) ds_gds: &'static [u16],
    pub(crate) exp: &'static [u16],
    pub(crate) vintrp: &'static [u16],
    /// Per image opcode, the data sizes in dwords LLVM has an instruction
    /// for (bit n = n dwords; learned).
    pub(crate) mimg_vdata_sizes: &'static [u8],
}

impl TargetTables {
    pub fn of(target: Target) -> &'static TargetTables {
        match target {
            Target::Gfx908 => &gen::GFX908,
            Target::Gfx90a => &gen::GFX90A,
            Target::Gfx942 => &gen::GFX942,
        }
    }

    // Forced inline: decode_into looks a table up for every word, and the
    // call cost more than the jump on the encoding (#[inline] did not do).
    #[inline(always)]
    pub(crate) fn table(&self, enc: Encoding) -> &'static [u16] {
        use Encoding as E;
        match enc {
            E::Sop2 => self.sop2,
            E::Sopk => self.sopk,
            E::Sop1 => self.sop1,
            E::Sopc => self.sopc,
            E::Sopp => self.sopp,
            E::Smem => self.smem,
            E::Vop2 => self.vop2,
            E::Vop1 => self.vop1,
            E::Vopc => self.vopc,
            E::Vop3 => self.vop3,
            E::Vop3p => self.vop3p,
            E::Ds => self.ds,
            E::Flat => self.flat,
            E::Scratch => self.scratch,
            E::Global => self.global,
            E::Mubuf => self.mubuf,
            E::Mtbuf => self.mtbuf,
            E::Mimg => self.mimg,
            E::Vop1Sdwa => self.vop1_sdwa,
            E::Vop1Dpp => self.vop1_dpp,
            E::Vop2Sdwa => self.vop2_sdwa,
            E::Vop2Dpp => self.vop2_dpp,
            E::VopcSdwa => self.vopc_sdwa,
            E::VopcDpp => self.vopc_dpp,
            E::Exp => self.exp,
            E::Vintrp => self.vintrp,
            E::Invalid => &[],
        }
    }

    /// Desc id of the glc (sc0) form of `op`, where it differs (else 0).
    pub fn lookup_glc(&self, enc: Encoding, op: u32) -> u16 {
        self.table_glc(enc).get(op as usize).copied().unwrap_or(0)
    }

    /// Desc id of the lds form of `op` (gds for DS), where it differs (else 0).
    pub fn lookup_lds(&self, enc: Encoding, op: u32) -> u16 {
        let table: &[u16] = match enc {
            Encoding::Scratch => self.scratch_lds,
            Encoding::Global => self.global_lds,
            Encoding::Mubuf => self.mubuf_lds,
            Encoding::Ds => self.ds_gds,
            _ => &[],
        };
        table.get(op as usize).copied().unwrap_or(0)
    }

    pub(crate) fn table_glc(&self, enc: Encoding) -> &'static [u16] {
        match enc {
            Encoding::Flat => self.flat_glc,
            Encoding::Scratch => self.scratch_glc,
            Encoding::Global => self.global_glc,
            Encoding::Mubuf => self.mubuf_glc,
            _ => &[],
        }
    }

    /// Desc id of opcode number `op` in `enc` (0 if there is none).
    pub fn lookup(&self, enc: Encoding, op: u32) -> u16 {
        self.table(enc).get(op as usize).copied().unwrap_or(0)
    }
}

/// Names of 8-bit scalar source values for one- and two-register operands
/// and each constant kind, as llvm-mc prints them ("" = no name).
pub(crate) fn src_name(ck: ConstKind, regs: u8, v: u8) -> &'static str {
    let t: &[&str; 256] = if v < 128 || (235..=239).contains(&v) || v >= 249 {
        if regs >= 2 {
            &gen::SRC_NAMES_B64
        } else {
            &gen::SRC_NAMES_B32
        }
    } else {
        match ck {
            ConstKind::B32 | ConstKind::V2F16 => &gen::SRC_NAMES_B32,
            ConstKind::F64 => &gen::SRC_NAMES_B64,
            ConstKind::F16 => &gen::SRC_NAMES_F16,
            ConstKind::I16 => &gen::SRC_NAMES_I16,
        }
    };
    match t[v as usize] {
        // src_lds_direct: named only by the VOP2 sweep (s_mov_b32 refuses it)
        "" if regs == 1 => gen::SRC_NAMES_F16[v as usize],
        n => n,
    }
}
