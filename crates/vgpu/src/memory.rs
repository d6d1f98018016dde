//! Device memory: host allocations recorded in one allocation table.
//!
//! Device pointers are host addresses, so the runtime can copy with plain
//! memory operations. What keeps a kernel from corrupting the host is the
//! table: every access is checked with [`Memory::check`] before it is made.
//!
//! Freed blocks go to a quarantine instead of back to the host allocator, so
//! their addresses cannot be handed out again while they are remembered; an
//! access to one is reported as a use after free. The quarantine is bounded
//! (bytes and count); its oldest blocks are released first.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

/// What an allocation is for; the runtime derives ownership and flags from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemKind {
    /// System memory, fine-grained (coherent between host and device).
    SystemFine,
    /// System memory reserved for kernel arguments (fine-grained).
    Kernarg,
    /// System memory, coarse-grained.
    SystemCoarse,
    /// Device-local memory (coarse-grained VRAM).
    Device,
    /// Internal runtime structures that kernels may touch (queue rings, ...).
    Runtime,
}

impl MemKind {
    /// What the memory is, in words.
    pub fn describe(self) -> &'static str {
        match self {
            MemKind::SystemFine => "fine-grained system memory",
            MemKind::Kernarg => "kernel-argument memory",
            MemKind::SystemCoarse => "coarse-grained system memory",
            MemKind::Device => "device memory",
            MemKind::Runtime => "runtime memory",
        }
    }
}

/// One live allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub base: u64,
    pub size: u64,
    pub kind: MemKind,
    /// A value the allocator's user chose (the runtime stores a pool id).
    pub tag: u64,
}

impl Allocation {
    pub fn end(&self) -> u64 {
        self.base + self.size
    }
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        addr >= self.base && len <= self.size && addr - self.base <= self.size - len
    }
}

/// Why an access or a request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// No allocation, live or freed, holds the address.
    Unmapped { addr: u64, len: u64 },
    /// The access starts inside an allocation but runs past its end.
    OutOfBounds {
        addr: u64,
        len: u64,
        base: u64,
        size: u64,
    },
    /// The address belongs to a block that was freed.
    UseAfterFree { addr: u64, len: u64, base: u64 },
    /// `free` of an address that is not the base of a live allocation.
    InvalidFree { addr: u64 },
    /// Size zero, alignment not a power of two, or too large.
    BadRequest { size: u64, align: u64 },
    /// The host allocator refused.
    OutOfMemory { size: u64 },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Fault::Unmapped { addr, len } => {
                write!(f, "access of {len} bytes at {addr:#x}: no allocation there")
            }
            Fault::OutOfBounds {
                addr,
                len,
                base,
                size,
            } => write!(
                f,
                "access of {len} bytes at {addr:#x} runs past the allocation {base:#x}+{size:#x}"
            ),
            Fault::UseAfterFree { addr, len, base } => {
                write!(
                    f,
                    "access of {len} bytes at {addr:#x} in freed allocation {base:#x}"
                )
            }
            Fault::InvalidFree { addr } => {
                write!(f, "free of {addr:#x}: not the base of a live allocation")
            }
            Fault::BadRequest { size, align } => write!(
                f,
                "bad allocation request: size {size:#x}, alignment {align:#x}"
            ),
            Fault::OutOfMemory { size } => {
                write!(f, "out of host memory allocating {size:#x} bytes")
            }
        }
    }
}

impl std::error::Error for Fault {}

/// Allocations larger than this are refused outright (the host could not back them).
pub const MAX_ALLOCATION: u64 = 1 << 46;
/// Minimum alignment of every allocation.
pub const MIN_ALIGN: u64 = 64;
const QUARANTINE_BYTES: u64 = 256 << 20;
const QUARANTINE_COUNT: usize = 4096;

struct Block {
    alloc: Allocation,
    layout: Layout,
}

