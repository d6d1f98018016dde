//! `CodeObject<'data>`: one AMDGPU ELF code object, parsed zero-copy from borrowed bytes.

use serde::Serialize;

use crate::descriptor::{
    DecodedDescriptor, DescriptorProblem, KernelDescriptor, KERNEL_DESCRIPTOR_SIZE,
};
use crate::elf::{self, FileHeader, Section, Segment};
use crate::metadata::{self, Metadata, Note};
use crate::reloc::{self, Relocation};
use crate::symbols::{Symbol, SymbolKind, Symbols};
use crate::target::TargetId;
use crate::{Error, Result};

/// A parsed code object. Borrows the input; only indexes are owned.
#[derive(Debug, Clone, Serialize)]
pub struct CodeObject<'data> {
    #[serde(skip)]
    data: &'data [u8],
    /// 4, 5 or 6.
    pub code_object_version: u8,
    pub header: FileHeader,
    pub kernels: Vec<Kernel<'data>>,
    pub metadata: Option<Metadata>,
    pub notes: Vec<Note<'data>>,
    pub relocations: Vec<Relocation<'data>>,
    pub sections: Vec<Section<'data>>,
    pub segments: Vec<Segment>,
    pub symbols: Symbols<'data>,
    pub target: TargetId,
}

/// A kernel: its descriptor and where its code starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Kernel<'data> {
    pub decoded: DecodedDescriptor,
    pub descriptor: KernelDescriptor,
    /// Address (shared objects) or section offset (relocatable objects) of the descriptor.
    pub descriptor_address: u64,
    /// File offset of the 64 descriptor bytes.
    pub descriptor_file_offset: u64,
    /// Values the target makes impossible: empty for a descriptor a loader
    /// can take (see [`KernelDescriptor::problems`] and the entry point rules
    /// of `CodeObject::entry_problems`).
    pub descriptor_problems: Vec<DescriptorProblem>,
    /// Address of the first instruction: descriptor address plus entry offset. For
    /// relocatable objects the entry offset is filled by an R_AMDGPU_REL64 relocation,
    /// which is applied here, giving the entry's offset inside its section.
    pub entry_address: Option<u64>,
    /// The function symbol at the entry address, if any.
    pub entry_symbol: Option<&'data str>,
    /// Kernel name (the descriptor symbol without `.kd`).
    pub name: &'data str,
}

