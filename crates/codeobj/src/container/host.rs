//! Host ELF files (executables, shared libraries, relocatable objects) and the
//! device code they embed.

use object::{Object, ObjectSection};

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
