//! The expected effect of one case: the pseudo-code evaluated lane by lane
//! on the operands as the instruction's encoding presents them.
//!
//! The pseudo-code describes the operation only. What happens around it is
//! implemented here from the gfx90a ISA document's prose, as cited at each
//! step: operand selection (DPP lanes and masks, SDWA selects, VOP3P
//! op_sel), input modifiers (abs, then neg), MODE's denormal flushing,
//! output modifiers (omod, clamp), SDWA destination selects, and EXEC.

use super::cases::{Case, Form, Kind, Mode, FLOAT_CONSTS, SCARRY_IN, SSRC, VCC, VSRC};
use super::eval::{Ctx, Table};
use super::ops::{OpInfo, Unit};
use super::parse::Stmt;
use super::value::{is_subnormal, mask, Ty, Val};

/// Registers a case can touch: v0..v31, a0..a31, the whole scalar file.
pub const NV: usize = 32;

#[derive(Clone, PartialEq, Eq)]
pub struct State {
    pub v: Vec<[u32; 64]>,
    pub a: Vec<[u32; 64]>,
    pub s: [u32; 128],
    pub scc: bool,
}

impl State {
    pub fn exec(&self) -> u64 {
        self.s[126] as u64 | (self.s[127] as u64) << 32
    }
    pub fn sreg64(&self, c: u32) -> u64 {
        self.s[c as usize] as u64 | (self.s[c as usize + 1] as u64) << 32
    }
    fn set_s64(&mut self, c: u32, v: u64) {
        self.s[c as usize] = v as u32;
        self.s[c as usize + 1] = (v >> 32) as u32;
    }
}

/// A result location whose value the document leaves open within limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loose {
    /// Lane `lane` of VGPR `reg` (and `reg + 1` when `width` is 64) holds
    /// some NaN of that width: the document does not say which.
    Nan { reg: u32, lane: usize, width: u32 },
    /// Lane `lane` of VGPR `reg`.. holds a value the document does not
    /// determine at all (see where it is produced).
    Any { reg: u32, lane: usize, width: u32 },
    /// A zero of either sign: clamp of -0 (the document says "clamp to
    /// [0.0, 1.0]"; LLVM treats clamp as max(x, 0) then min(.., 1.0), whose
    /// zero sign IEEE leaves open).
    Zero { reg: u32, lane: usize, width: u32 },
}

pub struct Expected {
    pub state: State,
    pub loose: Vec<Loose>,
    /// Address execution continues at (scalar control flow).
    pub next_pc: Option<u64>,
}

/// The inputs of one lane's evaluation, raw (before modifiers).
fn raw_source(op: &OpInfo, c: &Case, init: &State, k: usize, lane: usize) -> u64 {
    let w = op.src_width[k];
    match c.kinds[k] {
        Kind::Vgpr if op.mnemonic == "v_accvgpr_read_b32" => init.a[VSRC[k] as usize][lane] as u64,
        Kind::Vgpr => {
            let r = VSRC[k] as usize;
            let lo = init.v[r][lane] as u64;
            if w == 64 {
                lo | (init.v[r + 1][lane] as u64) << 32
            } else {
                lo
            }
        }
        Kind::Sgpr => {
            if w == 64 {
                init.sreg64(SSRC[k])
            } else {
                init.s[SSRC[k] as usize] as u64
            }
        }
        // Integer inline constants are the integer's bits, sign-extended to
        // 64-bit operands; float ones are the constant in the operand's
        // precision (ISA document, "Inline constants").
        Kind::Int(i) => i as i64 as u64 & mask(w.max(32)) as u64,
        Kind::Float(f) => {
            let x = FLOAT_CONSTS[f].1;
            // 1/(2π) is a fixed bit pattern in each precision.
            let inv2pi = f == 8;
            if w == 64 && !is_packed_src(op) {
                if inv2pi {
                    0x3fc4_5f30_6dc9_c882
                } else {
                    x.to_bits()
                }
            } else if inv2pi {
                0x3e22_f983
            } else {
                (x as f32).to_bits() as u64
            }
        }
        // A 32-bit literal: an f64 operand's high half (its low half zero),
        // other 64-bit operands zero-extended (the cases use literals below
        // 2^31 there, where sign- and zero-extension agree).
        Kind::Literal(x) if w == 64 && op.src_float[k] => (x as u64) << 32,
        Kind::Literal(x) => x as u64,
    }
}

