//! LLVM-syntax text, identical to llvm-objdump-19 (for valid instructions).

use core::fmt::Write;

use crate::decode::{operand_code, slot_class};
use crate::fields::is_mai;
use crate::generated::tables as gen;
use crate::model::{Encoding as E, Instruction};
use crate::num;
use crate::tables::{scalar_regs, src_name, ConstKind, Field, File, ImmKind, Slot, Verdict};
use crate::target::info;

/// Appends the instruction's text to `out` (no allocation if `out` has room).
pub fn format(i: &Instruction, out: &mut String) {
    if !i.is_valid() {
        // llvm-objdump prints undecodable words as a raw data directive.
        let _ = write!(out, ".long 0x{:08x}", i.w0());
        return;
    }
    out.push_str(i.mnemonic());
    match i.encoding {
        E::Exp => return exp(i, out),
        E::Vintrp => return vintrp(i, out),
        _ => {}
    }
    let lds = lds_load(i);
    let mut first = true;
    for (n, slot) in i.slots().iter().enumerate() {
        if *slot == Slot::Imm(ImmKind::DecNonzero) && i.imm_value() == 0 {
            continue;
        }
        // A load into LDS names no data register.
        if lds
            && matches!(
                slot,
                Slot::Reg {
                    field: Field::Vdata | Field::Vdst,
                    ..
                }
            )
        {
            continue;
        }
        out.push_str(if first { " " } else { ", " });
        first = false;
        operand(i, n, *slot, out);
    }
    modifiers(i, out);
}

/// Formats into a new String (convenience; use [`format()`] in loops).
pub fn to_string(i: &Instruction) -> String {
    let mut s = String::new();
    format(i, &mut s);
    s
}

/// A buffer or global/scratch load whose `lds` bit sends the data to LDS.
pub(crate) fn lds_load(i: &Instruction) -> bool {
    match i.encoding {
        E::Mubuf => i.bits(0, 16, 1) != 0,
        E::Global => i.bits(0, 13, 1) != 0,
        E::Scratch => !info(i.target).scratch_sve && i.bits(0, 13, 1) != 0,
        _ => false,
    }
}

fn operand(i: &Instruction, n: usize, slot: Slot, out: &mut String) {
    match slot {
        Slot::Fixed(t) => fixed_operand(i, n, Slot::fixed_text(t), out),
        // The mandatory constant of the VOP2 v_madmk/v_madak (and v_fmamk/fmaak)
        // prints as plain hex even when it equals an inline constant, unlike other
        // literals such as s_setreg_imm32_b32's (llvm-mc-19 does both).
        Slot::Lit if i.encoding == E::Vop2 => {
            out.push_str("0x");
            num::hex(out, i.w1() as u64);
        }
        Slot::Lit => literal(i.w1(), ConstKind::B32, out),
        Slot::Imm(k) => imm(i, k, out),
        Slot::FieldImm(f) => match i.field(f) {
            v @ 0..=64 => num::dec(out, v as u64),
            v => {
                out.push_str("0x");
                num::hex(out, v as u64);
            }
        },
        Slot::Reg { .. } => reg_operand(i, slot, out),
    }
}

/// `off` slots learned from probes stand for optional address registers.
fn fixed_operand(i: &Instruction, n: usize, text: &str, out: &mut String) {
    // VOP3 forms of v_interp_*: the attribute and channel sit in src0
    // ([5:0] and [7:6]), the parameter of v_interp_mov in src1 ([10:9]).
    if i.encoding == E::Vop3 && text.starts_with("attr") {
        out.push_str("attr");
        num::dec(out, i.bits(1, 0, 6) as u64);
        out.push('.');
        out.push(['x', 'y', 'z', 'w'][i.bits(1, 6, 2) as usize]);
        return;
    }
    if i.encoding == E::Vop3 && matches!(text, "p10" | "p20" | "p0") {
        match i.bits(1, 9, 2) {
            p @ 0..=2 => out.push_str(["p10", "p20", "p0"][p as usize]),
            p => {
                out.push_str("invalid_param_");
                num::dec(out, p as u64);
            }
        }
        return;
    }
    if let Some((v, regs)) = fixed_scalar(i, n, text) {
        return scalar(v as u8, regs, ConstKind::B32, 0, out);
    }
    if text == "off" {
        let last = n + 1 == i.slots().len();
        match i.encoding {
            // gfx940 scratch: a VGPR address only when SVE (bit 13) is set
            E::Scratch if !last && info(i.target).scratch_sve && i.bits(0, 13, 1) != 0 => {
                return vgprs(i.field(Field::Addr), 1, File::V, out);
            }
            E::Mubuf | E::Mtbuf => {
                let regs = i.bits(0, 12, 1) + i.bits(0, 13, 1);
                if regs > 0 {
                    return vgprs(i.field(Field::Vaddr), regs as u8, File::V, out);
                }
            }
            _ => {}
        }
    }
    out.push_str(text);
}

/// A scalar operand behind a fixed slot, as (8-bit code, registers): the
/// SGPR destination of a VOPC SDWA compare (bit 15 set), the scalar base of
/// GLOBAL/SCRATCH addresses (any saddr but 0x7f, "off").
fn fixed_scalar(i: &Instruction, n: usize, text: &str) -> Option<(u32, u8)> {
    match i.encoding {
        E::VopcSdwa if n == 0 && i.bits(1, 15, 1) != 0 => Some((i.bits(1, 8, 7), 2)),
        E::Global | E::Scratch if text == "off" && n + 1 == i.slots().len() => {
            let saddr = i.field(Field::Saddr);
            let regs = if i.encoding == E::Global { 2 } else { 1 };
            (saddr != 0x7F).then_some((saddr, regs))
        }
        _ => None,
    }
}

