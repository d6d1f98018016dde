//! Vector ALU: per-lane operations under EXEC, VOPC compares, carries,
//! cross-lane moves (DPP, readlane/writelane, mbcnt), AGPR moves and MFMA.

// Lane loops index several columns with the same lane number.
#![allow(clippy::needless_range_loop)]

use std::cell::Cell;

use crate::fault::{Exception, FaultKind};
use crate::fpmode::{max32, max64, min32, min64, Fp, SIGN32, SIGN64};
use crate::inst::{Inst, Op, Src, Ty};
use crate::wave::{bfe32, cond_mask, lanes, Opnd, Wave};

fn f32b(x: u32) -> f32 {
    f32::from_bits(x)
}
fn f64b(x: u64) -> f64 {
    f64::from_bits(x)
}

/// x · 2^e without intermediate overflow (each step scales exactly).
pub fn ldexp(mut x: f64, e: i32) -> f64 {
    let mut e = e.clamp(-2300, 2300);
    while e > 1000 {
        x *= f64::from_bits(((1000 + 1023) as u64) << 52);
        e -= 1000;
    }
    while e < -1000 {
        x *= f64::from_bits(((1023 - 1000) as u64) << 52);
        e += 1000;
    }
    x * f64::from_bits(((e + 1023) as u64) << 52)
}

/// `v_div_fixup` for quotient estimate `q`, denominator `d` and numerator
/// `n` (f32 operands arrive widened, `narrow`), as the ISA's pseudo-code
/// has it: the IEEE result for NaN (quieted), zero and infinite operands,
/// zero where the quotient underflows far below the subnormals, infinity
/// where the estimate is infinite or NaN (the scaled Newton steps
/// overflowed: the document's `exponent(S1) == 2047` test, which can never
/// hold there, is of S0); None where the result is `q` with the sign of
/// `n / d`.
fn div_fixup_special(q: f64, d: f64, n: f64, narrow: bool) -> Option<f64> {
    let neg = d.is_sign_negative() != n.is_sign_negative();
    let signed = |v: f64| if neg { -v } else { v };
    let quiet = |v: f64| f64::from_bits(v.to_bits() | 1 << 51);
    Some(if n.is_nan() {
        quiet(n)
    } else if d.is_nan() {
        quiet(d)
    } else if (d == 0.0 && n == 0.0) || (d.is_infinite() && n.is_infinite()) {
        // 0/0 and inf/inf: the ISA's negative quiet NaN (0xfff8000000000000,
        // 0xffc00000 as an f32).
        -f64::NAN
    } else if d == 0.0 || n.is_infinite() {
        signed(f64::INFINITY)
    } else if d.is_infinite()
        || n == 0.0
        || exponent(n, narrow) - exponent(d, narrow) < if narrow { -150 } else { -1075 }
    {
        // x/inf, 0/y, and quotients far below the subnormals.
        signed(0.0)
    } else if !q.is_finite() {
        signed(f64::INFINITY)
    } else {
        return None;
    })
}

/// (sign, m, e) with x = ±m · 2^e, for finite x.
fn parts(x: f64) -> (bool, u64, i32) {
    let b = x.to_bits();
    let (exp, man) = ((b >> 52 & 0x7ff) as i32, b & ((1 << 52) - 1));
    if exp == 0 {
        (x.is_sign_negative(), man, -1074)
    } else {
        (x.is_sign_negative(), man | 1 << 52, exp - 1075)
    }
}

/// (a · b + c) · 2^k rounded once, to nearest even, to a float of `prec`
/// significand bits whose smallest subnormal is 2^`emin` and whose values
/// stay below 2^`emax` (53, -1074, 1024 for f64; 24, -149, 128 for f32).
/// `v_div_fmas` scales its fused result this way: rounding the fma first
/// and scaling after would round twice when the result is subnormal.
fn fma_scaled(a: f64, b: f64, c: f64, k: i32, prec: i32, emin: i32, emax: i32) -> f64 {
    if !(a.is_finite() && b.is_finite() && c.is_finite()) || a == 0.0 || b == 0.0 {
        return ldexp(a.mul_add(b, c), k);
    }
    let (sp, ma, ea) = parts(a);
    let (_, mb, eb) = parts(b);
    let sp = sp != b.is_sign_negative();
    let (p, ep) = (ma as u128 * mb as u128, ea + eb);
    let (sc, mc, ec) = parts(c);
    // Both terms as X · 2^E with the larger one's top bit at bit 124 and
    // the bits shifted out of the smaller one kept as a sticky bit.
    let top = |m: u128, e: i32| e + 127 - m.leading_zeros() as i32;
    let (big, small) = if mc == 0 || top(p, ep) >= top(mc as u128, ec) {
        ((sp, p, ep), (sc, mc as u128, ec))
    } else {
        ((sc, mc as u128, ec), (sp, p, ep))
    };
    let e = top(big.1, big.2) - 124;
    let align = |m: u128, me: i32| -> i128 {
        if m == 0 {
            0
        } else if me >= e {
            (m << (me - e)) as i128
        } else {
            let sh = (e - me) as u32;
            if sh >= 127 {
                1
            } else {
                (m >> sh | (m & ((1 << sh) - 1) != 0) as u128) as i128
            }
        }
    };
    let signed = |neg: bool, v: i128| if neg { -v } else { v };
    let x = signed(big.0, align(big.1, big.2)) + signed(small.0, align(small.1, small.2));
    if x == 0 {
        // An exact zero sum is +0 (round to nearest), -0 when both terms are -0.
        return 0.0;
    }
    let (neg, mag) = (x < 0, x.unsigned_abs());
    let e = e + k;
    let msb = 127 - mag.leading_zeros() as i32;
    // Keep the bits from `lsb` up: prec of them, fewer below the normal range.
    let lsb = (msb - (prec - 1)).max(emin - e);
    let (mut m, mut exp) = (mag, e);
    if lsb >= 128 {
        // Far below the smallest subnormal: rounds to zero.
        m = 0;
    } else if lsb > 0 {
        let (sh, rest) = (lsb as u32, mag & ((1u128 << lsb) - 1));
        m = mag >> sh;
        let half = 1u128 << (sh - 1);
        if rest > half || (rest == half && m & 1 == 1) {
            m += 1;
        }
        exp += lsb;
    }
    let v = if m == 0 {
        0.0
    } else if exp + (128 - m.leading_zeros() as i32) > emax {
        f64::INFINITY
    } else {
        ldexp(m as f64, exp)
    };
    if neg {
        -v
    } else {
        v
    }
}

/// `v_div_scale_f64` of (S0, denominator S1, numerator S2): the scaled S0
/// (None: S0 unchanged, bit for bit) and whether the quotient must be
/// scaled back (VCC).
fn div_scale_f64(s0: f64, den: f64, num: f64) -> (Option<f64>, bool) {
    let exp = |x: f64| (x.to_bits() >> 52 & 0x7ff) as i32;
    div_scale_with(
        s0,
        den,
        num,
        exp(num) - exp(den) >= 768,
        exp(num) <= 53,
        128,
        |x| x.is_subnormal(),
    )
}

/// `v_div_scale_f32`, as [`div_scale_f64`] with the f32 thresholds.
fn div_scale_f32(s0: f32, den: f32, num: f32) -> (Option<f32>, bool) {
    let exp = |x: f32| (x.to_bits() >> 23 & 0xff) as i32;
    let (r, v) = div_scale_with(
        s0 as f64,
        den as f64,
        num as f64,
        exp(num) - exp(den) >= 96,
        exp(num) <= 23,
        64,
        // Denormal as an f32, and 1/den, num/den computed in f32.
        |x| (x as f32).is_subnormal(),
    );
    (r.map(|r| r as f32), v)
}

/// The cases of `v_div_scale` in the ISA's order. `denorm` tells whether a
/// value is subnormal in the operation's precision; for f32 the operands
/// arrive widened, and the quotients below are of f32s computed exactly in
/// f64 and then tested after rounding to f32.
fn div_scale_with(
    s0: f64,
    den: f64,
    num: f64,
    quotient_near_max: bool,
    numerator_tiny: bool,
    k: i32,
    denorm: impl Fn(f64) -> bool,
) -> (Option<f64>, bool) {
    if num == 0.0 || den == 0.0 {
        return (Some(f64::NAN), false);
    }
    let narrow = k == 64;
    let div = |a: f64, b: f64| {
        if narrow {
            (a as f32 / b as f32) as f64
        } else {
            a / b
        }
    };
    let rcp_denorm = denorm(div(1.0, den));
    let quotient_denorm = denorm(div(num, den));
    let scaled = |cond: bool, e: i32| cond.then(|| ldexp(s0, e));
    if quotient_near_max {
        // Only the denominator is scaled; v_div_fmas scales the quotient up.
        (scaled(s0 == den, k), true)
    } else if denorm(den) {
        (scaled(true, k), false)
    } else if rcp_denorm && quotient_denorm {
        // A huge denominator and a subnormal quotient: only the denominator
        // is scaled, and v_div_fmas scales the quotient back down. (The ISA
        // document writes 2^+128 here, which would overflow a denominator
        // of 2^1022 or more and cannot give the quotient; scaling it down is
        // what makes the quotient normal.)
        (scaled(s0 == den, -k), true)
    } else if rcp_denorm {
        (scaled(true, -k), false)
    } else if quotient_denorm {
        // Only the numerator is scaled; v_div_fmas scales the quotient down.
        (scaled(s0 == num, k), true)
    } else {
        (scaled(numerator_tiny, k), false)
    }
}

