//! What one code object brings to an executable, read once from its ELF into
//! owned values: the segments to copy, symbols, kernels and dynamic relocations.

use std::collections::{HashMap, HashSet};

use inlay_codeobj::elf::{self, PT_LOAD};
use inlay_codeobj::reloc::RelocType;
use inlay_codeobj::symbols::{Binding, SymbolKind};
use inlay_codeobj::{CodeObject, TargetId};

/// Largest span of segments we agree to allocate; a corrupt `p_memsz` must
/// not make us ask for terabytes.
const MAX_SPAN: u64 = 1 << 30;
const MAX_ALIGN: u64 = 1 << 16;
const PF_W: u32 = 2;

pub struct Segment {
    pub vaddr: u64,
    pub memsz: u64,
    pub file_offset: u64,
    pub filesz: u64,
    pub writable: bool,
}

pub struct Defined {
    pub name: String,
    pub kind: SymbolKind,
    pub value: u64,
    pub size: u64,
    pub local: bool,
    /// ELF weak binding: another code object's definition of the name wins.
    pub weak: bool,
    /// Alignment of the defining section.
    pub align: u64,
}

pub struct KernelImage {
    pub name: String,
    pub descriptor: u64,
    pub entry: Option<u64>,
    pub kernarg_size: u32,
    pub kernarg_align: u32,
    pub group_segment_size: u32,
    pub private_segment_size: u32,
    pub dynamic_callstack: bool,
}

pub struct Reloc {
    pub offset: u64,
    pub r_type: RelocType,
    /// Name of the symbol it refers to, if any.
    pub symbol: Option<String>,
    /// The symbol's value when it is defined in this code object.
    pub defined_value: Option<u64>,
    pub addend: i64,
}

pub struct Image {
    pub target: TargetId,
    pub version: u8,
    pub segments: Vec<Segment>,
    /// Lowest segment address rounded down to `align`, and bytes spanned from there.
    pub span_start: u64,
    pub span_size: u64,
    pub align: u64,
    pub defined: Vec<Defined>,
    /// Undefined symbols, with whether the reference is weak. Only those a
    /// relocation uses must resolve: compilers leave unused ones behind (ROCm
    /// 5.2's HIP leaves LDS statics undefined), and ROCr loads such objects.
    pub undefined: HashMap<String, bool>,
    pub kernels: Vec<KernelImage>,
    pub relocs: Vec<Reloc>,
    /// `.text` (virtual address, size), when the code object has one.
    pub text: Option<(u64, u64)>,
}

