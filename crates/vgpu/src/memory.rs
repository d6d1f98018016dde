//! Device memory: host allocations recorded in one allocation table.
//!
//! Most device pointers are host addresses, so the runtime can copy with
//! plain memory operations. What keeps a kernel from corrupting the host is
//! the table: every access is checked with [`Memory::check`] before it is
//! made.
//!
//! The table also holds ranges whose bytes belong to the host program, not
//! to us: host memory made reachable by the GPU ([`Memory::add_host`],
//! shared virtual memory, at its own address) and aliases of locked host
//! memory ([`Memory::map_host`]), which the GPU sees at a distinct agent
//! address, as ROCr's `hsa_amd_memory_lock` gives one on a discrete GPU.
//! Agent addresses come from the window [`ALIAS_BASE`]..[`ALIAS_END`], which
//! is not canonical on x86-64, so the host can never hold memory there;
//! every access goes through [`Allocation::host_addr`], which translates.
//!
//! Freed blocks go to a quarantine instead of back to the host allocator, so
//! their addresses cannot be handed out again while they are remembered; an
//! access to one is reported as a use after free. The quarantine is bounded
//! (bytes and count); its oldest blocks are released first. Retired blocks
//! ([`Memory::retire`]) stay forever: their addresses are never reused.

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
    /// The agent's alias of locked host memory (the host program owns the bytes).
    Locked,
    /// Host memory the GPU may reach at its own address (shared virtual
    /// memory; the host program owns the bytes).
    Svm,
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
            MemKind::Locked => "locked host memory (agent address)",
            MemKind::Svm => "shared virtual memory",
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
    /// Host address of the byte at `base`: `base` itself except for the
    /// aliases of locked memory.
    pub host: u64,
}

impl Allocation {
    pub fn end(&self) -> u64 {
        self.base + self.size
    }
    /// Where the byte at device address `addr` (inside the allocation) is in
    /// the host's address space.
    #[inline]
    pub fn host_addr(&self, addr: u64) -> u64 {
        addr.wrapping_add(self.delta())
    }
    /// What to add to a device address inside the allocation to reach its
    /// host address (0 except for aliases).
    #[inline]
    pub fn delta(&self) -> u64 {
        self.host.wrapping_sub(self.base)
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
    /// A host range to add overlaps one the table already holds.
    Overlap { addr: u64, len: u64, base: u64 },
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
            Fault::Overlap { addr, len, base } => write!(
                f,
                "{len} bytes at {addr:#x} overlap the allocation at {base:#x}"
            ),
        }
    }
}

impl std::error::Error for Fault {}

/// Allocations larger than this are refused outright (the host could not back them).
pub const MAX_ALLOCATION: u64 = 1 << 46;
/// Minimum alignment of every allocation.
pub const MIN_ALIGN: u64 = 64;
/// Bytes after each allocation that belong to no allocation.
const GUARD: u64 = 64;
const QUARANTINE_BYTES: u64 = 256 << 20;
const QUARANTINE_COUNT: usize = 4096;
/// The window agent addresses of locked host memory come from: above the
/// 47-bit user half of x86-64 (no host pointer is ever there), below the
/// GPU's 48-bit limit and far from the LDS and private apertures.
pub const ALIAS_BASE: u64 = 1 << 47;
pub const ALIAS_END: u64 = 1 << 48;
const PAGE: u64 = 4096;

struct Block {
    alloc: Allocation,
    /// How we allocated the bytes; None when the host program owns them.
    layout: Option<Layout>,
}

impl Block {
    /// Gives the bytes back to the host allocator, if they are ours.
    fn release(self) {
        if let Some(layout) = self.layout {
            // SAFETY: the block came from alloc_zeroed with this layout and is
            // in no map any more, so nothing hands out or reaches its address.
            unsafe { dealloc(self.alloc.base as *mut u8, layout) };
        }
    }
}

#[derive(Default)]
struct Table {
    live: BTreeMap<u64, Block>,
    /// Freed blocks still held, keyed by base; `order` says which is oldest
    /// (retired blocks are not in it: they are never released).
    freed: BTreeMap<u64, Block>,
    order: VecDeque<u64>,
    freed_bytes: u64,
    /// The next agent address for an alias (never reused).
    next_alias: u64,
}