/// The 2^k by which `v_div_fmas` scales when VCC is set: up for a quotient
/// estimate (S2) of 1 or more, down otherwise.
fn div_fmas_scale(s2_exponent: u32, bias: u32, k: i32) -> i32 {
    if s2_exponent >= bias {
        k
    } else {
        -k
    }
}

/// The biased exponent field of `x`, as an f32 when `narrow`.
fn exponent(x: f64, narrow: bool) -> i32 {
    if narrow {
        ((x as f32).to_bits() >> 23 & 0xff) as i32
    } else {
        (x.to_bits() >> 52 & 0x7ff) as i32
    }
}

/// A 24-bit signed operand (`S.i24`).
fn i24(x: u32) -> i64 {
    ((x << 8) as i32 >> 8) as i64
}

/// Saturated to the u32 / i32 range (integer clamp).
fn sat_u32(v: i64) -> u32 {
    v.clamp(0, u32::MAX as i64) as u32
}
fn sat_i32(v: i64) -> u32 {
    v.clamp(i32::MIN as i64, i32::MAX as i64) as i32 as u32
}

/// IEEE half to single (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = if h >> 15 != 0 { -1.0f32 } else { 1.0 };
    let exp = (h >> 10 & 0x1f) as i32;
    let man = (h & 0x3ff) as f32;
    match exp {
        0 => sign * man * f32::from_bits(0x3380_0000), // man · 2^-24
        31 if man == 0.0 => sign * f32::INFINITY,
        31 => f32::from_bits((h as u32 & 0x8000) << 16 | 0x7fc0_0000 | (h as u32 & 0x3ff) << 13),
        _ => sign * (1.0 + man / 1024.0) * (ldexp(1.0, exp - 15) as f32),
    }
}

/// Single to IEEE half, rounding to nearest even.
pub fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    if x.is_nan() {
        return sign | 0x7e00 | ((b >> 13) & 0x1ff) as u16;
    }
    let a = x.abs() as f64;
    if a >= 65520.0 {
        return sign | 0x7c00; // rounds to infinity
    }
    if a < f64::from_bits(0x3ef0_0000_0000_0000) {
        // Below 2^-16: subnormal half, units of 2^-24.
        let m = (a * (1u64 << 24) as f64).round_ties_even() as u16;
        return sign | m;
    }
    let e = a.log2().floor() as i32;
    let e = if ldexp(1.0, e) > a { e - 1 } else { e };
    if e < -14 {
        let m = (a * (1u64 << 24) as f64).round_ties_even() as u16;
        return sign | m;
    }
    let m = (ldexp(a, 10 - e)).round_ties_even() as u32; // 1024..=2048
    let (m, e) = if m == 2048 { (1024, e + 1) } else { (m, e) };
    if e > 15 {
        return sign | 0x7c00;
    }
    sign | (((e + 15) as u16) << 10) | (m - 1024) as u16
}

/// `v_cmp_class`: which of the ten classes the value is in, as mask bits.
fn class_bit_f64(x: f64) -> u32 {
    let neg = x.is_sign_negative();
    let b = if x.is_nan() {
        // Bit 51 set: quiet NaN.
        if x.to_bits() >> 51 & 1 != 0 {
            1
        } else {
            0
        }
    } else if x.is_infinite() {
        if neg {
            2
        } else {
            9
        }
    } else if x == 0.0 {
        if neg {
            5
        } else {
            6
        }
    } else if x.is_subnormal() {
        if neg {
            4
        } else {
            7
        }
    } else if neg {
        3
    } else {
        8
    };
    1 << b
}

fn class_bit_f32(x: f32) -> u32 {
    if x.is_nan() {
        return if x.to_bits() >> 22 & 1 != 0 { 2 } else { 1 };
    }
    // An f32 denormal is an f64 normal: widening would lose its class.
    if x.is_subnormal() {
        return if x.is_sign_negative() { 1 << 4 } else { 1 << 7 };
    }
    class_bit_f64(x as f64)
}

/// [`run3`] for 64-bit lanes held in register pairs (low, high column).
#[inline(always)]
pub(crate) fn run3_64(
    x: (&Col, &Col),
    y: (&Col, &Col),
    z: (&Col, &Col),
    d: (&Col, &Col),
    exec: u64,
    f: impl Fn(u64, u64, u64) -> u64,
) {
    let get = |c: (&Col, &Col), l: usize| c.0[l].get() as u64 | (c.1[l].get() as u64) << 32;
    if exec == u64::MAX {
        // Full EXEC: no lane tests, no blending with the old value.
        for c in 0..8 {
            let b = c * 8;
            let mut r = [0u64; 8];
            for j in 0..8 {
                r[j] = f(get(x, b + j), get(y, b + j), get(z, b + j));
            }
            for j in 0..8 {
                d.0[b + j].set(r[j] as u32);
                d.1[b + j].set((r[j] >> 32) as u32);
            }
        }
        return;
    }
    for c in 0..8 {
        let b = c * 8;
        let e = (exec >> b) as u32 & 0xff;
        if e == 0 {
            continue;
        }
        let mut r = [0u64; 8];
        for j in 0..8 {
            r[j] = f(get(x, b + j), get(y, b + j), get(z, b + j));
        }
        for j in 0..8 {
            let m = if e >> j & 1 != 0 { u64::MAX } else { 0 };
            let old = get(d, b + j);
            let v = r[j] & m | old & !m;
            d.0[b + j].set(v as u32);
            d.1[b + j].set((v >> 32) as u32);
        }
    }
}

/// A register column as cells: one operation may read and write the same
/// register, lane by lane, without copying it first.
pub(crate) type Col = [Cell<u32>; 64];

/// A register file (or the broadcast columns) as cells.
#[inline(always)]
pub(crate) fn cells(file: &mut [[u32; 64]]) -> &[Cell<u32>] {
    Cell::from_mut(file.as_flattened_mut()).as_slice_of_cells()
}

/// Column `n` of a file seen through [`cells`].
#[inline(always)]
pub(crate) fn col_at(file: &[Cell<u32>], n: usize) -> &Col {
    let c = &file[n * 64..n * 64 + 64];
    c.try_into().expect("a range of 64 lanes")
}

/// `d = f(x, y, z)` in the lanes EXEC enables, eight lanes at a time: each
/// group is read completely before it is written (so `d` may be a source)
/// and is straight-line code the compiler turns into vector instructions.
#[inline(always)]
pub(crate) fn run3(
    x: &Col,
    y: &Col,
    z: &Col,
    d: &Col,
    exec: u64,
    f: impl Fn(u32, u32, u32) -> u32,
) {
    if exec == u64::MAX {
        // Full EXEC: no lane tests at all.
        for c in 0..8 {
            let b = c * 8;
            let mut r = [0u32; 8];
            for j in 0..8 {
                r[j] = f(x[b + j].get(), y[b + j].get(), z[b + j].get());
            }
            for j in 0..8 {
                d[b + j].set(r[j]);
            }
        }
        return;
    }
    for c in 0..8 {
        let b = c * 8;
        let e = (exec >> b) as u32 & 0xff;
        if e == 0 {
            continue;
        }
        let mut r = [0u32; 8];
        for j in 0..8 {
            r[j] = f(x[b + j].get(), y[b + j].get(), z[b + j].get());
        }
        if e == 0xff {
            for j in 0..8 {
                d[b + j].set(r[j]);
            }
        } else {
            for j in 0..8 {
                let m = (e >> j & 1).wrapping_neg();
                d[b + j].set(r[j] & m | d[b + j].get() & !m);
            }
        }
    }
}

/// Whether the CPU runs the AVX2+FMA build of the VALU (see [`Simd::detect`]).
#[derive(Clone, Copy, Debug)]
pub struct Simd(bool);

/// Set, the VALU runs its baseline build even where the CPU has AVX2 and
/// FMA (tests use it to check that build on machines that have them).
pub static FORCE_BASELINE: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

impl Simd {
    /// Whether the AVX2+FMA build runs.
    pub fn avx2(self) -> bool {
        self.0
    }

    pub fn detect() -> Simd {
        if FORCE_BASELINE.load(std::sync::atomic::Ordering::Relaxed) {
            return Simd(false);
        }
        #[cfg(target_arch = "x86_64")]
        {
            Simd(
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma"),
            )
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Simd(false)
        }
    }
}

/// The column a 32-bit source reads: its register, or broadcast column `at`.
#[inline(always)]
fn pick_col<'a>(
    s: Src,
    at: usize,
    v: &'a [Cell<u32>],
    a: &'a [Cell<u32>],
    bc: &'a [Cell<u32>],
) -> &'a Col {
    match s {
        Src::V(n) => col_at(v, n as usize),
        Src::A(n) => col_at(a, n as usize),
        _ => col_at(bc, at),
    }
}

/// The column pair a 64-bit source reads: its registers, the source's own
/// pair of broadcast columns (`k`: which source), or zeros.
#[inline(always)]
fn pick_pair<'a>(
    s: Src,
    k: usize,
    v: &'a [Cell<u32>],
    a: &'a [Cell<u32>],
    bc: &'a [Cell<u32>],
) -> (&'a Col, &'a Col) {
    match s {
        Src::V(n) => (col_at(v, n as usize), col_at(v, n as usize + 1)),
        Src::A(n) => (col_at(a, n as usize), col_at(a, n as usize + 1)),
        Src::None => (col_at(bc, ZERO_COL), col_at(bc, ZERO_COL)),
        _ => (col_at(bc, BC64 + 2 * k), col_at(bc, BC64 + 2 * k + 1)),
    }
}

/// Broadcast columns (`Wave::bc`): 8 shared by value, then one of each
/// source's own, then one that stays zero (an absent source), then a pair
/// for each 64-bit source.
pub(crate) const BC_OWN: usize = 8;
pub(crate) const ZERO_COL: usize = 11;
/// Pairs of broadcast columns for 64-bit sources (two per source).
pub(crate) const BC64: usize = 12;

