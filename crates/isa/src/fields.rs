//! Where each operand field and modifier sits in each encoding.
//!
//! The same layouts drive the probes in `gen/layouts.py`; keep them in step.

use crate::model::{Encoding as E, Instruction};
use crate::tables::{Field, File};
use crate::target::info;

/// Raw value of a field; source fields (`Src*`, `Vsrc1`) in 9-bit source
/// encoding (VGPR n = 256 + n), register tuples by first register number.
pub(crate) fn get(i: &Instruction, f: Field) -> u32 {
    let b = |d, lo, w| i.bits(d, lo, w);
    match (i.encoding, f) {
        (E::Sop2 | E::Sop1 | E::Sopk, Field::Sdst) => b(0, 16, 7),
        (E::Sop2 | E::Sop1 | E::Sopc, Field::Ssrc0) => b(0, 0, 8),
        (E::Sop2 | E::Sopc, Field::Ssrc1) => b(0, 8, 8),
        (E::Sopk | E::Sopp, Field::Simm16) => b(0, 0, 16),
        (E::Smem, Field::Sdata) => b(0, 6, 7),
        (E::Smem, Field::Sbase) => b(0, 0, 6) << 1,
        (E::Smem, Field::Soffset) => b(1, 25, 7),
        (E::Smem, Field::Offset) => smem_offset(i),
        (E::Vop2 | E::Vop1, Field::Vdst) => b(0, 17, 8),
        (E::Vop2 | E::Vopc | E::Vop2Sdwa | E::VopcSdwa | E::Vop2Dpp | E::VopcDpp, Field::Vsrc1) => {
            let n = b(0, 9, 8);
            if i.encoding.is_sdwa() && b(1, 31, 1) != 0 {
                n
            } else {
                256 + n
            }
        }
        (E::Vop2 | E::Vop1 | E::Vopc, Field::Src0) => b(0, 0, 9),
        (E::Vop2Sdwa | E::Vop1Sdwa | E::VopcSdwa, Field::Src0) => {
            let n = b(1, 0, 8);
            if b(1, 23, 1) != 0 {
                n
            } else {
                256 + n
            }
        }
        (E::Vop2Dpp | E::Vop1Dpp | E::VopcDpp, Field::Src0) => 256 + b(1, 0, 8),
        (E::Vop2Sdwa | E::Vop1Sdwa | E::Vop2Dpp | E::Vop1Dpp, Field::Vdst) => b(0, 17, 8),
        (E::VopcSdwa, Field::Sdst) => {
            if b(1, 15, 1) != 0 {
                b(1, 8, 7)
            } else {
                106 // vcc
            }
        }
        (E::Vop3 | E::Vop3p, Field::Vdst) => b(0, 0, 8),
        (E::Vop3, Field::Sdst) => b(0, 8, 7),
        (E::Vop3 | E::Vop3p, Field::Src0) => b(1, 0, 9),
        (E::Vop3 | E::Vop3p, Field::Src1) => b(1, 9, 9),
        (E::Vop3 | E::Vop3p, Field::Src2) => b(1, 18, 9),
        (E::Ds, Field::Vdst) => b(1, 24, 8),
        (E::Ds, Field::Data1) => b(1, 16, 8),
        (E::Ds, Field::Data0) => b(1, 8, 8),
        (E::Ds, Field::Addr) => b(1, 0, 8),
        (E::Flat | E::Scratch | E::Global, Field::Vdst) => b(1, 24, 8),
        (E::Flat | E::Scratch | E::Global, Field::Saddr) => b(1, 16, 7),
        (E::Flat | E::Scratch | E::Global, Field::Data) => b(1, 8, 8),
        (E::Flat | E::Scratch | E::Global, Field::Addr) => b(1, 0, 8),
        (E::Mubuf | E::Mtbuf | E::Mimg, Field::Vaddr) => b(1, 0, 8),
        (E::Mubuf | E::Mtbuf | E::Mimg, Field::Vdata) => b(1, 8, 8),
        (E::Mubuf | E::Mtbuf | E::Mimg, Field::Srsrc) => b(1, 16, 5) << 2,
        (E::Mubuf | E::Mtbuf, Field::Soffset) => b(1, 24, 8),
        (E::Mimg, Field::Ssamp) => b(1, 21, 5) << 2,
        (_, Field::Literal) => i.w1(),
        _ => 0,
    }
}

/// SMEM immediate byte offset (gfx9: 21 bits, used when `imm` is set).
pub(crate) fn smem_offset(i: &Instruction) -> u32 {
    i.bits(1, 0, 21)
}

/// True for MAI (`v_mfma*`) instructions, whose register files come from acc bits.
pub(crate) fn is_mai(i: &Instruction) -> bool {
    i.encoding == E::Vop3p && i.mnemonic().starts_with("v_mfma")
}

/// Register file of a field once `acc` bits are applied.
pub(crate) fn effective_file(i: &Instruction, f: Field, file: File) -> File {
    let t = info(i.target);
    let acc = match (i.encoding, f) {
        (E::Ds, Field::Vdst | Field::Data0 | Field::Data1) => t.acc_memory && i.bits(0, 25, 1) != 0,
        (E::Flat | E::Scratch | E::Global, Field::Vdst | Field::Data) => {
            t.acc_memory && i.bits(1, 23, 1) != 0
        }
        (E::Mubuf | E::Mtbuf, Field::Vdata) => t.acc_memory && i.bits(1, 23, 1) != 0,
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
