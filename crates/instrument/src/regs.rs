//! Register sets: one bit per 32-bit register of every file liveness tracks.
//!
//! Layout (bit numbers): the scalar part follows the hardware's 8-bit scalar
//! operand codes, so `s0..s101` are bits 0..=101, FLAT_SCRATCH 102..=103,
//! XNACK_MASK 104..=105, VCC 106..=107, TTMP0..15 108..=123, M0 124,
//! EXEC 126..=127; SCC is bit 128; VGPRs `v0..v255` are bits 256..=511 and
//! AGPRs `a0..a255` bits 512..=767. PC and hardware registers are not tracked.

use inlay_isa::{RegFile, Register};

/// Number of 64-bit words in a [`RegSet`].
const WORDS: usize = 12;

pub const SGPR_BASE: u16 = 0;
/// SGPRs a gfx9 wave can name (`s0..s101`).
pub const NUM_SGPRS: u16 = 102;
pub const FLAT_SCRATCH: u16 = 102;
pub const XNACK_MASK: u16 = 104;
pub const VCC: u16 = 106;
pub const TTMP_BASE: u16 = 108;
pub const M0: u16 = 124;
pub const EXEC: u16 = 126;
pub const SCC: u16 = 128;
pub const VGPR_BASE: u16 = 256;
pub const AGPR_BASE: u16 = 512;
pub const NUM_BITS: u16 = 768;

/// A set of 32-bit registers (see the module docs for the bit layout).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RegSet([u64; WORDS]);

impl std::fmt::Debug for RegSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("{")?;
        let mut first = true;
        for b in self.iter() {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            f.write_str(&bit_name(b))?;
        }
        f.write_str("}")
    }
}

/// Printable name of a bit (`s4`, `v7`, `a0`, `vcc_lo`, `exec_hi`, `scc`, ...).
pub fn bit_name(b: u16) -> String {
    match b {
        0..=101 => format!("s{b}"),
        102 => "flat_scratch_lo".into(),
        103 => "flat_scratch_hi".into(),
        104 => "xnack_mask_lo".into(),
        105 => "xnack_mask_hi".into(),
        106 => "vcc_lo".into(),
        107 => "vcc_hi".into(),
        108..=123 => format!("ttmp{}", b - TTMP_BASE),
        124 => "m0".into(),
        126 => "exec_lo".into(),
        127 => "exec_hi".into(),
        128 => "scc".into(),
        256..=511 => format!("v{}", b - VGPR_BASE),
        512..=767 => format!("a{}", b - AGPR_BASE),
        _ => format!("bit{b}"),
    }
}

impl RegSet {
    /// 64-bit words in a set.
    pub const WORDS: usize = WORDS;

    pub const fn new() -> RegSet {
        RegSet([0; WORDS])
    }

    /// Every tracked register.
    pub const fn all() -> RegSet {
        RegSet([u64::MAX; WORDS])
    }

    /// All VGPRs and AGPRs.
    pub const fn vector() -> RegSet {
        RegSet([
            0,
            0,
            0,
            0,
            u64::MAX,
            u64::MAX,
            u64::MAX,
            u64::MAX,
            u64::MAX,
            u64::MAX,
            u64::MAX,
            u64::MAX,
        ])
    }

    /// The set holding the registers of `r` (empty for PC and hardware registers).
    pub fn of(r: &Register) -> RegSet {
        let mut s = RegSet::new();
        if let Some((b, n)) = bits_of(r) {
            s.insert_range(b, n);
        }
        s
    }

    pub fn contains(&self, bit: u16) -> bool {
        let b = bit as usize;
        b < WORDS * 64 && self.0[b / 64] >> (b % 64) & 1 != 0
    }

    pub fn insert(&mut self, bit: u16) {
        let b = bit as usize;
        if b < WORDS * 64 {
            self.0[b / 64] |= 1 << (b % 64);
        }
    }

    pub fn remove(&mut self, bit: u16) {
        let b = bit as usize;
        if b < WORDS * 64 {
            self.0[b / 64] &= !(1 << (b % 64));
        }
    }

