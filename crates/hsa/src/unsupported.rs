//! Entry points for features not there yet (images, IPC, interop, SVM, profiling): they validate what they can and
//! answer with the status a caller can act on, never with success.

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

fn no_images(agent: Handle) -> HsaStatus {
    status((|| {
        let rt = rt()?;
        state::agent_id(&rt, agent)?;
        Err(Status::InvalidAgent) // the virtual GPU has no image support
    })())
}

export! {
    // Images and samplers.
    fn hsa_ext_image_create(agent: Handle, _desc: *const c_void, _data: *const c_void, _perm: u32, _image: *mut Handle) -> HsaStatus { no_images(agent) }
    fn hsa_ext_image_create_with_layout(agent: Handle, _desc: *const c_void, _data: *const c_void, _perm: u32, _layout: u32, _rp: usize, _sp: usize, _image: *mut Handle) -> HsaStatus { no_images(agent) }
    fn hsa_ext_image_destroy(agent: Handle, _image: Handle) -> HsaStatus { no_images(agent) }
    fn hsa_ext_image_data_get_info(agent: Handle, _desc: *const c_void, _perm: u32, _info: *mut c_void) -> HsaStatus { no_images(agent) }
    fn hsa_ext_image_export(agent: Handle, _image: Handle, _dst: *mut c_void, _rp: usize, _sp: usize, _region: *const c_void) -> HsaStatus { no_images(agent) }
    fn hsa_ext_image_import(agent: Handle, _src: *const c_void, _rp: usize, _sp: usize, _image: Handle, _region: *const c_void) -> HsaStatus { no_images(agent) }
    fn hsa_ext_sampler_create(agent: Handle, _desc: *const c_void, _sampler: *mut Handle) -> HsaStatus { no_images(agent) }
    fn hsa_ext_sampler_destroy(agent: Handle, _sampler: Handle) -> HsaStatus { no_images(agent) }
    fn hsa_amd_image_create(agent: Handle, _desc: *const c_void, _layout: *const c_void, _data: *const c_void, _perm: u32, _image: *mut Handle) -> HsaStatus { no_images(agent) }

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
        status(rt().and(Err(Status::InvalidArgument)))
    }

    // SVM attributes, rectangular copies, migration.
    fn hsa_amd_svm_attributes_set(_ptr: *mut c_void, _size: usize, _attrs: *mut c_void, _n: usize) -> HsaStatus {
        status(rt().and(Err(Status::InvalidArgument)))
    }
    fn hsa_amd_svm_attributes_get(_ptr: *mut c_void, _size: usize, _attrs: *mut c_void, _n: usize) -> HsaStatus {
        status(rt().and(Err(Status::InvalidArgument)))
    }
    fn hsa_amd_svm_prefetch_async(_ptr: *mut c_void, _size: usize, _agent: Handle, _n: u32, _deps: *const Handle, _done: Handle) -> HsaStatus {
        status(rt().and(Err(Status::InvalidArgument)))
    }
    fn hsa_amd_memory_async_copy_rect(_dst: *const c_void, _do: *const c_void, _src: *const c_void, _so: *const c_void, _range: *const c_void, _agent: Handle, _dir: u32, _n: u32, _deps: *const Handle, _done: Handle) -> HsaStatus {
        status(rt().and(Err(Status::InvalidArgument)))
    }
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
    fn hsa_amd_profiling_set_profiler_enabled(q: *mut c_void, _enable: i32) -> HsaStatus {
        status(rt().and_then(|rt| rt.queue(q as u64)).map(|_| ()))
    }
    fn hsa_amd_profiling_async_copy_enable(_enable: bool) -> HsaStatus {
        status(rt().map(|_| ()))
    }
    fn hsa_amd_profiling_get_dispatch_time(agent: Handle, signal: Handle, time: *mut c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            state::agent_id(&rt, agent)?;
            rt.signal(signal)?;
            // No timing is recorded yet: report an empty interval.
            put(time, [0u64; 2])
        })())
    }
    fn hsa_amd_profiling_get_async_copy_time(signal: Handle, time: *mut c_void) -> HsaStatus {
        status((|| {
            rt()?.signal(signal)?;
            put(time, [0u64; 2])
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
