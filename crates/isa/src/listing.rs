//! Whole `llvm-objdump -d` output for a code section, from plain inputs.

use core::fmt::Write;

use crate::decode::{base_len, Decoder};
use crate::format::{comment, format};
use crate::model::{Encoding, Instruction, Target};
use crate::tables::{ImmKind, Slot};

/// Kind of a symbol, as the ELF symbol table says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    Function,
    Object,
    NoType,
    Section,
    File,
    Other,
}

/// A symbol defined in the section being listed.
#[derive(Clone, Copy, Debug)]
pub struct Symbol<'a> {
    pub address: u64,
    pub name: &'a str,
    pub size: u64,
    pub kind: SymbolKind,
}

/// One code section to list.
#[derive(Clone, Copy, Debug, Default)]
pub struct Section<'a> {
    /// File name as printed in the header line.
    pub file_name: &'a str,
    pub section_name: &'a str,
    pub bytes: &'a [u8],
    /// Address of the first byte.
    pub address: u64,
    pub symbols: &'a [Symbol<'a>],
    /// The rest of the file, for branches that leave the section (without
    /// it, they are named from this section's symbols, as in a relocatable
    /// file).
    pub file: Option<&'a FileSymbols<'a>>,
}

/// What llvm-objdump looks at to name a branch target outside the listed
/// section.
///
/// In a linked file the target belongs to the section(s) starting at the
/// highest address at or below it (every section counts, unallocated ones at
/// address 0), and is named after the last symbol of that section at or
/// below it, however far away; failing that, after the last absolute or
/// undefined symbol at or below it. A relocatable file names every target
/// from the listed section's own symbols, then the absolute ones. Targets
/// are 64-bit: a branch back past address 0 lands near the top of memory.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileSymbols<'a> {
    pub relocatable: bool,
    /// Every section of the file with its symbols, in section-table order.
    pub sections: &'a [SectionSymbols<'a>],
    /// Symbols of no section (undefined or absolute).
    pub absolute: &'a [Symbol<'a>],
}

/// One section's extent and symbols (see [`FileSymbols`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct SectionSymbols<'a> {
    pub address: u64,
    pub size: u64,
    pub symbols: &'a [Symbol<'a>],
}

/// Text column where the `// ADDRESS: WORDS` comment starts.
const COMMENT_COLUMN: usize = 59;

/// The header llvm-objdump prints once per file.
pub fn write_file_header(file_name: &str, out: &mut String) {
    let _ = write!(out, "\n{file_name}:\tfile format elf64-amdgpu\n");
}

/// [`write_file_header`] into bytes.
pub fn write_file_header_bytes(file_name: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\n");
    out.extend_from_slice(file_name.as_bytes());
    out.extend_from_slice(b":\tfile format elf64-amdgpu\n");
}

/// Appends `Disassembly of section ...` and every label and instruction line.
pub fn write_section(target: Target, sec: &Section, out: &mut String) {
    let mut bytes = Vec::new();
    write_section_bytes(target, sec, &mut bytes);
    // Everything written is ASCII or comes from a `&str` (symbol names).
    out.push_str(&String::from_utf8_lossy(&bytes));
}

/// [`write_section`] into bytes (UTF-8), the fast path for whole listings.
///
/// Instruction lines are memoised per thread: the text of a line except its
/// address and branch annotation is a function of the target and the words
/// alone, and real code repeats the same words a lot.
pub fn write_section_bytes(target: Target, sec: &Section, out: &mut Vec<u8>) {
    LINES.with(|cache| match cache.try_borrow_mut() {
        Ok(mut cache) => write_section_with(target, sec, &mut cache, out),
        // Not reachable (no re-entry), but a fresh cache is always correct.
        Err(_) => write_section_with(target, sec, &mut LineCache::new(), out),
    })
}

