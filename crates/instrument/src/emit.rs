//! The instrumented kernel as a code object of its own: the rewritten code
//! in `.text`, its kernel descriptor in `.rodata`, its metadata note, and
//! the dynamic and static symbol tables a loader reads (`NAME.inlay` and
//! `NAME.inlay.kd`), with the target and ABI of the original.
//!
//! Nothing else of the original is copied: the rewritten code reaches the
//! original code object's data and external functions at the addresses
//! [`crate::rewrite`] materialized. What the new code object adds is the
//! implicit-argument block its hooks may need (`.data`) and relocations
//! against the compiled hooks it calls (undefined symbols the loader
//! finds in the hook modules).
//!
//! The code is not copied either: it is written around the rewrite's
//! buffer ([`Code`]), the headers in the page before the code, everything
//! else after it. With a hook at every instruction the code is megabytes.

use inlay_codeobj::metadata::{AMDGPU_NOTE_NAME, NT_AMDGPU_METADATA};
use inlay_codeobj::CodeObject;
use object::elf;
use object::write::elf::{FileHeader, ProgramHeader, SectionHeader, Sym, Writer};
use object::write::WritableBuffer;
use object::Endianness;

use crate::rewrite::{Code, Rewritten};

/// Name of the instrumented copy of `kernel`.
pub fn instrumented_name(kernel: &str) -> String {
    format!("{kernel}.inlay")
}

/// Name of the implicit-argument block an instrumented copy of `kernel`
/// carries when its hooks need one ([`crate::rewrite::Rewritten::implicit_args`]).
pub fn implicit_args_name(kernel: &str) -> String {
    format!("{kernel}.inlay.implicitargs")
}

const PAGE: usize = 0x1000;

