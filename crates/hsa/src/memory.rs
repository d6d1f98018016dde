//! Allocation from pools and regions, copies, fills, access and pointer info.

use crate::abi::*;
use crate::export;
use crate::state::{self, rt};
use inlay_runtime::memory::svm;
use inlay_runtime::Status;
use std::ffi::c_void;

fn allocate(
    handle: Handle,
    size: usize,
    out: *mut *mut c_void,
    invalid: Status,
) -> Result<(), Status> {
    let rt = rt()?;
    // ROCr checks the size and out-pointer before the pool.
    if size == 0 || out.is_null() {
        return Err(Status::InvalidArgument);
    }
    let pool = state::pool_id(&rt, handle, invalid)?;
    let p = rt.allocate(pool, size as u64)?;
    put(out as *mut c_void, p as *mut c_void)
}

/// Writes the fields of `hsa_amd_pointer_info_t` that fit in the caller's `size`.
fn write_pointer_info(info: *mut u8, caller_size: u32, fields: &[(usize, &[u8])]) -> u32 {
    let mut written = 4; // the size field itself
    for &(off, bytes) in fields {
        if off + bytes.len() > caller_size as usize {
            break;
        }
        // SAFETY: the caller's struct has `caller_size` bytes; this field lies inside.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), info.add(off), bytes.len()) };
        written = off + bytes.len();
    }
    written as u32
}

/// `hsa_amd_memory_lock` and `_lock_to_pool` (`pool` None: the coarse
/// system pool), checked in ROCr's order.
fn lock_host(
    host: *mut c_void,
    size: usize,
    agents: *const Handle,
    n: i32,
    agent_ptr: *mut *mut c_void,
    pool: Option<Handle>,
) -> Result<(), Status> {
    let rt = rt()?;
    if size == 0 || host.is_null() || agent_ptr.is_null() {
        return Err(Status::InvalidArgument);
    }
    put(agent_ptr as *mut c_void, std::ptr::null_mut::<c_void>())?;
    if (!agents.is_null() && n == 0) || (agents.is_null() && n != 0) || n < 0 {
        return Err(Status::InvalidArgument);
    }
    let flags = match pool {
        None => inlay_runtime::pool::FLAG_COARSE_GRAINED,
        Some(h) => {
            let p = rt.pool(state::pool_id(&rt, h, Status::InvalidMemoryPool)?)?;
            if p.owner != inlay_runtime::agent::CPU {
                return Err(Status::InvalidMemoryPool);
            }
            p.global_flags & !inlay_runtime::pool::FLAG_KERNARG_INIT
        }
    };
    // No agents: every GPU. CPUs in the list need nothing.
    let mut gpu = n == 0;
    for &h in read_array(agents, n as usize)? {
        gpu |= rt.agent(state::agent_id(&rt, h)?)?.is_gpu();
    }
    let p = rt.lock_host(host as u64, size as u64, gpu, flags)?;
    put(agent_ptr as *mut c_void, p as *mut c_void)
}

// `hsa_amd_svm_attribute_t` and `hsa_amd_svm_global_flag_t`.
const SVM_GLOBAL_FLAG: u64 = 0;
const SVM_READ_ONLY: u64 = 1;
const SVM_HIVE_LOCAL: u64 = 2;
const SVM_MIGRATION_GRANULARITY: u64 = 3;
const SVM_PREFERRED_LOCATION: u64 = 4;
const SVM_PREFETCH_LOCATION: u64 = 5;
const SVM_READ_MOSTLY: u64 = 6;
const SVM_AGENT_ACCESSIBLE: u64 = 0x200;
const SVM_AGENT_ACCESSIBLE_IN_PLACE: u64 = 0x201;
const SVM_AGENT_NO_ACCESS: u64 = 0x202;
const SVM_ACCESS_QUERY: u64 = 0x203;
const SVM_FINE_GRAINED: u64 = 0;
const SVM_COARSE_GRAINED: u64 = 1;
const SVM_INDETERMINATE: u64 = 2;

