//! Where each operand field and modifier sits in each encoding.
//!
//! The same layouts drive the probes in `gen/layouts.py`; keep them in step.

use crate::model::{Encoding as E, Instruction};
use crate::tables::{Field, File};
use crate::target::info;

/// Where a field's bits are: dword, low bit, width, and a left shift applied
/// to the stored value (SMEM sbase counts pairs, resource descriptors quads).
#[derive(Clone, Copy)]
struct Loc {
    dword: usize,
    lo: u32,
    width: u32,
    shift: u32,
}

const fn at(dword: usize, lo: u32, width: u32) -> Option<Loc> {
    Some(Loc {
        dword,
        lo,
        width,
        shift: 0,
    })
}

const fn scaled(dword: usize, lo: u32, width: u32, shift: u32) -> Option<Loc> {
    Some(Loc {
        dword,
        lo,
        width,
        shift,
    })
}

/// The plain bit location of a field in an encoding (special forms such as
/// SDWA sources with an SGPR bit are handled by `get`/`set`).
const fn loc(enc: E, f: Field) -> Option<Loc> {
    match (enc, f) {
        (E::Sop2 | E::Sop1 | E::Sopk, Field::Sdst) => at(0, 16, 7),
        (E::Sop2 | E::Sop1 | E::Sopc, Field::Ssrc0) => at(0, 0, 8),
        (E::Sop2 | E::Sopc, Field::Ssrc1) => at(0, 8, 8),
        (E::Sopk | E::Sopp, Field::Simm16) => at(0, 0, 16),
        (E::Smem, Field::Sdata) => at(0, 6, 7),
        (E::Smem, Field::Sbase) => scaled(0, 0, 6, 1),
        (E::Smem, Field::Soffset) => at(1, 25, 7),
        (E::Smem, Field::Offset) => at(1, 0, 21),
        (E::Vop2 | E::Vop1 | E::Vop2Sdwa | E::Vop1Sdwa | E::Vop2Dpp | E::Vop1Dpp, Field::Vdst) => {
            at(0, 17, 8)
        }
        (E::Vop2 | E::Vop1 | E::Vopc, Field::Src0) => at(0, 0, 9),
        (E::Vop3 | E::Vop3p, Field::Vdst) => at(0, 0, 8),
        (E::Vop3, Field::Sdst) => at(0, 8, 7),
        (E::Vop3 | E::Vop3p, Field::Src0) => at(1, 0, 9),
        (E::Vop3 | E::Vop3p, Field::Src1) => at(1, 9, 9),
        (E::Vop3 | E::Vop3p, Field::Src2) => at(1, 18, 9),
        (E::Ds, Field::Vdst) => at(1, 24, 8),
        (E::Ds, Field::Data1) => at(1, 16, 8),
        (E::Ds, Field::Data0) => at(1, 8, 8),
        (E::Ds, Field::Addr) => at(1, 0, 8),
        (E::Flat | E::Scratch | E::Global, Field::Vdst) => at(1, 24, 8),
        (E::Flat | E::Scratch | E::Global, Field::Saddr) => at(1, 16, 7),
        (E::Flat | E::Scratch | E::Global, Field::Data) => at(1, 8, 8),
        (E::Flat | E::Scratch | E::Global, Field::Addr) => at(1, 0, 8),
        (E::Mubuf | E::Mtbuf | E::Mimg, Field::Vaddr) => at(1, 0, 8),
        (E::Mubuf | E::Mtbuf | E::Mimg, Field::Vdata) => at(1, 8, 8),
        (E::Mubuf | E::Mtbuf | E::Mimg, Field::Srsrc) => scaled(1, 16, 5, 2),
        (E::Mubuf | E::Mtbuf, Field::Soffset) => at(1, 24, 8),
        (E::Mimg, Field::Ssamp) => scaled(1, 21, 5, 2),
        (_, Field::Literal) => at(1, 0, 32),
        _ => None,
    }
}

/// Every encoding, to tabulate [`loc`].
const ENCODINGS: [E; 27] = [
    E::Sop2,
    E::Sopk,
    E::Sop1,
    E::Sopc,
    E::Sopp,
    E::Smem,
    E::Vop2,
    E::Vop1,
    E::Vopc,
    E::Vop3,
    E::Vop3p,
    E::Ds,
    E::Flat,
    E::Scratch,
    E::Global,
    E::Mubuf,
    E::Mtbuf,
    E::Mimg,
    E::Vop1Sdwa,
    E::Vop1Dpp,
    E::Vop2Sdwa,
    E::Vop2Dpp,
    E::VopcSdwa,
    E::VopcDpp,
    E::Exp,
    E::Vintrp,
    E::Invalid,
];