/// How a scalar or constant source of a 64-bit operation reads: an f64
/// operand (f64 inline constants, a literal as the high half), a 64-bit
/// integer one, or a 32-bit operand of the operation (zero-extended).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum W {
    F64,
    B64,
    B32,
}

/// An absent source: zeros.
static ZERO: [u32; 64] = [0; 64];

/// Writes `out` to the lanes of `d` that `exec` enables (a blend the
/// compiler vectorizes; a plain copy under full EXEC).
#[inline(always)]
pub(crate) fn put32(d: &mut [u32; 64], out: &[u32; 64], exec: u64) {
    if exec == u64::MAX {
        *d = *out;
        return;
    }
    // Blended into a copy, then stored whole (see `put_cells`).
    let mut t = [0u32; 64];
    for l in 0..64 {
        let m = ((exec >> l) as u32 & 1).wrapping_neg();
        t[l] = (out[l] & m) | (d[l] & !m);
    }
    *d = t;
}

/// [`put32`] into a column seen as cells.
#[inline(always)]
pub(crate) fn put_cells(d: &Col, out: &[u32; 64], exec: u64) {
    if exec == u64::MAX {
        for l in 0..64 {
            d[l].set(out[l]);
        }
        return;
    }
    // Blended into a copy first, then stored whole: a blend stored in place
    // becomes masked stores, which are slow on some CPUs.
    let mut t = [0u32; 64];
    for l in 0..64 {
        let m = ((exec >> l) as u32 & 1).wrapping_neg();
        t[l] = (out[l] & m) | (d[l].get() & !m);
    }
    for l in 0..64 {
        d[l].set(t[l]);
    }
}

/// One bit per lane.
#[inline(always)]
pub(crate) fn pack(c: &[bool; 64]) -> u64 {
    let mut m = 0u64;
    for (l, &b) in c.iter().enumerate() {
        m |= (b as u64) << l;
    }
    m
}

/// Integer compare of two columns, each value mapped to `key` first;
/// `k` says whether less, equal, greater make the condition true.
#[inline(always)]
fn int_cmp<T: Copy, K: Ord + Copy>(
    x: &[T; 64],
    y: &[T; 64],
    key: impl Fn(T) -> K,
    k: [bool; 3],
    c: &mut [bool; 64],
) {
    for l in 0..64 {
        let (a, b) = (key(x[l]), key(y[l]));
        c[l] = (k[0] & (a < b)) | (k[1] & (a == b)) | (k[2] & (a > b));
    }
}

impl Wave {
    fn fin32(&self, x: u32, i: &Inst, k: u32) -> u32 {
        let mut x = x;
        if i.abs >> k & 1 != 0 {
            x &= !SIGN32;
        }
        if i.neg >> k & 1 != 0 {
            x ^= SIGN32;
        }
        x
    }
    fn fin64(&self, x: u64, i: &Inst, k: u32) -> u64 {
        let mut x = x;
        if i.abs >> k & 1 != 0 {
            x &= !SIGN64;
        }
        if i.neg >> k & 1 != 0 {
            x ^= SIGN64;
        }
        x
    }
    /// The float controls of `i` for inputs and a result of the given
    /// precisions (see [`crate::fpmode`]).
    #[inline(always)]
    fn fp(&self, i: &Inst, inp: u32, out: u32) -> Fp {
        Fp::new(self.hwreg[1], i.omod, i.clamp, inp, out)
    }

    /// Broadcasts the scalar and constant sources into the wave's spare
    /// columns; returns the column of each source. The columns are a small
    /// cache keyed by value: a column is only ever written whole with one
    /// value, so one whose first lane holds the value holds it in every lane,
    /// and the constants and SGPRs a loop uses again need no writing.
    #[inline(always)]
    fn broadcast(&mut self, s: [Src; 3]) -> [usize; 3] {
        let mut at = [ZERO_COL; 3];
        for (k, &src) in s.iter().enumerate() {
            if matches!(src, Src::V(_) | Src::A(_) | Src::None) {
                continue;
            }
            let v = self.rd(src, 0);
            // Direct-mapped by a hash of the value; a slot an earlier source
            // of this instruction holds is not taken: that source's own slot is.
            let slot = (v.wrapping_mul(0x9E37_79B1) >> 29) as usize;
            let c = if at[..k].contains(&slot) {
                BC_OWN + k
            } else {
                slot
            };
            if self.bc[c][0] != v || c >= BC_OWN {
                self.bc[c] = [v; 64];
            }
            at[k] = c;
        }
        at
    }

    /// The three 32-bit source columns of a VALU instruction without DPP or
    /// SDWA: vector registers in place, scalars and constants broadcast into
    /// the wave's spare columns, an absent source as zeros.
    #[inline(always)]
    pub(crate) fn src3(&mut self, s: [Src; 3]) -> [&[u32; 64]; 3] {
        let at = self.broadcast(s);
        let w = &*self;
        let pick = |k: usize| -> &[u32; 64] {
            match s[k] {
                Src::V(n) => &w.v[n as usize],
                Src::A(n) => &w.a[n as usize],
                Src::None => &ZERO,
                _ => &w.bc[at[k]],
            }
        };
        [pick(0), pick(1), pick(2)]
    }

    /// Runs `f` on the source columns (scalars and constants broadcast
    /// first, an absent source as zeros) and the destination column, all as
    /// cells of the register files.
    #[inline(always)]
    fn with_cols<R>(&mut self, s: [Src; 3], dst: u16, f: impl FnOnce([&Col; 3], &Col) -> R) -> R {
        let at = self.broadcast(s);
        let v = cells(&mut self.v);
        let a = cells(&mut self.a);
        let bc = cells(&mut self.bc);
        let srcs = [
            pick_col(s[0], at[0], v, a, bc),
            pick_col(s[1], at[1], v, a, bc),
            pick_col(s[2], at[2], v, a, bc),
        ];
        f(srcs, col_at(v, dst as usize))
    }

    /// 32-bit in, 32-bit out, lane by lane: every lane computed from
    /// columns read in place (a loop the compiler vectorizes), then written
    /// under EXEC. (DPP and SDWA were applied around it: `lanesel`.)
    #[inline(always)]
    fn map32(&mut self, i: &Inst, f: impl Fn(u32, u32, u32) -> u32) {
        let exec = self.exec();
        self.with_cols(
            i.src,
            i.dst,
            #[inline(always)]
            |[x, y, z], d| run3(x, y, z, d, exec, f),
        );
    }

    /// Applies VOP3/DPP abs and neg of source `k` to a whole column of f32s.
    fn fcol32(&self, mut c: [u32; 64], i: &Inst, k: u32) -> [u32; 64] {
        if (i.abs | i.neg) >> k & 1 != 0 {
            c.iter_mut().for_each(|x| *x = self.fin32(*x, i, k));
        }
        c
    }

    /// f32 operation with the input modifiers (abs, neg), MODE's denormal
    /// flushing and the output modifiers (see [`crate::fpmode`]).
    #[inline(always)]
    fn mapf32(&mut self, i: &Inst, f: impl Fn(f32, f32, f32) -> f32) {
        let fp = self.fp(i, 32, 32);
        self.mapf32_fp(i, fp, f)
    }

    /// [`Wave::mapf32`] under the float controls `fp`.
    #[inline(always)]
    fn mapf32_fp(&mut self, i: &Inst, fp: Fp, f: impl Fn(f32, f32, f32) -> f32) {
        let exec = self.exec();
        if (i.abs | i.neg) == 0 && fp.plain() {
            self.with_cols(
                i.src,
                i.dst,
                #[inline(always)]
                |[x, y, z], d| {
                    run3(
                        x,
                        y,
                        z,
                        d,
                        exec,
                        #[inline(always)]
                        |a, b, c| f(f32b(a), f32b(b), f32b(c)).to_bits(),
                    )
                },
            );
            return;
        }
        let absm: [u32; 3] =
            std::array::from_fn(|k| if i.abs >> k & 1 != 0 { !SIGN32 } else { !0 });
        let negm: [u32; 3] = std::array::from_fn(|k| if i.neg >> k & 1 != 0 { SIGN32 } else { 0 });
        if fp.plain() {
            // Only abs and neg: bit operations on the inputs, vectorizable.
            let g = |a: u32, b: u32, c: u32| {
                let m = |v: u32, k: usize| f32b(v & absm[k] ^ negm[k]);
                f(m(a, 0), m(b, 1), m(c, 2)).to_bits()
            };
            self.with_cols(
                i.src,
                i.dst,
                #[inline(always)]
                |[x, y, z], d| run3(x, y, z, d, exec, g),
            );
            return;
        }
        let g = |a: u32, b: u32, c: u32| {
            let m = |v: u32, k: usize| f32b(fp.in32(v & absm[k] ^ negm[k]));
            fp.out32(f(m(a, 0), m(b, 1), m(c, 2)))
        };
        self.with_cols(
            i.src,
            i.dst,
            #[inline(always)]
            |[x, y, z], d| run3(x, y, z, d, exec, g),
        );
    }