fn write_section_with(target: Target, sec: &Section, cache: &mut LineCache, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\nDisassembly of section ");
    out.extend_from_slice(sec.section_name.as_bytes());
    out.extend_from_slice(b":\n");
    let labels = labels(sec);
    cache.set_target(target);
    let dec = Decoder::new(target);
    let mut inst = Instruction::default();
    let mut text = String::new();
    let mut note = String::new();
    let bytes = sec.bytes;
    let mut off = 0usize;
    let mut next_label = 0usize;
    out.reserve(bytes.len() * 4);
    while off < bytes.len() {
        let addr = sec.address + off as u64;
        while next_label < labels.len() && labels[next_label].0 <= addr {
            let (a, name) = labels[next_label];
            out.push(b'\n');
            hex_padded(out, a, 16, HEX_LOWER);
            out.extend_from_slice(b" <");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b">:\n");
            next_label += 1;
        }
        // Like objdump, list each symbol's bytes from its start: an
        // instruction whose words run on into the next symbol is shown
        // whole, and the next symbol is listed from its own address again.
        let region_end = labels
            .get(next_label)
            .map_or(bytes.len(), |l| (l.0 - sec.address) as usize)
            .min(bytes.len());
        let rest = bytes.get(off..).unwrap_or(&[]);
        let Some(w0) = read_u32(rest, 0) else {
            emit_bytes(out, rest, addr);
            break;
        };
        // Like objdump, skip runs of 8+ zero bytes (in whole words) up to the next label.
        if w0 == 0 {
            let zeros = rest[..region_end - off]
                .iter()
                .take_while(|b| **b == 0)
                .count();
            if zeros >= 8 {
                out.extend_from_slice(b"\t\t...\n");
                off += zeros & !3;
                continue;
            }
        }
        let w1 = read_u32(rest, 4);
        let base8 = base_len(w0) == 8;
        if let Some(e) = cache.short.get(w0, w1, base8) {
            // The common case: a short text, whose line has a fixed layout.
            let n = dec.valid_len(w0);
            debug_assert_eq!(n, e.size as usize);
            emit_short(out, &e.text, addr, w0, w1.filter(|_| n == 8));
            if e.branch {
                annotate_branch(out, sec, &labels, branch_target_of(w0, addr));
            }
            out.push(b'\n');
            off = (off + n).min(region_end);
            continue;
        }
        let hit = cache
            .long
            .get(w0, w1, base8)
            .map(|e| (e.size, e.branch, &e.text[..], e.text_len));
        let (n, branch) = match hit {
            Some((size, branch, text, text_len)) => {
                // Only valid instructions are kept, so the size follows from the
                // words through the opcode tables; taking it from there instead of
                // the entry keeps the next lookup from waiting on this one's load.
                let n = dec.valid_len(w0);
                debug_assert_eq!(n, size as usize);
                let w1 = if n == 8 { w1 } else { None };
                emit_line(out, text, text_len as usize, addr, w0, w1);
                (n, branch)
            }
            None => {
                // Cut short by the section's end, an instruction is a data word.
                let n = dec
                    .decode_into(rest, &mut inst)
                    .unwrap_or_else(|_| inst.make_data_word(w0));
                text.clear();
                format(&inst, &mut text);
                emit_line_slow(out, text.as_bytes(), addr, inst.words());
                let branch = names_target(&inst);
                note.clear();
                comment(&inst, &mut note);
                if note.is_empty() {
                    cache.keep(&inst, n, branch, text.as_bytes());
                } else {
                    if branch {
                        annotate_branch(out, sec, &labels, branch_target_of(w0, addr));
                    }
                    out.extend_from_slice(b" ; ");
                    out.extend_from_slice(note.as_bytes());
                    out.push(b'\n');
                    off = (off + n).min(region_end);
                    continue;
                }
                (n, branch)
            }
        };
        if branch {
            annotate_branch(out, sec, &labels, branch_target_of(w0, addr));
        }
        out.push(b'\n');
        off = (off + n).min(region_end);
    }
}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";
const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// Fills `dst` with the low `dst.len()` hex digits of `v`.
fn hex_into(dst: &mut [u8], v: u64, table: &[u8; 16]) {
    let n = dst.len();
    for (k, d) in dst.iter_mut().enumerate() {
        let shift = 4 * (n - 1 - k);
        *d = if shift < 64 {
            table[((v >> shift) & 0xF) as usize]
        } else {
            b'0'
        };
    }
}

fn hex_padded(out: &mut Vec<u8>, v: u64, digits: usize, table: &[u8; 16]) {
    let mut buf = [0u8; 16];
    let n = digits.min(16);
    hex_into(&mut buf[..n], v, table);
    out.extend_from_slice(&buf[..n]);
}