/// What llvm-objdump prints after the encoding as a `; ` comment (nothing
/// for most instructions): LLVM's disassembler warns about each scalar
/// register tuple that does not start on its alignment (pairs on even
/// registers, wider tuples on multiples of four), in operand order and run
/// together: `Warning: SGPR_64: scalar reg isn't aligned 5` (the encoded
/// number; the operand prints as the aligned tuple, `s[4:5]`).
pub fn comment(i: &Instruction, out: &mut String) {
    if !i.is_valid() {
        return;
    }
    for (n, slot) in i.slots().iter().enumerate() {
        let (v, regs) = match *slot {
            Slot::Reg {
                field, regs, file, ..
            } => {
                let v = i.field(field);
                let source = matches!(
                    field,
                    Field::Src0 | Field::Src1 | Field::Src2 | Field::Vsrc1
                );
                let scalar = file == File::S
                    || matches!(field, Field::Ssrc0 | Field::Ssrc1)
                    || (source && v < 256);
                if !scalar {
                    continue;
                }
                (v, regs)
            }
            Slot::Fixed(t) => match fixed_scalar(i, n, Slot::fixed_text(t)) {
                Some(x) => x,
                None => continue,
            },
            _ => continue,
        };
        let (class, index) = match v {
            0..=101 => ("SGPR", v),
            108..=123 => ("TTMP", v - 108),
            _ => continue,
        };
        let regs = scalar_regs(regs);
        let align = if regs >= 3 { 4 } else { u32::from(regs) };
        // Returning SMEM atomics decode sdata twice: as the result and the data.
        let times = if field_of(slot) == Some(Field::Sdata) && smem_returns(i) {
            2
        } else {
            1
        };
        for _ in 0..times {
            if regs >= 2 && index % align != 0 {
                let _ = write!(
                    out,
                    "Warning: {class}_{}: scalar reg isn't aligned {index}",
                    32 * u32::from(regs)
                );
            }
        }
    }
}

fn reg_operand(i: &Instruction, slot: Slot, out: &mut String) {
    let Slot::Reg {
        field,
        regs,
        file,
        ck,
        class,
        class_acc,
    } = slot
    else {
        return;
    };
    let v = i.field(field);
    let verdict = slot_class(i, class, class_acc).verdict(operand_code(field, file, v));
    let file = i.effective_file(field, file);
    let mut regs = regs;
    if field == Field::Vdata {
        regs = vdata_regs(i, regs);
    }
    // With an SGPR base, global addresses are a 32-bit VGPR offset; scratch has no VGPR.
    // (gfx940+ scratch takes a VGPR only when SVE, bit 13, is set.)
    if field == Field::Addr && i.bits(1, 16, 7) != 0x7F {
        let sve = info(i.target).scratch_sve && i.bits(0, 13, 1) != 0;
        match i.encoding {
            E::Global => regs = 1,
            E::Scratch if !sve => return out.push_str("off"),
            _ => {}
        }
    }
    // LLVM prints an immediate where only registers belong as a 32-bit one.
    let ck = if verdict == Verdict::BadImmediate {
        ConstKind::B32
    } else {
        ck
    };
    match field {
        Field::Src0 | Field::Src1 | Field::Src2 | Field::Vsrc1 => {
            let (neg, abs) = src_mods(i, field);
            let sext = src_sext(i, field);
            // A negated constant is `neg(...)`: `-1` would be another constant.
            let neg_call = neg && !abs && is_immediate(v);
            if sext {
                out.push_str("sext(");
            }
            if neg_call {
                out.push_str("neg(");
            } else if neg {
                out.push('-');
            }
            if abs {
                out.push('|');
            }
            // SDWA constants print as the operation's e32 form prints them.
            let ck = if i.encoding.is_sdwa() && (128..255).contains(&v) {
                e32_const_kind(i, field).unwrap_or(ck)
            } else {
                ck
            };
            if v >= 256 {
                vgprs(v - 256, regs, file, out);
            } else {
                scalar(v as u8, regs, ck, i.w1(), out);
            }
            annotation(verdict, class, class_acc, i, out);
            if abs {
                out.push('|');
            }
            if neg_call || sext {
                out.push(')');
            }
        }
        _ if file == File::S => {
            scalar(v as u8, regs, ck, i.w1(), out);
            annotation(verdict, class, class_acc, i, out);
        }
        _ => {
            vgprs(v, regs, file, out);
            annotation(verdict, class, class_acc, i, out);
        }
    }
}

/// Inline constants and the literal are immediates; everything else below
/// 256 names a register.
fn is_immediate(code: u32) -> bool {
    matches!(code, 128..=208 | 240..=248 | 255)
}

/// LLVM's note after an operand its class does not take.
fn annotation(verdict: Verdict, class: u8, class_acc: u8, i: &Instruction, out: &mut String) {
    match verdict {
        Verdict::BadRegister => {
            out.push_str("/*Invalid register, operand has '");
            out.push_str(slot_class(i, class, class_acc).name);
            out.push_str("' register class*/");
        }
        Verdict::BadImmediate => out.push_str("/*Invalid immediate*/"),
        Verdict::Accept | Verdict::Reject => {}
    }
}

fn vgprs(n: u32, regs: u8, file: File, out: &mut String) {
    out.push(if file == File::A { 'a' } else { 'v' });
    if regs <= 1 {
        num::dec(out, n as u64);
    } else {
        out.push('[');
        num::dec(out, n as u64);
        out.push(':');
        num::dec(out, (n + regs as u32 - 1) as u64);
        out.push(']');
    }
}

/// Scalar source code `v` (SGPR, TTMP, special register, constant, literal).
fn scalar(v: u8, regs: u8, ck: ConstKind, lit: u32, out: &mut String) {
    let regs = match v {
        0..=101 | 108..=123 => scalar_regs(regs),
        _ => regs,
    };
    if v == 255 {
        return literal(lit, ck, out);
    }
    if regs > 2 {
        let align = regs.min(4) as u32;
        let (p, base) = match v {
            0..=101 => ("s", v as u32),
            108..=123 => ("ttmp", v as u32 - 108),
            _ => ("", 0),
        };
        if !p.is_empty() {
            let b = base / align * align;
            out.push_str(p);
            out.push('[');
            num::dec(out, b as u64);
            out.push(':');
            num::dec(out, (b + regs as u32 - 1) as u64);
            out.push(']');
            return;
        }
    }
    out.push_str(src_name(ck, regs, v));
}