/// The attribute list of `hsa_amd_svm_attributes_set`, decoded in ROCr's
/// order (`Runtime::SetSvmAttrib`): each attribute at most once, each agent
/// at most once, agents valid.
fn svm_changes(pairs: &[[u64; 2]]) -> Result<Vec<svm::Change>, Status> {
    let rt = rt()?;
    let mut seen_attrs = 0u64;
    let mut seen_agents = Vec::new();
    let (mut set, mut clear) = (0u32, 0u32);
    let mut changes = Vec::new();
    let mut flag = |on: bool, f: u32| {
        if on {
            set |= f
        } else {
            clear |= f
        }
    };
    for &[attr, value] in pairs {
        let once = |seen: &mut u64| {
            if attr < 64 && *seen & (1 << attr) != 0 {
                return Err(Status::IncompatibleArguments);
            }
            *seen |= 1 << attr;
            Ok(())
        };
        match attr {
            SVM_GLOBAL_FLAG => {
                once(&mut seen_attrs)?;
                match value {
                    SVM_FINE_GRAINED => flag(true, svm::FLAG_COHERENT),
                    SVM_COARSE_GRAINED => flag(false, svm::FLAG_COHERENT),
                    _ => return Err(Status::InvalidArgument),
                }
            }
            SVM_READ_ONLY => {
                once(&mut seen_attrs)?;
                flag(value != 0, svm::FLAG_GPU_RO);
            }
            SVM_HIVE_LOCAL => {
                once(&mut seen_attrs)?;
                flag(value != 0, svm::FLAG_HIVE_LOCAL);
            }
            SVM_MIGRATION_GRANULARITY => {
                once(&mut seen_attrs)?;
                // At most 1 GiB (2^18 pages), as ROCr clamps it.
                changes.push(svm::Change::Granularity(value.min(18) as u32));
            }
            SVM_PREFERRED_LOCATION => {
                once(&mut seen_attrs)?;
                let agent = if value == 0 {
                    None
                } else {
                    Some(state::agent_id(&rt, value)?)
                };
                changes.push(svm::Change::Preferred(agent));
            }
            SVM_READ_MOSTLY => {
                once(&mut seen_attrs)?;
                flag(value != 0, svm::FLAG_GPU_READ_MOSTLY);
            }
            SVM_AGENT_ACCESSIBLE | SVM_AGENT_ACCESSIBLE_IN_PLACE | SVM_AGENT_NO_ACCESS => {
                let agent = state::agent_id(&rt, value)?;
                if seen_agents.contains(&agent) {
                    return Err(Status::IncompatibleArguments);
                }
                seen_agents.push(agent);
                if rt.agent(agent)?.is_gpu() {
                    changes.push(svm::Change::GpuAccess(match attr {
                        SVM_AGENT_ACCESSIBLE => svm::Access::Mapped,
                        SVM_AGENT_ACCESSIBLE_IN_PLACE => svm::Access::InPlace,
                        _ => svm::Access::None,
                    }));
                } else {
                    flag(attr != SVM_AGENT_NO_ACCESS, svm::FLAG_HOST_ACCESS);
                }
            }
            _ => return Err(Status::InvalidArgument),
        }
    }
    // Any CPU granting host access wins, as in ROCr.
    if set & svm::FLAG_HOST_ACCESS != 0 {
        clear &= !svm::FLAG_HOST_ACCESS;
    }
    if clear != 0 {
        changes.push(svm::Change::ClearFlags(clear));
    }
    if set != 0 {
        changes.push(svm::Change::SetFlags(set));
    }
    Ok(changes)
}

