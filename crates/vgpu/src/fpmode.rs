//! How one VALU instruction treats floats: MODE's denormal controls, IEEE
//! and DX10_CLAMP bits, and the VOP3 output modifiers (omod, clamp), as
//! the gfx90a ISA document describes them.
//!
//! - FP_DENORM (MODE[5:4] for f32, MODE[7:6] for f64 and f16): bit 0 keeps
//!   input denormals, bit 1 keeps output denormals; a flushed denormal
//!   becomes a zero of the same sign.
//! - omod multiplies the result by 2, 4 or 0.5, but "output modifiers are
//!   ignored if the IEEE mode bit is set" and "if output denormals are
//!   enabled"; it turns -0 into +0.
//! - clamp limits the result to [0.0, 1.0]; a NaN becomes 0 when
//!   DX10_CLAMP is set and passes through otherwise.
//!
//! The order is the document's: input modifiers (abs, neg), input flush,
//! the operation, omod, clamp, output flush.

pub const SIGN32: u32 = 0x8000_0000;
pub const SIGN64: u64 = 1 << 63;

/// MODE bits.
const DX10_CLAMP: u32 = 1 << 8;
const IEEE: u32 = 1 << 9;

/// A denormal f32 becomes a zero of the same sign.
#[inline(always)]
pub fn flush32(v: u32) -> u32 {
    if v & 0x7f80_0000 == 0 {
        v & SIGN32
    } else {
        v
    }
}

/// A denormal f64 becomes a zero of the same sign.
#[inline(always)]
pub fn flush64(v: u64) -> u64 {
    if v & 0x7ff0_0000_0000_0000 == 0 {
        v & SIGN64
    } else {
        v
    }
}

/// The float controls one instruction runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fp {
    /// Inputs keep their denormals (else they are flushed).
    pub keep_in: bool,
    /// The result keeps its denormals.
    pub keep_out: bool,
    /// The omod in effect (0 where the hardware ignores it).
    pub omod: u8,
    pub clamp: bool,
    pub dx10: bool,
    pub ieee: bool,
}

/// FP_DENORM of a precision (32: f32; 64 and 16: f64/f16).
fn denorm(mode: u32, bits: u32) -> u32 {
    if bits == 32 {
        mode >> 4 & 3
    } else {
        mode >> 6 & 3
    }
}

impl Fp {
    /// The controls for inputs of precision `inp` and a result of
    /// precision `out` (32 or 64) under MODE `mode`.
    #[inline(always)]
    pub fn new(mode: u32, omod: u8, clamp: bool, inp: u32, out: u32) -> Fp {
        let keep_out = denorm(mode, out) & 2 != 0;
        let ieee = mode & IEEE != 0;
        Fp {
            keep_in: denorm(mode, inp) & 1 != 0,
            keep_out,
            omod: if ieee || keep_out { 0 } else { omod },
            clamp,
            dx10: mode & DX10_CLAMP != 0,
            ieee,
        }
    }

    /// As [`Fp::new`], with denormals flushed whatever MODE says
    /// (`v_mad_f32`, `v_mac_f32`: "v_mad_f32/v_mac_f32 do not support
    /// denormals", which is why LLVM only selects them when f32 denormals
    /// are flushed).
    #[inline(always)]
    pub fn flushing(mode: u32, omod: u8, clamp: bool) -> Fp {
        Fp::new(mode & !(0xf << 4), omod, clamp, 32, 32)
    }

    /// Nothing to do around the operation itself.
    #[inline(always)]
    pub fn plain(&self) -> bool {
        self.keep_in && self.keep_out && self.omod == 0 && !self.clamp
    }

    #[inline(always)]
    pub fn in32(&self, x: u32) -> u32 {
        if self.keep_in {
            x
        } else {
            flush32(x)
        }
    }

    #[inline(always)]
    pub fn in64(&self, x: u64) -> u64 {
        if self.keep_in {
            x
        } else {
            flush64(x)
        }
    }

    /// The result's bits after omod, clamp and the output flush.
    #[inline(always)]
    pub fn out32(&self, r: f32) -> u32 {
        let mut r = r;
        if self.omod != 0 {
            r *= match self.omod {
                1 => 2.0,
                2 => 4.0,
                _ => 0.5,
            };
            if r == 0.0 {
                r = 0.0;
            }
        }
        let mut b = r.to_bits();
        if self.clamp {
            if r.is_nan() {
                if self.dx10 {
                    b = 0;
                }
            } else if r < 0.0 {
                b = 0;
            } else if r > 1.0 {
                b = 1.0f32.to_bits();
            }
        }
        if self.keep_out {
            b
        } else {
            flush32(b)
        }
    }

