//! The instruction model: one small `Copy` value per instruction.
//!
//! An [`Instruction`] keeps its machine words (the canonical state, so
//! encoding is exact by construction) plus what decoding learned: encoding,
//! target and the table entry ([`crate::tables::Desc`]) giving mnemonic and
//! operand layout. Operands and modifiers are typed views computed from the
//! words on demand ([`Instruction::operands`], [`Instruction::field`]).

use crate::generated::tables as gen;
use crate::tables::{self, Desc, Field, File, Slot};

/// GPU targets whose tables are generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Target {
    Gfx908,
    #[default]
    Gfx90a,
    Gfx942,
}

impl Target {
    /// Parses `gfx908`, `gfx90a`, `gfx942` (features like `:xnack-` are ignored).
    pub fn from_name(name: &str) -> Option<Target> {
        let base = name.split(':').next().unwrap_or("");
        match base {
            "gfx908" => Some(Target::Gfx908),
            "gfx90a" => Some(Target::Gfx90a),
            "gfx940" | "gfx941" | "gfx942" => Some(Target::Gfx942),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Target::Gfx908 => "gfx908",
            Target::Gfx90a => "gfx90a",
            Target::Gfx942 => "gfx942",
        }
    }
}

/// Instruction encodings. SDWA and DPP forms of VOP1/VOP2/VOPC are separate
/// encodings because their opcode maps differ; FLAT is split by segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Encoding {
    Sop2,
    Sopk,
    Sop1,
    Sopc,
    Sopp,
    Smem,
    Vop2,
    Vop1,
    Vopc,
    /// VOP3a and VOP3b (VOP3b ones have an `sdst` operand slot).
    Vop3,
    /// VOP3P, including the MAI (`v_mfma_*`) instructions.
    Vop3p,
    Ds,
    Flat,
    Scratch,
    Global,
    Mubuf,
    Mtbuf,
    Mimg,
    Vop1Sdwa,
    Vop1Dpp,
    Vop2Sdwa,
    Vop2Dpp,
    VopcSdwa,
    VopcDpp,
    Exp,
    Vintrp,
    /// Words that decode to nothing on the target.
    #[default]
    Invalid,
}

impl Encoding {
    pub const fn is_sdwa(self) -> bool {
        matches!(
            self,
            Encoding::Vop1Sdwa | Encoding::Vop2Sdwa | Encoding::VopcSdwa
        )
    }
    pub const fn is_dpp(self) -> bool {
        matches!(
            self,
            Encoding::Vop1Dpp | Encoding::Vop2Dpp | Encoding::VopcDpp
        )
    }
    pub fn is_flat(self) -> bool {
        matches!(self, Encoding::Flat | Encoding::Scratch | Encoding::Global)
    }
}

/// Target-independent operation (`v_add_f32` whatever its encoding).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Opcode(pub u16);

impl Opcode {
    /// Base mnemonic without encoding suffix, e.g. `v_add_f32`.
    pub fn name(self) -> &'static str {
        gen::OPCODE_NAMES
            .get(self.0 as usize)
            .copied()
            .unwrap_or("<invalid>")
    }
    /// Looks an opcode up by base mnemonic.
    pub fn from_name(name: &str) -> Option<Opcode> {
        gen::OPCODE_NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| Opcode(i as u16))
    }
}

/// One operand as a typed value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    Vgpr {
        first: u16,
        count: u8,
    },
    Agpr {
        first: u16,
        count: u8,
    },
    Sgpr {
        first: u16,
        count: u8,
    },
    Ttmp {
        first: u16,
        count: u8,
    },
    /// Other scalar operands by their 8-bit source code: vcc (106), exec
    /// (126), m0 (124), flat_scratch (102), xnack_mask (104), src_* ...
    Special {
        code: u8,
        count: u8,
    },
    /// Inline constant by its source code (128..=208 integers, 240..=248 floats).
    Inline(u8),
    Literal(u32),
    /// SOPP/SOPK immediate, SMEM offset.
    Imm(u32),
    /// Printed text with no field behind it (`vcc` of VOP2 carry ops, `off`).
    Fixed(&'static str),
}

/// A decoded instruction. Cheap to copy; decode into a reused value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Instruction {
    pub(crate) words: [u32; 2],
    pub(crate) len: u8,
    pub(crate) encoding: Encoding,
    pub(crate) target: Target,
    pub(crate) desc: u16,
}

