//! The memory model a HIP runtime can trust: what ROCr gives a discrete
//! MI210 with XNACK off.
//!
//! - Pool allocations are reachable by the agents the pool says, at one
//!   address for host and GPU.
//! - Pageable host memory is not reachable by the GPU: a kernel that touches
//!   it faults (`HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT` is false, so
//!   HIP pins or stages host buffers instead of handing them to kernels).
//! - Locked host memory (`hsa_amd_memory_lock`, `_lock_to_pool`) becomes
//!   reachable through a distinct agent address (an alias in the allocation
//!   table, see `inlay_vgpu::Memory::map_host`) until it is unlocked; locking
//!   memory the GPU already reaches returns its own address, as the thunk
//!   does for its own allocations. `hsa_memory_register` is a no-op, as in
//!   ROCr.
//! - Shared virtual memory ranges ([`svm`]) are reachable at their own
//!   address while their attributes grant the GPU access (HIP's managed
//!   memory).
//! - `hsa_amd_pointer_info` describes each kind as ROCr does: pool
//!   allocations as HSA memory with the size asked for, locked memory as
//!   LOCKED with both addresses and the CPU as owner, everything else
//!   (pageable, SVM, the runtime's own structures) as UNKNOWN.
//!
//! The host program owns locked and SVM memory and may unmap it without
//! telling us (HIP frees managed memory with `munmap`). Before each
//! dispatch [`Runtime::drop_unmapped_host_ranges`] removes every such
//! range that is no longer mapped read-write, so a kernel using it faults
//! instead of touching whatever the host maps there next.

pub mod svm;

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use inlay_vgpu::{MemKind, Memory};

use crate::agent::{AgentId, CPU, GPU};
use crate::signal::Signal;
use crate::{hostmem, lock, Result, Runtime, Status};

/// `hsa_amd_pointer_type_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointerType {
    Unknown = 0,
    Hsa = 1,
    Locked = 2,
}

/// What `hsa_amd_pointer_info` reports for an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointerInfo {
    pub kind: PointerType,
    pub agent_base: u64,
    pub host_base: u64,
    pub size: u64,
    pub owner: Option<AgentId>,
    pub global_flags: u32,
    pub accessible: Vec<AgentId>,
}

impl PointerInfo {
    fn unknown() -> Self {
        PointerInfo {
            kind: PointerType::Unknown,
            agent_base: 0,
            host_base: 0,
            size: 0,
            owner: None,
            global_flags: 0,
            accessible: Vec::new(),
        }
    }
}

/// One locked host range.
#[derive(Clone, Copy, Debug)]
struct Lock {
    size: u64,
    /// The address the GPU uses.
    agent: u64,
    /// Base of the alias in the allocation table (None once the host unmapped it).
    alias: Option<u64>,
    /// Locks of the same range not yet unlocked.
    count: u32,
    global_flags: u32,
}

#[derive(Default)]
struct Svm {
    ranges: svm::Ranges,
    /// The runs entered in the allocation table: start → end.
    runs: BTreeMap<u64, u64>,
}

/// The runtime's record of host memory the GPU may reach, and of the sizes
/// pool allocations were asked for.
#[derive(Default)]
pub struct HostMemory {
    /// Locks by (host address, size): as in the thunk, a range locked
    /// again with another size is a registration of its own, with its own
    /// agent address (ROCclr pins a page-aligned range that grows with the
    /// copy while an earlier, smaller pin of the same page is still held).
    locks: Mutex<BTreeMap<(u64, u64), Lock>>,
    svm: Mutex<Svm>,
    requested: Mutex<HashMap<u64, u64>>,
}

impl HostMemory {
    /// Remembers the size a pool allocation at `base` was asked for.
    pub(crate) fn allocated(&self, base: u64, size: u64) {
        lock(&self.requested).insert(base, size);
    }

    pub(crate) fn freed(&self, base: u64) {
        lock(&self.requested).remove(&base);
    }

    /// The lock whose host range holds `addr`, or whose agent alias does.
    fn find_lock(&self, addr: u64) -> Option<(u64, Lock)> {
        let locks = lock(&self.locks);
        // Locks may overlap, so every one starting at or below `addr` is a
        // candidate; the nearest start wins.
        locks
            .range(..=(addr, u64::MAX))
            .rev()
            .find(|(&(h, _), l)| addr - h < l.size)
            .or_else(|| {
                locks
                    .iter()
                    .find(|(_, l)| addr >= l.agent && addr - l.agent < l.size)
            })
            .map(|(&(h, _), l)| (h, *l))
    }