/// How [`get`] reads one field of one encoding: every case as data, so a
/// read is one table lookup and no match on the field (`get` runs for every
/// operand of every instruction decoded and every def/use worked out).
#[derive(Clone, Copy)]
pub(crate) enum Read {
    /// The encoding has no such field: it reads as 0.
    Absent,
    /// `((word >> lo) & mask) << shift`, plus `vgpr_base` unless bit
    /// `sgpr_bit` of dword 1 is set (0: no such bit). `vgpr_base` is 256 for
    /// VGPR-only sources (VSRC1, DPP/SDWA src0), read as 9-bit source codes.
    Bits {
        dword: u8,
        lo: u8,
        mask: u32,
        shift: u8,
        vgpr_base: u16,
        sgpr_bit: u8,
    },
    /// VOPC SDWA sdst: vcc (106) unless bit 15 of dword 1 says bits 8..15 name it.
    VopcSdwaSdst,
}

impl Read {
    /// A VGPR-only source field, read as a 9-bit source code.
    const fn vgpr_source(dword: u8, lo: u8, sgpr_bit: u8) -> Read {
        Read::Bits {
            dword,
            lo,
            mask: 0xFF,
            shift: 0,
            vgpr_base: 256,
            sgpr_bit,
        }
    }

    /// The read of `f` in `enc`: the special forms, else its plain [`loc`].
    const fn of(enc: E, f: Field) -> Read {
        match f {
            // VGPR-only field (or SGPR when the SDWA s1 bit says so)
            Field::Vsrc1 if vsrc1_loc(enc) => {
                Read::vgpr_source(0, 9, if enc.is_sdwa() { 31 } else { 0 })
            }
            Field::Src0 if enc.is_sdwa() => Read::vgpr_source(1, 0, 23),
            Field::Src0 if enc.is_dpp() => Read::vgpr_source(1, 0, 0),
            Field::Sdst if matches!(enc, E::VopcSdwa) => Read::VopcSdwaSdst,
            _ => match loc(enc, f) {
                Some(l) => Read::Bits {
                    dword: l.dword as u8,
                    lo: l.lo as u8,
                    mask: if l.width >= 32 {
                        u32::MAX
                    } else {
                        (1 << l.width) - 1
                    },
                    shift: l.shift as u8,
                    vgpr_base: 0,
                    sgpr_bit: 0,
                },
                None => Read::Absent,
            },
        }
    }
}

/// [`Read`] of every field in every encoding, by `[encoding][field]`.
static READS: [[Read; crate::decode::ALL_FIELDS.len()]; ENCODINGS.len()] = {
    // Every encoding and field has its row and column (`Invalid` and
    // `Literal` are the last of their enums).
    assert!(E::Invalid as usize + 1 == ENCODINGS.len());
    assert!(Field::Literal as usize + 1 == crate::decode::ALL_FIELDS.len());
    let mut t = [[Read::Absent; crate::decode::ALL_FIELDS.len()]; ENCODINGS.len()];
    let mut e = 0;
    while e < ENCODINGS.len() {
        let mut f = 0;
        while f < crate::decode::ALL_FIELDS.len() {
            let (enc, field) = (ENCODINGS[e], crate::decode::ALL_FIELDS[f]);
            assert!(enc as usize == e && field as usize == f);
            t[e][f] = Read::of(enc, field);
            f += 1;
        }
        e += 1;
    }
    t
};

const fn vsrc1_loc(enc: E) -> bool {
    matches!(
        enc,
        E::Vop2 | E::Vopc | E::Vop2Sdwa | E::VopcSdwa | E::Vop2Dpp | E::VopcDpp
    )
}

/// Raw value of a field; source fields (`Src*`, `Vsrc1`) in 9-bit source
/// encoding (VGPR n = 256 + n), register tuples by first register number.
#[inline]
pub(crate) fn get(i: &Instruction, f: Field) -> u32 {
    read(i.encoding, f).value(i)
}

/// How field `f` of encoding `enc` is read (for callers that read the same
/// field of many instructions of one encoding).
#[inline]
pub(crate) fn read(enc: E, f: Field) -> Read {
    READS[enc as usize][f as usize]
}

impl Read {
    /// The field's value in `i` (same convention as [`get`]).
    #[inline]
    pub(crate) fn value(self, i: &Instruction) -> u32 {
        match self {
            Read::Bits {
                dword,
                lo,
                mask,
                shift,
                vgpr_base,
                sgpr_bit,
            } => {
                let v = ((i.words[usize::from(dword & 1)] >> lo) & mask) << shift;
                let sgpr = sgpr_bit != 0 && (i.words[1] >> sgpr_bit) & 1 != 0;
                v + if sgpr { 0 } else { u32::from(vgpr_base) }
            }
            Read::VopcSdwaSdst => vopc_sdwa_sdst(i),
            Read::Absent => 0,
        }
    }
}

