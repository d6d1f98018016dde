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
    /// A register/source field: `regs` registers wide.
    Reg {
        field: Field,
        regs: u8,
        file: File,
        ck: ConstKind,
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
    pub(crate) const fn reg(field: Field, regs: u8, file: File, ck: ConstKind) -> Slot {
        Slot::Reg {
            field,
            regs,
            file,
            ck,
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
    pub(crate) exp: &'static [u16],
    pub(crate) vintrp: &'static [u16],
}

impl TargetTables {
    pub fn of(target: Target) -> &'static TargetTables {
        match target {
            Target::Gfx908 => &gen::GFX908,
            Target::Gfx90a => &gen::GFX90A,
            Target::Gfx942 => &gen::GFX942,
        }
    }

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
/// and each constant kind, as llvm-mc prints them ("" = not a valid source).
pub(crate) fn src_name(ck: ConstKind, regs: u8, v: u8) -> &'static str {
    let t: &[&str; 256] = if v < 128 || (235..=239).contains(&v) || v >= 249 {
        if regs >= 2 {
            &gen::SRC_NAMES_B64
        } else {
            &gen::SRC_NAMES_B32
        }
    } else {
        match ck {
            ConstKind::B32 => &gen::SRC_NAMES_B32,
            ConstKind::F64 => &gen::SRC_NAMES_B64,
            ConstKind::F16 => &gen::SRC_NAMES_F16,
            ConstKind::I16 => &gen::SRC_NAMES_I16,
        }
    };
    t[v as usize]
}

/// Like [`src_name`] for the src0 of VOP1/VOP2/VOPC, which may also be
/// `src_lds_direct` (the names swept from a VOP2 opcode have it).
pub(crate) fn vop_src_name(ck: ConstKind, regs: u8, v: u8) -> &'static str {
    match src_name(ck, regs, v) {
        "" if regs == 1 => gen::SRC_NAMES_F16[v as usize],
        n => n,
    }
}