    /// Applies `f(word, mask)` to the words covering bits `start..start + len`.
    #[inline]
    fn for_range(&mut self, start: u16, len: u16, mut f: impl FnMut(&mut u64, u64)) {
        for (w, mask) in word_masks(start, len) {
            f(&mut self.0[w], mask);
        }
    }

    /// Inserts bits `start..start + len` (clipped to the set's size).
    #[inline]
    pub fn insert_range(&mut self, start: u16, len: u16) {
        self.for_range(start, len, |w, m| *w |= m);
    }

    #[inline]
    pub fn remove_range(&mut self, start: u16, len: u16) {
        self.for_range(start, len, |w, m| *w &= !m);
    }

    /// Whether any of bits `start..start + len` is set.
    pub fn any_in(&self, start: u16, len: u16) -> bool {
        let mut c = *self;
        let mut any = false;
        c.for_range(start, len, |w, m| any |= *w & m != 0);
        any
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }

    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn union_with(&mut self, o: &RegSet) {
        for (a, b) in self.0.iter_mut().zip(o.0.iter()) {
            *a |= *b;
        }
    }

    pub fn intersect_with(&mut self, o: &RegSet) {
        for (a, b) in self.0.iter_mut().zip(o.0.iter()) {
            *a &= *b;
        }
    }

    pub fn subtract(&mut self, o: &RegSet) {
        for (a, b) in self.0.iter_mut().zip(o.0.iter()) {
            *a &= !*b;
        }
    }

    pub fn union(mut self, o: &RegSet) -> RegSet {
        self.union_with(o);
        self
    }

    pub fn intersection(mut self, o: &RegSet) -> RegSet {
        self.intersect_with(o);
        self
    }

    pub fn difference(mut self, o: &RegSet) -> RegSet {
        self.subtract(o);
        self
    }

    /// Set bits in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        self.0.iter().enumerate().flat_map(|(i, w)| {
            let mut w = *w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let t = w.trailing_zeros();
                w &= w - 1;
                Some((i * 64) as u16 + t as u16)
            })
        })
    }

    /// The set of these words (see [`RegSet::words`]).
    pub fn from_words(words: [u64; WORDS]) -> RegSet {
        RegSet(words)
    }

    /// The set as 64-bit words, bit 0 first (for keys and hashing).
    pub fn words(&self) -> &[u64] {
        &self.0
    }

    /// Adds the bits of `mask` to word `w` (bits `64 * w..`).
    #[inline]
    pub fn insert_mask(&mut self, w: usize, mask: u64) {
        if let Some(x) = self.0.get_mut(w) {
            *x |= mask;
        }
    }

    /// Removes the bits of `mask` from word `w`.
    #[inline]
    pub fn remove_mask(&mut self, w: usize, mask: u64) {
        if let Some(x) = self.0.get_mut(w) {
            *x &= !mask;
        }
    }

    /// The lowest set bit in `start..end`, if any (word by word).
    pub fn first_in(&self, start: u16, end: u16) -> Option<u16> {
        let end = end.min(NUM_BITS) as usize;
        let mut b = start as usize;
        while b < end {
            let w = self.0[b / 64] >> (b % 64);
            if w != 0 {
                let n = b + w.trailing_zeros() as usize;
                return (n < end).then_some(n as u16);
            }
            b = (b / 64 + 1) * 64;
        }
        None
    }

    /// SGPRs `s0..s<limit>` (at most s101) not in the set, in increasing order.
    pub fn absent_sgprs(&self, limit: u16) -> Vec<u16> {
        let limit = limit.min(NUM_SGPRS);
        let mut out = Vec::with_capacity(limit as usize);
        for (k, w) in self
            .0
            .iter()
            .enumerate()
            .take((limit as usize).div_ceil(64))
        {
            let mut free = !*w;
            while free != 0 {
                let n = (k * 64) as u16 + free.trailing_zeros() as u16 - SGPR_BASE;
                if n >= limit {
                    break;
                }
                out.push(n);
                free &= free - 1;
            }
        }
        out
    }

    /// Whether `s<n>` is in the set.
    pub fn has_sgpr(&self, n: u16) -> bool {
        n < NUM_SGPRS && self.contains(SGPR_BASE + n)
    }
    pub fn has_vgpr(&self, n: u16) -> bool {
        n < 256 && self.contains(VGPR_BASE + n)
    }
    pub fn has_agpr(&self, n: u16) -> bool {
        n < 256 && self.contains(AGPR_BASE + n)
    }
}

