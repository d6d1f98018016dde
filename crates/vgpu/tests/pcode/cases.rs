//! Test cases: one instruction each, with its operands (registers and their
//! values, constants, literals), modifiers, EXEC and MODE, written as LLVM
//! assembly (llvm-mc-19 encodes them, so the encoding is not ours).
//!
//! Which encodings, modifiers and operand kinds an opcode accepts is asked
//! of llvm-mc-19 by probes (one line per single modifier or kind); the
//! cases then cross the accepted modifiers (see [`modifier_sets`]).

use super::ops::{OpInfo, Unit};

/// First VGPR of source k (pairs for 64-bit sources) and of the result.
pub const VSRC: [u32; 3] = [10, 12, 14];
pub const VDST: u32 = 20;
/// First SGPR of source k, the scalar result, the carry-out pair, the
/// carry-in / mask pair.
pub const SSRC: [u32; 3] = [20, 22, 24];
pub const SDST: u32 = 30;
pub const SCARRY_IN: u32 = 32;
pub const VCC: u32 = 106;

/// The inline float constants in code order (240..=248) and their text.
pub const FLOAT_CONSTS: [(&str, f64); 9] = [
    ("0.5", 0.5),
    ("-0.5", -0.5),
    ("1.0", 1.0),
    ("-1.0", -1.0),
    ("2.0", 2.0),
    ("-2.0", -2.0),
    ("4.0", 4.0),
    ("-4.0", -4.0),
    ("0.15915494", 0.159_154_943_091_895_35),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Vgpr,
    Sgpr,
    Int(i32),
    /// Index into [`FLOAT_CONSTS`].
    Float(usize),
    Literal(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    E32,
    E64,
    Sdwa,
    Dpp,
    /// VOP3-only, VOP3P and scalar instructions: the bare mnemonic.
    Bare,
}

impl Form {
    pub fn suffix(self) -> &'static str {
        match self {
            Form::E32 => "_e32",
            Form::E64 => "_e64",
            Form::Sdwa => "_sdwa",
            Form::Dpp => "_dpp",
            Form::Bare => "",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sdwa {
    pub dst_sel: u8,
    pub dst_unused: u8,
    pub sel: [u8; 2],
    pub sext: [bool; 2],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dpp {
    pub ctrl: u32,
    pub row_mask: u8,
    pub bank_mask: u8,
    pub bound_ctrl: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mods {
    pub neg: u8,
    pub abs: u8,
    pub neg_hi: u8,
    pub opsel: u8,
    pub opsel_hi: u8,
    pub clamp: bool,
    pub omod: u8,
    pub sdwa: Option<Sdwa>,
    pub dpp: Option<Dpp>,
}

/// MODE's fields that change results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    /// FP_DENORM for f32 and for f64/f16: bit 0 keeps input denormals,
    /// bit 1 keeps output denormals.
    pub denorm32: u8,
    pub denorm64: u8,
    pub dx10_clamp: bool,
    pub ieee: bool,
}

impl Mode {
    pub const DEFAULT: Mode = Mode {
        denorm32: 3,
        denorm64: 3,
        dx10_clamp: true,
        ieee: true,
    };
    /// The MODE register value (round to nearest).
    pub fn bits(self) -> u32 {
        (self.denorm32 as u32) << 4
            | (self.denorm64 as u32) << 6
            | (self.dx10_clamp as u32) << 8
            | (self.ieee as u32) << 9
    }
}

#[derive(Clone, Debug)]
pub struct Case {
    pub op: usize,
    pub form: Form,
    /// Kind of each source the instruction names (S0..S2 in order).
    pub kinds: Vec<Kind>,
    /// The VGPR the result goes to (may be a source's: aliasing).
    pub vdst: u32,
    /// The SGPR (pair) of a scalar result, VOPC mask or carry-out (VCC = 106).
    pub sdst: u32,
    pub mods: Mods,
    pub mode: Mode,
    pub exec: u64,
    /// SOPK / SOPP immediate.
    pub simm: i32,
    pub text: String,
}

/// Names of SDWA selects and `dst_unused` values in LLVM syntax.
pub const SEL: [&str; 7] = [
    "BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD",
];
pub const UNUSED: [&str; 3] = ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE"];

/// Every DPP control gfx90a has (encoded values).
pub fn dpp_controls() -> Vec<u32> {
    let mut v: Vec<u32> = (0..256).collect();
    v.extend((1..16).flat_map(|n| [0x100 + n, 0x110 + n, 0x120 + n]));
    v.extend([0x130, 0x134, 0x138, 0x13c, 0x140, 0x141, 0x142, 0x143]);
    v.extend(0x150..0x160);
    v
}

/// One control of each kind (what a probe asks about).
pub const DPP_KINDS: [u32; 13] = [
    0xe4, 0x101, 0x111, 0x121, 0x130, 0x134, 0x138, 0x13c, 0x140, 0x141, 0x142, 0x143, 0x151,
];

/// The kind a control belongs to (its representative in [`DPP_KINDS`]).
pub fn dpp_kind(ctrl: u32) -> u32 {
    match ctrl {
        0..=0xff => 0xe4,
        0x101..=0x10f => 0x101,
        0x111..=0x11f => 0x111,
        0x121..=0x12f => 0x121,
        0x150..=0x15f => 0x151,
        c => c,
    }
}

/// A DPP control in LLVM syntax.
pub fn dpp_name(ctrl: u32) -> String {
    let n = ctrl & 0xf;
    match ctrl {
        0..=0xff => {
            let q: Vec<String> = (0..4).map(|k| (ctrl >> (2 * k) & 3).to_string()).collect();
            format!("quad_perm:[{}]", q.join(","))
        }
        0x101..=0x10f => format!("row_shl:{n}"),
        0x111..=0x11f => format!("row_shr:{n}"),
        0x121..=0x12f => format!("row_ror:{n}"),
        0x130 => "wave_shl:1".into(),
        0x134 => "wave_rol:1".into(),
        0x138 => "wave_shr:1".into(),
        0x13c => "wave_ror:1".into(),
        0x140 => "row_mirror".into(),
        0x141 => "row_half_mirror".into(),
        0x142 => "row_bcast:15".into(),
        0x143 => "row_bcast:31".into(),
        _ => format!("row_newbcast:{n}"),
    }
}

impl Case {
    /// The register or constant text of source `k` (with `mods` applied).
    fn src_text(&self, op: &OpInfo, k: usize) -> String {
        let w = op.src_width[k];
        let reg = |p: char, base: u32| {
            if w == 64 {
                format!("{p}[{base}:{}]", base + 1)
            } else {
                format!("{p}{base}")
            }
        };
        let agpr_src = op.mnemonic == "v_accvgpr_read_b32";
        let mut s = match self.kinds[k] {
            Kind::Vgpr if agpr_src => format!("a{}", VSRC[k]),
            Kind::Vgpr => reg('v', VSRC[k]),
            Kind::Sgpr => reg('s', SSRC[k]),
            Kind::Int(i) => i.to_string(),
            // 1/(2π) as a 64-bit operand needs the double's digits (the
            // f32 ones would be a literal, not the inline constant).
            Kind::Float(8) if w == 64 && !is_packed(op) => "0.15915494309189532".to_string(),
            Kind::Float(f) => FLOAT_CONSTS[f].0.to_string(),
            Kind::Literal(x) => format!("{x:#x}"),
        };
        let m = &self.mods;
        if m.sdwa.is_some_and(|d| d.sext[k.min(1)]) && k < 2 {
            s = format!("sext({s})");
        }
        if m.abs >> k & 1 != 0 {
            s = format!("|{s}|");
        }
        let is_const = matches!(
            self.kinds[k],
            Kind::Int(_) | Kind::Float(_) | Kind::Literal(_)
        );
        // Packed instructions say neg_lo/neg_hi instead.
        if m.neg >> k & 1 != 0 && !is_packed(op) {
            s = if is_const || s.starts_with('-') {
                format!("neg({s})")
            } else {
                format!("-{s}")
            };
        }
        s
    }

    /// The instruction's text.
    pub fn render(&mut self, op: &OpInfo) {
        let n = (0..3).filter(|&k| op.src_width[k] > 0).count();
        let mut parts: Vec<String> = Vec::new();
        let dw = op.d0_width;
        let vreg = |base: u32, w: u32| {
            if w == 64 {
                format!("v[{base}:{}]", base + 1)
            } else {
                format!("v{base}")
            }
        };
        let sreg = |code: u32, w: u32| {
            if code == VCC {
                "vcc".to_string()
            } else if w == 64 {
                format!("s[{code}:{}]", code + 1)
            } else {
                format!("s{code}")
            }
        };
        let m = op.mnemonic.as_str();
        let srcs: Vec<String> = (0..n).map(|k| self.src_text(op, k)).collect();
        match op.unit {
            Unit::Valu | Unit::Wave => {
                if op.mask_dst {
                    parts.push(sreg(self.sdst, 64));
                } else if m == "v_readlane_b32" || m == "v_readfirstlane_b32" {
                    parts.push(sreg(self.sdst, 32));
                } else if m == "v_accvgpr_write_b32" {
                    parts.push(format!("a{}", self.vdst));
                } else {
                    parts.push(vreg(self.vdst, dw.max(32)));
                }
                // VOP3b and VOP2 carry-outs name their SGPR pair (vcc in e32).
                if (op.carry_out || op.d1) && !op.mask_dst {
                    parts.push(sreg(self.sdst, 64));
                }
                parts.extend(srcs);
                // Carry-in / select mask: vcc in e32, an SGPR pair in e64;
                // v_div_fmas reads VCC implicitly.
                if op.carry_in && !m.starts_with("v_div_fmas") {
                    let code = if self.form == Form::E64 {
                        SCARRY_IN
                    } else {
                        VCC
                    };
                    parts.push(sreg(code, 64));
                }
            }
            Unit::Sop1 | Unit::Sop2 => {
                if op.d0_width > 0 {
                    parts.push(sreg(self.sdst, op.d0_width));
                }
                parts.extend(srcs);
            }
            Unit::Sopc => parts.extend(srcs),
            Unit::Sopk => {
                parts.push(sreg(self.sdst, 32));
                // Unsigned compares take the immediate as 0..=65535.
                parts.push(if m.ends_with("_u32") {
                    (self.simm as u16).to_string()
                } else {
                    self.simm.to_string()
                });
            }
            Unit::Sopp => {
                if m != "s_endpgm" {
                    parts.push(self.simm.to_string());
                }
            }
        }
        let mut t = format!("{}{} {}", m, self.form.suffix(), parts.join(", "));
        let md = &self.mods;
        if is_packed(op) {
            let bits = |v: u8| {
                (0..n)
                    .map(|k| (v >> k & 1).to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            t += &format!(
                " op_sel:[{}] op_sel_hi:[{}]",
                bits(md.opsel),
                bits(md.opsel_hi)
            );
            if m != "v_pk_mov_b32" {
                t += &format!(" neg_lo:[{}] neg_hi:[{}]", bits(md.neg), bits(md.neg_hi));
            }
        }
        if md.clamp {
            t += " clamp";
        }
        match md.omod {
            1 => t += " mul:2",
            2 => t += " mul:4",
            3 => t += " div:2",
            _ => {}
        }
        if let Some(s) = md.sdwa {
            if !op.mask_dst {
                t += &format!(
                    " dst_sel:{} dst_unused:{}",
                    SEL[s.dst_sel as usize], UNUSED[s.dst_unused as usize]
                );
            }
            t += &format!(" src0_sel:{}", SEL[s.sel[0] as usize]);
            if n > 1 {
                t += &format!(" src1_sel:{}", SEL[s.sel[1] as usize]);
            }
        }
        if let Some(d) = md.dpp {
            t += &format!(
                " {} row_mask:{:#x} bank_mask:{:#x}",
                dpp_name(d.ctrl),
                d.row_mask,
                d.bank_mask
            );
            if d.bound_ctrl {
                t += " bound_ctrl:1";
            }
        }
        self.text = t.trim_end().to_string();
    }
}

pub fn is_packed(op: &OpInfo) -> bool {
    op.mnemonic.starts_with("v_pk_")
}

/// Small deterministic generator (splitmix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
    pub fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
}

/// f32 values that find edge cases: zeros, infinities, quiet and
/// signalling NaNs with payloads, denormals, the normal extremes, values
/// near 1 and at integer and conversion limits.
pub const F32_SPECIAL: [u32; 30] = [
    0x0000_0000,
    0x8000_0000,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_0000,
    0xffc0_0000,
    0x7fa0_0000,
    0xff80_0001,
    0x7fc0_1234,
    0x7fbf_ffff,
    0x0000_0001,
    0x8000_0001,
    0x007f_ffff,
    0x807f_ffff,
    0x0040_0000,
    0x0080_0000,
    0x8080_0000,
    0x7f7f_ffff,
    0xff7f_ffff,
    0x3f80_0000,
    0xbf80_0000,
    0x3f00_0000,
    0x3f7f_ffff,
    0x3f80_0001,
    0x4b00_0000,
    0x4f80_0000,
    0x4f00_0000,
    0xcf00_0000,
    0x5f80_0000,
    0x3eff_ffff,
];

pub const F64_SPECIAL: [u64; 26] = [
    0,
    1 << 63,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0x7ff8_0000_0000_0000,
    0xfff8_0000_0000_0000,
    0x7ff4_0000_0000_0000,
    0xfff0_0000_0000_0001,
    0x7ff8_0000_0001_2345,
    1,
    (1 << 63) | 1,
    0x000f_ffff_ffff_ffff,
    0x0008_0000_0000_0000,
    0x0010_0000_0000_0000,
    0x8010_0000_0000_0000,
    0x7fef_ffff_ffff_ffff,
    0xffef_ffff_ffff_ffff,
    0x3ff0_0000_0000_0000,
    0xbff0_0000_0000_0000,
    0x3fe0_0000_0000_0000,
    0x3fef_ffff_ffff_ffff,
    0x3ff0_0000_0000_0001,
    0x41e0_0000_0000_0000,
    0xc1e0_0000_0000_0000,
    0x41f0_0000_0000_0000,
    0x4330_0000_0000_0000,
];

pub const INT_SPECIAL: [u32; 14] = [
    0,
    1,
    u32::MAX,
    0x7fff_ffff,
    0x8000_0000,
    0xffff,
    0x1_0000,
    0x8000,
    0xff,
    0x80,
    0x7f,
    0x00ff_ffff,
    0x0080_0000,
    0xff80_0000,
];

/// A value for a source read as `width` bits, `float` or integer.
pub fn value(r: &mut Rng, width: u32, float: bool) -> u64 {
    let wide = width == 64;
    match (float, r.below(8)) {
        (true, 0..=2) if wide => r.pick(&F64_SPECIAL),
        (true, 0..=2) => r.pick(&F32_SPECIAL) as u64,
        (true, 3..=5) if wide => {
            // A normal number with an exponent anywhere in range.
            let e = r.below(2046) + 1;
            (r.next() & 1 << 63) | e << 52 | (r.next() & ((1 << 52) - 1))
        }
        (true, 3..=5) => {
            // Mostly moderate exponents, where results stay normal.
            let e = if r.chance(3) {
                r.below(254) + 1
            } else {
                r.below(60) + 97
            };
            (r.next() & 1 << 31) | e << 23 | (r.next() & ((1 << 23) - 1))
        }
        (false, 0..=2) => {
            let v = r.pick(&INT_SPECIAL) as u64;
            if wide {
                v | (r.pick(&INT_SPECIAL) as u64) << 32
            } else {
                v
            }
        }
        (false, 3) => r.below(70),
        (false, 4) => (r.below(2400) as i64 - 1200) as u64,
        _ => {
            if wide {
                r.next()
            } else {
                r.next() & 0xffff_ffff
            }
        }
    }
}

/// An EXEC mask: all lanes (the usual case), random, or a few lanes.
pub fn exec_mask(r: &mut Rng, sparse: bool) -> u64 {
    match r.below(if sparse { 3 } else { 4 }) {
        0 if !sparse => u64::MAX,
        1 | 2 if !sparse => r.next(),
        _ => r.next() & r.next() & r.next() | 1 << r.below(64),
    }
}

/// A MODE: the descriptor's usual one most of the time.
pub fn mode(r: &mut Rng) -> Mode {
    if r.chance(2) {
        return Mode::DEFAULT;
    }
    Mode {
        denorm32: r.pick(&[0, 3, 3, 1, 2]),
        denorm64: r.pick(&[3, 3, 3, 0]),
        dx10_clamp: r.chance(3) || r.chance(2),
        ieee: !r.chance(3),
    }
}

/// The modifier sets of one form: the cross product of those llvm-mc
/// accepts (`allowed`), sampled down to `cap` combinations where larger.
pub struct Allowed {
    pub neg: u8,
    pub abs: u8,
    pub neg_hi: u8,
    pub opsel: u8,
    pub opsel_hi: u8,
    pub clamp: bool,
    pub omod: bool,
    pub sext: u8,
}

/// All subsets of the bits in `m`.
fn subsets(m: u8) -> Vec<u8> {
    (0..=m).filter(|s| s & !m == 0).collect()
}

pub fn modifier_sets(a: &Allowed) -> Vec<Mods> {
    let mut out = vec![Mods::default()];
    let cross = |out: Vec<Mods>, vals: Vec<u8>, set: &dyn Fn(&mut Mods, u8)| -> Vec<Mods> {
        let mut n = Vec::with_capacity(out.len() * vals.len());
        for m in &out {
            for &v in &vals {
                let mut x = *m;
                set(&mut x, v);
                n.push(x);
            }
        }
        n
    };
    out = cross(out, subsets(a.neg), &|m, v| m.neg = v);
    out = cross(out, subsets(a.abs), &|m, v| m.abs = v);
    out = cross(out, subsets(a.neg_hi), &|m, v| m.neg_hi = v);
    out = cross(out, subsets(a.opsel), &|m, v| m.opsel = v);
    out = cross(out, subsets(a.opsel_hi), &|m, v| m.opsel_hi = v);
    if a.clamp {
        out = cross(out, vec![0, 1], &|m, v| m.clamp = v != 0);
    }
    if a.omod {
        out = cross(out, vec![0, 1, 2, 3], &|m, v| m.omod = v);
    }
    out
}
