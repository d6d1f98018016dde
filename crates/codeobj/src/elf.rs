//! The raw ELF64 little-endian layer: headers, section and program headers, string
//! tables, all read with bounds checks from a borrowed byte slice.
//!
//! Every read that input can break returns an [`Error`] carrying the file offset.

use serde::Serialize;

use crate::{Error, Result};

pub const ELFMAG: &[u8; 4] = b"\x7fELF";
pub const ELFCLASS64: u8 = 2;
pub const ELFDATA2LSB: u8 = 1;
pub const EM_AMDGPU: u16 = 224;
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
pub const ET_REL: u16 = 1;
pub const ET_EXEC: u16 = 2;
pub const ET_DYN: u16 = 3;

pub const SHT_NULL: u32 = 0;
pub const SHT_PROGBITS: u32 = 1;
pub const SHT_SYMTAB: u32 = 2;
pub const SHT_STRTAB: u32 = 3;
pub const SHT_RELA: u32 = 4;
pub const SHT_HASH: u32 = 5;
pub const SHT_DYNAMIC: u32 = 6;
pub const SHT_NOTE: u32 = 7;
pub const SHT_NOBITS: u32 = 8;
pub const SHT_REL: u32 = 9;
pub const SHT_DYNSYM: u32 = 11;
pub const SHT_GNU_HASH: u32 = 0x6fff_fff6;

pub const SHF_WRITE: u64 = 1;
pub const SHF_ALLOC: u64 = 2;
pub const SHF_EXECINSTR: u64 = 4;

pub const PT_LOAD: u32 = 1;
pub const PT_DYNAMIC: u32 = 2;
pub const PT_NOTE: u32 = 4;
pub const PT_PHDR: u32 = 6;

pub const SHN_UNDEF: u16 = 0;
pub const SHN_LORESERVE: u16 = 0xff00;
pub const SHN_ABS: u16 = 0xfff1;
pub const SHN_COMMON: u16 = 0xfff2;
pub const SHN_XINDEX: u16 = 0xffff;

pub const EHDR_SIZE: usize = 64;
pub const SHDR_SIZE: usize = 64;
pub const PHDR_SIZE: usize = 56;
pub const SYM_SIZE: usize = 24;
pub const RELA_SIZE: usize = 24;
pub const REL_SIZE: usize = 16;
pub const DYN_SIZE: usize = 16;

/// More sections, segments or symbols than this is treated as corrupt input
/// (real code objects have tens of sections and at most a few hundred thousand symbols).
pub const MAX_SECTIONS: usize = 1 << 16;
pub const MAX_SEGMENTS: usize = 1 << 12;

/// `len` bytes at `offset`, or an error naming what was being read.
pub fn slice<'d>(data: &'d [u8], offset: u64, len: u64, what: &str) -> Result<&'d [u8]> {
    let end = offset.checked_add(len);
    match end {
        Some(end) if end <= data.len() as u64 => Ok(&data[offset as usize..end as usize]),
        _ => Err(Error::at(
            offset,
            format!(
                "{what} ({len} bytes at {offset:#x}) extends past end of data ({} bytes)",
                data.len()
            ),
        )),
    }
}

fn array<const N: usize>(data: &[u8], offset: u64, what: &str) -> Result<[u8; N]> {
    let s = slice(data, offset, N as u64, what)?;
    let mut a = [0u8; N];
    a.copy_from_slice(s);
    Ok(a)
}

pub fn u16_at(data: &[u8], offset: u64, what: &str) -> Result<u16> {
    array(data, offset, what).map(u16::from_le_bytes)
}

pub fn u32_at(data: &[u8], offset: u64, what: &str) -> Result<u32> {
    array(data, offset, what).map(u32::from_le_bytes)
}

pub fn u64_at(data: &[u8], offset: u64, what: &str) -> Result<u64> {
    array(data, offset, what).map(u64::from_le_bytes)
}

/// The ELF file header fields that matter for code objects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileHeader {
    pub abi_version: u8,
    pub e_ehsize: u16,
    pub e_entry: u64,
    pub e_flags: u32,
    pub e_machine: u16,
    pub e_phentsize: u16,
    pub e_phnum: u16,
    pub e_phoff: u64,
    pub e_shentsize: u16,
    pub e_shnum: u16,
    pub e_shoff: u64,
    pub e_shstrndx: u16,
    pub e_type: u16,
    pub e_version: u32,
    pub os_abi: u8,
}

