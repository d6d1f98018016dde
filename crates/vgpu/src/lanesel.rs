//! DPP and SDWA for every VALU operation alike.
//!
//! Both only change which bits reach an operation and which reach the
//! destination, so they run around the operation instead of inside it:
//! the selected source lanes (DPP) or bytes and words (SDWA) are copied to
//! spare VGPRs past any an instruction can name, the operation runs on
//! those with its own modifiers (abs, neg, clamp, omod) under EXEC limited
//! to the lanes DPP lets it write, and SDWA's destination select then
//! merges the result into the destination's old bits.

use inlay_isa::Encoding;

use crate::fault::{Exception, FaultKind};
use crate::inst::{Inst, Src, SDWA_PRESENT};
use crate::valu::Simd;
use crate::wave::{lanes, Wave, TMP_VGPR};

/// The lane DPP control `ctrl` reads for lane `l` (None: outside the row
/// or the wave). gfx90a's row_newbcast reads lane `n` of the lane's row.
pub fn dpp_source(ctrl: u32, l: usize) -> Option<usize> {
    let (row, col) = (l / 16, l % 16);
    let k = (ctrl & 0xf) as usize;
    match ctrl {
        0x000..=0x0ff => Some(l & !3 | (ctrl as usize >> ((l & 3) * 2) & 3)),
        0x101..=0x10f => (col + k < 16).then_some(l + k),
        0x111..=0x11f => (col >= k).then(|| l - k),
        0x121..=0x12f => Some(row * 16 + (col + 16 - k) % 16),
        0x130 => (l < 63).then_some(l + 1),
        0x134 => Some((l + 1) % 64),
        0x138 => (l > 0).then(|| l - 1),
        0x13c => Some((l + 63) % 64),
        0x140 => Some(row * 16 + 15 - col),
        0x141 => Some(row * 16 + (col & 8) + 7 - (col & 7)),
        0x142 => (row > 0).then(|| row * 16 - 1),
        0x143 => (l >= 32).then_some(31),
        0x150..=0x15f => Some(row * 16 + k),
        _ => None,
    }
}

/// SDWA operand select: byte 0..3 (sel 0..3), word 0..1 (4, 5) or the
/// whole dword (6), zero- or (`sext`) sign-extended.
pub fn sdwa_select(v: u32, sel: u32, sext: bool) -> u32 {
    let (shift, bits) = match sel {
        0..=3 => (8 * sel, 8),
        4 | 5 => (16 * (sel - 4), 16),
        _ => return v,
    };
    let field = (v >> shift) & ((1 << bits) - 1);
    if sext {
        (((field << (32 - bits)) as i32) >> (32 - bits)) as u32
    } else {
        field
    }
}

/// SDWA destination: the result's low bits go to the selected byte or
/// word; the other bits are zero (dst_unused 0), the field's sign above it
/// (1) or the old value (2).
pub fn sdwa_place(old: u32, r: u32, sdwa: u32) -> u32 {
    let (sel, unused) = (sdwa >> 8 & 7, sdwa >> 11 & 3);
    let (shift, bits) = match sel {
        0..=3 => (8 * sel, 8),
        4 | 5 => (16 * (sel - 4), 16),
        _ => return r,
    };
    let mask = ((1u32 << bits) - 1) << shift;
    let placed = (r << shift) & mask;
    match unused {
        1 if placed >> (shift + bits - 1) & 1 != 0 && shift + bits < 32 => {
            placed | u32::MAX << (shift + bits)
        }
        2 => (old & !mask) | placed,
        _ => placed,
    }
}

impl Wave {
    /// Runs a DPP or SDWA instruction (see the module comment).
    #[inline(never)]
    pub(crate) fn valu_remapped(&mut self, i: &Inst) -> Result<(), Exception> {
        let mut j = *i;
        j.dpp = 0;
        j.sdwa = 0;
        let exec = self.exec();
        let mut write = u64::MAX;
        if i.dpp != 0 {
            let Src::V(n) = i.src[0] else {
                return Err(Exception::new(FaultKind::Unimplemented));
            };
            write = self.dpp_gather(i.dpp, n as usize, i.src_regs[0].max(1) as usize, exec);
            j.src[0] = Src::V(TMP_VGPR as u16);
        }
        if i.sdwa != 0 {
            let sdwa = i.sdwa & !SDWA_PRESENT;
            for k in 0..2 {
                if i.src_regs[k] == 0 || i.src[k] == Src::None {
                    continue;
                }
                let (sel, sext) = (sdwa >> (16 + 8 * k) & 7, sdwa >> (19 + 8 * k) & 1 != 0);
                let src = j.src[k];
                let t = TMP_VGPR + 2 + k;
                for l in 0..64 {
                    self.v[t][l] = sdwa_select(self.rd(src, l), sel, sext);
                }
                j.src[k] = Src::V(t as u16);
            }
        }
        // The destination's old bits, for SDWA's destination select.
        let place = matches!(i.encoding, Encoding::Vop1Sdwa | Encoding::Vop2Sdwa);
        let old = place.then(|| self.v[i.dst as usize]);
        if write != u64::MAX {
            self.set_exec(exec & write);
        }
        let r = self.valu_on(Simd::detect(), &j);
        if write != u64::MAX {
            self.set_exec(exec);
        }
        r?;
        if let Some(old) = old {
            let d = i.dst as usize;
            for l in lanes(exec) {
                self.v[d][l] = sdwa_place(old[l], self.v[d][l], i.sdwa);
            }
        }
        Ok(())
    }

    /// Copies the lanes DPP control word `dpp` selects from the `regs`
    /// registers at `src` to the spare registers; returns the lanes the
    /// instruction may write: not those a row or bank mask disables, and
    /// without bound_ctrl not those whose source lane is outside the row
    /// or inactive (with bound_ctrl those read 0).
    fn dpp_gather(&mut self, dpp: u32, src: usize, regs: usize, exec: u64) -> u64 {
        let ctrl = dpp & 0x1ff;
        let bound_zero = dpp >> 9 & 1 != 0;
        let bank_mask = dpp >> 12 & 0xf;
        let row_mask = dpp >> 16 & 0xf;
        let mut write = 0u64;
        for l in 0..64 {
            let (row, col) = (l / 16, l % 16);
            if row_mask >> row & 1 == 0 || bank_mask >> (col / 4) & 1 == 0 {
                continue;
            }
            let from = dpp_source(ctrl, l).filter(|&f| exec >> f & 1 != 0);
            if from.is_none() && !bound_zero {
                continue;
            }
            write |= 1 << l;
            for r in 0..regs {
                self.v[TMP_VGPR + r][l] = from.map_or(0, |f| self.v[src + r][f]);
            }
        }
        write
    }
}
