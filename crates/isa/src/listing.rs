//! Whole `llvm-objdump -d` output for a code section, from plain inputs.

use core::fmt::Write;

use crate::decode::Decoder;
use crate::format::format;
use crate::model::{Encoding, Instruction, Target};
use crate::num;
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

/// Appends `Disassembly of section ...` and every label and instruction line.
pub fn write_section(target: Target, sec: &Section, out: &mut String) {
    let _ = write!(out, "\nDisassembly of section {}:\n", sec.section_name);
    let labels = labels(sec);
    let dec = Decoder::new(target);
    let mut inst = Instruction::default();
    let mut off = 0usize;
    let mut next_label = 0usize;
    out.reserve(sec.bytes.len() * 20);
    while off < sec.bytes.len() {
        let addr = sec.address + off as u64;
        while next_label < labels.len() && labels[next_label].0 <= addr {
            let (a, name) = labels[next_label];
            out.push('\n');
            num::hex_lower_padded(out, a, 16);
            out.push_str(" <");
            out.push_str(name);
            out.push_str(">:\n");
            next_label += 1;
        }
        // Like objdump, skip runs of 8+ zero bytes (in whole words) up to the next label.
        let region_end = labels
            .get(next_label)
            .map_or(sec.bytes.len(), |l| (l.0 - sec.address) as usize);
        let zeros = sec.bytes[off..region_end.min(sec.bytes.len())]
            .iter()
            .take_while(|b| **b == 0)
            .count();
        if zeros >= 8 {
            out.push_str("\t\t...\n");
            off += zeros & !3;
            continue;
        }
        let n = match dec.decode_into(&sec.bytes[off..], &mut inst) {
            Ok(n) => n,
            Err(_) => break, // trailing bytes shorter than an instruction
        };
        out.push('\t');
        let start = out.len();
        format(&inst, out);
        num::pad_to(out, start, COMMENT_COLUMN);
        out.push_str("// ");
        num::hex_upper(out, addr, 12);
        out.push(':');
        for w in inst.words() {
            out.push(' ');
            num::hex_upper(out, *w as u64, 8);
        }
        let end = sec.address + sec.bytes.len() as u64;
        if let Some(t) = branch_target(&inst, addr).filter(|t| (sec.address..end).contains(t)) {
            let k = labels.partition_point(|(a, _)| *a <= t);
            if let Some((la, name)) = k.checked_sub(1).and_then(|k| labels.get(k)) {
                out.push_str(" <");
                out.push_str(name);
                if t != *la {
                    out.push_str("+0x");
                    num::hex(out, t - la);
                }
                out.push('>');
            }
        }
        out.push('\n');
        off += n;
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
    let simm = (i.w0() & 0xFFFF) as u16 as i16 as i64;
    Some((addr as i64 + 4 + simm * 4) as u64)
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