fn is_packed_src(op: &OpInfo) -> bool {
    op.mnemonic.starts_with("v_pk_")
}

/// SDWA operand select: a byte or word, zero- or sign-extended, or the
/// dword (ISA document, "SDWA").
fn sdwa_select(v: u32, sel: u8, sext: bool) -> u32 {
    let (shift, bits) = match sel {
        0..=3 => (8 * sel as u32, 8),
        4 | 5 => (16 * (sel as u32 - 4), 16),
        _ => return v,
    };
    let f = v >> shift & ((1 << bits) - 1);
    if sext && f >> (bits - 1) & 1 != 0 {
        f | !((1u32 << bits) - 1)
    } else {
        f
    }
}

/// SDWA destination select: the result's low bits into the byte or word;
/// the other bits zero (UNUSED_PAD), the field's sign above it and zero
/// below (UNUSED_SEXT), or the register's old bits (UNUSED_PRESERVE).
fn sdwa_place(old: u32, r: u32, sel: u8, unused: u8) -> u32 {
    let (shift, bits) = match sel {
        0..=3 => (8 * sel as u32, 8),
        4 | 5 => (16 * (sel as u32 - 4), 16),
        _ => return r,
    };
    let m = ((1u32 << bits) - 1) << shift;
    let placed = r << shift & m;
    match unused {
        1 if placed >> (shift + bits - 1) & 1 != 0 && shift + bits < 32 => {
            placed | u32::MAX << (shift + bits)
        }
        2 => old & !m | placed,
        _ => placed,
    }
}

/// For every lane, the lane whose src0 DPP control `ctrl` hands it (None:
/// the data would come from outside the row or the wave).
///
/// Written as the ISA document describes the controls, as data moving
/// through the wave: start with each lane holding its own value, then
/// shift, rotate, mirror or broadcast whole rows (16 lanes), half rows,
/// quads or the whole wave, and read off where each value ended up. (The
/// virtual GPU computes a source index per lane instead; two forms, so
/// that a slip in one shows as a disagreement.)
///
/// - quad_perm (0x00..0xff): lane i of each quad takes the quad's lane
///   ctrl[2i+1:2i].
/// - row_shl:n / row_shr:n (0x101.., 0x111..): the row's data moves n lanes
///   towards lane 0 / towards lane 15; lanes it leaves behind have none.
/// - row_ror:n (0x121..): the row's data rotates n lanes towards lane 15.
/// - wave_shl:1, wave_rol:1, wave_shr:1, wave_ror:1 (0x130, 0x134, 0x138,
///   0x13c): the same by one lane over all 64.
/// - row_mirror (0x140), row_half_mirror (0x141): each row, or each half
///   row of 8, reversed.
/// - row_bcast:15 (0x142): the last lane of each row goes to every lane of
///   the next row (row 0 has no source).
/// - row_bcast:31 (0x143): lane 31 goes to every lane of rows 2 and 3.
/// - row_newbcast:n (gfx90a, 0x150..0x15f): lane n of each row to the row.
pub fn dpp_sources(ctrl: u32) -> [Option<usize>; 64] {
    let mut wave: [Option<usize>; 64] = std::array::from_fn(Some);
    let n = (ctrl & 0xf) as usize;
    // Moves the values of `lanes` `by` lanes towards lane 0 (negative:
    // towards the top), leaving nothing where no value arrives.
    fn shift(lanes: &mut [Option<usize>], by: isize) {
        let len = lanes.len();
        let k = by.unsigned_abs();
        if by > 0 {
            lanes.rotate_left(k);
            lanes[len - k..].fill(None);
        } else {
            lanes.rotate_right(k);
            lanes[..k].fill(None);
        }
    }
    match ctrl {
        0x00..=0xff => {
            for quad in wave.chunks_mut(4) {
                let own = [quad[0], quad[1], quad[2], quad[3]];
                for (i, lane) in quad.iter_mut().enumerate() {
                    *lane = own[(ctrl >> (2 * i) & 3) as usize];
                }
            }
        }
        0x101..=0x10f => wave.chunks_mut(16).for_each(|r| shift(r, n as isize)),
        0x111..=0x11f => wave.chunks_mut(16).for_each(|r| shift(r, -(n as isize))),
        0x121..=0x12f => wave.chunks_mut(16).for_each(|r| r.rotate_right(n)),
        0x130 => shift(&mut wave, 1),
        0x134 => wave.rotate_left(1),
        0x138 => shift(&mut wave, -1),
        0x13c => wave.rotate_right(1),
        0x140 => wave.chunks_mut(16).for_each(|r| r.reverse()),
        0x141 => wave.chunks_mut(8).for_each(|h| h.reverse()),
        0x142 => {
            let last: Vec<Option<usize>> = wave.chunks(16).map(|r| r[15]).collect();
            for (row, r) in wave.chunks_mut(16).enumerate() {
                r.fill(if row == 0 { None } else { last[row - 1] });
            }
        }
        0x143 => {
            let lane31 = wave[31];
            wave[..32].fill(None);
            wave[32..].fill(lane31);
        }
        0x150..=0x15f => wave.chunks_mut(16).for_each(|r| r.fill(r[n])),
        _ => wave.fill(None),
    }
    wave
}

