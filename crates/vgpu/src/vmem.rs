//! Memory instructions: SMEM, GLOBAL/FLAT/SCRATCH, MUBUF and DS (LDS and
//! the cross-lane DS permutes). Addresses are formed per lane; each access is
//! checked (device memory through the allocation table, LDS and scratch
//! against their sizes) before it is made.

// Lane loops index several columns with the same lane number.
#![allow(clippy::needless_range_loop)]

use crate::access::{
    atomic32, atomic32_cached, atomic64, load, load_cached, rmw32, rmw64, store, Lanes, Span,
};
use crate::fault::{Exception, FaultKind};
use crate::inst::{Atomic, Inst, Op, Src, Width};
use crate::valu::{cells, col_at, put32};
use crate::wave::{lanes, private_index, Env, Wave, PRIVATE_APERTURE_HI, SHARED_APERTURE_HI};

/// Where one lane's access goes.
#[derive(Clone, Copy)]
enum Place {
    Global(u64),
    Lds(u64),
    Private(u64),
}

fn extend(w: Width, raw: u32) -> u32 {
    match w {
        Width::U8 => raw & 0xff,
        Width::I8 => raw as u8 as i8 as i32 as u32,
        Width::U16 => raw & 0xffff,
        Width::I16 => raw as u16 as i16 as i32 as u32,
        _ => raw,
    }
}

/// The lane offset that a wave-level byte offset (V# base plus `soffset`)
/// of a swizzled private buffer names. The base and `soffset` are not
/// swizzled: they count bytes of the wave's whole private memory, where each
/// dword row holds one dword of every one of its 64 lanes, so a lane's
/// memory advances by one byte per 64 of them (LLVM's stack pointer `s32`
/// is the lane offset times 64; see `private_index`).
#[inline(always)]
fn private_wave_offset(wave: u64) -> u64 {
    wave >> 6
}

impl Wave {
    pub(crate) fn smem_load(&mut self, i: &Inst, env: &mut Env<'_>) -> Result<(), Exception> {
        let base = self.s64(i.src[0]);
        let soff = if i.imm2 < 0xff {
            self.s[i.imm2 as usize] as u64
        } else {
            0
        };
        let addr = base.wrapping_add(i.imm as i64 as u64).wrapping_add(soff) & !3;
        let n = i.count as usize;
        let mut buf = [0u8; 64];
        let out = &mut buf[..n * 4];
        load_cached(env.mem, &env.cache, addr, out).map_err(|e| Exception {
            addr: Some(addr),
            ..e
        })?;
        for k in 0..n {
            let w =
                u32::from_le_bytes([out[4 * k], out[4 * k + 1], out[4 * k + 2], out[4 * k + 3]]);
            self.sw32(i.dst + k as u16, w);
        }
        Ok(())
    }

    /// `s_atomic_*`: one read-modify-write of the wave's scalar data at
    /// base + offset (+ soffset); with glc, sdata receives the old value.
    pub(crate) fn smem_atomic(&mut self, i: &Inst, env: &mut Env<'_>) -> Result<(), Exception> {
        let base = self.s64(i.src[0]);
        let soff = if i.imm2 < 0xff {
            self.s[i.imm2 as usize] as u64
        } else {
            0
        };
        let addr = base.wrapping_add(i.imm as i64 as u64).wrapping_add(soff);
        let d = i.dst as usize;
        let at = |e: Exception| Exception {
            addr: Some(addr),
            ..e
        };
        if i.wide {
            let data = |k: usize| self.s64(Src::S((d + k) as u8));
            let (v, cmp) = if i.atomic == Atomic::CmpSwap {
                (data(0), data(2))
            } else {
                (data(0), 0)
            };
            let old = atomic64(env.mem, addr, i.atomic, v, cmp).map_err(at)?;
            if i.ret {
                self.sw64(i.dst, old);
            }
        } else {
            let (v, cmp) = if i.atomic == Atomic::CmpSwap {
                (self.s[d], self.s[d + 1])
            } else {
                (self.s[d], 0)
            };
            let old = atomic32(env.mem, addr, i.atomic, v, cmp).map_err(at)?;
            if i.ret {
                self.sw32(i.dst, old);
            }
        }
        Ok(())
    }

    fn data_reg(&self, i: &Inst, reg: u16, lane: usize) -> u32 {
        if i.acc {
            self.a[reg as usize][lane]
        } else {
            self.v[reg as usize][lane]
        }
    }

    fn set_data_reg(&mut self, i: &Inst, reg: u16, lane: usize, v: u32) {
        if i.acc {
            self.a[reg as usize][lane] = v;
        } else {
            self.v[reg as usize][lane] = v;
        }
    }