/// Answers each attribute of `hsa_amd_svm_attributes_get` in place, as
/// ROCr's `Runtime::GetSvmAttrib` does.
fn svm_answer(pairs: &mut [[u64; 2]], s: &svm::Summary) -> Result<(), Status> {
    let rt = rt()?;
    let location = |l: Option<Option<inlay_runtime::agent::AgentId>>| {
        l.flatten().map_or(0, state::agent_handle)
    };
    // Validate everything before answering anything.
    for &[attr, value] in pairs.iter() {
        match attr {
            SVM_GLOBAL_FLAG
            | SVM_READ_ONLY
            | SVM_HIVE_LOCAL
            | SVM_READ_MOSTLY
            | SVM_MIGRATION_GRANULARITY
            | SVM_PREFERRED_LOCATION
            | SVM_PREFETCH_LOCATION => {}
            SVM_ACCESS_QUERY => {
                state::agent_id(&rt, value)?;
            }
            _ => return Err(Status::InvalidArgument),
        }
    }
    let flag = |f: u32| u64::from(s.flags_all & f != 0);
    for pair in pairs.iter_mut() {
        let [attr, value] = *pair;
        pair[1] = match attr {
            SVM_GLOBAL_FLAG => {
                if s.flags_all & svm::FLAG_COHERENT != 0 {
                    SVM_FINE_GRAINED
                } else if s.flags_any & svm::FLAG_COHERENT == 0 {
                    SVM_COARSE_GRAINED
                } else {
                    SVM_INDETERMINATE
                }
            }
            SVM_READ_ONLY => flag(svm::FLAG_GPU_RO),
            SVM_HIVE_LOCAL => flag(svm::FLAG_HIVE_LOCAL),
            SVM_READ_MOSTLY => flag(svm::FLAG_GPU_READ_MOSTLY),
            SVM_MIGRATION_GRANULARITY => u64::from(s.granularity),
            SVM_PREFERRED_LOCATION => location(s.preferred),
            SVM_PREFETCH_LOCATION => location(s.prefetched),
            _ => {
                // ACCESS_QUERY: the answer is the attribute, the agent stays.
                let agent = rt.agent(state::agent_id(&rt, value)?)?;
                pair[0] = if agent.is_gpu() {
                    match s.gpu {
                        svm::Access::Mapped => SVM_AGENT_ACCESSIBLE,
                        svm::Access::InPlace => SVM_AGENT_ACCESSIBLE_IN_PLACE,
                        svm::Access::None => SVM_AGENT_NO_ACCESS,
                    }
                } else if s.flags_all & svm::FLAG_HOST_ACCESS != 0 {
                    SVM_AGENT_ACCESSIBLE
                } else {
                    // ROCr leaves a CPU without host access as it was asked.
                    attr
                };
                value
            }
        };
    }
    Ok(())
}

/// The caller's `hsa_amd_svm_attribute_pair_t` array.
fn svm_pairs<'a>(list: *mut c_void, n: usize) -> Result<&'a mut [[u64; 2]], Status> {
    if n == 0 {
        return Ok(&mut []);
    }
    if list.is_null() || n > (1 << 16) {
        return Err(Status::InvalidArgument);
    }
    // SAFETY: non-null; the caller passes `n` attribute pairs (two u64 each).
    Ok(unsafe { std::slice::from_raw_parts_mut(list as *mut [u64; 2], n) })
}

export! {
    fn hsa_amd_svm_attributes_set(ptr: *mut c_void, size: usize, attrs: *mut c_void, n: usize) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            // ROCr checks nothing here; the kernel driver refuses an empty
            // or null range, which ROCr reports as HSA_STATUS_ERROR.
            if ptr.is_null() || size == 0 {
                return Err(Status::Error);
            }
            let changes = svm_changes(svm_pairs(attrs, n)?)?;
            rt.svm_set(ptr as u64, size as u64, &changes)
        })())
    }

    fn hsa_amd_svm_attributes_get(ptr: *mut c_void, size: usize, attrs: *mut c_void, n: usize) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            // ROCr asks the driver nothing for an empty list; a null or empty
            // range the driver refuses (HSA_STATUS_ERROR), as above.
            if n == 0 {
                return Ok(());
            }
            if ptr.is_null() || size == 0 {
                return Err(Status::Error);
            }
            let pairs = svm_pairs(attrs, n)?;
            let summary = rt.svm_get(ptr as u64, size as u64)?;
            svm_answer(pairs, &summary)
        })())
    }

    fn hsa_amd_svm_prefetch_async(ptr: *mut c_void, size: usize, agent: Handle, n: u32, deps: *const Handle, done: Handle) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            if ptr.is_null() || size == 0 {
                return Err(Status::InvalidArgument);
            }
            let agent = state::agent_id(&rt, agent)?;
            let completion = rt.signal(done)?;
            let deps = read_array(deps, n as usize)?
                .iter()
                .map(|&h| rt.signal(h))
                .collect::<Result<Vec<_>, _>>()?;
            rt.svm_prefetch(ptr as u64, size as u64, agent, deps, completion)
        })())
    }
}

