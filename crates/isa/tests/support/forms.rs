//! Instructions for the oracle tests: one instance of every opcode of a
//! target's tables, and every operand form (each opcode's instance varied
//! field by field). Shared by encode_llvm_mc.rs, defuse_spec.rs and
//! defuse_llvm.rs.

use inlay_isa::tables::{ImmKind, Slot, TargetTables};
use inlay_isa::{Builder, Decoder, Encoding, Instruction, Operand, Target};

pub const ENCODINGS: [Encoding; 24] = [
    Encoding::Sop2,
    Encoding::Sopk,
    Encoding::Sop1,
    Encoding::Sopc,
    Encoding::Sopp,
    Encoding::Smem,
    Encoding::Vop2,
    Encoding::Vop1,
    Encoding::Vopc,
    Encoding::Vop3,
    Encoding::Vop3p,
    Encoding::Ds,
    Encoding::Flat,
    Encoding::Scratch,
    Encoding::Global,
    Encoding::Mubuf,
    Encoding::Mtbuf,
    Encoding::Mimg,
    Encoding::Vop1Sdwa,
    Encoding::Vop1Dpp,
    Encoding::Vop2Sdwa,
    Encoding::Vop2Dpp,
    Encoding::VopcSdwa,
    Encoding::VopcDpp,
];

/// One operand list for a slot list: distinct, aligned registers per
/// position, far enough apart that even 32-register MFMA tuples and 16-SGPR
/// loads do not overlap (def/use tests must tell a source from the
/// destination).
pub fn operands_for(slots: &[Slot]) -> Option<Vec<Operand>> {
    const BASES: [u16; 6] = [4, 40, 80, 120, 160, 200];
    const S_BASES: [u16; 6] = [8, 32, 48, 64, 80, 88];
    let mut v = Vec::new();
    for (k, s) in slots.iter().enumerate() {
        let first = BASES[k.min(5)];
        let s_first = S_BASES[k.min(5)];
        v.push(match *s {
            // Interpolation attributes (attr8.x) are not modelled yet.
            Slot::Fixed(t) if Slot::fixed_text(t).starts_with("attr") => return None,
            Slot::Fixed(t) => Operand::Fixed(Slot::fixed_text(t)),
            Slot::FieldImm(_) => Operand::Imm(8),
            Slot::Lit => Operand::Literal(0x1234_5678),
            Slot::Imm(kind) => Operand::Imm(match kind {
                ImmKind::Hex => 0x20,
                ImmKind::Dec => 5,
                ImmKind::DecNonzero => 0,
                ImmKind::Branch => 4,
                ImmKind::Waitcnt => 0,
                ImmKind::Hwreg => 1 | 31 << 11,
                ImmKind::Sendmsg => 1,
                ImmKind::GprIdx => 3,
                ImmKind::SmemOffset => 0x10,
            }),
            Slot::Reg {
                regs, file, field, ..
            } => {
                use inlay_isa::tables::{Field, File};
                let scalar_only = matches!(
                    field,
                    Field::Ssrc0 | Field::Ssrc1 | Field::Sdst | Field::Sdata | Field::Sbase
                ) || matches!(
                    field,
                    Field::Srsrc | Field::Ssamp | Field::Soffset | Field::Saddr
                );
                match file {
                    File::S => Operand::Sgpr {
                        first: s_first,
                        count: regs,
                    },
                    _ if scalar_only => Operand::Sgpr {
                        first: s_first,
                        count: regs,
                    },
                    File::A => Operand::Agpr { first, count: regs },
                    File::V => Operand::Vgpr { first, count: regs },
                }
            }
        });
    }
    Some(v)
}

/// One variation: fields (dword, low bit, width, value) set together.
type Variant = Vec<(usize, u32, u32, u32)>;

