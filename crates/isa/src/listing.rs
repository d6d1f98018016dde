//! Whole `llvm-objdump -d` output for a code section, from plain inputs.

use core::fmt::Write;

use crate::decode::{base_len, Decoder};
use crate::format::format;
use crate::model::{Encoding, Instruction, Target};
use crate::tables::{ImmKind, Slot};

/// Kind of a symbol, as the ELF symbol table says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    Function,
    Object,
    NoType,
    Section,
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
#[derive(Clone, Copy, Debug)]
pub struct Section<'a> {
    /// File name as printed in the header line.
    pub file_name: &'a str,
    pub section_name: &'a str,
    pub bytes: &'a [u8],
    /// Address of the first byte.
    pub address: u64,
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
    let mut scratch = Vec::with_capacity(256);
    let bytes = sec.bytes;
    let end = sec.address + bytes.len() as u64;
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
        let Some(w0) = read_u32(bytes, off) else {
            break; // trailing bytes shorter than an instruction
        };
        // Like objdump, skip runs of 8+ zero bytes (in whole words) up to the next label.
        if w0 == 0 {
            let region_end = labels
                .get(next_label)
                .map_or(bytes.len(), |l| (l.0 - sec.address) as usize)
                .min(bytes.len());
            let zeros = bytes
                .get(off..region_end)
                .unwrap_or(&[])
                .iter()
                .take_while(|b| **b == 0)
                .count();
            if zeros >= 8 {
                out.extend_from_slice(b"\t\t...\n");
                off += zeros & !3;
                continue;
            }
        }
        let w1 = read_u32(bytes, off + 4);
        let start = out.len();
        let (n, branch, addr_at) = match cache.slot(w0, w1) {
            Some(line) => {
                // A fixed-size copy (no call), then cut to the line's length.
                out.extend_from_slice(&line.line);
                out.truncate(start + line.line_len as usize);
                // Only valid instructions are kept, so the size follows from the
                // words through the opcode tables; taking it from there instead of
                // the entry keeps the next lookup from waiting on this one's load.
                let n = dec.valid_len(w0);
                debug_assert_eq!(n, line.size as usize);
                (n, line.branch, line.addr_at as usize)
            }
            None => {
                let n = match dec.decode_into(&bytes[off..], &mut inst) {
                    Ok(n) => n,
                    Err(_) => break,
                };
                text.clear();
                format(&inst, &mut text);
                let (addr_at, branch) = build_line(&inst, &text, &mut scratch);
                out.extend_from_slice(&scratch);
                cache.keep(&inst, n, branch, addr_at, &scratch);
                (n, branch, addr_at)
            }
        };
        let at = start + addr_at;
        if let Some(dst) = out.get_mut(at..at + 12) {
            hex_into(dst, addr, HEX_UPPER);
        }
        if branch {
            let t = branch_target_of(w0, addr);
            if (sec.address..end).contains(&t) {
                let k = labels.partition_point(|(a, _)| *a <= t);
                if let Some((la, name)) = k.checked_sub(1).and_then(|k| labels.get(k)) {
                    out.extend_from_slice(b" <");
                    out.extend_from_slice(name.as_bytes());
                    if t != *la {
                        out.extend_from_slice(b"+0x");
                        let d = t - la;
                        let digits = (64 - d.leading_zeros()).div_ceil(4).max(1) as usize;
                        hex_padded(out, d, digits, HEX_LOWER);
                    }
                    out.push(b'>');
                }
            }
        }
        out.push(b'\n');
        off += n;
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

/// Longest cached line (longer ones are formatted every time).
const LINE_CAP: usize = 116;
/// Number of cache entries (a power of two).
const CACHE_BITS: u32 = 14;

/// One memoised instruction line: `\t{text}{pad}// ADDRESS: W0 W1`, with
/// the address as a placeholder at `addr_at`. Two cache lines.
#[derive(Clone)]
#[repr(C, align(64))]
struct Line {
    w0: u32,
    w1: u32,
    /// Instruction size in bytes; 0 = empty entry.
    size: u8,
    /// The line depends on the second word (an 8-byte instruction).
    uses_w1: bool,
    branch: bool,
    addr_at: u8,
    /// Length of the text in `line`.
    line_len: u8,
    line: [u8; LINE_CAP],
}

