//! Kernel descriptors: the 64-byte `X.kd` objects that tell the packet processor
//! how to launch kernel `X` (AMDGPUUsage, "Kernel Descriptor").

use serde::Serialize;

use crate::target::Family;
use crate::{Error, Result};

pub const KERNEL_DESCRIPTOR_SIZE: usize = 64;

/// The raw descriptor's fields, exactly as stored (their byte offsets are in `parse`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelDescriptor {
    pub compute_pgm_rsrc1: u32,
    pub compute_pgm_rsrc2: u32,
    pub compute_pgm_rsrc3: u32,
    pub group_segment_fixed_size: u32,
    pub kernarg_preload: u16,
    pub kernarg_size: u32,
    /// Byte offset from the descriptor's address to the kernel's first instruction.
    pub kernel_code_entry_byte_offset: i64,
    pub kernel_code_properties: u16,
    pub private_segment_fixed_size: u32,
    pub reserved0: [u8; 4],
    pub reserved1: [u8; 20],
    pub reserved3: [u8; 4],
}

fn le<const N: usize>(b: &[u8; 64], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[at..at + N]);
    a
}

impl KernelDescriptor {
    /// Reads a descriptor from exactly 64 bytes; `offset` is their place in the file, for errors.
    pub fn parse(bytes: &[u8], offset: u64) -> Result<KernelDescriptor> {
        let b: &[u8; 64] = bytes.try_into().map_err(|_| {
            Error::at(
                offset,
                format!("kernel descriptor is {} bytes, expected 64", bytes.len()),
            )
        })?;
        Ok(KernelDescriptor {
            group_segment_fixed_size: u32::from_le_bytes(le(b, 0)),
            private_segment_fixed_size: u32::from_le_bytes(le(b, 4)),
            kernarg_size: u32::from_le_bytes(le(b, 8)),
            reserved0: le(b, 12),
            kernel_code_entry_byte_offset: i64::from_le_bytes(le(b, 16)),
            reserved1: le(b, 24),
            compute_pgm_rsrc3: u32::from_le_bytes(le(b, 44)),
            compute_pgm_rsrc1: u32::from_le_bytes(le(b, 48)),
            compute_pgm_rsrc2: u32::from_le_bytes(le(b, 52)),
            kernel_code_properties: u16::from_le_bytes(le(b, 56)),
            kernarg_preload: u16::from_le_bytes(le(b, 58)),
            reserved3: le(b, 60),
        })
    }

    /// The 64 bytes of this descriptor.
    pub fn to_bytes(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[0..4].copy_from_slice(&self.group_segment_fixed_size.to_le_bytes());
        b[4..8].copy_from_slice(&self.private_segment_fixed_size.to_le_bytes());
        b[8..12].copy_from_slice(&self.kernarg_size.to_le_bytes());
        b[12..16].copy_from_slice(&self.reserved0);
        b[16..24].copy_from_slice(&self.kernel_code_entry_byte_offset.to_le_bytes());
        b[24..44].copy_from_slice(&self.reserved1);
        b[44..48].copy_from_slice(&self.compute_pgm_rsrc3.to_le_bytes());
        b[48..52].copy_from_slice(&self.compute_pgm_rsrc1.to_le_bytes());
        b[52..56].copy_from_slice(&self.compute_pgm_rsrc2.to_le_bytes());
        b[56..58].copy_from_slice(&self.kernel_code_properties.to_le_bytes());
        b[58..60].copy_from_slice(&self.kernarg_preload.to_le_bytes());
        b[60..64].copy_from_slice(&self.reserved3);
        b
    }