#[derive(Default)]
struct Table {
    live: BTreeMap<u64, Block>,
    /// Freed blocks still held, keyed by base; `order` says which is oldest.
    freed: BTreeMap<u64, Block>,
    order: VecDeque<u64>,
    freed_bytes: u64,
}

/// The allocation table of the shared address space.
#[derive(Default)]
pub struct Memory {
    table: RwLock<Table>,
    /// Counts frees: a range found inside a live allocation stays inside it
    /// while this is unchanged (kernels cache such checks, see
    /// `access::AllocCache`, instead of taking the table's lock per access).
    frees: AtomicU64,
}

impl Memory {
    pub fn new() -> Self {
        Self::default()
    }

    /// How many frees there have been (see the `frees` field).
    pub fn generation(&self) -> u64 {
        self.frees.load(Ordering::Acquire)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Table> {
        // A poisoned lock only means another thread panicked mid-update of
        // plain maps; the maps are still consistent enough to read.
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Table> {
        self.table.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocates `size` zeroed bytes aligned to `align` (at least [`MIN_ALIGN`]).
    pub fn alloc(&self, size: u64, align: u64, kind: MemKind, tag: u64) -> Result<u64, Fault> {
        let bad = Fault::BadRequest { size, align };
        if size == 0
            || size > MAX_ALLOCATION
            || (align != 0 && !align.is_power_of_two())
            || align > (1 << 30)
        {
            return Err(bad);
        }
        let align = align.max(MIN_ALIGN);
        let layout = Layout::from_size_align(size as usize, align as usize).map_err(|_| bad)?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Fault::OutOfMemory { size });
        }
        let base = ptr as u64;
        let alloc = Allocation {
            base,
            size,
            kind,
            tag,
        };
        let mut t = self.write();
        // The host allocator may hand back an address whose old block we just
        // released from quarantine; it is not in `freed` any more by then.
        t.live.insert(base, Block { alloc, layout });
        Ok(base)
    }

    /// Frees the allocation whose base is `addr`. The block is quarantined.
    pub fn free(&self, addr: u64) -> Result<Allocation, Fault> {
        let mut t = self.write();
        let block = t.live.remove(&addr).ok_or(Fault::InvalidFree { addr })?;
        self.frees.fetch_add(1, Ordering::AcqRel);
        let alloc = block.alloc;
        t.freed_bytes += alloc.size;
        t.order.push_back(addr);
        t.freed.insert(addr, block);
        while t.freed_bytes > QUARANTINE_BYTES || t.order.len() > QUARANTINE_COUNT {
            let Some(old) = t.order.pop_front() else {
                break;
            };
            if let Some(b) = t.freed.remove(&old) {
                t.freed_bytes -= b.alloc.size;
                // SAFETY: the block came from alloc_zeroed with this layout and
                // is in neither map any more, so nothing hands out its address.
                unsafe { dealloc(b.alloc.base as *mut u8, b.layout) };
            }
        }
        Ok(alloc)
    }

    /// The live allocation containing `addr`.
    pub fn find(&self, addr: u64) -> Option<Allocation> {
        let t = self.read();
        let (_, b) = t.live.range(..=addr).next_back()?;
        (addr < b.alloc.end()).then_some(b.alloc)
    }

    /// The live allocation containing `addr`, or else the one closest to it
    /// (ending below it or starting above it): what a fault report names as
    /// the buffer a stray access most likely meant.
    pub fn nearest(&self, addr: u64) -> Option<Allocation> {
        let t = self.read();
        let below = t.live.range(..=addr).next_back().map(|(_, b)| b.alloc);
        if let Some(a) = below.filter(|a| addr < a.end()) {
            return Some(a);
        }
        let above = t.live.range(addr..).next().map(|(_, b)| b.alloc);
        match (below, above) {
            (Some(b), Some(a)) => Some(if addr - b.end() <= a.base - addr {
                b
            } else {
                a
            }),
            (b, a) => b.or(a),
        }
    }

    /// The freed (quarantined) allocation containing `addr`.
    pub fn find_freed(&self, addr: u64) -> Option<Allocation> {
        let t = self.read();
        let (_, b) = t.freed.range(..=addr).next_back()?;
        (addr < b.alloc.end()).then_some(b.alloc)
    }

    /// Checks that `len` bytes at `addr` lie inside one live allocation.
    pub fn check(&self, addr: u64, len: u64) -> Result<Allocation, Fault> {
        match self.find(addr) {
            Some(a) if a.contains(addr, len) => Ok(a),
            Some(a) => Err(Fault::OutOfBounds {
                addr,
                len,
                base: a.base,
                size: a.size,
            }),
            None => match self.find_freed(addr) {
                Some(f) => Err(Fault::UseAfterFree {
                    addr,
                    len,
                    base: f.base,
                }),
                None => Err(Fault::Unmapped { addr, len }),
            },
        }
    }

    /// Checks a range the runtime is asked to touch on behalf of a host
    /// caller: it must be inside a live allocation, or outside every block the
    /// table knows about (then it is the caller's own host memory).
    pub fn check_host(&self, addr: u64, len: u64) -> Result<(), Fault> {
        if addr == 0 || addr.checked_add(len).is_none() {
            return Err(Fault::Unmapped { addr, len });
        }
        match self.check(addr, len) {
            Ok(_) => Ok(()),
            Err(Fault::Unmapped { .. }) => {
                // Unknown memory: still refuse if the range overlaps a block we know.
                let t = self.read();
                let end = addr + len;
                let overlaps = |m: &BTreeMap<u64, Block>| {
                    m.range(..end)
                        .next_back()
                        .is_some_and(|(_, b)| b.alloc.end() > addr)
                };
                if overlaps(&t.live) || overlaps(&t.freed) {
                    Err(Fault::Unmapped { addr, len })
                } else {
                    Ok(())
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Copies `len` bytes between two checked ranges (they may overlap).
    pub fn copy(&self, dst: u64, src: u64, len: u64) -> Result<(), Fault> {
        if len == 0 {
            return Ok(());
        }
        self.check(dst, len)?;
        self.check(src, len)?;
        // SAFETY: both ranges lie inside live allocations (checked above).
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len as usize) };
        Ok(())
    }

    /// Copies where either side may be the caller's own host memory (see [`Memory::check_host`]).
    pub fn copy_host(&self, dst: u64, src: u64, len: u64) -> Result<(), Fault> {
        if len == 0 {
            return Ok(());
        }
        self.check_host(dst, len)?;
        self.check_host(src, len)?;
        // SAFETY: each range is inside a live allocation or is memory the
        // caller vouches for, as the HSA copy contract requires of it.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len as usize) };
        Ok(())
    }

    /// Fills `count` 32-bit words at `dst` with `value` (host-callers' rules, see [`Memory::check_host`]).
    pub fn fill_u32(&self, dst: u64, value: u32, count: u64) -> Result<(), Fault> {
        if count == 0 {
            return Ok(());
        }
        let len = count.checked_mul(4).ok_or(Fault::Unmapped {
            addr: dst,
            len: u64::MAX,
        })?;
        if dst & 3 != 0 {
            return Err(Fault::BadRequest {
                size: len,
                align: 4,
            });
        }
        self.check_host(dst, len)?;
        // SAFETY: the range was checked and is 4-byte aligned.
        let words = unsafe { std::slice::from_raw_parts_mut(dst as *mut u32, count as usize) };
        words.fill(value);
        Ok(())
    }

    /// Reads checked bytes into `out`.
    pub fn read_bytes(&self, addr: u64, out: &mut [u8]) -> Result<(), Fault> {
        self.check(addr, out.len() as u64)?;
        // SAFETY: the source range was checked; `out` is a distinct Rust buffer.
        unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Writes `data` to a checked range.
    pub fn write_bytes(&self, addr: u64, data: &[u8]) -> Result<(), Fault> {
        self.check(addr, data.len() as u64)?;
        // SAFETY: the destination range was checked; `data` is a distinct Rust buffer.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), addr as *mut u8, data.len()) };
        Ok(())
    }

    /// Number of live allocations.
    pub fn live_count(&self) -> usize {
        self.read().live.len()
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        let t = self.table.get_mut().unwrap_or_else(|e| e.into_inner());
        for b in t.live.values().chain(t.freed.values()) {
            // SAFETY: every block came from alloc_zeroed with its layout and is
            // freed exactly once, here, when the table goes away.
            unsafe { dealloc(b.alloc.base as *mut u8, b.layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_is_zeroed_aligned_and_found() {
        let m = Memory::new();
        let a = m.alloc(1000, 4096, MemKind::Device, 7).unwrap();
        assert_eq!(a % 4096, 0);
        let mut buf = [1u8; 1000];
        m.read_bytes(a, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 0));
        let found = m.find(a + 999).unwrap();
        assert_eq!(
            (found.base, found.size, found.kind, found.tag),
            (a, 1000, MemKind::Device, 7)
        );
        assert_eq!(m.find(a + 1000), None);
    }

    #[test]
    fn check_reports_each_kind_of_fault() {
        let m = Memory::new();
        let a = m.alloc(64, 0, MemKind::SystemFine, 0).unwrap();
        assert!(m.check(a, 64).is_ok());
        assert_eq!(
            m.check(a + 60, 8),
            Err(Fault::OutOfBounds {
                addr: a + 60,
                len: 8,
                base: a,
                size: 64
            })
        );
        assert!(matches!(m.check(8, 4), Err(Fault::Unmapped { .. })));
        m.free(a).unwrap();
        assert_eq!(
            m.check(a + 4, 4),
            Err(Fault::UseAfterFree {
                addr: a + 4,
                len: 4,
                base: a
            })
        );
        assert_eq!(m.free(a), Err(Fault::InvalidFree { addr: a }));
    }

    #[test]
    fn freed_addresses_are_not_reused_at_once() {
        let m = Memory::new();
        let mut freed = Vec::new();
        for _ in 0..100 {
            let a = m.alloc(256, 0, MemKind::Device, 0).unwrap();
            assert!(!freed.contains(&a), "address reused while quarantined");
            m.free(a).unwrap();
            freed.push(a);
        }
    }

    #[test]
    fn bad_requests_are_refused() {
        let m = Memory::new();
        assert!(m.alloc(0, 0, MemKind::Device, 0).is_err());
        assert!(m.alloc(16, 3, MemKind::Device, 0).is_err());
        assert!(m.alloc(u64::MAX, 0, MemKind::Device, 0).is_err());
    }

    #[test]
    fn copy_and_fill_check_ranges() {
        let m = Memory::new();
        let a = m.alloc(64, 0, MemKind::Device, 0).unwrap();
        let b = m.alloc(64, 0, MemKind::Device, 0).unwrap();
        m.fill_u32(a, 0xdead_beef, 16).unwrap();
        m.copy(b, a, 64).unwrap();
        let mut out = [0u8; 4];
        m.read_bytes(b + 60, &mut out).unwrap();
        assert_eq!(u32::from_le_bytes(out), 0xdead_beef);
        assert!(m.copy(b, a, 65).is_err());
        assert!(m.fill_u32(a, 0, 17).is_err());
        // Host memory the table does not know is accepted by the host-caller variant only.
        let mut host = [0u32; 4];
        let h = host.as_mut_ptr() as u64;
        assert!(m.copy(h, a, 16).is_err());
        m.copy_host(h, a, 16).unwrap();
        assert_eq!(host[3], 0xdead_beef);
        // ... but not when it straddles a known block.
        assert!(m.check_host(a - 8, 16).is_err());
    }
}