/// A denormal becomes a zero of the same sign (the hardware's flush keeps
/// the sign: LLVM models AMDGPU's flush mode as "preserve-sign").
fn flush(bits: u64, w: u32) -> u64 {
    let v = Val::new(bits as u128, Ty::F(w));
    if is_subnormal(&v) {
        bits & 1 << (w - 1)
    } else {
        bits
    }
}

/// MODE's denormal control for a float width: (keep input, keep output).
fn denorm(mode: Mode, w: u32, always_flush: bool) -> (bool, bool) {
    if always_flush {
        return (false, false);
    }
    let d = if w == 32 {
        mode.denorm32
    } else {
        mode.denorm64
    };
    (d & 1 != 0, d & 2 != 0)
}

/// abs then neg on a float of width `w` (ISA document, "Input modifiers":
/// abs is applied before neg).
fn in_mods(bits: u64, w: u32, abs: bool, neg: bool) -> u64 {
    let sign = 1u64 << (w - 1);
    let mut b = bits;
    if abs {
        b &= !sign;
    }
    if neg {
        b ^= sign;
    }
    b
}

/// Output modifiers of a float result, in the document's order: omod, then
/// clamp, then the output denormal flush. "Output modifiers are ignored if
/// the IEEE mode bit is set" and "are not compatible with output denormals:
/// if output denormals are enabled, then output modifiers are ignored";
/// they flush -0 to +0. Clamp limits to [0.0, 1.0] (a negative value
/// becomes +0; which zero a clamped -0 gives is open: see Loose::Zero); a
/// NaN clamps to 0 with DX10_CLAMP, else passes through.
fn out_mods(v: Val, w: u32, omod: u8, clamp: bool, mode: Mode, keep_out: bool) -> Val {
    let mut v = v;
    if omod != 0 && !mode.ieee && !keep_out {
        let f = v.f64();
        let r = match omod {
            1 => f * 2.0,
            2 => f * 4.0,
            _ => f * 0.5,
        };
        v = Val {
            any_nan: v.any_nan || r.is_nan() && !v.is_nan(),
            ..Val::float(r, w)
        };
        if v.f64() == 0.0 {
            // -0 becomes +0 (after rounding to the result's precision).
            v = Val::float(0.0, w);
        }
        if f.is_nan() {
            v.any_nan = true;
        }
    }
    if clamp {
        let f = v.f64();
        v = if f.is_nan() {
            if mode.dx10_clamp {
                Val::float(0.0, w)
            } else {
                v
            }
        } else if f < 0.0 {
            Val::float(0.0, w)
        } else if f >= 1.0 {
            Val::float(1.0, w)
        } else {
            v
        };
    }
    if !keep_out && !v.is_nan() {
        v = Val {
            bits: flush(v.bits as u64, w) as u128,
            ..v
        };
    }
    v
}