    /// f64 operation with the input modifiers, MODE's denormal flushing
    /// and the output modifiers (see [`crate::fpmode`]).
    #[inline(always)]
    fn mapf64(&mut self, i: &Inst, f: impl Fn(f64, f64, f64) -> f64) {
        let exec = self.exec();
        let fp = self.fp(i, 64, 64);
        let kinds = std::array::from_fn(|k| if i.src_regs[k] == 1 { W::B32 } else { W::F64 });
        if (i.abs | i.neg) == 0 && fp.plain() {
            self.with_cols64(
                i.src,
                kinds,
                i.dst,
                #[inline(always)]
                |[x, y, z], d| {
                    run3_64(
                        x,
                        y,
                        z,
                        d,
                        exec,
                        #[inline(always)]
                        |a, b, c| f(f64b(a), f64b(b), f64b(c)).to_bits(),
                    )
                },
            );
            return;
        }
        let absm: [u64; 3] =
            std::array::from_fn(|k| if i.abs >> k & 1 != 0 { !SIGN64 } else { !0 });
        let negm: [u64; 3] = std::array::from_fn(|k| if i.neg >> k & 1 != 0 { SIGN64 } else { 0 });
        let m = |v: u64, k: usize| f64b(fp.in64(v & absm[k] ^ negm[k]));
        self.with_cols64(
            i.src,
            kinds,
            i.dst,
            #[inline(always)]
            |[x, y, z], d| {
                run3_64(
                    x,
                    y,
                    z,
                    d,
                    exec,
                    #[inline(always)]
                    |a, b, c| fp.out64(f(m(a, 0), m(b, 1), m(c, 2))),
                )
            },
        );
    }

    /// [`Wave::with_cols`] for 64-bit operands: each source and the
    /// destination as the two columns of a register pair; scalar and
    /// constant sources, read as `kinds` says, broadcast into each source's
    /// own pair of spare columns.
    #[inline(always)]
    fn with_cols64<R>(
        &mut self,
        s: [Src; 3],
        kinds: [W; 3],
        dst: u16,
        f: impl FnOnce([(&Col, &Col); 3], (&Col, &Col)) -> R,
    ) -> R {
        for (k, &src) in s.iter().enumerate() {
            if matches!(src, Src::V(_) | Src::A(_) | Src::None) {
                continue;
            }
            let v = match kinds[k] {
                W::F64 => self.rd64(src, 0, true),
                W::B64 => self.rd64(src, 0, false),
                W::B32 => self.rd(src, 0) as u64,
            };
            for (c, half) in [
                (BC64 + 2 * k, v as u32),
                (BC64 + 2 * k + 1, (v >> 32) as u32),
            ] {
                if self.bc[c][0] != half {
                    self.bc[c] = [half; 64];
                }
            }
        }
        let v = cells(&mut self.v);
        let a = cells(&mut self.a);
        let bc = cells(&mut self.bc);
        let pick = |k: usize| pick_pair(s[k], k, v, a, bc);
        let d = (col_at(v, dst as usize), col_at(v, dst as usize + 1));
        f([pick(0), pick(1), pick(2)], d)
    }

    /// General lane-wise form: compute every active lane first, then write
    /// (so destinations may overlap sources).
    fn lanewise(&mut self, i: &Inst, wide: bool, f: impl Fn(&Wave, usize) -> u64) {
        let exec = self.exec();
        let mut out = [0u64; 64];
        for l in lanes(exec) {
            out[l] = f(self, l);
        }
        if wide {
            self.write64(i.dst, exec, &out);
        } else {
            let d = i.dst as usize;
            for l in lanes(exec) {
                self.v[d][l] = out[l] as u32;
            }
        }
    }

    /// Writes 64-bit results to the register pair at `dst` under `exec`.
    #[inline]
    fn write64(&mut self, dst: u16, exec: u64, out: &[u64; 64]) {
        let d = dst as usize;
        let (lo, hi) = self.v.split_at_mut(d + 1);
        let (lo, hi) = (&mut lo[d], &mut hi[0]);
        let mut l32 = [0u32; 64];
        let mut h32 = [0u32; 64];
        for l in 0..64 {
            l32[l] = out[l] as u32;
            h32[l] = (out[l] >> 32) as u32;
        }
        put32(lo, &l32, exec);
        put32(hi, &h32, exec);
    }

    /// A 32-bit source to a 64-bit result in the register pair at `dst`.
    /// A scalar or constant source gives every lane the same value: it is
    /// converted once.
    #[inline(always)]
    fn widen32(&mut self, i: &Inst, f: impl Fn(u32) -> u64) {
        let exec = self.exec();
        let out = match i.src[0] {
            Src::V(_) | Src::A(_) => {
                let Opnd::Col(x) = self.opnd(i.src[0]) else {
                    return;
                };
                let mut out = [0u64; 64];
                for l in 0..64 {
                    out[l] = f(x[l]);
                }
                out
            }
            s => [f(self.rd(s, 0)); 64],
        };
        self.write64(i.dst, exec, &out);
    }

    /// Add/sub with carry: `f(x, y, carry_in) -> (result, carry_out)`.
    /// With clamp a carry or borrow saturates the result to `sat` (all ones
    /// for additions, 0 for subtractions).
    #[inline(always)]
    fn carry_op(
        &mut self,
        i: &Inst,
        cin: bool,
        sat: u32,
        f: impl Fn(u32, u32, u32) -> (u32, bool),
    ) {
        let mask = if cin {
            self.rd64(i.src[2], 0, false)
        } else {
            0
        };
        let clamp = i.clamp;
        let exec = self.exec();
        let cout = self.with_cols(
            [i.src[0], i.src[1], Src::None],
            i.dst,
            #[inline(always)]
            |[x, y, _], d| {
                // Eight lanes at a time, read before written (d may be a source).
                let mut cout = 0u64;
                for c in 0..8 {
                    let b = c * 8;
                    let e = (exec >> b) as u32 & 0xff;
                    if e == 0 {
                        continue;
                    }
                    let mut r = [0u32; 8];
                    let mut co = [false; 8];
                    for j in 0..8 {
                        let cin = (mask >> (b + j) & 1) as u32;
                        (r[j], co[j]) = f(x[b + j].get(), y[b + j].get(), cin);
                        if clamp && co[j] {
                            r[j] = sat;
                        }
                    }
                    for j in 0..8 {
                        if e >> j & 1 != 0 {
                            d[b + j].set(r[j]);
                            cout |= (co[j] as u64) << (b + j);
                        }
                    }
                }
                cout
            },
        );
        self.sw64(i.sdst as u16, cout);
    }

    fn compare(&mut self, i: &Inst) {
        let exec = self.exec();
        let want = cond_mask(i.cond);
        // Which outcomes make the condition true: less, equal, greater, unordered.
        let (lt, eq, gt, un) = (want & 1 != 0, want & 2 != 0, want & 4 != 0, want & 8 != 0);
        let mut c = [false; 64];
        match i.ty {
            Ty::U64 | Ty::I64 => {
                // Both pairs read in place, compared lane by lane.
                let signed = i.ty == Ty::I64;
                let k = [lt, eq, gt];
                self.with_cols64(
                    [i.src[0], i.src[1], Src::None],
                    [W::B64; 3],
                    // Destination unused: compares write a lane mask.
                    0,
                    #[inline(always)]
                    |[x, y, _], _| {
                        let get = |p: (&Col, &Col), l: usize| {
                            p.0[l].get() as u64 | (p.1[l].get() as u64) << 32
                        };
                        let (mut xs, mut ys) = ([0u64; 64], [0u64; 64]);
                        for l in 0..64 {
                            xs[l] = get(x, l);
                            ys[l] = get(y, l);
                        }
                        if signed {
                            int_cmp(&xs, &ys, |v| v as i64, k, &mut c);
                        } else {
                            int_cmp(&xs, &ys, |v| v, k, &mut c);
                        }
                    },
                );
            }
            Ty::F64 => {
                // Both pairs read in place; abs and neg as bit masks, then
                // MODE's input flush.
                let fp = self.fp(i, 64, 64);
                let absm: [u64; 2] =
                    std::array::from_fn(|k| if i.abs >> k & 1 != 0 { !SIGN64 } else { !0 });
                let negm: [u64; 2] =
                    std::array::from_fn(|k| if i.neg >> k & 1 != 0 { SIGN64 } else { 0 });
                self.with_cols64(
                    [i.src[0], i.src[1], Src::None],
                    [W::F64; 3],
                    0,
                    #[inline(always)]
                    |[x, y, _], _| {
                        for l in 0..64 {
                            let get = |p: (&Col, &Col), k: usize| {
                                let v = p.0[l].get() as u64 | (p.1[l].get() as u64) << 32;
                                f64b(fp.in64(v & absm[k] ^ negm[k]))
                            };
                            let (a, b) = (get(x, 0), get(y, 1));
                            c[l] = (lt & (a < b))
                                | (eq & (a == b))
                                | (gt & (a > b))
                                | (un & (a.is_nan() | b.is_nan()));
                        }
                    },
                );
            }
            Ty::F32 => {
                let fp = self.fp(i, 32, 32);
                let x = self.fcol32(self.col(i.src[0]), i, 0);
                let y = self.fcol32(self.col(i.src[1]), i, 1);
                for l in 0..64 {
                    let (a, b) = (f32b(fp.in32(x[l])), f32b(fp.in32(y[l])));
                    c[l] = (lt & (a < b))
                        | (eq & (a == b))
                        | (gt & (a > b))
                        | (un & (a.is_nan() | b.is_nan()));
                }
            }
            ty => {
                let k = [lt, eq, gt];
                // Each integer type compared in its own order.
                let [x, y, _] = self.src3([i.src[0], i.src[1], Src::None]);
                match ty {
                    Ty::I32 => int_cmp(x, y, |v| v as i32, k, &mut c),
                    Ty::U16 => int_cmp(x, y, |v| v as u16, k, &mut c),
                    Ty::I16 => int_cmp(x, y, |v| v as i16, k, &mut c),
                    _ => int_cmp(x, y, |v| v, k, &mut c),
                }
            }
        }
        let m = pack(&c) & exec;
        self.sw64(i.sdst as u16, m);
        if i.op == Op::VCmpx {
            self.set_exec(m);
        }
    }