/// 9-bit source codes: SGPRs (even, odd), vcc_lo/hi, m0, exec_lo, constants
/// 0, 1, 64, -1, -16, 0.5, -4.0, 1/(2*pi), src_shared_base, a literal, VGPRs.
const SRC9: [u32; 18] = [
    10, 11, 106, 107, 124, 126, 128, 129, 192, 193, 208, 240, 247, 248, 235, 255, 286, 511,
];
/// Scalar-only (8-bit) source codes.
const SRC8: [u32; 15] = [
    10, 11, 106, 107, 124, 126, 128, 129, 192, 193, 208, 240, 248, 235, 255,
];
/// Scalar destinations: s10, vcc_lo, exec_lo, m0, ttmp0, ttmp4.
const SDST: [u32; 6] = [10, 106, 126, 124, 108, 112];
const IMM16: [u32; 8] = [0, 1, 0x40, 0x41, 0x1234, 0x7fff, 0x8000, 0xffff];
const DPP_CTRL: [u32; 20] = [
    0x00, 0x1b, 0xe4, 0xff, 0x101, 0x10f, 0x111, 0x11f, 0x121, 0x12f, 0x130, 0x134, 0x138, 0x13c,
    0x140, 0x141, 0x142, 0x143, 0x150, 0x15f,
];

fn each(dword: usize, lo: u32, width: u32, values: &[u32]) -> Vec<Variant> {
    values
        .iter()
        .map(|v| vec![(dword, lo, width, *v)])
        .collect()
}