/// Integer clamp (VOP3 `clamp` on integer operations): the result
/// saturates to the destination type's range (ISA document, "clamp").
/// With a carry or overflow bit, it says which way; otherwise the
/// operation's one expression is evaluated without wrapping.
fn int_clamp(
    op: &OpInfo,
    body: &[Stmt],
    ctx: &mut Ctx,
    d0: Val,
    d0_in: Val,
    carry: bool,
) -> Result<Val, String> {
    let m = op.mnemonic.as_str();
    if op.d1 {
        let d1 = ctx.get("D1").map_or(0, |v| v.bits);
        let signed = m.contains("_i64");
        let (lo, hi) = if signed {
            (1u128 << 63, (1u128 << 63) - 1)
        } else {
            (0, u64::MAX as u128)
        };
        let overflow = if signed { d1 != d0.bits >> 63 } else { d1 != 0 };
        return Ok(if !overflow {
            d0
        } else if signed && d1 != 0 {
            Val::new(lo, d0.ty)
        } else {
            Val::new(hi, d0.ty)
        });
    }
    if op.carry_out {
        if !carry {
            return Ok(d0);
        }
        let add = m.contains("add");
        return Ok(Val::new(if add { u128::MAX } else { 0 }, d0.ty));
    }
    // Otherwise the operation again without wrapping; the value it gives
    // D0 saturated into D0's type (a result written bit by bit, like
    // v_bfrev's, cannot overflow and stays).
    ctx.set("D0", d0_in);
    ctx.exact = true;
    ctx.exact_d0 = None;
    ctx.run(body)?;
    ctx.exact = false;
    let Some((exact, ty)) = ctx.exact_d0 else {
        return Ok(d0);
    };
    let w = ty.width();
    let (lo, hi) = if ty.signed() {
        (-(1i128 << (w - 1)), (1i128 << (w - 1)) - 1)
    } else {
        (0, (1i128 << w) - 1)
    };
    Ok(Val::new(exact.clamp(lo, hi) as u128, ty))
}

pub struct Oracle<'a> {
    pub table: &'a Table,
}

