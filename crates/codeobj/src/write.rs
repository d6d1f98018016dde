//! Writing code objects: a parsed code object plus edits becomes a new ELF file.
//!
//! The writer keeps the input's layout and bytes wherever nothing changed, so a
//! write without edits reproduces the input exactly. When a section grows, every
//! later section moves by a whole number of pages (the largest `PT_LOAD`
//! alignment), which keeps each segment's file offset and address congruent and
//! its page offsets unchanged; everything that holds an address (program
//! headers, section headers, symbols, dynamic entries, dynamic relocations,
//! kernel descriptors' entry offsets) is then moved through one address map.
//!
//! What the writer cannot see is an address computed by code: a PC-relative
//! reference from `.text` to data after it, resolved when the shared object was
//! linked, is off by the move. [`Builder::write_with_map`] returns the map so
//! that whoever rewrites the code can patch those; editing relocatable objects
//! and linking them afterwards avoids the problem altogether.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::code_object::CodeObject;
use crate::descriptor::KernelDescriptor;
use crate::elf::{self, Section, DYN_SIZE, PHDR_SIZE, SHDR_SIZE, SYM_SIZE};
use crate::metadata::{Metadata, AMDGPU_NOTE_NAME, NT_AMDGPU_METADATA};
use crate::reloc::RelocType;
use crate::symbols::{Binding, SymbolTable, Visibility};
use crate::{Error, Result};

/// A symbol to add to `.symtab`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSymbol {
    pub name: String,
    /// Name of the defining section.
    pub section: String,
    /// Offset of the symbol inside that section (in the output).
    pub offset: u64,
    pub size: u64,
    /// `STT_*` value, e.g. [`crate::symbols::STT_FUNC`].
    pub elf_type: u8,
    pub binding: Binding,
    pub visibility: Visibility,
}

/// A non-allocated section to add (e.g. tool annotations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSection {
    pub name: String,
    pub sh_type: u32,
    pub data: Vec<u8>,
    pub addralign: u64,
}

/// Edits to apply to a code object, then [`Builder::write`].
pub struct Builder<'a, 'data> {
    co: &'a CodeObject<'data>,
    replaced: HashMap<usize, Vec<u8>>,
    added_sections: Vec<NewSection>,
    added_symbols: Vec<NewSymbol>,
    descriptors: HashMap<String, KernelDescriptor>,
    metadata: Option<Metadata>,
    /// Existing symbols given a new (offset in section, size).
    moved: HashMap<String, (u64, u64)>,
    /// Kernels added by [`Builder::add_kernel`].
    new_kernels: Vec<PlacedKernel>,
}

/// A kernel to add to a shared code object: its machine code, descriptor and metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct NewKernel {
    pub name: String,
    pub code: Vec<u8>,
    /// Its `kernel_code_entry_byte_offset` is ignored: the writer sets it.
    pub descriptor: KernelDescriptor,
    /// Its `.name` and `.symbol` are set from `name`.
    pub metadata: crate::metadata::KernelMetadata,
}

/// Where an added kernel's code and descriptor went, inside their sections.
#[derive(Debug, Clone)]
struct PlacedKernel {
    text: usize,
    code_offset: u64,
    kd_section: usize,
    kd_offset: u64,
    descriptor: KernelDescriptor,
}

/// DT_* tags whose value is an address.
const DT_ADDRESS_TAGS: &[u64] = &[
    3,           // DT_PLTGOT
    4,           // DT_HASH
    5,           // DT_STRTAB
    6,           // DT_SYMTAB
    7,           // DT_RELA
    12,          // DT_INIT
    13,          // DT_FINI
    17,          // DT_REL
    23,          // DT_JMPREL
    25,          // DT_INIT_ARRAY
    26,          // DT_FINI_ARRAY
    32,          // DT_PREINIT_ARRAY
    0x6fff_fef5, // DT_GNU_HASH
    0x6fff_fff0, // DT_VERSYM
    0x6fff_fffc, // DT_VERDEF
    0x6fff_fffe, // DT_VERNEED
];

/// Where one section was and where it goes.
#[derive(Debug, Clone, Copy)]
struct Placed {
    old_addr: u64,
    old_off: u64,
    old_size: u64,
    new_addr: u64,
    new_off: u64,
    new_size: u64,
    alloc: bool,
    nobits: bool,
}

/// The new layout and the address map derived from it: where every section
/// of the input went.
#[derive(Debug, Clone)]
pub struct AddressMap {
    placed: Vec<Placed>,
    /// True for shared objects/executables, whose allocated sections have addresses.
    addressed: bool,
    /// The unit every move is rounded to (largest PT_LOAD alignment).
    page: u64,
}