    fn vreg(s: Src) -> u16 {
        match s {
            Src::V(n) | Src::A(n) => n,
            _ => 0,
        }
    }

    /// Address of one lane's access.
    fn place(&self, i: &Inst, l: usize) -> Place {
        let off = i.imm as i64 as u64;
        match i.op {
            Op::GlobalLoad | Op::GlobalStore | Op::GlobalAtomic => {
                let a = match i.src[2] {
                    Src::S(_) => self.s64(i.src[2]).wrapping_add(self.rd(i.src[0], l) as u64),
                    _ => self.rd64(i.src[0], l, false),
                };
                Place::Global(a.wrapping_add(off))
            }
            Op::FlatLoad | Op::FlatStore | Op::FlatAtomic => {
                let a = self.rd64(i.src[0], l, false).wrapping_add(off);
                match (a >> 32) as u32 {
                    SHARED_APERTURE_HI => Place::Lds(a & 0xffff_ffff),
                    PRIVATE_APERTURE_HI => Place::Private(a & 0xffff_ffff),
                    _ => Place::Global(a),
                }
            }
            Op::ScratchLoad | Op::ScratchStore => {
                // flat_scratch holds the wave's base (0 here: each wave owns its memory).
                let mut a = self.s64(Src::S(crate::wave::FLAT_SCRATCH as u8));
                // gfx90a: either an SGPR or a VGPR offset, never both.
                a = match i.src[2] {
                    Src::S(_) => a.wrapping_add(self.s32(i.src[2]) as u64),
                    _ => a.wrapping_add(self.rd(i.src[0], l) as u64),
                };
                Place::Private(a.wrapping_add(off) & 0xffff_ffff)
            }
            _ => {
                // MUBUF: V# in s[src1..+4].
                let Src::S(r) = i.src[1] else {
                    return Place::Global(0);
                };
                let r = r as usize;
                let base = self.s[r] as u64 | ((self.s[r + 1] & 0xffff) as u64) << 32;
                let stride = (self.s[r + 1] >> 16 & 0x3fff) as u64;
                let add_tid = self.s[r + 3] >> 23 & 1 != 0;
                let wave = base.wrapping_add(self.s32(i.src[2]) as u64);
                let mut a = if add_tid {
                    private_wave_offset(wave)
                } else {
                    wave
                }
                .wrapping_add(off);
                let mut vaddr = Self::vreg(i.src[0]);
                if i.idxen {
                    a = a.wrapping_add(self.v[vaddr as usize][l] as u64 * stride);
                    vaddr += 1;
                }
                if i.offen {
                    a = a.wrapping_add(self.v[vaddr as usize][l] as u64);
                }
                if add_tid {
                    // Swizzled private buffer: the address is the lane's own offset.
                    Place::Private(a & 0xffff_ffff)
                } else {
                    Place::Global(a)
                }
            }
        }
    }

    fn read_place(
        &self,
        p: Place,
        out: &mut [u8],
        lane: usize,
        env: &Env<'_>,
    ) -> Result<(), Exception> {
        self.read_place_in(p, out, lane, env)
            .map_err(|e| e.in_lane(lane))
    }

    #[inline(always)]
    fn read_place_in(
        &self,
        p: Place,
        out: &mut [u8],
        lane: usize,
        env: &Env<'_>,
    ) -> Result<(), Exception> {
        match p {
            Place::Global(a) => load(env.mem, a, out),
            Place::Lds(a) => {
                let src = lds_range(env.lds.len(), a, out.len())?;
                out.copy_from_slice(&env.lds[src]);
                Ok(())
            }
            Place::Private(a) => {
                self.private_check(a, out.len())?;
                for (k, b) in out.iter_mut().enumerate() {
                    *b = self.scratch[private_index(lane, a as usize + k)];
                }
                Ok(())
            }
        }
    }

    fn write_place(
        &mut self,
        p: Place,
        data: &[u8],
        lane: usize,
        env: &mut Env<'_>,
    ) -> Result<(), Exception> {
        self.write_place_in(p, data, lane, env)
            .map_err(|e| e.in_lane(lane))
    }

    #[inline(always)]
    fn write_place_in(
        &mut self,
        p: Place,
        data: &[u8],
        lane: usize,
        env: &mut Env<'_>,
    ) -> Result<(), Exception> {
        match p {
            Place::Global(a) => store(env.mem, a, data),
            Place::Lds(a) => {
                let dst = lds_range(env.lds.len(), a, data.len())?;
                env.lds[dst].copy_from_slice(data);
                Ok(())
            }
            Place::Private(a) => {
                self.private_check(a, data.len())?;
                for (k, &b) in data.iter().enumerate() {
                    self.scratch[private_index(lane, a as usize + k)] = b;
                }
                Ok(())
            }
        }
    }