/// The variations of an encoding: operand kinds in every source and
/// destination field, and every modifier field with a few values each.
fn variations(enc: Encoding) -> Vec<Variant> {
    use Encoding as E;
    let mut v = Vec::new();
    match enc {
        E::Sop2 | E::Sopc => {
            v.extend(each(0, 0, 8, &SRC8));
            v.extend(each(0, 8, 8, &SRC8));
            if enc == E::Sop2 {
                v.extend(each(0, 16, 7, &SDST));
            }
        }
        E::Sop1 => {
            v.extend(each(0, 0, 8, &SRC8));
            v.extend(each(0, 16, 7, &SDST));
        }
        E::Sopk => {
            v.extend(each(0, 0, 16, &IMM16));
            v.extend(each(0, 16, 7, &SDST));
        }
        E::Sopp => v.extend(each(0, 0, 16, &IMM16)),
        E::Smem => {
            v.extend(each(0, 16, 1, &[1]));
            v.push(vec![(0, 17, 1, 0), (1, 0, 21, 12)]); // soffset register
            v.push(vec![(0, 17, 1, 0), (1, 0, 21, 124)]);
            v.push(vec![(0, 14, 1, 1), (1, 25, 7, 20)]); // soffset + imm offset
            v.push(vec![(0, 14, 1, 1), (1, 25, 7, 20), (1, 0, 21, 0)]);
            v.extend(each(1, 0, 21, &[0, 0xfffff, 0x1fffff, 0x100000]));
            v.extend(each(0, 6, 7, &[106, 108, 126, 124]));
            v.extend(each(0, 0, 6, &[5, 54]));
        }
        E::Vop1 | E::Vop2 | E::Vopc => {
            v.extend(each(0, 0, 9, &SRC9));
            v.extend(each(0, 9, 8, &[255]));
            v.extend(each(0, 17, 8, &[255]));
        }
        E::Vop3 => {
            v.extend(each(1, 0, 9, &SRC9));
            v.extend(each(1, 9, 9, &SRC9));
            v.extend(each(1, 18, 9, &SRC9));
            v.extend(each(0, 8, 3, &[1, 2, 4, 7]));
            v.extend(each(0, 11, 4, &[1, 2, 4, 8, 15]));
            v.extend(each(0, 15, 1, &[1]));
            v.extend(each(1, 27, 2, &[1, 2, 3]));
            v.extend(each(1, 29, 3, &[1, 2, 4, 7]));
            v.extend(each(0, 0, 8, &[255]));
        }
        E::Vop3p => {
            v.extend(each(1, 0, 9, &SRC9));
            v.extend(each(1, 9, 9, &SRC9));
            v.extend(each(1, 18, 9, &SRC9));
            v.extend(each(0, 8, 3, &[1, 2, 4, 7]));
            v.extend(each(0, 11, 4, &[1, 2, 4, 8, 15]));
            v.extend(each(0, 14, 1, &[0, 1]));
            v.extend(each(0, 15, 1, &[0, 1]));
            v.extend(each(1, 27, 2, &[0, 1, 2, 3]));
            v.extend(each(1, 29, 3, &[1, 2, 4, 7]));
        }
        E::Vop1Sdwa | E::Vop2Sdwa | E::VopcSdwa => {
            for s in [10, 106, 128, 193, 240, 124] {
                v.push(vec![(1, 0, 8, s), (1, 23, 1, 1)]);
            }
            v.extend(each(1, 0, 8, &[255]));
            if enc != E::VopcSdwa {
                v.extend(each(1, 8, 3, &[0, 1, 2, 3, 4, 5]));
                v.extend(each(1, 11, 2, &[0, 1, 2]));
                v.extend(each(1, 13, 1, &[1]));
                v.extend(each(1, 14, 2, &[1, 2, 3]));
            } else {
                v.push(vec![(1, 8, 7, 10), (1, 15, 1, 1)]);
                v.push(vec![(1, 8, 7, 106), (1, 15, 1, 1)]);
                v.push(vec![(1, 8, 7, 126), (1, 15, 1, 1)]);
            }
            v.extend(each(1, 16, 3, &[0, 1, 2, 3, 4, 5]));
            v.extend(each(1, 19, 1, &[1]));
            v.extend(each(1, 20, 1, &[1]));
            v.extend(each(1, 21, 1, &[1]));
            if enc != E::Vop1Sdwa {
                v.extend(each(1, 24, 3, &[0, 1, 2, 3, 4, 5]));
                v.extend(each(1, 27, 1, &[1]));
                v.extend(each(1, 28, 1, &[1]));
                v.extend(each(1, 29, 1, &[1]));
                for s in [10, 106, 128, 240] {
                    v.push(vec![(0, 9, 8, s), (1, 31, 1, 1)]);
                }
            }
        }
        E::Vop1Dpp | E::Vop2Dpp | E::VopcDpp => {
            v.extend(each(1, 8, 9, &DPP_CTRL));
            v.extend(each(1, 19, 1, &[1]));
            v.extend(each(1, 20, 1, &[1]));
            v.extend(each(1, 21, 1, &[1]));
            if enc != E::Vop1Dpp {
                v.extend(each(1, 22, 1, &[1]));
                v.extend(each(1, 23, 1, &[1]));
            }
            v.extend(each(1, 24, 4, &[0, 5]));
            v.extend(each(1, 28, 4, &[0, 10]));
            v.extend(each(1, 0, 8, &[255]));
        }
        E::Ds => {
            v.extend(each(0, 0, 8, &[1, 255]));
            v.extend(each(0, 8, 8, &[1, 255]));
            v.extend(each(0, 0, 16, &[0xffff]));
            v.extend(each(0, 16, 1, &[1]));
            v.extend(each(0, 25, 1, &[1]));
        }
        E::Flat | E::Global | E::Scratch => {
            v.extend(each(0, 0, 13, &[1, 0xfff, 0x1000, 0x1fff]));
            v.extend(each(0, 13, 1, &[1]));
            v.extend(each(0, 16, 1, &[1]));
            v.extend(each(0, 17, 1, &[1]));
            v.extend(each(0, 25, 1, &[1]));
            v.extend(each(1, 16, 7, &[10, 0x7f, 106, 108, 125]));
            v.extend(each(1, 23, 1, &[1]));
        }
        E::Mubuf | E::Mtbuf => {
            v.extend(each(0, 0, 12, &[1, 0xfff]));
            v.extend(each(0, 12, 2, &[1, 2, 3]));
            v.extend(each(0, 14, 1, &[1]));
            if enc == E::Mubuf {
                v.extend(each(0, 15, 1, &[1]));
                v.extend(each(0, 16, 1, &[1]));
                v.extend(each(0, 17, 1, &[1]));
            } else {
                v.extend(each(0, 19, 4, &[0, 2, 4, 14, 15]));
                v.extend(each(0, 23, 3, &[0, 1, 4, 7]));
                v.extend(each(1, 21, 1, &[1]));
                v.extend(each(1, 22, 1, &[1]));
            }
            v.extend(each(1, 23, 1, &[1]));
            v.extend(each(1, 24, 8, &[128, 124, 10, 193, 106]));
        }
        E::Mimg => {
            v.extend(each(0, 8, 4, &[0, 1, 3, 7, 15]));
            for bit in [12, 13, 14, 15, 16, 17, 25] {
                v.extend(each(0, bit, 1, &[1]));
            }
            v.extend(each(1, 31, 1, &[1]));
        }
        E::Exp => {
            v.extend(each(0, 0, 4, &[0, 1, 3, 5, 0xf]));
            v.extend(each(0, 4, 6, &[0, 7, 8, 9, 10, 12, 15, 16, 32, 63]));
            v.extend(each(0, 10, 1, &[1]));
            v.extend(each(0, 11, 1, &[1]));
            v.extend(each(0, 12, 1, &[1]));
        }
        E::Vintrp => {
            v.extend(each(0, 8, 2, &[0, 1, 2, 3]));
            v.extend(each(0, 10, 6, &[0, 31, 32, 63]));
            v.extend(each(0, 0, 8, &[0, 1, 2, 3, 255]));
        }
        E::Invalid => {}
    }
    v
}

