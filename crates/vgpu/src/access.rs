//! Checked kernel accesses to device memory: typed loads, stores and atomics
//! built on [`Memory::check`]. Every access is checked before it is made.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::fault::{Exception, FaultKind};
use crate::inst::Atomic;
use crate::memory::{Allocation, Memory};
use crate::valu::{f16_to_f32, f32_to_f16};

/// Reads `out.len()` bytes at `addr`.
pub fn load(mem: &Memory, addr: u64, out: &mut [u8]) -> Result<(), Exception> {
    mem.read_bytes(addr, out).map_err(Exception::from)
}

/// Writes `data` at `addr`.
pub fn store(mem: &Memory, addr: u64, data: &[u8]) -> Result<(), Exception> {
    mem.write_bytes(addr, data).map_err(Exception::from)
}

/// Checks an aligned access of `len` bytes at `addr`; returns its host address.
fn checked_aligned(mem: &Memory, addr: u64, len: u64) -> Result<u64, Exception> {
    checked_aligned_cached(mem, &AllocCache::default(), addr, len)
}

fn checked_aligned_cached(
    mem: &Memory,
    cache: &AllocCache,
    addr: u64,
    len: u64,
) -> Result<u64, Exception> {
    if !addr.is_multiple_of(len) {
        return Err(Exception::at(
            FaultKind::Misaligned { addr, align: len },
            addr,
        ));
    }
    match cache.check(mem, addr, len) {
        Some(delta) => Ok(addr.wrapping_add(delta)),
        // Not inside a live allocation: the table says why.
        None => Ok(mem.check(addr, len)?.host_addr(addr)),
    }
}

/// The new value of a 32-bit read-modify-write.
pub fn rmw32(op: Atomic, old: u32, v: u32, cmp: u32) -> u32 {
    match op {
        Atomic::Add => old.wrapping_add(v),
        Atomic::Sub => old.wrapping_sub(v),
        Atomic::Swap => v,
        Atomic::CmpSwap => {
            if old == cmp {
                v
            } else {
                old
            }
        }
        Atomic::SMin => (old as i32).min(v as i32) as u32,
        Atomic::UMin => old.min(v),
        Atomic::SMax => (old as i32).max(v as i32) as u32,
        Atomic::UMax => old.max(v),
        Atomic::And => old & v,
        Atomic::Or => old | v,
        Atomic::Xor => old ^ v,
        Atomic::Inc => {
            if old >= v {
                0
            } else {
                old + 1
            }
        }
        Atomic::Dec => {
            if old == 0 || old > v {
                v
            } else {
                old - 1
            }
        }
        Atomic::AddF32 => (f32::from_bits(old) + f32::from_bits(v)).to_bits(),
        Atomic::MinF32 => {
            let (o, n) = (f32::from_bits(old), f32::from_bits(v));
            if n < o {
                v
            } else {
                old
            }
        }
        Atomic::MaxF32 => {
            let (o, n) = (f32::from_bits(old), f32::from_bits(v));
            if n > o {
                v
            } else {
                old
            }
        }
        Atomic::PkAddF16 => {
            // Each half added in f32, then rounded to f16: rounding to f32
            // first cannot change the result (24 >= 2 * 11 + 2 bits).
            let half =
                |x: u32, y: u32| f32_to_f16(f16_to_f32(x as u16) + f16_to_f32(y as u16)) as u32;
            half(old, v) | half(old >> 16, v >> 16) << 16
        }
        // Only 64-bit atomics decode to these (inst.rs: `*_f64`).
        Atomic::AddF64 | Atomic::MinF64 | Atomic::MaxF64 => old,
    }
}

/// The new value of a 64-bit read-modify-write.
pub fn rmw64(op: Atomic, old: u64, v: u64, cmp: u64) -> u64 {
    match op {
        Atomic::Add => old.wrapping_add(v),
        Atomic::Sub => old.wrapping_sub(v),
        Atomic::Swap => v,
        Atomic::CmpSwap => {
            if old == cmp {
                v
            } else {
                old
            }
        }
        Atomic::SMin => (old as i64).min(v as i64) as u64,
        Atomic::UMin => old.min(v),
        Atomic::SMax => (old as i64).max(v as i64) as u64,
        Atomic::UMax => old.max(v),
        Atomic::And => old & v,
        Atomic::Or => old | v,
        Atomic::Xor => old ^ v,
        Atomic::Inc => {
            if old >= v {
                0
            } else {
                old + 1
            }
        }
        Atomic::Dec => {
            if old == 0 || old > v {
                v
            } else {
                old - 1
            }
        }
        Atomic::AddF64 => (f64::from_bits(old) + f64::from_bits(v)).to_bits(),
        Atomic::MinF64 => {
            let (o, n) = (f64::from_bits(old), f64::from_bits(v));
            if n < o {
                v
            } else {
                old
            }
        }
        Atomic::MaxF64 => {
            let (o, n) = (f64::from_bits(old), f64::from_bits(v));
            if n > o {
                v
            } else {
                old
            }
        }
        // No 64-bit atomic decodes to these (inst.rs: they have no `_x2`
        // or f64 form).
        Atomic::AddF32 | Atomic::MinF32 | Atomic::MaxF32 | Atomic::PkAddF16 => old,
    }
}