    /// Whether `len` bytes at offset `off` lie inside a lane's private memory.
    fn private_check(&self, off: u64, len: usize) -> Result<(), Exception> {
        let size = self.priv_size as u64;
        if off.checked_add(len as u64).is_none_or(|e| e > size) {
            return Err(Exception::at(
                FaultKind::Scratch {
                    offset: off,
                    len: len as u64,
                    size,
                },
                off,
            ));
        }
        Ok(())
    }

    /// Executes a vector memory instruction, built for AVX2 where the CPU
    /// has it (the lane loops over addresses then vectorize).
    // Out of line: its lane arrays would otherwise make every scalar step's frame large.
    #[inline(never)]
    pub(crate) fn vmem(&mut self, i: &Inst, env: &mut Env<'_>) -> Result<(), Exception> {
        #[cfg(target_arch = "x86_64")]
        if crate::valu::Simd::detect().avx2() {
            // SAFETY: `avx2()` is only true when the CPU has AVX2 and FMA,
            // the features the function is compiled for.
            return unsafe { self.vmem_avx2(i, env) };
        }
        self.vmem_impl(i, env)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,bmi1,bmi2,lzcnt,popcnt")]
    fn vmem_avx2(&mut self, i: &Inst, env: &mut Env<'_>) -> Result<(), Exception> {
        self.vmem_impl(i, env)
    }

    #[inline(always)]
    fn vmem_impl(&mut self, i: &Inst, env: &mut Env<'_>) -> Result<(), Exception> {
        match i.op {
            Op::GlobalLoad | Op::FlatLoad | Op::ScratchLoad | Op::BufLoad => self.vload(i, env),
            Op::GlobalStore | Op::FlatStore | Op::ScratchStore | Op::BufStore => {
                self.vstore(i, env)
            }
            Op::GlobalAtomic | Op::FlatAtomic => self.vatomic(i, env),
            Op::DsBpermuteB32 | Op::DsPermuteB32 => self.ds_permute(i),
            Op::DsSwizzleB32 => self.ds_swizzle(i),
            _ => self.ds(i, env),
        }
    }

    /// Addresses of every active lane, and a span covering all of them when
    /// they all go to device memory inside one allocation (one table lookup
    /// for the whole instruction instead of one per lane).
    #[inline(always)]
    fn places(&self, i: &Inst, n: usize, env: &Env<'_>) -> ([Place; 64], Option<Span>) {
        let mut places = [Place::Global(0); 64];
        let (mut lo, mut hi, mut all_global) = (u64::MAX, 0u64, true);
        let exec = self.exec();
        if let (Op::GlobalLoad | Op::GlobalStore, Src::V(va)) = (i.op, i.src[0]) {
            // The common case, without the per-lane operand matching of `place`.
            let off = i.imm as i64 as u64;
            let lo_col = &self.v[va as usize];
            match i.src[2] {
                Src::S(_) => {
                    let base = self.s64(i.src[2]).wrapping_add(off);
                    for l in lanes(exec) {
                        places[l] = Place::Global(base.wrapping_add(lo_col[l] as u64));
                    }
                }
                _ => {
                    let hi_col = &self.v[va as usize + 1];
                    for l in lanes(exec) {
                        let a = lo_col[l] as u64 | (hi_col[l] as u64) << 32;
                        places[l] = Place::Global(a.wrapping_add(off));
                    }
                }
            }
        } else {
            for l in lanes(exec) {
                places[l] = self.place(i, l);
            }
        }
        for l in lanes(exec) {
            let p = places[l];
            match p {
                Place::Global(a) => {
                    lo = lo.min(a);
                    hi = hi.max(a.saturating_add(n as u64));
                }
                _ => all_global = false,
            }
        }
        let span = (all_global && lo < hi)
            .then(|| Span::check(env.mem, lo, hi))
            .flatten();
        (places, span)
    }

    /// Addresses of a global or flat access in every lane, when every active
    /// lane goes to device memory (not the LDS or private apertures).
    #[inline(always)]
    fn device_addrs(&self, i: &Inst, exec: u64) -> Option<[u64; 64]> {
        let Src::V(va) = i.src[0] else {
            return None;
        };
        let off = i.imm as i64 as u64;
        let lo = &self.v[va as usize];
        let mut a = [0u64; 64];
        match (i.op, i.src[2]) {
            (Op::GlobalLoad | Op::GlobalStore, Src::S(_)) => {
                let base = self.s64(i.src[2]).wrapping_add(off);
                for l in 0..64 {
                    a[l] = base.wrapping_add(lo[l] as u64);
                }
            }
            (Op::GlobalLoad | Op::GlobalStore | Op::FlatLoad | Op::FlatStore, _) => {
                let hi = &self.v[va as usize + 1];
                for l in 0..64 {
                    a[l] = (lo[l] as u64 | (hi[l] as u64) << 32).wrapping_add(off);
                }
                if matches!(i.op, Op::FlatLoad | Op::FlatStore) {
                    let aperture = lanes(exec).any(|l| {
                        matches!(
                            (a[l] >> 32) as u32,
                            SHARED_APERTURE_HI | PRIVATE_APERTURE_HI
                        )
                    });
                    if aperture {
                        return None;
                    }
                }
            }
            _ => return None,
        }
        Some(a)
    }

    /// Global/flat loads whose lanes all read inside one allocation. False
    /// when the general path must run (it also reports any fault).
    #[inline(always)]
    fn vload_fast(&mut self, i: &Inst, env: &Env<'_>) -> bool {
        let exec = self.exec();
        let Some(a) = self.device_addrs(i, exec) else {
            return false;
        };
        let n = i.width.bytes();
        let Some(lanes) = Lanes::check(env.mem, &env.cache, &a, exec, n as u64) else {
            return false;
        };
        let file = if i.acc { &mut self.a } else { &mut self.v };
        if let (Width::D1 | Width::D2 | Width::D4, true) = (i.width, lanes.contiguous()) {
            // Consecutive lanes, consecutive addresses: one copy of the run,
            // then each lane's dwords to its registers.
            let dw = i.width.dwords();
            let mut run = [0u32; 256];
            if lanes.load_run(&mut run[..64 * dw]) {
                for k in 0..dw {
                    let d = &mut file[i.dst as usize + k];
                    for l in 0..64 {
                        d[l] = u32::from_le(run[l * dw + k]);
                    }
                }
                return true;
            }
        }
        match i.width {
            Width::D1 | Width::D2 | Width::D3 | Width::D4 => {
                let file = cells(file);
                for k in 0..i.width.dwords() {
                    let d = col_at(file, i.dst as usize + k);
                    lanes.load_dword(k as u64, |l, v| d[l].set(v));
                }
            }
            w => {
                let mut out = [0u32; 64];
                for l in crate::wave::lanes(exec) {
                    let mut b = [0u8; 4];
                    lanes.load_bytes(l, &mut b[..n]);
                    out[l] = extend(w, u32::from_le_bytes(b));
                }
                put32(&mut file[i.dst as usize], &out, exec);
            }
        }
        true
    }

    /// Global/flat stores whose lanes all write inside one allocation, lane
    /// after lane (a later lane's bytes win where lanes overlap).
    #[inline(always)]
    fn vstore_fast(&mut self, i: &Inst, env: &Env<'_>) -> bool {
        let exec = self.exec();
        let Some(a) = self.device_addrs(i, exec) else {
            return false;
        };
        let n = i.width.bytes();
        let Some(lanes) = Lanes::check(env.mem, &env.cache, &a, exec, n as u64) else {
            return false;
        };
        let file = if i.acc { &self.a } else { &self.v };
        let data = Self::vreg(i.src[1]) as usize;
        if let (Width::D1 | Width::D2 | Width::D4, true) = (i.width, lanes.contiguous()) {
            let dw = i.width.dwords();
            let mut run = [0u32; 256];
            for k in 0..dw {
                let s = &file[data + k];
                for l in 0..64 {
                    run[l * dw + k] = s[l].to_le();
                }
            }
            if lanes.store_run(&run[..64 * dw]) {
                return true;
            }
        }
        match i.width {
            Width::D1 | Width::D2 | Width::D3 | Width::D4 => {
                let dw = i.width.dwords();
                for l in crate::wave::lanes(exec) {
                    for k in 0..dw {
                        lanes.store_dword(l, k as u64, file[data + k][l]);
                    }
                }
            }
            _ => {
                let src = &file[data];
                for l in crate::wave::lanes(exec) {
                    lanes.store_bytes(l, &src[l].to_le_bytes()[..n]);
                }
            }
        }
        true
    }

    /// Dword DS reads and writes (one and two addresses) whose lanes all stay
    /// inside the LDS. False when the general path must run.
    #[inline(always)]
    fn ds_fast(&mut self, i: &Inst, env: &mut Env<'_>) -> bool {
        let (Width::D1 | Width::D2 | Width::D4) = i.width else {
            return false;
        };
        let two = matches!(i.op, Op::DsRead2 | Op::DsWrite2);
        if !two && !matches!(i.op, Op::DsRead | Op::DsWrite) {
            return false;
        }
        let exec = self.exec();
        let n = i.width.bytes() as u64;
        let dw = i.width.dwords();
        // Byte offsets of the (up to two) accesses of each lane.
        let offs = if two {
            let scale = n * if i.wide { 64 } else { 1 };
            [i.imm as u64 * scale, i.imm2 as u64 * scale]
        } else {
            [i.imm as u64 | (i.imm2 as u64) << 8, 0]
        };
        let base: [u32; 64] = self.v[Self::vreg(i.src[0]) as usize];
        let lds_len = env.lds.len() as u64;
        let last = offs[two as usize];
        // The highest base address of an active lane (independent lanes,
        // not a chain through EXEC's bits, when every lane is active).
        let full = exec == u64::MAX;
        let hi_base = if full {
            base.iter().fold(0u32, |m, &b| m.max(b))
        } else {
            lanes(exec).fold(0u32, |m, l| m.max(base[l]))
        };
        let top = hi_base as u64 + offs[0].max(last) + n;
        if exec != 0 && top > lds_len {
            return false;
        }
        let lds = &mut *env.lds;
        let file = if i.acc { &mut self.a } else { &mut self.v };
        let copies = if two { 2 } else { 1 };
        if matches!(i.op, Op::DsRead | Op::DsRead2) {
            let ptr = lds.as_ptr();
            // A dword at `at`, for lanes whose accesses were checked above:
            // base + offset + n <= top <= the LDS size.
            let rd = |at: u64| {
                // SAFETY: `at + 4 <= top <= lds.len()` (see `top`), so the four
                // bytes lie inside the LDS slice, which nothing else borrows.
                u32::from_le(unsafe {
                    std::ptr::read_unaligned(ptr.add(at as usize) as *const u32)
                })
            };
            let file = cells(file);
            for (c, &o) in offs.iter().enumerate().take(copies) {
                for k in 0..dw {
                    let d = col_at(file, i.dst as usize + c * dw + k);
                    let at = o + 4 * k as u64;
                    if full {
                        for l in 0..64 {
                            d[l].set(rd(base[l] as u64 + at));
                        }
                    } else {
                        for l in lanes(exec) {
                            d[l].set(rd(base[l] as u64 + at));
                        }
                    }
                }
            }
        } else {
            let srcs = [Self::vreg(i.src[1]) as usize, Self::vreg(i.src[2]) as usize];
            for l in lanes(exec) {
                for (c, &o) in offs.iter().enumerate().take(copies) {
                    for k in 0..dw {
                        let s = (base[l] as u64 + o) as usize + 4 * k;
                        lds[s..s + 4].copy_from_slice(&file[srcs[c] + k][l].to_le_bytes());
                    }
                }
            }
        }
        true
    }

    /// MUBUF dword accesses through a private (add_tid) V# with a VGPR
    /// offset: each lane's own scratch, checked once for all lanes. False
    /// when the general path must run (it also reports any fault).
    #[inline(always)]
    fn buf_private_fast(&mut self, i: &Inst) -> bool {
        let (Src::S(r), Src::V(va)) = (i.src[1], i.src[0]) else {
            return false;
        };
        let r = r as usize;
        if i.idxen || !i.offen || r + 3 >= self.s.len() || self.s[r + 3] >> 23 & 1 == 0 {
            return false;
        }
        let (Width::D1 | Width::D2 | Width::D3 | Width::D4) = i.width else {
            return false;
        };
        let n = i.width.bytes() as u64;
        let dw = i.width.dwords();
        let base = self.s[r] as u64 | ((self.s[r + 1] & 0xffff) as u64) << 32;
        let start = private_wave_offset(base.wrapping_add(self.s32(i.src[2]) as u64))
            .wrapping_add(i.imm as i64 as u64);
        let exec = self.exec();
        let size = self.priv_size as u64;
        let vaddr = &self.v[va as usize];
        // Every lane's offset and the tests over the active ones, without
        // a branch per lane (a loop the compiler vectorizes).
        let lane0 = exec.trailing_zeros() as usize & 63;
        let first = (start.wrapping_add(vaddr[lane0] as u64) & 0xffff_ffff) as u32;
        let mut off = [0u32; 64];
        let (mut bad, mut misaligned, mut differ) = (0u32, 0u32, 0u32);
        for l in 0..64 {
            let active = (exec >> l) as u32 & 1;
            let o = start.wrapping_add(vaddr[l] as u64) & 0xffff_ffff;
            off[l] = o as u32;
            bad |= active & (o + n > size) as u32;
            // Dword-aligned offsets only: each dword is then one slot of the
            // swizzled layout (others take the general path, byte by byte).
            misaligned |= active & (o as u32 & 3 != 0) as u32;
            differ |= active & (o as u32 != first) as u32;
        }
        if bad != 0 || misaligned != 0 {
            return false;
        }
        let uniform = differ == 0;
        let load = i.op == Op::BufLoad;
        let file = if i.acc { &mut self.a } else { &mut self.v };
        for k in 0..dw {
            let reg = &mut file[i.dst as usize + k];
            if uniform {
                // The same offset in every lane: 64 consecutive dwords.
                let at = (first as usize / 4 + k) * 256;
                let Some(run) = self.scratch.get_mut(at..at + 256) else {
                    return false;
                };
                let mut words = [0u32; 64];
                for (l, w) in words.iter_mut().enumerate() {
                    *w = u32::from_le_bytes([
                        run[4 * l],
                        run[4 * l + 1],
                        run[4 * l + 2],
                        run[4 * l + 3],
                    ]);
                }
                if load {
                    put32(reg, &words, exec);
                } else {
                    put32(&mut words, reg, exec);
                    for (l, w) in words.iter().enumerate() {
                        run[4 * l..4 * l + 4].copy_from_slice(&w.to_le_bytes());
                    }
                }
                continue;
            }
            for l in lanes(exec) {
                let s = private_index(l, off[l] as usize + 4 * k);
                let Some(b) = self.scratch.get_mut(s..s + 4) else {
                    continue;
                };
                if load {
                    reg[l] = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                } else {
                    b.copy_from_slice(&reg[l].to_le_bytes());
                }
            }
        }
        true
    }

    #[inline(always)]
    fn vload(&mut self, i: &Inst, env: &mut Env<'_>) -> Result<(), Exception> {
        if i.op == Op::BufLoad && self.buf_private_fast(i) {
            return Ok(());
        }
        if self.vload_fast(i, env) {
            return Ok(());
        }
        let n = i.width.bytes();
        let dw = i.width.dwords();
        let mut buf = [0u8; 16];
        let (places, span) = self.places(i, n, env);
        if let (Some(s), Width::D1, false) = (span, i.width, i.acc) {
            // Dword loads from one allocation: the common case, done directly.
            let mut out = [0u32; 64];
            let exec = self.exec();
            for l in lanes(exec) {
                if let Place::Global(a) = places[l] {
                    out[l] = s.read_u32(a).unwrap_or(0);
                }
            }
            let d = &mut self.v[i.dst as usize];
            for l in lanes(exec) {
                d[l] = out[l];
            }
            return Ok(());
        }
        for l in lanes(self.exec()) {
            let p = places[l];
            let fast = match (span, p) {
                (Some(s), Place::Global(a)) => s.read(a, &mut buf[..n]),
                _ => false,
            };
            if !fast {
                self.read_place(p, &mut buf[..n], l, env)?;
            }
            for k in 0..dw {
                let mut b = [0u8; 4];
                let hi = (4 * k + 4).min(n);
                b[..hi - 4 * k].copy_from_slice(&buf[4 * k..hi]);
                let v = extend(i.width, u32::from_le_bytes(b));
                self.set_data_reg(i, i.dst + k as u16, l, v);
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn vstore(&mut self, i: &Inst, env: &mut Env<'_>) -> Result<(), Exception> {
        if i.op == Op::BufStore && self.buf_private_fast(i) {
            return Ok(());
        }
        if self.vstore_fast(i, env) {
            return Ok(());
        }
        let n = i.width.bytes();
        let data = match i.op {
            Op::BufStore => i.dst,
            _ => Self::vreg(i.src[1]),
        };
        let mut buf = [0u8; 16];
        let (places, span) = self.places(i, n, env);
        if let (Some(s), Width::D1, false) = (span, i.width, i.acc) {
            let src = &self.v[data as usize];
            for l in lanes(self.exec()) {
                if let Place::Global(a) = places[l] {
                    s.write_u32(a, src[l]);
                }
            }
            return Ok(());
        }
        for l in lanes(self.exec()) {
            let p = places[l];
            for k in 0..i.width.dwords() {
                let v = self.data_reg(i, data + k as u16, l).to_le_bytes();
                let hi = (4 * k + 4).min(n);
                buf[4 * k..hi].copy_from_slice(&v[..hi - 4 * k]);
            }
            let fast = match (span, p) {
                (Some(s), Place::Global(a)) => s.write(a, &buf[..n]),
                _ => false,
            };
            if !fast {
                self.write_place(p, &buf[..n], l, env)?;
            }
        }
        Ok(())
    }

    fn vatomic(&mut self, i: &Inst, env: &mut Env<'_>) -> Result<(), Exception> {
        let data = Self::vreg(i.src[1]);
        for l in lanes(self.exec()) {
            let p = self.place(i, l);
            let Place::Global(a) = p else {
                // Atomics on LDS / private through flat: done non-atomically
                // (only this workgroup's thread touches them).
                let n = if i.wide { 2 } else { 1 };
                let reg = |w: &Self, r: u16| {
                    (0..n).fold(0u64, |acc, k| {
                        acc | (w.data_reg(i, r + k, l) as u64) << (32 * k)
                    })
                };
                let (v, cmp) = match i.atomic {
                    Atomic::CmpSwap => (reg(self, data), reg(self, data + n)),
                    _ => (reg(self, data), 0),
                };
                let mut b = [0u8; 8];
                let len = 4 * n as usize;
                self.read_place(p, &mut b[..len], l, env)?;
                let old = u64::from_le_bytes(b);
                let new = if i.wide {
                    rmw64(i.atomic, old, v, cmp)
                } else {
                    rmw32(i.atomic, old as u32, v as u32, cmp as u32) as u64
                };
                self.write_place(p, &new.to_le_bytes()[..len], l, env)?;
                if i.ret {
                    for k in 0..n {
                        self.set_data_reg(i, i.dst + k, l, (old >> (32 * k)) as u32);
                    }
                }
                continue;
            };
            if i.wide {
                let v =
                    self.data_reg(i, data, l) as u64 | (self.data_reg(i, data + 1, l) as u64) << 32;
                let c = self.data_reg(i, data + 2, l) as u64
                    | (self.data_reg(i, data + 3, l) as u64) << 32;
                let (v, c) = if i.atomic == Atomic::CmpSwap {
                    (v, c)
                } else {
                    (v, 0)
                };
                let old = atomic64(env.mem, a, i.atomic, v, c).map_err(|e| e.in_lane(l))?;
                if i.ret {
                    self.set_data_reg(i, i.dst, l, old as u32);
                    self.set_data_reg(i, i.dst + 1, l, (old >> 32) as u32);
                }
            } else {
                let v = self.data_reg(i, data, l);
                let c = if i.atomic == Atomic::CmpSwap {
                    self.data_reg(i, data + 1, l)
                } else {
                    0
                };
                let old = atomic32_cached(env.mem, &env.cache, a, i.atomic, v, c)
                    .map_err(|e| e.in_lane(l))?;
                if i.ret {
                    self.set_data_reg(i, i.dst, l, old);
                }
            }
        }
        Ok(())
    }

    fn ds(&mut self, i: &Inst, env: &mut Env<'_>) -> Result<(), Exception> {
        if self.ds_fast(i, env) {
            return Ok(());
        }
        let addr = Self::vreg(i.src[0]) as usize;
        let d0 = Self::vreg(i.src[1]);
        let d1 = Self::vreg(i.src[2]);
        let n = i.width.bytes();
        let dw = i.width.dwords() as u16;
        let lds_len = env.lds.len();
        for l in lanes(self.exec()) {
            let base = self.v[addr][l] as u64;
            match i.op {
                Op::DsRead | Op::DsWrite | Op::DsAtomic => {
                    let off = (i.imm as u64 | (i.imm2 as u64) << 8) + base;
                    let len = match i.op {
                        Op::DsAtomic if i.wide => 8,
                        Op::DsAtomic => 4,
                        _ => n,
                    };
                    let r = lds_range(lds_len, off, len).map_err(|e| e.in_lane(l))?;
                    match i.op {
                        Op::DsRead => {
                            let mut b = [0u8; 16];
                            b[..r.len()].copy_from_slice(&env.lds[r.clone()]);
                            for k in 0..dw {
                                let k4 = 4 * k as usize;
                                let v =
                                    u32::from_le_bytes([b[k4], b[k4 + 1], b[k4 + 2], b[k4 + 3]]);
                                self.set_data_reg(i, i.dst + k, l, extend(i.width, v));
                            }
                        }
                        Op::DsWrite => {
                            let mut b = [0u8; 16];
                            for k in 0..dw {
                                let k4 = 4 * k as usize;
                                b[k4..k4 + 4]
                                    .copy_from_slice(&self.data_reg(i, d0 + k, l).to_le_bytes());
                            }
                            let len = r.len();
                            env.lds[r].copy_from_slice(&b[..len]);
                        }
                        _ if i.wide => {
                            let s = &mut env.lds[r];
                            let mut b = [0u8; 8];
                            b.copy_from_slice(s);
                            let old = u64::from_le_bytes(b);
                            let pair = |w: &Wave, r: u16| {
                                w.data_reg(i, r, l) as u64 | (w.data_reg(i, r + 1, l) as u64) << 32
                            };
                            let new = rmw64(i.atomic, old, pair(self, d0), pair(self, d1));
                            s.copy_from_slice(&new.to_le_bytes());
                            if i.ret {
                                self.set_data_reg(i, i.dst, l, old as u32);
                                self.set_data_reg(i, i.dst + 1, l, (old >> 32) as u32);
                            }
                        }
                        _ => {
                            let s = &mut env.lds[r];
                            let old = u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
                            let v = self.data_reg(i, d0, l);
                            let c = self.data_reg(i, d1, l);
                            let new = rmw32(i.atomic, old, v, c);
                            s.copy_from_slice(&new.to_le_bytes());
                            if i.ret {
                                self.set_data_reg(i, i.dst, l, old);
                            }
                        }
                    }
                }
                _ => {
                    // Two-address forms: offsets in elements (×64 for st64).
                    let scale = n as u64 * if i.wide { 64 } else { 1 };
                    for (k, o) in [i.imm as u64, i.imm2 as u64].into_iter().enumerate() {
                        let r =
                            lds_range(lds_len, base + o * scale, n).map_err(|e| e.in_lane(l))?;
                        let k = k as u16;
                        if i.op == Op::DsRead2 {
                            for w in 0..dw {
                                let s = r.start + 4 * w as usize;
                                let v = u32::from_le_bytes([
                                    env.lds[s],
                                    env.lds[s + 1],
                                    env.lds[s + 2],
                                    env.lds[s + 3],
                                ]);
                                self.set_data_reg(i, i.dst + k * dw + w, l, v);
                            }
                        } else {
                            let src = if k == 0 { d0 } else { d1 };
                            for w in 0..dw {
                                let s = r.start + 4 * w as usize;
                                let v = self.data_reg(i, src + w, l).to_le_bytes();
                                env.lds[s..s + 4].copy_from_slice(&v);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// ds_bpermute (pull from lane addr/4) and ds_permute (push to lane addr/4).
    fn ds_permute(&mut self, i: &Inst) -> Result<(), Exception> {
        let addr = Self::vreg(i.src[0]) as usize;
        let data = Self::vreg(i.src[1]) as usize;
        let exec = self.exec();
        let off = i.imm as u32 | i.imm2 << 8;
        let src = self.v[data];
        let mut out = [0u32; 64];
        for l in lanes(exec) {
            let other = ((self.v[addr][l].wrapping_add(off) >> 2) & 63) as usize;
            if i.op == Op::DsBpermuteB32 {
                out[l] = if exec >> other & 1 != 0 {
                    src[other]
                } else {
                    0
                };
            } else {
                out[other] = src[l];
            }
        }
        let d = i.dst as usize;
        for l in lanes(exec) {
            self.v[d][l] = out[l];
        }
        Ok(())
    }

    fn ds_swizzle(&mut self, i: &Inst) -> Result<(), Exception> {
        let data = Self::vreg(i.src[1]) as usize;
        let exec = self.exec();
        let off = i.imm as u32 | i.imm2 << 8;
        let src = self.v[data];
        let mut out = [0u32; 64];
        for l in lanes(exec) {
            let from = if off & 0x8000 != 0 {
                l & !3 | (off as usize >> ((l & 3) * 2) & 3)
            } else {
                let (and, or, xor) = (off & 0x1f, off >> 5 & 0x1f, off >> 10 & 0x1f);
                l & !31 | ((((l as u32 & 31) & and) | or) ^ xor) as usize
            };
            out[l] = if exec >> from & 1 != 0 { src[from] } else { 0 };
        }
        let d = i.dst as usize;
        for l in lanes(exec) {
            self.v[d][l] = out[l];
        }
        Ok(())
    }
}

fn lds_range(size: usize, off: u64, len: usize) -> Result<std::ops::Range<usize>, Exception> {
    if off.checked_add(len as u64).is_none_or(|e| e > size as u64) {
        return Err(Exception::at(
            FaultKind::Lds {
                offset: off,
                len: len as u64,
                size: size as u64,
            },
            off,
        ));
    }
    Ok(off as usize..off as usize + len)
}