    /// All fields decoded for `family` (which decides register granules and rsrc3's layout).
    pub fn decode(&self, family: Family, wave32: bool) -> DecodedDescriptor {
        DecodedDescriptor {
            rsrc1: Rsrc1::decode(self.compute_pgm_rsrc1),
            rsrc2: Rsrc2::decode(self.compute_pgm_rsrc2),
            rsrc3: Rsrc3::decode(self.compute_pgm_rsrc3, family),
            properties: KernelCodeProperties::decode(self.kernel_code_properties),
            kernarg_preload_length: self.kernarg_preload & 0x7f,
            kernarg_preload_offset: self.kernarg_preload >> 7,
            vgpr_count: vgpr_count(self.compute_pgm_rsrc1, family, wave32),
            sgpr_count: sgpr_count(self.compute_pgm_rsrc1, family),
            accum_offset: match family {
                Family::Gfx90a | Family::Gfx94x => Some((self.compute_pgm_rsrc3 & 0x3f) * 4 + 4),
                _ => None,
            },
        }
    }
}

impl DecodedDescriptor {
    /// Where a wave finds each initial SGPR the descriptor enables
    /// (AMDGPUUsage, "Initial Kernel Execution State"): user SGPRs from s0 in
    /// a fixed order, then the system SGPRs from the user SGPR count on.
    pub fn initial_sgprs(&self) -> InitialSgprs {
        let p = &self.properties;
        let mut next = 0u16;
        let mut take = |on: bool, n: u16| {
            let at = on.then_some(next);
            next += if on { n } else { 0 };
            at
        };
        let mut out = InitialSgprs {
            private_segment_buffer: take(p.enable_sgpr_private_segment_buffer, 4),
            dispatch_ptr: take(p.enable_sgpr_dispatch_ptr, 2),
            queue_ptr: take(p.enable_sgpr_queue_ptr, 2),
            kernarg_segment_ptr: take(p.enable_sgpr_kernarg_segment_ptr, 2),
            dispatch_id: take(p.enable_sgpr_dispatch_id, 2),
            flat_scratch_init: take(p.enable_sgpr_flat_scratch_init, 2),
            private_segment_size: take(p.enable_sgpr_private_segment_size, 1),
            ..InitialSgprs::default()
        };
        let r2 = &self.rsrc2;
        let mut next = r2.user_sgpr_count as u16;
        let mut take = |on: bool| {
            let at = on.then_some(next);
            next += u16::from(on);
            at
        };
        out.workgroup_id = [
            take(r2.enable_sgpr_workgroup_id_x),
            take(r2.enable_sgpr_workgroup_id_y),
            take(r2.enable_sgpr_workgroup_id_z),
        ];
        out.workgroup_info = take(r2.enable_sgpr_workgroup_info);
        out.private_segment_wave_offset = take(r2.enable_private_segment);
        out
    }
}

/// First SGPR of each initial value a wave starts with, when enabled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InitialSgprs {
    pub private_segment_buffer: Option<u16>,
    pub dispatch_ptr: Option<u16>,
    pub queue_ptr: Option<u16>,
    pub kernarg_segment_ptr: Option<u16>,
    pub dispatch_id: Option<u16>,
    pub flat_scratch_init: Option<u16>,
    pub private_segment_size: Option<u16>,
    pub workgroup_id: [Option<u16>; 3],
    pub workgroup_info: Option<u16>,
    pub private_segment_wave_offset: Option<u16>,
}

/// A descriptor field holding a value its target makes impossible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DescriptorProblem {
    /// The field, named as in AMDGPUUsage's kernel descriptor tables, e.g.
    /// `COMPUTE_PGM_RSRC2.USER_SGPR_COUNT`.
    pub field: &'static str,
    /// Why the value cannot be.
    pub problem: String,
    pub value: u64,
}

impl std::fmt::Display for DescriptorProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {:#x}: {}", self.field, self.value, self.problem)
    }
}

/// User SGPRs the hardware has (COMPUTE_USER_DATA_0..15).
pub const MAX_USER_SGPRS: u32 = 16;

