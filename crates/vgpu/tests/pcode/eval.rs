//! An interpreter of the pseudo-code: integer and float types, bit slices
//! and views, and the helper functions the CDNA text calls.
//!
//! Readings of the text that are ours (the document does not define its
//! language) are marked "Reading:" below; each follows the document's
//! evident intent or the ISA document's prose.

use std::collections::HashMap;

use super::lex::Kind;
use super::parse::{Expr, Stmt};
use super::value::{
    decompose, exponent, fma_scaled, is_subnormal, man_bits, mask, round_scaled, Ty, Val,
};

/// Parsed pseudo-code by opcode name (`V_ADD_F32_E32`, `S_FF1_I32_B64`...).
#[derive(Default)]
pub struct Table {
    pub ops: HashMap<String, Vec<Stmt>>,
}

impl Table {
    /// An opcode's code by its mnemonic in any encoding (`v_max_f32`).
    pub fn find(&self, mnemonic: &str) -> Option<&Vec<Stmt>> {
        let n = mnemonic.to_ascii_uppercase();
        ["", "_E32", "_E64"]
            .iter()
            .find_map(|s| self.ops.get(&format!("{n}{s}")))
    }
}

/// The state one evaluation reads and writes.
pub struct Ctx<'a> {
    pub table: &'a Table,
    vars: Vec<(String, Val, Option<Ty>)>,
    /// MODE.IEEE (`WAVE_MODE.IEEE`).
    pub ieee: bool,
    /// The lane a VALU evaluation is for: a whole write of `VCC` sets this
    /// lane's bit (Reading: `v_div_scale` writes `VCC = 0x1LL` meaning the
    /// lane's carry bit, as its VOP3 form writes an SGPR pair of lane bits).
    pub lane: Option<u32>,
    /// Reads lane `l` of VGPR `r` (`VGPR[l][r]`).
    pub vgpr: &'a dyn Fn(u32, u32) -> u32,
    /// `VGPR[l][r] = v` writes, in order.
    pub vgpr_writes: Vec<(u32, u32, u32)>,
    /// Integer `+ - *` without wrapping (for integer clamp: the exact
    /// result, then saturated).
    pub exact: bool,
    /// In exact mode, the last value given to `D0.T` before it was
    /// narrowed to T, and T.
    pub exact_d0: Option<(i128, Ty)>,
}

enum Flow {
    Next,
    Break,
}

type R<T> = Result<T, String>;