impl Instruction {
    /// Size in bytes (4 or 8).
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    #[inline]
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }
    #[inline]
    pub fn target(&self) -> Target {
        self.target
    }
    #[inline]
    pub fn is_valid(&self) -> bool {
        self.desc != 0
    }
    /// Machine words: base instruction, then literal or SDWA/DPP dword.
    #[inline]
    pub fn words(&self) -> &[u32] {
        &self.words[..(self.len as usize / 4).min(2)]
    }
    pub fn desc(&self) -> &'static Desc {
        tables::desc(self.desc)
    }
    pub fn opcode(&self) -> Option<Opcode> {
        let d = self.desc();
        (self.desc != 0).then_some(Opcode(d.opcode))
    }
    /// Mnemonic as printed (with `_e32`, `_e64`, `_sdwa`, `_dpp` suffixes).
    pub fn mnemonic(&self) -> &'static str {
        self.desc().mnemonic
    }
    /// Operand slots in printed order.
    pub fn slots(&self) -> &'static [Slot] {
        self.desc().slots()
    }

    /// Makes this the undecodable word `w0` (printed as `.long`); returns its size.
    pub(crate) fn make_data_word(&mut self, w0: u32) -> usize {
        self.words = [w0, 0];
        self.len = 4;
        self.encoding = Encoding::Invalid;
        self.desc = 0;
        4
    }

    pub(crate) fn w0(&self) -> u32 {
        self.words[0]
    }
    pub(crate) fn w1(&self) -> u32 {
        self.words[1]
    }
    pub(crate) fn bits(&self, dword: usize, lo: u32, width: u32) -> u32 {
        let w = self.words[dword.min(1)];
        let mask = if width >= 32 {
            u32::MAX
        } else {
            (1u32 << width) - 1
        };
        (w >> lo) & mask
    }

    /// Operand `i` (printed order) as a typed value.
    pub fn operand(&self, i: usize) -> Option<Operand> {
        let slot = *self.slots().get(i)?;
        Some(match slot {
            Slot::Fixed(t) => Operand::Fixed(Slot::fixed_text(t)),
            Slot::Lit => Operand::Literal(self.w1()),
            Slot::Imm(_) => Operand::Imm(self.imm_value()),
            Slot::FieldImm(f) => Operand::Imm(self.field(f)),
            Slot::Reg {
                field, regs, file, ..
            } => {
                let v = self.field(field);
                let file = self.effective_file(field, file);
                operand_of(field, v, regs, file, self.w1())
            }
        })
    }

    /// All operands in printed order.
    pub fn operands(&self) -> impl Iterator<Item = Operand> + '_ {
        (0..self.slots().len()).filter_map(move |i| self.operand(i))
    }

    /// Raw value of a field. Source fields use the 9-bit source encoding
    /// (0..=255 scalar/constant, 256.. VGPR n+256) whatever the encoding.
    #[inline]
    pub fn field(&self, f: Field) -> u32 {
        crate::fields::get(self, f)
    }

    pub(crate) fn imm_value(&self) -> u32 {
        match self.encoding {
            Encoding::Smem => crate::fields::smem_offset(self),
            Encoding::Sopc => (self.w0() >> 8) & 0xFF,
            _ => self.w0() & 0xFFFF,
        }
    }

    /// Register file after `acc` bits (gfx90a+ memory instructions, MAI).
    #[inline]
    pub(crate) fn effective_file(&self, field: Field, file: File) -> File {
        crate::fields::effective_file(self, field, file)
    }
}

fn operand_of(field: Field, v: u32, regs: u8, file: File, lit: u32) -> Operand {
    let is_src9 = matches!(
        field,
        Field::Src0 | Field::Src1 | Field::Src2 | Field::Vsrc1
    );
    let vreg = |n: u32| match file {
        File::A => Operand::Agpr {
            first: n as u16,
            count: regs,
        },
        _ => Operand::Vgpr {
            first: n as u16,
            count: regs,
        },
    };
    if is_src9 && v >= 256 {
        return vreg(v - 256);
    }
    if matches!(file, File::V | File::A)
        && !is_src9
        && !matches!(field, Field::Ssrc0 | Field::Ssrc1)
    {
        return vreg(v);
    }
    scalar_operand(v as u8, regs, lit)
}

/// Typed view of an 8-bit scalar source code.
pub(crate) fn scalar_operand(v: u8, regs: u8, lit: u32) -> Operand {
    match v {
        0..=101 => Operand::Sgpr {
            first: v as u16,
            count: regs,
        },
        108..=123 => Operand::Ttmp {
            first: (v - 108) as u16,
            count: regs,
        },
        128..=208 | 240..=248 => Operand::Inline(v),
        255 => Operand::Literal(lit),
        _ => Operand::Special {
            code: v,
            count: regs,
        },
    }
}