impl KernelDescriptor {
    /// The fields whose values a `processor` of `family` makes impossible, by
    /// AMDGPUUsage's "Code Object V3 Kernel Descriptor" and
    /// `compute_pgm_rsrc1/2/3` tables: bits that must be 0 (reserved, or
    /// filled in by CP), features the family lacks (wave32 before GFX10,
    /// kernarg preloading before GFX90A, the private segment buffer and flat
    /// scratch init where scratch is architected), more user SGPRs than
    /// exist or than are requested, more SGPRs than a GFX9 wave has, AGPRs
    /// starting past the VGPRs allocated, more LDS than a work-group can have.
    /// Where the entry point may be depends on the code object: a
    /// [`crate::Kernel`]'s `descriptor_problems` has both. Families other than GFX9
    /// (gfx9xx) get only the rules common to all.
    pub fn problems(&self, processor: &str, family: Family) -> Vec<DescriptorProblem> {
        let mut out = Vec::new();
        let mut check = |field: &'static str, value: u64, ok: bool, problem: &str| {
            if !ok {
                out.push(DescriptorProblem {
                    field,
                    value,
                    problem: problem.to_string(),
                });
            }
        };
        let le = |b: &[u8]| b.iter().rev().fold(0u64, |v, &x| v << 8 | u64::from(x));
        let reserved = "reserved, must be 0";
        check(
            "reserved bytes 12-15",
            le(&self.reserved0),
            self.reserved0 == [0; 4],
            reserved,
        );
        let nonzero = self.reserved1.iter().position(|&b| b != 0);
        check(
            "reserved bytes 24-43",
            nonzero.map_or(0, |i| u64::from(self.reserved1[i])),
            nonzero.is_none(),
            &format!(
                "reserved, must be 0 (byte {} is not)",
                24 + nonzero.unwrap_or(0)
            ),
        );
        check(
            "reserved bytes 60-63",
            le(&self.reserved3),
            self.reserved3 == [0; 4],
            reserved,
        );
        let props = u32::from(self.kernel_code_properties);
        check(
            "KERNEL_CODE_PROPERTIES bits 7-9",
            u64::from(bits(props, 7, 3)),
            bits(props, 7, 3) == 0,
            reserved,
        );
        check(
            "KERNEL_CODE_PROPERTIES bits 12-15",
            u64::from(bits(props, 12, 4)),
            bits(props, 12, 4) == 0,
            reserved,
        );
        let p = KernelCodeProperties::decode(self.kernel_code_properties);
        let enabled_user_sgprs = 4 * u32::from(p.enable_sgpr_private_segment_buffer)
            + 2 * u32::from(p.enable_sgpr_dispatch_ptr)
            + 2 * u32::from(p.enable_sgpr_queue_ptr)
            + 2 * u32::from(p.enable_sgpr_kernarg_segment_ptr)
            + 2 * u32::from(p.enable_sgpr_dispatch_id)
            + 2 * u32::from(p.enable_sgpr_flat_scratch_init)
            + u32::from(p.enable_sgpr_private_segment_size);
        let gfx9 = matches!(family, Family::Gfx9 | Family::Gfx90a | Family::Gfx94x);
        if !gfx9 {
            return out;
        }
        let preload = if family == Family::Gfx9 {
            check(
                "KERNARG_PRELOAD",
                u64::from(self.kernarg_preload),
                self.kernarg_preload == 0,
                "kernarg preloading needs GFX90A or GFX940; reserved, must be 0 before",
            );
            0
        } else {
            u32::from(self.kernarg_preload & 0x7f)
        };
        let user_sgprs = bits(self.compute_pgm_rsrc2, 1, 5);
        check(
            "COMPUTE_PGM_RSRC2.USER_SGPR_COUNT",
            u64::from(user_sgprs),
            user_sgprs <= MAX_USER_SGPRS,
            &format!("more user SGPRs than the {MAX_USER_SGPRS} the hardware has"),
        );
        check(
            "COMPUTE_PGM_RSRC2.USER_SGPR_COUNT",
            u64::from(user_sgprs),
            user_sgprs >= enabled_user_sgprs + preload,
            &format!(
                "fewer than the {} user SGPRs enabled ({enabled_user_sgprs} by KERNEL_CODE_PROPERTIES, {preload} preloaded kernarg dwords)",
                enabled_user_sgprs + preload
            ),
        );
        check(
            "KERNEL_CODE_PROPERTIES.ENABLE_WAVEFRONT_SIZE32",
            1,
            !p.enable_wavefront_size32,
            &format!("{processor} runs wave64 only (wave32 needs GFX10); reserved, must be 0"),
        );
        if family == Family::Gfx94x {
            let architected = "scratch is architected on this processor: not supported, must be 0";
            check(
                "KERNEL_CODE_PROPERTIES.ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER",
                1,
                !p.enable_sgpr_private_segment_buffer,
                architected,
            );
            check(
                "KERNEL_CODE_PROPERTIES.ENABLE_SGPR_FLAT_SCRATCH_INIT",
                1,
                !p.enable_sgpr_flat_scratch_init,
                architected,
            );
        }
        let r1 = self.compute_pgm_rsrc1;
        let must_be_zero = "must be 0 (CP fills it in)";
        for (field, lo, width, why) in [
            ("COMPUTE_PGM_RSRC1.PRIORITY", 10, 2, must_be_zero),
            ("COMPUTE_PGM_RSRC1.PRIV", 20, 1, must_be_zero),
            ("COMPUTE_PGM_RSRC1.DEBUG_MODE", 22, 1, must_be_zero),
            ("COMPUTE_PGM_RSRC1.BULKY", 24, 1, must_be_zero),
            ("COMPUTE_PGM_RSRC1.CDBG_USER", 25, 1, must_be_zero),
            ("COMPUTE_PGM_RSRC1 bits 27-28", 27, 2, reserved),
            (
                "COMPUTE_PGM_RSRC1.WGP_MODE",
                29,
                1,
                "GFX10 and later only; reserved, must be 0",
            ),
            (
                "COMPUTE_PGM_RSRC1.MEM_ORDERED",
                30,
                1,
                "GFX10 and later only; reserved, must be 0",
            ),
            (
                "COMPUTE_PGM_RSRC1.FWD_PROGRESS",
                31,
                1,
                "GFX10 and later only; reserved, must be 0",
            ),
        ] {
            check(
                field,
                u64::from(bits(r1, lo, width)),
                bits(r1, lo, width) == 0,
                why,
            );
        }
        let sgpr_blocks = bits(r1, 6, 4);
        check(
            "COMPUTE_PGM_RSRC1.GRANULATED_WAVEFRONT_SGPR_COUNT",
            u64::from(sgpr_blocks),
            (sgpr_blocks + 1) * 8 <= 112,
            &format!(
                "{} SGPRs; a GFX9 wave has at most 112",
                (sgpr_blocks + 1) * 8
            ),
        );
        let r2 = self.compute_pgm_rsrc2;
        for (field, lo, width, why) in [
            (
                "COMPUTE_PGM_RSRC2.ENABLE_TRAP_HANDLER",
                6,
                1,
                "must be 0 (CP sets it when a trap handler is installed)",
            ),
            (
                "COMPUTE_PGM_RSRC2.ENABLE_EXCEPTION_ADDRESS_WATCH",
                13,
                1,
                must_be_zero,
            ),
            (
                "COMPUTE_PGM_RSRC2.ENABLE_EXCEPTION_MEMORY",
                14,
                1,
                must_be_zero,
            ),
            (
                "COMPUTE_PGM_RSRC2.GRANULATED_LDS_SIZE",
                15,
                9,
                "must be 0 (CP uses the dispatch packet's size)",
            ),
            ("COMPUTE_PGM_RSRC2 bit 31", 31, 1, reserved),
        ] {
            check(
                field,
                u64::from(bits(r2, lo, width)),
                bits(r2, lo, width) == 0,
                why,
            );
        }
        let r3 = self.compute_pgm_rsrc3;
        if family == Family::Gfx9 {
            check(
                "COMPUTE_PGM_RSRC3",
                u64::from(r3),
                r3 == 0,
                &format!("reserved on {processor}, must be 0"),
            );
        } else {
            check(
                "COMPUTE_PGM_RSRC3 bits 6-15",
                u64::from(bits(r3, 6, 10)),
                bits(r3, 6, 10) == 0,
                reserved,
            );
            check(
                "COMPUTE_PGM_RSRC3 bits 17-31",
                u64::from(bits(r3, 17, 15)),
                bits(r3, 17, 15) == 0,
                reserved,
            );
            let accum_offset = (bits(r3, 0, 6) + 1) * 4;
            let vgprs = vgpr_count(r1, family, false);
            check(
                "COMPUTE_PGM_RSRC3.ACCUM_OFFSET",
                u64::from(bits(r3, 0, 6)),
                accum_offset <= vgprs,
                &format!("AGPRs from v{accum_offset}, past the {vgprs} registers COMPUTE_PGM_RSRC1 allocates"),
            );
        }
        let lds = if processor == "gfx950" {
            160 * 1024
        } else {
            64 * 1024
        };
        check(
            "GROUP_SEGMENT_FIXED_SIZE",
            u64::from(self.group_segment_fixed_size),
            self.group_segment_fixed_size <= lds,
            &format!(
                "more LDS than the {} KiB a {processor} work-group can have",
                lds / 1024
            ),
        );
        out
    }
}