/// The literal a variant with source code 255 carries.
pub const LITERAL: u32 = 0x4049_0fdb;

/// Every form: base instances (one per opcode, as above, plus EXP and
/// VINTRP), then each variation of each. Returns (bytes, decoded), distinct.
pub fn forms(target: Target) -> Vec<(Vec<u8>, Instruction)> {
    let tables = TargetTables::of(target);
    let b = Builder::new(target);
    let dec = Decoder::new(target);
    let mut bases: Vec<[u32; 2]> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for enc in ENCODINGS {
        for op in 0..1024u32 {
            let d = tables.lookup(enc, op);
            if d == 0 {
                continue;
            }
            let desc = inlay_isa::tables::desc(d);
            if !seen.insert((enc, desc.mnemonic)) {
                continue;
            }
            let Some(ops) = operands_for(desc.slots()) else {
                continue;
            };
            if let Ok(i) = b.build(enc, desc.mnemonic, &ops) {
                let w = i.words();
                bases.push([w[0], w.get(1).copied().unwrap_or(0)]);
            }
        }
    }
    // exp mrt0 v1, v2, v3, v4 and v_interp_{p1,p2,mov}_f32 v4, v8, attr3.y
    bases.push([0xC400_000F, 0x0403_0201]);
    for op in 0..3 {
        bases.push([0xD400_0000 | 4 << 18 | op << 16 | 3 << 10 | 1 << 8 | 8, 0]);
    }
    let mut out = Vec::new();
    let mut have = std::collections::HashSet::new();
    for base in bases {
        let Ok(bi) = dec.decode(&words_bytes(&base)) else {
            continue;
        };
        let mut all = vec![Vec::new()];
        all.extend(variations(bi.encoding()));
        for var in all {
            let mut w = base;
            for (dword, lo, width, value) in &var {
                let mask = if *width == 32 {
                    u32::MAX
                } else {
                    (1 << width) - 1
                };
                w[*dword] = (w[*dword] & !(mask << lo)) | (value & mask) << lo;
            }
            // a 4-byte encoding reads a second word only as a literal
            if bi.len() == 4 {
                w[1] = LITERAL;
            }
            let Ok(i) = dec.decode(&words_bytes(&w)) else {
                continue;
            };
            // an invalid result stands for the whole base-length words
            let len = if i.is_valid() { i.len() } else { bi.len() };
            let bytes = words_bytes(&w)[..len].to_vec();
            if have.insert(bytes.clone()) {
                out.push((bytes, i));
            }
        }
    }
    out
}