/// A code object holding `kernel` of `co`, rewritten, as the kernel
/// [`instrumented_name`]`(kernel)`; its bytes are `rw`'s code buffer.
pub fn code_object(
    co: &CodeObject<'_>,
    kernel: &str,
    rw: Rewritten,
) -> Result<Vec<u8>, inlay_codeobj::Error> {
    let err = |what: String| inlay_codeobj::Error::new(what);
    let name = instrumented_name(kernel);
    let kd_name = format!("{name}.kd");
    let block_name = implicit_args_name(kernel);
    let block_size = rw.implicit_args.map_or(0, |b| b.size as usize);

    // The metadata: the original document with this kernel only, renamed,
    // with the resources the rewritten kernel has.
    let mut md = co
        .metadata
        .clone()
        .ok_or_else(|| err("no metadata note".into()))?;
    let mut km = md
        .kernels
        .iter()
        .find(|k| k.name == kernel)
        .cloned()
        .ok_or_else(|| err(format!("no metadata for kernel {kernel}")))?;
    km.name = name.clone();
    km.symbol = kd_name.clone();
    let family = co.target.processor.family();
    if let Some(n) = inlay_codeobj::descriptor::sgpr_count(rw.descriptor.compute_pgm_rsrc1, family)
    {
        km.sgpr_count = Some(u64::from(n.saturating_sub(6)));
    }
    let decoded = rw.descriptor.decode(family, false);
    if km.vgpr_count.is_some() {
        km.vgpr_count = Some(u64::from(
            decoded.accum_offset.unwrap_or(decoded.vgpr_count),
        ));
    }
    km.private_segment_fixed_size = Some(u64::from(rw.descriptor.private_segment_fixed_size));
    md.kernels = vec![km];
    let note = note(&md.to_msgpack());

    // Dynamic symbols: the descriptor, the kernel, the implicit-argument
    // block (if any), then the hooks the code calls (undefined: the loader
    // finds them in the hook modules at freeze), by name.
    let mut undefined: Vec<&str> = (rw.symbols.iter())
        .map(|n| &**n)
        .filter(|n| *n != block_name)
        .collect();
    undefined.sort_unstable();
    undefined.dedup();
    let mut names: Vec<&[u8]> = vec![kd_name.as_bytes(), name.as_bytes()];
    if block_size > 0 {
        names.push(block_name.as_bytes());
    }
    let first_undefined = names.len() + 1;
    names.extend(undefined.iter().map(|n| n.as_bytes()));
    let dynsyms = names.len() as u32 + 1;

    let code_len = rw.code.len();
    let mut out = AroundCode {
        buf: rw.code.into_buffer(),
        len: 0,
    };
    let mut w = Writer::new(Endianness::Little, true, &mut out);
    let dyn_names: Vec<_> = names.iter().map(|n| w.add_dynamic_string(n)).collect();
    let str_names: Vec<_> = names.iter().map(|n| w.add_string(n)).collect();

    w.reserve_null_section_index();
    let note_name = w.add_section_name(b".note");
    let note_sec = w.reserve_section_index();
    w.reserve_dynsym_section_index();
    let dynsym_sec = object::write::elf::SectionIndex(2);
    w.reserve_hash_section_index();
    w.reserve_dynstr_section_index();
    let rela_name = w.add_section_name(b".rela.dyn");
    let rela_sec = (!rw.relocations.is_empty()).then(|| w.reserve_section_index());
    let rodata_name = w.add_section_name(b".rodata");
    let rodata_sec = w.reserve_section_index();
    let text_name = w.add_section_name(b".text");
    let text_sec = w.reserve_section_index();
    w.reserve_dynamic_section_index();
    let data_name = w.add_section_name(b".data");
    let data_sec = (block_size > 0).then(|| w.reserve_section_index());
    w.reserve_symtab_section_index();
    w.reserve_strtab_section_index();
    w.reserve_shstrtab_section_index();
    let _ = (note_sec, rela_sec);

    w.reserve_null_dynamic_symbol_index();
    for _ in &names {
        w.reserve_dynamic_symbol_index();
    }
    w.reserve_null_symbol_index();
    w.reserve_symbol_index(Some(rodata_sec));
    w.reserve_symbol_index(Some(text_sec));
    if let Some(d) = data_sec {
        w.reserve_symbol_index(Some(d));
    }
    for _ in &undefined {
        w.reserve_symbol_index(None);
    }

    // Layout: addresses equal file offsets. The headers, the code from the
    // next page (where the rewrite left it), a read-only segment (note,
    // dynamic symbols, relocations, descriptor) and then the dynamic
    // section and the block, each from a page of its own.
    let dynamic = 6 + if rw.relocations.is_empty() { 0 } else { 3 };
    w.reserve_file_header();
    w.reserve_program_headers(6);
    let headers_end = w.reserved_len();
    let text_off = w.reserve(code_len, PAGE);
    let text_end = w.reserved_len();
    if text_off != Code::HEADROOM {
        return Err(err(format!(
            "the code object's headers end at {headers_end:#x}, past the code's place {:#x}",
            Code::HEADROOM
        )));
    }
    w.reserve_until(text_end.next_multiple_of(PAGE));
    let note_off = w.reserve(note.len(), 4);
    let dynsym_off = w.reserve_dynsym();
    let hash_off = w.reserve_hash(1, dynsyms);
    let dynstr_off = w.reserve_dynstr();
    let rela_off = if rw.relocations.is_empty() {
        w.reserved_len()
    } else {
        w.reserve_relocations(rw.relocations.len(), true)
    };
    let rela_len = w.reserved_len() - rela_off;
    let rodata_off = w.reserve(64, 64);
    let ro_end = w.reserved_len();
    w.reserve_until(ro_end.next_multiple_of(PAGE));
    let dynamic_off = w.reserve_dynamic(dynamic);
    let data_off = if block_size > 0 {
        w.reserve(block_size, 64)
    } else {
        w.reserved_len()
    };
    let rw_len = w.reserved_len() - dynamic_off;
    w.reserve_symtab();
    w.reserve_strtab();
    w.reserve_shstrtab();
    w.reserve_section_headers();

    let mut kd = rw.descriptor;
    kd.kernel_code_entry_byte_offset = text_off as i64 - rodata_off as i64;

    w.write_file_header(&FileHeader {
        os_abi: co.header.os_abi,
        abi_version: co.header.abi_version,
        e_type: elf::ET_DYN,
        e_machine: elf::EM_AMDGPU,
        e_entry: 0,
        e_flags: co.header.e_flags,
    })
    .map_err(|e| err(e.to_string()))?;
    w.write_align_program_headers();
    let segment = |p_type, p_flags, off: usize, len: usize, align: usize| ProgramHeader {
        p_type,
        p_flags,
        p_offset: off as u64,
        p_vaddr: off as u64,
        p_paddr: off as u64,
        p_filesz: len as u64,
        p_memsz: len as u64,
        p_align: align as u64,
    };
    w.write_program_header(&segment(elf::PT_LOAD, elf::PF_R, 0, headers_end, PAGE));
    w.write_program_header(&segment(
        elf::PT_LOAD,
        elf::PF_R | elf::PF_X,
        text_off,
        code_len,
        PAGE,
    ));
    w.write_program_header(&segment(
        elf::PT_LOAD,
        elf::PF_R,
        note_off,
        ro_end - note_off,
        PAGE,
    ));
    w.write_program_header(&segment(
        elf::PT_LOAD,
        elf::PF_R | elf::PF_W,
        dynamic_off,
        rw_len,
        PAGE,
    ));
    w.write_program_header(&segment(
        elf::PT_DYNAMIC,
        elf::PF_R | elf::PF_W,
        dynamic_off,
        data_off - dynamic_off,
        8,
    ));
    w.write_program_header(&segment(elf::PT_NOTE, elf::PF_R, note_off, note.len(), 4));

    // The code is in place: passed over.
    w.pad_until(text_off);
    w.pad_until(text_end);
    w.pad_until(note_off);
    w.write(&note);
    let global = |kind: u8| (elf::STB_GLOBAL << 4) | kind;
    let defined = |name, section, kind, value: usize, size: usize| Sym {
        name: Some(name),
        section: Some(section),
        st_info: global(kind),
        st_other: elf::STV_PROTECTED,
        st_shndx: 0,
        st_value: value as u64,
        st_size: size as u64,
    };
    let undefined_sym = |name| Sym {
        name: Some(name),
        section: None,
        st_info: global(elf::STT_NOTYPE),
        st_other: elf::STV_DEFAULT,
        st_shndx: elf::SHN_UNDEF,
        st_value: 0,
        st_size: 0,
    };
    w.write_null_dynamic_symbol();
    w.write_dynamic_symbol(&defined(
        dyn_names[0],
        rodata_sec,
        elf::STT_OBJECT,
        rodata_off,
        64,
    ));
    w.write_dynamic_symbol(&defined(
        dyn_names[1],
        text_sec,
        elf::STT_FUNC,
        text_off,
        code_len,
    ));
    if let Some(d) = data_sec {
        w.write_dynamic_symbol(&defined(
            dyn_names[2],
            d,
            elf::STT_OBJECT,
            data_off,
            block_size,
        ));
    }
    for &n in &dyn_names[first_undefined - 1..] {
        w.write_dynamic_symbol(&undefined_sym(n));
    }
    w.write_hash(1, dynsyms, |i| {
        (i as usize)
            .checked_sub(1)
            .and_then(|k| names.get(k))
            .map(|n| elf::hash(n))
    });
    w.write_dynstr();
    if !rw.relocations.is_empty() {
        w.write_align_relocation();
        // Each relocated name's symbol index.
        let index: Vec<u32> = (rw.symbols.iter())
            .map(|n| match undefined.iter().position(|u| *u == &**n) {
                Some(k) => (first_undefined + k) as u32,
                None => 3,
            })
            .collect();
        for r in &rw.relocations {
            let sym = index[r.symbol as usize];
            let r_type = if r.high {
                inlay_codeobj::reloc::RelocType::REL32_HI
            } else {
                inlay_codeobj::reloc::RelocType::REL32_LO
            };
            w.write_relocation(
                true,
                &object::write::elf::Rel {
                    r_offset: text_off as u64 + r.offset,
                    r_sym: sym,
                    r_type: r_type.0,
                    r_addend: r.addend,
                },
            );
        }
    }
    w.write_align(64);
    w.write(&kd.to_bytes());
    w.pad_until(dynamic_off);
    w.write_align_dynamic();
    w.write_dynamic(elf::DT_HASH, hash_off as u64);
    w.write_dynamic(elf::DT_STRTAB, dynstr_off as u64);
    w.write_dynamic(elf::DT_SYMTAB, dynsym_off as u64);
    w.write_dynamic(
        elf::DT_STRSZ,
        (rela_off.min(rodata_off) - dynstr_off) as u64,
    );
    w.write_dynamic(elf::DT_SYMENT, 24);
    if !rw.relocations.is_empty() {
        w.write_dynamic(elf::DT_RELA, rela_off as u64);
        w.write_dynamic(elf::DT_RELASZ, rela_len as u64);
        w.write_dynamic(elf::DT_RELAENT, 24);
    }
    w.write_dynamic(elf::DT_NULL, 0);
    if block_size > 0 {
        w.write_align(64);
        w.write(&vec![0u8; block_size]);
    }
    w.write_null_symbol();
    w.write_symbol(&defined(
        str_names[0],
        rodata_sec,
        elf::STT_OBJECT,
        rodata_off,
        64,
    ));
    w.write_symbol(&defined(
        str_names[1],
        text_sec,
        elf::STT_FUNC,
        text_off,
        code_len,
    ));
    if let Some(d) = data_sec {
        w.write_symbol(&defined(
            str_names[2],
            d,
            elf::STT_OBJECT,
            data_off,
            block_size,
        ));
    }
    for &n in &str_names[first_undefined - 1..] {
        w.write_symbol(&undefined_sym(n));
    }
    w.write_strtab();
    w.write_shstrtab();

    w.write_null_section_header();
    w.write_section_header(&SectionHeader {
        name: Some(note_name),
        sh_type: elf::SHT_NOTE,
        sh_flags: u64::from(elf::SHF_ALLOC),
        sh_addr: note_off as u64,
        sh_offset: note_off as u64,
        sh_size: note.len() as u64,
        sh_link: 0,
        sh_info: 0,
        sh_addralign: 4,
        sh_entsize: 0,
    });
    w.write_dynsym_section_header(dynsym_off as u64, 1);
    w.write_hash_section_header(hash_off as u64);
    w.write_dynstr_section_header(dynstr_off as u64);
    if rela_sec.is_some() {
        w.write_section_header(&SectionHeader {
            name: Some(rela_name),
            sh_type: elf::SHT_RELA,
            sh_flags: u64::from(elf::SHF_ALLOC),
            sh_addr: rela_off as u64,
            sh_offset: rela_off as u64,
            sh_size: rela_len as u64,
            sh_link: dynsym_sec.0,
            sh_info: 0,
            sh_addralign: 8,
            sh_entsize: 24,
        });
    }
    w.write_section_header(&SectionHeader {
        name: Some(rodata_name),
        sh_type: elf::SHT_PROGBITS,
        sh_flags: u64::from(elf::SHF_ALLOC),
        sh_addr: rodata_off as u64,
        sh_offset: rodata_off as u64,
        sh_size: 64,
        sh_link: 0,
        sh_info: 0,
        sh_addralign: 64,
        sh_entsize: 0,
    });
    w.write_section_header(&SectionHeader {
        name: Some(text_name),
        sh_type: elf::SHT_PROGBITS,
        sh_flags: u64::from(elf::SHF_ALLOC | elf::SHF_EXECINSTR),
        sh_addr: text_off as u64,
        sh_offset: text_off as u64,
        sh_size: code_len as u64,
        sh_link: 0,
        sh_info: 0,
        sh_addralign: 256,
        sh_entsize: 0,
    });
    w.write_dynamic_section_header(dynamic_off as u64);
    if data_sec.is_some() {
        w.write_section_header(&SectionHeader {
            name: Some(data_name),
            sh_type: elf::SHT_PROGBITS,
            sh_flags: u64::from(elf::SHF_ALLOC | elf::SHF_WRITE),
            sh_addr: data_off as u64,
            sh_offset: data_off as u64,
            sh_size: block_size as u64,
            sh_link: 0,
            sh_info: 0,
            sh_addralign: 64,
            sh_entsize: 0,
        });
    }
    w.write_symtab_section_header(1);
    w.write_strtab_section_header();
    w.write_shstrtab_section_header();
    Ok(out.buf)
}