impl<'a> Ctx<'a> {
    pub fn new(table: &'a Table, vgpr: &'a dyn Fn(u32, u32) -> u32) -> Ctx<'a> {
        Ctx {
            table,
            vars: Vec::new(),
            ieee: true,
            lane: None,
            vgpr,
            vgpr_writes: Vec::new(),
            exact: false,
            exact_d0: None,
        }
    }

    pub fn set(&mut self, name: &str, v: Val) {
        match self.vars.iter_mut().find(|(n, _, _)| n == name) {
            Some(slot) => slot.1 = v,
            None => self.vars.push((name.to_string(), v, None)),
        }
    }

    pub fn get(&self, name: &str) -> Option<Val> {
        self.vars.iter().find(|(n, _, _)| n == name).map(|x| x.1)
    }

    pub fn run(&mut self, body: &[Stmt]) -> R<()> {
        self.block(body).map(|_| ())
    }

    fn block(&mut self, body: &[Stmt]) -> R<Flow> {
        for s in body {
            if let Flow::Break = self.stmt(s)? {
                return Ok(Flow::Break);
            }
        }
        Ok(Flow::Next)
    }

    fn stmt(&mut self, s: &Stmt) -> R<Flow> {
        match s {
            Stmt::Assign(targets, op, value) => {
                let mut v = self.expr(value)?;
                if *op != "=" {
                    let old = self.expr(&targets[0])?;
                    v = self.binary(if *op == "+=" { "+" } else { "-" }, old, v)?;
                }
                // `a = b = v`: the rightmost target first.
                for t in targets.iter().rev() {
                    self.assign(t, v)?;
                }
            }
            Stmt::If(arms, otherwise) => {
                for (c, body) in arms {
                    if self.expr(c)?.truthy() {
                        return self.block(body);
                    }
                }
                return self.block(otherwise);
            }
            Stmt::For(var, from, to, body) => {
                let (a, b) = (self.expr(from)?, self.expr(to)?);
                let ty = a.ty;
                for i in a.int()..=b.int() {
                    self.set(var, Val::new(i as u128, ty));
                    if let Flow::Break = self.block(body)? {
                        break;
                    }
                }
            }
            Stmt::Break => return Ok(Flow::Break),
            Stmt::Declare(name, w, k) => {
                let ty = ty_of(*w, *k);
                let v = Val::new(0, ty);
                match self.vars.iter_mut().find(|(n, _, _)| n == name) {
                    Some(slot) => *slot = (name.clone(), v, Some(ty)),
                    None => self.vars.push((name.clone(), v, Some(ty))),
                }
            }
            Stmt::Expr(e) => {
                self.expr(e)?;
            }
        }
        Ok(Flow::Next)
    }

    // ------------------------------------------------------------ writes

    fn assign(&mut self, target: &Expr, v: Val) -> R<()> {
        match target {
            Expr::Var(name) => {
                if name == "VCC" && self.lane.is_some() {
                    let lane = self.lane.unwrap_or(0);
                    let old = self.get("VCC").unwrap_or(Val::uint(0, 64));
                    let bit = v.truthy() as u128;
                    let bits = old.bits & !(1 << lane) | bit << lane;
                    self.set("VCC", Val::uint(bits, 64));
                    return Ok(());
                }
                let declared = self
                    .vars
                    .iter()
                    .find(|(n, _, _)| n == name)
                    .and_then(|x| x.2);
                let v = match declared {
                    Some(ty) => cast(v, ty),
                    None => v,
                };
                self.set(name, v);
                Ok(())
            }
            Expr::Field(base, f) => {
                let ty = Ty::parse(f).ok_or_else(|| format!("cannot assign to .{f}"))?;
                if self.exact && matches!(&**base, Expr::Var(n) if n == "D0") && !v.ty.is_float() {
                    self.exact_d0 = Some((v.int(), ty));
                }
                let v = cast(v, ty);
                // Reading: a typed write replaces the whole variable (a
                // 16-bit result zero-extends into its register, as the GFX9
                // 16-bit instructions do: LLVM review D26828).
                self.assign(base, v)
            }
            Expr::Slice(base, hi, lo) => {
                let (hi, lo) = (self.expr(hi)?.int() as u32, self.expr(lo)?.int() as u32);
                let (hi, lo) = (hi.max(lo), hi.min(lo));
                self.insert(base, hi, lo, v)
            }
            Expr::Index(base, idx) => {
                if let Expr::Index(file, lane) = &**base {
                    if matches!(&**file, Expr::Var(n) if n == "VGPR") {
                        let lane = self.expr(lane)?.int() as u32;
                        let reg = self.expr(idx)?.int() as u32;
                        self.vgpr_writes.push((lane, reg, v.bits as u32));
                        return Ok(());
                    }
                }
                let i = self.expr(idx)?.int() as u32;
                self.insert(base, i, i, Val::bool(v.truthy()))
            }
            Expr::Concat(parts) => {
                // The last part takes the low bits.
                let mut shift = 0;
                for p in parts.iter().rev() {
                    let w = self.target_width(p)?;
                    self.assign(p, Val::new(v.bits >> shift, Ty::B(w)))?;
                    shift += w;
                }
                Ok(())
            }
            e => Err(format!("cannot assign to {e:?}")),
        }
    }

    /// Width of an assignment target `NAME.type`.
    fn target_width(&self, e: &Expr) -> R<u32> {
        match e {
            Expr::Field(_, f) => Ty::parse(f)
                .map(|t| t.width())
                .ok_or_else(|| format!(".{f}")),
            e => Err(format!("untyped concatenation target {e:?}")),
        }
    }

    /// Writes `v` into bits `hi..=lo` of the variable under `base` (typed
    /// views of it address its whole bits).
    fn insert(&mut self, base: &Expr, hi: u32, lo: u32, v: Val) -> R<()> {
        let name = var_of(base).ok_or_else(|| format!("cannot slice-assign {base:?}"))?;
        // A slice with a type after it (`tmp[31 : 0].f32 = x`) is handled
        // by the Field arm converting first; here `v` is already in shape.
        let old = self.get(name).unwrap_or(Val::new(0, Ty::B(hi + 1)));
        let w = old.width().max(hi + 1);
        let m = mask(hi - lo + 1) << lo;
        let bits = old.bits & !m | (v.bits << lo) & m;
        let ty = match old.ty {
            Ty::U(_) => Ty::U(w),
            Ty::I(_) => Ty::I(w),
            _ => Ty::B(w),
        };
        if name == "VCC" && self.lane.is_none() {
            return Err("VCC bit write outside a lane".into());
        }
        self.set(name, Val::new(bits, ty));
        Ok(())
    }

    // ------------------------------------------------------------ reads

    pub fn expr(&mut self, e: &Expr) -> R<Val> {
        Ok(match e {
            Expr::Int(v, w, s) => Val::new(*v, if *s { Ty::I(*w) } else { Ty::U(*w) }),
            Expr::Float(v, w) => Val::float(*v, *w),
            Expr::Var(name) => self.var(name)?,
            Expr::Field(base, f) => {
                if let Expr::Var(b) = &**base {
                    if let Some(v) = self.constant(b, f) {
                        return Ok(v);
                    }
                }
                let v = self.expr(base)?;
                let ty = Ty::parse(f).ok_or_else(|| format!("unknown field .{f}"))?;
                v.view(ty)
            }
            Expr::Index(base, idx) => {
                if let Expr::Index(file, lane) = &**base {
                    if matches!(&**file, Expr::Var(n) if n == "VGPR") {
                        let lane = self.expr(lane)?.int() as u32;
                        let reg = self.expr(idx)?.int() as u32;
                        return Ok(Val::uint((self.vgpr)(lane, reg) as u128, 32));
                    }
                }
                let v = self.whole(base)?;
                let i = self.expr(idx)?.int();
                Val::bool((0..128).contains(&i) && v.bits >> i & 1 != 0)
            }
            Expr::Slice(base, hi, lo) => {
                let v = self.whole(base)?;
                let (hi, lo) = (self.expr(hi)?.int() as u32, self.expr(lo)?.int() as u32);
                if hi >= lo {
                    Val::uint(v.bits >> lo, hi - lo + 1)
                } else {
                    // `x[0 : 31]`: bits in reverse order.
                    let n = lo - hi + 1;
                    let field = v.bits >> hi & mask(n);
                    let mut r = 0u128;
                    for k in 0..n {
                        r |= (field >> k & 1) << (n - 1 - k);
                    }
                    Val::uint(r, n)
                }
            }
            Expr::Call(name, args) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.expr(a)?);
                }
                self.call(name, &vals)?
            }
            Expr::Cast(w, k, inner) => cast(self.expr(inner)?, ty_of(*w, *k)),
            Expr::Concat(parts) => {
                let mut bits = 0u128;
                let mut w = 0;
                for p in parts {
                    let v = self.expr(p)?;
                    bits = bits << v.width() | v.bits;
                    w += v.width();
                }
                Val::new(bits, Ty::B(w))
            }
            Expr::Unary(op, inner) => {
                let v = self.expr(inner)?;
                match *op {
                    "+" => v,
                    "!" => Val::bool(!v.truthy()),
                    "~" => Val::new(!v.bits, v.ty),
                    _ if v.ty.is_float() => Val {
                        // Negation flips the sign, NaNs included.
                        bits: v.bits ^ 1 << (v.width() - 1),
                        ..v
                    },
                    _ => Val::new(v.bits.wrapping_neg(), v.ty),
                }
            }
            Expr::Binary(op, a, b) => {
                // Reading: `x == DENORM.f32` asks whether x is subnormal.
                if let (&"==", Expr::Field(d, t)) = (op, &**b) {
                    if matches!(&**d, Expr::Var(n) if n == "DENORM") {
                        let ty = Ty::parse(t).ok_or("DENORM type")?;
                        let x = self.expr(a)?;
                        let x = if x.ty == ty { x } else { cast(x, ty) };
                        return Ok(Val::bool(is_subnormal(&x)));
                    }
                }
                // Reading: `x == +0.0`, `x == -0.0` written with a sign
                // test for that zero (V_MIN/V_MAX order -0 below +0; with
                // IEEE equality their second clause could never apply).
                if let (&"==", Expr::Unary(sign, z)) = (op, &**b) {
                    if let Expr::Float(0.0, _) = &**z {
                        let x = self.expr(a)?;
                        let neg = x.bits >> (x.width() - 1) & 1 != 0;
                        return Ok(Val::bool(x.f64() == 0.0 && neg == (*sign == "-")));
                    }
                }
                // Reading: `x * 2.0 ** n` is x · 2^n exactly (the power
                // alone would overflow for the n that v_ldexp allows).
                if *op == "*" {
                    if let Expr::Binary("**", base, n) = &**b {
                        if let Expr::Float(2.0, _) = &**base {
                            let x = self.expr(a)?;
                            let n = self.expr(n)?;
                            if x.ty.is_float() && !n.ty.is_float() {
                                return Ok(ldexp(x, n.int()));
                            }
                        }
                    }
                }
                let (x, y) = (self.expr(a)?, self.expr(b)?);
                match *op {
                    "&&" => Val::bool(x.truthy() && y.truthy()),
                    "||" => Val::bool(x.truthy() || y.truthy()),
                    _ => self.binary(op, x, y)?,
                }
            }
            Expr::Ternary(c, a, b) => {
                if self.expr(c)?.truthy() {
                    self.expr(a)?
                } else {
                    self.expr(b)?
                }
            }
        })
    }

    /// A variable's value, or a slice's base variable as a whole (a view
    /// followed by a slice addresses the register: `S0.u32[63 : 32]`).
    fn whole(&mut self, e: &Expr) -> R<Val> {
        if let Expr::Field(base, f) = e {
            if Ty::parse(f).is_some() {
                if let Expr::Var(n) = &**base {
                    if self.get(n).is_some() {
                        let v = self.var(n)?;
                        let t = Ty::parse(f).unwrap_or(Ty::B(32));
                        // Wider views extend; narrower ones keep the register.
                        return Ok(if t.width() > v.width() { v.view(t) } else { v });
                    }
                }
            }
        }
        self.expr(e)
    }

    fn var(&self, name: &str) -> R<Val> {
        if let Some(v) = self.get(name) {
            return Ok(v);
        }
        self.constant(name, "")
            .ok_or_else(|| format!("unknown name {name}"))
    }

    /// Named constants, as `NAME` or `NAME.type`.
    fn constant(&self, name: &str, field: &str) -> Option<Val> {
        let w = match field {
            "f32" => 32,
            "f16" => 16,
            _ => 64,
        };
        Some(match name {
            "INF" => Val::float(f64::INFINITY, w),
            "NAN" => Val::float(f64::NAN, w),
            "WAVE_MODE" if field == "IEEE" => Val::bool(self.ieee),
            // Reading (v_div_fixup): the quotient underflows to zero and
            // overflows to infinity.
            "UNDERFLOW_F32" => Val::float(0.0, 32),
            "UNDERFLOW_F64" => Val::float(0.0, 64),
            "OVERFLOW_F32" => Val::float(f64::INFINITY, 32),
            "OVERFLOW_F64" => Val::float(f64::INFINITY, 64),
            _ => return None,
        })
    }

    pub fn binary(&mut self, op: &str, x: Val, y: Val) -> R<Val> {
        if x.ty.is_float() || y.ty.is_float() {
            return float_binary(op, x, y);
        }
        let w = x.width().max(y.width());
        // C: the result is unsigned when an unsigned operand is at least as wide.
        let signed = match (x.ty.signed(), y.ty.signed()) {
            (true, true) => true,
            (false, false) => false,
            (true, false) => x.width() > y.width(),
            (false, true) => y.width() > x.width(),
        };
        let ty = if signed { Ty::I(w) } else { Ty::U(w) };
        let (a, b) = (x.int(), y.int());
        if self.exact && matches!(op, "+" | "-" | "*") {
            let r = match op {
                "+" => a.checked_add(b),
                "-" => a.checked_sub(b),
                _ => a.checked_mul(b),
            };
            return r
                .map(|r| Val::sint(r, 128))
                .ok_or_else(|| format!("exact {a} {op} {b} overflows"));
        }
        Ok(match op {
            "+" => Val::new(a.wrapping_add(b) as u128, ty),
            "-" => Val::new(a.wrapping_sub(b) as u128, ty),
            "*" => Val::new(a.wrapping_mul(b) as u128, ty),
            "/" if b != 0 => Val::new(a.wrapping_div(b) as u128, ty),
            "&" => Val::new(x.bits & y.bits, ty),
            "|" => Val::new(x.bits | y.bits, ty),
            "^" => Val::new(x.bits ^ y.bits, ty),
            "<<" => {
                // The left operand's type; shifting out everything gives 0.
                let n = b.clamp(0, 128) as u32;
                let v = if n >= x.width() { 0 } else { x.bits << n };
                Val::new(v, x.ty)
            }
            ">>" => {
                let n = b.clamp(0, 128) as u32;
                let v = if x.ty.signed() {
                    (a >> n.min(127)) as u128
                } else if n >= 128 {
                    0
                } else {
                    x.bits >> n
                };
                Val::new(v, x.ty)
            }
            "==" => Val::bool(a == b),
            "!=" | "<>" => Val::bool(a != b),
            "<" => Val::bool(a < b),
            ">" => Val::bool(a > b),
            "<=" => Val::bool(a <= b),
            ">=" => Val::bool(a >= b),
            "**" => Val::new(a.wrapping_pow(b.clamp(0, 127) as u32) as u128, ty),
            _ => return Err(format!("integer operator {op}")),
        })
    }

    // ------------------------------------------------------------ calls

    fn call(&mut self, name: &str, a: &[Val]) -> R<Val> {
        let arg = |k: usize| a.get(k).copied().ok_or(format!("{name}: argument {k}"));
        Ok(match name {
            "fma" => {
                let (x, y, z) = (arg(0)?, arg(1)?, arg(2)?);
                let w = x.width().max(y.width()).max(z.width());
                if w == 32 {
                    let r = (x.f64() as f32).mul_add(y.f64() as f32, z.f64() as f32);
                    Val {
                        any_nan: r.is_nan(),
                        ..Val::float(r as f64, 32)
                    }
                } else {
                    Val::float(x.f64().mul_add(y.f64(), z.f64()), w)
                }
            }
            // Used by ERRATA (ops.rs): (a · b + c) · 2^k with one rounding.
            "fma_scaled" => {
                let (x, y, z, k) = (arg(0)?, arg(1)?, arg(2)?, arg(3)?.int() as i32);
                let w = x.width();
                let (fx, fy) = (x.f64(), y.f64());
                if !(fx.is_finite() && fy.is_finite() && z.f64().is_finite())
                    || fx == 0.0
                    || fy == 0.0
                {
                    // Specials and zero products: the plain fma (exact when
                    // the product is zero), then scaled.
                    let r = self.call("fma", &[x, y, z])?;
                    ldexp(r, k as i128)
                } else {
                    fma_scaled(&x, &y, &z, k, w)
                }
            }
            "sqrt" => {
                let x = arg(0)?;
                Val::float(x.f64().sqrt(), x.width())
            }
            "trunc" => {
                let x = arg(0)?;
                keep_nan(x, Val::float(x.f64().trunc(), x.width()))
            }
            "floor" => {
                let x = arg(0)?;
                keep_nan(x, Val::float(x.f64().floor(), x.width()))
            }
            "abs" => {
                let x = arg(0)?;
                if x.ty.is_float() {
                    Val {
                        bits: x.bits & !(1 << (x.width() - 1)),
                        ..x
                    }
                } else {
                    Val::new(x.int().unsigned_abs(), x.ty)
                }
            }
            "sign" => {
                let x = arg(0)?;
                Val::bool(x.bits >> (x.width() - 1) & 1 != 0)
            }
            // A signed integer: differences of exponents are compared with
            // negative bounds (v_div_fixup, v_div_scale).
            "exponent" => Val::sint(exponent(&arg(0)?) as i128, 32),
            "isNAN" => Val::bool(arg(0)?.is_nan()),
            "isSignalNAN" | "isQuietNAN" => {
                let x = arg(0)?;
                let quiet = x.bits >> (man_bits(x.width()) - 1) & 1 != 0;
                Val::bool(x.is_nan() && quiet == (name == "isQuietNAN"))
            }
            "cvtToQuietNAN" => {
                let x = arg(0)?;
                Val {
                    bits: x.bits | 1 << (man_bits(x.width()) - 1),
                    ..x
                }
            }
            "ldexp" => ldexp(arg(0)?, arg(1)?.int()),
            "signext" => {
                let x = arg(0)?;
                let w = x.width();
                let v = if x.bits >> (w - 1) & 1 != 0 {
                    x.bits | !mask(w)
                } else {
                    x.bits
                };
                Val::new(v, Ty::I(w.max(64)))
            }
            "signext_from_bit" => {
                let (x, n) = (arg(0)?, arg(1)?.int() as u32);
                let w = x.width();
                let v = if n == 0 {
                    0
                } else if n >= w {
                    x.bits
                } else if x.bits >> (n - 1) & 1 != 0 {
                    x.bits | !mask(n)
                } else {
                    x.bits & mask(n)
                };
                Val::new(v, x.ty)
            }
            "u32_to_f32" => Val::float(arg(0)?.view(Ty::U(32)).bits as f32 as f64, 32),
            "i32_to_f32" => Val::float(arg(0)?.view(Ty::I(32)).int() as f32 as f64, 32),
            "u32_to_f64" => Val::float(arg(0)?.view(Ty::U(32)).bits as f64, 64),
            "i32_to_f64" => Val::float(arg(0)?.view(Ty::I(32)).int() as f64, 64),
            "f32_to_f64" | "f64_to_f32" => {
                let x = arg(0)?;
                let w = if name == "f32_to_f64" { 64 } else { 32 };
                let r = x.convert_float(w);
                // A converted NaN comes out quiet; which one is not specified.
                if r.is_nan() {
                    Val {
                        any_nan: true,
                        ..Val::float(f64::NAN, w)
                    }
                } else {
                    r
                }
            }
            "f32_to_u32" | "f64_to_u32" => float_to_int(arg(0)?, false),
            "f32_to_i32" | "f64_to_i32" => float_to_int(arg(0)?, true),
            "nop" => Val::uint(0, 1),
            _ => return self.call_op(name, a),
        })
    }

    /// `v_max_f32(a, b)`, `s_ff1_i32_b64(x)`: another opcode's code with
    /// the arguments as its sources; its `D0` is the value.
    fn call_op(&mut self, name: &str, a: &[Val]) -> R<Val> {
        let table: &'a Table = self.table;
        let body = table
            .find(name)
            .ok_or_else(|| format!("unknown function {name}"))?;
        let mut sub = Ctx::new(self.table, self.vgpr);
        sub.ieee = self.ieee;
        sub.lane = self.lane;
        for (k, v) in a.iter().enumerate() {
            sub.set(&format!("S{k}"), *v);
        }
        sub.run(body)?;
        sub.get("D0").ok_or_else(|| format!("{name} left no D0"))
    }
}

