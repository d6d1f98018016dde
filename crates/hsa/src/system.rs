//! Init and shutdown, status strings, system info, extensions and the AMD
//! loader extension table.

use crate::abi::{
    put, put_str, status, Handle, HsaStatus, EXT_AMD_LOADER, EXT_FINALIZER, EXT_IMAGES,
};
use crate::executables;
use crate::export;
use crate::state::{self, rt};
use inlay_runtime::Status;
use std::ffi::{c_char, c_void};

/// Text for every status of hsa.h, hsa_ext_amd.h, hsa_ext_finalize.h and
/// hsa_ext_image.h (NUL-terminated), starting with the status name.
fn status_text(s: u32) -> Option<&'static str> {
    Some(match s {
        0x0 => "HSA_STATUS_SUCCESS: The function has been executed successfully.\0",
        0x1 => "HSA_STATUS_INFO_BREAK: A traversal over a list of elements has been interrupted by the application.\0",
        0x1000 => "HSA_STATUS_ERROR: A generic error has occurred.\0",
        0x1001 => "HSA_STATUS_ERROR_INVALID_ARGUMENT: One of the actual arguments does not meet a precondition.\0",
        0x1002 => "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: The requested queue cannot be created with these parameters.\0",
        0x1003 => "HSA_STATUS_ERROR_INVALID_ALLOCATION: The allocation request is not valid for this pool or region.\0",
        0x1004 => "HSA_STATUS_ERROR_INVALID_AGENT: The agent is invalid.\0",
        0x1005 => "HSA_STATUS_ERROR_INVALID_REGION: The memory region is invalid.\0",
        0x1006 => "HSA_STATUS_ERROR_INVALID_SIGNAL: The signal is invalid.\0",
        0x1007 => "HSA_STATUS_ERROR_INVALID_QUEUE: The queue is invalid.\0",
        0x1008 => "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime could not obtain the memory, threads or other resources it needs.\0",
        0x1009 => "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: An AQL packet is malformed.\0",
        0x100A => "HSA_STATUS_ERROR_RESOURCE_FREE: A resource is still in use and cannot be released.\0",
        0x100B => "HSA_STATUS_ERROR_NOT_INITIALIZED: The runtime has not been initialized with hsa_init.\0",
        0x100C => "HSA_STATUS_ERROR_REFCOUNT_OVERFLOW: The runtime reference count would overflow.\0",
        0x100D => "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: The arguments are valid alone but not together.\0",
        0x100E => "HSA_STATUS_ERROR_INVALID_INDEX: The index is invalid.\0",
        0x100F => "HSA_STATUS_ERROR_INVALID_ISA: The instruction set architecture is invalid.\0",
        0x1017 => "HSA_STATUS_ERROR_INVALID_ISA_NAME: The instruction set architecture name is invalid.\0",
        0x1010 => "HSA_STATUS_ERROR_INVALID_CODE_OBJECT: The code object is invalid.\0",
        0x1011 => "HSA_STATUS_ERROR_INVALID_EXECUTABLE: The executable is invalid.\0",
        0x1012 => "HSA_STATUS_ERROR_FROZEN_EXECUTABLE: The executable is frozen.\0",
        0x1013 => "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: No symbol has that name.\0",
        0x1014 => "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED: The variable is already defined.\0",
        0x1015 => "HSA_STATUS_ERROR_VARIABLE_UNDEFINED: The variable is undefined.\0",
        0x1016 => "HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation raised an exception.\0",
        0x1018 => "HSA_STATUS_ERROR_INVALID_CODE_SYMBOL: The code object symbol is invalid.\0",
        0x1019 => "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL: The executable symbol is invalid.\0",
        0x1020 => "HSA_STATUS_ERROR_INVALID_FILE: The file descriptor is invalid.\0",
        0x1021 => "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER: The code object reader is invalid.\0",
        0x1022 => "HSA_STATUS_ERROR_INVALID_CACHE: The cache is invalid.\0",
        0x1023 => "HSA_STATUS_ERROR_INVALID_WAVEFRONT: The wavefront is invalid.\0",
        0x1024 => "HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP: The signal group is invalid.\0",
        0x1025 => "HSA_STATUS_ERROR_INVALID_RUNTIME_STATE: The runtime is not in a state that allows this operation.\0",
        0x1026 => "HSA_STATUS_ERROR_FATAL: The queue received an error that may require process termination.\0",
        40 => "HSA_STATUS_ERROR_INVALID_MEMORY_POOL: The memory pool is invalid.\0",
        41 => "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: An agent accessed memory beyond the aperture it may use.\0",
        42 => "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: An agent tried to execute an illegal instruction.\0",
        43 => "HSA_STATUS_ERROR_MEMORY_FAULT: An agent accessed memory it may not access.\0",
        44 => "HSA_STATUS_CU_MASK_REDUCED: The CU mask was applied, reduced to the compute units present.\0",
        0x2000 => "HSA_EXT_STATUS_ERROR_INVALID_PROGRAM: The HSAIL program is invalid.\0",
        0x2001 => "HSA_EXT_STATUS_ERROR_INVALID_MODULE: The HSAIL module is invalid.\0",
        0x2002 => "HSA_EXT_STATUS_ERROR_INCOMPATIBLE_MODULE: The module does not fit the program's profile or machine model.\0",
        0x2003 => "HSA_EXT_STATUS_ERROR_MODULE_ALREADY_INCLUDED: The module is already part of the program.\0",
        0x2004 => "HSA_EXT_STATUS_ERROR_SYMBOL_MISMATCH: A symbol is declared differently in two modules.\0",
        0x2005 => "HSA_EXT_STATUS_ERROR_FINALIZATION_FAILED: Finalization failed.\0",
        0x2006 => "HSA_EXT_STATUS_ERROR_DIRECTIVE_MISMATCH: A control directive disagrees with the finalizer's.\0",
        0x3000 => "HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED: The image format is not supported.\0",
        0x3001 => "HSA_EXT_STATUS_ERROR_IMAGE_SIZE_UNSUPPORTED: The image size is not supported.\0",
        0x3002 => "HSA_EXT_STATUS_ERROR_IMAGE_PITCH_UNSUPPORTED: The image pitch is not supported.\0",
        0x3003 => "HSA_EXT_STATUS_ERROR_SAMPLER_DESCRIPTOR_UNSUPPORTED: The sampler descriptor is not supported.\0",
        _ => return None,
    })
}