struct LineCache {
    target: Option<Target>,
    entries: Vec<Line>,
}

const EMPTY_LINE: Line = Line {
    w0: 0,
    w1: 0,
    size: 0,
    uses_w1: false,
    branch: false,
    addr_at: 0,
    line_len: 0,
    line: [0; LINE_CAP],
};

thread_local! {
    static LINES: core::cell::RefCell<LineCache> = core::cell::RefCell::new(LineCache::new());
}

/// Cache index of an instruction (`w1` counts only for 8-byte encodings).
fn index(w0: u32, w1: u32, use_w1: bool) -> usize {
    let key = u64::from(w0) | if use_w1 { u64::from(w1) << 32 } else { 0 };
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CACHE_BITS)) as usize
}

impl LineCache {
    fn new() -> LineCache {
        LineCache {
            target: None,
            entries: Vec::new(),
        }
    }

    fn set_target(&mut self, target: Target) {
        if self.target != Some(target) || self.entries.is_empty() {
            self.entries.clear();
            self.entries.resize(1 << CACHE_BITS, EMPTY_LINE);
            self.target = Some(target);
        }
    }

    /// The line of an instruction starting with `w0` (followed by `w1` if
    /// the section has one), if it is cached.
    fn slot(&self, w0: u32, w1: Option<u32>) -> Option<&Line> {
        let e = self
            .entries
            .get(index(w0, w1.unwrap_or(0), base_len(w0) == 8))?;
        let hit = e.size != 0 && e.w0 == w0 && (!e.uses_w1 || w1 == Some(e.w1));
        hit.then_some(e)
    }

    /// Keeps the line of a freshly decoded instruction of `size` bytes, if it
    /// fits and can be reused.
    fn keep(&mut self, inst: &Instruction, size: usize, branch: bool, addr_at: usize, line: &[u8]) {
        // An invalid result may come from rejected bits in the second word,
        // which the key does not hold for 4-byte results: never kept (rare).
        if !inst.is_valid() || line.len() > LINE_CAP || addr_at > u8::MAX as usize {
            return;
        }
        let words = inst.words();
        let w0 = words.first().copied().unwrap_or(0);
        let w1 = words.get(1).copied().unwrap_or(0);
        let k = index(w0, w1, base_len(w0) == 8);
        let Some(e) = self.entries.get_mut(k) else {
            return;
        };
        e.w0 = w0;
        e.w1 = w1;
        e.uses_w1 = size == 8;
        e.size = size as u8;
        e.branch = branch;
        e.addr_at = addr_at as u8;
        e.line_len = line.len() as u8;
        e.line[..line.len()].copy_from_slice(line);
    }
}

/// `\t{text}{pad}// 000000000000: W0 W1` into `buf` (the address is a
/// placeholder); returns where the address goes and whether it branches.
fn build_line(inst: &Instruction, text: &str, buf: &mut Vec<u8>) -> (usize, bool) {
    buf.clear();
    buf.push(b'\t');
    buf.extend_from_slice(text.as_bytes());
    while buf.len() < COMMENT_COLUMN + 1 {
        buf.push(b' ');
    }
    buf.extend_from_slice(b"// ");
    let addr_at = buf.len();
    buf.extend_from_slice(b"000000000000:");
    for w in inst.words() {
        buf.push(b' ');
        hex_padded(buf, *w as u64, 8, HEX_UPPER);
    }
    (addr_at, branch_target(inst, 0).is_some())
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
        .filter(|s| s.kind != SymbolKind::Section && s.address >= sec.address && s.address < end)
        .map(|s| (s.address, s.name))
        .collect();
    v.sort_by_key(|s| s.0);
    v.dedup_by(|b, a| a.0 == b.0);
    if v.first().map(|s| s.0) != Some(sec.address) {
        v.insert(0, (sec.address, sec.section_name));
    }
    v
}