/// Literals that equal an inline constant print like the constant; how a
/// literal compares depends on the operand's constant kind (learned facts:
/// 16-bit float operands use the low half, 64-bit ones the high word).
fn literal(lit: u32, ck: ConstKind, out: &mut String) {
    let (code, hex) = match ck {
        ConstKind::B32 => (
            inline_int(lit as i32).or_else(|| inline_float(lit, &F32_BITS)),
            lit,
        ),
        ConstKind::I16 => (
            inline_int(lit as i32).or_else(|| inline_float(lit, &F32_BITS)),
            lit & 0xFFFF,
        ),
        ConstKind::F16 => {
            let v = lit & 0xFFFF;
            (
                inline_int(v as u16 as i16 as i32).or_else(|| inline_float(v, &F16_BITS)),
                v,
            )
        }
        ConstKind::V2F16 => (
            inline_int(lit as i32).or_else(|| {
                u16::try_from(lit)
                    .ok()
                    .and_then(|v| inline_float(u32::from(v), &F16_BITS))
            }),
            lit,
        ),
        ConstKind::F64 => (
            (lit == 0)
                .then_some(128)
                .or_else(|| inline_float(lit, &F64_HI_BITS)),
            lit,
        ),
    };
    // 16-bit integer operands print literal floats with their f32 spelling
    let names = if ck == ConstKind::I16 {
        ConstKind::B32
    } else {
        ck
    };
    match code {
        Some(c) => out.push_str(src_name(names, 1, c)),
        None => {
            out.push_str("0x");
            num::hex(out, hex as u64);
        }
    }
}

/// Source code of an inline integer constant.
fn inline_int(s: i32) -> Option<u8> {
    match s {
        0..=64 => Some(128 + s as u8),
        -16..=-1 => Some((192 - s) as u8),
        _ => None,
    }
}

/// Bit patterns of the inline floats 0.5, -0.5, 1, -1, 2, -2, 4, -4, 1/(2*pi)
/// (codes 240..=248) in f32, f16 and the high word of f64.
const F32_BITS: [u32; 9] = [
    0x3f000000, 0xbf000000, 0x3f800000, 0xbf800000, 0x40000000, 0xc0000000, 0x40800000, 0xc0800000,
    0x3e22f983,
];
const F16_BITS: [u32; 9] = [
    0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000, 0xc000, 0x4400, 0xc400, 0x3118,
];
const F64_HI_BITS: [u32; 8] = [
    0x3fe00000, 0xbfe00000, 0x3ff00000, 0xbff00000, 0x40000000, 0xc0000000, 0x40100000, 0xc0100000,
];

fn inline_float(v: u32, table: &[u32]) -> Option<u8> {
    table.iter().position(|b| *b == v).map(|k| 240 + k as u8)
}

fn imm(i: &Instruction, k: ImmKind, out: &mut String) {
    let v = i.imm_value();
    match k {
        ImmKind::Hex if i.encoding == E::Sopp && v <= 64 => num::dec(out, v as u64),
        ImmKind::Hex => {
            out.push_str("0x");
            num::hex(out, v as u64);
        }
        ImmKind::Dec | ImmKind::DecNonzero | ImmKind::Branch => num::dec(out, v as u64),
        ImmKind::Waitcnt => waitcnt(v, out),
        ImmKind::Hwreg => hwreg(i, v, out),
        // Bits 10-15 do not count for the name; a value with them set and no
        // name prints as a number.
        ImmKind::Sendmsg => match gen::SENDMSG.get(v as usize & 0x3FF) {
            Some(t) if t.starts_with("sendmsg(") => out.push_str(t),
            Some(t) if !t.is_empty() && v < 0x400 => out.push_str(t),
            Some(_) if v < 0x400 => {
                out.push_str("sendmsg(");
                num::dec(out, (v & 0xF) as u64);
                out.push_str(", ");
                num::dec(out, ((v >> 4) & 7) as u64);
                out.push_str(", ");
                num::dec(out, ((v >> 8) & 3) as u64);
                out.push(')');
            }
            _ => num::dec(out, v as u64),
        },
        ImmKind::GprIdx if v <= 15 => {
            out.push_str("gpr_idx(");
            let mut sep = "";
            for (k, name) in ["SRC0", "SRC1", "SRC2", "DST"].iter().enumerate() {
                if v & (1 << k) != 0 {
                    out.push_str(sep);
                    out.push_str(name);
                    sep = ",";
                }
            }
            out.push(')');
        }
        ImmKind::GprIdx => {
            out.push_str("0x");
            num::hex(out, v as u64);
        }
        ImmKind::SmemOffset => {
            let v = ((v << 11) as i32) >> 11; // 21-bit signed
            let (imm, soe) = (i.bits(0, 17, 1) != 0, i.bits(0, 14, 1) != 0);
            let soffset = i.bits(1, 25, 7) as u8;
            match (imm, soe) {
                (true, true) => {
                    scalar(soffset, 1, ConstKind::B32, 0, out);
                    out.push_str(" offset:");
                    signed_hex(v, out);
                }
                (true, false) => signed_hex(v, out),
                (false, true) => scalar(soffset, 1, ConstKind::B32, 0, out),
                (false, false) => scalar((v & 0x7F) as u8, 1, ConstKind::B32, 0, out),
            }
        }
    }
}

fn push_signed(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    num::dec(out, v.unsigned_abs());
}

fn signed_hex(v: i32, out: &mut String) {
    out.push_str(if v < 0 { "-0x" } else { "0x" });
    num::hex(out, v.unsigned_abs() as u64);
}