impl FileHeader {
    /// Reads and validates the header of an AMDGPU HSA ELF64 little-endian file.
    pub fn parse(data: &[u8]) -> Result<FileHeader> {
        if data.len() < 4 || &data[..4] != ELFMAG {
            return Err(Error::at(0, "not an ELF file (magic is not 7f 45 4c 46)"));
        }
        if data.len() < EHDR_SIZE {
            return Err(Error::at(
                0,
                format!(
                    "file is {} bytes, shorter than an ELF64 header (64)",
                    data.len()
                ),
            ));
        }
        if data[4] != ELFCLASS64 {
            return Err(Error::at(
                4,
                format!("EI_CLASS is {}, expected 2 (ELF64)", data[4]),
            ));
        }
        if data[5] != ELFDATA2LSB {
            return Err(Error::at(
                5,
                format!("EI_DATA is {}, expected 1 (little endian)", data[5]),
            ));
        }
        let h = FileHeader {
            os_abi: data[7],
            abi_version: data[8],
            e_type: u16_at(data, 16, "e_type")?,
            e_machine: u16_at(data, 18, "e_machine")?,
            e_version: u32_at(data, 20, "e_version")?,
            e_entry: u64_at(data, 24, "e_entry")?,
            e_phoff: u64_at(data, 32, "e_phoff")?,
            e_shoff: u64_at(data, 40, "e_shoff")?,
            e_flags: u32_at(data, 48, "e_flags")?,
            e_ehsize: u16_at(data, 52, "e_ehsize")?,
            e_phentsize: u16_at(data, 54, "e_phentsize")?,
            e_phnum: u16_at(data, 56, "e_phnum")?,
            e_shentsize: u16_at(data, 58, "e_shentsize")?,
            e_shnum: u16_at(data, 60, "e_shnum")?,
            e_shstrndx: u16_at(data, 62, "e_shstrndx")?,
        };
        if h.os_abi != ELFOSABI_AMDGPU_HSA {
            return Err(Error::at(
                7,
                format!("EI_OSABI is {}, expected 64 (AMDGPU HSA)", h.os_abi),
            ));
        }
        if !(2..=4).contains(&h.abi_version) {
            return Err(Error::at(
                8,
                format!(
                    "EI_ABIVERSION is {}, expected 2, 3 or 4 (code object v4, v5, v6)",
                    h.abi_version
                ),
            ));
        }
        if !matches!(h.e_type, ET_REL | ET_EXEC | ET_DYN) {
            return Err(Error::at(
                16,
                format!("e_type is {}, expected ET_REL, ET_EXEC or ET_DYN", h.e_type),
            ));
        }
        if h.e_machine != EM_AMDGPU {
            return Err(Error::at(
                18,
                format!("e_machine is {}, expected 224 (EM_AMDGPU)", h.e_machine),
            ));
        }
        if h.e_shnum > 0 && usize::from(h.e_shentsize) != SHDR_SIZE {
            return Err(Error::at(
                58,
                format!("e_shentsize is {}, expected 64", h.e_shentsize),
            ));
        }
        if h.e_phnum > 0 && usize::from(h.e_phentsize) != PHDR_SIZE {
            return Err(Error::at(
                54,
                format!("e_phentsize is {}, expected 56", h.e_phentsize),
            ));
        }
        Ok(h)
    }

    /// Code object version (4, 5, 6) from EI_ABIVERSION.
    pub fn code_object_version(&self) -> u8 {
        self.abi_version + 2
    }
}

/// A section header with its resolved name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Section<'data> {
    pub addr: u64,
    pub addralign: u64,
    pub entsize: u64,
    pub flags: u64,
    pub index: usize,
    pub info: u32,
    pub link: u32,
    pub name: &'data str,
    pub offset: u64,
    pub sh_name: u32,
    pub sh_type: u32,
    pub size: u64,
}

impl Section<'_> {
    /// Bytes the section occupies in the file (none for SHT_NOBITS).
    pub fn file_size(&self) -> u64 {
        if self.sh_type == SHT_NOBITS {
            0
        } else {
            self.size
        }
    }

    pub fn is_alloc(&self) -> bool {
        self.flags & SHF_ALLOC != 0
    }

    /// True if `addr` lies inside this allocated section.
    pub fn contains_addr(&self, addr: u64) -> bool {
        self.is_alloc() && addr >= self.addr && addr - self.addr < self.size.max(1)
    }
}

/// A program header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Segment {
    pub align: u64,
    pub filesz: u64,
    pub flags: u32,
    pub memsz: u64,
    pub offset: u64,
    pub p_type: u32,
    pub paddr: u64,
    pub vaddr: u64,
}