impl AddressMap {
    /// The output address of input address `a` (inside or just after an allocated
    /// section; identity for relocatable objects and for the headers).
    pub fn addr(&self, a: u64) -> u64 {
        if !self.addressed {
            return a;
        }
        let inside = self
            .placed
            .iter()
            .find(|p| p.alloc && p.old_size > 0 && a >= p.old_addr && a - p.old_addr < p.old_size);
        let p = inside.or_else(|| {
            self.placed
                .iter()
                .filter(|p| p.alloc && p.old_addr <= a)
                .max_by_key(|p| p.old_addr)
        });
        match p {
            Some(p) => a.wrapping_sub(p.old_addr).wrapping_add(p.new_addr),
            None => a,
        }
    }

    /// New address of the end of a range that ends at `e` (a section's end maps to its new end).
    pub fn addr_end(&self, e: u64) -> u64 {
        if !self.addressed || e == 0 {
            return e;
        }
        let ends_here = self
            .placed
            .iter()
            .filter(|p| p.alloc && p.old_size > 0 && p.old_addr + p.old_size == e)
            .max_by_key(|p| p.new_addr + p.new_size);
        match ends_here {
            Some(p) => p.new_addr + p.new_size,
            None => self.addr(e - 1) + 1,
        }
    }
}

fn align_up(v: u64, align: u64) -> u64 {
    if align <= 1 {
        v
    } else {
        v.div_ceil(align) * align
    }
}

fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

impl<'a, 'data> Builder<'a, 'data> {
    pub fn new(co: &'a CodeObject<'data>) -> Self {
        Builder {
            co,
            replaced: HashMap::new(),
            added_sections: Vec::new(),
            added_symbols: Vec::new(),
            descriptors: HashMap::new(),
            metadata: None,
            moved: HashMap::new(),
            new_kernels: Vec::new(),
        }
    }

    fn section_index(&self, name: &str) -> Result<usize> {
        self.co
            .sections
            .iter()
            .position(|s| s.name == name && s.index != 0)
            .ok_or_else(|| Error::new(format!("no section named '{name}'")))
    }

    /// Replaces a section's contents (it may grow or shrink). Symbols keep their
    /// offsets inside the section.
    pub fn set_section_data(&mut self, name: &str, data: Vec<u8>) -> Result<&mut Self> {
        let i = self.section_index(name)?;
        let s = &self.co.sections[i];
        if s.sh_type == elf::SHT_NOBITS {
            return Err(Error::new(format!(
                "section '{name}' is SHT_NOBITS and has no contents"
            )));
        }
        if matches!(
            s.sh_type,
            elf::SHT_SYMTAB | elf::SHT_DYNSYM | elf::SHT_RELA | elf::SHT_REL | elf::SHT_DYNAMIC
        ) {
            return Err(Error::new(format!(
                "section '{name}' is rebuilt by the writer; edit its entries instead"
            )));
        }
        self.replaced.insert(i, data);
        Ok(self)
    }

    /// Adds a non-allocated section at the end of the file.
    pub fn add_section(&mut self, section: NewSection) -> &mut Self {
        self.added_sections.push(section);
        self
    }

    /// Adds a symbol to `.symtab`.
    pub fn add_symbol(&mut self, symbol: NewSymbol) -> Result<&mut Self> {
        self.section_index(&symbol.section)?;
        if !self
            .co
            .sections
            .iter()
            .any(|s| s.sh_type == elf::SHT_SYMTAB)
        {
            return Err(Error::new("code object has no .symtab to add symbols to"));
        }
        self.added_symbols.push(symbol);
        Ok(self)
    }

    /// Moves every entry of symbol `name` (both tables) to `offset` inside its
    /// section and gives it `size`: for code that was laid out again in a replaced
    /// `.text`. A moved kernel function takes its descriptor's entry offset along.
    pub fn move_symbol(&mut self, name: &str, offset: u64, size: u64) -> Result<&mut Self> {
        match self.co.symbols.get(name) {
            Some(s) if s.is_defined() && s.section.is_some() => {
                self.moved.insert(name.to_string(), (offset, size));
                Ok(self)
            }
            _ => Err(Error::new(format!(
                "no symbol named '{name}' defined in a section"
            ))),
        }
    }

    /// Where a symbol moved by [`Builder::move_symbol`] lands in the output.
    fn moved_value(&self, layout: &AddressMap, shndx: u16, name: &str) -> Option<(u64, u64)> {
        let &(offset, size) = self.moved.get(name)?;
        let base = if layout.addressed {
            layout.placed.get(usize::from(shndx))?.new_addr
        } else {
            0
        };
        Some((base.wrapping_add(offset), size))
    }

    /// Replaces kernel `name`'s descriptor. Its entry offset is read relative to
    /// the input's layout and moved with the code.
    pub fn set_kernel_descriptor(&mut self, name: &str, kd: KernelDescriptor) -> Result<&mut Self> {
        if self.co.kernel(name).is_none() {
            return Err(Error::new(format!("no kernel named '{name}'")));
        }
        self.descriptors.insert(name.to_string(), kd);
        Ok(self)
    }