fn extension_supported(ext: u16, major: u16) -> bool {
    (ext == EXT_AMD_LOADER || ext == EXT_IMAGES) && major == 1
}

// ---- AMD loader extension table (hsa_ven_amd_loader_1_03_pfn_t) -----------

extern "C" fn loader_query_host_address(
    device: *const c_void,
    host: *mut *const c_void,
) -> HsaStatus {
    status((|| {
        let rt = rt()?;
        let device = device as u64;
        let known = executables::query_host_address(device)
            .or_else(|| rt.memory().find(device).map(|_| device));
        // One address space: a device address is its own host address.
        match known {
            Some(h) if !host.is_null() => put(host as *mut c_void, h),
            _ => Err(Status::InvalidArgument),
        }
    })())
}

extern "C" fn loader_query_segment_descriptors(descs: *mut c_void, count: *mut usize) -> HsaStatus {
    status((|| {
        rt()?;
        if count.is_null() {
            return Err(Status::InvalidArgument);
        }
        let all = executables::segment_descriptors();
        if descs.is_null() {
            return put(count as *mut c_void, all.len());
        }
        // SAFETY: non-null; the caller's count.
        if unsafe { count.read_unaligned() } != all.len() {
            return Err(Status::InvalidArgument);
        }
        for (i, d) in all.iter().enumerate() {
            // SAFETY: the caller gave room for exactly `all.len()` descriptors.
            let slot = unsafe { (descs as *mut executables::SegmentDescriptor).add(i) };
            put(slot as *mut c_void, *d)?;
        }
        Ok(())
    })())
}

extern "C" fn loader_query_executable(device: *const c_void, exec: *mut Handle) -> HsaStatus {
    status((|| {
        rt()?;
        let e = executables::query_executable(device as u64).ok_or(Status::InvalidArgument)?;
        put(exec as *mut c_void, e)
    })())
}