fn waitcnt(v: u32, out: &mut String) {
    let vm = (v & 0xF) | ((v >> 14) & 3) << 4;
    let exp = (v >> 4) & 7;
    let lgkm = (v >> 8) & 0xF;
    let all = vm == 63 && exp == 7 && lgkm == 15;
    let mut sep = "";
    for (name, val, max) in [("vmcnt", vm, 63), ("expcnt", exp, 7), ("lgkmcnt", lgkm, 15)] {
        if val != max || all {
            out.push_str(sep);
            out.push_str(name);
            out.push('(');
            num::dec(out, val as u64);
            out.push(')');
            sep = " ";
        }
    }
}

fn hwreg(i: &Instruction, v: u32, out: &mut String) {
    let id = v & 0x3F;
    let off = (v >> 6) & 0x1F;
    let size = ((v >> 11) & 0x1F) + 1;
    let names: &[&str; 64] = match i.target {
        crate::Target::Gfx908 => &gen::HWREG_GFX908,
        crate::Target::Gfx90a => &gen::HWREG_GFX90A,
        crate::Target::Gfx942 => &gen::HWREG_GFX942,
    };
    out.push_str("hwreg(");
    match names[id as usize] {
        "" => {
            let _ = write!(out, "{id}");
        }
        n => out.push_str(n),
    }
    if off != 0 || size != 32 {
        let _ = write!(out, ", {off}, {size}");
    }
    out.push(')');
}

/// (neg, abs) source modifiers of a VOP3/SDWA/DPP source.
fn src_mods(i: &Instruction, f: Field) -> (bool, bool) {
    let k = match f {
        Field::Src0 => 0,
        Field::Src1 | Field::Vsrc1 => 1,
        Field::Src2 => 2,
        _ => return (false, false),
    };
    let flags = i.desc().flags;
    if int_source(i, k) || (i.encoding == E::Vop3 && k == 1 && cvt_sr_byte(i)) {
        // neg is sext(...), abs ignored; the seed of v_cvt_sr_* takes none
        return (false, false);
    }
    match i.encoding {
        E::Vop3 | E::Vop3p => (
            flags & F_NEG != 0 && i.bits(1, 29 + k, 1) != 0,
            flags & F_ABS != 0 && i.bits(0, 8 + k, 1) != 0,
        ),
        E::Vop1Sdwa | E::Vop2Sdwa | E::VopcSdwa => {
            (i.bits(1, 20 + 8 * k, 1) != 0, i.bits(1, 21 + 8 * k, 1) != 0)
        }
        // integer dot products print no source modifiers (LLVM ignores the bits)
        E::Vop1Dpp | E::Vop2Dpp | E::VopcDpp if dpp_without_mods(i.mnemonic()) => (false, false),
        E::Vop1Dpp | E::Vop2Dpp | E::VopcDpp => (
            i.bits(1, 20 + 2 * k, 1) != 0 && !dpp_int_source(i, k),
            i.bits(1, 21 + 2 * k, 1) != 0,
        ),
        _ => (false, false),
    }
}

/// Integer sources of operations whose other sources are floats (the
/// exponent of v_ldexp, the selector of v_trig_preop, the byte index and
/// accumulator of the u8 packs): LLVM gives them integer input modifiers,
/// so in VOP3 and DPP the neg bit prints as `sext(...)` and the abs bit is
/// ignored. (mnemonic prefix, bit k for source k)
const INT_SOURCES: [(&str, u8); 4] = [
    ("v_ldexp_", 0b010),
    ("v_trig_preop_f64", 0b010),
    ("v_cvt_pk_u8_f32", 0b110),
    ("v_cvt_pkaccum_u8_f32", 0b010),
];

/// gfx942 v_cvt_sr_{fp8,bf8}_f32: a stochastically rounded byte written
/// into the byte of vdst that op_sel[3:2] selects; src1 is the (integer)
/// random seed. LLVM prints all four op_sel bits.
fn cvt_sr_byte(i: &Instruction) -> bool {
    matches!(i.mnemonic(), "v_cvt_sr_fp8_f32" | "v_cvt_sr_bf8_f32")
}

fn int_source(i: &Instruction, k: u32) -> bool {
    matches!(i.encoding, E::Vop3 | E::Vop1Dpp | E::Vop2Dpp | E::VopcDpp)
        && INT_SOURCES
            .iter()
            .any(|(p, m)| i.mnemonic().starts_with(p) && m & (1 << k) != 0)
}

fn dpp_without_mods(m: &str) -> bool {
    m.starts_with("v_dot") && m.contains("_i32_")
}

/// An integer DPP source: its abs bit is refused (learned), and its neg bit
/// means sign extension.
fn dpp_int_source(i: &Instruction, k: u32) -> bool {
    i.desc().reject_bits[1] & (1 << (21 + 2 * k)) != 0
}

/// `sext(...)` on an SDWA or DPP integer source, or an integer source of a
/// float operation (see [`INT_SOURCES`]).
fn src_sext(i: &Instruction, f: Field) -> bool {
    let k = match f {
        Field::Src0 => 0,
        Field::Src1 | Field::Vsrc1 => 1,
        Field::Src2 => 2,
        _ => return false,
    };
    if int_source(i, k) {
        let neg = if i.encoding == E::Vop3 {
            29 + k
        } else {
            20 + 2 * k
        };
        return i.bits(1, neg, 1) != 0;
    }
    match i.encoding {
        E::Vop1Sdwa | E::Vop2Sdwa | E::VopcSdwa if k < 2 => i.bits(1, 19 + 8 * k, 1) != 0,
        E::Vop1Dpp | E::Vop2Dpp | E::VopcDpp if k < 2 => {
            i.bits(1, 20 + 2 * k, 1) != 0 && dpp_int_source(i, k) && !dpp_without_mods(i.mnemonic())
        }
        _ => false,
    }
}

/// Constant kind of the same source in the operation's VOP3 form.
fn e32_const_kind(i: &Instruction, field: Field) -> Option<ConstKind> {
    let op = i.desc().opcode;
    let tables = crate::tables::TargetTables::of(i.target);
    let d = tables
        .table(E::Vop3)
        .iter()
        .map(|d| crate::tables::desc(*d))
        .find(|d| *d != crate::tables::desc(0) && d.opcode == op)?;
    let want = if field == Field::Vsrc1 {
        Field::Src1
    } else {
        Field::Src0
    };
    d.slots().iter().find_map(|s| match *s {
        Slot::Reg { field, ck, .. } if field == want => Some(ck),
        _ => None,
    })
}