    /// Removes the ranges the host no longer maps read-write from `memory`
    /// (see the module notes). Cheap when there are none.
    pub(crate) fn drop_unmapped(&self, memory: &Memory, log: impl Fn(&str)) {
        let mut locks = lock(&self.locks);
        let mut svm = lock(&self.svm);
        if svm.runs.is_empty() && locks.values().all(|l| l.alias.is_none()) {
            return;
        }
        let mapped = hostmem::checker();
        for (&(host, _), l) in locks.iter_mut() {
            let Some(alias) = l.alias else { continue };
            if !mapped(host, l.size, true) {
                let _ = memory.free(alias);
                l.alias = None;
                log(&format!(
                    "locked host memory {host:#x}+{:#x} was unmapped without hsa_amd_memory_unlock: the GPU no longer reaches it",
                    l.size
                ));
            }
        }
        let gone: Vec<(u64, u64)> = svm
            .runs
            .iter()
            .filter(|(&s, &e)| !mapped(s, e - s, true))
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in gone {
            let _ = memory.free(s);
            svm.runs.remove(&s);
            svm.ranges.forget(s, e);
            log(&format!(
                "shared virtual memory {s:#x}..{e:#x} was unmapped: the GPU no longer reaches it"
            ));
        }
    }
}

impl Runtime {
    /// `hsa_amd_pointer_info` for `ptr`.
    pub fn pointer_info(&self, ptr: u64) -> PointerInfo {
        let host = &self.shared.host;
        if let Some(a) = self.shared.memory.find(ptr) {
            match a.kind {
                MemKind::Locked => {}
                MemKind::Svm | MemKind::Runtime => return PointerInfo::unknown(),
                _ => {
                    let Some(pool) = self.pools.get(a.tag as usize) else {
                        return PointerInfo::unknown();
                    };
                    let mut accessible = vec![pool.owner];
                    if pool.accessible_by_all {
                        accessible = self.agents.iter().map(|a| a.id).collect();
                    }
                    for id in lock(&self.access).get(&a.base).into_iter().flatten() {
                        if !accessible.contains(id) {
                            accessible.push(*id);
                        }
                    }
                    let size = lock(&host.requested).get(&a.base).copied();
                    return PointerInfo {
                        kind: PointerType::Hsa,
                        agent_base: a.base,
                        host_base: a.base,
                        size: size.unwrap_or(a.size),
                        owner: Some(pool.owner),
                        global_flags: pool.global_flags,
                        accessible,
                    };
                }
            }
        }
        match host.find_lock(ptr) {
            Some((h, l)) => PointerInfo {
                kind: PointerType::Locked,
                agent_base: l.agent,
                host_base: h,
                size: l.size,
                // The thunk reports the GPU holding the alias; ROCr corrects
                // that to a CPU for system memory.
                owner: Some(CPU),
                global_flags: l.global_flags,
                accessible: vec![GPU],
            },
            None => PointerInfo::unknown(),
        }
    }

    /// Locks `size` bytes of host memory at `host` for the GPU (when `gpu`
    /// is among the agents asked for) and returns the address the GPU uses.
    /// `global_flags` are those of the pool it is locked to.
    pub fn lock_host(&self, host: u64, size: u64, gpu: bool, global_flags: u32) -> Result<u64> {
        if host == 0 || size == 0 {
            return Err(Status::InvalidArgument);
        }
        if !gpu {
            // Only CPUs asked for: nothing to map (ROCr returns the pointer).
            return Ok(host);
        }
        let memory = &self.shared.memory;
        if let Some(a) = memory.find(host).filter(|a| a.contains(host, size)) {
            // Memory the GPU reaches already (a pool allocation, SVM): the
            // thunk registers it again and the GPU keeps its address.
            return match a.kind {
                MemKind::Locked | MemKind::Runtime => Err(Status::Error),
                _ => Ok(host),
            };
        }
        // A range that only shares pages with our allocations is host
        // memory: ours come from the host heap, so a page-aligned pin of a
        // host buffer (ROCclr pins whole pages) can take in the end of one.
        // ROCr's device memory never shares a page with the host's, so
        // such a lock succeeds there, and must here: ROCclr 5.2's fallback
        // when pinning fails (staged row-by-row copies for hipMemcpy2D)
        // adds each row's offset to the previous row's address.
        let mut locks = lock(&self.shared.host.locks);
        if let Some(l) = locks.get_mut(&(host, size)) {
            // The same range again: counted, like the thunk's registrations.
            if l.alias.is_none() {
                return Err(Status::Error);
            }
            l.count += 1;
            return Ok(l.agent);
        }
        // The kernel driver pins the pages: they must exist, readable and writable.
        if !hostmem::mapped(host, size, true) {
            return Err(Status::Error);
        }
        let agent = memory
            .map_host(host, size, MemKind::Locked, 0)
            .map_err(|_| Status::OutOfResources)?;
        let alias = agent & !(svm::PAGE - 1);
        locks.insert(
            (host, size),
            Lock {
                size,
                agent,
                alias: Some(alias),
                count: 1,
                global_flags,
            },
        );
        Ok(agent)
    }

