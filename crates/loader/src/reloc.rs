//! The arithmetic of the dynamic relocations ld.lld emits for AMDGPU shared
//! objects (values from the AMDGPU ELF ABI: S symbol address, A addend,
//! P place, B load delta).

use inlay_codeobj::reloc::RelocType;

/// The bytes to write at P for `r_type`, or `None` if the loader does not
/// handle that type in a shared object.
pub fn compute(r_type: RelocType, s: u64, a: i64, p: u64, b: u64) -> Option<Vec<u8>> {
    let sa = s.wrapping_add_signed(a);
    let sap = sa.wrapping_sub(p);
    Some(match r_type {
        RelocType::RELATIVE64 => b.wrapping_add_signed(a).to_le_bytes().to_vec(),
        RelocType::ABS64 => sa.to_le_bytes().to_vec(),
        RelocType::ABS32 | RelocType::ABS32_LO => (sa as u32).to_le_bytes().to_vec(),
        RelocType::ABS32_HI => ((sa >> 32) as u32).to_le_bytes().to_vec(),
        RelocType::REL64 => sap.to_le_bytes().to_vec(),
        RelocType::REL32 | RelocType::REL32_LO => (sap as u32).to_le_bytes().to_vec(),
        RelocType::REL32_HI => ((sap >> 32) as u32).to_le_bytes().to_vec(),
        RelocType::NONE => Vec::new(),
        _ => return None,
    })
}

/// True if [`compute`] handles `r_type`.
pub fn supported(r_type: RelocType) -> bool {
    compute(r_type, 0, 0, 0, 0).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pc_relative_halves_recombine() {
        let (s, a, p) = (0x7000_1234_5000u64, -8i64, 0x7000_0000_1000u64);
        let lo = compute(RelocType::REL32_LO, s, a, p, 0).unwrap();
        let hi = compute(RelocType::REL32_HI, s, a, p, 0).unwrap();
        let v = u64::from(u32::from_le_bytes(lo.try_into().unwrap()))
            | (u64::from(u32::from_le_bytes(hi.try_into().unwrap())) << 32);
        assert_eq!(v, 0x1234_3ff8);
        assert!(compute(RelocType::GOTPCREL, s, a, p, 0).is_none());
        assert_eq!(
            compute(RelocType::RELATIVE64, 99, 16, 0, 0x1000).unwrap(),
            0x1010u64.to_le_bytes()
        );
    }
}