impl Oracle<'_> {
    /// The state after `c` runs at address `pc` from `init`.
    pub fn expect(
        &self,
        op: &OpInfo,
        body: &[Stmt],
        c: &Case,
        init: &State,
        pc: u64,
    ) -> Result<Expected, String> {
        match op.unit {
            Unit::Valu => self.valu(op, body, c, init),
            _ => self.once(op, body, c, init, pc),
        }
    }

    fn valu(&self, op: &OpInfo, body: &[Stmt], c: &Case, init: &State) -> Result<Expected, String> {
        let vgpr = |l: u32, r: u32| init.v[r as usize % NV][l as usize % 64];
        let mut ex = Expected {
            state: init.clone(),
            loose: Vec::new(),
            next_pc: None,
        };
        let exec = init.exec();
        let m = &c.mods;
        let nsrc = (0..3).filter(|&k| op.src_width[k] > 0).count();
        // Mask results (VOPC, carry-outs): inactive lanes read 0.
        let mut mask_out = 0u64;
        let packed = is_packed_src(op);
        let class = op.mnemonic.starts_with("v_cmp_class");
        // Which register holds VCC's role: carry-in mask and mask result.
        let carry_in_reg = if c.form == Form::E64 && !op.mnemonic.starts_with("v_div_fmas") {
            SCARRY_IN
        } else {
            VCC
        };
        let vcc_in = init.sreg64(carry_in_reg);
        let dpp_src = m.dpp.map_or([None; 64], |d| dpp_sources(d.ctrl));
        for l in 0..64usize {
            if exec >> l & 1 == 0 {
                continue;
            }
            // DPP: src0 from another lane; masked rows and banks, and
            // (without bound_ctrl) out-of-range or disabled source lanes,
            // leave the lane unwritten.
            let mut src0_lane = l;
            let mut src0_zero = false;
            if let Some(d) = m.dpp {
                if d.row_mask >> (l / 16) & 1 == 0 || d.bank_mask >> (l % 16 / 4) & 1 == 0 {
                    continue;
                }
                match dpp_src[l] {
                    Some(f) if exec >> f & 1 != 0 => src0_lane = f,
                    _ if d.bound_ctrl => src0_zero = true,
                    _ => continue,
                }
            }
            let mut ctx = Ctx::new(self.table, &vgpr);
            ctx.ieee = c.mode.ieee;
            ctx.lane = Some(l as u32);
            let mut sources = [0u64; 3];
            for k in 0..nsrc {
                let lane = if k == 0 { src0_lane } else { l };
                let mut v = raw_source(op, c, init, k, lane);
                if k == 0 && src0_zero {
                    v = 0;
                }
                if let Some(s) = m.sdwa {
                    if k < 2 {
                        v = sdwa_select(v as u32, s.sel[k], s.sext[k]) as u64;
                    }
                }
                sources[k] = v;
            }
            if packed {
                self.bind_packed(op, c, &mut ctx, &sources);
            } else {
                for k in 0..nsrc {
                    let w = op.src_width[k];
                    let mut v = sources[k];
                    if op.src_float[k] {
                        v = in_mods(v, w, m.abs >> k & 1 != 0, m.neg >> k & 1 != 0);
                        let (keep_in, _) = denorm(c.mode, w, op.flush_always);
                        if !keep_in && !class {
                            v = flush(v, w);
                        }
                    }
                    ctx.set(&format!("S{k}"), Val::new(v as u128, Ty::B(w)));
                }
            }
            let dw = op.d0_width.max(32);
            let old = |r: u32| {
                let lo = init.v[r as usize][l] as u64;
                if dw == 64 {
                    lo | (init.v[r as usize + 1][l] as u64) << 32
                } else {
                    lo
                }
            };
            let mut d0_old = if op.mnemonic == "v_accvgpr_write_b32" {
                init.a[c.vdst as usize][l] as u64
            } else if op.mask_dst {
                0
            } else {
                old(c.vdst)
            };
            // An accumulator read from D0 is a float input like the sources.
            if op.reads_d0_float {
                let (keep_in, _) = denorm(c.mode, dw, op.flush_always);
                if !keep_in {
                    d0_old = flush(d0_old, dw);
                }
            }
            ctx.set("D0", Val::new(d0_old as u128, Ty::B(dw)));
            ctx.set("VCC", Val::uint(vcc_in as u128, 64));
            ctx.set("EXEC", Val::uint(exec as u128, 64));
            ctx.set("laneId", Val::uint(l as u128, 32));
            ctx.set("OPSEL", Val::uint(m.opsel as u128, 3));
            ctx.run(body)?;
            let d0 = ctx.get("D0").ok_or("no D0")?;
            let carry = ctx.get("VCC").map_or(0, |v| v.bits >> l & 1) != 0;
            if op.mask_dst {
                mask_out |= ((d0.bits >> l & 1) as u64) << l;
                continue;
            }
            if op.carry_out || op.d1 {
                let bit = if op.d1 {
                    ctx.get("D1").map_or(0, |v| v.bits & 1) != 0
                } else {
                    carry
                };
                mask_out |= (bit as u64) << l;
            }
            let mut d0 = d0;
            if m.clamp && !op.float_result {
                d0 = int_clamp(
                    op,
                    body,
                    &mut ctx,
                    d0,
                    Val::new(d0_old as u128, Ty::B(dw)),
                    carry,
                )?;
            }
            if op.float_result && !packed {
                let w = op.d0_width;
                let (_, keep_out) = denorm(c.mode, w, op.flush_always);
                d0 = out_mods(d0, w, m.omod, m.clamp, c.mode, keep_out);
            }
            if packed && op.mnemonic != "v_pk_mov_b32" {
                // Each half: clamp and the output flush (VOP3P has no omod).
                let (_, keep_out) = denorm(c.mode, 32, false);
                let half = |h: u128| Val {
                    any_nan: d0.any_nan,
                    ..Val::new(h, Ty::F(32))
                };
                let lo = out_mods(half(d0.bits), 32, 0, m.clamp, c.mode, keep_out);
                let hi = out_mods(half(d0.bits >> 32), 32, 0, m.clamp, c.mode, keep_out);
                for (h, v) in [lo, hi].iter().enumerate() {
                    if m.clamp && v.f64() == 0.0 {
                        ex.loose.push(Loose::Zero {
                            reg: c.vdst + h as u32,
                            lane: l,
                            width: 32,
                        });
                    }
                }
                d0 = Val {
                    bits: lo.bits | hi.bits << 32,
                    any_nan: lo.any_nan || hi.any_nan,
                    ..d0
                };
            }
            let mut bits = d0.bits as u64 & mask(op.d0_width.max(1)) as u64;
            if let Some(s) = m.sdwa {
                bits = sdwa_place(old(c.vdst) as u32, bits as u32, s.dst_sel, s.dst_unused) as u64;
                if d0.any_nan && s.dst_sel != 6 {
                    ex.loose.push(Loose::Any {
                        reg: c.vdst,
                        lane: l,
                        width: 32,
                    });
                }
            }
            if op.mnemonic == "v_accvgpr_write_b32" {
                ex.state.a[c.vdst as usize][l] = bits as u32;
                continue;
            }
            let r = c.vdst as usize;
            ex.state.v[r][l] = bits as u32;
            if dw == 64 {
                ex.state.v[r + 1][l] = (bits >> 32) as u32;
            }
            if m.clamp && op.float_result && !packed && d0.f64() == 0.0 {
                ex.loose.push(Loose::Zero {
                    reg: c.vdst,
                    lane: l,
                    width: op.d0_width,
                });
            }
            if d0.any_nan {
                if packed {
                    for h in 0..2 {
                        if d0.bits >> (32 * h) & 0x7fff_ffff > 0x7f80_0000 {
                            ex.loose.push(Loose::Nan {
                                reg: c.vdst + h,
                                lane: l,
                                width: 32,
                            });
                        }
                    }
                } else {
                    ex.loose.push(Loose::Nan {
                        reg: c.vdst,
                        lane: l,
                        width: op.d0_width,
                    });
                }
            }
            if packed && self.packed_const_high(op, c) {
                ex.loose.push(Loose::Any {
                    reg: c.vdst,
                    lane: l,
                    width: 64,
                });
            }
        }
        if op.mask_dst || op.carry_out || op.d1 {
            ex.state.set_s64(c.sdst, mask_out);
        }
        if op.writes_exec {
            ex.state.set_s64(126, mask_out);
        }
        Ok(ex)
    }

    /// Whether a packed case selects the high half of an inline constant:
    /// the document does not say what a 32-bit constant gives there (LLVM
    /// only emits op_sel 0 and op_sel_hi 0 for constants, reading the low
    /// half for both results), so those lanes are not compared.
    fn packed_const_high(&self, op: &OpInfo, c: &Case) -> bool {
        (0..3).any(|k| {
            op.src_width[k] > 0
                && matches!(c.kinds[k], Kind::Int(_) | Kind::Float(_))
                && ((c.mods.opsel | c.mods.opsel_hi) >> k & 1 != 0
                    || op.mnemonic == "v_pk_mov_b32" && c.mods.opsel >> k & 1 != 0)
        })
    }

    /// VOP3P: source k as the pseudo-code's 64-bit S{k}, its low half the
    /// half op_sel[k] picks (negated by neg_lo[k]), its high half the half
    /// op_sel_hi[k] picks (negated by neg_hi[k]) (ISA document, "VOP3P
    /// packed math"). `v_pk_mov_b32` reads op_sel itself.
    fn bind_packed(&self, op: &OpInfo, c: &Case, ctx: &mut Ctx, src: &[u64; 3]) {
        let m = &c.mods;
        for k in 0..3 {
            if op.src_width[k] == 0 {
                continue;
            }
            let v = src[k];
            if op.mnemonic == "v_pk_mov_b32" {
                ctx.set(&format!("S{k}"), Val::new(v as u128, Ty::B(64)));
                continue;
            }
            let half = |hi: bool| if hi { v >> 32 } else { v & 0xffff_ffff };
            let (keep_in, _) = denorm(c.mode, 32, false);
            let prep = |h: u64, neg: bool| {
                let h = in_mods(h, 32, false, neg);
                if keep_in {
                    h
                } else {
                    flush(h, 32)
                }
            };
            let lo = prep(half(m.opsel >> k & 1 != 0), m.neg >> k & 1 != 0);
            let hi = prep(half(m.opsel_hi >> k & 1 != 0), m.neg_hi >> k & 1 != 0);
            ctx.set(
                &format!("S{k}"),
                Val::new((lo | hi << 32) as u128, Ty::B(64)),
            );
        }
    }

    /// Scalar instructions and the wave-level vector ones: one evaluation.
    fn once(
        &self,
        op: &OpInfo,
        body: &[Stmt],
        c: &Case,
        init: &State,
        pc: u64,
    ) -> Result<Expected, String> {
        let vgpr = |l: u32, r: u32| init.v[r as usize % NV][l as usize % 64];
        let mut ex = Expected {
            state: init.clone(),
            loose: Vec::new(),
            next_pc: None,
        };
        let mut ctx = Ctx::new(self.table, &vgpr);
        ctx.ieee = c.mode.ieee;
        let nsrc = (0..3).filter(|&k| op.src_width[k] > 0).count();
        let sopk_imm_first = op.unit == Unit::Sopk && op.src_width[1] == 0;
        for k in 0..nsrc {
            let w = op.src_width[k];
            let v = if op.unit == Unit::Sopk {
                // SOPK: the immediate is S0 where S1 is unused (s_movk,
                // s_addk, s_mulk), else S1 with S0 the register (s_cmpk).
                if (k == 0) == sopk_imm_first {
                    c.simm as u16 as u64
                } else {
                    init.s[c.sdst as usize] as u64
                }
            } else if op.unit == Unit::Wave && k == 0 && op.mnemonic != "v_writelane_b32" {
                0 // read through VGPR[lane][SRC0]
            } else {
                raw_source(op, c, init, k, 0)
            };
            ctx.set(&format!("S{k}"), Val::new(v as u128, Ty::B(w)));
        }
        let dw = op.d0_width.max(32);
        let d0_old = if dw == 64 {
            init.sreg64(c.sdst)
        } else {
            init.s[c.sdst as usize] as u64
        };
        ctx.set("D0", Val::new(d0_old as u128, Ty::B(dw)));
        ctx.set("SCC", Val::bool(init.scc));
        let exec = init.exec();
        let vcc = init.sreg64(VCC);
        ctx.set("EXEC", Val::uint(exec as u128, 64));
        ctx.set("VCC", Val::uint(vcc as u128, 64));
        ctx.set("EXECZ", Val::bool(exec == 0));
        ctx.set("VCCZ", Val::bool(vcc == 0));
        ctx.set("PC", Val::uint(pc as u128, 64));
        ctx.set("SIMM16", Val::uint(c.simm as u16 as u128, 16));
        ctx.set("SRC0", Val::uint(VSRC[0] as u128, 32));
        ctx.set("VDST", Val::uint(c.vdst as u128, 32));
        ctx.run(body)?;
        if op.unit == Unit::Wave {
            for &(lane, reg, v) in &ctx.vgpr_writes {
                ex.state.v[reg as usize % NV][lane as usize % 64] = v;
            }
            if op.mnemonic != "v_writelane_b32" {
                let d0 = ctx.get("D0").ok_or("no D0")?;
                ex.state.s[c.sdst as usize] = d0.bits as u32;
            }
            return Ok(ex);
        }
        if op.d0_width > 0 && !matches!(op.unit, Unit::Sopc | Unit::Sopp) {
            let d0 = ctx.get("D0").ok_or("no D0")?;
            if op.d0_width == 64 {
                ex.state.set_s64(c.sdst, d0.bits as u64);
            } else {
                ex.state.s[c.sdst as usize] = d0.bits as u32;
            }
        }
        if let Some(scc) = ctx.get("SCC") {
            ex.state.scc = scc.truthy();
        }
        if let Some(e) = ctx.get("EXEC") {
            ex.state.set_s64(126, e.bits as u64);
        }
        if op.writes_pc {
            ex.next_pc = ctx.get("PC").map(|p| p.bits as u64);
        }
        Ok(ex)
    }
}