fn ty_of(w: u32, k: Kind) -> Ty {
    match k {
        Kind::U => Ty::U(w),
        Kind::I => Ty::I(w),
        Kind::F => Ty::F(w),
        Kind::B => Ty::B(w),
    }
}

fn var_of(e: &Expr) -> Option<&str> {
    match e {
        Expr::Var(n) => Some(n),
        Expr::Field(b, _) => var_of(b),
        _ => None,
    }
}

/// An operation that keeps an input NaN's bits keeps its any_nan mark.
fn keep_nan(x: Val, r: Val) -> Val {
    if x.is_nan() {
        Val { any_nan: true, ..r }
    } else {
        r
    }
}

/// `N'K(x)`: float to float converts the value (exactly for NaNs); an
/// integer to a float is its bit pattern (`32'F(0xffc00000)`); integers
/// extend by their own signedness and truncate.
pub fn cast(v: Val, ty: Ty) -> Val {
    match (v.ty.is_float(), ty) {
        (true, Ty::F(w)) => v.convert_float(w),
        _ => v.view(ty),
    }
}

/// x · 2^n with one rounding (Reading: the document's `ldexp`).
pub fn ldexp(x: Val, n: i128) -> Val {
    let w = x.width();
    let f = x.f64();
    if !f.is_finite() || f == 0.0 {
        return keep_nan(x, x);
    }
    let (neg, m, e) = decompose(&x);
    let e = (e as i128 + n).clamp(-4000, 4000) as i32;
    round_scaled(neg, m, e, w)
}

