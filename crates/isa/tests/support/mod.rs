//! Shared by the oracle tests and the corpus example: list ELF code objects
//! with inlay and with llvm-objdump-19, and compare.
#![allow(dead_code)]

pub mod fatbin;
pub mod forms;

use std::path::Path;
use std::process::Command;

use inlay_isa::listing::{
    write_file_header, write_section, FileSymbols, Section, SectionSymbols, Symbol, SymbolKind,
};
use inlay_isa::Target;
use object::{Object, ObjectSection, ObjectSymbol, SectionFlags};

/// Target from the AMDGPU ELF `e_flags` machine field.
pub fn target_of(data: &[u8]) -> Option<Target> {
    let f = object::File::parse(data).ok()?;
    let flags = match f.flags() {
        object::FileFlags::Elf { e_flags, .. } => e_flags,
        _ => return None,
    };
    match flags & 0xFF {
        0x30 => Some(Target::Gfx908),
        0x3F => Some(Target::Gfx90a),
        0x4C | 0x40 | 0x41 => Some(Target::Gfx942),
        _ => None,
    }
}

/// inlay's listing of every executable section, like `llvm-objdump -d`.
pub fn inlay_listing(data: &[u8], file_name: &str) -> Option<String> {
    let mut out = String::new();
    with_sections(data, |target, sections| {
        write_file_header(file_name, &mut out);
        for s in sections {
            let s = Section { file_name, ..*s };
            write_section(target, &s, &mut out);
        }
    })?;
    Some(out)
}

fn listing_symbol<'d>(s: &object::Symbol<'d, '_>) -> Option<Symbol<'d>> {
    let kind = match s.kind() {
        object::SymbolKind::Text => SymbolKind::Function,
        object::SymbolKind::Data => SymbolKind::Object,
        object::SymbolKind::Section => SymbolKind::Section,
        object::SymbolKind::File => SymbolKind::File,
        object::SymbolKind::Unknown => SymbolKind::NoType,
        _ => SymbolKind::Other,
    };
    Some(Symbol {
        address: s.address(),
        name: s.name().ok()?,
        size: s.size(),
        kind,
    })
}

/// Calls `f` with the target and every executable section (name, bytes,
/// address, symbols, and the whole file's symbols for branch targets) of an
/// ELF code object.
pub fn with_sections(data: &[u8], f: impl FnOnce(Target, &[Section])) -> Option<()> {
    let target = target_of(data)?;
    let file = object::File::parse(data).ok()?;
    // Every section with its symbols (the null section too, as objdump counts it).
    let mut per_section: Vec<Vec<Symbol>> = vec![Vec::new()];
    let mut extents = vec![(0u64, 0u64)];
    for sec in file.sections() {
        let syms = file
            .symbols()
            .filter(|s| s.section_index() == Some(sec.index()))
            .filter_map(|s| listing_symbol(&s))
            .collect();
        per_section.push(syms);
        extents.push((sec.address(), sec.size()));
    }
    let absolute: Vec<Symbol> = file
        .symbols()
        .filter(|s| s.section_index().is_none())
        .filter_map(|s| listing_symbol(&s))
        .collect();
    let sections_symbols: Vec<SectionSymbols> = extents
        .iter()
        .zip(&per_section)
        .map(|(&(address, size), symbols)| SectionSymbols {
            address,
            size,
            symbols,
        })
        .collect();
    let file_symbols = FileSymbols {
        relocatable: file.kind() == object::ObjectKind::Relocatable,
        sections: &sections_symbols,
        absolute: &absolute,
    };
    let mut secs = Vec::new();
    for (sec, syms) in file.sections().zip(&per_section[1..]) {
        let exec = matches!(sec.flags(), SectionFlags::Elf { sh_flags } if sh_flags & 4 != 0);
        if exec {
            secs.push((sec.name().ok()?, sec.data().ok()?, sec.address(), syms));
        }
    }
    let sections: Vec<Section> = secs
        .iter()
        .map(|(name, bytes, addr, syms)| Section {
            file_name: "",
            section_name: name,
            bytes,
            address: *addr,
            symbols: syms,
            file: Some(&file_symbols),
        })
        .collect();
    f(target, &sections);
    Some(())
}