fn bits(v: u32, lo: u32, width: u32) -> u32 {
    (v >> lo) & ((1u32 << width) - 1)
}

fn bit(v: u32, b: u32) -> bool {
    v >> b & 1 != 0
}

/// VGPRs (plus AGPRs on gfx90a/gfx94x, whose register file is unified) the
/// granulated count in COMPUTE_PGM_RSRC1 allocates.
pub fn vgpr_count(rsrc1: u32, family: Family, wave32: bool) -> u32 {
    let granule = match family {
        Family::Gfx90a | Family::Gfx94x => 8,
        Family::Gfx10 | Family::Gfx11 | Family::Gfx12 | Family::Gfx13 if wave32 => 8,
        _ => 4,
    };
    (bits(rsrc1, 0, 6) + 1) * granule
}

/// SGPRs the granulated count in COMPUTE_PGM_RSRC1 allocates (gfx6-gfx9; gfx10+
/// always allocate all SGPRs and the field is 0, so `None`).
pub fn sgpr_count(rsrc1: u32, family: Family) -> Option<u32> {
    match family {
        Family::Gfx10 | Family::Gfx11 | Family::Gfx12 | Family::Gfx13 => None,
        _ => Some((bits(rsrc1, 6, 4) + 1) * 8),
    }
}

