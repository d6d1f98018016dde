//! `inlay disasm`: the listing `llvm-objdump-19 -d` prints, for a code object or for
//! every code object inside a bundle, compressed bundle, fat binary or host library.

use std::collections::BTreeSet;
use std::io::{self, Write};

use inlay_codeobj::container::{identify, walk, Entry, EntryKind, Format};
use inlay_codeobj::elf::{ET_REL, SHF_EXECINSTR};
use inlay_codeobj::symbols::{Symbol, SymbolKind, SymbolTable};
use inlay_codeobj::CodeObject;
use inlay_isa::listing::{self, write_file_header_bytes, write_section_bytes};
use inlay_isa::{Decoder, Instruction, Target};
use serde_json::{json, Value};

use crate::json::JsonObject;
use crate::report::{Input, Problems};

pub struct Options<'a> {
    /// Only this kernel and the device functions it calls (directly, transitively).
    pub kernel: Option<&'a str>,
}

/// What listing one code object came to.
enum Listed {
    /// Its listing is in the buffer.
    Yes,
    /// It does not define the `--kernel` asked for.
    NoKernel,
    /// Its target is one Inlay does not disassemble.
    Unsupported(String),
    /// It could not be read.
    Problem(String),
}

/// Lists the code object `entry` (found in a file of `file_len` bytes called
/// `name`) into `out`, as objdump lists it.
fn list_code_object(
    entry: &Entry,
    name: &str,
    file_len: usize,
    opts: &Options,
    out: &mut Vec<u8>,
) -> Listed {
    // A plain code object is headed by its file name, exactly as objdump does;
    // code objects inside containers by their location.
    let label = if entry.offset == Some(0) && entry.bytes.len() == file_len {
        name
    } else {
        entry.location.as_str()
    };
    // The listing needs sections and symbols only; --kernel needs the kernels.
    let parsed = match opts.kernel {
        None => CodeObject::parse_code(&entry.bytes),
        Some(_) => CodeObject::parse(&entry.bytes),
    };
    let co = match parsed {
        Ok(co) => co,
        Err(e) => return Listed::Problem(e.within(entry.location.clone()).to_string()),
    };
    let Some(target) = Target::from_name(co.target.processor.name()) else {
        return Listed::Unsupported(co.target.processor.name().to_string());
    };
    if opts.kernel.is_some_and(|k| co.kernel(k).is_none()) {
        return Listed::NoKernel;
    }
    write_code_object(&co, target, label, opts, out);
    Listed::Yes
}

/// Per input file, what was listed: for the problems and notes at its end.
#[derive(Default)]
struct FileTally {
    listed: usize,
    /// Problems reported for the file.
    problems: usize,
    /// Code objects skipped for their target, and the targets.
    unsupported: usize,
    targets: BTreeSet<String>,
}

impl FileTally {
    fn count(&mut self, listed: &Listed, problems: &mut Problems) {
        match listed {
            Listed::Yes => self.listed += 1,
            Listed::NoKernel => {}
            Listed::Unsupported(target) => {
                self.unsupported += 1;
                self.targets.insert(target.clone());
            }
            Listed::Problem(what) => self.problem(what, problems),
        }
    }

    fn problem(&mut self, what: impl std::fmt::Display, problems: &mut Problems) {
        self.problems += 1;
        problems.report(what);
    }

    /// The end of a file: a file with nothing to list is a problem (unless
    /// its problems were already reported); code objects skipped for their
    /// target are noted.
    fn finish(self, name: &str, opts: &Options, problems: &mut Problems) {
        if self.listed == 0 && self.problems == 0 {
            problems.report(match opts.kernel {
                Some(k) => format!("{name}: no code object defines kernel {k}"),
                None => format!("{name}: no gfx908, gfx90a or gfx942 code object found"),
            });
        } else if self.unsupported > 0 {
            let targets: Vec<&str> = self.targets.iter().map(String::as_str).collect();
            let _ = writeln!(
                std::io::stderr().lock(),
                "inlay: note: {name}: {} code objects for {} not listed (inlay disassembles gfx908, gfx90a and gfx942)",
                self.unsupported,
                targets.join(", ")
            );
        }
    }
}