    /// `hsa_amd_memory_unlock`: the GPU stops reaching the range once every
    /// lock of it is undone. Unlocking memory that is not locked succeeds,
    /// as in ROCr.
    pub fn unlock_host(&self, host: u64) -> Result<()> {
        if host == 0 {
            return Err(Status::InvalidArgument);
        }
        let mut locks = lock(&self.shared.host.locks);
        let mut at_host = locks.range_mut((host, 0)..=(host, u64::MAX));
        let (Some((&key, l)), None) = (at_host.next(), at_host.next()) else {
            // Nothing locked there, or several sizes locked at that address:
            // the thunk finds no single registration to undo, and ROCr
            // ignores that and succeeds, leaving them all locked.
            return Ok(());
        };
        l.count -= 1;
        if l.count == 0 {
            if let Some(alias) = l.alias {
                let _ = self.shared.memory.free(alias);
            }
            locks.remove(&key);
        }
        Ok(())
    }

    /// `hsa_amd_svm_attributes_set` on `[ptr, ptr + size)` (whole pages).
    pub fn svm_set(&self, ptr: u64, size: u64, changes: &[svm::Change]) -> Result<()> {
        let (lo, hi) = svm::pages(ptr, size).ok_or(Status::InvalidArgument)?;
        if ptr == 0 || size == 0 {
            return Err(Status::InvalidArgument);
        }
        let memory = &self.shared.memory;
        let mut state = lock(&self.shared.host.svm);
        // KFD refuses ranges that are not mapped or that overlap its own
        // allocations (ROCr then answers HSA_STATUS_ERROR).
        if !hostmem::mapped(lo, hi - lo, false) {
            return Err(Status::Error);
        }
        let mut at = lo;
        while at < hi {
            match memory.find(at) {
                Some(a) if a.kind == MemKind::Svm => at = a.end(),
                Some(_) => return Err(Status::Error),
                None => at += svm::PAGE,
            }
        }
        state.ranges.set(lo, hi, changes);
        // Re-enter the runs the change touches: remove those that meet
        // [lo, hi) or its neighbours, then add the runs as they are now.
        let (mut from, mut to) = (lo, hi);
        let stale: Vec<(u64, u64)> = state
            .runs
            .range(..=hi)
            .filter(|(_, &e)| e >= lo)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in stale {
            let _ = memory.free(s);
            state.runs.remove(&s);
            from = from.min(s);
            to = to.max(e);
        }
        for (s, e) in state.ranges.gpu_runs(from, to) {
            memory
                .add_host(s, e - s, MemKind::Svm, 0)
                .map_err(|_| Status::Error)?;
            state.runs.insert(s, e);
        }
        Ok(())
    }

    /// `hsa_amd_svm_attributes_get` on `[ptr, ptr + size)`.
    pub fn svm_get(&self, ptr: u64, size: u64) -> Result<svm::Summary> {
        let (lo, hi) = svm::pages(ptr, size).ok_or(Status::InvalidArgument)?;
        Ok(lock(&self.shared.host.svm).ranges.get(lo, hi))
    }

    /// `hsa_amd_svm_prefetch_async`: once every dependency is 0, records the
    /// range as prefetched to `agent` (the bytes stay where they are: host
    /// and GPU share them here) and decrements `completion`.
    pub fn svm_prefetch(
        &self,
        ptr: u64,
        size: u64,
        agent: AgentId,
        deps: Vec<std::sync::Arc<Signal>>,
        completion: std::sync::Arc<Signal>,
    ) -> Result<()> {
        self.agent(agent)?;
        let (lo, hi) = svm::pages(ptr, size).ok_or(Status::InvalidArgument)?;
        let shared = self.shared.clone();
        self.after(deps, move || {
            lock(&shared.host.svm).ranges.prefetched(lo, hi, agent);
            completion.sub(1, std::sync::atomic::Ordering::AcqRel);
        })
    }

    /// See [`HostMemory::drop_unmapped`].
    pub fn drop_unmapped_host_ranges(&self) {
        self.shared.drop_unmapped_host_ranges();
    }
}