/// A descriptor with every field decoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecodedDescriptor {
    /// First AGPR in the unified register file (gfx90a/gfx94x).
    pub accum_offset: Option<u32>,
    pub kernarg_preload_length: u16,
    pub kernarg_preload_offset: u16,
    pub properties: KernelCodeProperties,
    pub rsrc1: Rsrc1,
    pub rsrc2: Rsrc2,
    pub rsrc3: Rsrc3,
    pub sgpr_count: Option<u32>,
    /// Registers allocated per work-item (VGPR+AGPR on gfx90a/gfx94x).
    pub vgpr_count: u32,
}

/// COMPUTE_PGM_RSRC1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rsrc1 {
    pub bulky: bool,
    pub cdbg_user: bool,
    pub debug_mode: bool,
    pub enable_dx10_clamp: bool,
    pub enable_ieee_mode: bool,
    pub float_denorm_mode_16_64: u32,
    pub float_denorm_mode_32: u32,
    pub float_round_mode_16_64: u32,
    pub float_round_mode_32: u32,
    pub fp16_ovfl: bool,
    pub fwd_progress: bool,
    pub granulated_wavefront_sgpr_count: u32,
    pub granulated_workitem_vgpr_count: u32,
    pub mem_ordered: bool,
    pub priority: u32,
    #[serde(rename = "priv")]
    pub priv_: bool,
    pub wgp_mode: bool,
}

