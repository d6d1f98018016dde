//! Agents, ISAs, wavefronts, regions and memory pools: iteration and info.

use crate::abi::*;
use crate::export;
use crate::state::{self, rt, ISA_GFX90A, WAVEFRONT_64};
use inlay_runtime::agent::{Agent, Isa, GFX90A};
use inlay_runtime::pool::{Pool, Segment};
use inlay_runtime::{Runtime, Status};
use std::ffi::{c_char, c_void};

pub type Callback = Option<extern "C" fn(Handle, *mut c_void) -> HsaStatus>;

/// Calls `cb` for each handle; a status other than success stops the walk and is returned.
pub fn iterate(
    cb: Callback,
    data: *mut c_void,
    handles: impl IntoIterator<Item = Handle>,
) -> Result<(), Status> {
    let cb = cb.ok_or(Status::InvalidArgument)?;
    for h in handles {
        let st = cb(h, data);
        if st != SUCCESS {
            return match st {
                0x1 => Err(Status::InfoBreak),
                _ => Err(crate::unsupported::status_from_code(st)),
            };
        }
    }
    Ok(())
}

fn agent_info(a: &Agent, attr: u32, value: *mut c_void) -> Result<(), Status> {
    let isa = a.isa;
    let gpu = a.is_gpu();
    let g = |f: fn(&Isa) -> u32| isa.map(|i| f(&i)).unwrap_or(0);
    match attr {
        0 => put_str(value, &a.name, 64),
        1 => put_str(value, a.vendor, 64),
        2 => put(
            value,
            if gpu {
                FEATURE_KERNEL_DISPATCH
            } else {
                FEATURE_AGENT_DISPATCH
            },
        ),
        3 => put(value, 1u32), // MACHINE_MODEL: large
        4 => put(value, 0u32), // PROFILE: base
        5 => put(value, 2u32), // DEFAULT_FLOAT_ROUNDING_MODE: near
        23 => put(value, 2u32 | 1),
        24 => put(value, gpu),
        6 => put(value, g(|i| i.wavefront_size)),
        7 => put(value, isa.map(|i| i.workgroup_max_dim).unwrap_or([0; 3])),
        8 => put(value, g(|i| i.workgroup_max_size)),
        9 => put(value, isa.map(|i| i.grid_max_dim).unwrap_or([0; 3])),
        10 => put(value, g(|i| i.grid_max_size as u32)),
        11 => put(value, g(|i| i.fbarrier_max_size)),
        12 => put(value, a.queues_max),
        13 => put(value, a.queue_min_size),
        14 => put(value, a.queue_max_size),
        15 => put(value, 0u32), // QUEUE_TYPE: multi
        16 => put(value, a.node),
        17 => put(
            value,
            if gpu {
                DEVICE_TYPE_GPU
            } else {
                DEVICE_TYPE_CPU
            },
        ),
        18 => put(value, a.cache_sizes),
        19 => put(value, if gpu { ISA_GFX90A } else { 0u64 }),
        20 => {
            // EXTENSIONS: a GPU has images, as ROCr says for gfx90a.
            let mut mask = [0u8; 128];
            if gpu {
                mask[usize::from(EXT_IMAGES / 8)] |= 1 << (EXT_IMAGES % 8);
            }
            put(value, mask)
        }
        0x3000..=0x300B if gpu => {
            crate::images::agent_info(attr, value).unwrap_or(Err(Status::InvalidArgument))
        }
        21 => put(value, 1u16),
        22 => put(value, 1u16),
        0xA000 => put(value, a.chip_id),
        0xA001 => put(value, a.cacheline_size),
        0xA002 => put(value, a.compute_units),
        0xA003 => put(value, a.max_clock_mhz),
        0xA004 => put(value, a.driver_node_id),
        0xA005 => put(value, a.watch_points),
        0xA006 => put(value, a.bdf_id),
        0xA007 => put(value, a.memory_width_bits),
        0xA008 => put(value, a.memory_max_clock_mhz),
        0xA009 => put_str(value, &a.product_name, 64),
        0xA00A => put(value, a.max_waves_per_cu),
        0xA00B => put(value, a.simds_per_cu),
        0xA00C => put(value, a.shader_engines),
        0xA00D => put(value, a.shader_arrays_per_engine),
        0xA00E => put(value, [0u64; 2]), // HDP_FLUSH: no HDP registers on a virtual GPU
        0xA00F => put(value, 0u32),      // DOMAIN
        0xA010 => put(value, gpu),       // COOPERATIVE_QUEUES
        0xA011 => put_str(value, &a.uuid, 21),
        0xA012 => put(value, a.asic_revision),
        0xA013 => put(value, false), // SVM_DIRECT_HOST_ACCESS: not on a PCIe MI210
        0xA014 => put(value, if gpu { a.compute_units } else { 0 }),
        _ => Err(Status::InvalidArgument),
    }
}