/// The code object's bytes, written around the code already in the buffer
/// (see [`Code`]): what the writer writes before it goes into the headroom
/// (zeros), the code is passed over (padding up to a length keeps the
/// bytes there), and the rest is appended.
struct AroundCode {
    buf: Vec<u8>,
    /// Where the writer is.
    len: usize,
}

impl WritableBuffer for AroundCode {
    fn len(&self) -> usize {
        self.len
    }

    fn reserve(&mut self, size: usize) -> Result<(), ()> {
        self.buf.reserve(size.saturating_sub(self.buf.len()));
        Ok(())
    }

    fn resize(&mut self, new_len: usize) {
        if new_len > self.buf.len() {
            self.buf.resize(new_len, 0);
        }
        self.len = new_len;
    }

    fn write_bytes(&mut self, val: &[u8]) {
        let end = self.len + val.len();
        if end > self.buf.len() {
            self.buf.resize(end, 0);
        }
        self.buf[self.len..end].copy_from_slice(val);
        self.len = end;
    }
}

/// An ELF note: `AMDGPU` name, `NT_AMDGPU_METADATA` type, `desc`.
fn note(desc: &[u8]) -> Vec<u8> {
    let name = AMDGPU_NOTE_NAME.as_bytes();
    let mut n = Vec::with_capacity(12 + 8 + desc.len() + 3);
    n.extend_from_slice(&(name.len() as u32 + 1).to_le_bytes());
    n.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    n.extend_from_slice(&NT_AMDGPU_METADATA.to_le_bytes());
    n.extend_from_slice(name);
    n.push(0);
    n.resize(n.len().next_multiple_of(4), 0);
    n.extend_from_slice(desc);
    n.resize(n.len().next_multiple_of(4), 0);
    n
}