type LcoCallback = Option<extern "C" fn(Handle, Handle, *mut c_void) -> HsaStatus>;

extern "C" fn loader_iterate_loaded_code_objects(
    exec: Handle,
    cb: LcoCallback,
    data: *mut c_void,
) -> HsaStatus {
    status((|| {
        rt()?;
        let cb = cb.ok_or(Status::InvalidArgument)?;
        // Collected first: the callback may call back into the loader.
        for lco in executables::loaded_code_objects(exec)? {
            let st = cb(exec, lco, data);
            if st != crate::abi::SUCCESS {
                return Err(crate::unsupported::status_from_code(st));
            }
        }
        Ok(())
    })())
}

extern "C" fn loader_loaded_code_object_get_info(
    lco: Handle,
    attr: u32,
    value: *mut c_void,
) -> HsaStatus {
    status(rt().and_then(|_| executables::loaded_code_object_info(lco, attr, value)))
}

extern "C" fn loader_reader_from_file(
    file: i32,
    offset: i64,
    size: usize,
    reader: *mut Handle,
) -> HsaStatus {
    status(rt().and_then(|_| executables::reader_from_file(file, offset, size, reader)))
}

type ExecCallback = Option<extern "C" fn(Handle, *mut c_void) -> HsaStatus>;

extern "C" fn loader_iterate_executables(cb: ExecCallback, data: *mut c_void) -> HsaStatus {
    status((|| {
        rt()?;
        let cb = cb.ok_or(Status::InvalidArgument)?;
        for e in executables::executables() {
            let st = cb(e, data);
            if st != crate::abi::SUCCESS {
                return Err(crate::unsupported::status_from_code(st));
            }
        }
        Ok(())
    })())
}

fn loader_table() -> [*const c_void; 7] {
    [
        loader_query_host_address as *const c_void,
        loader_query_segment_descriptors as *const c_void,
        loader_query_executable as *const c_void,
        loader_iterate_loaded_code_objects as *const c_void,
        loader_loaded_code_object_get_info as *const c_void,
        loader_reader_from_file as *const c_void,
        loader_iterate_executables as *const c_void,
    ]
}

fn fill_table(ext: u16, major: u16, len: usize, table: *mut c_void) -> Result<(), Status> {
    rt()?;
    if table.is_null() || len == 0 {
        return Err(Status::InvalidArgument);
    }
    if !extension_supported(ext, major) {
        return Err(Status::InvalidArgument);
    }
    let images;
    let loader;
    let entries: &[*const c_void] = if ext == EXT_IMAGES {
        images = crate::images::table();
        &images
    } else {
        loader = loader_table();
        &loader
    };
    let n = (len / std::mem::size_of::<*const c_void>()).min(entries.len());
    // SAFETY: the caller gave `len` writable bytes; we write whole pointers within them.
    unsafe { std::ptr::copy_nonoverlapping(entries.as_ptr(), table as *mut *const c_void, n) };
    Ok(())
}