/// Reads all section headers and resolves their names through `.shstrtab`.
pub fn parse_sections<'d>(data: &'d [u8], h: &FileHeader) -> Result<Vec<Section<'d>>> {
    let mut count = usize::from(h.e_shnum);
    if h.e_shoff == 0 {
        return Ok(Vec::new());
    }
    // e_shnum == 0 with e_shoff set means the real count is in section 0's sh_size.
    if count == 0 {
        count = usize::try_from(u64_at(
            data,
            h.e_shoff + 32,
            "section 0 sh_size (extended section count)",
        )?)
        .unwrap_or(usize::MAX);
    }
    if count > MAX_SECTIONS {
        return Err(Error::at(
            60,
            format!("{count} sections is more than the limit of {MAX_SECTIONS}"),
        ));
    }
    let table = slice(
        data,
        h.e_shoff,
        (count * SHDR_SIZE) as u64,
        "section header table",
    )?;
    let mut sections = Vec::with_capacity(count);
    for index in 0..count {
        let at = h.e_shoff + (index * SHDR_SIZE) as u64;
        let r = |o: usize| &table[index * SHDR_SIZE + o..];
        let u32_ = |o: usize| u32::from_le_bytes([r(o)[0], r(o)[1], r(o)[2], r(o)[3]]);
        let u64_ = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&r(o)[..8]);
            u64::from_le_bytes(b)
        };
        let s = Section {
            index,
            name: "",
            sh_name: u32_(0),
            sh_type: u32_(4),
            flags: u64_(8),
            addr: u64_(16),
            offset: u64_(24),
            size: u64_(32),
            link: u32_(40),
            info: u32_(44),
            addralign: u64_(48),
            entsize: u64_(56),
        };
        if index > 0 && s.sh_type != SHT_NOBITS && s.sh_type != SHT_NULL {
            slice(data, s.offset, s.size, &format!("section {index} contents"))
                .map_err(|e| Error::at(at + 24, e.what))?;
        }
        sections.push(s);
    }
    let mut shstrndx = usize::from(h.e_shstrndx);
    if h.e_shstrndx == SHN_XINDEX {
        shstrndx = sections.first().map_or(0, |s| s.link as usize);
    }
    if shstrndx != 0 {
        let strtab = sections.get(shstrndx).cloned().ok_or_else(|| {
            Error::at(
                62,
                format!("e_shstrndx {shstrndx} is not a section (have {count})"),
            )
        })?;
        let strings = slice(
            data,
            strtab.offset,
            strtab.file_size(),
            "section name string table",
        )?;
        for s in sections.iter_mut() {
            s.name = str_at(strings, s.sh_name, strtab.offset)?;
        }
    }
    Ok(sections)
}

/// Reads all program headers.
pub fn parse_segments(data: &[u8], h: &FileHeader) -> Result<Vec<Segment>> {
    let count = usize::from(h.e_phnum);
    if count == 0 {
        return Ok(Vec::new());
    }
    if count > MAX_SEGMENTS {
        return Err(Error::at(
            56,
            format!("{count} program headers is more than the limit of {MAX_SEGMENTS}"),
        ));
    }
    slice(
        data,
        h.e_phoff,
        (count * PHDR_SIZE) as u64,
        "program header table",
    )?;
    let mut segments = Vec::with_capacity(count);
    for i in 0..count {
        let at = h.e_phoff + (i * PHDR_SIZE) as u64;
        let s = Segment {
            p_type: u32_at(data, at, "p_type")?,
            flags: u32_at(data, at + 4, "p_flags")?,
            offset: u64_at(data, at + 8, "p_offset")?,
            vaddr: u64_at(data, at + 16, "p_vaddr")?,
            paddr: u64_at(data, at + 24, "p_paddr")?,
            filesz: u64_at(data, at + 32, "p_filesz")?,
            memsz: u64_at(data, at + 40, "p_memsz")?,
            align: u64_at(data, at + 48, "p_align")?,
        };
        if s.p_type == PT_LOAD || s.p_type == PT_DYNAMIC || s.p_type == PT_NOTE {
            slice(data, s.offset, s.filesz, &format!("segment {i} contents"))
                .map_err(|e| Error::at(at + 8, e.what))?;
            if s.filesz > s.memsz {
                return Err(Error::at(
                    at + 32,
                    format!(
                        "segment {i}: p_filesz {:#x} > p_memsz {:#x}",
                        s.filesz, s.memsz
                    ),
                ));
            }
        }
        segments.push(s);
    }
    Ok(segments)
}

/// The NUL-terminated UTF-8 string at `index` of a string table that starts at file offset `table_offset`.
pub fn str_at(strings: &[u8], index: u32, table_offset: u64) -> Result<&str> {
    let start = index as usize;
    let at = table_offset + u64::from(index);
    let rest = strings.get(start..).ok_or_else(|| {
        Error::at(
            at,
            format!(
                "string index {index} is past the end of its table ({} bytes)",
                strings.len()
            ),
        )
    })?;
    let len = rest
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| Error::at(at, "string is not NUL-terminated within its table"))?;
    std::str::from_utf8(&rest[..len])
        .map_err(|e| Error::at(at + e.valid_up_to() as u64, "string is not valid UTF-8"))
}