impl<'data> CodeObject<'data> {
    /// Parses and validates an AMDGPU code object (v4-v6, relocatable or shared).
    pub fn parse(data: &'data [u8]) -> Result<CodeObject<'data>> {
        let header = FileHeader::parse(data)?;
        let target = TargetId::from_e_flags(header.e_flags).map_err(|e| Error::at(48, e.what))?;
        let sections = elf::parse_sections(data, &header)?;
        let segments = elf::parse_segments(data, &header)?;
        let notes = metadata::parse_notes(data, &sections, &segments)?;
        let metadata = notes
            .iter()
            .find(|n| {
                n.name == metadata::AMDGPU_NOTE_NAME && n.n_type == metadata::NT_AMDGPU_METADATA
            })
            .map(|n| Metadata::parse(n.desc, n.desc_offset))
            .transpose()?;
        let symbols = Symbols::parse(data, &sections)?;
        let relocations = reloc::parse(data, &sections, &symbols)?;
        let mut co = CodeObject {
            data,
            code_object_version: header.code_object_version(),
            header,
            target,
            sections,
            segments,
            notes,
            metadata,
            symbols,
            relocations,
            kernels: Vec::new(),
        };
        co.kernels = co.find_kernels()?;
        Ok(co)
    }

    /// Parses only what a disassembly listing needs: header, target, sections,
    /// segments and symbols, all validated as in [`CodeObject::parse`]. Notes,
    /// metadata, relocations and kernels are left empty (not parsed, so a damaged
    /// metadata note does not stop a listing, as it does not stop objdump).
    pub fn parse_code(data: &'data [u8]) -> Result<CodeObject<'data>> {
        let header = FileHeader::parse(data)?;
        let target = TargetId::from_e_flags(header.e_flags).map_err(|e| Error::at(48, e.what))?;
        let sections = elf::parse_sections(data, &header)?;
        let segments = elf::parse_segments(data, &header)?;
        let symbols = Symbols::parse(data, &sections)?;
        Ok(CodeObject {
            data,
            code_object_version: header.code_object_version(),
            header,
            target,
            sections,
            segments,
            notes: Vec::new(),
            metadata: None,
            symbols,
            relocations: Vec::new(),
            kernels: Vec::new(),
        })
    }

    /// The input bytes.
    pub fn data(&self) -> &'data [u8] {
        self.data
    }

    pub fn is_relocatable(&self) -> bool {
        self.header.e_type == elf::ET_REL
    }

    pub fn section(&self, name: &str) -> Option<&Section<'data>> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// Contents of a section (empty for SHT_NOBITS). Bounds were checked at parse.
    pub fn section_data(&self, section: &Section<'data>) -> &'data [u8] {
        elf::slice(self.data, section.offset, section.file_size(), "section").unwrap_or(&[])
    }

    /// The file offset of a symbol's value, if it lies in a section with file contents.
    pub fn symbol_file_offset(&self, s: &Symbol<'data>) -> Option<u64> {
        let sec = self
            .sections
            .get(usize::from(s.shndx))
            .filter(|_| s.is_defined() && s.shndx < elf::SHN_LORESERVE)?;
        if sec.sh_type == elf::SHT_NOBITS {
            return None;
        }
        let within = if self.is_relocatable() {
            s.value
        } else {
            s.value.checked_sub(sec.addr)?
        };
        (within < sec.size).then_some(sec.offset + within)
    }

    /// The bytes of a defined symbol (`value..value + size` in its section), e.g. a
    /// function's code; `None` if they are not in the file.
    pub fn symbol_data(&self, s: &Symbol<'data>) -> Option<&'data [u8]> {
        let offset = self.symbol_file_offset(s)?;
        let sec = self.sections.get(usize::from(s.shndx))?;
        // Stay inside the symbol's section even if st_size says otherwise.
        let end = offset.checked_add(s.size)?;
        (end <= sec.offset + sec.size)
            .then(|| elf::slice(self.data, offset, s.size, "symbol").ok())?
    }

    /// The allocated section containing address `addr` (shared objects).
    pub fn section_at(&self, addr: u64) -> Option<&Section<'data>> {
        self.sections.iter().find(|s| s.contains_addr(addr))
    }

    /// File offset of a symbol's table entry (for errors about it).
    fn symbol_entry_offset(&self, s: &Symbol<'data>) -> u64 {
        let sh_type = match s.table {
            crate::symbols::SymbolTable::Symtab => elf::SHT_SYMTAB,
            crate::symbols::SymbolTable::Dynsym => elf::SHT_DYNSYM,
        };
        let table = self.sections.iter().find(|sec| sec.sh_type == sh_type);
        table.map_or(0, |t| t.offset + (s.index * elf::SYM_SIZE) as u64)
    }

    /// What makes a descriptor impossible to run on this code object's
    /// target: the fields [`KernelDescriptor::problems`] finds, and an entry
    /// point (`entry`, from `descriptor`) that is not 256-byte aligned or (in
    /// a shared object) not inside a section of code.
    fn descriptor_problems(
        &self,
        descriptor: &KernelDescriptor,
        entry: Option<u64>,
    ) -> Vec<DescriptorProblem> {
        let processor = self.target.processor.name();
        let mut problems = descriptor.problems(processor, self.target.processor.family());
        let field = "KERNEL_CODE_ENTRY_BYTE_OFFSET";
        let offset = descriptor.kernel_code_entry_byte_offset as u64;
        let mut problem = |what: String| {
            problems.push(DescriptorProblem {
                field,
                value: offset,
                problem: what,
            })
        };
        let Some(entry) = entry else {
            problem("the entry point's address overflows".into());
            return problems;
        };
        if entry % 256 != 0 {
            problem(format!("entry point {entry:#x} is not 256-byte aligned"));
        }
        if !self.is_relocatable() {
            let code = self
                .section_at(entry)
                .filter(|s| s.flags & elf::SHF_EXECINSTR != 0 && s.sh_type != elf::SHT_NOBITS);
            if code.is_none() {
                let text = self.section(".text").map_or(String::new(), |t| {
                    format!(" (.text is {:#x}..{:#x})", t.addr, t.addr + t.size)
                });
                problem(format!("entry point {entry:#x} is outside the code{text}"));
            }
        }
        problems
    }

    /// The kernel called `name`.
    pub fn kernel(&self, name: &str) -> Option<&Kernel<'data>> {
        self.kernels.iter().find(|k| k.name == name)
    }

    fn find_kernels(&self) -> Result<Vec<Kernel<'data>>> {
        let mut kernels = Vec::new();
        for kd in self.symbols.of_kind(SymbolKind::KernelDescriptor) {
            let name = kd.name.strip_suffix(".kd").unwrap_or(kd.name);
            let offset = self.symbol_file_offset(kd).ok_or_else(|| {
                Error::at(
                    self.symbol_entry_offset(kd),
                    format!(
                        "kernel descriptor {}: value {:#x} is not inside its section",
                        kd.name, kd.value
                    ),
                )
            })?;
            let bytes = elf::slice(
                self.data,
                offset,
                KERNEL_DESCRIPTOR_SIZE as u64,
                "kernel descriptor",
            )?;
            let descriptor = KernelDescriptor::parse(bytes, offset)?;
            let mut entry_offset = descriptor.kernel_code_entry_byte_offset;
            let mut entry_address = None;
            if self.is_relocatable() {
                // The entry offset is `sym + addend - place` of a REL64 at descriptor + 16.
                let section = kd.section;
                let reloc = self.relocations.iter().find(|r| {
                    r.target_section == section
                        && r.offset == kd.value + 16
                        && r.r_type == reloc::RelocType::REL64
                });
                if let Some((r, Some(value))) = reloc.map(|r| (r, r.symbol_value)) {
                    // Offset inside the target symbol's section (normally .text).
                    entry_address = Some(value.wrapping_add(r.addend as u64).wrapping_sub(16));
                    entry_offset = 0;
                }
            }
            let entry_address = entry_address.or_else(|| kd.value.checked_add_signed(entry_offset));
            // Normally the entry is the function named like the kernel; otherwise look
            // for any function at that address.
            let entry_symbol = entry_address.and_then(|a| {
                let named = self
                    .symbols
                    .get(name)
                    .filter(|s| s.value == a && s.kind == SymbolKind::Kernel);
                named.map(|s| s.name).or_else(|| {
                    self.symbols
                        .of_kind(SymbolKind::Kernel)
                        .chain(self.symbols.of_kind(SymbolKind::DeviceFunction))
                        .find(|s| s.value == a && !self.is_relocatable())
                        .map(|s| s.name)
                })
            });
            let wave32 = descriptor.kernel_code_properties & (1 << 10) != 0;
            kernels.push(Kernel {
                name,
                descriptor_address: kd.value,
                descriptor_file_offset: offset,
                decoded: descriptor.decode(self.target.processor.family(), wave32),
                descriptor_problems: self.descriptor_problems(&descriptor, entry_address),
                descriptor,
                entry_address,
                entry_symbol,
            });
        }
        Ok(kernels)
    }
}
