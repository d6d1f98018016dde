//! Allocation from pools and regions, copies, fills, access and pointer info.

use crate::abi::*;
use crate::export;
use crate::state::{self, rt};
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
            let found = rt.pointer_info(ptr as u64);
            let (ty, base, size, owner, flags, list) = match &found {
                // HSA_EXT_POINTER_TYPE_HSA
                Some(p) => (1u32, p.base, p.size as usize, state::agent_handle(p.owner), p.global_flags, p.accessible.clone()),
                None => (0u32, 0, 0, 0, 0, Vec::new()),
            };
            let fields: [(usize, &[u8]); 7] = [
                (4, &ty.to_le_bytes()),
                (8, &base.to_le_bytes()),
                (16, &base.to_le_bytes()),
                (24, &size.to_le_bytes()),
                (32, &0u64.to_le_bytes()),
                (40, &owner.to_le_bytes()),
                (48, &flags.to_le_bytes()),
            ];
            let written = write_pointer_info(info as *mut u8, caller_size, &fields);
            if caller_size >= 4 {
                put(info, written.min(caller_size))?;
            }
            if !num_accessible.is_null() {
                put(num_accessible as *mut c_void, list.len() as u32)?;
            }
            if !accessible.is_null() {
                let alloc = alloc.ok_or(Status::InvalidArgument)?;
                let bytes = list.len().max(1) * std::mem::size_of::<Handle>();
                let out = alloc(bytes) as *mut Handle;
                if out.is_null() {
                    return Err(Status::OutOfResources);
                }
                for (i, a) in list.iter().enumerate() {
                    // SAFETY: `out` has room for `list.len()` handles (allocated above).
                    unsafe { out.add(i).write_unaligned(state::agent_handle(*a)) };
                }
                put(accessible as *mut c_void, out)?;
            }
            Ok(())
        })())
    }

    fn hsa_memory_register(ptr: *mut c_void, size: usize) -> HsaStatus {
        // All host memory is visible to the virtual GPU: registering is a
        // check only, ROCr's (a size of 0 for a non-null address).
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
        status((|| {
            let rt = rt()?;
            if host.is_null() || size == 0 || agent_ptr.is_null() || n < 0 {
                return Err(Status::InvalidArgument);
            }
            for &h in read_array(agents, n as usize)? {
                state::agent_id(&rt, h)?;
            }
            // One address space: the agent sees host memory at the same address.
            put(agent_ptr as *mut c_void, host)
        })())
    }

    fn hsa_amd_memory_lock_to_pool(host: *mut c_void, size: usize, agents: *const Handle, n: i32, pool: Handle, flags: u32, agent_ptr: *mut *mut c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            state::pool_id(&rt, pool, Status::InvalidMemoryPool)?;
            if flags != 0 || host.is_null() || size == 0 || agent_ptr.is_null() || n < 0 {
                return Err(Status::InvalidArgument);
            }
            for &h in read_array(agents, n as usize)? {
                state::agent_id(&rt, h)?;
            }
            put(agent_ptr as *mut c_void, host)
        })())
    }

    fn hsa_amd_memory_unlock(_host: *mut c_void) -> HsaStatus {
        // ROCr (MemoryRegion::Unlock) answers success whatever the pointer.
        status(rt().map(|_| ()))
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