export! {
    fn hsa_amd_memory_pool_allocate(pool: Handle, size: usize, flags: u32, out: *mut *mut c_void) -> HsaStatus {
        // The flags (PCIe, contiguous, executable) change nothing here; ROCr
        // ignores bits it does not know.
        let _ = flags;
        status(allocate(pool, size, out, Status::InvalidMemoryPool))
    }

    fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> HsaStatus {
        status(rt().and_then(|rt| rt.free(ptr as u64)))
    }

    fn hsa_memory_allocate(region: Handle, size: usize, out: *mut *mut c_void) -> HsaStatus {
        status(allocate(region, size, out, Status::InvalidRegion))
    }

    fn hsa_memory_free(ptr: *mut c_void) -> HsaStatus {
        status(rt().and_then(|rt| rt.free(ptr as u64)))
    }

    fn hsa_memory_copy(dst: *mut c_void, src: *const c_void, size: usize) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            if dst.is_null() || src.is_null() {
                return Err(Status::InvalidArgument);
            }
            rt.copy(dst as u64, src as u64, size as u64)
        })())
    }

    fn hsa_amd_memory_fill(ptr: *mut c_void, value: u32, count: usize) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            if ptr.is_null() || !(ptr as usize).is_multiple_of(4) {
                return Err(Status::InvalidArgument);
            }
            rt.fill(ptr as u64, value, count as u64)
        })())
    }

    fn hsa_amd_memory_async_copy(
        dst: *mut c_void,
        dst_agent: Handle,
        src: *const c_void,
        src_agent: Handle,
        size: usize,
        num_deps: u32,
        deps: *const Handle,
        completion: Handle,
    ) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            state::agent_id(&rt, dst_agent)?;
            state::agent_id(&rt, src_agent)?;
            if dst.is_null() || src.is_null() {
                return Err(Status::InvalidArgument);
            }
            let completion = rt.signal(completion)?;
            let deps = read_array(deps, num_deps as usize)?
                .iter()
                .map(|&h| rt.signal(h))
                .collect::<Result<Vec<_>, _>>()?;
            rt.async_copy(dst as u64, src as u64, size as u64, deps, completion)
        })())
    }

    fn hsa_amd_memory_async_copy_rect(
        dst: *const [u64; 3],
        dst_offset: *const [u32; 3],
        src: *const [u64; 3],
        src_offset: *const [u32; 3],
        range: *const [u32; 3],
        agent: Handle,
        dir: u32,
        n: u32,
        deps: *const Handle,
        completion: Handle,
    ) -> HsaStatus {
        // Checked in the order of ROCr's hsa_amd_memory_async_copy_rect.
        status((|| {
            let rt = rt()?;
            if dst.is_null() || src.is_null() || dst_offset.is_null() || src_offset.is_null() || range.is_null() {
                return Err(Status::InvalidArgument);
            }
            if (n == 0) != deps.is_null() {
                return Err(Status::InvalidArgument);
            }
            // hsaHostToHost is not a direction this copy takes; others above 3 do not exist.
            if dir == 0 || dir > 3 {
                return Err(Status::InvalidArgument);
            }
            if !rt.agent(state::agent_id(&rt, agent)?)?.is_gpu() {
                return Err(Status::InvalidAgent);
            }
            let deps = read_array(deps, n as usize)?
                .iter()
                .map(|&h| rt.signal(h))
                .collect::<Result<Vec<_>, _>>()?;
            let completion = rt.signal(completion)?;
            // SAFETY: non-null; hsa_pitched_ptr_t is {void*, size_t, size_t}
            // and hsa_dim3_t three uint32_t, as the caller passes them.
            let (dst, dst_offset, src, src_offset, range) = unsafe {
                (dst.read_unaligned(), dst_offset.read_unaligned(), src.read_unaligned(), src_offset.read_unaligned(), range.read_unaligned())
            };
            if range.contains(&0) {
                // ROCr returns at once (and leaves the completion signal alone).
                return Ok(());
            }
            let pitched = |p: [u64; 3]| inlay_runtime::Pitched { base: p[0], pitch: p[1], slice: p[2] };
            rt.async_copy_rect(pitched(dst), dst_offset, pitched(src), src_offset, range, deps, completion)
        })())
    }

    fn hsa_amd_agents_allow_access(n: u32, agents: *const Handle, flags: *const u32, ptr: *const c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            if !flags.is_null() || ptr.is_null() || n == 0 {
                return Err(Status::InvalidArgument);
            }
            let ids = read_array(agents, n as usize)?
                .iter()
                .map(|&h| state::agent_id(&rt, h))
                .collect::<Result<Vec<_>, _>>()?;
            rt.allow_access(&ids, ptr as u64)
        })())
    }

    fn hsa_amd_pointer_info(
        ptr: *const c_void,
        info: *mut c_void,
        alloc: Option<extern "C" fn(usize) -> *mut c_void>,
        num_accessible: *mut u32,
        accessible: *mut *mut Handle,
    ) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            if ptr.is_null() || info.is_null() {
                return Err(Status::InvalidArgument);
            }
            // SAFETY: non-null; the caller set the leading size field.
            let caller_size = unsafe { (info as *const u32).read_unaligned() };
            // ROCr: only a size of 0 is refused; a short one gets what fits.
            if caller_size == 0 {
                return Err(Status::InvalidArgument);
            }
            let p = rt.pointer_info(ptr as u64);
            let owner = p.owner.map_or(0, state::agent_handle);
            let fields: [(usize, &[u8]); 7] = [
                (4, &(p.kind as u32).to_le_bytes()),
                (8, &p.agent_base.to_le_bytes()),
                (16, &p.host_base.to_le_bytes()),
                (24, &p.size.to_le_bytes()),
                (32, &0u64.to_le_bytes()),
                (40, &owner.to_le_bytes()),
                (48, &p.global_flags.to_le_bytes()),
            ];
            let written = write_pointer_info(info as *mut u8, caller_size, &fields);
            if caller_size >= 4 {
                put(info, written.min(caller_size))?;
            }
            if !num_accessible.is_null() {
                put(num_accessible as *mut c_void, p.accessible.len() as u32)?;
            }
            if !accessible.is_null() {
                let alloc = alloc.ok_or(Status::InvalidArgument)?;
                let bytes = p.accessible.len().max(1) * std::mem::size_of::<Handle>();
                let out = alloc(bytes) as *mut Handle;
                if out.is_null() {
                    return Err(Status::OutOfResources);
                }
                for (i, a) in p.accessible.iter().enumerate() {
                    // SAFETY: `out` has room for `accessible.len()` handles (allocated above).
                    unsafe { out.add(i).write_unaligned(state::agent_handle(*a)) };
                }
                put(num_accessible as *mut c_void, p.accessible.len() as u32)?;
                put(accessible as *mut c_void, out)?;
            }
            Ok(())
        })())
    }

    fn hsa_memory_register(ptr: *mut c_void, size: usize) -> HsaStatus {
        // A check only, ROCr's (a size of 0 for a non-null address): on a
        // discrete GPU registering does not make pageable memory reachable
        // by the GPU (locking does).
        status(rt().and_then(|_| if !ptr.is_null() && size == 0 { Err(Status::InvalidArgument) } else { Ok(()) }))
    }

    fn hsa_memory_deregister(_ptr: *mut c_void, _size: usize) -> HsaStatus {
        // ROCr: always success.
        status(rt().map(|_| ()))
    }

    fn hsa_memory_assign_agent(ptr: *mut c_void, agent: Handle, access: u32) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            state::agent_id(&rt, agent)?;
            if ptr.is_null() || !(1..=3).contains(&access) {
                return Err(Status::InvalidArgument);
            }
            Ok(())
        })())
    }

    fn hsa_amd_memory_lock(host: *mut c_void, size: usize, agents: *const Handle, n: i32, agent_ptr: *mut *mut c_void) -> HsaStatus {
        // ROCr locks through the coarse-grained system region.
        status(lock_host(host, size, agents, n, agent_ptr, None))
    }

    fn hsa_amd_memory_lock_to_pool(host: *mut c_void, size: usize, agents: *const Handle, n: i32, pool: Handle, flags: u32, agent_ptr: *mut *mut c_void) -> HsaStatus {
        status((|| {
            if flags != 0 {
                rt()?;
                return Err(Status::InvalidArgument);
            }
            lock_host(host, size, agents, n, agent_ptr, Some(pool))
        })())
    }

    fn hsa_amd_memory_unlock(host: *mut c_void) -> HsaStatus {
        // ROCr (MemoryRegion::Unlock) answers success whatever the pointer;
        // a locked range loses its agent address.
        status(rt().map(|rt| {
            let _ = rt.unlock_host(host as u64);
        }))
    }

    fn hsa_amd_memory_pool_can_migrate(src: Handle, dst: Handle, result: *mut bool) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            state::pool_id(&rt, src, Status::InvalidMemoryPool)?;
            state::pool_id(&rt, dst, Status::InvalidMemoryPool)?;
            put(result as *mut c_void, false)
        })())
    }
}
