//! Symbols of `.symtab` and `.dynsym`, classified the way a GPU loader sees them:
//! kernels, kernel descriptors, device functions, variables and undefined symbols.

use std::collections::HashMap;

use serde::Serialize;

use crate::elf::{self, Section, SHN_UNDEF, SHN_XINDEX, SYM_SIZE};
use crate::{Error, Result};

pub const STT_NOTYPE: u8 = 0;
pub const STT_OBJECT: u8 = 1;
pub const STT_FUNC: u8 = 2;
pub const STT_SECTION: u8 = 3;
pub const STT_FILE: u8 = 4;
pub const STB_LOCAL: u8 = 0;
pub const STB_GLOBAL: u8 = 1;
pub const STB_WEAK: u8 = 2;

/// Which table a symbol came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SymbolTable {
    Symtab,
    Dynsym,
}

/// What a symbol is to a GPU loader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SymbolKind {
    /// A kernel's entry function `X` (there is a descriptor `X.kd`).
    Kernel,
    /// A kernel descriptor `X.kd`.
    KernelDescriptor,
    /// A function without a descriptor (callable from kernels), local or global.
    DeviceFunction,
    /// A data object that is not a kernel descriptor.
    Variable,
    /// Referenced here, defined elsewhere.
    Undefined,
    /// Section, file and untyped symbols.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Binding {
    Local,
    Global,
    Weak,
    Other(u8),
}

impl Binding {
    pub fn from_raw(b: u8) -> Binding {
        match b {
            STB_LOCAL => Binding::Local,
            STB_GLOBAL => Binding::Global,
            STB_WEAK => Binding::Weak,
            b => Binding::Other(b),
        }
    }

    pub fn raw(self) -> u8 {
        match self {
            Binding::Local => STB_LOCAL,
            Binding::Global => STB_GLOBAL,
            Binding::Weak => STB_WEAK,
            Binding::Other(b) => b,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    Default,
    Internal,
    Hidden,
    Protected,
}

impl Visibility {
    pub fn from_raw(v: u8) -> Visibility {
        match v & 3 {
            0 => Visibility::Default,
            1 => Visibility::Internal,
            2 => Visibility::Hidden,
            _ => Visibility::Protected,
        }
    }

    pub fn raw(self) -> u8 {
        self as u8
    }
}

/// One ELF symbol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Symbol<'data> {
    pub binding: Binding,
    /// `STT_*` value.
    pub elf_type: u8,
    /// Index in its table.
    pub index: usize,
    pub kind: SymbolKind,
    pub name: &'data str,
    /// Name of the defining section, if it is a real section.
    pub section: Option<&'data str>,
    /// `st_shndx` (0 = undefined, 0xfff1 = absolute, ...).
    pub shndx: u16,
    pub size: u64,
    pub table: SymbolTable,
    /// Address (shared objects) or offset in its section (relocatable objects).
    pub value: u64,
    pub visibility: Visibility,
}

impl Symbol<'_> {
    pub fn is_defined(&self) -> bool {
        self.shndx != SHN_UNDEF
    }
}

/// Both symbol tables with name and per-kind indexes built once at parse time.
/// Serializes as the list of all symbols.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(transparent)]
pub struct Symbols<'data> {
    /// Every symbol of both tables, tables in section order (index 0 skipped).
    all: Vec<Symbol<'data>>,
    #[serde(skip)]
    by_name: HashMap<&'data str, usize>,
    /// One entry per distinct name, for each kind (indexes into `all`).
    #[serde(skip)]
    by_kind: HashMap<SymbolKind, Vec<usize>>,
    /// Where each table's symbols are in `all` (each table is contiguous).
    #[serde(skip)]
    tables: Vec<(SymbolTable, std::ops::Range<usize>)>,
}

/// One raw entry before classification.
struct Raw<'d> {
    name: &'d str,
    value: u64,
    size: u64,
    info: u8,
    other: u8,
    shndx: u16,
}

fn read_table<'d>(
    data: &'d [u8],
    sections: &[Section<'d>],
    sec: &Section<'d>,
) -> Result<Vec<Raw<'d>>> {
    if sec.entsize != SYM_SIZE as u64 {
        return Err(Error::at(
            sec.offset,
            format!(
                "symbol table {}: sh_entsize {} is not 24",
                sec.name, sec.entsize
            ),
        ));
    }
    let bytes = elf::slice(data, sec.offset, sec.size, "symbol table")?;
    let strtab = sections.get(sec.link as usize).ok_or_else(|| {
        Error::at(
            sec.offset,
            format!(
                "symbol table {}: sh_link {} is not a section",
                sec.name, sec.link
            ),
        )
    })?;
    let strings = elf::slice(
        data,
        strtab.offset,
        strtab.file_size(),
        "symbol string table",
    )?;
    let mut out = Vec::with_capacity(bytes.len() / SYM_SIZE);
    for (i, e) in bytes.chunks_exact(SYM_SIZE).enumerate() {
        let at = sec.offset + (i * SYM_SIZE) as u64;
        let name_index = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
        let name = elf::str_at(strings, name_index, strtab.offset).map_err(|err| {
            Error::at(
                at,
                format!("symbol {i} of {}: name: {}", sec.name, err.what),
            )
        })?;
        out.push(Raw {
            name,
            info: e[4],
            other: e[5],
            shndx: u16::from_le_bytes([e[6], e[7]]),
            value: elf::u64_at(e, 8, "st_value")?,
            size: elf::u64_at(e, 16, "st_size")?,
        });
    }
    Ok(out)
}