    /// Adds a kernel to a shared code object: its code goes at the end of `.text`
    /// (256-byte aligned), its descriptor at the end of the section holding the
    /// other descriptors (64-byte aligned), `NAME` and `NAME.kd` into `.symtab`
    /// and its metadata into the note. Call it after other edits of those sections.
    pub fn add_kernel(&mut self, kernel: NewKernel) -> Result<&mut Self> {
        let co = self.co;
        if co.is_relocatable() {
            return Err(Error::new("add_kernel needs a shared code object (a relocatable one would need a REL64 relocation)"));
        }
        if co.kernel(&kernel.name).is_some() || self.new_kernels_named(&kernel.name) {
            return Err(Error::new(format!(
                "kernel '{}' already exists",
                kernel.name
            )));
        }
        let text = self.section_index(".text")?;
        let kd_section = co
            .kernels
            .first()
            .and_then(|k| co.symbols.get(&format!("{}.kd", k.name)))
            .map(|s| usize::from(s.shndx))
            .ok_or_else(|| {
                Error::new("no existing kernel descriptor section to add a descriptor to")
            })?;
        let mut md = self
            .metadata
            .clone()
            .or_else(|| co.metadata.clone())
            .ok_or_else(|| Error::new("no metadata note"))?;
        let mut km = kernel.metadata.clone();
        km.name = kernel.name.clone();
        km.symbol = format!("{}.kd", kernel.name);
        md.kernels.push(km);
        self.set_metadata(md)?;

        let current = |b: &Self, i: usize| {
            b.replaced
                .get(&i)
                .cloned()
                .unwrap_or_else(|| co.section_data(&co.sections[i]).to_vec())
        };
        let mut code = current(self, text);
        code.resize(align_up(code.len() as u64, 256) as usize, 0);
        let code_offset = code.len() as u64;
        code.extend_from_slice(&kernel.code);
        self.replaced.insert(text, code);
        let mut kds = current(self, kd_section);
        kds.resize(align_up(kds.len() as u64, 64) as usize, 0);
        let kd_offset = kds.len() as u64;
        kds.extend_from_slice(&kernel.descriptor.to_bytes());
        self.replaced.insert(kd_section, kds);

        let kd_section_name = co.sections[kd_section].name.to_string();
        for (name, section, offset, size, elf_type) in [
            (
                kernel.name.clone(),
                ".text".to_string(),
                code_offset,
                kernel.code.len() as u64,
                crate::symbols::STT_FUNC,
            ),
            (
                format!("{}.kd", kernel.name),
                kd_section_name,
                kd_offset,
                64,
                crate::symbols::STT_OBJECT,
            ),
        ] {
            self.add_symbol(NewSymbol {
                name,
                section,
                offset,
                size,
                elf_type,
                binding: Binding::Global,
                visibility: Visibility::Protected,
            })?;
        }
        self.new_kernels.push(PlacedKernel {
            text,
            code_offset,
            kd_section,
            kd_offset,
            descriptor: kernel.descriptor,
        });
        Ok(self)
    }

    fn new_kernels_named(&self, name: &str) -> bool {
        self.added_symbols.iter().any(|s| s.name == name)
    }

    /// Replaces the metadata note's document.
    pub fn set_metadata(&mut self, metadata: Metadata) -> Result<&mut Self> {
        if !self
            .co
            .notes
            .iter()
            .any(|n| n.name == AMDGPU_NOTE_NAME && n.n_type == NT_AMDGPU_METADATA)
        {
            return Err(Error::new(
                "code object has no NT_AMDGPU_METADATA note to replace",
            ));
        }
        self.metadata = Some(metadata);
        Ok(self)
    }

    /// Builds the output file.
    pub fn write(&self) -> Result<Vec<u8>> {
        self.write_with_map().map(|(bytes, _)| bytes)
    }

