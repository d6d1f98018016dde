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

/// The image entry points check what ROCr's image library checks before it
/// does any work (hsa_ext_image.cpp: a null agent handle, then null pointers
/// and handles), then answer that the agent has no image support.
fn no_images(agent: Handle, args_ok: bool) -> HsaStatus {
    status((|| {
        let rt = rt()?;
        if agent == 0 {
            return Err(Status::InvalidAgent);
        }
        if !args_ok {
            return Err(Status::InvalidArgument);
        }
        state::agent_id(&rt, agent)?;
        Err(Status::InvalidAgent) // the virtual GPU has no image support
    })())
}

export! {
    // Images and samplers.
    fn hsa_ext_image_create(agent: Handle, desc: *const c_void, data: *const c_void, _perm: u32, image: *mut Handle) -> HsaStatus {
        no_images(agent, !desc.is_null() && !data.is_null() && !image.is_null())
    }
    fn hsa_ext_image_create_with_layout(agent: Handle, desc: *const c_void, data: *const c_void, _perm: u32, layout: u32, _rp: usize, _sp: usize, image: *mut Handle) -> HsaStatus {
        // HSA_EXT_IMAGE_DATA_LAYOUT_LINEAR = 1
        no_images(agent, !desc.is_null() && !data.is_null() && !image.is_null() && layout == 1)
    }
    fn hsa_ext_image_destroy(agent: Handle, _image: Handle) -> HsaStatus { no_images(agent, true) }
    fn hsa_ext_image_data_get_info(agent: Handle, desc: *const c_void, perm: u32, info: *mut c_void) -> HsaStatus {
        no_images(agent, !desc.is_null() && !info.is_null() && (1..=3).contains(&perm))
    }
    fn hsa_ext_image_export(agent: Handle, image: Handle, dst: *mut c_void, _rp: usize, _sp: usize, region: *const c_void) -> HsaStatus {
        no_images(agent, !dst.is_null() && image != 0 && !region.is_null())
    }
    fn hsa_ext_image_import(agent: Handle, src: *const c_void, _rp: usize, _sp: usize, image: Handle, region: *const c_void) -> HsaStatus {
        no_images(agent, !src.is_null() && image != 0 && !region.is_null())
    }
    fn hsa_ext_sampler_create(agent: Handle, desc: *const c_void, sampler: *mut Handle) -> HsaStatus {
        no_images(agent, !desc.is_null() && !sampler.is_null())
    }
    fn hsa_ext_sampler_destroy(agent: Handle, _sampler: Handle) -> HsaStatus { no_images(agent, true) }
    fn hsa_amd_image_create(agent: Handle, desc: *const c_void, _layout: *const c_void, data: *const c_void, _perm: u32, image: *mut Handle) -> HsaStatus {
        no_images(agent, !desc.is_null() && !data.is_null() && !image.is_null())
    }

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

    // SVM attributes, rectangular copies, migration.
    fn hsa_amd_svm_attributes_set(_ptr: *mut c_void, _size: usize, _attrs: *mut c_void, _n: usize) -> HsaStatus {
        // ROCr hands the range to the kernel driver and answers
        // HSA_STATUS_ERROR when it refuses; the virtual GPU has no SVM ranges.
        status(rt().and(Err(Status::Error)))
    }
    fn hsa_amd_svm_attributes_get(_ptr: *mut c_void, _size: usize, _attrs: *mut c_void, n: usize) -> HsaStatus {
        // ROCr asks the driver nothing for an empty list; otherwise as above.
        status(rt().and(if n == 0 { Ok(()) } else { Err(Status::Error) }))
    }
    fn hsa_amd_svm_prefetch_async(_ptr: *mut c_void, _size: usize, _agent: Handle, _n: u32, _deps: *const Handle, _done: Handle) -> HsaStatus {
        status(rt().and(Err(Status::InvalidArgument)))
    }
    fn hsa_amd_memory_async_copy_rect(dst: *const c_void, dst_off: *const c_void, src: *const c_void, src_off: *const c_void, range: *const [u32; 3], agent: Handle, dir: u32, n: u32, deps: *const Handle, done: Handle) -> HsaStatus {
        // ROCr's checks, in its order; a copy with an empty range is done at
        // once (without touching the signal). Non-empty ones are not offered.
        status((|| {
            let rt = rt()?;
            if dst.is_null() || src.is_null() || dst_off.is_null() || src_off.is_null() || range.is_null() {
                return Err(Status::InvalidArgument);
            }
            if (n == 0) != deps.is_null() || dir == 0 {
                return Err(Status::InvalidArgument); // hsaHostToHost = 0
            }
            if !rt.agent(state::agent_id(&rt, agent)?)?.is_gpu() {
                return Err(Status::InvalidAgent);
            }
            for &h in read_array(deps, n as usize)? {
                rt.signal(h)?;
            }
            rt.signal(done)?;
            // SAFETY: non-null; a hsa_dim3_t (three uint32_t) by contract.
            let r = unsafe { range.read_unaligned() };
            if r.contains(&0) { Ok(()) } else { Err(Status::Error) }
        })())
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
