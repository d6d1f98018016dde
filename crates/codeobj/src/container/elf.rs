//! Just enough of the ELF header to tell AMDGPU code objects from host files and
//! to name a code object's target when no bundle ID names it.

use crate::target::{TargetId, EF_AMDGPU_MACH};

const EM_AMDGPU: u16 = 224;
/// What the reader's full target ID strings start with; bundle IDs carry the rest.
const TRIPLE_PREFIX: &str = "amdgcn-amd-amdhsa--";
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
    if abi_version >= ABI_VERSION_V4 {
        let id = TargetId::from_e_flags(flags).ok()?.to_string();
        return Some(id.strip_prefix(TRIPLE_PREFIX).unwrap_or(&id).to_string());
    }
    // Code object v3: one bit each for xnack and sramecc, set means on.
    let processor = TargetId::from_e_flags(flags & EF_AMDGPU_MACH)
        .ok()?
        .processor;
    let mut id = processor.name().to_string();
    for (name, bit) in [("sramecc", 0x200), ("xnack", 0x100)] {
        if flags & bit != 0 {
            id.push_str(&format!(":{name}+"));
        }
    }
    Some(id)
}