    /// Builds the output file and says where every input address went.
    pub fn write_with_map(&self) -> Result<(Vec<u8>, AddressMap)> {
        let co = self.co;
        let input = co.data();
        let sections = &co.sections;
        let is_rel = co.is_relocatable();
        let symtab_index = sections.iter().position(|s| s.sh_type == elf::SHT_SYMTAB);
        let symtab_strtab = symtab_index.map(|i| sections[i].link as usize);
        let shstrndx = usize::from(co.header.e_shstrndx);
        self.check_ranges()?;
        // Headers stay where they are, so they must come before all section data.
        let first_data = sections
            .iter()
            .skip(1)
            .filter(|s| s.file_size() > 0)
            .map(|s| s.offset)
            .min();
        let phdrs_end = co.header.e_phoff + (co.segments.len() * PHDR_SIZE) as u64;
        if !co.segments.is_empty() && first_data.is_some_and(|f| phdrs_end > f) {
            return Err(Error::at(
                co.header.e_phoff,
                "program headers after section data are not supported by the writer",
            ));
        }

        // Phase 1: every section's contents, with sizes final (addresses patched later).
        // Borrowed until something changes them, so untouched sections are copied once.
        let mut contents: Vec<Cow<'data, [u8]>> = sections
            .iter()
            .map(|s| match self.replaced.get(&s.index) {
                Some(d) => Cow::Owned(d.clone()),
                None => Cow::Borrowed(co.section_data(s)),
            })
            .collect();
        if let Some(md) = &self.metadata {
            self.rebuild_metadata_note(md, &mut contents)?;
        }
        // Names of added symbols and sections go at the end of their string tables.
        let mut symbol_names = Vec::new();
        if let Some(st) = symtab_strtab {
            let strtab = contents
                .get_mut(st)
                .ok_or_else(|| Error::new(".symtab sh_link is not a section"))?
                .to_mut();
            for s in &self.added_symbols {
                symbol_names.push(strtab.len() as u32);
                strtab.extend_from_slice(s.name.as_bytes());
                strtab.push(0);
            }
        }
        let mut section_names = Vec::new();
        if !self.added_sections.is_empty() {
            let shstrtab = contents
                .get_mut(shstrndx)
                .filter(|_| shstrndx != 0)
                .ok_or_else(|| Error::new("no section name string table to name added sections"))?
                .to_mut();
            for s in &self.added_sections {
                section_names.push(shstrtab.len() as u32);
                shstrtab.extend_from_slice(s.name.as_bytes());
                shstrtab.push(0);
            }
        }
        // Locals must precede globals: added locals go at sh_info, which renumbers later symbols.
        let (new_locals, new_globals): (Vec<_>, Vec<_>) = self
            .added_symbols
            .iter()
            .zip(symbol_names.iter().copied())
            .partition(|(s, _)| s.binding == Binding::Local);
        let first_global = symtab_index.map_or(0, |i| sections[i].info as usize);
        let renumber = |old: u32| -> u32 {
            if (old as usize) >= first_global {
                old + new_locals.len() as u32
            } else {
                old
            }
        };
        if let Some(i) = symtab_index {
            let len = contents[i].len() + SYM_SIZE * self.added_symbols.len();
            contents[i].to_mut().resize(len, 0);
        }

        // Phase 2: layout.
        let layout = self.layout(&contents)?;
        let placed = &layout.placed;
        let added_offsets = {
            let mut end = placed
                .iter()
                .filter(|p| !p.nobits)
                .map(|p| p.new_off + p.new_size)
                .max()
                .unwrap_or(0);
            let mut offs = Vec::new();
            for s in &self.added_sections {
                let off = align_up(end, s.addralign);
                offs.push(off);
                end = off + s.data.len() as u64;
            }
            (offs, end)
        };
        let (added_offsets, data_end) = added_offsets;
        let old_data_end = sections
            .iter()
            .map(|s| s.offset + s.file_size())
            .max()
            .unwrap_or(0);
        let shnum = sections.len() + self.added_sections.len();
        let d_end = data_end.saturating_sub(old_data_end);
        let shoff = if co.header.e_shoff >= old_data_end {
            (co.header.e_shoff + d_end).max(align_up(data_end, 8))
        } else {
            align_up(data_end, 8)
        };

        // Phase 3: patch everything that holds an address or a symbol index.
        for (i, s) in sections.iter().enumerate() {
            match s.sh_type {
                elf::SHT_SYMTAB | elf::SHT_DYNSYM => {
                    let old = co.section_data(s);
                    let out = contents[i].to_mut();
                    let count = old.len() / SYM_SIZE;
                    let is_symtab = Some(i) == symtab_index;
                    let table = if is_symtab {
                        SymbolTable::Symtab
                    } else {
                        SymbolTable::Dynsym
                    };
                    let moved: HashMap<usize, (u64, u64)> = if self.moved.is_empty() {
                        HashMap::new()
                    } else {
                        co.symbols
                            .in_table(table)
                            .iter()
                            .filter_map(|sym| {
                                Some((sym.index, self.moved_value(&layout, sym.shndx, sym.name)?))
                            })
                            .collect()
                    };
                    for k in 0..count {
                        let dst = if is_symtab {
                            renumber(k as u32) as usize
                        } else {
                            k
                        };
                        let e = &old[k * SYM_SIZE..(k + 1) * SYM_SIZE];
                        out[dst * SYM_SIZE..(dst + 1) * SYM_SIZE].copy_from_slice(e);
                        let shndx = u16::from_le_bytes([e[6], e[7]]);
                        let value = u64::from_le_bytes(e[8..16].try_into().unwrap_or_default());
                        if !is_rel && shndx != elf::SHN_UNDEF && usize::from(shndx) < placed.len() {
                            let p = placed[usize::from(shndx)];
                            let new = value.wrapping_sub(p.old_addr).wrapping_add(p.new_addr);
                            put_u64(out, dst * SYM_SIZE + 8, new);
                        }
                        if let Some(&(value, size)) = moved.get(&k) {
                            put_u64(out, dst * SYM_SIZE + 8, value);
                            put_u64(out, dst * SYM_SIZE + 16, size);
                        }
                    }
                    if is_symtab {
                        let mut write_new =
                            |(sym, name): &(&NewSymbol, u32), slot: usize| -> Result<()> {
                                let shndx = self.section_index(&sym.section)?;
                                let value = if is_rel {
                                    sym.offset
                                } else {
                                    placed[shndx].new_addr.wrapping_add(sym.offset)
                                };
                                let at = slot * SYM_SIZE;
                                put_u32(out, at, *name);
                                out[at + 4] = (sym.binding.raw() << 4) | (sym.elf_type & 0xf);
                                out[at + 5] = sym.visibility.raw();
                                put_u16(out, at + 6, shndx as u16);
                                put_u64(out, at + 8, value);
                                put_u64(out, at + 16, sym.size);
                                Ok(())
                            };
                        // Added locals fill the slots from the old sh_info; globals go last.
                        for (slot, s) in (first_global..).zip(&new_locals) {
                            write_new(s, slot)?;
                        }
                        for (slot, s) in (count + new_locals.len()..).zip(&new_globals) {
                            write_new(s, slot)?;
                        }
                    }
                }
                elf::SHT_RELA | elf::SHT_REL => {
                    let entsize = if s.sh_type == elf::SHT_RELA {
                        elf::RELA_SIZE
                    } else {
                        elf::REL_SIZE
                    };
                    let renumbered = Some(s.link as usize) == symtab_index;
                    let out = contents[i].to_mut();
                    for at in (0..out.len() / entsize).map(|k| k * entsize) {
                        let r_offset =
                            u64::from_le_bytes(out[at..at + 8].try_into().unwrap_or_default());
                        let info =
                            u64::from_le_bytes(out[at + 8..at + 16].try_into().unwrap_or_default());
                        let (mut sym, r_type) = ((info >> 32) as u32, info as u32);
                        if renumbered && sym != 0 {
                            sym = renumber(sym);
                        }
                        put_u64(out, at + 8, (u64::from(sym) << 32) | u64::from(r_type));
                        if !is_rel {
                            put_u64(out, at, layout.addr(r_offset));
                            if entsize == elf::RELA_SIZE
                                && RelocType(r_type) == RelocType::RELATIVE64
                            {
                                let addend = u64::from_le_bytes(
                                    out[at + 16..at + 24].try_into().unwrap_or_default(),
                                );
                                put_u64(out, at + 16, layout.addr(addend));
                            }
                        }
                    }
                }
                elf::SHT_DYNAMIC => {
                    let out = contents[i].to_mut();
                    for at in (0..out.len() / DYN_SIZE).map(|k| k * DYN_SIZE) {
                        let tag =
                            u64::from_le_bytes(out[at..at + 8].try_into().unwrap_or_default());
                        if DT_ADDRESS_TAGS.contains(&tag) {
                            let v = u64::from_le_bytes(
                                out[at + 8..at + 16].try_into().unwrap_or_default(),
                            );
                            put_u64(out, at + 8, layout.addr(v));
                        }
                    }
                }
                _ => {}
            }
        }
        self.patch_descriptors(&layout, &mut contents)?;

        // Phase 4: assemble. Old bytes between sections (padding, headers) come along.
        let out_len = shoff + (shnum * SHDR_SIZE) as u64;
        // Growth moves data by at most one page per section beyond the bytes added;
        // anything larger means the input's layout was not what it claimed.
        let new_bytes: u64 = contents.iter().map(|c| c.len() as u64).sum::<u64>()
            + self
                .added_sections
                .iter()
                .map(|s| s.data.len() as u64 + s.addralign.min(1 << 16))
                .sum::<u64>();
        let limit = input.len() as u64 + new_bytes + (shnum as u64 + 2) * layout.page;
        if out_len > limit {
            return Err(Error::new(format!(
                "output would be {out_len} bytes for a {}-byte input; overlapping or oversized sections?",
                input.len()
            )));
        }
        let mut out = vec![0u8; out_len as usize];
        let mut by_offset: Vec<usize> =
            (1..sections.len()).filter(|&i| !placed[i].nobits).collect();
        by_offset.sort_by_key(|&i| (placed[i].old_off, i));
        let first = by_offset
            .first()
            .map_or(co.header.e_shoff.min(input.len() as u64), |&i| {
                placed[i].old_off
            });
        out[..first as usize].copy_from_slice(&input[..first as usize]);
        for (n, &i) in by_offset.iter().enumerate() {
            let p = placed[i];
            let next_old = by_offset
                .get(n + 1)
                .map_or(p.old_off + p.old_size, |&j| placed[j].old_off);
            let gap_end = next_old.max(p.old_off + p.old_size).min(input.len() as u64);
            let old = elf::slice(
                input,
                p.old_off,
                gap_end.saturating_sub(p.old_off),
                "section",
            )?;
            let room = (out.len() as u64).saturating_sub(p.new_off) as usize;
            let n_old = old.len().min(room);
            out[p.new_off as usize..p.new_off as usize + n_old].copy_from_slice(&old[..n_old]);
            // Unchanged contents came along with the old bytes just copied.
            if let Cow::Owned(data) = &contents[i] {
                out[p.new_off as usize..p.new_off as usize + data.len()].copy_from_slice(data);
            }
        }
        for (s, &off) in self.added_sections.iter().zip(&added_offsets) {
            out[off as usize..off as usize + s.data.len()].copy_from_slice(&s.data);
        }
        // ELF header.
        put_u64(&mut out, 24, layout.addr(co.header.e_entry));
        put_u64(&mut out, 40, shoff);
        put_u16(
            &mut out,
            60,
            if shnum >= usize::from(elf::SHN_LORESERVE) {
                0
            } else {
                shnum as u16
            },
        );
        // Program headers.
        for (k, seg) in co.segments.iter().enumerate() {
            let at = co.header.e_phoff as usize + k * PHDR_SIZE;
            let vaddr = layout.addr(seg.vaddr);
            let (memsz, filesz) = if seg.memsz == 0 {
                (0, 0)
            } else {
                let mem_end = layout.addr_end(seg.vaddr.wrapping_add(seg.memsz));
                let file_end = if seg.filesz == 0 {
                    vaddr
                } else {
                    layout.addr_end(seg.vaddr.wrapping_add(seg.filesz))
                };
                (mem_end.wrapping_sub(vaddr), file_end.wrapping_sub(vaddr))
            };
            put_u64(
                &mut out,
                at + 8,
                seg.offset.wrapping_add(vaddr.wrapping_sub(seg.vaddr)),
            );
            put_u64(&mut out, at + 16, vaddr);
            put_u64(
                &mut out,
                at + 24,
                seg.paddr.wrapping_add(vaddr.wrapping_sub(seg.vaddr)),
            );
            put_u64(&mut out, at + 32, filesz);
            put_u64(&mut out, at + 40, memsz);
        }
        // Section headers.
        for (i, s) in sections.iter().enumerate() {
            let at = shoff as usize + i * SHDR_SIZE;
            let raw = elf::slice(
                input,
                co.header.e_shoff + (i * SHDR_SIZE) as u64,
                SHDR_SIZE as u64,
                "section header",
            )?;
            out[at..at + SHDR_SIZE].copy_from_slice(raw);
            if i == 0 {
                continue;
            }
            let p = placed[i];
            put_u64(&mut out, at + 16, p.new_addr);
            put_u64(&mut out, at + 24, p.new_off);
            put_u64(&mut out, at + 32, p.new_size);
            if Some(i) == symtab_index {
                put_u32(
                    &mut out,
                    at + 44,
                    (s.info as usize + new_locals.len()) as u32,
                );
            }
        }
        for (k, (s, &off)) in self.added_sections.iter().zip(&added_offsets).enumerate() {
            let at = shoff as usize + (sections.len() + k) * SHDR_SIZE;
            put_u32(&mut out, at, section_names[k]);
            put_u32(&mut out, at + 4, s.sh_type);
            put_u64(&mut out, at + 24, off);
            put_u64(&mut out, at + 32, s.data.len() as u64);
            put_u64(&mut out, at + 48, s.addralign);
        }
        self.verify(&out)?;
        Ok((out, layout))
    }