pub(crate) const F_NEG: u8 = 1;
pub(crate) const F_ABS: u8 = 2;
pub(crate) const F_CLAMP: u8 = 4;
pub(crate) const F_OMOD: u8 = 8;
pub(crate) const F_OPSEL: u8 = 16;
pub(crate) const F_OPSEL_HI_ONES: u8 = 32;
/// A DS operation that exists only with gds (GWS): prints it on every target.
pub(crate) const F_GDS: u8 = 64;

fn nsrc(i: &Instruction) -> usize {
    i.slots()
        .iter()
        .filter(|s| {
            matches!(
                s,
                Slot::Reg {
                    field: Field::Src0 | Field::Src1 | Field::Src2 | Field::Vsrc1,
                    ..
                }
            )
        })
        .count()
}

fn bool_list(out: &mut String, name: &str, bits: [u32; 4], n: usize) {
    out.push(' ');
    out.push_str(name);
    out.push_str(":[");
    for (k, b) in bits.iter().take(n).enumerate() {
        if k > 0 {
            out.push(',');
        }
        out.push(if *b != 0 { '1' } else { '0' });
    }
    out.push(']');
}

fn modifiers(i: &Instruction, out: &mut String) {
    let t = info(i.target);
    let flags = i.desc().flags;
    match i.encoding {
        // only loads, stores and atomics have a cache policy
        E::Smem if i.bits(0, 16, 1) != 0 && smem_has_glc(i.mnemonic()) => out.push_str(" glc"),
        E::Ds => {
            let (o0, o1) = (i.bits(0, 0, 8), i.bits(0, 8, 8));
            let m = i.mnemonic();
            if m.contains("2st64")
                || m.contains("read2")
                || m.contains("write2")
                || m.contains("xchg2")
            {
                if o0 != 0 {
                    out.push_str(" offset0:");
                    num::dec(out, o0 as u64);
                }
                if o1 != 0 {
                    out.push_str(" offset1:");
                    num::dec(out, o1 as u64);
                }
            } else if o0 | o1 != 0 {
                out.push_str(" offset:");
                if m == "ds_swizzle_b32" {
                    swizzle(o1 << 8 | o0, out);
                } else {
                    num::dec(out, (o1 << 8 | o0) as u64);
                }
            }
            if (t.ds_gds || flags & F_GDS != 0) && i.bits(0, 16, 1) != 0 {
                out.push_str(" gds");
            }
        }
        E::Flat | E::Global | E::Scratch => {
            let off = if i.encoding == E::Flat {
                i.bits(0, 0, 13) as i32
            } else {
                ((i.bits(0, 0, 13) << 19) as i32) >> 19
            };
            if off != 0 {
                out.push_str(" offset:");
                push_signed(out, off as i64);
            }
            cpol(
                i,
                t.cpol,
                [i.bits(0, 16, 1), i.bits(0, 17, 1), i.bits(0, 25, 1)],
                out,
            );
            if lds_load(i) {
                out.push_str(" lds");
            }
        }
        E::Mubuf | E::Mtbuf => {
            if i.encoding == E::Mtbuf {
                mtbuf_format(i, out);
            }
            if i.bits(0, 13, 1) != 0 {
                out.push_str(" idxen");
            }
            if i.bits(0, 12, 1) != 0 {
                out.push_str(" offen");
            }
            let off = i.bits(0, 0, 12);
            // cache maintenance (no register operand) prints no offset
            let maintenance = !i.slots().iter().any(|s| matches!(s, Slot::Reg { .. }));
            if off != 0 && !maintenance {
                out.push_str(" offset:");
                push_signed(out, off as i64);
            }
            let scc = if i.encoding == E::Mubuf {
                i.bits(0, 15, 1)
            } else {
                i.bits(1, 21, 1)
            };
            let slc = if i.encoding == E::Mubuf {
                i.bits(0, 17, 1)
            } else {
                i.bits(1, 22, 1)
            };
            let lds = i.encoding == E::Mubuf && i.bits(0, 16, 1) != 0;
            // buffer_store_lds_dword, an instruction only with lds, names it first
            let lds_first = lds && i.mnemonic().contains("_lds_");
            if lds_first {
                out.push_str(" lds");
            }
            // Cache maintenance: sc0/sc1 on gfx940+, where a set sc0 is
            // learned as a printed operand; nothing before.
            if !maintenance {
                cpol(i, t.cpol, [i.bits(0, 14, 1), slc, scc], out);
            } else if t.maintenance_scope && scc != 0 {
                out.push(' ');
                out.push_str(t.cpol[2]);
            }
            if lds && !lds_first {
                out.push_str(" lds");
            }
            if !t.acc_memory && i.bits(1, 23, 1) != 0 {
                out.push_str(" tfe");
            }
        }
        E::Vop3 if cvt_sr_byte(i) => {
            let b = [0, 1, 2, 3].map(|k| i.bits(0, 11 + k, 1));
            if b.iter().any(|x| *x != 0) {
                bool_list(out, "op_sel", b, 4);
            }
            if flags & F_CLAMP != 0 && i.bits(0, 15, 1) != 0 {
                out.push_str(" clamp");
            }
            if flags & F_OMOD != 0 {
                omod(i.bits(1, 27, 2), out);
            }
        }
        E::Vop3 => {
            // 16-bit interpolation: bit 8 of the attribute source picks the high half
            if i.mnemonic().starts_with("v_interp_")
                && i.mnemonic().ends_with("_f16")
                && i.bits(1, 8, 1) != 0
            {
                out.push_str(" high");
            }
            if flags & F_OPSEL != 0 && i.bits(0, 11, 4) != 0 {
                let n = nsrc(i);
                let mut b = [0; 4];
                for (k, x) in b.iter_mut().enumerate().take(n) {
                    *x = i.bits(0, 11 + k as u32, 1);
                }
                b[n.min(3)] = i.bits(0, 14, 1);
                bool_list(out, "op_sel", b, n + 1);
            }
            if flags & F_CLAMP != 0 && i.bits(0, 15, 1) != 0 {
                out.push_str(" clamp");
            }
            if flags & F_OMOD != 0 {
                omod(i.bits(1, 27, 2), out);
            }
        }
        E::Vop3p if is_mai(i) => {
            let (cbsz, abid, blgp) = (i.bits(0, 8, 3), i.bits(0, 11, 4), i.bits(1, 29, 3));
            if cbsz != 0 {
                let _ = write!(out, " cbsz:{cbsz}");
            }
            if abid != 0 {
                let _ = write!(out, " abid:{abid}");
            }
            if t.mfma_f64_neg && i.mnemonic().starts_with("v_mfma_f64") {
                let b = [blgp & 1, blgp >> 1 & 1, blgp >> 2 & 1, 0];
                if blgp != 0 {
                    bool_list(out, "neg", b, 3);
                }
            } else if blgp != 0 {
                let _ = write!(out, " blgp:{blgp}");
            }
        }
        // v_accvgpr_read/write/mov print no VOP3P modifiers
        E::Vop3p if i.mnemonic().starts_with("v_accvgpr") => {}
        E::Vop3p => {
            let n = nsrc(i);
            let sel = [i.bits(0, 11, 1), i.bits(0, 12, 1), i.bits(0, 13, 1), 0];
            let hi = [i.bits(1, 27, 1), i.bits(1, 28, 1), i.bits(0, 14, 1), 0];
            let neg_lo = [i.bits(1, 29, 1), i.bits(1, 30, 1), i.bits(1, 31, 1), 0];
            let neg_hi = [i.bits(0, 8, 1), i.bits(0, 9, 1), i.bits(0, 10, 1), 0];
            let default_hi = if flags & F_OPSEL_HI_ONES != 0 { 1 } else { 0 };
            if sel[..n].iter().any(|b| *b != 0) {
                bool_list(out, "op_sel", sel, n);
            }
            if hi[..n].iter().any(|b| *b != default_hi) {
                bool_list(out, "op_sel_hi", hi, n);
            }
            let on_operands = flags & (F_NEG | F_ABS) != 0;
            if !on_operands && neg_lo[..n].iter().any(|b| *b != 0) {
                bool_list(out, "neg_lo", neg_lo, n);
            }
            if !on_operands && neg_hi[..n].iter().any(|b| *b != 0) {
                bool_list(out, "neg_hi", neg_hi, n);
            }
            if i.bits(0, 15, 1) != 0 {
                out.push_str(" clamp");
            }
        }
        E::Mimg => mimg(i, t, out),
        // v_nop, v_clrexcp: LLVM prints the SDWA form bare
        E::Vop1Sdwa if i.slots().is_empty() => {}
        E::Vop1Sdwa | E::Vop2Sdwa | E::VopcSdwa => sdwa(i, out),
        E::Vop1Dpp | E::Vop2Dpp | E::VopcDpp => dpp(i, out),
        _ => {}
    }
}