impl Rsrc1 {
    pub fn decode(v: u32) -> Rsrc1 {
        Rsrc1 {
            granulated_workitem_vgpr_count: bits(v, 0, 6),
            granulated_wavefront_sgpr_count: bits(v, 6, 4),
            priority: bits(v, 10, 2),
            float_round_mode_32: bits(v, 12, 2),
            float_round_mode_16_64: bits(v, 14, 2),
            float_denorm_mode_32: bits(v, 16, 2),
            float_denorm_mode_16_64: bits(v, 18, 2),
            priv_: bit(v, 20),
            enable_dx10_clamp: bit(v, 21),
            debug_mode: bit(v, 22),
            enable_ieee_mode: bit(v, 23),
            bulky: bit(v, 24),
            cdbg_user: bit(v, 25),
            fp16_ovfl: bit(v, 26),
            wgp_mode: bit(v, 29),
            mem_ordered: bit(v, 30),
            fwd_progress: bit(v, 31),
        }
    }
}

/// COMPUTE_PGM_RSRC2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rsrc2 {
    pub enable_exception_address_watch: bool,
    pub enable_exception_fp_denormal_source: bool,
    pub enable_exception_ieee_754_fp_division_by_zero: bool,
    pub enable_exception_ieee_754_fp_inexact: bool,
    pub enable_exception_ieee_754_fp_invalid_operation: bool,
    pub enable_exception_ieee_754_fp_overflow: bool,
    pub enable_exception_ieee_754_fp_underflow: bool,
    pub enable_exception_int_divide_by_zero: bool,
    pub enable_exception_memory: bool,
    pub enable_private_segment: bool,
    pub enable_sgpr_workgroup_id_x: bool,
    pub enable_sgpr_workgroup_id_y: bool,
    pub enable_sgpr_workgroup_id_z: bool,
    pub enable_sgpr_workgroup_info: bool,
    pub enable_trap_handler: bool,
    pub enable_vgpr_workitem_id: u32,
    pub granulated_lds_size: u32,
    pub user_sgpr_count: u32,
}

impl Rsrc2 {
    pub fn decode(v: u32) -> Rsrc2 {
        Rsrc2 {
            enable_private_segment: bit(v, 0),
            user_sgpr_count: bits(v, 1, 5),
            enable_trap_handler: bit(v, 6),
            enable_sgpr_workgroup_id_x: bit(v, 7),
            enable_sgpr_workgroup_id_y: bit(v, 8),
            enable_sgpr_workgroup_id_z: bit(v, 9),
            enable_sgpr_workgroup_info: bit(v, 10),
            enable_vgpr_workitem_id: bits(v, 11, 2),
            enable_exception_address_watch: bit(v, 13),
            enable_exception_memory: bit(v, 14),
            granulated_lds_size: bits(v, 15, 9),
            enable_exception_ieee_754_fp_invalid_operation: bit(v, 24),
            enable_exception_fp_denormal_source: bit(v, 25),
            enable_exception_ieee_754_fp_division_by_zero: bit(v, 26),
            enable_exception_ieee_754_fp_overflow: bit(v, 27),
            enable_exception_ieee_754_fp_underflow: bit(v, 28),
            enable_exception_ieee_754_fp_inexact: bit(v, 29),
            enable_exception_int_divide_by_zero: bit(v, 30),
        }
    }
}

/// COMPUTE_PGM_RSRC3, whose layout depends on the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "layout")]
pub enum Rsrc3 {
    /// gfx90a, gfx94x.
    Gfx90a { accum_offset: u32, tg_split: bool },
    /// gfx10, gfx11, gfx12.
    Gfx10Plus {
        shared_vgpr_count: u32,
        inst_pref_size: u32,
        trap_on_start: bool,
        trap_on_end: bool,
        image_op: bool,
    },
    /// Families where the register is reserved (must be 0).
    Reserved { raw: u32 },
}

