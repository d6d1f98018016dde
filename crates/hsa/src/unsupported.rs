//! Entry points for features not there yet (IPC, interop, migration): they validate what they can and answer with the
//! status a caller can act on, never with success. Also the small ones:
//! coherency and profiling timestamps.

use crate::abi::*;
use crate::export;
use crate::state::{self, rt};
use inlay_runtime::Status;
use std::ffi::c_void;

/// The runtime status for a code a callback returned (unknown: generic error).
pub fn status_from_code(code: u32) -> Status {
    const ALL: [Status; 40] = [
        Status::InfoBreak,
        Status::Error,
        Status::InvalidArgument,
        Status::InvalidQueueCreation,
        Status::InvalidAllocation,
        Status::InvalidAgent,
        Status::InvalidRegion,
        Status::InvalidSignal,
        Status::InvalidQueue,
        Status::OutOfResources,
        Status::InvalidPacketFormat,
        Status::ResourceFree,
        Status::NotInitialized,
        Status::RefcountOverflow,
        Status::IncompatibleArguments,
        Status::InvalidIndex,
        Status::InvalidIsa,
        Status::InvalidCodeObject,
        Status::InvalidExecutable,
        Status::FrozenExecutable,
        Status::InvalidSymbolName,
        Status::VariableAlreadyDefined,
        Status::VariableUndefined,
        Status::Exception,
        Status::InvalidIsaName,
        Status::InvalidCodeSymbol,
        Status::InvalidExecutableSymbol,
        Status::InvalidFile,
        Status::InvalidCodeObjectReader,
        Status::InvalidCache,
        Status::InvalidWavefront,
        Status::InvalidSignalGroup,
        Status::InvalidRuntimeState,
        Status::Fatal,
        Status::InvalidMemoryPool,
        Status::MemoryApertureViolation,
        Status::IllegalInstruction,
        Status::MemoryFault,
        Status::CuMaskReduced,
        Status::Error,
    ];
    ALL.into_iter()
        .find(|s| s.code() == code)
        .unwrap_or(Status::Error)
}

fn refuse(out: *const c_void, s: Status) -> HsaStatus {
    status(rt().and_then(|_| {
        if out.is_null() {
            Err(Status::InvalidArgument)
        } else {
            Err(s)
        }
    }))
}

export! {
    // IPC and graphics interop: no other process or graphics API to share with.
    fn hsa_amd_ipc_memory_create(ptr: *mut c_void, _len: usize, handle: *mut c_void) -> HsaStatus {
        if ptr.is_null() { return status(rt().and(Err(Status::InvalidArgument))); }
        refuse(handle, Status::InvalidArgument)
    }
    fn hsa_amd_ipc_memory_attach(_handle: *const c_void, _len: usize, _n: u32, _agents: *const Handle, ptr: *mut *mut c_void) -> HsaStatus {
        refuse(ptr as *const c_void, Status::InvalidArgument)
    }
    fn hsa_amd_ipc_memory_detach(_ptr: *mut c_void) -> HsaStatus {
        status(rt().and(Err(Status::InvalidArgument)))
    }
    fn hsa_amd_interop_map_buffer(_n: u32, _agents: *const Handle, _fd: i32, _flags: u32, _size: *mut usize, ptr: *mut *mut c_void, _md_size: *mut usize, _md: *mut *const c_void) -> HsaStatus {
        refuse(ptr as *const c_void, Status::InvalidArgument)
    }
    fn hsa_amd_interop_unmap_buffer(_ptr: *mut c_void) -> HsaStatus {
        // ROCr: always success (nothing was mapped, so nothing to unmap).
        status(rt().map(|_| ()))
    }

    // Rectangular copies, migration.
    fn hsa_amd_memory_migrate(_ptr: *const c_void, _pool: Handle, _flags: u32) -> HsaStatus {
        status(rt().and(Err(Status::InvalidArgument)))
    }

    // Coherency and profiling.
    fn hsa_amd_coherency_get_type(agent: Handle, ty: *mut u32) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            let a = rt.agent(state::agent_id(&rt, agent)?)?;
            if !a.is_gpu() { return Err(Status::InvalidAgent); }
            put(ty as *mut c_void, 0u32) // coherent
        })())
    }
    fn hsa_amd_coherency_set_type(agent: Handle, ty: u32) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            let a = rt.agent(state::agent_id(&rt, agent)?)?;
            if !a.is_gpu() { return Err(Status::InvalidAgent); }
            if ty > 1 { return Err(Status::InvalidArgument); }
            Ok(())
        })())
    }
    fn hsa_amd_profiling_set_profiler_enabled(q: *mut c_void, enable: i32) -> HsaStatus {
        status(rt().and_then(|rt| rt.queue(q as u64)).map(|q| q.set_profiling(enable != 0)))
    }
    fn hsa_amd_profiling_async_copy_enable(enable: bool) -> HsaStatus {
        status(rt().map(|rt| rt.profile_copies(enable)))
    }
    fn hsa_amd_profiling_get_dispatch_time(agent: Handle, signal: Handle, time: *mut c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            state::agent_id(&rt, agent)?;
            // Stamped by the packet processor when the queue profiles; the
            // GPU clock is the system clock, so no conversion.
            let (start, end) = rt.signal(signal)?.times();
            put(time, [start, end])
        })())
    }
    fn hsa_amd_profiling_get_async_copy_time(signal: Handle, time: *mut c_void) -> HsaStatus {
        status((|| {
            let (start, end) = rt()?.signal(signal)?.times();
            put(time, [start, end])
        })())
    }
    fn hsa_amd_profiling_convert_tick_to_system_domain(agent: Handle, tick: u64, out: *mut u64) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            state::agent_id(&rt, agent)?;
            put(out as *mut c_void, tick) // both clocks count nanoseconds
        })())
    }
}