impl<'data> Symbols<'data> {
    /// Reads `.symtab` and `.dynsym` (whichever exist) and classifies every symbol.
    pub fn parse(data: &'data [u8], sections: &[Section<'data>]) -> Result<Symbols<'data>> {
        let mut tables = Vec::new();
        for sec in sections {
            let table = match sec.sh_type {
                elf::SHT_SYMTAB => SymbolTable::Symtab,
                elf::SHT_DYNSYM => SymbolTable::Dynsym,
                _ => continue,
            };
            tables.push((table, sec.offset, read_table(data, sections, sec)?));
        }
        // Kernels are functions with a matching `.kd` object anywhere in either table.
        let mut descriptors = std::collections::HashSet::new();
        for (_, _, raws) in &tables {
            for r in raws {
                if r.info & 0xf == STT_OBJECT && r.shndx != SHN_UNDEF {
                    if let Some(k) = r.name.strip_suffix(".kd") {
                        descriptors.insert(k);
                    }
                }
            }
        }
        let mut symbols = Symbols::default();
        for (table, offset, raws) in tables {
            let start = symbols.all.len();
            for (index, r) in raws.into_iter().enumerate().skip(1) {
                let elf_type = r.info & 0xf;
                let kind = if r.shndx == SHN_UNDEF {
                    SymbolKind::Undefined
                } else {
                    match elf_type {
                        STT_FUNC if descriptors.contains(r.name) => SymbolKind::Kernel,
                        STT_FUNC => SymbolKind::DeviceFunction,
                        STT_OBJECT if r.name.ends_with(".kd") => SymbolKind::KernelDescriptor,
                        STT_OBJECT => SymbolKind::Variable,
                        _ => SymbolKind::Other,
                    }
                };
                let section = if r.shndx != SHN_UNDEF && r.shndx < elf::SHN_LORESERVE {
                    let s = sections.get(usize::from(r.shndx)).ok_or_else(|| {
                        Error::at(
                            offset + (index * SYM_SIZE) as u64 + 6,
                            format!("symbol '{}': st_shndx {} is not a section", r.name, r.shndx),
                        )
                    })?;
                    Some(s.name)
                } else {
                    if r.shndx == SHN_XINDEX {
                        return Err(Error::at(
                            offset + (index * SYM_SIZE) as u64 + 6,
                            "SHN_XINDEX symbols (SHT_SYMTAB_SHNDX) are not supported",
                        ));
                    }
                    None
                };
                symbols.push(Symbol {
                    name: r.name,
                    kind,
                    table,
                    index,
                    value: r.value,
                    size: r.size,
                    elf_type,
                    binding: Binding::from_raw(r.info >> 4),
                    visibility: Visibility::from_raw(r.other),
                    shndx: r.shndx,
                    section,
                });
            }
            symbols.tables.push((table, start..symbols.all.len()));
        }
        Ok(symbols)
    }

    fn push(&mut self, s: Symbol<'data>) {
        let i = self.all.len();
        let first_of_name = match self.by_name.get(s.name) {
            None => true,
            // A definition wins over an undefined reference of the same name.
            Some(&j) => !self.all[j].is_defined() && s.is_defined(),
        };
        if first_of_name && !s.name.is_empty() {
            if let Some(j) = self.by_name.insert(s.name, i) {
                let old_kind = self.all[j].kind;
                if let Some(v) = self.by_kind.get_mut(&old_kind) {
                    v.retain(|&x| x != j);
                }
            }
            self.by_kind.entry(s.kind).or_default().push(i);
        }
        self.all.push(s);
    }

    /// Every symbol of both tables, in section order.
    pub fn all(&self) -> &[Symbol<'data>] {
        &self.all
    }

    /// The symbol called `name` (a definition if there is one, else the first seen).
    pub fn get(&self, name: &str) -> Option<&Symbol<'data>> {
        self.by_name.get(name).map(|&i| &self.all[i])
    }

    /// Symbols of one kind, one per distinct name, in table order.
    pub fn of_kind(&self, kind: SymbolKind) -> impl Iterator<Item = &Symbol<'data>> + '_ {
        self.by_kind
            .get(&kind)
            .into_iter()
            .flatten()
            .map(move |&i| &self.all[i])
    }

    /// Symbols of one table, in index order (index 0 omitted): symbol `n` is element `n - 1`.
    pub fn in_table(&self, table: SymbolTable) -> &[Symbol<'data>] {
        self.tables
            .iter()
            .find(|(t, _)| *t == table)
            .and_then(|(_, r)| self.all.get(r.clone()))
            .unwrap_or(&[])
    }
}