/// The words covering bits `start..start + len` (clipped to a set's size),
/// each with the mask of those bits in it.
#[inline]
pub fn word_masks(start: u16, len: u16) -> impl Iterator<Item = (usize, u64)> {
    let end = (start as usize + len as usize).min(NUM_BITS as usize);
    let mut b = start as usize;
    std::iter::from_fn(move || {
        if b >= end {
            return None;
        }
        let w = b / 64;
        let lo = b % 64;
        let hi = (end - w * 64).min(64);
        let mask = if hi - lo == 64 {
            u64::MAX
        } else {
            ((1u64 << (hi - lo)) - 1) << lo
        };
        b = w * 64 + hi;
        Some((w, mask))
    })
}

/// (first bit, registers) of each register file, by `RegFile as usize`;
/// no registers for the files liveness does not track (PC, hardware
/// registers). A table: this runs for every register of every distinct
/// instruction.
const FILES: [(u16, u16); 12] = {
    let mut t = [(0, 0); 12];
    t[RegFile::Sgpr as usize] = (SGPR_BASE, NUM_SGPRS);
    t[RegFile::Vgpr as usize] = (VGPR_BASE, 256);
    t[RegFile::Agpr as usize] = (AGPR_BASE, 256);
    t[RegFile::Ttmp as usize] = (TTMP_BASE, 16);
    t[RegFile::Vcc as usize] = (VCC, 2);
    t[RegFile::Exec as usize] = (EXEC, 2);
    t[RegFile::M0 as usize] = (M0, 1);
    t[RegFile::Scc as usize] = (SCC, 1);
    t[RegFile::FlatScratch as usize] = (FLAT_SCRATCH, 2);
    t[RegFile::XnackMask as usize] = (XNACK_MASK, 2);
    t[RegFile::Pc as usize] = (0, 0);
    t[RegFile::HwReg as usize] = (0, 0);
    t
};

/// First bit and number of bits of a register, if liveness tracks its file.
pub fn bits_of(r: &Register) -> Option<(u16, u16)> {
    let n = r.count as u16;
    let (base, limit) = FILES.get(r.file as usize).copied().unwrap_or((0, 0));
    if r.first >= limit || n == 0 {
        return None;
    }
    Some((base + r.first, n.min(limit - r.first)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_scalar_codes() {
        let s = RegSet::of(&Register::new(RegFile::Vcc, 0, 2));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![106, 107]);
        let e = RegSet::of(&Register::new(RegFile::Exec, 1, 1));
        assert_eq!(e.iter().collect::<Vec<_>>(), vec![127]);
        let v = RegSet::of(&Register::new(RegFile::Vgpr, 254, 4));
        assert_eq!(v.iter().collect::<Vec<_>>(), vec![510, 511]); // clipped
        assert!(RegSet::of(&Register::new(RegFile::Pc, 0, 2)).is_empty());
        assert_eq!(RegSet::all().len(), 768);
        assert_eq!(RegSet::vector().len(), 512);
        assert_eq!(
            format!("{:?}", RegSet::of(&Register::new(RegFile::Sgpr, 4, 2))),
            "{s4 s5}"
        );
    }

    #[test]
    fn absent_sgprs_are_the_complement_below_the_limit() {
        let mut s = RegSet::new();
        for n in [0, 5, 63, 64, 101] {
            s.insert(SGPR_BASE + n);
        }
        s.insert(VCC);
        let want: Vec<u16> = (0..102)
            .filter(|n| ![0, 5, 63, 64, 101].contains(n))
            .collect();
        assert_eq!(s.absent_sgprs(102), want);
        assert_eq!(s.absent_sgprs(200), want);
        assert_eq!(
            s.absent_sgprs(64),
            (1..63).filter(|&n| n != 5).collect::<Vec<_>>()
        );
    }
}
