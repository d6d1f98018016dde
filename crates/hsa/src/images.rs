//! The image extension, as far as the virtual GPU goes.
//!
//! ROCr advertises images on an MI210 (gfx90a), and HIP 5.2 depends on it
//! beyond textures: ROCclr refuses pitched allocations (`hipMallocPitch`,
//! `hipMalloc3D`) on a device that reports no image support. So Inlay
//! reports what ROCr reports (the extension, the maximum image sizes of
//! ROCr's gfx9 table, 128 read and 64 read-write image handles, 16
//! samplers), and pitched allocations work as on the real device.
//!
//! The virtual GPU executes no image instructions (MIMG loads, stores and
//! samples, typed buffer loads), so no image or sampler can be used by a
//! kernel. Every call that would create one is refused with the image
//! extension's own status (`IMAGE_FORMAT_UNSUPPORTED`, or
//! `SAMPLER_DESCRIPTOR_UNSUPPORTED` for samplers) and a line on standard
//! error saying why; `hsa_ext_image_get_capability` reports no capability
//! for any format, which is how HSA says a format cannot be used.

use crate::abi::*;
use crate::export;
use crate::state::{self, rt};
use inlay_runtime::Status;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

/// `hsa_ext_status_t` values of the image extension.
const IMAGE_FORMAT_UNSUPPORTED: HsaStatus = 0x3000;
const SAMPLER_DESCRIPTOR_UNSUPPORTED: HsaStatus = 0x3003;

/// ROCr's maximum image dimensions for gfx9 (`ImageLutKv`): width, height,
/// depth, array size per `hsa_ext_image_geometry_t`.
const MAX_DIMENSIONS: [[u32; 4]; 8] = [
    [16384, 1, 1, 1],        // 1D
    [16384, 16384, 1, 1],    // 2D
    [16384, 16384, 8192, 1], // 3D
    [16384, 1, 1, 8192],     // 1DA
    [16384, 16384, 1, 8192], // 2DA
    [u32::MAX, 1, 1, 1],     // 1DB
    [16384, 16384, 1, 1],    // 2DDEPTH
    [16384, 16384, 1, 8192], // 2DADEPTH
];

/// Answers the image attributes of `hsa_agent_get_info` (0x3000..=0x300B)
/// for a GPU; None for other attributes.
pub fn agent_info(attr: u32, value: *mut c_void) -> Option<Result<(), Status>> {
    let dims = |g: usize| MAX_DIMENSIONS[g];
    Some(match attr {
        0x3000 => put(value, dims(0)[0]),                           // 1D
        0x3001 => put(value, dims(3)[0]),                           // 1DA
        0x3002 => put(value, dims(5)[0]),                           // 1DB
        0x3003 => put(value, [dims(1)[0], dims(1)[1]]),             // 2D
        0x3004 => put(value, [dims(4)[0], dims(4)[1]]),             // 2DA
        0x3005 => put(value, [dims(6)[0], dims(6)[1]]),             // 2DDEPTH
        0x3006 => put(value, [dims(7)[0], dims(7)[1]]),             // 2DADEPTH
        0x3007 => put(value, [dims(2)[0], dims(2)[1], dims(2)[2]]), // 3D
        0x3008 => put(value, dims(4)[3]),                           // ARRAY_MAX_LAYERS
        0x3009 => put(value, 128u32),                               // MAX_IMAGE_RD_HANDLES
        0x300A => put(value, 64u32),                                // MAX_IMAGE_RORW_HANDLES
        0x300B => put(value, 16u32),                                // MAX_SAMPLER_HANDLERS
        _ => return None,
    })
}

/// Says once per process why images are refused.
fn explain(call: &str) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        eprintln!(
            "inlay: {call}: images are not supported: the virtual GPU executes no image instructions (pitched buffers work; textures and surfaces do not)"
        );
    }
}

/// The refusal of a call that would create an image or sampler: the agent
/// and out-pointer are checked first, as for any call.
fn refuse(call: &str, agent: Handle, out: *const c_void, code: HsaStatus) -> HsaStatus {
    let checked = (|| {
        let rt = rt()?;
        let a = rt.agent(state::agent_id(&rt, agent)?)?;
        if !a.is_gpu() {
            return Err(Status::InvalidAgent);
        }
        if out.is_null() {
            return Err(Status::InvalidArgument);
        }
        Ok(())
    })();
    match checked {
        Ok(()) => {
            explain(call);
            code
        }
        Err(s) => s.code(),
    }
}

/// Calls on image handles: no image was ever created, so none is valid.
fn no_such_image(agent: Handle) -> HsaStatus {
    status((|| {
        let rt = rt()?;
        state::agent_id(&rt, agent)?;
        Err(Status::InvalidArgument)
    })())
}

