//! Values of the pseudo-code: bit patterns with a type (unsigned, signed,
//! float or raw bits, and a width), and the float arithmetic they need.
//!
//! Floats are held as their IEEE bit patterns, so NaN payloads and the
//! signalling bit survive moves and widening (`64'F(S0.f32)` must keep a
//! signalling NaN signalling for `isSignalNAN`). A NaN that arithmetic
//! produced is marked `any_nan`: the document does not say which NaN the
//! hardware returns, so any NaN matches it.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    U(u32),
    I(u32),
    F(u32),
    B(u32),
}

impl Ty {
    pub fn width(self) -> u32 {
        match self {
            Ty::U(w) | Ty::I(w) | Ty::F(w) | Ty::B(w) => w,
        }
    }
    pub fn is_float(self) -> bool {
        matches!(self, Ty::F(_))
    }
    pub fn signed(self) -> bool {
        matches!(self, Ty::I(_))
    }
    /// A typed view by name: `u32`, `i24`, `f64`, `b32`, `u1`, `bf16`...
    pub fn parse(name: &str) -> Option<Ty> {
        let (k, w) = name.split_at(1);
        let w: u32 = w.parse().ok()?;
        if w == 0 || w > 128 {
            return None;
        }
        Some(match k {
            "u" => Ty::U(w),
            "i" => Ty::I(w),
            "f" if matches!(w, 16 | 32 | 64) => Ty::F(w),
            "b" => Ty::B(w),
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Val {
    pub bits: u128,
    pub ty: Ty,
    /// A NaN produced by arithmetic (its bits are not specified).
    pub any_nan: bool,
}

pub fn mask(w: u32) -> u128 {
    if w >= 128 {
        u128::MAX
    } else {
        (1u128 << w) - 1
    }
}

impl Val {
    pub fn new(bits: u128, ty: Ty) -> Val {
        Val {
            bits: bits & mask(ty.width()),
            ty,
            any_nan: false,
        }
    }
    pub fn uint(v: u128, w: u32) -> Val {
        Val::new(v, Ty::U(w))
    }
    pub fn sint(v: i128, w: u32) -> Val {
        Val::new(v as u128, Ty::I(w))
    }
    pub fn bool(b: bool) -> Val {
        Val::uint(b as u128, 1)
    }
    pub fn width(&self) -> u32 {
        self.ty.width()
    }

    /// The value as an integer: sign-extended when its type is signed.
    pub fn int(&self) -> i128 {
        let w = self.width();
        if self.ty.signed() && w < 128 && self.bits >> (w - 1) & 1 != 0 {
            (self.bits | !mask(w)) as i128
        } else {
            self.bits as i128
        }
    }

    /// A float's value (an integer converts numerically).
    pub fn f64(&self) -> f64 {
        match self.ty {
            Ty::F(64) => f64::from_bits(self.bits as u64),
            Ty::F(32) => f32::from_bits(self.bits as u32) as f64,
            Ty::F(16) => f16_to_f64(self.bits as u16),
            _ if self.ty.signed() => self.int() as f64,
            _ => self.bits as f64,
        }
    }

    pub fn truthy(&self) -> bool {
        if self.ty.is_float() {
            self.f64() != 0.0
        } else {
            self.bits != 0
        }
    }

    pub fn is_nan(&self) -> bool {
        self.ty.is_float() && self.f64().is_nan()
    }

    /// A float of width `w` holding `x` rounded once (to nearest even); a
    /// NaN result is marked as unspecified.
    pub fn float(x: f64, w: u32) -> Val {
        let bits = match w {
            64 => x.to_bits() as u128,
            32 => (x as f32).to_bits() as u128,
            _ => f64_to_f16(x) as u128,
        };
        Val {
            bits,
            ty: Ty::F(w),
            any_nan: x.is_nan(),
        }
    }

    /// Reinterprets the bits as `ty`: narrower takes the low bits, wider
    /// extends (with the sign when this value's type is signed).
    pub fn view(&self, ty: Ty) -> Val {
        let bits = if ty.width() > self.width() {
            self.int() as u128
        } else {
            self.bits
        };
        Val {
            bits: bits & mask(ty.width()),
            ty,
            any_nan: self.any_nan && ty.is_float() && ty.width() == self.width(),
        }
    }

    /// A float converted to another float width, exactly where it fits:
    /// NaNs keep their sign, payload (its top bits) and quiet bit.
    pub fn convert_float(&self, w: u32) -> Val {
        let from = self.width();
        if from == w {
            return *self;
        }
        if self.is_nan() {
            let (sign, quiet, payload) = nan_parts(self.bits, from);
            let bits = make_nan(sign, quiet, payload, from, w);
            return Val {
                bits,
                ty: Ty::F(w),
                any_nan: self.any_nan,
            };
        }
        Val::float(self.f64(), w)
    }
}

/// (sign, quiet bit, payload below the quiet bit, left-aligned in 64 bits).
fn nan_parts(bits: u128, w: u32) -> (bool, bool, u64) {
    let man = man_bits(w);
    let sign = bits >> (w - 1) & 1 != 0;
    let quiet = bits >> (man - 1) & 1 != 0;
    let payload = (bits & mask(man - 1)) as u64;
    (sign, quiet, payload << (64 - (man - 1)))
}

fn make_nan(sign: bool, quiet: bool, payload: u64, _from: u32, w: u32) -> u128 {
    let man = man_bits(w);
    let exp = mask(w - 1 - man) << man;
    let mut p = (payload >> (64 - (man - 1))) as u128;
    if !quiet && p == 0 {
        // A signalling NaN whose payload was all in the dropped bits stays a NaN.
        p = 1;
    }
    (sign as u128) << (w - 1) | exp | (quiet as u128) << (man - 1) | p
}

/// Mantissa bits of a float width.
pub fn man_bits(w: u32) -> u32 {
    match w {
        64 => 52,
        32 => 23,
        _ => 10,
    }
}

/// Biased exponent field.
pub fn exponent(v: &Val) -> u32 {
    let w = v.width();
    let man = man_bits(w);
    (v.bits >> man & mask(w - 1 - man)) as u32
}

pub fn is_subnormal(v: &Val) -> bool {
    exponent(v) == 0 && v.bits & mask(man_bits(v.width())) != 0
}

pub fn f16_to_f64(h: u16) -> f64 {
    let sign = if h >> 15 != 0 { -1.0 } else { 1.0 };
    let e = (h >> 10 & 0x1f) as i32;
    let m = (h & 0x3ff) as f64;
    match e {
        0 => sign * m * 2f64.powi(-24),
        31 if m == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    }
}

fn f64_to_f16(x: f64) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    if x.is_nan() {
        return 0x7e00;
    }
    let a = x.abs();
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    // Units of 2^-24 below 2^-14, else 10 mantissa bits.
    if a < 2f64.powi(-14) {
        return sign | (a * 2f64.powi(24)).round_ties_even() as u16;
    }
    let e = a.log2().floor() as i32;
    let e = if 2f64.powi(e) > a { e - 1 } else { e };
    let m = (a * 2f64.powi(10 - e)).round_ties_even() as u32;
    let (m, e) = if m == 2048 { (1024, e + 1) } else { (m, e) };
    if e > 15 {
        return sign | 0x7c00;
    }
    sign | ((e + 15) as u16) << 10 | (m - 1024) as u16
}

/// `m · 2^e` (exact integer inputs) rounded once, to nearest even, to a
/// float of width `w`, with subnormals and overflow to infinity.
pub fn round_scaled(neg: bool, m: u128, e: i32, w: u32) -> Val {
    let (prec, emin, emax) = match w {
        64 => (53, -1074, 1024),
        32 => (24, -149, 128),
        _ => (11, -24, 16),
    };
    if m == 0 {
        return Val::float(if neg { -0.0 } else { 0.0 }, w);
    }
    let msb = 127 - m.leading_zeros() as i32;
    // Keep bits from `lsb` up: `prec` of them, fewer in the subnormal range.
    let lsb = (msb - (prec - 1)).max(emin - e);
    let (mut q, mut exp) = (m, e);
    if lsb > 0 {
        let sh = lsb as u32;
        if sh >= 128 {
            q = 0;
        } else {
            let rest = m & ((1u128 << sh) - 1);
            q = m >> sh;
            let half = 1u128 << (sh - 1);
            if rest > half || (rest == half && q & 1 == 1) {
                q += 1;
            }
        }
        exp += lsb;
    }
    let v = if q == 0 {
        0.0
    } else if exp + (128 - q.leading_zeros() as i32) > emax {
        f64::INFINITY
    } else {
        // q fits the precision and q · 2^exp is representable: exact
        // (in two steps below 2^-1022, where one factor would underflow).
        if exp >= -1022 {
            (q as f64) * pow2(exp)
        } else {
            (q as f64) * pow2(exp + 600) * pow2(-600)
        }
    };
    Val::float(if neg { -v } else { v }, w)
}

/// 2^e for -1022 <= e <= 1023, exactly.
pub fn pow2(e: i32) -> f64 {
    f64::from_bits(((e.clamp(-1022, 1023) + 1023) as u64) << 52)
}

/// (sign, integer mantissa, exponent) with x = ±m · 2^e, for finite x.
pub fn decompose(v: &Val) -> (bool, u128, i32) {
    let w = v.width();
    let man = man_bits(w);
    let bias = (1i32 << (w - 2 - man)) - 1;
    let e = exponent(v) as i32;
    let m = v.bits & mask(man);
    let neg = v.bits >> (w - 1) & 1 != 0;
    if e == 0 {
        (neg, m, 1 - bias - man as i32)
    } else {
        (neg, m | 1u128 << man, e - bias - man as i32)
    }
}

/// (a · b + c) · 2^k rounded once to a float of width `w` (finite, nonzero
/// a and b; the caller handles the rest). Exact integer arithmetic: the
/// larger term is placed with its top bit at bit 125 (at least 19 zero bits
/// below it), the smaller aligned to it, and bits shifted out below bit 0
/// kept as a sticky bit, which cannot move the sum across a rounding
/// boundary (those lie more than 60 bits higher).
pub fn fma_scaled(a: &Val, b: &Val, c: &Val, k: i32, w: u32) -> Val {
    let (sa, ma, ea) = decompose(a);
    let (sb, mb, eb) = decompose(b);
    let (sp, mp, ep) = (sa != sb, ma * mb, ea + eb);
    let (sc, mc, ec) = decompose(c);
    if mc == 0 {
        // c = ±0: the product alone (an exact zero sum cannot occur).
        return round_scaled(sp, mp, ep + k, w);
    }
    let top = |m: u128, e: i32| e + 127 - m.leading_zeros() as i32;
    let (big, small) = if top(mp, ep) >= top(mc, ec) {
        ((sp, mp, ep), (sc, mc, ec))
    } else {
        ((sc, mc, ec), (sp, mp, ep))
    };
    let shift = 125 - (127 - big.1.leading_zeros() as i32);
    let (bm, e0) = (big.1 << shift, big.2 - shift);
    let s = small.2 - e0;
    let sm = if s >= 0 {
        small.1 << s
    } else if -s >= 128 {
        1
    } else {
        let lost = small.1 & ((1u128 << -s) - 1);
        small.1 >> -s | (lost != 0) as u128
    };
    let signed = |neg: bool, m: u128| if neg { -(m as i128) } else { m as i128 };
    let sum = signed(big.0, bm) + signed(small.0, sm);
    if sum == 0 {
        // An exact zero: +0 under round-to-nearest.
        return Val::float(0.0, w);
    }
    round_scaled(sum < 0, sum.unsigned_abs(), e0 + k, w)
}