/// One memoised instruction text, padded with spaces to `CAP` bytes. Short
/// texts (most) live in entries of one cache line, longer ones of two.
#[derive(Clone)]
#[repr(C, align(64))]
struct Entry<const CAP: usize> {
    w0: u32,
    w1: u32,
    /// Instruction size in bytes; 0 = empty entry.
    size: u8,
    /// The text depends on the second word (an 8-byte instruction).
    uses_w1: bool,
    branch: bool,
    text_len: u8,
    text: [u8; CAP],
}

const SHORT: usize = 52;
const LONG: usize = 116;
const SHORT_BITS: u32 = 16;
const LONG_BITS: u32 = 12;

impl<const CAP: usize> Entry<CAP> {
    const EMPTY: Entry<CAP> = Entry {
        w0: 0,
        w1: 0,
        size: 0,
        uses_w1: false,
        branch: false,
        text_len: 0,
        text: [b' '; CAP],
    };
}

/// A direct-mapped table of texts keyed by the instruction words.
struct Table<const CAP: usize> {
    bits: u32,
    entries: Vec<Entry<CAP>>,
}

impl<const CAP: usize> Table<CAP> {
    fn index(&self, w0: u32, w1: u32, use_w1: bool) -> usize {
        let key = u64::from(w0) | if use_w1 { u64::from(w1) << 32 } else { 0 };
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.bits)) as usize
    }

    fn get(&self, w0: u32, w1: Option<u32>, base8: bool) -> Option<&Entry<CAP>> {
        let e = self.entries.get(self.index(w0, w1.unwrap_or(0), base8))?;
        let hit = e.size != 0 && e.w0 == w0 && (!e.uses_w1 || w1 == Some(e.w1));
        hit.then_some(e)
    }

    fn put(&mut self, words: &[u32], size: usize, branch: bool, text: &[u8]) {
        let w0 = words.first().copied().unwrap_or(0);
        let w1 = words.get(1).copied().unwrap_or(0);
        let k = self.index(w0, w1, base_len(w0) == 8);
        if let Some(e) = self.entries.get_mut(k) {
            e.w0 = w0;
            e.w1 = w1;
            e.uses_w1 = size == 8;
            e.size = size as u8;
            e.branch = branch;
            e.text_len = text.len() as u8;
            e.text = [b' '; CAP];
            e.text[..text.len()].copy_from_slice(text);
        }
    }
}

/// Per-thread memo of instruction texts for one target.
struct LineCache {
    target: Option<Target>,
    short: Table<SHORT>,
    long: Table<LONG>,
}

thread_local! {
    static LINES: core::cell::RefCell<LineCache> = core::cell::RefCell::new(LineCache::new());
}

impl LineCache {
    fn new() -> LineCache {
        LineCache {
            target: None,
            short: Table {
                bits: SHORT_BITS,
                entries: Vec::new(),
            },
            long: Table {
                bits: LONG_BITS,
                entries: Vec::new(),
            },
        }
    }

    fn set_target(&mut self, target: Target) {
        if self.target != Some(target) || self.short.entries.is_empty() {
            self.short.entries.clear();
            self.short.entries.resize(1 << SHORT_BITS, Entry::EMPTY);
            self.long.entries.clear();
            self.long.entries.resize(1 << LONG_BITS, Entry::EMPTY);
            self.target = Some(target);
        }
    }

    /// Keeps the text of a freshly decoded instruction of `size` bytes.
    fn keep(&mut self, inst: &Instruction, size: usize, branch: bool, text: &[u8]) {
        // An invalid result may come from rejected bits in the second word,
        // which the key does not hold for 4-byte results: never kept (rare).
        if !inst.is_valid() {
            return;
        }
        if text.len() <= SHORT {
            self.short.put(inst.words(), size, branch, text);
        } else if text.len() <= LONG {
            self.long.put(inst.words(), size, branch, text);
        }
    }
}

/// Byte -> two upper-case hex digits.
const HEX_PAIRS: [[u8; 2]; 256] = {
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = [HEX_UPPER[i >> 4], HEX_UPPER[i & 15]];
        i += 1;
    }
    t
};

/// Upper-case hex of the low `dst.len() / 2` bytes of `v` into `dst`.
fn hex_pairs(dst: &mut [u8], v: u64) {
    let n = dst.len() / 2;
    for (k, pair) in dst.chunks_exact_mut(2).enumerate() {
        let shift = 8 * (n - 1 - k);
        let byte = if shift < 64 { (v >> shift) & 0xFF } else { 0 };
        pair.copy_from_slice(&HEX_PAIRS[byte as usize]);
    }
}