fn cpol(i: &Instruction, names: [&str; 3], bits: [u32; 3], out: &mut String) {
    let _ = i;
    for (n, b) in names.iter().zip(bits) {
        if b != 0 && !n.is_empty() {
            out.push(' ');
            out.push_str(n);
        }
    }
}

/// The ds_swizzle_b32 pattern as LLVM prints it: `swizzle(QUAD_PERM,a,b,c,d)`
/// (bit 15 set, high byte 0x80), else for bit 15 clear the and/or/xor lane
/// masks (bits 0-4, 5-9, 10-14) as SWAP, REVERSE, BROADCAST or a
/// BITMASK_PERM string (per lane-id bit, high first: 0/1 forced, p kept,
/// i inverted); other values in decimal.
fn swizzle(imm: u32, out: &mut String) {
    if imm & 0xFF00 == 0x8000 {
        out.push_str("swizzle(QUAD_PERM");
        for k in 0..4 {
            out.push(',');
            num::dec(out, (imm >> (2 * k) & 3) as u64);
        }
        out.push(')');
        return;
    }
    if imm & 0x8000 != 0 {
        return num::dec(out, imm as u64);
    }
    let (and, or, xor) = (imm & 0x1F, imm >> 5 & 0x1F, imm >> 10 & 0x1F);
    let group = 32 - and; // lanes sharing a source when broadcasting
    if and == 0x1F && or == 0 && xor.count_ones() == 1 {
        out.push_str("swizzle(SWAP,");
        num::dec(out, xor as u64);
    } else if and == 0x1F && or == 0 && xor > 0 && (xor + 1).is_power_of_two() {
        out.push_str("swizzle(REVERSE,");
        num::dec(out, (xor + 1) as u64);
    } else if group > 1 && group.is_power_of_two() && or < group && xor == 0 {
        out.push_str("swizzle(BROADCAST,");
        num::dec(out, group as u64);
        out.push(',');
        num::dec(out, or as u64);
    } else {
        out.push_str("swizzle(BITMASK_PERM,\"");
        let (p0, p1) = (or ^ xor, ((0x1F & and) | or) ^ xor);
        for bit in (0..5).rev() {
            let (a, b) = (p0 >> bit & 1, p1 >> bit & 1);
            out.push(match (a == b, a) {
                (true, 0) => '0',
                (true, _) => '1',
                (false, 0) => 'p',
                (false, _) => 'i',
            });
        }
        out.push('"');
    }
    out.push(')');
}

fn omod(v: u32, out: &mut String) {
    match v {
        1 => out.push_str(" mul:2"),
        2 => out.push_str(" mul:4"),
        3 => out.push_str(" div:2"),
        _ => {}
    }
}

