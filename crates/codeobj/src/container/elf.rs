//! Just enough of the ELF header to tell AMDGPU code objects from host files and
//! to name a code object's target when no bundle ID names it.

const EM_AMDGPU: u16 = 224;
const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `EI_ABIVERSION` values from code object v4 on use the 2-bit feature encodings.
const ABI_VERSION_V4: u8 = 2;

pub fn is_elf(data: &[u8]) -> bool {
    data.starts_with(b"\x7fELF")
}

/// A little-endian ELF64 whose `e_machine` is EM_AMDGPU.
pub fn is_amdgpu(data: &[u8]) -> bool {
    is_elf(data)
        && data.get(4) == Some(&2)
        && data.get(5) == Some(&1)
        && machine(data) == Some(EM_AMDGPU)
}

fn machine(data: &[u8]) -> Option<u16> {
    let b = data.get(18..20)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

/// The target ID (`gfx90a:xnack-`) that `e_flags` encodes, for HSA code objects.
pub fn target_id(data: &[u8]) -> Option<String> {
    if !is_amdgpu(data) || *data.get(7)? != ELFOSABI_AMDGPU_HSA {
        return None;
    }
    let abi_version = *data.get(8)?;
    let flags = u32::from_le_bytes(data.get(48..52)?.try_into().ok()?);
    let mut id = processor(flags & 0xff)?.to_string();
    if abi_version >= ABI_VERSION_V4 {
        // Two-bit settings: unsupported, any, off, on. Only off/on appear in a target ID.
        for (name, shift) in [("sramecc", 10), ("xnack", 8)] {
            match (flags >> shift) & 3 {
                2 => id.push_str(&format!(":{name}-")),
                3 => id.push_str(&format!(":{name}+")),
                _ => {}
            }
        }
    } else {
        // Code object v3: one bit each, set means on.
        for (name, bit) in [("sramecc", 0x200), ("xnack", 0x100)] {
            if flags & bit != 0 {
                id.push_str(&format!(":{name}+"));
            }
        }
    }
    Some(id)
}

/// `EF_AMDGPU_MACH` values of the processors LLVM 19 knows.
fn processor(mach: u32) -> Option<&'static str> {
    Some(match mach {
        0x20 => "gfx600",
        0x21 => "gfx601",
        0x22 => "gfx700",
        0x23 => "gfx701",
        0x24 => "gfx702",
        0x25 => "gfx703",
        0x26 => "gfx704",
        0x28 => "gfx801",
        0x29 => "gfx802",
        0x2a => "gfx803",
        0x2b => "gfx810",
        0x2c => "gfx900",
        0x2d => "gfx902",
        0x2e => "gfx904",
        0x2f => "gfx906",
        0x30 => "gfx908",
        0x31 => "gfx909",
        0x32 => "gfx90c",
        0x33 => "gfx1010",
        0x34 => "gfx1011",
        0x35 => "gfx1012",
        0x36 => "gfx1030",
        0x37 => "gfx1031",
        0x38 => "gfx1032",
        0x39 => "gfx1033",
        0x3a => "gfx602",
        0x3b => "gfx705",
        0x3c => "gfx805",
        0x3d => "gfx1035",
        0x3e => "gfx1034",
        0x3f => "gfx90a",
        0x40 => "gfx940",
        0x41 => "gfx1100",
        0x42 => "gfx1013",
        0x43 => "gfx1150",
        0x44 => "gfx1103",
        0x45 => "gfx1036",
        0x46 => "gfx1101",
        0x47 => "gfx1102",
        0x48 => "gfx1200",
        0x4a => "gfx1151",
        0x4b => "gfx941",
        0x4c => "gfx942",
        0x4e => "gfx1201",
        0x51 => "gfx9-generic",
        0x52 => "gfx10-1-generic",
        0x53 => "gfx10-3-generic",
        0x54 => "gfx11-generic",
        0x55 => "gfx1152",
        0x59 => "gfx12-generic",
        _ => return None,
    })
}