impl Image {
    pub fn read(bytes: &[u8]) -> Result<Image, String> {
        let co = CodeObject::parse(bytes).map_err(|e| e.to_string())?;
        if co.header.e_type != elf::ET_DYN && co.header.e_type != elf::ET_EXEC {
            return Err(format!(
                "ELF type {} is not a linked code object (shared object expected)",
                co.header.e_type
            ));
        }
        let (segments, span_start, span_size, align) = read_segments(&co, bytes.len() as u64)?;
        let section_align = |name: Option<&str>| {
            name.and_then(|n| co.section(n))
                .map_or(1, |s| s.addralign.max(1))
        };
        let mut defined = Vec::new();
        let mut undefined = HashMap::new();
        // Both tables list exported names: keep one entry per name and value.
        let mut seen = HashSet::new();
        for s in co.symbols.all() {
            let local = s.binding == Binding::Local;
            match s.kind {
                SymbolKind::Undefined => {
                    undefined.insert(s.name.to_string(), s.binding == Binding::Weak);
                }
                SymbolKind::Kernel
                | SymbolKind::KernelDescriptor
                | SymbolKind::DeviceFunction
                | SymbolKind::Variable => {
                    if !seen.insert((s.name, s.value)) {
                        continue;
                    }
                    defined.push(Defined {
                        name: s.name.to_string(),
                        kind: s.kind,
                        value: s.value,
                        size: s.size,
                        local,
                        weak: s.binding == Binding::Weak,
                        align: section_align(s.section),
                    });
                }
                SymbolKind::Other => {}
            }
        }
        // A descriptor the target cannot run is refused now, naming the
        // field, rather than handed out as a kernel object whose dispatch fails.
        for k in &co.kernels {
            let problems = &k.descriptor_problems;
            if let Some(first) = problems.first() {
                let more = match problems.len() - 1 {
                    0 => String::new(),
                    n => format!(" (and {n} more problems)"),
                };
                return Err(format!(
                    "kernel {}: descriptor at {:#x}: {first}{more}",
                    k.name, k.descriptor_address
                ));
            }
        }
        // Metadata by descriptor symbol, indexed once (a scan per kernel was
        // quadratic: 640 kernels in one librocsparse code object).
        let by_symbol: HashMap<&str, &inlay_codeobj::metadata::KernelMetadata> = co
            .metadata
            .iter()
            .flat_map(|m| m.kernels.iter())
            .map(|mk| (mk.symbol.as_str(), mk))
            .rev() // the first entry wins, as the scan's did
            .collect();
        let kernels = co
            .kernels
            .iter()
            .map(|k| {
                let md = by_symbol.get(format!("{}.kd", k.name).as_str()).copied();
                let d = &k.descriptor;
                let u32_of = |v: Option<u64>, fallback: u32| {
                    v.and_then(|v| u32::try_from(v).ok()).unwrap_or(fallback)
                };
                KernelImage {
                    name: k.name.to_string(),
                    descriptor: k.descriptor_address,
                    entry: k.entry_address,
                    kernarg_size: u32_of(md.and_then(|m| m.kernarg_segment_size), d.kernarg_size),
                    kernarg_align: u32_of(md.and_then(|m| m.kernarg_segment_align), 16),
                    group_segment_size: u32_of(
                        md.and_then(|m| m.group_segment_fixed_size),
                        d.group_segment_fixed_size,
                    ),
                    private_segment_size: u32_of(
                        md.and_then(|m| m.private_segment_fixed_size),
                        d.private_segment_fixed_size,
                    ),
                    dynamic_callstack: md
                        .and_then(|m| m.uses_dynamic_stack)
                        .unwrap_or(k.decoded.properties.uses_dynamic_stack),
                }
            })
            .collect();
        let mut relocs = Vec::new();
        // Dynamic relocations only: static ones (sh_info set, from --emit-relocs)
        // were already applied by the linker.
        for r in co.relocations.iter().filter(|r| r.target_section.is_none()) {
            if !crate::reloc::supported(r.r_type) {
                return Err(format!(
                    "relocation at {:#x}: type {} is not supported in a loaded code object",
                    r.offset,
                    r.r_type.name().unwrap_or("unknown")
                ));
            }
            let width = r.r_type.width();
            let inside = segments.iter().any(|s| {
                r.offset >= s.vaddr && r.offset.saturating_add(width) <= s.vaddr + s.memsz
            });
            if !inside && width > 0 {
                return Err(format!(
                    "relocation at {:#x} ({} bytes) is outside every loaded segment",
                    r.offset, width
                ));
            }
            relocs.push(Reloc {
                offset: r.offset,
                r_type: r.r_type,
                symbol: r.symbol.filter(|_| r.symbol_index != 0).map(str::to_string),
                defined_value: r.symbol_value,
                addend: r.addend,
            });
        }
        Ok(Image {
            target: co.target,
            version: co.code_object_version,
            segments,
            span_start,
            span_size,
            align,
            defined,
            undefined,
            kernels,
            relocs,
            text: co.section(".text").map(|t| (t.addr, t.size)),
        })
    }

    /// True if `addr` lies in a writable segment.
    pub fn writable(&self, addr: u64) -> bool {
        self.segments
            .iter()
            .any(|s| s.writable && addr >= s.vaddr && addr - s.vaddr < s.memsz.max(1))
    }
}

type Segments = (Vec<Segment>, u64, u64, u64);

fn read_segments(co: &CodeObject<'_>, file_len: u64) -> Result<Segments, String> {
    let mut segments = Vec::new();
    let mut align = 1u64;
    for (i, p) in co.segments.iter().enumerate() {
        if p.p_type != PT_LOAD {
            continue;
        }
        let end = p.vaddr.checked_add(p.memsz);
        let file_end = p.offset.checked_add(p.filesz);
        if end.is_none() || p.filesz > p.memsz || file_end.is_none_or(|e| e > file_len) {
            return Err(format!(
                "program header {i}: PT_LOAD at {:#x} (file {:#x}+{:#x}, memory {:#x}) is inconsistent",
                p.vaddr, p.offset, p.filesz, p.memsz
            ));
        }
        if p.align > 1 {
            if !p.align.is_power_of_two() || p.align > MAX_ALIGN {
                return Err(format!(
                    "program header {i}: alignment {:#x} is not usable",
                    p.align
                ));
            }
            align = align.max(p.align);
        }
        segments.push(Segment {
            vaddr: p.vaddr,
            memsz: p.memsz,
            file_offset: p.offset,
            filesz: p.filesz,
            writable: p.flags & PF_W != 0,
        });
    }
    let lo = segments.iter().map(|s| s.vaddr).min();
    let hi = segments.iter().map(|s| s.vaddr + s.memsz).max();
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return Err("no PT_LOAD segment".into());
    };
    let start = lo & !(align - 1);
    let size = hi - start;
    if size == 0 || size > MAX_SPAN {
        return Err(format!(
            "segments span {size:#x} bytes (0 or more than {MAX_SPAN:#x})"
        ));
    }
    Ok((segments, start, size, align))
}