export! {
    fn hsa_ext_image_get_capability(agent: Handle, geometry: u32, format: *const c_void, mask: *mut u32) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            state::agent_id(&rt, agent)?;
            if format.is_null() || geometry > 7 {
                return Err(Status::InvalidArgument);
            }
            put(mask as *mut c_void, 0u32)
        })())
    }
    fn hsa_ext_image_get_capability_with_layout(agent: Handle, geometry: u32, format: *const c_void, layout: u32, mask: *mut u32) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            state::agent_id(&rt, agent)?;
            if format.is_null() || geometry > 7 || layout > 1 {
                return Err(Status::InvalidArgument);
            }
            put(mask as *mut c_void, 0u32)
        })())
    }
    fn hsa_ext_image_data_get_info(agent: Handle, desc: *const c_void, _perm: u32, info: *mut c_void) -> HsaStatus {
        if desc.is_null() { return status(rt().and(Err(Status::InvalidArgument))); }
        refuse("hsa_ext_image_data_get_info", agent, info, IMAGE_FORMAT_UNSUPPORTED)
    }
    fn hsa_ext_image_data_get_info_with_layout(agent: Handle, desc: *const c_void, _perm: u32, _layout: u32, _rp: usize, _sp: usize, info: *mut c_void) -> HsaStatus {
        if desc.is_null() { return status(rt().and(Err(Status::InvalidArgument))); }
        refuse("hsa_ext_image_data_get_info_with_layout", agent, info, IMAGE_FORMAT_UNSUPPORTED)
    }
    fn hsa_ext_image_create(agent: Handle, desc: *const c_void, _data: *const c_void, _perm: u32, image: *mut Handle) -> HsaStatus {
        if desc.is_null() { return status(rt().and(Err(Status::InvalidArgument))); }
        refuse("hsa_ext_image_create", agent, image as *const c_void, IMAGE_FORMAT_UNSUPPORTED)
    }
    fn hsa_ext_image_create_with_layout(agent: Handle, desc: *const c_void, _data: *const c_void, _perm: u32, _layout: u32, _rp: usize, _sp: usize, image: *mut Handle) -> HsaStatus {
        if desc.is_null() { return status(rt().and(Err(Status::InvalidArgument))); }
        refuse("hsa_ext_image_create_with_layout", agent, image as *const c_void, IMAGE_FORMAT_UNSUPPORTED)
    }
    fn hsa_amd_image_create(agent: Handle, desc: *const c_void, _layout: *const c_void, _data: *const c_void, _perm: u32, image: *mut Handle) -> HsaStatus {
        if desc.is_null() { return status(rt().and(Err(Status::InvalidArgument))); }
        refuse("hsa_amd_image_create", agent, image as *const c_void, IMAGE_FORMAT_UNSUPPORTED)
    }
    fn hsa_ext_sampler_create(agent: Handle, desc: *const c_void, sampler: *mut Handle) -> HsaStatus {
        if desc.is_null() { return status(rt().and(Err(Status::InvalidArgument))); }
        refuse("hsa_ext_sampler_create", agent, sampler as *const c_void, SAMPLER_DESCRIPTOR_UNSUPPORTED)
    }
    fn hsa_ext_image_destroy(agent: Handle, _image: Handle) -> HsaStatus { no_such_image(agent) }
    fn hsa_ext_sampler_destroy(agent: Handle, _sampler: Handle) -> HsaStatus { no_such_image(agent) }
    fn hsa_ext_image_export(agent: Handle, _image: Handle, _dst: *mut c_void, _rp: usize, _sp: usize, _region: *const c_void) -> HsaStatus { no_such_image(agent) }
    fn hsa_ext_image_import(agent: Handle, _src: *const c_void, _rp: usize, _sp: usize, _image: Handle, _region: *const c_void) -> HsaStatus { no_such_image(agent) }
    fn hsa_ext_image_copy(agent: Handle, _src: Handle, _so: *const c_void, _dst: Handle, _do: *const c_void, _range: *const c_void) -> HsaStatus { no_such_image(agent) }
    fn hsa_ext_image_clear(agent: Handle, _image: Handle, _data: *const c_void, _region: *const c_void) -> HsaStatus { no_such_image(agent) }

    fn hsa_amd_image_get_info_max_dim(agent: Handle, attr: u32, value: *mut c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            let a = rt.agent(state::agent_id(&rt, agent)?)?;
            if !a.is_gpu() {
                return Err(Status::InvalidAgent);
            }
            match attr {
                0x3000..=0x3008 => agent_info(attr, value).unwrap_or(Err(Status::InvalidArgument)),
                _ => Err(Status::InvalidArgument),
            }
        })())
    }
}

/// The `hsa_ext_images_1_pfn_t` table (1.00 entries, then the 1.01 ones).
/// Not inlined: the functions must stay referenced from this module's code,
/// where their `.symver` directives are.
#[inline(never)]
pub fn table() -> [*const c_void; 13] {
    [
        hsa_ext_image_get_capability as *const c_void,
        hsa_ext_image_data_get_info as *const c_void,
        hsa_ext_image_create as *const c_void,
        hsa_ext_image_destroy as *const c_void,
        hsa_ext_image_copy as *const c_void,
        hsa_ext_image_import as *const c_void,
        hsa_ext_image_export as *const c_void,
        hsa_ext_image_clear as *const c_void,
        hsa_ext_sampler_create as *const c_void,
        hsa_ext_sampler_destroy as *const c_void,
        hsa_ext_image_get_capability_with_layout as *const c_void,
        hsa_ext_image_data_get_info_with_layout as *const c_void,
        hsa_ext_image_create_with_layout as *const c_void,
    ]
}