    /// True if nothing was asked of the builder but to write the input again.
    fn is_unedited(&self) -> bool {
        self.replaced.is_empty()
            && self.added_sections.is_empty()
            && self.added_symbols.is_empty()
            && self.descriptors.is_empty()
            && self.metadata.is_none()
            && self.moved.is_empty()
            && self.new_kernels.is_empty()
    }

    /// The last line of defence against handing back a corrupt file: the output must
    /// read back as a code object with every segment inside the file and every kernel
    /// of the input, and an unedited write must reproduce the input exactly. Inputs
    /// whose layout the writer cannot reproduce (the reader accepts some files LLVM
    /// would not) are refused here instead of being silently mangled.
    fn verify(&self, out: &[u8]) -> Result<()> {
        let refuse = |what: String| {
            Err(Error::new(format!(
                "the writer cannot lay out this code object faithfully: {what}"
            )))
        };
        if self.is_unedited() && out != self.co.data() {
            let first = out.iter().zip(self.co.data()).position(|(a, b)| a != b);
            return refuse(format!(
                "an unedited write differs from the input ({} bytes vs {}, first difference at {:?})",
                out.len(),
                self.co.data().len(),
                first
            ));
        }
        let parsed = match CodeObject::parse(out) {
            Ok(p) => p,
            Err(e) => return refuse(format!("the output does not read back ({e})")),
        };
        for (i, seg) in parsed.segments.iter().enumerate() {
            let inside = seg
                .offset
                .checked_add(seg.filesz)
                .is_some_and(|end| end <= out.len() as u64);
            if !inside || seg.filesz > seg.memsz {
                return refuse(format!(
                    "program header {i} would cover offset {:#x} size {:#x} (memory size {:#x}) in a {}-byte file",
                    seg.offset,
                    seg.filesz,
                    seg.memsz,
                    out.len()
                ));
            }
        }
        if parsed.sections.len() < self.co.sections.len() {
            return refuse(format!(
                "{} sections in, {} out",
                self.co.sections.len(),
                parsed.sections.len()
            ));
        }
        if let Some(k) = self
            .co
            .kernels
            .iter()
            .find(|k| parsed.kernel(k.name).is_none())
        {
            return refuse(format!("kernel {} is missing from the output", k.name));
        }
        Ok(())
    }

