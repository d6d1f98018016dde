//! Memory pools as ROCr presents them. Regions (the older HSA API) are the
//! same objects seen through `hsa_region_*`.

use crate::agent::{AgentId, CPU, GPU};
use inlay_vgpu::MemKind;

/// Index of a pool in [`crate::Runtime::pools`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PoolId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment {
    Global = 0,
    ReadOnly = 1,
    Private = 2,
    Group = 3,
}

/// `hsa_amd_memory_pool_global_flag_t` bits (the region flags have the same values).
pub const FLAG_KERNARG_INIT: u32 = 1;
pub const FLAG_FINE_GRAINED: u32 = 2;
pub const FLAG_COARSE_GRAINED: u32 = 4;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    pub id: PoolId,
    pub owner: AgentId,
    pub segment: Segment,
    pub global_flags: u32,
    pub size: u64,
    pub alloc_allowed: bool,
    pub granule: u64,
    pub alignment: u64,
    pub accessible_by_all: bool,
    pub alloc_max_size: u64,
    /// What allocations from this pool are in the allocation table.
    pub kind: MemKind,
}

/// Host memory size from /proc/meminfo (falls back to 16 GiB).
fn host_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(16 << 30)
}

/// Device memory of an MI210: 64 GiB of HBM2e.
pub const GPU_MEMORY: u64 = 64 << 30;
/// LDS per workgroup.
pub const GROUP_SEGMENT: u64 = 64 << 10;

/// The pools of both agents, in the order ROCr lists them.
pub fn standard_pools() -> Vec<Pool> {
    let host = host_memory();
    let sys = |id, flags, kind| Pool {
        id: PoolId(id),
        owner: CPU,
        segment: Segment::Global,
        global_flags: flags,
        size: host,
        alloc_allowed: true,
        granule: 4096,
        alignment: 4096,
        accessible_by_all: true,
        alloc_max_size: host,
        kind,
    };
    vec![
        sys(0, FLAG_FINE_GRAINED, MemKind::SystemFine),
        sys(1, FLAG_KERNARG_INIT | FLAG_FINE_GRAINED, MemKind::Kernarg),
        sys(2, FLAG_COARSE_GRAINED, MemKind::SystemCoarse),
        Pool {
            id: PoolId(3),
            owner: GPU,
            segment: Segment::Global,
            global_flags: FLAG_COARSE_GRAINED,
            size: GPU_MEMORY,
            alloc_allowed: true,
            granule: 4096,
            alignment: 4096,
            accessible_by_all: false,
            alloc_max_size: GPU_MEMORY,
            kind: MemKind::Device,
        },
        Pool {
            id: PoolId(4),
            owner: GPU,
            segment: Segment::Group,
            global_flags: 0,
            size: GROUP_SEGMENT,
            alloc_allowed: false,
            granule: 0,
            alignment: 0,
            accessible_by_all: false,
            alloc_max_size: 0,
            kind: MemKind::Device,
        },
    ]
}