/// Appends `\t{text}{pad}// ADDRESS: W0 W1` (no newline). `text` is the
/// instruction text followed by spaces: `text_len` bytes count.
fn emit_line(out: &mut Vec<u8>, text: &[u8], text_len: usize, addr: u64, w0: u32, w1: Option<u32>) {
    const CAP: usize = 1 + LONG + 3 + 12 + 1 + 18;
    let mut buf = [b' '; CAP];
    buf[0] = b'\t';
    let copy = text.len().min(LONG);
    buf[1..1 + copy].copy_from_slice(&text[..copy]);
    let p = 1 + text_len.clamp(COMMENT_COLUMN, LONG);
    buf[p..p + 3].copy_from_slice(b"// ");
    hex_pairs(&mut buf[p + 3..p + 15], addr);
    buf[p + 15] = b':';
    hex_pairs(&mut buf[p + 17..p + 25], u64::from(w0));
    let mut len = p + 25;
    if let Some(w1) = w1 {
        hex_pairs(&mut buf[p + 26..p + 34], u64::from(w1));
        len = p + 34;
    }
    // A fixed-size copy (no call), then cut to the line's length.
    let start = out.len();
    out.extend_from_slice(&buf);
    out.truncate(start + len);
}

/// ` <symbol+0xOFF>` after a branch to `t`, if objdump can name it.
fn annotate_branch(out: &mut Vec<u8>, sec: &Section, labels: &[(u64, &str)], t: u64) {
    let Some((at, name)) = target_symbol(sec, labels, t) else {
        return;
    };
    out.extend_from_slice(b" <");
    out.extend_from_slice(name.as_bytes());
    if t != at {
        out.extend_from_slice(b"+0x");
        let d = t.wrapping_sub(at);
        let digits = (64 - d.leading_zeros()).div_ceil(4).max(1) as usize;
        hex_padded(out, d, digits, HEX_LOWER);
    }
    out.push(b'>');
}

/// The symbol a branch target is named after (see [`FileSymbols`]).
fn target_symbol<'a>(
    sec: &Section<'a>,
    labels: &[(u64, &'a str)],
    t: u64,
) -> Option<(u64, &'a str)> {
    let in_section = t
        .checked_sub(sec.address)
        .is_some_and(|d| d < sec.bytes.len() as u64);
    let file = match sec.file {
        Some(file) if !in_section => file,
        _ => return last_label(labels, t),
    };
    if file.relocatable {
        return last_label(labels, t).or_else(|| last_symbol(file.absolute, t));
    }
    let Some(start) = file
        .sections
        .iter()
        .map(|s| s.address)
        .filter(|a| *a <= t)
        .max()
    else {
        return last_symbol(file.absolute, t);
    };
    // Of the sections starting there, objdump tries the larger ones first,
    // and of those of one size the later one.
    let mut here: Vec<&SectionSymbols> = file
        .sections
        .iter()
        .rev()
        .filter(|s| s.address == start)
        .collect();
    here.sort_by_key(|s| core::cmp::Reverse(s.size));
    here.iter()
        .find_map(|s| {
            if s.address == sec.address && s.size == sec.bytes.len() as u64 {
                last_label(labels, t)
            } else {
                last_symbol(s.symbols, t)
            }
        })
        .or_else(|| last_symbol(file.absolute, t))
}

/// The last label at or below `t`.
fn last_label<'a>(labels: &[(u64, &'a str)], t: u64) -> Option<(u64, &'a str)> {
    let k = labels.partition_point(|(a, _)| *a <= t);
    k.checked_sub(1).and_then(|k| labels.get(k)).copied()
}

/// The last symbol at or below `t` of an unsorted list (objdump's order:
/// by address, then name).
fn last_symbol<'a>(symbols: &[Symbol<'a>], t: u64) -> Option<(u64, &'a str)> {
    symbols
        .iter()
        .filter(|s| names_code(s) && s.address <= t)
        .map(|s| (s.address, s.name))
        .max()
}

/// Symbols objdump labels code with and names targets after: not section
/// or file symbols, not unnamed ones.
fn names_code(s: &Symbol) -> bool {
    !matches!(s.kind, SymbolKind::Section | SymbolKind::File) && !s.name.is_empty()
}

