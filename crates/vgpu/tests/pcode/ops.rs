//! What the oracle needs to know about an opcode: its pseudo-code and the
//! shape of its operands, read from the pseudo-code itself (which sources
//! it reads and at what widths, whether it reads or writes VCC, D0, D1,
//! EXEC, SCC, PC) plus the encoding facts the text does not state (which
//! instructions are wave-level, which take VCC implicitly).

use std::collections::HashMap;

/// Instructions the pseudo-code table lacks (the CDNA4 text has no
/// `v_mac_f32`, `v_mad_f32` or ACCVGPR moves, which gfx90a has), written
/// from the gfx90a (MI200) ISA document's descriptions in the table's own
/// idiom (`V_MAC_F16` is written `S0 * S1 + D0`: an unfused multiply-add).
pub const SUPPLEMENT: [(&str, &str); 4] = [
    ("V_MAC_F32_E32", "D0.f32 = S0.f32 * S1.f32 + D0.f32"),
    ("V_MAD_F32", "D0.f32 = S0.f32 * S1.f32 + S2.f32"),
    ("V_ACCVGPR_READ_B32", "D0.b32 = S0.b32"),
    ("V_ACCVGPR_WRITE_B32", "D0.b32 = S0.b32"),
];

/// Corrections to the document's text, each with the reason and the
/// independent evidence. Each `from` must occur in the pinned text (the
/// test fails otherwise, so a changed text is noticed); every occurrence
/// is replaced.
pub struct Erratum {
    pub op: &'static str,
    pub from: &'static str,
    pub to: &'static str,
    pub why: &'static str,
}