fn isa_info(isa: &Isa, attr: u32, index: u32, value: *mut c_void) -> Result<(), Status> {
    match attr {
        0 => put(value, isa.name.len() as u32 + 1),
        1 => {
            if value.is_null() {
                return Err(Status::InvalidArgument);
            }
            let mut bytes = isa.name.as_bytes().to_vec();
            bytes.push(0);
            // SAFETY: non-null; the caller sized the buffer from NAME_LENGTH.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), value as *mut u8, bytes.len()) };
            Ok(())
        }
        2 => put(value, 1u32), // CALL_CONVENTION_COUNT
        3 | 4 if index != 0 => Err(Status::InvalidIndex),
        3 => put(value, isa.wavefront_size),
        4 => put(value, isa.wavefronts_per_cu),
        5 => put(value, [false, true]), // MACHINE_MODELS: large only
        6 => put(value, [true, false]), // PROFILES: base only
        7 => put(value, [false, false, true]),
        8 => put(value, [false, false, true]),
        9 => put(value, true),
        12 => put(value, isa.workgroup_max_dim),
        13 => put(value, isa.workgroup_max_size),
        14 => put(value, isa.grid_max_dim),
        16 => put(value, isa.grid_max_size),
        17 => put(value, isa.fbarrier_max_size),
        _ => Err(Status::InvalidArgument),
    }
}

fn isa_of(h: Handle) -> Result<Isa, Status> {
    if h == ISA_GFX90A {
        Ok(GFX90A)
    } else {
        Err(Status::InvalidIsa)
    }
}

/// Access of `agent` to `pool` (`hsa_amd_memory_pool_access_t`).
fn access(rt: &Runtime, agent: inlay_runtime::agent::AgentId, pool: &Pool) -> u32 {
    const NEVER: u32 = 0;
    const ALLOWED: u32 = 1;
    const DISALLOWED: u32 = 2;
    if pool.segment == Segment::Group {
        return if agent == pool.owner { ALLOWED } else { NEVER };
    }
    if agent == pool.owner || pool.accessible_by_all {
        return ALLOWED;
    }
    let _ = rt;
    DISALLOWED
}

fn pool_info(p: &Pool, attr: u32, value: *mut c_void) -> Result<(), Status> {
    match attr {
        0 => put(value, p.segment as u32),
        1 => put(value, p.global_flags),
        2 => put(value, p.size as usize),
        5 => put(value, p.alloc_allowed),
        6 => put(value, p.granule as usize),
        7 => put(value, p.alignment as usize),
        15 => put(value, p.accessible_by_all),
        16 => put(value, p.alloc_max_size as usize),
        _ => Err(Status::InvalidArgument),
    }
}

fn region_info(p: &Pool, attr: u32, value: *mut c_void) -> Result<(), Status> {
    match attr {
        // hsa_region_segment_t has the same numbers for these segments.
        0 => put(value, p.segment as u32),
        1 => put(value, p.global_flags),
        2 => put(value, p.size as usize),
        4 => put(value, p.alloc_max_size as usize),
        8 => put(
            value,
            if p.segment == Segment::Group {
                p.size as u32
            } else {
                0
            },
        ),
        5 => put(value, p.alloc_allowed),
        6 => put(value, p.granule as usize),
        7 => put(value, p.alignment as usize),
        0xA000 => put(value, p.owner == inlay_runtime::agent::CPU), // HOST_ACCESSIBLE
        0xA001 => put(value, 0usize),                               // BASE
        0xA002 => put(value, 0u32),                                 // BUS_WIDTH
        0xA003 => put(value, 0u32),                                 // MAX_CLOCK_FREQUENCY
        _ => Err(Status::InvalidArgument),
    }
}