impl Rsrc3 {
    pub fn decode(v: u32, family: Family) -> Rsrc3 {
        match family {
            Family::Gfx90a | Family::Gfx94x => Rsrc3::Gfx90a {
                accum_offset: bits(v, 0, 6),
                tg_split: bit(v, 16),
            },
            Family::Gfx10 | Family::Gfx11 | Family::Gfx12 | Family::Gfx13 => Rsrc3::Gfx10Plus {
                shared_vgpr_count: bits(v, 0, 4),
                inst_pref_size: if family == Family::Gfx10 {
                    0
                } else {
                    bits(v, 4, 6)
                },
                trap_on_start: bit(v, 10),
                trap_on_end: bit(v, 11),
                image_op: bit(v, 31),
            },
            _ => Rsrc3::Reserved { raw: v },
        }
    }
}

/// kernel_code_properties bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelCodeProperties {
    pub enable_sgpr_dispatch_id: bool,
    pub enable_sgpr_dispatch_ptr: bool,
    pub enable_sgpr_flat_scratch_init: bool,
    pub enable_sgpr_kernarg_segment_ptr: bool,
    pub enable_sgpr_private_segment_buffer: bool,
    pub enable_sgpr_private_segment_size: bool,
    pub enable_sgpr_queue_ptr: bool,
    pub enable_wavefront_size32: bool,
    pub uses_dynamic_stack: bool,
}

impl KernelCodeProperties {
    pub fn decode(v: u16) -> KernelCodeProperties {
        let v = u32::from(v);
        KernelCodeProperties {
            enable_sgpr_private_segment_buffer: bit(v, 0),
            enable_sgpr_dispatch_ptr: bit(v, 1),
            enable_sgpr_queue_ptr: bit(v, 2),
            enable_sgpr_kernarg_segment_ptr: bit(v, 3),
            enable_sgpr_dispatch_id: bit(v, 4),
            enable_sgpr_flat_scratch_init: bit(v, 5),
            enable_sgpr_private_segment_size: bit(v, 6),
            enable_wavefront_size32: bit(v, 10),
            uses_dynamic_stack: bit(v, 11),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_every_byte() {
        let bytes: Vec<u8> = (0..64u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(5))
            .collect();
        let kd = KernelDescriptor::parse(&bytes, 0).unwrap();
        assert_eq!(kd.to_bytes().as_slice(), bytes.as_slice());
        assert!(KernelDescriptor::parse(&bytes[..63], 7).unwrap_err().offset == Some(7));
    }

    /// A layout worked out by hand from AMDGPUUsage's table: private
    /// segment buffer (4), dispatch pointer (2), kernarg pointer (2), and
    /// the system SGPRs after a user SGPR count of 9 (one unused).
    #[test]
    fn initial_sgprs_follow_the_enable_bits() {
        let mut b = [0u8; 64];
        // COMPUTE_PGM_RSRC2 (byte 52): private segment, user SGPRs 9,
        // workgroup ids x and z, workgroup info.
        let rsrc2: u32 = 1 | 9 << 1 | 1 << 7 | 1 << 9 | 1 << 10;
        b[52..56].copy_from_slice(&rsrc2.to_le_bytes());
        // kernel_code_properties (byte 56): buffer, dispatch ptr, kernarg ptr.
        b[56..58].copy_from_slice(&0b1011u16.to_le_bytes());
        let kd = KernelDescriptor::parse(&b, 0).unwrap();
        let s = kd.decode(Family::Gfx90a, false).initial_sgprs();
        assert_eq!(s.private_segment_buffer, Some(0));
        assert_eq!(s.dispatch_ptr, Some(4));
        assert_eq!(s.queue_ptr, None);
        assert_eq!(s.kernarg_segment_ptr, Some(6));
        assert_eq!(s.workgroup_id, [Some(9), None, Some(10)]);
        assert_eq!(s.workgroup_info, Some(11));
        assert_eq!(s.private_segment_wave_offset, Some(12));
    }
}
