//! `inlay disasm`: the listing `llvm-objdump-19 -d` prints, for a code object or for
//! every code object inside a bundle, compressed bundle, fat binary or host library.

use std::collections::BTreeSet;

use inlay_codeobj::container::{walk, EntryKind};
use inlay_codeobj::elf::{ET_REL, SHF_EXECINSTR};
use inlay_codeobj::symbols::{Symbol, SymbolKind, SymbolTable};
use inlay_codeobj::CodeObject;
use inlay_isa::listing::{self, write_file_header_bytes, write_section_bytes};
use inlay_isa::{Decoder, Instruction, Target};

pub struct Options<'a> {
    /// Only this kernel and the device functions it calls (directly, transitively).
    pub kernel: Option<&'a str>,
}

/// Disassembles everything in `data` (the file called `name`).
pub fn disasm(data: &[u8], name: &str, opts: &Options) -> Result<String, String> {
    let mut out = Vec::new();
    disasm_into(data, name, opts, &mut out)?;
    // The listing is ASCII plus symbol and file names, which are `&str`.
    String::from_utf8(out).map_err(|e| format!("{name}: listing is not UTF-8: {e}"))
}

/// [`disasm`] appending to a byte buffer (which can be reused across files).
pub fn disasm_into(
    data: &[u8],
    name: &str,
    opts: &Options,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let mut problems = Vec::new();
    let mut listed = 0;
    for entry in walk(data, name) {
        let entry = entry.map_err(|e| e.to_string())?;
        if entry.kind != EntryKind::CodeObject {
            continue;
        }
        // A plain code object is headed by its file name, exactly as objdump does;
        // code objects inside containers by their location.
        let label = if entry.offset == Some(0) && entry.bytes.len() == data.len() {
            name.to_string()
        } else {
            entry.location.clone()
        };
        // The listing needs sections and symbols only; --kernel needs the kernels.
        let parsed = match opts.kernel {
            None => CodeObject::parse_code(&entry.bytes),
            Some(_) => CodeObject::parse(&entry.bytes),
        };
        let co = match parsed {
            Ok(co) => co,
            Err(e) => {
                problems.push(e.within(entry.location.clone()).to_string());
                continue;
            }
        };
        let Some(target) = Target::from_name(co.target.processor.name()) else {
            problems.push(format!(
                "{}: target {} is not supported (gfx908, gfx90a, gfx942)",
                label, co.target
            ));
            continue;
        };
        if let Some(kernel) = opts.kernel {
            if co.kernel(kernel).is_none() {
                continue;
            }
        }
        write_code_object(&co, target, &label, opts, out);
        listed += 1;
    }
    if listed == 0 {
        let why = match opts.kernel {
            Some(k) => format!("{name}: no code object defines kernel {k}"),
            None => format!("{name}: no gfx908, gfx90a or gfx942 code object found"),
        };
        problems.push(why);
    }
    if !problems.is_empty() && listed == 0 {
        return Err(problems.join("\n"));
    }
    for p in problems {
        eprintln!("inlay: {p}");
    }
    Ok(())
}

/// The symbols objdump labels code with: `.symtab`, or `.dynsym` when stripped.
fn label_symbols<'d>(co: &'d CodeObject<'d>) -> Vec<&'d Symbol<'d>> {
    let has_symtab = co
        .symbols
        .all()
        .iter()
        .any(|s| s.table == SymbolTable::Symtab);
    let table = if has_symtab {
        SymbolTable::Symtab
    } else {
        SymbolTable::Dynsym
    };
    co.symbols
        .all()
        .iter()
        .filter(|s| s.table == table)
        .collect()
}