pub const ERRATA: [Erratum; 9] = [
    Erratum {
        op: "V_DIV_FIXUP_F64_E64",
        from: "elsif exponent(S1.f64) == 2047 then",
        to: "elsif exponent(S0.f64) == 2047 then",
        why: "S1 infinite or NaN was handled above, so the test as written can \
              never hold; of S0 (the quotient estimate) it gives the overflowed \
              quotient its infinity: 1e308 / 1e-300 through clang's f64 division \
              (whose scaled Newton steps give inf - inf) is +inf only this way \
              (tests/isa_ops.rs f64_division_sequence, against host division)",
    },
    Erratum {
        op: "V_DIV_FIXUP_F32_E64",
        from: "elsif exponent(S1.f32) == 255 then",
        to: "elsif exponent(S0.f32) == 255 then",
        why: "as for V_DIV_FIXUP_F64 (tests/isa_ops.rs f32_division_with_rescaling)",
    },
    Erratum {
        op: "V_DIV_SCALE_F64",
        from: "elsif ((1.0 / S1.f64 == DENORM.f64) && (S2.f64 / S1.f64 == DENORM.f64)) then\nVCC = 0x1LL;\nif S0.f64 == S1.f64 then\n// Only scale the denominator\nD0.f64 = ldexp(S0.f64, 128)",
        to: "elsif ((1.0 / S1.f64 == DENORM.f64) && (S2.f64 / S1.f64 == DENORM.f64)) then\nVCC = 0x1LL;\nif S0.f64 == S1.f64 then\n// Only scale the denominator\nD0.f64 = ldexp(S0.f64, -128)",
        why: "a denominator whose reciprocal and quotient are denormal is huge: \
              scaling it up by 2^128 overflows to infinity and the quotient to 0; \
              scaled down the division comes out right (tests/isa_ops.rs \
              f64_division_sequence, 0.5 / 1.5e308 and 1e-10 / 1.7e308, against \
              host division, fail with the document's 2^+128)",
    },
    Erratum {
        op: "V_DIV_SCALE_F32",
        from: "D0.f32 = ldexp(S0.f32, 64)\nendif\nelsif 1.0 / 64'F(S1.f32)",
        to: "D0.f32 = ldexp(S0.f32, -64)\nendif\nelsif 1.0 / 64'F(S1.f32)",
        why: "as for V_DIV_SCALE_F64 (tests/isa_ops.rs f32_division_with_rescaling \
              fails with the document's 2^+64)",
    },
    Erratum {
        op: "V_DIV_SCALE_F32",
        from: "VCC = 0x0LL;",
        to: "VCC = 0x0LL;\nD0.f32 = S0.f32;",
        why: "where no case scales, the text leaves D0 unassigned; the result is \
              S0 unscaled (clang's f32 division feeds it to v_rcp and v_fma: with \
              any other value ordinary quotients would be wrong, and tests/opcodes.rs \
              FDIV checks them against host division)",
    },
    Erratum {
        op: "V_DIV_SCALE_F64",
        from: "VCC = 0x0LL;",
        to: "VCC = 0x0LL;\nD0.f64 = S0.f64;",
        why: "as for V_DIV_SCALE_F32 (tests/isa_ops.rs f64 division)",
    },
    Erratum {
        op: "V_DIV_FMAS_F32_E64",
        from: "2.0F ** 32 * fma(S0.f32, S1.f32, S2.f32)",
        to: "fma_scaled(S0.f32, S1.f32, S2.f32, exponent(S2.f32) > 126 ? 64 : -64)",
        why: "v_div_scale_f32 scales by 2^64, so v_div_fmas must undo 2^±64 (2^32 \
              cannot restore the quotient), rounding once; clang's f32 division \
              (div_scale, rcp, fma steps, div_fmas, div_fixup) gives the IEEE \
              quotient for the rescaled cases only this way (tests/opcodes.rs FDIV, \
              tests/isa_ops.rs f32 division, against host division)",
    },
    Erratum {
        op: "V_DIV_FMAS_F64_E64",
        from: "2.0 ** 64 * fma(S0.f64, S1.f64, S2.f64)",
        to: "fma_scaled(S0.f64, S1.f64, S2.f64, exponent(S2.f64) > 1022 ? 128 : -128)",
        why: "v_div_scale_f64 scales by 2^128, so v_div_fmas must undo 2^±128, \
              rounding once; checked end to end by tests/isa_ops.rs f64 division \
              against host division",
    },
    Erratum {
        op: "V_DIV_SCALE_F32",
        from: "1.0 / 64'F(S1.f32) == DENORM.f64",
        to: "1.0F / S1.f32 == DENORM.f32",
        why: "the f32 form tests whether 1/S1 is an f32 denormal (as an f64 it never \
              is, so the case could never apply); the f32 division tests with huge \
              denominators (tests/isa_ops.rs) need it",
    },
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Per-lane vector ALU.
    Valu,
    /// Vector ALU reading or writing single lanes (readlane, writelane).
    Wave,
    Sop1,
    Sop2,
    Sopc,
    Sopk,
    Sopp,
}

#[derive(Clone, Debug)]
pub struct OpInfo {
    pub mnemonic: String,
    /// Key of its pseudo-code in the table.
    pub key: String,
    pub unit: Unit,
    /// Width of S0, S1, S2 (0: not read) and whether each is read as a float.
    pub src_width: [u32; 3],
    pub src_float: [bool; 3],
    /// Width of D0 as a register result (0: none).
    pub d0_width: u32,
    /// D0 is a lane mask (VOPC), VCC is written (carry-out), D1 is written.
    pub mask_dst: bool,
    pub carry_out: bool,
    pub d1: bool,
    /// VCC is read per lane (carry-in, cndmask, div_fmas).
    pub carry_in: bool,
    pub writes_exec: bool,
    pub writes_scc: bool,
    /// Control flow: the text assigns PC.
    pub writes_pc: bool,
    /// D0 is read as a float (the accumulator of fmac, mac): an input.
    pub reads_d0_float: bool,
    /// The result is a float (output modifiers apply).
    pub float_result: bool,
    /// v_mad_f32 and v_mac_f32 flush denormals whatever MODE says (LLVM
    /// selects them only when f32 denormals are flushed: "v_mad_f32/v_mac_f32
    /// do not support denormals", SIISelLowering).
    pub flush_always: bool,
}