    /// `v_cmp_class`: no input flush (denormals are a class of their own).
    fn compare_class(&mut self, i: &Inst) {
        let exec = self.exec();
        let mask = self.col(i.src[1]);
        let mut c = [false; 64];
        // Every lane classified (a pure function), the inactive ones masked off.
        if i.ty == Ty::F64 {
            let (absm, negm) = (
                if i.abs & 1 != 0 { !SIGN64 } else { !0 },
                if i.neg & 1 != 0 { SIGN64 } else { 0 },
            );
            self.with_cols64(
                [i.src[0], Src::None, Src::None],
                [W::F64; 3],
                0,
                #[inline(always)]
                |[x, _, _], _| {
                    for l in 0..64 {
                        let v = x.0[l].get() as u64 | (x.1[l].get() as u64) << 32;
                        c[l] = mask[l] & class_bit_f64(f64b(v & absm ^ negm)) != 0;
                    }
                },
            );
        } else {
            let x = self.fcol32(self.col(i.src[0]), i, 0);
            for l in 0..64 {
                c[l] = mask[l] & class_bit_f32(f32b(x[l])) != 0;
            }
        }
        let m = pack(&c) & exec;
        self.sw64(i.sdst as u16, m);
        if i.ret {
            self.set_exec(m);
        }
    }

    /// v_mfma_f32_32x32x2f32: one 32×32 block, K = 2. Lane l holds A[l%32][l/32]
    /// and B[l/32][l%32]; result register r of lane l is
    /// C[8(r/4) + 4(l/32) + r%4][l%32].
    fn mfma_32x32x2f32(&mut self, i: &Inst) {
        let a_of = |w: &Wave, l: usize| f32b(w.rd(i.src[0], l));
        let b_of = |w: &Wave, l: usize| f32b(w.rd(i.src[1], l));
        let (Src::V(_) | Src::A(_), Src::V(_) | Src::A(_)) = (i.src[0], i.src[1]) else {
            return;
        };
        let mut out = [[0u32; 64]; 16];
        for (r, reg) in out.iter_mut().enumerate() {
            for (l, o) in reg.iter_mut().enumerate() {
                let row = 8 * (r / 4) + 4 * (l / 32) + r % 4;
                let col = l % 32;
                let c = match i.src[2] {
                    Src::V(n) => self.v[n as usize + r][l],
                    Src::A(n) => self.a[n as usize + r][l],
                    s => self.rd(s, l),
                };
                let mut acc = f32b(c);
                for k in 0..2 {
                    acc = a_of(self, row + 32 * k).mul_add(b_of(self, col + 32 * k), acc);
                }
                *o = acc.to_bits();
            }
        }
        let d = i.dst as usize;
        for (r, reg) in out.iter().enumerate() {
            if i.acc {
                self.a[d + r] = *reg;
            } else {
                self.v[d + r] = *reg;
            }
        }
    }

    /// Packed f32 (gfx90a): each source is a register pair; the low result
    /// takes from each source the half `opsel` picks, the high result the
    /// half `opsel_hi` picks. `v_pk_mov_b32` takes its low half from src0 and
    /// its high half from src1, each picked by `opsel`.
    fn packed(&mut self, i: &Inst) {
        let half = |w: &Wave, s: Src, l: usize, hi: bool| -> u32 {
            match (s, hi) {
                (Src::V(n), true) => w.v[n as usize + 1][l],
                (Src::A(n), true) => w.a[n as usize + 1][l],
                (Src::S(c), true) => w.s[c as usize + 1],
                _ => w.rd(s, l),
            }
        };
        let exec = self.exec();
        let fp = self.fp(i, 32, 32);
        let mut out = [0u64; 64];
        for l in lanes(exec) {
            let (lo, hi) = if i.op == Op::VPkMovB32 {
                (
                    half(self, i.src[0], l, i.opsel & 1 != 0),
                    half(self, i.src[1], l, i.opsel & 2 != 0),
                )
            } else {
                let pick = |k: usize, sel: u8, neg: u8| -> f32 {
                    let v = half(self, i.src[k], l, sel >> k & 1 != 0);
                    f32b(fp.in32(if neg >> k & 1 != 0 { v ^ SIGN32 } else { v }))
                };
                let op = |a: f32, b: f32, c: f32| -> u32 {
                    let r = match i.op {
                        Op::VPkAddF32 => a + b,
                        Op::VPkMulF32 => a * b,
                        _ => a.mul_add(b, c),
                    };
                    fp.out32(r)
                };
                (
                    op(
                        pick(0, i.opsel, i.neg),
                        pick(1, i.opsel, i.neg),
                        pick(2, i.opsel, i.neg),
                    ),
                    op(
                        pick(0, i.opsel_hi, i.neg_hi),
                        pick(1, i.opsel_hi, i.neg_hi),
                        pick(2, i.opsel_hi, i.neg_hi),
                    ),
                )
            };
            out[l] = lo as u64 | (hi as u64) << 32;
        }
        self.write64(i.dst, exec, &out);
    }

    /// `v_div_scale`: the first step of clang's correctly rounded division
    /// (src0 = the value to scale, src1 = denominator, src2 = numerator).
    /// As the ISA defines it: both operands are scaled by 2^±128 (2^±64 for
    /// f32) when that keeps the Newton-Raphson steps away from subnormals
    /// and overflow, and when only one of them can be scaled, VCC asks
    /// `v_div_fmas` to scale the quotient back. A zero numerator or
    /// denominator gives NaN (`v_div_fixup` then produces the IEEE result).
    fn div_scale(&mut self, i: &Inst) -> Result<(), Exception> {
        let wide = i.op == Op::VDivScaleF64;
        let exec = self.exec();
        let fp = if wide {
            self.fp(i, 64, 64)
        } else {
            self.fp(i, 32, 32)
        };
        let mut out = [0u64; 64];
        let mut vcc = 0u64;
        for l in lanes(exec) {
            let (r, v) = if wide {
                let g =
                    |k: usize| f64b(fp.in64(self.fin64(self.rd64(i.src[k], l, true), i, k as u32)));
                let (r, v) = div_scale_f64(g(0), g(1), g(2));
                (fp.out64(r.unwrap_or(g(0))), v)
            } else {
                let g = |k: usize| f32b(fp.in32(self.fin32(self.rd(i.src[k], l), i, k as u32)));
                let (r, v) = div_scale_f32(g(0), g(1), g(2));
                (fp.out32(r.unwrap_or(g(0))) as u64, v)
            };
            out[l] = r;
            vcc |= (v as u64) << l;
        }
        if wide {
            self.write64(i.dst, exec, &out);
        } else {
            let d = &mut self.v[i.dst as usize];
            for l in lanes(exec) {
                d[l] = out[l] as u32;
            }
        }
        self.sw64(i.sdst as u16, vcc);
        Ok(())
    }

    /// `v_div_fmas`: fma(S0, S1, S2), and where VCC is set (by
    /// `v_div_scale`) times 2^±128 (2^±64 for f32), rounded once.
    fn div_fmas(&mut self, i: &Inst) {
        let (exec, vcc) = (self.exec(), self.vcc());
        if i.op == Op::VDivFmasF32 {
            if vcc & exec == 0 {
                return self.mapf32(i, |x, y, z| x.mul_add(y, z));
            }
            let fp = self.fp(i, 32, 32);
            self.lanewise(i, false, |w, l| {
                let g = |k: usize| f32b(fp.in32(w.fin32(w.rd(i.src[k], l), i, k as u32))) as f64;
                let (x, y, z) = (g(0), g(1), g(2));
                let r = if vcc >> l & 1 != 0 {
                    let k = div_fmas_scale((z as f32).to_bits() >> 23 & 0xff, 127, 64);
                    fma_scaled(x, y, z, k, 24, -149, 128) as f32
                } else {
                    (x as f32).mul_add(y as f32, z as f32)
                };
                fp.out32(r) as u64
            });
        } else {
            if vcc & exec == 0 {
                return self.mapf64(i, |x, y, z| x.mul_add(y, z));
            }
            let fp = self.fp(i, 64, 64);
            self.lanewise(i, true, |w, l| {
                let g = |k: usize| f64b(fp.in64(w.fin64(w.rd64(i.src[k], l, true), i, k as u32)));
                let (x, y, z) = (g(0), g(1), g(2));
                let r = if vcc >> l & 1 != 0 {
                    let k = div_fmas_scale((z.to_bits() >> 52 & 0x7ff) as u32, 1023, 128);
                    fma_scaled(x, y, z, k, 53, -1074, 1024)
                } else {
                    x.mul_add(y, z)
                };
                fp.out64(r)
            });
        }
    }

    /// Executes a VALU instruction: with AVX2 and FMA where the CPU has them
    /// (twice the lanes per host instruction as the baseline x86-64 build).
    #[inline(always)]
    pub(crate) fn valu(&mut self, i: &Inst) -> Result<(), Exception> {
        self.valu_on(Simd::detect(), i)
    }

    /// [`Wave::valu`] with the CPU's features detected once by the caller.
    #[inline(always)]
    pub(crate) fn valu_on(&mut self, simd: Simd, i: &Inst) -> Result<(), Exception> {
        #[cfg(target_arch = "x86_64")]
        if simd.0 {
            // SAFETY: `Simd` is only true when the CPU has AVX2 and FMA, the
            // features the function is compiled for.
            return unsafe { self.valu_avx2(i) };
        }
        let _ = simd;
        self.valu_base(i)
    }

