//! Host ELF files (executables, shared libraries, relocatable objects) and the
//! device code they embed.

use object::{Object, ObjectSection, ObjectSymbol};

use super::read::{u32_at, u64_at};
use crate::{Error, Result};

/// Section names whose contents are a sequence of offload bundles or CCOBs,
/// each aligned to 4096 bytes: the fat binary `__hipRegisterFatBinary` registers.
pub const FATBIN_SECTIONS: &[&str] = &[".hip_fatbin", "__hip_fatbin"];

/// In relocatable objects made with `-fgpu-rdc`, each device entry of the
/// object-file bundle is a section named this prefix plus the bundle entry ID.
pub const BUNDLE_SECTION_PREFIX: &str = "__CLANG_OFFLOAD_BUNDLE__";

/// Device code found in a host file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Embedded<'data> {
    /// A fat binary section: bundles and CCOBs one after another.
    Fatbin {
        section: String,
        offset: u64,
        data: &'data [u8],
    },
    /// One entry of an object-file bundle, held in its own section.
    BundleSection {
        section: String,
        id: String,
        offset: u64,
        data: &'data [u8],
    },
}

/// Lists the device code sections of the host ELF `data`, in section order.
pub fn embedded(data: &[u8]) -> Result<Vec<Embedded<'_>>> {
    let file = object::File::parse(data).map_err(|e| Error::at(0, format!("host ELF: {e}")))?;
    let mut found = Vec::new();
    for section in file.sections() {
        let Ok(name) = section.name() else { continue };
        let is_fatbin = FATBIN_SECTIONS.contains(&name);
        let bundle_id = name.strip_prefix(BUNDLE_SECTION_PREFIX);
        if !is_fatbin && bundle_id.is_none() {
            continue;
        }
        let offset = section.file_range().map(|(o, _)| o).unwrap_or(0);
        let bytes = section
            .data()
            .map_err(|e| Error::at(offset, format!("section {name}: {e}")))?;
        found.push(match bundle_id {
            Some(id) => Embedded::BundleSection {
                section: name.to_string(),
                id: id.to_string(),
                offset,
                data: bytes,
            },
            None => Embedded::Fatbin {
                section: name.to_string(),
                offset,
                data: bytes,
            },
        });
    }
    Ok(found)
}

/// The section of HIP fat binary wrappers: one 24-byte record per fat binary
/// (translation unit), the argument `__hipRegisterFatBinary` gets.
pub const WRAPPER_SECTION: &str = ".hipFatBinSegment";
/// `HIPF` read as a little-endian u32.
const WRAPPER_MAGIC: u32 = 0x4849_5046;
/// u32 magic, u32 version, u64 fat binary pointer, u64 unused.
const WRAPPER_LEN: usize = 24;

/// One record of [`WRAPPER_SECTION`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatbinWrapper {
    /// File offset of the record.
    pub offset: u64,
    pub version: u32,
    /// Address of the fat binary it registers; for relocatable objects, the
    /// offset inside the section its relocation names.
    pub fatbin_address: u64,
    /// File offset of that fat binary, if it lies in a section with file contents.
    pub fatbin_offset: Option<u64>,
}

/// Reads the fat binary wrappers of the host ELF `data` (empty if it has none).
/// The pointer field is taken as written, else from its dynamic RELATIVE
/// relocation (linked files) or its relocation (relocatable objects).
pub fn fatbin_wrappers(data: &[u8]) -> Result<Vec<FatbinWrapper>> {
    let file = object::File::parse(data).map_err(|e| Error::at(0, format!("host ELF: {e}")))?;
    let Some(section) = file.section_by_name(WRAPPER_SECTION) else {
        return Ok(Vec::new());
    };
    let base = section.file_range().map_or(0, |(o, _)| o);
    let bytes = section
        .data()
        .map_err(|e| Error::at(base, format!("section {WRAPPER_SECTION}: {e}")))?;
    // Where a pointer field's value comes from when the field itself holds 0.
    let relocated = |field: u64| -> Option<(u64, Option<u64>)> {
        if file.kind() == object::ObjectKind::Relocatable {
            let (_, reloc) = section.relocations().find(|(at, _)| *at == field)?;
            let target = match reloc.target() {
                object::RelocationTarget::Symbol(i) => {
                    let symbol = file.symbol_by_index(i).ok()?;
                    (symbol.section_index()?, symbol.address())
                }
                object::RelocationTarget::Section(i) => (i, 0),
                _ => return None,
            };
            let in_section = target.1.checked_add_signed(reloc.addend())?;
            let start = file.section_by_index(target.0).ok()?.file_range()?.0;
            return Some((in_section, Some(start + in_section)));
        }
        let address = section.address() + field;
        let (_, reloc) = file.dynamic_relocations()?.find(|(at, _)| *at == address)?;
        let value = u64::try_from(reloc.addend()).ok()?;
        Some((value, file_offset(&file, value)))
    };
    let rebased = |e: Error| super::read::rebase(e, base).within(WRAPPER_SECTION);
    let mut wrappers = Vec::new();
    for at in (0..bytes.len() as u64).step_by(WRAPPER_LEN) {
        let magic = u32_at(bytes, at, "fat binary wrapper magic").map_err(rebased)?;
        if magic != WRAPPER_MAGIC {
            let what = format!("fat binary wrapper magic is {magic:#x}, not HIPF");
            return Err(Error::at(base + at, what).within(WRAPPER_SECTION));
        }
        let version = u32_at(bytes, at + 4, "fat binary wrapper version").map_err(rebased)?;
        let pointer = u64_at(bytes, at + 8, "fat binary pointer").map_err(rebased)?;
        let (fatbin_address, fatbin_offset) = match pointer {
            0 => relocated(at + 8).unwrap_or((0, None)),
            p => (p, file_offset(&file, p)),
        };
        wrappers.push(FatbinWrapper {
            offset: base + at,
            version,
            fatbin_address,
            fatbin_offset,
        });
    }
    Ok(wrappers)
}

/// The file offset of `address` in a linked file, via the section holding it.
fn file_offset(file: &object::File<'_>, address: u64) -> Option<u64> {
    file.sections().find_map(|s| {
        let (start, size) = s.file_range()?;
        let delta = address.checked_sub(s.address())?;
        (delta < size && s.address() != 0).then_some(start + delta)
    })
}