/// 32-bit atomic on device memory, atomic with respect to every host thread.
/// Returns the old value.
pub fn atomic32(mem: &Memory, addr: u64, op: Atomic, v: u32, cmp: u32) -> Result<u32, Exception> {
    atomic32_cached(mem, &AllocCache::default(), addr, op, v, cmp)
}

/// [`atomic32`] with the allocation check through `cache`.
pub fn atomic32_cached(
    mem: &Memory,
    cache: &AllocCache,
    addr: u64,
    op: Atomic,
    v: u32,
    cmp: u32,
) -> Result<u32, Exception> {
    let host = checked_aligned_cached(mem, cache, addr, 4)?;
    // SAFETY: the 4 bytes at `addr` lie in a live allocation and are 4-aligned
    // (pages are the same in an alias, so `host` is too); all concurrent
    // kernel atomics on them go through AtomicU32 as well.
    let a = unsafe { AtomicU32::from_ptr(host as *mut u32) };
    let r = a.fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
        Some(rmw32(op, old, v, cmp))
    });
    Ok(r.unwrap_or_else(|x| x))
}

/// 64-bit atomic on device memory. Returns the old value.
pub fn atomic64(mem: &Memory, addr: u64, op: Atomic, v: u64, cmp: u64) -> Result<u64, Exception> {
    let host = checked_aligned(mem, addr, 8)?;
    // SAFETY: as in `atomic32`, for 8 aligned bytes.
    let a = unsafe { AtomicU64::from_ptr(host as *mut u64) };
    let r = a.fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
        Some(rmw64(op, old, v, cmp))
    });
    Ok(r.unwrap_or_else(|x| x))
}

/// A byte range checked once to lie inside one live allocation, so that many
/// accesses inside it (the lanes of one instruction) need no further lookups.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    lo: u64,
    hi: u64,
    /// Device address to host address (see [`Allocation::delta`]).
    delta: u64,
}

impl Span {
    /// Checks `[lo, hi)` against the allocation table.
    pub fn check(mem: &Memory, lo: u64, hi: u64) -> Option<Span> {
        let len = hi.checked_sub(lo)?;
        let delta = mem.check(lo, len).ok()?.delta();
        Some(Span { lo, hi, delta })
    }

    #[inline]
    fn host(&self, addr: u64) -> u64 {
        addr.wrapping_add(self.delta)
    }

    fn covers(&self, addr: u64, len: usize) -> bool {
        addr >= self.lo && addr.checked_add(len as u64).is_some_and(|e| e <= self.hi)
    }

    /// Reads `out.len()` bytes at `addr`; false if outside the span.
    #[inline]
    pub fn read(&self, addr: u64, out: &mut [u8]) -> bool {
        if !self.covers(addr, out.len()) {
            return false;
        }
        // SAFETY: the range lies inside the span, which was checked to be
        // inside one live allocation; `out` is a distinct Rust buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(self.host(addr) as *const u8, out.as_mut_ptr(), out.len())
        };
        true
    }

    /// Reads a little-endian dword at `addr`; None if outside the span.
    #[inline]
    pub fn read_u32(&self, addr: u64) -> Option<u32> {
        if !self.covers(addr, 4) {
            return None;
        }
        // SAFETY: the 4 bytes lie inside the checked span; unaligned reads are allowed.
        Some(u32::from_le(unsafe {
            std::ptr::read_unaligned(self.host(addr) as *const u32)
        }))
    }

    /// Writes a little-endian dword at `addr`; false if outside the span.
    #[inline]
    pub fn write_u32(&self, addr: u64, v: u32) -> bool {
        if !self.covers(addr, 4) {
            return false;
        }
        // SAFETY: as in `read_u32`, for the destination.
        unsafe { std::ptr::write_unaligned(self.host(addr) as *mut u32, v.to_le()) };
        true
    }

    /// Writes `data` at `addr`; false if outside the span.
    #[inline]
    pub fn write(&self, addr: u64, data: &[u8]) -> bool {
        if !self.covers(addr, data.len()) {
            return false;
        }
        // SAFETY: as in `read`, for the destination.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.host(addr) as *mut u8, data.len())
        };
        true
    }
}