fn write_code_object(
    co: &CodeObject,
    target: Target,
    label: &str,
    opts: &Options,
    out: &mut Vec<u8>,
) {
    write_file_header_bytes(label, out);
    let symbols = label_symbols(co);
    let wanted = opts
        .kernel
        .map(|k| reachable_functions(co, target, &symbols, k));
    // Every section's symbols and extent: branch targets are named from them.
    let of_section = |index: usize| -> Vec<listing::Symbol> {
        symbols
            .iter()
            .filter(|s| usize::from(s.shndx) == index)
            .map(|s| listing_symbol(s))
            .collect()
    };
    let per_section: Vec<Vec<listing::Symbol>> =
        co.sections.iter().map(|s| of_section(s.index)).collect();
    let extents: Vec<listing::SectionSymbols> = co
        .sections
        .iter()
        .zip(&per_section)
        .map(|(s, symbols)| listing::SectionSymbols {
            address: s.addr,
            size: s.size,
            symbols,
        })
        .collect();
    // Undefined, absolute and common symbols belong to no section.
    let absolute: Vec<listing::Symbol> = symbols
        .iter()
        .filter(|s| s.shndx == 0 || s.shndx >= 0xFF00)
        .map(|s| listing_symbol(s))
        .collect();
    let file = listing::FileSymbols {
        relocatable: co.header.e_type == ET_REL,
        sections: &extents,
        absolute: &absolute,
    };
    for (section, in_section) in co
        .sections
        .iter()
        .zip(&per_section)
        .filter(|(s, _)| s.flags & SHF_EXECINSTR != 0)
    {
        let bytes = co.section_data(section);
        match &wanted {
            None => write_section_bytes(
                target,
                &listing::Section {
                    file_name: label,
                    section_name: section.name,
                    bytes,
                    address: section.addr,
                    symbols: in_section,
                    file: Some(&file),
                },
                out,
            ),
            Some(functions) => {
                // Only the chosen functions, each listed as objdump lists a symbol
                // selected with --disassemble-symbols.
                let heading = format!("\nDisassembly of section {}:\n", section.name);
                out.extend_from_slice(heading.as_bytes());
                for f in in_section.iter().filter(|s| functions.contains(s.name)) {
                    // Symbol values come from the file: a symbol outside its section is skipped.
                    let range = f.address.checked_sub(section.addr).and_then(|start| {
                        Some(start as usize..usize::try_from(start.checked_add(f.size)?).ok()?)
                    });
                    let Some(body) = range.and_then(|r| bytes.get(r)) else {
                        continue;
                    };
                    let mut one = Vec::new();
                    write_section_bytes(
                        target,
                        &listing::Section {
                            file_name: label,
                            section_name: section.name,
                            bytes: body,
                            address: f.address,
                            symbols: std::slice::from_ref(f),
                            file: Some(&file),
                        },
                        &mut one,
                    );
                    // Drop the section heading write_section adds for each piece.
                    out.extend_from_slice(one.strip_prefix(heading.as_bytes()).unwrap_or(&one));
                }
            }
        }
    }
}

fn listing_symbol<'d>(s: &Symbol<'d>) -> listing::Symbol<'d> {
    listing::Symbol {
        address: s.value,
        name: s.name,
        size: s.size,
        kind: match s.elf_type {
            0 => listing::SymbolKind::NoType,
            1 => listing::SymbolKind::Object,
            2 => listing::SymbolKind::Function,
            3 => listing::SymbolKind::Section,
            4 => listing::SymbolKind::File,
            _ => listing::SymbolKind::Other,
        },
    }
}

/// The kernel's entry function and every function it reaches through direct calls.
///
/// A direct call computes its target PC-relatively: `s_getpc_b64 s[a:a+1]`, then
/// `s_add_u32 sa, sa, lo` and `s_addc_u32 sa+1, sa+1, hi` (lo/hi filled by REL32
/// relocations at link time), then `s_swappc_b64`. The target is the address after
/// `s_getpc_b64` plus the 64-bit offset; functions containing it are followed.
fn reachable_functions<'d>(
    co: &'d CodeObject<'d>,
    target: Target,
    symbols: &[&'d Symbol<'d>],
    kernel: &str,
) -> BTreeSet<&'d str> {
    let functions: Vec<&Symbol> = symbols
        .iter()
        .copied()
        .filter(|s| matches!(s.kind, SymbolKind::Kernel | SymbolKind::DeviceFunction) && s.size > 0)
        .collect();
    let containing = |addr: u64| {
        functions
            .iter()
            .find(|f| addr >= f.value && addr < f.value.saturating_add(f.size))
    };
    let mut found = BTreeSet::new();
    let entry = co.kernel(kernel).and_then(|k| k.entry_address);
    let mut work: Vec<&Symbol> = entry.and_then(containing).into_iter().copied().collect();
    let decoder = Decoder::new(target);
    while let Some(f) = work.pop() {
        if !found.insert(f.name) {
            continue;
        }
        for call in call_targets(co, &decoder, f) {
            if let Some(g) = containing(call) {
                work.push(g);
            }
        }
    }
    found
}

