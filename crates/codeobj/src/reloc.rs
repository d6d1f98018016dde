//! AMDGPU relocations from `.rela.dyn` (shared objects) and `.rela.*` / `.rel.*`
//! sections (relocatable objects).

use serde::Serialize;

use crate::elf::{self, Section, RELA_SIZE, REL_SIZE};
use crate::symbols::{SymbolTable, Symbols};
use crate::{Error, Result};

/// An `R_AMDGPU_*` relocation type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RelocType(pub u32);

/// Names by number as in LLVM 19's ELFRelocs/AMDGPU.def (12 is unassigned; REL16 is 14).
const NAMES: [&str; 15] = [
    "R_AMDGPU_NONE",
    "R_AMDGPU_ABS32_LO",
    "R_AMDGPU_ABS32_HI",
    "R_AMDGPU_ABS64",
    "R_AMDGPU_REL32",
    "R_AMDGPU_REL64",
    "R_AMDGPU_ABS32",
    "R_AMDGPU_GOTPCREL",
    "R_AMDGPU_GOTPCREL32_LO",
    "R_AMDGPU_GOTPCREL32_HI",
    "R_AMDGPU_REL32_LO",
    "R_AMDGPU_REL32_HI",
    "",
    "R_AMDGPU_RELATIVE64",
    "R_AMDGPU_REL16",
];

impl RelocType {
    pub const NONE: RelocType = RelocType(0);
    pub const ABS32_LO: RelocType = RelocType(1);
    pub const ABS32_HI: RelocType = RelocType(2);
    pub const ABS64: RelocType = RelocType(3);
    pub const REL32: RelocType = RelocType(4);
    pub const REL64: RelocType = RelocType(5);
    pub const ABS32: RelocType = RelocType(6);
    pub const GOTPCREL: RelocType = RelocType(7);
    pub const GOTPCREL32_LO: RelocType = RelocType(8);
    pub const GOTPCREL32_HI: RelocType = RelocType(9);
    pub const REL32_LO: RelocType = RelocType(10);
    pub const REL32_HI: RelocType = RelocType(11);
    pub const RELATIVE64: RelocType = RelocType(13);
    pub const REL16: RelocType = RelocType(14);

    /// LLVM's name, or `None` for numbers LLVM does not define (12, > 14).
    pub fn name(self) -> Option<&'static str> {
        NAMES
            .get(self.0 as usize)
            .copied()
            .filter(|n| !n.is_empty())
    }

    /// Number of bytes the relocation writes.
    pub fn width(self) -> u64 {
        match self.0 {
            3 | 5 | 13 => 8,
            14 => 2,
            0 => 0,
            _ => 4,
        }
    }
}

impl Serialize for RelocType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self.name() {
            Some(n) => s.serialize_str(n),
            None => s.serialize_str(&format!("R_AMDGPU_UNKNOWN_{}", self.0)),
        }
    }
}

/// One relocation entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Relocation<'data> {
    pub addend: i64,
    /// True if the addend comes from the entry (RELA), false if it is implicit (REL).
    pub explicit_addend: bool,
    /// Where it applies: section offset (relocatable) or address (shared).
    pub offset: u64,
    /// The `.rela.*` section holding it.
    pub section: &'data str,
    /// The symbol's name (a section symbol's is its section's name, as LLVM prints it).
    pub symbol: Option<&'data str>,
    /// Index in the linked symbol table (0 = none).
    pub symbol_index: u32,
    /// The symbol's value, if it is defined here (section offset in relocatable objects).
    pub symbol_value: Option<u64>,
    /// The section it patches (relocatable objects; `None` for dynamic relocations).
    pub target_section: Option<&'data str>,
    #[serde(rename = "type")]
    pub r_type: RelocType,
}

/// Reads every SHT_RELA and SHT_REL section.
pub fn parse<'d>(
    data: &'d [u8],
    sections: &[Section<'d>],
    symbols: &Symbols<'d>,
) -> Result<Vec<Relocation<'d>>> {
    let mut out = Vec::new();
    for sec in sections {
        let (entsize, explicit) = match sec.sh_type {
            elf::SHT_RELA => (RELA_SIZE, true),
            elf::SHT_REL => (REL_SIZE, false),
            _ => continue,
        };
        if sec.entsize != entsize as u64 {
            return Err(Error::at(
                sec.offset,
                format!("{}: sh_entsize {} is not {entsize}", sec.name, sec.entsize),
            ));
        }
        let table = match sections.get(sec.link as usize).map(|s| s.sh_type) {
            Some(elf::SHT_SYMTAB) => Some(SymbolTable::Symtab),
            Some(elf::SHT_DYNSYM) => Some(SymbolTable::Dynsym),
            _ => None,
        };
        // For relocatable objects sh_info names the patched section; SHF_INFO_LINK says so.
        let target_section = if sec.info != 0 {
            Some(
                sections
                    .get(sec.info as usize)
                    .ok_or_else(|| {
                        Error::at(
                            sec.offset,
                            format!("{}: sh_info {} is not a section", sec.name, sec.info),
                        )
                    })?
                    .name,
            )
        } else {
            None
        };
        let table_syms = table.map_or(&[][..], |t| symbols.in_table(t));
        let bytes = elf::slice(data, sec.offset, sec.size, "relocation section")?;
        for (i, e) in bytes.chunks_exact(entsize).enumerate() {
            let at = sec.offset + (i * entsize) as u64;
            let r_offset = elf::u64_at(e, 0, "r_offset")?;
            let info = elf::u64_at(e, 8, "r_info")?;
            let addend = if explicit {
                elf::u64_at(e, 16, "r_addend")? as i64
            } else {
                0
            };
            let symbol_index = (info >> 32) as u32;
            let mut symbol_value = None;
            let symbol = if symbol_index == 0 {
                None
            } else {
                // Symbol `n` of a table is entry n-1 of our list (index 0 is omitted).
                let s = table_syms.get(symbol_index as usize - 1).ok_or_else(|| {
                    Error::at(
                        at + 8,
                        format!(
                            "{} entry {i}: symbol index {symbol_index} out of range",
                            sec.name
                        ),
                    )
                })?;
                symbol_value = s.is_defined().then_some(s.value);
                // Section symbols have no name of their own; like LLVM, name them by their section.
                if s.elf_type == crate::symbols::STT_SECTION && s.name.is_empty() {
                    s.section.or(Some(s.name))
                } else {
                    Some(s.name)
                }
            };
            out.push(Relocation {
                section: sec.name,
                target_section,
                offset: r_offset,
                r_type: RelocType(info as u32),
                symbol_index,
                symbol,
                symbol_value,
                addend,
                explicit_addend: explicit,
            });
        }
    }
    Ok(out)
}