fn mtbuf_format(i: &Instruction, out: &mut String) {
    let dfmt = i.bits(0, 19, 4);
    let nfmt = i.bits(0, 23, 3);
    const D: [&str; 16] = [
        "BUF_DATA_FORMAT_INVALID",
        "BUF_DATA_FORMAT_8",
        "BUF_DATA_FORMAT_16",
        "BUF_DATA_FORMAT_8_8",
        "BUF_DATA_FORMAT_32",
        "BUF_DATA_FORMAT_16_16",
        "BUF_DATA_FORMAT_10_11_11",
        "BUF_DATA_FORMAT_11_11_10",
        "BUF_DATA_FORMAT_10_10_10_2",
        "BUF_DATA_FORMAT_2_10_10_10",
        "BUF_DATA_FORMAT_8_8_8_8",
        "BUF_DATA_FORMAT_32_32",
        "BUF_DATA_FORMAT_16_16_16_16",
        "BUF_DATA_FORMAT_32_32_32",
        "BUF_DATA_FORMAT_32_32_32_32",
        "BUF_DATA_FORMAT_RESERVED_15",
    ];
    const N: [&str; 8] = [
        "BUF_NUM_FORMAT_UNORM",
        "BUF_NUM_FORMAT_SNORM",
        "BUF_NUM_FORMAT_USCALED",
        "BUF_NUM_FORMAT_SSCALED",
        "BUF_NUM_FORMAT_UINT",
        "BUF_NUM_FORMAT_SINT",
        "BUF_NUM_FORMAT_RESERVED_6",
        "BUF_NUM_FORMAT_FLOAT",
    ];
    match (dfmt, nfmt) {
        (1, 0) => {}
        (_, 0) => {
            let _ = write!(out, " format:[{}]", D[dfmt as usize]);
        }
        (1, _) => {
            let _ = write!(out, " format:[{}]", N[nfmt as usize]);
        }
        _ => {
            let _ = write!(out, " format:[{},{}]", D[dfmt as usize], N[nfmt as usize]);
        }
    }
}

const SEL: [&str; 8] = [
    "BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD", "7",
];
const UNUSED: [&str; 4] = ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE", "3"];

/// gfx942's fp8/bf8 -> f32 conversions have no SDWA destination select.
pub(crate) fn sdwa_without_dst(m: &str) -> bool {
    [
        "v_cvt_f32_fp8",
        "v_cvt_f32_bf8",
        "v_cvt_pk_f32_fp8",
        "v_cvt_pk_f32_bf8",
    ]
    .iter()
    .any(|p| m.starts_with(p))
}

fn sdwa(i: &Instruction, out: &mut String) {
    if i.encoding != E::VopcSdwa && sdwa_without_dst(i.mnemonic()) {
        if i.bits(1, 13, 1) != 0 {
            out.push_str(" clamp");
        }
        omod(i.bits(1, 14, 2), out);
    } else if i.encoding != E::VopcSdwa {
        if i.bits(1, 13, 1) != 0 {
            out.push_str(" clamp");
        }
        omod(i.bits(1, 14, 2), out);
        out.push_str(" dst_sel:");
        out.push_str(SEL[i.bits(1, 8, 3) as usize]);
        out.push_str(" dst_unused:");
        out.push_str(UNUSED[i.bits(1, 11, 2) as usize]);
    }
    out.push_str(" src0_sel:");
    out.push_str(SEL[i.bits(1, 16, 3) as usize]);
    if i.encoding != E::Vop1Sdwa {
        out.push_str(" src1_sel:");
        out.push_str(SEL[i.bits(1, 24, 3) as usize]);
    }
}

fn dpp(i: &Instruction, out: &mut String) {
    let c = i.bits(1, 8, 9);
    match c {
        0x000..=0x0FF => {
            let d = |k: u32| (b'0' + ((c >> (2 * k)) & 3) as u8) as char;
            out.push_str(" quad_perm:[");
            for k in 0..4 {
                if k > 0 {
                    out.push(',');
                }
                out.push(d(k));
            }
            out.push(']');
        }
        0x101..=0x10F => {
            out.push_str(" row_shl:");
            num::dec(out, (c & 0xF) as u64);
        }
        0x111..=0x11F => {
            out.push_str(" row_shr:");
            num::dec(out, (c & 0xF) as u64);
        }
        0x121..=0x12F => {
            out.push_str(" row_ror:");
            num::dec(out, (c & 0xF) as u64);
        }
        0x130 => out.push_str(" wave_shl:1"),
        0x134 => out.push_str(" wave_rol:1"),
        0x138 => out.push_str(" wave_shr:1"),
        0x13C => out.push_str(" wave_ror:1"),
        0x140 => out.push_str(" row_mirror"),
        0x141 => out.push_str(" row_half_mirror"),
        0x142 => out.push_str(" row_bcast:15"),
        0x143 => out.push_str(" row_bcast:31"),
        0x150..=0x15F if info(i.target).row_newbcast => {
            out.push_str(" row_newbcast:");
            num::dec(out, (c & 0xF) as u64);
        }
        // LLVM's words for controls the target lacks
        0x150..=0x15F => out.push_str(
            "  /* row_newbcast/row_share is not supported on ASICs earlier than GFX90A/GFX10 */",
        ),
        0x160..=0x16F => {
            out.push_str(" /* row_xmask is not supported on ASICs earlier than GFX10 */")
        }
        _ => out.push_str(" /* Invalid dpp_ctrl value */"),
    }
    out.push_str(" row_mask:0x");
    num::hex(out, i.bits(1, 28, 4) as u64);
    out.push_str(" bank_mask:0x");
    num::hex(out, i.bits(1, 24, 4) as u64);
    if i.bits(1, 19, 1) != 0 {
        out.push_str(" bound_ctrl:1");
    }
}