/// Targets of the PC-relative address computations in function `f`.
fn call_targets(co: &CodeObject, decoder: &Decoder, f: &Symbol) -> Vec<u64> {
    let Some(section) = co.sections.iter().find(|s| s.index == usize::from(f.shndx)) else {
        return Vec::new();
    };
    let bytes = co.section_data(section);
    let start = f.value.saturating_sub(section.addr) as usize;
    let Some(body) = bytes.get(start..start.saturating_add(f.size as usize)) else {
        return Vec::new();
    };
    let mut targets = Vec::new();
    let mut pc_base: Option<(u64, u16)> = None; // (address after s_getpc, first SGPR)
    let mut lo: Option<u32> = None;
    let mut inst = Instruction::default();
    let mut off = 0;
    while off < body.len() {
        let Ok(n) = decoder.decode_into(&body[off..], &mut inst) else {
            break;
        };
        let addr = f.value.wrapping_add(off as u64);
        let ops: Vec<inlay_isa::Operand> = inst.operands().collect();
        let sgpr = |i: usize| match ops.get(i) {
            Some(inlay_isa::Operand::Sgpr { first, .. }) => Some(*first),
            _ => None,
        };
        let literal = |i: usize| match ops.get(i) {
            Some(inlay_isa::Operand::Literal(v)) => Some(*v),
            _ => None,
        };
        match inst.mnemonic() {
            "s_getpc_b64" => {
                pc_base = sgpr(0).map(|r| (addr.wrapping_add(n as u64), r));
                lo = None;
            }
            "s_add_u32" if pc_base.is_some_and(|(_, r)| sgpr(0) == Some(r)) => lo = literal(2),
            "s_addc_u32" if pc_base.is_some_and(|(_, r)| sgpr(0) == Some(r.wrapping_add(1))) => {
                if let (Some((base, _)), Some(lo), Some(hi)) = (pc_base, lo, literal(2)) {
                    let offset = (u64::from(hi) << 32 | u64::from(lo)) as i64;
                    targets.push(base.wrapping_add_signed(offset));
                }
                pc_base = None;
            }
            _ => {}
        }
        off += n;
    }
    targets
}

/// Version of the `disasm --json` document's shape.
pub const JSON_SCHEMA: &str = "inlay-disasm/1";

/// `disasm --json`: every instruction of every code object, structured, with the
/// registers it reads and writes. Described in `docs/disasm-json.md`.
pub fn disasm_json(data: &[u8], name: &str, opts: &Options) -> Result<serde_json::Value, String> {
    use serde_json::json;
    let mut code_objects = Vec::new();
    for entry in walk(data, name) {
        let entry = entry.map_err(|e| e.to_string())?;
        if entry.kind != EntryKind::CodeObject {
            continue;
        }
        let co = CodeObject::parse(&entry.bytes)
            .map_err(|e| e.within(entry.location.clone()).to_string())?;
        let Some(target) = Target::from_name(co.target.processor.name()) else {
            continue;
        };
        if opts.kernel.is_some_and(|k| co.kernel(k).is_none()) {
            continue;
        }
        let symbols = label_symbols(&co);
        let wanted = opts
            .kernel
            .map(|k| reachable_functions(&co, target, &symbols, k));
        let mut functions = Vec::new();
        for f in symbols.iter().filter(|s| s.elf_type == 2 && s.size > 0) {
            if wanted.as_ref().is_some_and(|w| !w.contains(f.name)) {
                continue;
            }
            let Some(section) = co.sections.iter().find(|s| s.index == usize::from(f.shndx)) else {
                continue;
            };
            let start = f.value.saturating_sub(section.addr) as usize;
            let Some(body) = co
                .section_data(section)
                .get(start..start.saturating_add(f.size as usize))
            else {
                continue;
            };
            functions.push(json!({
                "name": f.name,
                "kind": f.kind,
                "address": f.value,
                "size": f.size,
                "instructions": instructions_json(target, body, f.value),
            }));
        }
        code_objects.push(json!({
            "location": entry.location,
            "target_id": co.target.to_string(),
            "functions": functions,
        }));
    }
    if code_objects.is_empty() {
        return Err(format!(
            "{name}: no gfx908, gfx90a or gfx942 code object to disassemble"
        ));
    }
    let mut doc = json!({ "schema": JSON_SCHEMA, "file": name, "code_objects": code_objects });
    crate::demangle::annotate_json(&mut doc);
    Ok(doc)
}