/// VOPC SDWA's sdst: vcc unless bit 15 says bits 8..15 name it. Out of line
/// (rare): inlined, callers worked these bits out for every instruction.
#[cold]
#[inline(never)]
fn vopc_sdwa_sdst(i: &Instruction) -> u32 {
    match i.bits(1, 15, 1) {
        0 => 106, // vcc
        _ => i.bits(1, 8, 7),
    }
}

/// Sets a field (same value convention as `get`). Returns false if the
/// encoding has no such field or the value does not fit.
pub(crate) fn set(i: &mut Instruction, f: Field, v: u32) -> bool {
    let enc = i.encoding;
    match f {
        Field::Vsrc1 if vsrc1_loc(enc) => {
            if v >= 256 {
                put(i, 0, 9, 8, v - 256)
            } else if enc.is_sdwa() {
                put(i, 0, 9, 8, v) && put(i, 1, 31, 1, 1)
            } else {
                false
            }
        }
        Field::Src0 if enc.is_sdwa() => {
            let sgpr = v < 256;
            put(i, 1, 0, 8, v & 0xFF) && put(i, 1, 23, 1, sgpr as u32)
        }
        Field::Src0 if enc.is_dpp() => v >= 256 && put(i, 1, 0, 8, v - 256),
        Field::Sdst if enc == E::VopcSdwa => {
            v == 106 || (put(i, 1, 8, 7, v) && put(i, 1, 15, 1, 1))
        }
        _ => match loc(enc, f) {
            Some(l) if v & ((1 << l.shift) - 1) == 0 => {
                put(i, l.dword, l.lo, l.width, v >> l.shift)
            }
            _ => false,
        },
    }
}

/// Writes `v` into bits [lo, lo+width) of a dword; false if it does not fit.
pub(crate) fn put(i: &mut Instruction, dword: usize, lo: u32, width: u32, v: u32) -> bool {
    let mask = if width == 32 {
        u32::MAX
    } else {
        (1u32 << width) - 1
    };
    if v & !mask != 0 {
        return false;
    }
    let w = &mut i.words[dword.min(1)];
    *w = (*w & !(mask << lo)) | (v << lo);
    true
}

/// SMEM immediate byte offset (gfx9: 21 bits, used when `imm` is set).
pub(crate) fn smem_offset(i: &Instruction) -> u32 {
    i.bits(1, 0, 21)
}

/// True for MAI (`v_mfma*`) instructions, whose register files come from acc bits.
pub(crate) fn is_mai(i: &Instruction) -> bool {
    i.encoding == E::Vop3p && is_mai_name(i.mnemonic())
}

pub(crate) fn is_mai_name(m: &str) -> bool {
    m.starts_with("v_mfma") || m.starts_with("v_smfmac")
}

/// Register file of a field once `acc` bits are applied.
#[inline]
pub(crate) fn effective_file(i: &Instruction, f: Field, file: File) -> File {
    // Only memory and VOP3P (MAI) instructions have acc bits: the others,
    // most operands info and the formatter see, need no call.
    match i.encoding {
        E::Ds | E::Flat | E::Scratch | E::Global | E::Mubuf | E::Mtbuf | E::Mimg | E::Vop3p => {
            acc_file(i, f, file)
        }
        _ => file,
    }
}

/// [`effective_file`] of an encoding with acc bits.
fn acc_file(i: &Instruction, f: Field, file: File) -> File {
    let t = info(i.target);
    let acc = match (i.encoding, f) {
        (E::Ds, Field::Vdst | Field::Data0 | Field::Data1) => t.acc_memory && i.bits(0, 25, 1) != 0,
        (E::Flat | E::Scratch | E::Global, Field::Vdst | Field::Data) => {
            t.acc_memory && i.bits(1, 23, 1) != 0
        }
        (E::Mubuf | E::Mtbuf, Field::Vdata) => t.acc_memory && i.bits(1, 23, 1) != 0,
        (E::Mimg, Field::Vdata) => t.acc_memory && i.bits(0, 16, 1) != 0,
        // The sparse index of v_smfmac (src2) is a VGPR whatever acc_cd
        // says (acc_cd selects the file of the accumulator, which is vdst).
        (E::Vop3p, Field::Src2) if i.mnemonic().starts_with("v_smfmac") => false,
        (E::Vop3p, Field::Vdst | Field::Src2) if is_mai(i) && t.acc_cd_bit => i.bits(0, 15, 1) != 0,
        (E::Vop3p, Field::Src0) if is_mai(i) => i.bits(1, 27, 1) != 0,
        (E::Vop3p, Field::Src1) if is_mai(i) => i.bits(1, 28, 1) != 0,
        _ => return file,
    };
    if acc {
        File::A
    } else if file == File::A {
        File::V
    } else {
        file
    }
}