export! {
    fn hsa_iterate_agents(cb: Callback, data: *mut c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            let handles: Vec<Handle> = rt.agents().iter().map(|a| state::agent_handle(a.id)).collect();
            iterate(cb, data, handles)
        })())
    }

    fn hsa_agent_get_info(agent: Handle, attr: u32, value: *mut c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            let a = rt.agent(state::agent_id(&rt, agent)?)?;
            agent_info(a, attr, value)
        })())
    }

    fn hsa_agent_extension_supported(ext: u16, agent: Handle, major: u16, _minor: u16, result: *mut bool) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            state::agent_id(&rt, agent)?;
            put(result as *mut c_void, ext == EXT_AMD_LOADER && major == 1)
        })())
    }

    fn hsa_agent_major_extension_supported(ext: u16, agent: Handle, major: u16, minor: *mut u16, result: *mut bool) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            state::agent_id(&rt, agent)?;
            if minor.is_null() {
                return Err(Status::InvalidArgument);
            }
            let ok = ext == EXT_AMD_LOADER && major == 1;
            if ok {
                put(minor as *mut c_void, 3u16)?;
            }
            put(result as *mut c_void, ok)
        })())
    }

    fn hsa_agent_iterate_isas(agent: Handle, cb: Callback, data: *mut c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            let a = rt.agent(state::agent_id(&rt, agent)?)?;
            let isas: Vec<Handle> = a.isa.iter().map(|_| ISA_GFX90A).collect();
            iterate(cb, data, isas)
        })())
    }

    fn hsa_isa_get_info(isa: Handle, attr: u32, index: u32, value: *mut c_void) -> HsaStatus {
        status(rt().and_then(|_| isa_info(&isa_of(isa)?, attr, index, value)))
    }

    fn hsa_isa_get_info_alt(isa: Handle, attr: u32, value: *mut c_void) -> HsaStatus {
        status(rt().and_then(|_| isa_info(&isa_of(isa)?, attr, 0, value)))
    }

    fn hsa_isa_from_name(name: *const c_char, isa: *mut Handle) -> HsaStatus {
        status((|| {
            rt()?;
            let name = read_cstr(name)?;
            if isa.is_null() {
                return Err(Status::InvalidArgument);
            }
            // Accept the full name and the short forms ROCr accepts for the same target.
            let known = [GFX90A.name, "amdgcn-amd-amdhsa--gfx90a", "amdgcn-amd-amdhsa--gfx90a:xnack-", "amdgcn-amd-amdhsa--gfx90a:sramecc+"];
            if !known.contains(&name) {
                return Err(Status::InvalidIsaName);
            }
            put(isa as *mut c_void, ISA_GFX90A)
        })())
    }

    fn hsa_isa_iterate_wavefronts(isa: Handle, cb: Callback, data: *mut c_void) -> HsaStatus {
        status(rt().and_then(|_| {
            isa_of(isa)?;
            iterate(cb, data, [WAVEFRONT_64])
        }))
    }

    fn hsa_wavefront_get_info(wavefront: Handle, attr: u32, value: *mut c_void) -> HsaStatus {
        status(rt().and_then(|_| {
            if wavefront != WAVEFRONT_64 {
                return Err(Status::InvalidWavefront);
            }
            match attr {
                0 => put(value, 64u32),
                _ => Err(Status::InvalidArgument),
            }
        }))
    }

    fn hsa_isa_compatible(code_isa: Handle, agent_isa: Handle, result: *mut bool) -> HsaStatus {
        status(rt().and_then(|_| {
            isa_of(code_isa)?;
            isa_of(agent_isa)?;
            put(result as *mut c_void, true)
        }))
    }

    fn hsa_isa_get_exception_policies(isa: Handle, profile: u32, mask: *mut u16) -> HsaStatus {
        status(rt().and_then(|_| {
            isa_of(isa)?;
            if profile > 1 {
                return Err(Status::InvalidArgument);
            }
            put(mask as *mut c_void, 0u16)
        }))
    }

    fn hsa_isa_get_round_method(isa: Handle, fp_type: u32, flush_mode: u32, method: *mut u32) -> HsaStatus {
        status(rt().and_then(|_| {
            isa_of(isa)?;
            if fp_type > 2 || flush_mode > 1 {
                return Err(Status::InvalidArgument);
            }
            put(method as *mut c_void, 0u32) // HSA_ROUND_METHOD_SINGLE
        }))
    }

    fn hsa_agent_iterate_regions(agent: Handle, cb: Callback, data: *mut c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            let id = state::agent_id(&rt, agent)?;
            let handles: Vec<Handle> = rt.agent_pools(id).map(|p| state::pool_handle(p.id)).collect();
            iterate(cb, data, handles)
        })())
    }

    fn hsa_region_get_info(region: Handle, attr: u32, value: *mut c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            let p = rt.pool(state::pool_id(&rt, region, Status::InvalidRegion)?)?;
            region_info(p, attr, value)
        })())
    }

    fn hsa_amd_agent_iterate_memory_pools(agent: Handle, cb: Callback, data: *mut c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            let id = state::agent_id(&rt, agent)?;
            let handles: Vec<Handle> = rt.agent_pools(id).map(|p| state::pool_handle(p.id)).collect();
            iterate(cb, data, handles)
        })())
    }

    fn hsa_amd_memory_pool_get_info(pool: Handle, attr: u32, value: *mut c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            let p = rt.pool(state::pool_id(&rt, pool, Status::InvalidMemoryPool)?)?;
            pool_info(p, attr, value)
        })())
    }

    fn hsa_amd_agent_memory_pool_get_info(agent: Handle, pool: Handle, attr: u32, value: *mut c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            let a = state::agent_id(&rt, agent)?;
            let p = rt.pool(state::pool_id(&rt, pool, Status::InvalidMemoryPool)?)?;
            let acc = access(&rt, a, p);
            match attr {
                0 => put(value, acc),
                1 => put(value, u32::from(a != p.owner && acc != 0)), // NUM_LINK_HOPS
                2 => {
                    if a == p.owner || acc == 0 {
                        return Err(Status::InvalidArgument);
                    }
                    // hsa_amd_memory_pool_link_info_t: latencies, bandwidths,
                    // three bools, link type (PCIe = 1), NUMA distance.
                    #[repr(C)]
                    #[derive(Clone, Copy)]
                    struct LinkInfo { lat: [u32; 2], bw: [u32; 2], atomics32: bool, atomics64: bool, coherent: bool, link_type: u32, numa: u32 }
                    put(value, LinkInfo { lat: [0; 2], bw: [0; 2], atomics32: true, atomics64: true, coherent: true, link_type: 1, numa: 20 })
                }
                _ => Err(Status::InvalidArgument),
            }
        })())
    }
}