    /// [`Fp::out32`] for f64 results.
    #[inline(always)]
    pub fn out64(&self, r: f64) -> u64 {
        let mut r = r;
        if self.omod != 0 {
            r *= match self.omod {
                1 => 2.0,
                2 => 4.0,
                _ => 0.5,
            };
            if r == 0.0 {
                r = 0.0;
            }
        }
        let mut b = r.to_bits();
        if self.clamp {
            if r.is_nan() {
                if self.dx10 {
                    b = 0;
                }
            } else if r < 0.0 {
                b = 0;
            } else if r > 1.0 {
                b = 1.0f64.to_bits();
            }
        }
        if self.keep_out {
            b
        } else {
            flush64(b)
        }
    }
}

/// `v_max_f32`/`v_max_f64` as the ISA's pseudo-code defines them: in IEEE
/// mode a signalling NaN operand gives that NaN quieted; otherwise a NaN
/// operand gives the other operand; +0 is larger than -0.
#[inline(always)]
pub fn max32(a: f32, b: f32, ieee: bool) -> f32 {
    minmax32(a, b, ieee, true)
}

#[inline(always)]
pub fn min32(a: f32, b: f32, ieee: bool) -> f32 {
    minmax32(a, b, ieee, false)
}

#[inline(always)]
fn minmax32(a: f32, b: f32, ieee: bool, max: bool) -> f32 {
    let quiet = |x: f32| f32::from_bits(x.to_bits() | 0x0040_0000);
    let snan = |x: f32| x.is_nan() && x.to_bits() & 0x0040_0000 == 0;
    if ieee && snan(a) {
        quiet(a)
    } else if ieee && snan(b) {
        quiet(b)
    } else if a.is_nan() {
        b
    } else if b.is_nan() {
        a
    } else if a == b {
        // Equal values, or zeros of either sign: max takes +0, min -0.
        let a_wins = a.is_sign_positive() == max;
        if a_wins {
            a
        } else {
            b
        }
    } else if (a > b) == max {
        a
    } else {
        b
    }
}

#[inline(always)]
pub fn max64(a: f64, b: f64, ieee: bool) -> f64 {
    minmax64(a, b, ieee, true)
}

#[inline(always)]
pub fn min64(a: f64, b: f64, ieee: bool) -> f64 {
    minmax64(a, b, ieee, false)
}

#[inline(always)]
fn minmax64(a: f64, b: f64, ieee: bool, max: bool) -> f64 {
    let quiet = |x: f64| f64::from_bits(x.to_bits() | 1 << 51);
    let snan = |x: f64| x.is_nan() && x.to_bits() >> 51 & 1 == 0;
    if ieee && snan(a) {
        quiet(a)
    } else if ieee && snan(b) {
        quiet(b)
    } else if a.is_nan() {
        b
    } else if b.is_nan() {
        a
    } else if a == b {
        if a.is_sign_positive() == max {
            a
        } else {
            b
        }
    } else if (a > b) == max {
        a
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_modifiers_follow_mode() {
        // IEEE set (the compute default): omod ignored, clamp applies.
        let fp = Fp::new(0x3f0 | IEEE | DX10_CLAMP, 1, true, 32, 32);
        assert_eq!(fp.omod, 0);
        assert_eq!(fp.out32(0.75), 0.75f32.to_bits());
        assert_eq!(fp.out32(f32::NAN), 0);
        // IEEE clear and output denormals flushed: omod applies, -0 -> +0.
        let fp = Fp::new(0x10, 3, false, 32, 32);
        assert_eq!(fp.out32(3.0), 1.5f32.to_bits());
        assert_eq!(fp.out32(-0.0), 0);
        // Without DX10_CLAMP a NaN passes clamp.
        let fp = Fp::new(0xf0, 0, true, 32, 32);
        assert!(f32::from_bits(fp.out32(f32::NAN)).is_nan());
    }

    #[test]
    fn min_max_order_zeros_and_nans() {
        assert_eq!(max32(-0.0, 0.0, true).to_bits(), 0);
        assert_eq!(min32(0.0, -0.0, true).to_bits(), SIGN32);
        let snan = f32::from_bits(0x7fa0_0000);
        assert_eq!(max32(snan, 1.0, true).to_bits(), 0x7fe0_0000);
        assert_eq!(max32(snan, 1.0, false), 1.0);
        assert_eq!(min64(f64::NAN, 2.0, true), 2.0);
    }
}