fn widths(text: &str, var: &str) -> (u32, bool) {
    let mut w = 0;
    let mut float = false;
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(p) = text[i..].find(var) {
        let at = i + p;
        i = at + var.len();
        // A whole name: not the tail of another identifier.
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let rest = &text[i..];
        if let Some(t) = rest.strip_prefix('.') {
            let k = t.chars().next().unwrap_or(' ');
            let digits: String = t[1..].chars().take_while(|c| c.is_ascii_digit()).collect();
            if let (true, Ok(n)) = ("uibf".contains(k), digits.parse::<u32>()) {
                w = w.max(n.min(64));
                float |= k == 'f';
            }
        } else if let Some(t) = rest.strip_prefix('[') {
            let digits: String = t.chars().take_while(|c| c.is_ascii_digit()).collect();
            if let Ok(n) = digits.parse::<u32>() {
                w = w.max(if n >= 32 { 64 } else { 32 });
            }
        } else if !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            w = w.max(32);
        }
    }
    (w, float)
}

/// Whether a line of `text` assigns to `var` (`SCC = …`, `EXEC.u64 = …`).
fn writes(text: &str, var: &str) -> bool {
    text.lines()
        .any(|l| l.trim_start().starts_with(var) && l.contains(" = "))
}

impl OpInfo {
    /// `kind` is the table's kind of `key` (`SOP1Op`, `VOP2Op`...).
    pub fn new(mnemonic: &str, key: &str, kind: &str, text: &str) -> OpInfo {
        let m = mnemonic;
        let unit = if m.starts_with("v_readlane")
            || m.starts_with("v_readfirstlane")
            || m.starts_with("v_writelane")
        {
            Unit::Wave
        } else if m.starts_with("v_") {
            Unit::Valu
        } else {
            match kind {
                "SOP1Op" => Unit::Sop1,
                "SOPCOp" => Unit::Sopc,
                "SOPKOp" => Unit::Sopk,
                "SOPPOp" => Unit::Sopp,
                _ => Unit::Sop2,
            }
        };
        let key = key.to_string();
        let mut src_width = [0; 3];
        let mut src_float = [false; 3];
        for k in 0..3 {
            (src_width[k], src_float[k]) = widths(text, &format!("S{k}"));
        }
        let packed = m.starts_with("v_pk_");
        if packed {
            for k in 0..3 {
                if src_width[k] > 0 {
                    src_width[k] = 64;
                }
            }
        }
        let (mut d0_width, d0_float) = widths(text, "D0");
        let mask_dst = m.starts_with("v_cmp");
        if mask_dst {
            d0_width = 64;
        }
        if packed {
            d0_width = 64;
        }
        let carry_out = text.contains("VCC.u64[laneId] =") || text.contains("VCC = 0x");
        let d1 = text.contains("D1.");
        // Read, not only written: a line that mentions it besides as its target.
        let carry_in = text.lines().any(|l| {
            let n = l.matches("VCC.u64[laneId]").count();
            n > 1 || (n == 1 && !l.trim_start().starts_with("VCC.u64[laneId] ="))
        });
        OpInfo {
            mnemonic: m.to_string(),
            key,
            unit,
            src_width,
            src_float,
            d0_width,
            mask_dst,
            carry_out,
            d1,
            carry_in,
            writes_exec: writes(text, "EXEC"),
            writes_scc: writes(text, "SCC"),
            writes_pc: writes(text, "PC"),
            reads_d0_float: text
                .lines()
                .any(|l| l.split_once(" = ").is_some_and(|(_, r)| r.contains("D0.f"))),
            float_result: d0_float && !mask_dst,
            flush_always: matches!(m, "v_mad_f32" | "v_mac_f32"),
        }
    }
}

/// The pseudo-code key of a mnemonic: the table has `NAME`, `NAME_E32` or
/// `NAME_E64` (VOP1/VOP2/VOPC forms, VOP3-only forms); the VOP1/VOP2/VOPC
/// text is the one that describes the operation in every encoding.
pub fn key_of(texts: &HashMap<String, String>, mnemonic: &str) -> Option<String> {
    let n = mnemonic.to_ascii_uppercase();
    [format!("{n}_E32"), n.clone(), format!("{n}_E64")]
        .into_iter()
        .find(|k| texts.contains_key(k))
}