    /// Addresses and sizes the layout does arithmetic on must fit far below 2^64.
    fn check_ranges(&self) -> Result<()> {
        const LIMIT: u64 = 1 << 48;
        let co = self.co;
        for s in co.sections.iter().skip(1) {
            let at = co.header.e_shoff + (s.index * SHDR_SIZE) as u64;
            if s.addr.checked_add(s.size).is_none_or(|end| end > LIMIT) || s.addralign > LIMIT {
                return Err(Error::at(
                    at + 16,
                    format!(
                        "section {}: address range or alignment too large to lay out",
                        s.name
                    ),
                ));
            }
        }
        for (k, p) in co.segments.iter().enumerate() {
            if p.vaddr.checked_add(p.memsz).is_none_or(|end| end > LIMIT) {
                return Err(Error::at(
                    co.header.e_phoff + (k * PHDR_SIZE) as u64 + 16,
                    "segment address range too large",
                ));
            }
        }
        Ok(())
    }

    /// Places every section: unchanged sections stay put until one grows past the
    /// next; from there on, everything moves by whole pages.
    fn layout(&self, contents: &[Cow<'data, [u8]>]) -> Result<AddressMap> {
        let co = self.co;
        let addressed = !co.is_relocatable();
        let page = co
            .segments
            .iter()
            .filter(|s| s.p_type == elf::PT_LOAD)
            .map(|s| s.align)
            .max()
            .unwrap_or(0x1000)
            .clamp(1, 1 << 16);
        let mut placed: Vec<Placed> = co
            .sections
            .iter()
            .zip(contents)
            .map(|(s, c): (&Section, _)| Placed {
                old_addr: s.addr,
                old_off: s.offset,
                old_size: s.size,
                new_addr: s.addr,
                new_off: s.offset,
                new_size: if s.sh_type == elf::SHT_NOBITS {
                    s.size
                } else {
                    c.len() as u64
                },
                alloc: s.is_alloc() && addressed,
                nobits: s.sh_type == elf::SHT_NOBITS,
            })
            .collect();
        let mut order: Vec<usize> = (1..placed.len()).collect();
        order.sort_by_key(|&i| (placed[i].old_off, !placed[i].nobits, placed[i].old_addr, i));
        let headers_end =
            (co.header.e_phoff + (co.segments.len() * PHDR_SIZE) as u64).max(elf::EHDR_SIZE as u64);
        let mut d = 0u64;
        let mut file_end = headers_end;
        let mut addr_end = 0u64;
        for i in order {
            let p = &mut placed[i];
            if p.alloc {
                let mut need = addr_end.saturating_sub(p.old_addr + d);
                if !p.nobits {
                    need = need.max(file_end.saturating_sub(p.old_off + d));
                }
                if p.new_size == 0 {
                    need = 0;
                }
                if need > 0 || !d.is_multiple_of(page) {
                    d = align_up(d + need, page);
                }
                p.new_addr = p.old_addr + d;
                p.new_off = p.old_off + d;
                addr_end = addr_end.max(p.new_addr + p.new_size);
            } else if p.nobits {
                p.new_off = p.old_off + d;
            } else {
                let cand = p.old_off + d;
                // Empty sections may share an offset with the next; they never need room.
                p.new_off = if cand < file_end && p.new_size > 0 {
                    align_up(file_end, co.sections[i].addralign)
                } else {
                    cand
                };
                d = p.new_off - p.old_off;
            }
            if !p.nobits {
                file_end = file_end.max(p.new_off + p.new_size);
            }
        }
        Ok(AddressMap {
            placed,
            addressed,
            page,
        })
    }

    /// Writes each kernel descriptor (edited or original) with its entry offset
    /// moved along with the code.
    fn patch_descriptors(
        &self,
        layout: &AddressMap,
        contents: &mut [Cow<'data, [u8]>],
    ) -> Result<()> {
        let co = self.co;
        for k in &self.new_kernels {
            let (text, kds) = (layout.placed[k.text], layout.placed[k.kd_section]);
            let mut kd = k.descriptor;
            let entry = text.new_addr.wrapping_add(k.code_offset);
            kd.kernel_code_entry_byte_offset =
                entry.wrapping_sub(kds.new_addr.wrapping_add(k.kd_offset)) as i64;
            let at = k.kd_offset as usize;
            contents[k.kd_section]
                .to_mut()
                .get_mut(at..at + 64)
                .ok_or_else(|| {
                    Error::new("an added kernel's descriptor was cut off by a later edit")
                })?
                .copy_from_slice(&kd.to_bytes());
        }
        for k in &co.kernels {
            let Some(sym) = co.symbols.get(&format!("{}.kd", k.name)) else {
                continue;
            };
            let shndx = usize::from(sym.shndx);
            let Some(sec) = co.sections.get(shndx) else {
                continue;
            };
            let within = if co.is_relocatable() {
                sym.value
            } else {
                sym.value.wrapping_sub(sec.addr)
            };
            let mut kd = self
                .descriptors
                .get(k.name)
                .copied()
                .unwrap_or(k.descriptor);
            if layout.addressed {
                let old_entry = k
                    .descriptor_address
                    .wrapping_add_signed(kd.kernel_code_entry_byte_offset);
                let moved = k.entry_symbol.and_then(|e| {
                    let sym = co.symbols.get(e)?;
                    self.moved_value(layout, sym.shndx, e)
                });
                let new_entry = moved.map_or_else(|| layout.addr(old_entry), |(v, _)| v);
                let new_kd = layout.addr(k.descriptor_address);
                kd.kernel_code_entry_byte_offset = new_entry.wrapping_sub(new_kd) as i64;
            }
            let data = contents[shndx].to_mut();
            let at = usize::try_from(within).unwrap_or(usize::MAX);
            let dst = data.get_mut(at..at.saturating_add(64)).ok_or_else(|| {
                Error::new(format!(
                    "kernel descriptor {}.kd lies outside its section",
                    k.name
                ))
            })?;
            dst.copy_from_slice(&kd.to_bytes());
        }
        Ok(())
    }

    /// Re-encodes the note section holding the metadata note with the new document.
    fn rebuild_metadata_note(
        &self,
        md: &Metadata,
        contents: &mut [Cow<'data, [u8]>],
    ) -> Result<()> {
        let co = self.co;
        let note = co
            .notes
            .iter()
            .find(|n| n.name == AMDGPU_NOTE_NAME && n.n_type == NT_AMDGPU_METADATA)
            .ok_or_else(|| Error::new("no metadata note"))?;
        let sec = co
            .sections
            .iter()
            .find(|s| {
                s.sh_type == elf::SHT_NOTE
                    && note.desc_offset >= s.offset
                    && note.desc_offset < s.offset + s.size
            })
            .ok_or_else(|| Error::new("metadata note is not inside a note section"))?;
        let align = if sec.addralign == 8 { 8 } else { 4 };
        let msgpack = md.to_msgpack();
        let mut out = Vec::new();
        for n in co
            .notes
            .iter()
            .filter(|n| n.desc_offset >= sec.offset && n.desc_offset < sec.offset + sec.size.max(1))
        {
            let desc: &[u8] = if std::ptr::eq(n, note) {
                &msgpack
            } else {
                n.desc
            };
            out.extend_from_slice(&(n.name.len() as u32 + 1).to_le_bytes());
            out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
            out.extend_from_slice(&n.n_type.to_le_bytes());
            out.extend_from_slice(n.name.as_bytes());
            out.push(0);
            out.resize(align_up(out.len() as u64, align) as usize, 0);
            out.extend_from_slice(desc);
            out.resize(align_up(out.len() as u64, align) as usize, 0);
        }
        contents[sec.index] = Cow::Owned(out);
        Ok(())
    }
}

/// Writes `co` unchanged (byte-identical to its input).
pub fn write(co: &CodeObject<'_>) -> Result<Vec<u8>> {
    Builder::new(co).write()
}
