//! Init and shutdown, status strings, system info, extensions and the AMD
//! loader extension table.

use crate::abi::{
    put, put_str, status, Handle, HsaStatus, EXT_AMD_LOADER, EXT_FINALIZER, EXT_IMAGES,
};
use crate::executables;
use crate::export;
use crate::state::{self, rt};
use inlay_runtime::status::status_text;
use inlay_runtime::Status;
use std::ffi::{c_char, c_void};

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
    // ROCr: a wrong major version of a table it has, or a table it does not
    // have, is HSA_STATUS_ERROR (hsa_system_get_major_extension_table).
    if !extension_supported(ext, major) {
        return Err(Status::Error);
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

    fn hsa_system_get_extension_table(ext: u16, major: u16, minor: u16, table: *mut c_void) -> HsaStatus {
        // The 1.0 form has no length: the table of version major.minor, as
        // ROCr's get_extension_table_length sizes it (0, refused, for a
        // version or extension it has no table for). Loader 1.00 to 1.03 have
        // 3, 5, 6 and 7 entries, images 1.00 has 10; other extensions'
        // tables are not offered.
        let entries = match (ext, major, minor) {
            (EXT_AMD_LOADER, 1, 0..=3) => [3, 5, 6, 7][minor as usize],
            (EXT_IMAGES, 1, 0) => 10,
            (EXT_FINALIZER | 0x202 | 0x203, 1, 0) => 1,
            _ => 0,
        };
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
            // ROCr registers a null handler too (and would call it); a null
            // one here is kept but handles nothing.
            let Some(cb) = callback else {
                rt.register_event_handler(std::sync::Arc::new(|_| false));
                return Ok(());
            };
            let data = data as usize;
            rt.register_event_handler(std::sync::Arc::new(move |ev| {
                let inlay_runtime::SystemEvent::MemoryFault { agent, address, .. } = *ev;
                let raw = crate::abi::MemoryFaultEvent {
                    event_type: crate::abi::EVENT_GPU_MEMORY_FAULT,
                    agent: state::agent_handle(agent),
                    virtual_address: address,
                    fault_reason_mask: crate::abi::FAULT_PAGE_NOT_PRESENT,
                };
                // ROCr: a handler returning success has dealt with the fault.
                cb(&raw as *const _ as *const c_void, data as *mut c_void) == crate::abi::SUCCESS
            }));
            Ok(())
        })())
    }
}