pub fn words_bytes(w: &[u32; 2]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Fixed bits and opcode field (low bit, width) of each table encoding (ISA
/// manual, "Microcode formats").
pub const OPCODE_FIELDS: [(Encoding, u32, u32, u32); 24] = {
    use Encoding as E;
    [
        (E::Sop2, 0x8000_0000, 23, 7),
        (E::Sopk, 0xB000_0000, 23, 5),
        (E::Sop1, 0xBE80_0000, 8, 8),
        (E::Sopc, 0xBF00_0000, 16, 7),
        (E::Sopp, 0xBF80_0000, 16, 7),
        (E::Smem, 0xC000_0000, 18, 8),
        (E::Vop2, 0x0000_0000, 25, 6),
        (E::Vop1, 0x7E00_0000, 9, 8),
        (E::Vopc, 0x7C00_0000, 17, 8),
        (E::Vop3, 0xD000_0000, 16, 10),
        (E::Vop3p, 0xD380_0000, 16, 7),
        (E::Ds, 0xD800_0000, 17, 8),
        (E::Flat, 0xDC00_0000, 18, 7),
        (E::Scratch, 0xDC00_4000, 18, 7),
        (E::Global, 0xDC00_8000, 18, 7),
        (E::Mubuf, 0xE000_0000, 18, 7),
        (E::Mtbuf, 0xE800_0000, 15, 4),
        (E::Mimg, 0xF000_0000, 18, 7),
        (E::Vop1Sdwa, 0x7E00_00F9, 9, 8),
        (E::Vop2Sdwa, 0x0000_00F9, 25, 6),
        (E::VopcSdwa, 0x7C00_00F9, 17, 8),
        (E::Vop1Dpp, 0x7E00_00FA, 9, 8),
        (E::Vop2Dpp, 0x0000_00FA, 25, 6),
        (E::VopcDpp, 0x7C00_00FA, 17, 8),
    ]
};

/// One instance of opcode `op` of `enc` (with glc set for the glc table):
/// all register fields 0, global and scratch without saddr, SDWA selecting
/// whole dwords, DPP identity.
pub fn instance(target: Target, enc: Encoding, op: u32, glc: bool) -> Instruction {
    use Encoding as E;
    let &(_, fixed, lo, _) = OPCODE_FIELDS.iter().find(|f| f.0 == enc).unwrap();
    let mut w0 = fixed | op << lo;
    let mut w1 = 0u32;
    match enc {
        E::Global | E::Scratch => w1 |= 0x7F << 16,
        E::Vop1Sdwa => w1 = 6 << 8 | 6 << 16,
        E::Vop2Sdwa => w1 = 6 << 8 | 6 << 16 | 6 << 24,
        E::VopcSdwa => w1 = 6 << 16 | 6 << 24,
        E::Vop1Dpp | E::Vop2Dpp | E::VopcDpp => w1 = 0xFF00_E400,
        _ => {}
    }
    if glc {
        w0 |= 1 << if enc == E::Mubuf { 14 } else { 16 };
    }
    let mut bytes = [0u8; 12];
    bytes[..4].copy_from_slice(&w0.to_le_bytes());
    bytes[4..8].copy_from_slice(&w1.to_le_bytes());
    Decoder::new(target).decode(&bytes).unwrap()
}

/// Every entry of a target's tables (glc forms too): (encoding, opcode
/// number, glc, desc id).
pub fn table_entries(target: Target) -> Vec<(Encoding, u32, bool, u16)> {
    let tables = TargetTables::of(target);
    let mut v = Vec::new();
    for (enc, _, _, width) in OPCODE_FIELDS {
        for op in 0..1u32 << width {
            for glc in [false, true] {
                let d = if glc {
                    tables.lookup_glc(enc, op)
                } else {
                    tables.lookup(enc, op)
                };
                if d != 0 {
                    v.push((enc, op, glc, d));
                }
            }
        }
    }
    v
}

/// Every instance of every entry of a target's tables (glc forms too).
pub fn table_instances(target: Target) -> Vec<Instruction> {
    table_entries(target)
        .into_iter()
        .map(|(enc, op, glc, _)| instance(target, enc, op, glc))
        .collect()
}