/// The allocations a workgroup's last device accesses were checked against,
/// each with the table's free count at the time: while no free has happened
/// since, a range inside one of them needs no lookup (nor the table's lock,
/// which host threads would otherwise contend for on every memory
/// instruction). A few entries, because kernels commonly stream through
/// several buffers in turn (two inputs and an output, say): with one entry
/// each access would evict the previous buffer and take the lock.
#[derive(Default)]
pub struct AllocCache {
    slots: [Cell<Option<(u64, Allocation)>>; CACHE_SLOTS],
    /// The slot the next miss replaces (round robin).
    next: Cell<usize>,
}

const CACHE_SLOTS: usize = 4;

impl AllocCache {
    /// Whether `len` bytes at `addr` lie inside one live allocation; if so,
    /// what to add to reach their host address (see [`Allocation::delta`]).
    #[inline]
    pub fn check(&self, mem: &Memory, addr: u64, len: u64) -> Option<u64> {
        // Read before the lookup: a free after this read changes the count.
        let generation = mem.generation();
        for slot in &self.slots {
            if let Some((g, a)) = slot.get() {
                if g == generation && a.contains(addr, len) {
                    return Some(a.delta());
                }
            }
        }
        let a = mem.check(addr, len).ok()?;
        let n = self.next.get();
        self.slots[n].set(Some((generation, a)));
        self.next.set((n + 1) % CACHE_SLOTS);
        Some(a.delta())
    }
}

/// Reads `out.len()` bytes at `addr` through `cache`; on a miss the checked
/// table path, which also reports the fault.
pub fn load_cached(
    mem: &Memory,
    cache: &AllocCache,
    addr: u64,
    out: &mut [u8],
) -> Result<(), Exception> {
    if let Some(delta) = cache.check(mem, addr, out.len() as u64) {
        let host = addr.wrapping_add(delta);
        // SAFETY: the range was just found (or is still, no free since) inside
        // one live allocation; `out` is a distinct Rust buffer.
        unsafe { std::ptr::copy_nonoverlapping(host as *const u8, out.as_mut_ptr(), out.len()) };
        return Ok(());
    }
    load(mem, addr, out)
}

/// The addresses of one instruction's active lanes, each with `n` bytes,
/// checked once to lie inside one live allocation: the lanes then read and
/// write without a lookup or a range test each.
pub struct Lanes<'a> {
    addr: &'a [u64; 64],
    exec: u64,
    n: u64,
    /// Every lane active, each right after the one before (see [`Lanes::contiguous`]).
    run: bool,
    /// Device address to host address (see [`Allocation::delta`]).
    delta: u64,
}