fn float_binary(op: &str, x: Val, y: Val) -> R<Val> {
    let w = if x.ty.is_float() && y.ty.is_float() {
        x.width().max(y.width())
    } else if x.ty.is_float() {
        x.width()
    } else {
        y.width()
    };
    let (a, b) = (x.f64(), y.f64());
    Ok(match op {
        "+" => Val::float(a + b, w),
        "-" => Val::float(a - b, w),
        "*" => Val::float(a * b, w),
        "/" => Val::float(a / b, w),
        "**" => Val::float(a.powf(b), w),
        "==" => Val::bool(a == b),
        "!=" => Val::bool(a != b),
        // Reading: `<>` on floats is "less or greater" (v_cmp_lg is an
        // ordered compare: false for NaN operands).
        "<>" => Val::bool(a.partial_cmp(&b).is_some_and(|o| o.is_ne())),
        "<" => Val::bool(a < b),
        ">" => Val::bool(a > b),
        "<=" => Val::bool(a <= b),
        ">=" => Val::bool(a >= b),
        _ => return Err(format!("float operator {op}")),
    })
}

/// Float to 32-bit integer: toward zero, saturating, NaN to 0 (the ISA
/// document's conversion rules).
fn float_to_int(x: Val, signed: bool) -> Val {
    let f = x.f64();
    if signed {
        let v = if f.is_nan() {
            0
        } else {
            f.trunc().clamp(i32::MIN as f64, i32::MAX as f64) as i32
        };
        Val::sint(v as i128, 32)
    } else {
        let v = if f.is_nan() {
            0
        } else {
            f.trunc().clamp(0.0, u32::MAX as f64) as u32
        };
        Val::uint(v as u128, 32)
    }
}