impl Table {
    /// Whether `[addr, addr + len)` meets a live or freed block; returns its base.
    fn overlapping(&self, addr: u64, len: u64) -> Option<u64> {
        let end = addr.saturating_add(len);
        let hit = |m: &BTreeMap<u64, Block>| {
            m.range(..end)
                .next_back()
                .filter(|(_, b)| b.alloc.end() > addr)
                .map(|(&base, _)| base)
        };
        hit(&self.live).or_else(|| hit(&self.freed))
    }
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
        // A guard after every block, outside the table: no allocation ever
        // starts where another ends, so running off the end faults instead
        // of landing in a neighbour.
        let layout =
            Layout::from_size_align((size + GUARD) as usize, align as usize).map_err(|_| bad)?;
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
            host: base,
        };
        let mut t = self.write();
        // The host allocator may hand back an address whose old block we just
        // released from quarantine; it is not in `freed` any more by then.
        t.live.insert(
            base,
            Block {
                alloc,
                layout: Some(layout),
            },
        );
        Ok(base)
    }

    /// Makes `size` bytes of the host program's memory at `host` reachable
    /// at the same address (shared virtual memory). The caller vouches that
    /// the range is mapped for as long as it stays in the table.
    pub fn add_host(&self, host: u64, size: u64, kind: MemKind, tag: u64) -> Result<(), Fault> {
        if size == 0 || host == 0 || host.checked_add(size).is_none_or(|e| e > ALIAS_BASE) {
            return Err(Fault::BadRequest { size, align: 0 });
        }
        let mut t = self.write();
        if let Some(base) = t.overlapping(host, size) {
            return Err(Fault::Overlap {
                addr: host,
                len: size,
                base,
            });
        }
        let alloc = Allocation {
            base: host,
            size,
            kind,
            tag,
            host,
        };
        t.live.insert(
            host,
            Block {
                alloc,
                layout: None,
            },
        );
        Ok(())
    }

    /// Makes the pages holding `size` bytes of the host program's memory at
    /// `host` reachable at a fresh agent address, which is returned (it
    /// points at `host`'s byte, at the same offset in its page). The caller
    /// vouches that the range stays mapped while the alias lives.
    pub fn map_host(&self, host: u64, size: u64, kind: MemKind, tag: u64) -> Result<u64, Fault> {
        let bad = Fault::BadRequest { size, align: PAGE };
        let first = host & !(PAGE - 1);
        let last = host
            .checked_add(size)
            .and_then(|e| e.checked_add(PAGE - 1))
            .ok_or(bad)?
            & !(PAGE - 1);
        if size == 0 || host == 0 || last > ALIAS_BASE {
            return Err(bad);
        }
        let len = last - first;
        let mut t = self.write();
        let base = t.next_alias.max(ALIAS_BASE);
        if base.checked_add(len).is_none_or(|e| e > ALIAS_END) {
            return Err(Fault::OutOfMemory { size });
        }
        // A page between aliases, so running off one never lands in the next.
        t.next_alias = base + len + PAGE;
        let alloc = Allocation {
            base,
            size: len,
            kind,
            tag,
            host: first,
        };
        t.live.insert(
            base,
            Block {
                alloc,
                layout: None,
            },
        );
        Ok(base + (host - first))
    }

    /// Frees the allocation whose base is `addr` (or removes a host range
    /// or alias: the host program's bytes are left alone). The block is
    /// quarantined.
    pub fn free(&self, addr: u64) -> Result<Allocation, Fault> {
        self.remove(addr, false)
    }

    /// Like [`Memory::free`], but the block is never released: its address
    /// is never handed out again and accesses to it stay use-after-free
    /// faults (for objects whose handles are addresses, such as signals).
    pub fn retire(&self, addr: u64) -> Result<Allocation, Fault> {
        self.remove(addr, true)
    }

    fn remove(&self, addr: u64, forever: bool) -> Result<Allocation, Fault> {
        let mut t = self.write();
        let block = t.live.remove(&addr).ok_or(Fault::InvalidFree { addr })?;
        self.frees.fetch_add(1, Ordering::AcqRel);
        let alloc = block.alloc;
        // The host program's own ranges are not kept: their addresses are
        // its to reuse (a new SVM range may come back at the same place).
        if block.layout.is_none() && alloc.kind == MemKind::Svm {
            return Ok(alloc);
        }
        t.freed.insert(addr, block);
        if forever {
            return Ok(alloc);
        }
        t.freed_bytes += alloc.size;
        t.order.push_back(addr);
        while t.freed_bytes > QUARANTINE_BYTES || t.order.len() > QUARANTINE_COUNT {
            let Some(old) = t.order.pop_front() else {
                break;
            };
            if let Some(b) = t.freed.remove(&old) {
                t.freed_bytes -= b.alloc.size;
                b.release();
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
    /// table knows about (then it is the caller's own host memory). Returns
    /// where the range is in the host's address space.
    pub fn check_host(&self, addr: u64, len: u64) -> Result<u64, Fault> {
        if addr == 0 || addr.checked_add(len).is_none() {
            return Err(Fault::Unmapped { addr, len });
        }
        match self.check(addr, len) {
            Ok(a) => Ok(a.host_addr(addr)),
            Err(Fault::Unmapped { .. }) => {
                // Unknown memory: still refuse if the range overlaps a block
                // we know, or reaches the agent-only alias window.
                let t = self.read();
                if addr + len > ALIAS_BASE || t.overlapping(addr, len).is_some() {
                    Err(Fault::Unmapped { addr, len })
                } else {
                    Ok(addr)
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
        let dst = self.check(dst, len)?.host_addr(dst);
        let src = self.check(src, len)?.host_addr(src);
        // SAFETY: both ranges lie inside live allocations (checked above).
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len as usize) };
        Ok(())
    }

    /// Copies where either side may be the caller's own host memory (see [`Memory::check_host`]).
    pub fn copy_host(&self, dst: u64, src: u64, len: u64) -> Result<(), Fault> {
        if len == 0 {
            return Ok(());
        }
        let dst = self.check_host(dst, len)?;
        let src = self.check_host(src, len)?;
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
        let dst = self.check_host(dst, len)?;
        // SAFETY: the range was checked and is 4-byte aligned.
        let words = unsafe { std::slice::from_raw_parts_mut(dst as *mut u32, count as usize) };
        words.fill(value);
        Ok(())
    }

    /// Reads checked bytes into `out`.
    pub fn read_bytes(&self, addr: u64, out: &mut [u8]) -> Result<(), Fault> {
        let src = self.check(addr, out.len() as u64)?.host_addr(addr);
        // SAFETY: the source range was checked; `out` is a distinct Rust buffer.
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Writes `data` to a checked range.
    pub fn write_bytes(&self, addr: u64, data: &[u8]) -> Result<(), Fault> {
        let dst = self.check(addr, data.len() as u64)?.host_addr(addr);
        // SAFETY: the destination range was checked; `data` is a distinct Rust buffer.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst as *mut u8, data.len()) };
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
        let live = std::mem::take(&mut t.live);
        let freed = std::mem::take(&mut t.freed);
        // Each block is in one map only, so each is released exactly once.
        live.into_values()
            .chain(freed.into_values())
            .for_each(Block::release);
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

    #[test]
    fn an_alias_reaches_host_memory_at_a_distinct_address() {
        let m = Memory::new();
        let mut host = vec![0u32; 2048];
        let h = host.as_mut_ptr() as u64 + 12;
        let agent = m.map_host(h, 64, MemKind::Locked, 0).unwrap();
        assert!((ALIAS_BASE..ALIAS_END).contains(&agent));
        assert_ne!(agent, h);
        assert_eq!(agent % PAGE, h % PAGE, "same offset in the page");
        m.write_bytes(agent, &7u32.to_le_bytes()).unwrap();
        assert_eq!(host[3], 7);
        host[4] = 9;
        let mut out = [0u8; 4];
        m.read_bytes(agent + 4, &mut out).unwrap();
        assert_eq!(u32::from_le_bytes(out), 9);
        // The host address itself is not reachable through the table.
        assert!(matches!(m.check(h, 4), Err(Fault::Unmapped { .. })));
        // Copies with the agent address on one side translate too.
        let d = m.alloc(64, 0, MemKind::Device, 0).unwrap();
        m.copy_host(d, agent, 8).unwrap();
        m.read_bytes(d + 4, &mut out).unwrap();
        assert_eq!(u32::from_le_bytes(out), 9);
        // Removed: the agent address faults and the host bytes are untouched.
        m.free(agent - agent % PAGE).unwrap();
        assert!(m.check(agent, 4).is_err());
        assert!(m.copy_host(d, agent, 4).is_err());
        assert_eq!(host[3], 7);
        // A second alias never reuses the first one's addresses.
        let again = m.map_host(h, 64, MemKind::Locked, 0).unwrap();
        assert!(again > agent);
    }

    #[test]
    fn host_ranges_are_reachable_in_place_and_never_overlap() {
        let m = Memory::new();
        let mut host = vec![0u8; 8192];
        let h = host.as_mut_ptr() as u64;
        m.add_host(h, 4096, MemKind::Svm, 0).unwrap();
        m.write_bytes(h + 10, &[5]).unwrap();
        assert_eq!(host[10], 5);
        assert!(matches!(
            m.add_host(h + 100, 16, MemKind::Svm, 0),
            Err(Fault::Overlap { .. })
        ));
        assert!(m.check(h + 4096, 1).is_err());
        m.free(h).unwrap();
        // The host program's range is forgotten, not quarantined: it may come back.
        m.add_host(h, 8192, MemKind::Svm, 0).unwrap();
        assert_eq!(host[10], 5);
    }

    #[test]
    fn no_allocation_starts_where_another_ends() {
        let m = Memory::new();
        let blocks: Vec<u64> = (0..64)
            .map(|_| m.alloc(4096, 4096, MemKind::Device, 0).unwrap())
            .collect();
        for &b in &blocks {
            assert!(matches!(m.check(b + 4096, 4), Err(Fault::Unmapped { .. })));
        }
    }

    #[test]
    fn retired_blocks_are_never_reused() {
        let m = Memory::new();
        let a = m.alloc(64, 64, MemKind::Runtime, 0).unwrap();
        m.retire(a).unwrap();
        for _ in 0..QUARANTINE_COUNT + 10 {
            let b = m.alloc(64, 64, MemKind::Runtime, 0).unwrap();
            assert_ne!(a, b);
            m.free(b).unwrap();
        }
        assert!(matches!(m.check(a, 8), Err(Fault::UseAfterFree { .. })));
    }
}