impl<'a> Lanes<'a> {
    /// Checks the `n` bytes at the address of every lane `exec` enables;
    /// None if they are not all inside one allocation (or no lane is active).
    #[inline]
    pub fn check(
        mem: &Memory,
        cache: &AllocCache,
        addr: &'a [u64; 64],
        exec: u64,
        n: u64,
    ) -> Option<Lanes<'a>> {
        if exec == u64::MAX {
            // The coalesced case first: a test the compiler vectorizes, and
            // the range is then the run from the first lane's address.
            let base = addr[0];
            let mut diff = 0u64;
            for (l, &a) in addr.iter().enumerate() {
                diff |= a ^ base.wrapping_add(l as u64 * n);
            }
            if diff == 0 && n > 0 {
                let len = 64 * n;
                base.checked_add(len)?;
                let delta = cache.check(mem, base, len)?;
                return Some(Lanes {
                    addr,
                    exec,
                    n,
                    run: true,
                    delta,
                });
            }
        }
        // Over every lane, the inactive ones masked out (no branch per lane).
        let (mut lo, mut hi, mut wraps) = (u64::MAX, 0u64, false);
        for (l, &a) in addr.iter().enumerate() {
            let active = (exec >> l) & 1 != 0;
            let end = a.wrapping_add(n);
            wraps |= active & (end < a);
            lo = lo.min(if active { a } else { u64::MAX });
            hi = hi.max(if active { end } else { 0 });
        }
        if wraps || lo >= hi {
            return None;
        }
        let delta = cache.check(mem, lo, hi - lo)?;
        Some(Lanes {
            addr,
            exec,
            n,
            run: false,
            delta,
        })
    }

    /// Host address of byte `k` of lane `l`'s access.
    #[inline]
    fn host(&self, l: usize, k: u64) -> u64 {
        self.addr[l].wrapping_add(k).wrapping_add(self.delta)
    }

    /// Whether every lane is active and lane `l` accesses the `n` bytes
    /// right after lane `l - 1`'s (the coalesced access of consecutive
    /// work-items): the lanes then cover one run of `64 * n` bytes.
    #[inline]
    pub fn contiguous(&self) -> bool {
        self.run
    }

    /// The `64 * n` bytes of a [`Lanes::contiguous`] access, as dwords in
    /// memory order (`n` a multiple of 4); false if it is not one.
    #[inline]
    pub fn load_run(&self, out: &mut [u32]) -> bool {
        if !self.contiguous() || out.len() as u64 * 4 != 64 * self.n {
            return false;
        }
        // SAFETY: every lane is active, so each lane's n bytes were checked
        // to lie inside one live allocation, and together they are the one
        // run addr[0]..addr[0] + 64n; `out` is a distinct Rust buffer of
        // exactly that many bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.host(0, 0) as *const u8,
                out.as_mut_ptr() as *mut u8,
                out.len() * 4,
            )
        };
        true
    }

    /// Writes the run of a [`Lanes::contiguous`] access from `data` (dwords
    /// in memory order); false (and nothing written) if it is not one.
    #[inline]
    pub fn store_run(&self, data: &[u32]) -> bool {
        if !self.contiguous() || data.len() as u64 * 4 != 64 * self.n {
            return false;
        }
        // SAFETY: as in `load_run`, for the destination.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr() as *const u8,
                self.host(0, 0) as *mut u8,
                data.len() * 4,
            )
        };
        true
    }

    /// Dword `k` (bytes 4k..4k+4 of each lane's `n`) of every active lane,
    /// handed to `put` with its lane; inactive lanes are skipped.
    #[inline]
    pub fn load_dword(&self, k: u64, mut put: impl FnMut(usize, u32)) {
        if 4 * k + 4 > self.n {
            return;
        }
        let read = |l: usize| {
            // SAFETY: lane l is active, so addr[l]..addr[l]+n was checked to be
            // inside one live allocation, and 4k+4 <= n.
            u32::from_le(unsafe { std::ptr::read_unaligned(self.host(l, 4 * k) as *const u32) })
        };
        if self.exec == u64::MAX {
            for l in 0..64 {
                put(l, read(l));
            }
        } else {
            let mut m = self.exec;
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                put(l, read(l));
            }
        }
    }

    /// The first `out.len()` (at most `n`) bytes of lane `l`; false (and
    /// nothing read) if the lane is not active or the length is too long.
    #[inline]
    pub fn load_bytes(&self, l: usize, out: &mut [u8]) -> bool {
        if l >= 64 || self.exec >> l & 1 == 0 || out.len() as u64 > self.n {
            return false;
        }
        // SAFETY: as in `load_dword`, for out.len() <= n bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(self.host(l, 0) as *const u8, out.as_mut_ptr(), out.len())
        };
        true
    }

    /// Writes dword `v` at bytes 4k..4k+4 of lane `l`; false (and nothing
    /// written) if the lane is not active or the dword is outside its `n` bytes.
    #[inline]
    pub fn store_dword(&self, l: usize, k: u64, v: u32) -> bool {
        if l >= 64 || self.exec >> l & 1 == 0 || 4 * k + 4 > self.n {
            return false;
        }
        // SAFETY: as in `load_dword`, for the destination.
        unsafe { std::ptr::write_unaligned(self.host(l, 4 * k) as *mut u32, v.to_le()) };
        true
    }

    /// Writes `data` (at most `n` bytes) at lane `l`'s address.
    #[inline]
    pub fn store_bytes(&self, l: usize, data: &[u8]) -> bool {
        if l >= 64 || self.exec >> l & 1 == 0 || data.len() as u64 > self.n {
            return false;
        }
        // SAFETY: as in `load_bytes`, for the destination.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.host(l, 0) as *mut u8, data.len())
        };
        true
    }
}