/// MIMG modifiers; on targets with acc memory bit 16 selects AGPRs instead
/// of tfe, and bit 7 is the third cache-policy bit (scc).
fn mimg(i: &Instruction, t: &crate::target::TargetInfo, out: &mut String) {
    let acc_memory = t.acc_memory;
    let dmask = i.bits(0, 8, 4);
    if dmask != 0 {
        out.push_str(" dmask:0x");
        num::hex(out, dmask as u64);
    }
    let flags = [
        (i.bits(0, 12, 1), "unorm"),
        (i.bits(0, 13, 1), "glc"),
        (i.bits(0, 25, 1), "slc"),
        (i.bits(0, 7, 1), t.cpol[2]),
        (i.bits(0, 15, 1), "a16"),
        (i.bits(0, 16, 1) & !acc_memory as u32, "tfe"),
        (i.bits(0, 17, 1), "lwe"),
        (i.bits(0, 14, 1), "da"),
        (i.bits(1, 31, 1), "d16"),
    ];
    for (b, name) in flags {
        if b != 0 && !name.is_empty() {
            out.push(' ');
            out.push_str(name);
        }
    }
}

/// Registers the vdata operand of a memory instruction spans, given the
/// table's count: MIMG by dmask, d16 and tfe; gfx908 buffer tfe returns one
/// more dword (the status).
pub(crate) fn vdata_regs(i: &Instruction, regs: u8) -> u8 {
    let acc_memory = info(i.target).acc_memory;
    match i.encoding {
        E::Mimg => mimg_vdata_regs(i, regs, acc_memory),
        E::Mubuf | E::Mtbuf if !acc_memory && i.bits(1, 23, 1) != 0 => regs + 1,
        _ => regs,
    }
}

/// Registers an MIMG vdata operand spans, as LLVM sizes it: one per dmask
/// bit (gather4: always four), halved by d16 (rounded up), one more for
/// tfe; if LLVM has no instruction of that size (learned per opcode), or
/// the registers would run past v255, the decoded size `regs` stays.
pub(crate) fn mimg_vdata_regs(i: &Instruction, regs: u8, acc_memory: bool) -> u8 {
    let mut n = if i.mnemonic().contains("gather4") {
        4
    } else {
        i.bits(0, 8, 4).count_ones().max(1)
    };
    if i.bits(1, 31, 1) != 0 {
        n = n.div_ceil(2);
    }
    if !acc_memory && i.bits(0, 16, 1) != 0 {
        n += 1;
    }
    let fits = |n: u32| i.field(Field::Vdata) + n <= 256;
    // LLVM's decoder gives a 32-bit image atomic asked for four dwords (dmask
    // and tfe) a five-dword register tuple, which its assembler would refuse
    // (llvm-mc-19 --disassemble on gfx908 and gfx90a, every atomic but cmpswap).
    let m = i.mnemonic();
    if n == 4 && m.starts_with("image_atomic_") && !m.contains("cmpswap") && fits(5) {
        return 5;
    }
    let op = ((i.w0() >> 18) & 0x7F) as usize;
    let sizes = crate::tables::TargetTables::of(i.target)
        .mimg_vdata_sizes
        .get(op)
        .copied()
        .unwrap_or(0);
    if n == u32::from(regs) || (sizes >> n & 1 != 0 && fits(n)) {
        n as u8
    } else {
        regs
    }
}

fn field_of(slot: &Slot) -> Option<Field> {
    match *slot {
        Slot::Reg { field, .. } => Some(field),
        _ => None,
    }
}

/// SMEM atomics with glc set return the old value in sdata.
fn smem_returns(i: &Instruction) -> bool {
    let m = i.mnemonic();
    i.encoding == E::Smem
        && i.bits(0, 16, 1) != 0
        && (m.starts_with("s_atomic") || m.starts_with("s_buffer_atomic"))
}

/// SMEM operations with a `glc` bit: loads, stores, atomics.
fn smem_has_glc(m: &str) -> bool {
    [
        "s_load",
        "s_buffer_load",
        "s_store",
        "s_buffer_store",
        "s_scratch",
        "s_atomic",
        "s_buffer_atomic",
    ]
    .iter()
    .any(|p| m.starts_with(p))
}

/// Export target name (LLVM spells unknown ones `invalid_target_N`).
fn exp_target(t: u32, out: &mut String) {
    let (name, n) = match t {
        0..=7 => ("mrt", Some(t)),
        8 => ("mrtz", None),
        9 => ("null", None),
        12..=15 => ("pos", Some(t - 12)),
        32..=63 => ("param", Some(t - 32)),
        _ => ("invalid_target_", Some(t)),
    };
    out.push_str(name);
    if let Some(n) = n {
        num::dec(out, n as u64);
    }
}

/// `exp mrt0 v1, v2, off, off done compr vm`: with compr, the first pair of
/// enables reads vsrc0 and the second vsrc1.
fn exp(i: &Instruction, out: &mut String) {
    out.push(' ');
    exp_target(i.bits(0, 4, 6), out);
    let (en, compr) = (i.bits(0, 0, 4), i.bits(0, 10, 1) != 0);
    for k in 0..4 {
        out.push_str(if k == 0 { " " } else { ", " });
        if en & (1 << k) == 0 {
            out.push_str("off");
        } else {
            let src = if compr { k / 2 } else { k };
            vgprs(i.bits(1, 8 * src, 8), 1, File::V, out);
        }
    }
    for (bit, name) in [(11, " done"), (10, " compr"), (12, " vm")] {
        if i.bits(0, bit, 1) != 0 {
            out.push_str(name);
        }
    }
}

/// `v_interp_p1_f32_e32 v4, v8, attr3.y`; `v_interp_mov_f32_e32 v4, p10, attr3.x`.
fn vintrp(i: &Instruction, out: &mut String) {
    out.push(' ');
    vgprs(i.bits(0, 18, 8), 1, File::V, out);
    out.push_str(", ");
    let src = i.bits(0, 0, 8);
    if i.bits(0, 16, 2) == 2 {
        match src {
            0..=2 => out.push_str(["p10", "p20", "p0"][src as usize]),
            _ => {
                out.push_str("invalid_param_");
                num::dec(out, src as u64);
            }
        }
    } else {
        vgprs(src, 1, File::V, out);
    }
    out.push_str(", attr");
    num::dec(out, i.bits(0, 10, 6) as u64);
    out.push('.');
    out.push(['x', 'y', 'z', 'w'][i.bits(0, 8, 2) as usize]);
}
