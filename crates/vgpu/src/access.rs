//! Checked kernel accesses to device memory: typed loads, stores and atomics
//! built on [`Memory::check`]. Every access is checked before it is made.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::fault::{Exception, FaultKind};
use crate::inst::Atomic;
use crate::memory::Memory;

/// Reads `out.len()` bytes at `addr`.
pub fn load(mem: &Memory, addr: u64, out: &mut [u8]) -> Result<(), Exception> {
    mem.read_bytes(addr, out).map_err(Exception::from)
}

/// Writes `data` at `addr`.
pub fn store(mem: &Memory, addr: u64, data: &[u8]) -> Result<(), Exception> {
    mem.write_bytes(addr, data).map_err(Exception::from)
}

fn checked_aligned(mem: &Memory, addr: u64, len: u64) -> Result<(), Exception> {
    if !addr.is_multiple_of(len) {
        return Err(Exception::at(
            FaultKind::Misaligned { addr, align: len },
            addr,
        ));
    }
    mem.check(addr, len)?;
    Ok(())
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
        // No 64-bit atomic decodes to AddF32 (inst.rs maps only `*_add_f32`, which has
        // no _x2 form); global_atomic_add_f64 is unimplemented and faults before this.
        Atomic::AddF32 => old,
    }
}

/// 32-bit atomic on device memory, atomic with respect to every host thread.
/// Returns the old value.
pub fn atomic32(mem: &Memory, addr: u64, op: Atomic, v: u32, cmp: u32) -> Result<u32, Exception> {
    checked_aligned(mem, addr, 4)?;
    // SAFETY: the 4 bytes at `addr` lie in a live allocation and are 4-aligned;
    // all concurrent kernel atomics on them go through AtomicU32 as well.
    let a = unsafe { AtomicU32::from_ptr(addr as *mut u32) };
    let r = a.fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
        Some(rmw32(op, old, v, cmp))
    });
    Ok(r.unwrap_or_else(|x| x))
}

/// 64-bit atomic on device memory. Returns the old value.
pub fn atomic64(mem: &Memory, addr: u64, op: Atomic, v: u64, cmp: u64) -> Result<u64, Exception> {
    checked_aligned(mem, addr, 8)?;
    // SAFETY: as in `atomic32`, for 8 aligned bytes.
    let a = unsafe { AtomicU64::from_ptr(addr as *mut u64) };
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
}

impl Span {
    /// Checks `[lo, hi)` against the allocation table.
    pub fn check(mem: &Memory, lo: u64, hi: u64) -> Option<Span> {
        let len = hi.checked_sub(lo)?;
        mem.check(lo, len).ok()?;
        Some(Span { lo, hi })
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
        unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, out.as_mut_ptr(), out.len()) };
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
            std::ptr::read_unaligned(addr as *const u32)
        }))
    }

    /// Writes a little-endian dword at `addr`; false if outside the span.
    #[inline]
    pub fn write_u32(&self, addr: u64, v: u32) -> bool {
        if !self.covers(addr, 4) {
            return false;
        }
        // SAFETY: as in `read_u32`, for the destination.
        unsafe { std::ptr::write_unaligned(addr as *mut u32, v.to_le()) };
        true
    }

    /// Writes `data` at `addr`; false if outside the span.
    #[inline]
    pub fn write(&self, addr: u64, data: &[u8]) -> bool {
        if !self.covers(addr, data.len()) {
            return false;
        }
        // SAFETY: as in `read`, for the destination.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), addr as *mut u8, data.len()) };
        true
    }
}