fn instructions_json(target: Target, body: &[u8], address: u64) -> Vec<serde_json::Value> {
    use inlay_isa::format::to_string;
    use serde_json::json;
    let decoder = Decoder::new(target);
    let mut inst = Instruction::default();
    let mut list = Vec::new();
    let mut off = 0;
    while off < body.len() {
        let addr = address.wrapping_add(off as u64);
        let Ok(n) = decoder.decode_into(&body[off..], &mut inst) else {
            break;
        };
        let registers: Vec<_> = inlay_isa::info(&inst)
            .used_registers()
            .iter()
            .map(|u| {
                json!({
                    "file": format!("{:?}", u.register.file).to_lowercase(),
                    "first": u.register.first,
                    "count": u.register.count,
                    "access": format!("{:?}", u.access).to_lowercase(),
                    "operand": u.operand,
                })
            })
            .collect();
        list.push(json!({
            "address": addr,
            "size": n,
            "words": inst.words().iter().map(|w| format!("{w:08x}")).collect::<Vec<_>>(),
            "valid": inst.is_valid(),
            "encoding": format!("{:?}", inst.encoding()).to_lowercase(),
            "mnemonic": inst.mnemonic(),
            "opcode": inst.opcode().map(|o| o.name()),
            "text": to_string(&inst),
            "branch_target": listing::branch_target(&inst, addr),
            "registers": registers,
        }));
        off += n;
    }
    list
}

/// `inlay disasm FILES…` (text): lists the files in parallel and writes the
/// listings to stdout in order, each as soon as it and those before it are done,
/// so writing overlaps listing. Listing buffers are reused. Returns the exit code:
/// failure after the first file that cannot be listed (earlier ones are printed).
pub fn list_files(files: &[std::path::PathBuf], opts: &Options) -> std::process::ExitCode {
    use std::io::Write;
    use std::process::ExitCode;
    use std::sync::{Condvar, Mutex, PoisonError};

    struct State {
        /// Next file a worker takes.
        next: usize,
        /// Files written so far (they are written in order).
        written: usize,
        /// Finished listings not yet written, by file index.
        done: std::collections::BTreeMap<usize, Result<Vec<u8>, String>>,
        /// Emptied buffers to reuse.
        pool: Vec<Vec<u8>>,
        /// The writer stopped (error or closed pipe): workers stop too.
        stop: bool,
    }
    let workers = rayon::current_num_threads().clamp(1, files.len().max(1));
    // Listings done ahead of the writer are held in memory: at most this many.
    let window = workers + 1;
    let state = Mutex::new(State {
        next: 0,
        written: 0,
        done: Default::default(),
        pool: Vec::new(),
        stop: false,
    });
    let changed = Condvar::new();
    let lock = || state.lock().unwrap_or_else(PoisonError::into_inner);
    let work = || loop {
        let (index, mut buf) = {
            let mut s = lock();
            while !s.stop && s.next < files.len() && s.next >= s.written + window {
                s = changed.wait(s).unwrap_or_else(PoisonError::into_inner);
            }
            if s.stop || s.next >= files.len() {
                return;
            }
            s.next += 1;
            (s.next - 1, s.pool.pop().unwrap_or_default())
        };
        buf.clear();
        let file = &files[index];
        let name = file.display().to_string();
        let result = inlay_codeobj::file::MappedFile::open(file)
            .map_err(|e| e.to_string())
            .and_then(|f| disasm_into(f.bytes(), &name, opts, &mut buf))
            .map(|()| buf);
        lock().done.insert(index, result);
        changed.notify_all();
    };
    let mut code = ExitCode::SUCCESS;
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(work);
        }
        let mut stdout = std::io::stdout().lock();
        for index in 0..files.len() {
            let result = {
                let mut s = lock();
                loop {
                    if let Some(r) = s.done.remove(&index) {
                        break r;
                    }
                    s = changed.wait(s).unwrap_or_else(PoisonError::into_inner);
                }
            };
            let stop = match result {
                // A closed pipe (e.g. `| head`) ends the listing quietly.
                Ok(buf) => {
                    let closed = stdout.write_all(&buf).is_err();
                    lock().pool.push(buf);
                    closed
                }
                Err(e) => {
                    eprintln!("inlay: {e}");
                    code = ExitCode::FAILURE;
                    true
                }
            };
            let mut s = lock();
            s.written = index + 1;
            s.stop |= stop;
            changed.notify_all();
            if stop {
                break;
            }
        }
        let _ = stdout.flush();
    });
    code
}