/// Disassembles everything in `input` into `out`, one code object after
/// another (the demo's listing).
pub fn disasm(input: &Input, opts: &Options, out: &mut Vec<u8>, problems: &mut Problems) {
    let mut tally = FileTally::default();
    for entry in walk(input.bytes, &input.name) {
        match entry {
            Ok(entry) if entry.kind == EntryKind::CodeObject => {
                let listed = list_code_object(&entry, &input.name, input.bytes.len(), opts, out);
                tally.count(&listed, problems);
                input.release(&entry);
            }
            Ok(_) => {}
            Err(e) => tally.problem(e, problems),
        }
    }
    tally.finish(&input.name, opts, problems);
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

/// `disasm --json` of one file: every instruction of every code object,
/// structured, with the registers it reads and writes, as described in
/// `docs/disasm-json.md`. Written function by function, so memory stays at
/// one function's instructions whatever the file's size.
pub fn disasm_json(
    input: &Input,
    opts: &Options,
    out: &mut dyn Write,
    problems: &mut Problems,
) -> io::Result<()> {
    let name = input.name.as_str();
    if identify(input.bytes) == Format::Unknown {
        problems.report(format!(
            "{name}: not a code object, offload bundle, compressed bundle or ELF file"
        ));
        return Ok(());
    }
    let mut tally = FileTally::default();
    let mut doc = JsonObject::start(out, 0)?;
    let mut code_objects = doc.array(out, "code_objects")?;
    for entry in walk(input.bytes, name) {
        let entry = match entry {
            Ok(e) if e.kind == EntryKind::CodeObject => e,
            Ok(_) => continue,
            Err(e) => {
                tally.problem(e, problems);
                continue;
            }
        };
        let listed = match CodeObject::parse(&entry.bytes) {
            Err(e) => Listed::Problem(e.within(entry.location.clone()).to_string()),
            Ok(co) => match Target::from_name(co.target.processor.name()) {
                None => Listed::Unsupported(co.target.processor.name().to_string()),
                Some(_) if opts.kernel.is_some_and(|k| co.kernel(k).is_none()) => Listed::NoKernel,
                Some(target) => {
                    let mut object = code_objects.object(out)?;
                    code_object_json(out, &mut object, &co, target, opts)?;
                    object.member(out, "location", &entry.location)?;
                    object.member(out, "target_id", &co.target.to_string())?;
                    object.end(out)?;
                    Listed::Yes
                }
            },
        };
        tally.count(&listed, problems);
        input.release(&entry);
    }
    code_objects.end(out)?;
    doc.member(out, "file", name)?;
    doc.member(out, "schema", JSON_SCHEMA)?;
    doc.end(out)?;
    out.write_all(b"\n")?;
    tally.finish(name, opts, problems);
    Ok(())
}

/// The `functions` member of a code object: each function's fields in key
/// order, its instructions streamed.
fn code_object_json(
    out: &mut dyn Write,
    object: &mut JsonObject,
    co: &CodeObject,
    target: Target,
    opts: &Options,
) -> io::Result<()> {
    let symbols = label_symbols(co);
    let wanted = opts
        .kernel
        .map(|k| reachable_functions(co, target, &symbols, k));
    let mut functions = object.array(out, "functions")?;
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
        let mut function = functions.object(out)?;
        function.member(out, "address", &json!(f.value))?;
        let mut instructions = function.array(out, "instructions")?;
        for_each_instruction(target, body, f.value, |value| {
            instructions.item(out, &value)
        })?;
        instructions.end(out)?;
        function.member(out, "kind", &f.kind)?;
        function.member(out, "name", f.name)?;
        function.member(out, "size", &f.size)?;
        function.end(out)?;
    }
    functions.end(out)
}

/// Calls `each` with every instruction of `body` (at `address`) as its JSON object.
fn for_each_instruction(
    target: Target,
    body: &[u8],
    address: u64,
    mut each: impl FnMut(Value) -> io::Result<()>,
) -> io::Result<()> {
    use inlay_isa::format::to_string;
    let decoder = Decoder::new(target);
    let mut inst = Instruction::default();
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
        each(json!({
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
        }))?;
        off += n;
    }
    Ok(())
}