/// `llvm-objdump-19 -d` output, run in `dir` on `name` so the header matches.
pub fn objdump(path: &Path) -> Option<String> {
    let out = Command::new("llvm-objdump-19")
        .arg("-d")
        .arg(path.file_name()?)
        .current_dir(path.parent()?)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether an oracle tool exists; if not, fail under INLAY_REQUIRE_ORACLES=1, else skip.
pub fn have_tool(tool: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        if std::env::var("INLAY_REQUIRE_ORACLES").as_deref() == Ok("1") {
            panic!("oracle {tool} is required (INLAY_REQUIRE_ORACLES=1) but missing");
        }
        eprintln!("note: {tool} not found; skipping oracle test");
    }
    ok
}

/// Lines that differ: (line number, ours, theirs). Stops after `limit`.
pub fn diff_lines(ours: &str, theirs: &str, limit: usize) -> (usize, Vec<(usize, String, String)>) {
    let a: Vec<&str> = ours.lines().collect();
    let b: Vec<&str> = theirs.lines().collect();
    let mut n = 0;
    let mut v = Vec::new();
    for k in 0..a.len().max(b.len()) {
        let x = a.get(k).copied().unwrap_or("<missing>");
        let y = b.get(k).copied().unwrap_or("<missing>");
        if x != y {
            n += 1;
            if v.len() < limit {
                v.push((k + 1, x.to_string(), y.to_string()));
            }
        }
    }
    (n, v)
}

/// Distinct mnemonics in the executable sections of a code object (inlay's decoder).
pub fn mnemonics(data: &[u8]) -> std::collections::HashSet<&'static str> {
    let mut set = std::collections::HashSet::new();
    let (Some(target), Ok(f)) = (target_of(data), object::File::parse(data)) else {
        return set;
    };
    let dec = inlay_isa::Decoder::new(target);
    let mut inst = inlay_isa::Instruction::default();
    for sec in f.sections() {
        if !matches!(sec.flags(), SectionFlags::Elf { sh_flags } if sh_flags & 4 != 0) {
            continue;
        }
        let bytes = sec.data().unwrap_or(&[]);
        let mut off = 0;
        while let Ok(n) = dec.decode_into(&bytes[off..], &mut inst) {
            set.insert(inst.mnemonic());
            off += n;
        }
    }
    set
}

/// Instruction lines keyed by their `// ADDRESS:` comment, for comparing
/// listings that lose step (different instruction sizes): (address, ours, theirs).
pub fn diff_by_address(ours: &str, theirs: &str) -> Vec<(u64, String, String)> {
    fn index(s: &str) -> std::collections::BTreeMap<u64, &str> {
        s.lines()
            .filter_map(|l| {
                let a = l.split("// ").nth(1)?.split(':').next()?;
                Some((u64::from_str_radix(a, 16).ok()?, l))
            })
            .collect()
    }
    let (a, b) = (index(ours), index(theirs));
    let mut keys: Vec<u64> = a.keys().chain(b.keys()).copied().collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let (x, y) = (
                a.get(&k).copied().unwrap_or("<none>"),
                b.get(&k).copied().unwrap_or("<none>"),
            );
            (x != y).then(|| (k, x.to_string(), y.to_string()))
        })
        .collect()
}

/// Decodes every instruction of every code section and checks that encoding it
/// gives back its bytes. Returns (instructions checked, mismatches as text).
pub fn round_trip(data: &[u8]) -> (usize, Vec<String>) {
    let (mut count, mut bad) = (0, Vec::new());
    with_sections(data, |target, sections| {
        let decoder = inlay_isa::Decoder::new(target);
        let mut inst = inlay_isa::Instruction::default();
        for s in sections {
            let mut at = 0;
            while let Ok(n) = decoder.decode_into(&s.bytes[at..], &mut inst) {
                let bytes = inlay_isa::encode(&inst);
                if bytes != s.bytes[at..at + n] {
                    bad.push(format!(
                        "{:#x}: {:02x?} re-encodes as {bytes:02x?}",
                        s.address + at as u64,
                        &s.bytes[at..at + n]
                    ));
                }
                count += 1;
                at += n;
            }
        }
    });
    (count, bad)
}