/// The line of a short text: `\t`, the text padded to the comment column,
/// `// `, address, `:`, words, all at fixed positions.
const SHORT_LINE: [u8; 95] = {
    let mut t = [b' '; 95];
    t[0] = b'\t';
    t[60] = b'/';
    t[61] = b'/';
    t[75] = b':';
    t
};

fn emit_short(out: &mut Vec<u8>, text: &[u8; SHORT], addr: u64, w0: u32, w1: Option<u32>) {
    let start = out.len();
    out.extend_from_slice(&SHORT_LINE);
    let Some(line) = out.get_mut(start..start + SHORT_LINE.len()) else {
        return;
    };
    line[1..1 + SHORT].copy_from_slice(text);
    hex_pairs(&mut line[63..75], addr);
    hex_pairs(&mut line[77..85], u64::from(w0));
    let len = match w1 {
        Some(w1) => {
            hex_pairs(&mut line[86..94], u64::from(w1));
            94
        }
        None => 85,
    };
    out.truncate(start + len);
}

/// Appends objdump's line for fewer than 4 bytes left before a symbol or
/// the section's end: `.byte 0x01, 0x02`, then the bytes.
fn emit_bytes(out: &mut Vec<u8>, bytes: &[u8], addr: u64) {
    let mut text = String::from(".byte");
    for (k, b) in bytes.iter().enumerate() {
        let _ = write!(text, "{} 0x{b:02x}", if k == 0 { "" } else { "," });
    }
    emit_line_slow(out, text.as_bytes(), addr, &[]);
    for b in bytes {
        out.push(b' ');
        out.extend_from_slice(&HEX_PAIRS[usize::from(*b)]);
    }
    out.push(b'\n');
}

/// Appends a line whose text is not memoised (any length).
fn emit_line_slow(out: &mut Vec<u8>, text: &[u8], addr: u64, words: &[u32]) {
    out.push(b'\t');
    out.extend_from_slice(text);
    for _ in text.len()..COMMENT_COLUMN {
        out.push(b' ');
    }
    out.extend_from_slice(b"// ");
    let mut buf = [0u8; 12];
    hex_pairs(&mut buf, addr);
    out.extend_from_slice(&buf);
    out.push(b':');
    for w in words {
        out.push(b' ');
        hex_pairs(&mut buf[..8], u64::from(*w));
        out.extend_from_slice(&buf[..8]);
    }
}

/// Address a branch instruction jumps to (`None` for other instructions).
pub fn branch_target(i: &Instruction, addr: u64) -> Option<u64> {
    if i.encoding() != Encoding::Sopp && i.encoding() != Encoding::Sopk {
        return None;
    }
    if !i.slots().contains(&Slot::Imm(ImmKind::Branch)) {
        return None;
    }
    Some(branch_target_of(i.w0(), addr))
}

/// Whether objdump names the target after the instruction: branches whose
/// first operand is the offset (`s_branch`, `s_cbranch_*`; not `s_call_b64`
/// or `s_cbranch_i_fork`, whose offset follows a register).
fn names_target(i: &Instruction) -> bool {
    i.slots().first() == Some(&Slot::Imm(ImmKind::Branch))
}

/// Target of a branch whose first word is `w0` at `addr`.
fn branch_target_of(w0: u32, addr: u64) -> u64 {
    let simm = (w0 & 0xFFFF) as u16 as i16 as i64;
    (addr as i64).wrapping_add(4).wrapping_add(simm * 4) as u64
}

/// Labels printed in the listing: one per address (the section start gets
/// the section name if no symbol is there), sorted by address.
fn labels<'a>(sec: &'a Section<'a>) -> Vec<(u64, &'a str)> {
    let end = sec.address + sec.bytes.len() as u64;
    let mut v: Vec<(u64, &str)> = sec
        .symbols
        .iter()
        .filter(|s| names_code(s) && s.address >= sec.address && s.address < end)
        .map(|s| (s.address, s.name))
        .collect();
    v.sort_by_key(|s| s.0);
    v.dedup_by(|b, a| a.0 == b.0);
    if v.first().map(|s| s.0) != Some(sec.address) {
        v.insert(0, (sec.address, sec.section_name));
    }
    v
}