/// `inlay disasm FILES…` (text): the code objects of every file, in order,
/// listed on every core and written as soon as each and those before it are
/// done. Jobs are code objects, not files, so one large library is listed in
/// parallel too; at most a few finished listings wait in memory for the
/// writer, and each code object's pages of the input are released once it is
/// listed, so memory stays at a few code objects whatever the input's size.
/// Every file is listed even if some fail; problems go to `problems`.
pub fn list_files(
    inputs: &[Result<Input, String>],
    opts: &Options,
    out: &mut dyn Write,
    problems: &mut Problems,
) -> io::Result<()> {
    use std::collections::BTreeMap;
    use std::sync::{Condvar, Mutex, PoisonError};

    /// What the writer does with job number n, in order.
    enum Done {
        /// A code object's listing (empty unless `Listed::Yes`).
        CodeObject(usize, Listed, Vec<u8>),
        /// A walk error in file n.
        WalkError(usize, String),
        /// File n could not be opened.
        Unopened(String),
        /// File n has no more code objects.
        EndOfFile(usize),
    }
    struct State<'a> {
        /// The file being walked and its walk.
        file: usize,
        walk: Option<inlay_codeobj::container::Walk<'a>>,
        /// Jobs handed out so far, and written so far (in order).
        taken: usize,
        written: usize,
        /// Every job has been handed out: the total.
        total: Option<usize>,
        /// Finished jobs not yet written, by number.
        done: BTreeMap<usize, Done>,
        /// Emptied buffers to reuse.
        pool: Vec<Vec<u8>>,
        /// The writer stopped (closed pipe): workers stop too.
        stop: bool,
    }
    /// A job: what to do, taken under the lock (walking is cheap), done outside it.
    enum Job<'a> {
        List(usize, &'a Input<'a>, Entry<'a>, Vec<u8>),
        Ready(Done),
    }
    impl<'a> State<'a> {
        /// The next job, advancing over files and their walks.
        fn next_job(&mut self, inputs: &'a [Result<Input<'a>, String>]) -> Option<Job<'a>> {
            loop {
                let input = inputs.get(self.file)?;
                let input = match input {
                    Err(e) => {
                        self.file += 1;
                        return Some(Job::Ready(Done::Unopened(e.clone())));
                    }
                    Ok(input) => input,
                };
                let walk = self
                    .walk
                    .get_or_insert_with(|| walk(input.bytes, &input.name));
                match walk.next() {
                    Some(Ok(entry)) if entry.kind == EntryKind::CodeObject => {
                        let buf = self.pool.pop().unwrap_or_default();
                        return Some(Job::List(self.file, input, entry, buf));
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => {
                        return Some(Job::Ready(Done::WalkError(self.file, e.to_string())))
                    }
                    None => {
                        self.walk = None;
                        self.file += 1;
                        return Some(Job::Ready(Done::EndOfFile(self.file - 1)));
                    }
                }
            }
        }
    }

    let workers = rayon::current_num_threads().max(1);
    // Listings done ahead of the writer are held in memory: at most this many.
    let window = 2 * workers;
    let state = Mutex::new(State {
        file: 0,
        walk: None,
        taken: 0,
        written: 0,
        total: None,
        done: BTreeMap::new(),
        pool: Vec::new(),
        stop: false,
    });
    let changed = Condvar::new();
    let lock = || state.lock().unwrap_or_else(PoisonError::into_inner);
    let work = || loop {
        let (number, job) = {
            let mut s = lock();
            while !s.stop && s.total.is_none() && s.taken >= s.written + window {
                s = changed.wait(s).unwrap_or_else(PoisonError::into_inner);
            }
            if s.stop || s.total.is_some() {
                return;
            }
            match s.next_job(inputs) {
                Some(job) => {
                    s.taken += 1;
                    (s.taken - 1, job)
                }
                None => {
                    s.total = Some(s.taken);
                    changed.notify_all();
                    return;
                }
            }
        };
        let done = match job {
            Job::Ready(done) => done,
            Job::List(file, input, entry, mut buf) => {
                buf.clear();
                let listed =
                    list_code_object(&entry, &input.name, input.bytes.len(), opts, &mut buf);
                input.release(&entry);
                Done::CodeObject(file, listed, buf)
            }
        };
        lock().done.insert(number, done);
        changed.notify_all();
    };
    let mut tallies: Vec<FileTally> = inputs.iter().map(|_| FileTally::default()).collect();
    let mut result = Ok(());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(work);
        }
        for number in 0.. {
            let done = {
                let mut s = lock();
                loop {
                    if let Some(d) = s.done.remove(&number) {
                        break Some(d);
                    }
                    if s.total.is_some_and(|t| number >= t) {
                        break None;
                    }
                    s = changed.wait(s).unwrap_or_else(PoisonError::into_inner);
                }
            };
            let Some(done) = done else { break };
            let written = match done {
                Done::CodeObject(file, listed, buf) => {
                    let written = out.write_all(&buf);
                    tallies[file].count(&listed, problems);
                    lock().pool.push(buf);
                    written
                }
                Done::WalkError(file, what) => {
                    tallies[file].problem(what, problems);
                    Ok(())
                }
                Done::Unopened(what) => {
                    problems.report(what);
                    Ok(())
                }
                Done::EndOfFile(file) => {
                    if let Ok(input) = &inputs[file] {
                        std::mem::take(&mut tallies[file]).finish(&input.name, opts, problems);
                    }
                    Ok(())
                }
            };
            let mut s = lock();
            s.written = number + 1;
            if let Err(e) = written {
                s.stop = true;
                result = Err(e);
            }
            changed.notify_all();
            if s.stop {
                break;
            }
        }
    });
    result
}