    /// The VALU inlined into the caller, compiled with the caller's target
    /// features (the AVX2 wave loop in `workgroup`).
    #[cfg(not(debug_assertions))]
    #[inline(always)]
    pub(crate) fn valu_inline(&mut self, i: &Inst) -> Result<(), Exception> {
        self.valu_impl(i)
    }

    /// Where tests run (debug assertions on), the AVX2 wave loop calls
    /// the AVX2 VALU instead: one copy of the VALU fewer to compile, and the
    /// VALU is the crate's largest function (see BENCHMARKS.md, cold CI run).
    #[cfg(debug_assertions)]
    #[inline(always)]
    pub(crate) fn valu_inline(&mut self, i: &Inst) -> Result<(), Exception> {
        // SAFETY: only the AVX2 wave loop calls this, which runs only where
        // the CPU has AVX2 and FMA.
        unsafe { self.valu_avx2(i) }
    }

    #[inline(never)]
    fn valu_base(&mut self, i: &Inst) -> Result<(), Exception> {
        self.valu_impl(i)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,bmi1,bmi2,lzcnt,popcnt")]
    fn valu_avx2(&mut self, i: &Inst) -> Result<(), Exception> {
        self.valu_impl(i)
    }

    #[inline(always)]
    fn valu_impl(&mut self, i: &Inst) -> Result<(), Exception> {
        use Op::*;
        if i.dpp != 0 || i.sdwa != 0 {
            return self.valu_remapped(i);
        }
        match i.op {
            VMovB32 => self.map32(i, |x, _, _| x),
            VCndmaskB32 => {
                let m = self.rd64(i.src[2], 0, false);
                let exec = self.exec();
                let [x, y, _] = self.src3([i.src[0], i.src[1], Src::None]);
                let mut out = [0u32; 64];
                for l in 0..64 {
                    let pick_y = ((m >> l) as u32 & 1).wrapping_neg();
                    out[l] = (y[l] & pick_y) | (x[l] & !pick_y);
                }
                put32(&mut self.v[i.dst as usize], &out, exec);
            }
            VAddF32 => self.mapf32(i, |x, y, _| x + y),
            VSubF32 => self.mapf32(i, |x, y, _| x - y),
            VSubrevF32 => self.mapf32(i, |x, y, _| y - x),
            VMulF32 => self.mapf32(i, |x, y, _| x * y),
            // min/max order -0 below +0 and, in IEEE mode, quiet a
            // signalling NaN operand (fpmode::max32).
            VMinF32 => {
                let ieee = self.fp(i, 32, 32).ieee;
                self.mapf32(i, move |x, y, _| min32(x, y, ieee))
            }
            VMaxF32 => {
                let ieee = self.fp(i, 32, 32).ieee;
                self.mapf32(i, move |x, y, _| max32(x, y, ieee))
            }
            VMin3F32 => {
                let ieee = self.fp(i, 32, 32).ieee;
                self.mapf32(i, move |x, y, z| min32(min32(x, y, ieee), z, ieee))
            }
            VMax3F32 => {
                let ieee = self.fp(i, 32, 32).ieee;
                self.mapf32(i, move |x, y, z| max32(max32(x, y, ieee), z, ieee))
            }
            // In the AVX2 build `mul_add` is one FMA instruction per 8 lanes.
            VFmaF32 | VFmacF32 => self.mapf32(i, |x, y, z| x.mul_add(y, z)),
            // The unfused multiply-adds, which always flush denormals.
            VMacF32 | VMadF32 | VMadmkF32 | VMadakF32 => {
                let fp = Fp::flushing(self.hwreg[1], i.omod, i.clamp);
                self.mapf32_fp(i, fp, |x, y, z| x * y + z)
            }
            VPermB32 => self.map32(i, |x, y, sel| {
                // Each result byte picks a byte of {S0, S1} (S1 low) by selector
                // 0..=7, 12 gives 0x00, 13.. give 0xff; 8..=11 replicate the sign
                // bit of S1 byte 1, S1 byte 3, S0 byte 1, S0 byte 3.
                let both = (x as u64) << 32 | y as u64;
                let mut r = 0u32;
                for k in 0..4 {
                    let s = (sel >> (8 * k)) & 0xff;
                    let b = match s {
                        0..=7 => (both >> (8 * s)) as u8 as u32,
                        8 => (y >> 15 & 1) * 0xff,
                        9 => (y >> 31 & 1) * 0xff,
                        10 => (x >> 15 & 1) * 0xff,
                        11 => (x >> 31 & 1) * 0xff,
                        12 => 0,
                        _ => 0xff,
                    };
                    r |= b << (8 * k);
                }
                r
            }),
            VLdexpF32 => {
                let fp = self.fp(i, 32, 32);
                let d = i.dst as usize;
                for l in lanes(self.exec()) {
                    let x = f32b(fp.in32(self.fin32(self.rd(i.src[0], l), i, 0)));
                    let e = self.rd(i.src[1], l) as i32;
                    self.v[d][l] = fp.out32(ldexp(x as f64, e) as f32);
                }
            }
            // Integer clamp saturates the exact result.
            VMulI32I24 if i.clamp => self.map32(i, |x, y, _| sat_i32(i24(x) * i24(y))),
            VMulU32U24 if i.clamp => self.map32(i, |x, y, _| {
                sat_u32((x & 0xff_ffff) as i64 * (y & 0xff_ffff) as i64)
            }),
            VMadI32I24 if i.clamp => {
                self.map32(i, |x, y, z| sat_i32(i24(x) * i24(y) + z as i32 as i64))
            }
            VMadU32U24 if i.clamp => self.map32(i, |x, y, z| {
                sat_u32((x & 0xff_ffff) as i64 * (y & 0xff_ffff) as i64 + z as i64)
            }),
            VAddU16 if i.clamp => {
                self.map32(i, |x, y, _| (x as u16).saturating_add(y as u16) as u32)
            }
            VSubU16 if i.clamp => {
                self.map32(i, |x, y, _| (x as u16).saturating_sub(y as u16) as u32)
            }
            VSubrevU16 if i.clamp => {
                self.map32(i, |x, y, _| (y as u16).saturating_sub(x as u16) as u32)
            }
            VMulLoU16 if i.clamp => {
                self.map32(i, |x, y, _| (x as u16).saturating_mul(y as u16) as u32)
            }
            VMulI32I24 => self.map32(i, |x, y, _| {
                ((x << 8) as i32 >> 8).wrapping_mul((y << 8) as i32 >> 8) as u32
            }),
            VMulU32U24 => self.map32(i, |x, y, _| (x & 0xff_ffff).wrapping_mul(y & 0xff_ffff)),
            VMadU32U24 => self.map32(i, |x, y, z| {
                (x & 0xff_ffff).wrapping_mul(y & 0xff_ffff).wrapping_add(z)
            }),
            // 16-bit integer ops: operands are the low halves; the result is
            // zero-extended to 32 bits (gfx9 clears the high half of the VGPR).
            VAddU16 => self.map32(i, |x, y, _| (x as u16).wrapping_add(y as u16) as u32),
            VSubU16 => self.map32(i, |x, y, _| (x as u16).wrapping_sub(y as u16) as u32),
            VSubrevU16 => self.map32(i, |x, y, _| (y as u16).wrapping_sub(x as u16) as u32),
            VMulLoU16 => self.map32(i, |x, y, _| (x as u16).wrapping_mul(y as u16) as u32),
            VLshlrevB16 => self.map32(i, |x, y, _| ((y as u16) << (x & 15)) as u32),
            VLshrrevB16 => self.map32(i, |x, y, _| ((y as u16) >> (x & 15)) as u32),
            VAshrrevI16 => self.map32(i, |x, y, _| ((y as i16) >> (x & 15)) as u16 as u32),
            VMinU16 => self.map32(i, |x, y, _| (x as u16).min(y as u16) as u32),
            VMaxU16 => self.map32(i, |x, y, _| (x as u16).max(y as u16) as u32),
            VMinI16 => self.map32(i, |x, y, _| (x as i16).min(y as i16) as u16 as u32),
            VMaxI16 => self.map32(i, |x, y, _| (x as i16).max(y as i16) as u16 as u32),
            // Conversions to float take the output modifiers.
            VCvtF32Ubyte0 | VCvtF32Ubyte1 | VCvtF32Ubyte2 | VCvtF32Ubyte3 => {
                let fp = self.fp(i, 32, 32);
                let shift = match i.op {
                    VCvtF32Ubyte0 => 0,
                    VCvtF32Ubyte1 => 8,
                    VCvtF32Ubyte2 => 16,
                    _ => 24,
                };
                self.map32(i, move |x, _, _| fp.out32((x >> shift) as u8 as f32))
            }
            VMadI32I24 => self.map32(i, |x, y, z| {
                (((x << 8) as i32 >> 8).wrapping_mul((y << 8) as i32 >> 8) as u32).wrapping_add(z)
            }),
            VMulHiU32U24 => self.map32(i, |x, y, _| {
                (((x & 0xff_ffff) as u64 * (y & 0xff_ffff) as u64) >> 32) as u32
            }),
            VMulHiI32I24 => self.map32(i, |x, y, _| {
                ((((x << 8) as i32 >> 8) as i64 * ((y << 8) as i32 >> 8) as i64) >> 32) as u32
            }),
            VMinI32 => self.map32(i, |x, y, _| (x as i32).min(y as i32) as u32),
            VMaxI32 => self.map32(i, |x, y, _| (x as i32).max(y as i32) as u32),
            VMinU32 => self.map32(i, |x, y, _| x.min(y)),
            VMaxU32 => self.map32(i, |x, y, _| x.max(y)),
            VMin3I32 => self.map32(i, |x, y, z| (x as i32).min(y as i32).min(z as i32) as u32),
            VMax3I32 => self.map32(i, |x, y, z| (x as i32).max(y as i32).max(z as i32) as u32),
            VMin3U32 => self.map32(i, |x, y, z| x.min(y).min(z)),
            VMax3U32 => self.map32(i, |x, y, z| x.max(y).max(z)),
            VLshrrevB32 => self.map32(i, |x, y, _| y >> (x & 31)),
            VAshrrevI32 => self.map32(i, |x, y, _| ((y as i32) >> (x & 31)) as u32),
            VLshlrevB32 => self.map32(i, |x, y, _| y << (x & 31)),
            VAndB32 => self.map32(i, |x, y, _| x & y),
            VOrB32 => self.map32(i, |x, y, _| x | y),
            VXorB32 => self.map32(i, |x, y, _| x ^ y),
            VNotB32 => self.map32(i, |x, _, _| !x),
            VBfrevB32 => self.map32(i, |x, _, _| x.reverse_bits()),
            VFfbhU32 => self.map32(
                i,
                |x, _, _| {
                    if x == 0 {
                        u32::MAX
                    } else {
                        x.leading_zeros()
                    }
                },
            ),
            VFfblB32 => self.map32(
                i,
                |x, _, _| {
                    if x == 0 {
                        u32::MAX
                    } else {
                        x.trailing_zeros()
                    }
                },
            ),
            // Clamp on unsigned adds and subtracts saturates.
            VAddU32 if i.clamp => self.map32(i, |x, y, _| x.saturating_add(y)),
            VSubU32 if i.clamp => self.map32(i, |x, y, _| x.saturating_sub(y)),
            VSubrevU32 if i.clamp => self.map32(i, |x, y, _| y.saturating_sub(x)),
            VAddU32 => self.map32(i, |x, y, _| x.wrapping_add(y)),
            VSubU32 => self.map32(i, |x, y, _| x.wrapping_sub(y)),
            VSubrevU32 => self.map32(i, |x, y, _| y.wrapping_sub(x)),
            VAddCoU32 => self.carry_op(i, false, u32::MAX, |x, y, _| x.overflowing_add(y)),
            VSubCoU32 => self.carry_op(i, false, 0, |x, y, _| x.overflowing_sub(y)),
            VSubrevCoU32 => self.carry_op(i, false, 0, |x, y, _| y.overflowing_sub(x)),
            VAddcCoU32 => self.carry_op(i, true, u32::MAX, |x, y, c| {
                let r = x as u64 + y as u64 + c as u64;
                (r as u32, r >> 32 != 0)
            }),
            VSubbCoU32 => self.carry_op(i, true, 0, |x, y, c| {
                (
                    x.wrapping_sub(y).wrapping_sub(c),
                    (y as u64 + c as u64) > x as u64,
                )
            }),
            VSubbrevCoU32 => self.carry_op(i, true, 0, |x, y, c| {
                (
                    y.wrapping_sub(x).wrapping_sub(c),
                    (x as u64 + c as u64) > y as u64,
                )
            }),
            VMulLoU32 => self.map32(i, |x, y, _| x.wrapping_mul(y)),
            VMulHiU32 => self.map32(i, |x, y, _| ((x as u64 * y as u64) >> 32) as u32),
            VMulHiI32 => self.map32(i, |x, y, _| {
                ((x as i32 as i64 * y as i32 as i64) >> 32) as u32
            }),
            VAdd3U32 if i.clamp => self.map32(i, |x, y, z| sat_u32(x as i64 + y as i64 + z as i64)),
            VAdd3U32 => self.map32(i, |x, y, z| x.wrapping_add(y).wrapping_add(z)),
            VLshlAddU32 => self.map32(i, |x, y, z| (x << (y & 31)).wrapping_add(z)),
            VAddLshlU32 => self.map32(i, |x, y, z| x.wrapping_add(y) << (z & 31)),
            VLshlOrB32 => self.map32(i, |x, y, z| (x << (y & 31)) | z),
            VAndOrB32 => self.map32(i, |x, y, z| (x & y) | z),
            VOr3B32 => self.map32(i, |x, y, z| x | y | z),
            VXadU32 => self.map32(i, |x, y, z| (x ^ y).wrapping_add(z)),
            VBfeU32 => self.map32(i, |x, y, z| bfe32(x, y & 31, z & 31, false)),
            VBfeI32 => self.map32(i, |x, y, z| bfe32(x, y & 31, z & 31, true)),
            VBfiB32 => self.map32(i, |x, y, z| (x & y) | (!x & z)),
            VAlignbitB32 => self.map32(i, |x, y, z| {
                ((((x as u64) << 32) | y as u64) >> (z & 31)) as u32
            }),
            VBcntU32B32 => self.map32(i, |x, y, _| x.count_ones().wrapping_add(y)),
            VMbcntLoU32B32 => {
                let d = i.dst as usize;
                for l in lanes(self.exec()) {
                    let m = self.rd(i.src[0], l) as u64 & ((1u64 << l.min(32)) - 1);
                    self.v[d][l] = m.count_ones().wrapping_add(self.rd(i.src[1], l));
                }
            }
            VMbcntHiU32B32 => {
                let d = i.dst as usize;
                for l in lanes(self.exec()) {
                    let below = if l >= 32 { (1u64 << (l - 32)) - 1 } else { 0 };
                    let m = self.rd(i.src[0], l) as u64 & below;
                    self.v[d][l] = m.count_ones().wrapping_add(self.rd(i.src[1], l));
                }
            }
            VCvtF32I32 => {
                let fp = self.fp(i, 32, 32);
                self.map32(i, move |x, _, _| fp.out32(x as i32 as f32))
            }
            VCvtF32U32 => {
                let fp = self.fp(i, 32, 32);
                self.map32(i, move |x, _, _| fp.out32(x as f32))
            }
            // Float to integer: toward zero, saturating, NaN to 0 (Rust's
            // `as` is the ISA's rule).
            VCvtU32F32 | VCvtI32F32 => {
                let fp = self.fp(i, 32, 32);
                let (absm, negm) = (
                    if i.abs & 1 != 0 { !SIGN32 } else { !0 },
                    if i.neg & 1 != 0 { SIGN32 } else { 0 },
                );
                let x = move |a: u32| f32b(fp.in32(a & absm ^ negm));
                if i.op == VCvtU32F32 {
                    self.map32(i, move |a, _, _| x(a) as u32)
                } else {
                    self.map32(i, move |a, _, _| x(a) as i32 as u32)
                }
            }
            VRcpF32 | VRcpIflagF32 => self.mapf32(i, |x, _, _| 1.0 / x),
            VRsqF32 => self.mapf32(i, |x, _, _| 1.0 / x.sqrt()),
            VSqrtF32 => self.mapf32(i, |x, _, _| x.sqrt()),
            VFractF32 => self.mapf32(i, |x, _, _| {
                if x.is_infinite() {
                    f32::NAN
                } else {
                    (x - x.floor()).min(f32::from_bits(0x3f7f_ffff))
                }
            }),
            VTruncF32 => self.mapf32(i, |x, _, _| x.trunc()),
            VFloorF32 => self.mapf32(i, |x, _, _| x.floor()),
            VCeilF32 => self.mapf32(i, |x, _, _| x.ceil()),
            VRndneF32 => self.mapf32(i, |x, _, _| x.round_ties_even()),
            VExpF32 => self.mapf32(i, |x, _, _| x.exp2()),
            VLogF32 => self.mapf32(i, |x, _, _| x.log2()),
            VCvtF16F32 => self.map32(i, |x, _, _| f32_to_f16(f32b(x)) as u32),
            VCvtF32F16 => self.map32(i, |x, _, _| f16_to_f32(x as u16).to_bits()),
            VCvtF64I32 => {
                let fp = self.fp(i, 32, 64);
                self.widen32(i, move |a| fp.out64(a as i32 as f64))
            }
            VCvtF64U32 => {
                let fp = self.fp(i, 32, 64);
                self.widen32(i, move |a| fp.out64(a as f64))
            }
            VCvtF64F32 => {
                let fp = self.fp(i, 32, 64);
                let (absm, negm) = (
                    if i.abs & 1 != 0 { !SIGN32 } else { !0 },
                    if i.neg & 1 != 0 { SIGN32 } else { 0 },
                );
                self.widen32(i, move |a| fp.out64(f32b(fp.in32(a & absm ^ negm)) as f64))
            }
            VCvtF32F64 => {
                let fp = self.fp(i, 64, 32);
                self.lanewise(i, false, |w, l| {
                    let x = f64b(fp.in64(w.fin64(w.rd64(i.src[0], l, true), i, 0)));
                    fp.out32(x as f32) as u64
                })
            }
            VCvtI32F64 | VCvtU32F64 => {
                let fp = self.fp(i, 64, 32);
                self.lanewise(i, false, |w, l| {
                    let x = f64b(fp.in64(w.fin64(w.rd64(i.src[0], l, true), i, 0)));
                    if i.op == VCvtI32F64 {
                        x as i32 as u32 as u64
                    } else {
                        x as u32 as u64
                    }
                })
            }
            VAddF64 => self.mapf64(i, |x, y, _| x + y),
            VMulF64 => self.mapf64(i, |x, y, _| x * y),
            VMinF64 => {
                let ieee = self.fp(i, 64, 64).ieee;
                self.mapf64(i, move |x, y, _| min64(x, y, ieee))
            }
            VMaxF64 => {
                let ieee = self.fp(i, 64, 64).ieee;
                self.mapf64(i, move |x, y, _| max64(x, y, ieee))
            }
            VFmaF64 | VFmacF64 => self.mapf64(i, |x, y, z| x.mul_add(y, z)),
            VRcpF64 => self.mapf64(i, |x, _, _| 1.0 / x),
            VRsqF64 => self.mapf64(i, |x, _, _| 1.0 / x.sqrt()),
            VSqrtF64 => self.mapf64(i, |x, _, _| x.sqrt()),
            VLdexpF64 => {
                let exec = self.exec();
                let (absm, negm) = (
                    if i.abs & 1 != 0 { !SIGN64 } else { !0 },
                    if i.neg & 1 != 0 { SIGN64 } else { 0 },
                );
                let fp = self.fp(i, 64, 64);
                if !fp.plain() {
                    self.lanewise(i, true, |w, l| {
                        let x = f64b(fp.in64(w.rd64(i.src[0], l, true) & absm ^ negm));
                        fp.out64(ldexp(x, w.rd(i.src[1], l) as i32))
                    });
                    return Ok(());
                }
                let e = self.rd(i.src[1], 0) as i32;
                if !matches!(i.src[1], Src::V(_) | Src::A(_)) && (-1000..=1000).contains(&e) {
                    // One exponent for every lane (a scalar or constant):
                    // one exact multiply by 2^e, its factor built once.
                    let scale = f64::from_bits(((e + 1023) as u64) << 52);
                    self.with_cols64(
                        [i.src[0], Src::None, Src::None],
                        [W::F64; 3],
                        i.dst,
                        #[inline(always)]
                        |[x, _, _], d| {
                            run3_64(
                                x,
                                x,
                                x,
                                d,
                                exec,
                                #[inline(always)]
                                |a, _, _| (f64b(a & absm ^ negm) * scale).to_bits(),
                            )
                        },
                    );
                    return Ok(());
                }
                self.with_cols64(
                    [i.src[0], i.src[1], Src::None],
                    [W::F64, W::B32, W::B32],
                    i.dst,
                    #[inline(always)]
                    |[x, y, z], d| {
                        // The exponent is the low column of src1.
                        let y = (y.0, y.0);
                        // Exponents within ±1000 (the usual case): one exact
                        // multiply by 2^e per lane, which vectorizes (so does
                        // the test: no early exit).
                        let in_range = y.0.iter().fold(true, |ok, e| {
                            ok & ((e.get() as i32).wrapping_add(1000) as u32 <= 2000)
                        });
                        if in_range {
                            run3_64(
                                x,
                                y,
                                z,
                                d,
                                exec,
                                #[inline(always)]
                                |a, e, _| {
                                    let scale =
                                        f64::from_bits(((e as u32 as i32 + 1023) as u64) << 52);
                                    (f64b(a & absm ^ negm) * scale).to_bits()
                                },
                            )
                        } else {
                            run3_64(x, y, z, d, exec, |a, e, _| {
                                ldexp(f64b(a & absm ^ negm), e as u32 as i32).to_bits()
                            })
                        }
                    },
                );
            }
            VLshlrevB64 | VLshrrevB64 | VAshrrevI64 => {
                // Shift amount: the low column of src0; value: src1's pair.
                let exec = self.exec();
                let op = i.op;
                self.with_cols64(
                    [i.src[1], i.src[0], Src::None],
                    [W::B64, W::B32, W::B32],
                    i.dst,
                    #[inline(always)]
                    |[v, n, z], d| {
                        let n = (n.0, n.0);
                        match op {
                            VLshlrevB64 => run3_64(v, n, z, d, exec, |v, n, _| v << (n & 63)),
                            VLshrrevB64 => run3_64(v, n, z, d, exec, |v, n, _| v >> (n & 63)),
                            _ => {
                                run3_64(v, n, z, d, exec, |v, n, _| ((v as i64) >> (n & 63)) as u64)
                            }
                        }
                    },
                );
            }
            VMadU64U32 | VMadI64I32 => {
                let exec = self.exec();
                let z = self.col64(i.src[2], false);
                let [x, y, _] = self.src3([i.src[0], i.src[1], Src::None]);
                let (x, y) = (*x, *y);
                let mut out = [0u64; 64];
                let mut carry = [false; 64];
                // D1 is bit 64 of the exact 65-bit result (the carry, or for
                // the signed form its sign); clamp saturates what does not
                // fit 64 bits.
                if i.op == VMadU64U32 {
                    for l in 0..64 {
                        let p = x[l] as u128 * y[l] as u128 + z[l] as u128;
                        (out[l], carry[l]) = (p as u64, p >> 64 != 0);
                        if i.clamp && carry[l] {
                            out[l] = u64::MAX;
                        }
                    }
                } else {
                    for l in 0..64 {
                        let p = x[l] as i32 as i128 * y[l] as i32 as i128 + z[l] as i64 as i128;
                        out[l] = p as u64;
                        carry[l] = p < 0;
                        if i.clamp {
                            out[l] = p.clamp(i64::MIN as i128, i64::MAX as i128) as u64;
                        }
                    }
                }
                self.write64(i.dst, exec, &out);
                self.sw64(i.sdst as u16, pack(&carry) & exec);
            }
            VCmp | VCmpx => self.compare(i),
            VCmpClass => self.compare_class(i),
            VReadlaneB32 => {
                let lane = (self.s32(i.src[1]) & 63) as usize;
                let v = self.rd(i.src[0], lane);
                self.sw32(i.dst, v);
            }
            VReadfirstlaneB32 => {
                let e = self.exec();
                let lane = if e == 0 {
                    0
                } else {
                    e.trailing_zeros() as usize
                };
                let v = self.rd(i.src[0], lane);
                self.sw32(i.dst, v);
            }
            VWritelaneB32 => {
                let lane = (self.s32(i.src[1]) & 63) as usize;
                let v = self.s32(i.src[0]);
                self.v[i.dst as usize][lane] = v;
            }
            VAccvgprWriteB32 => {
                let d = i.dst as usize;
                for l in lanes(self.exec()) {
                    self.a[d][l] = self.rd(i.src[0], l);
                }
            }
            VAccvgprReadB32 => self.map32(i, |x, _, _| x),
            VAccvgprMovB32 => {
                let d = i.dst as usize;
                for l in lanes(self.exec()) {
                    self.a[d][l] = self.rd(i.src[0], l);
                }
            }
            VMfmaF32_32x32x2f32 => self.mfma_32x32x2f32(i),
            VDivScaleF32 | VDivScaleF64 => self.div_scale(i)?,
            VDivFmasF32 | VDivFmasF64 => self.div_fmas(i),
            VDivFixupF32 => self.mapf32(i, |q, d, n| {
                let neg = d.is_sign_negative() != n.is_sign_negative();
                div_fixup_special(q as f64, d as f64, n as f64, true).map_or(
                    f32::from_bits(q.to_bits() & !SIGN32 | (neg as u32) << 31),
                    |v| v as f32,
                )
            }),
            VDivFixupF64 => self.mapf64(i, |q, d, n| {
                let neg = d.is_sign_negative() != n.is_sign_negative();
                div_fixup_special(q, d, n, false)
                    .unwrap_or(f64::from_bits(q.to_bits() & !SIGN64 | (neg as u64) << 63))
            }),
            VPkMovB32
                if i.src[..2]
                    .iter()
                    .all(|s| matches!(s, Src::V(_) | Src::A(_) | Src::S(_))) =>
            {
                // Low result: the half of src0 opsel[0] picks; high result:
                // the half of src1 opsel[1] picks.
                let exec = self.exec();
                let (h0, h1) = (i.opsel & 1 != 0, i.opsel & 2 != 0);
                self.with_cols64(
                    [i.src[0], i.src[1], Src::None],
                    [W::B64; 3],
                    i.dst,
                    #[inline(always)]
                    |[x, y, _], d| {
                        // Two 32-bit column moves, both read before either
                        // is written (the destination may overlap a source).
                        let lo = if h0 { x.1 } else { x.0 };
                        let hi = if h1 { y.1 } else { y.0 };
                        let lo: [u32; 64] = std::array::from_fn(|l| lo[l].get());
                        let hi: [u32; 64] = std::array::from_fn(|l| hi[l].get());
                        put_cells(d.0, &lo, exec);
                        put_cells(d.1, &hi, exec);
                    },
                );
            }
            VPkMovB32 | VPkAddF32 | VPkMulF32 | VPkFmaF32 => self.packed(i),
            _ => return Err(Exception::new(FaultKind::Unimplemented)),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversions() {
        // Hand-derived encodings: sign | exponent (bias 15) << 10 | mantissa.
        for (x, h) in [
            (1.0f32, 0x3c00u16),
            (-2.5, 0xc100),
            (65504.0, 0x7bff),
            (70000.0, 0x7c00),
            (0.0, 0x0000),
            (-0.0, 0x8000),
            (6.103_515_6e-5, 0x0400), // 2^-14, smallest normal
            (5.960_464_5e-8, 0x0001), // 2^-24, smallest subnormal
            (1e-7, 0x0002),           // 1.68 units of 2^-24 rounds to 2
            (f32::INFINITY, 0x7c00),
        ] {
            assert_eq!(f32_to_f16(x), h, "{x}");
        }
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert!(f16_to_f32(0x7e00).is_nan());
        // Every non-NaN half survives the round trip.
        for h in 0..=u16::MAX {
            if h & 0x7c00 == 0x7c00 && h & 0x3ff != 0 {
                continue;
            }
            assert_eq!(f32_to_f16(f16_to_f32(h)), h, "{h:#x}");
        }
        // Ties go to even: 1 + 2^-11 is halfway between 0x3c00 and 0x3c01.
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c00);
        assert_eq!(f32_to_f16(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
    }
}
