//! C types and constants of hsa.h / hsa_ext_amd.h, written from the header facts,
//! and helpers to read and write caller memory safely.

use inlay_runtime::Status;
use std::ffi::c_void;

pub type HsaStatus = u32;
pub const SUCCESS: HsaStatus = 0;

/// Handle structs (`hsa_agent_t`, `hsa_signal_t`, ...) are one `uint64_t`;
/// passed by value they travel exactly as a `u64`.
pub type Handle = u64;

/// What an export returns if its body panicked.
pub trait Fallback {
    fn fallback() -> Self;
}
impl Fallback for HsaStatus {
    fn fallback() -> Self {
        Status::Error.code()
    }
}
impl Fallback for i64 {
    fn fallback() -> Self {
        0
    }
}
impl Fallback for u64 {
    fn fallback() -> Self {
        0
    }
}
impl Fallback for () {
    fn fallback() -> Self {}
}

/// What ROCr does with a bad handle given to a function that cannot return
/// a status (signal values, queue indices): its conversion throws and the
/// entry point's catch aborts the process (`handleExceptionT`, hsa.cpp), or
/// it dereferences the handle and crashes. We abort too, saying what was wrong.
#[cold]
pub fn misuse(function: &str, what: std::fmt::Arguments<'_>) -> ! {
    eprintln!("inlay: {function}: {what}; aborting, as ROCr does");
    std::process::abort()
}

/// Turns a runtime result into the status a C caller expects.
pub fn status(r: Result<(), Status>) -> HsaStatus {
    match r {
        Ok(()) => SUCCESS,
        Err(s) => s.code(),
    }
}

/// Writes `v` to a caller's out-pointer after checking it is not null.
pub fn put<T: Copy>(out: *mut c_void, v: T) -> Result<(), Status> {
    if out.is_null() {
        return Err(Status::InvalidArgument);
    }
    // SAFETY: non-null; the caller promised room for the attribute's type.
    // Unaligned writes because C callers may pass any buffer.
    unsafe { (out as *mut T).write_unaligned(v) };
    Ok(())
}

/// Writes a NUL-padded string into a fixed `char[width]` field.
pub fn put_str(out: *mut c_void, s: &str, width: usize) -> Result<(), Status> {
    if out.is_null() {
        return Err(Status::InvalidArgument);
    }
    let n = s.len().min(width - 1);
    // SAFETY: non-null; the attribute's type is `char[width]`.
    unsafe {
        std::ptr::write_bytes(out as *mut u8, 0, width);
        std::ptr::copy_nonoverlapping(s.as_ptr(), out as *mut u8, n);
    }
    Ok(())
}

/// Reads a NUL-terminated string a caller passed.
pub fn read_cstr<'a>(p: *const std::ffi::c_char) -> Result<&'a str, Status> {
    if p.is_null() {
        return Err(Status::InvalidArgument);
    }
    // SAFETY: non-null; C callers pass NUL-terminated strings.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Status::InvalidArgument)
}

/// Reads `n` elements from a caller's array (`n` may be 0 with a null pointer).
pub fn read_array<'a, T>(p: *const T, n: usize) -> Result<&'a [T], Status> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() || n > (1 << 24) {
        return Err(Status::InvalidArgument);
    }
    // SAFETY: non-null; the caller promised `n` elements.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

// hsa_signal_condition_t, hsa_wait_state_t come from the runtime's enums.

/// `hsa_device_type_t`.
pub const DEVICE_TYPE_CPU: u32 = 0;
pub const DEVICE_TYPE_GPU: u32 = 1;

/// `hsa_agent_feature_t`.
pub const FEATURE_KERNEL_DISPATCH: u32 = 1;
pub const FEATURE_AGENT_DISPATCH: u32 = 2;

/// Extension ids.
pub const EXT_FINALIZER: u16 = 0;
pub const EXT_IMAGES: u16 = 1;
pub const EXT_AMD_LOADER: u16 = 0x201;

/// `hsa_amd_event_type_t` / `hsa_amd_memory_fault_reason_t`.
pub const EVENT_GPU_MEMORY_FAULT: u32 = 0;
pub const FAULT_PAGE_NOT_PRESENT: u32 = 1;

/// `hsa_amd_gpu_memory_fault_info_t` inside `hsa_amd_event_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemoryFaultEvent {
    pub event_type: u32,
    pub agent: Handle,
    pub virtual_address: u64,
    pub fault_reason_mask: u32,
}