export! {
    fn hsa_init() -> HsaStatus {
        status(state::init())
    }

    fn hsa_shut_down() -> HsaStatus {
        status(state::shut_down())
    }

    fn hsa_status_string(st: u32, out: *mut *const c_char) -> HsaStatus {
        // Answers before hsa_init too: callers use it to report init failures.
        let Some(text) = status_text(st) else { return Status::InvalidArgument.code() };
        status(put(out as *mut c_void, text.as_ptr() as *const c_char))
    }

    fn hsa_system_get_info(attr: u32, value: *mut c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            match attr {
                0 => put(value, 1u16),                    // VERSION_MAJOR
                1 => put(value, 1u16),                    // VERSION_MINOR
                2 => put(value, rt.timestamp()),          // TIMESTAMP
                3 => put(value, 1_000_000_000u64),        // TIMESTAMP_FREQUENCY
                4 => put(value, u64::MAX),                // SIGNAL_MAX_WAIT
                5 => put(value, 0u32),                    // ENDIANNESS: little
                6 => put(value, 1u32),                    // MACHINE_MODEL: large
                7 => {
                    // EXTENSIONS: bit i of a 128-byte mask says extension i exists.
                    let mut mask = [0u8; 128];
                    mask[usize::from(EXT_AMD_LOADER / 8)] |= 1 << (EXT_AMD_LOADER % 8);
                    mask[usize::from(EXT_IMAGES / 8)] |= 1 << (EXT_IMAGES % 8);
                    put(value, mask)
                }
                0x200 => put_str(value, "Inlay virtual HSA runtime 0.1", 64), // AMD BUILD_VERSION
                0x201 => put(value, true),                // SVM_SUPPORTED
                // SVM_ACCESSIBLE_BY_DEFAULT: false, as ROCr answers for a dGPU
                // with XNACK off (pageable memory is not reachable by kernels).
                0x202 => put(value, false),
                _ => Err(Status::InvalidArgument),
            }
        })())
    }

    fn hsa_system_extension_supported(ext: u16, major: u16, _minor: u16, result: *mut bool) -> HsaStatus {
        status(rt().and_then(|_| put(result as *mut c_void, extension_supported(ext, major))))
    }

    fn hsa_system_major_extension_supported(ext: u16, major: u16, minor: *mut u16, result: *mut bool) -> HsaStatus {
        status((|| {
            rt()?;
            if minor.is_null() {
                return Err(Status::InvalidArgument);
            }
            let ok = extension_supported(ext, major);
            if ok {
                // Loader 1.03, images 1.01 (the tables we fill).
                put(minor as *mut c_void, if ext == EXT_IMAGES { 1u16 } else { 3u16 })?;
            }
            put(result as *mut c_void, ok)
        })())
    }

    fn hsa_system_get_extension_table(ext: u16, major: u16, _minor: u16, table: *mut c_void) -> HsaStatus {
        // The 1.0 form has no length: the 1.00 tables (3 loader entries, 10 image ones).
        let entries = if ext == EXT_IMAGES { 10 } else { 3 };
        status(fill_table(ext, major, entries * std::mem::size_of::<*const c_void>(), table))
    }

    fn hsa_system_get_major_extension_table(ext: u16, major: u16, len: usize, table: *mut c_void) -> HsaStatus {
        status(fill_table(ext, major, len, table))
    }

    fn hsa_extension_get_name(ext: u16, name: *mut *const c_char) -> HsaStatus {
        status((|| {
            rt()?;
            let text: &'static str = match ext {
                EXT_FINALIZER => "HSA_EXTENSION_FINALIZER\0",
                EXT_IMAGES => "HSA_EXTENSION_IMAGES\0",
                2 => "HSA_EXTENSION_PERFORMANCE_COUNTERS\0",
                3 => "HSA_EXTENSION_PROFILING_EVENTS\0",
                0x200 => "HSA_EXTENSION_AMD_PROFILER\0",
                EXT_AMD_LOADER => "HSA_EXTENSION_AMD_LOADER\0",
                0x202 => "HSA_EXTENSION_AMD_AQLPROFILE\0",
                _ => return Err(Status::InvalidArgument),
            };
            put(name as *mut c_void, text.as_ptr() as *const c_char)
        })())
    }

    fn hsa_amd_register_system_event_handler(
        callback: Option<extern "C" fn(*const c_void, *mut c_void) -> HsaStatus>,
        data: *mut c_void,
    ) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            let cb = callback.ok_or(Status::InvalidArgument)?;
            let data = data as usize;
            rt.register_event_handler(std::sync::Arc::new(move |ev| {
                let inlay_runtime::SystemEvent::MemoryFault { agent, address, .. } = *ev;
                let raw = crate::abi::MemoryFaultEvent {
                    event_type: crate::abi::EVENT_GPU_MEMORY_FAULT,
                    agent: state::agent_handle(agent),
                    virtual_address: address,
                    fault_reason_mask: crate::abi::FAULT_PAGE_NOT_PRESENT,
                };
                cb(&raw as *const _ as *const c_void, data as *mut c_void);
            }));
            Ok(())
        })())
    }
}
