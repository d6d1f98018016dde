//! Minimal reader for the offload bundles in a host ELF's `.hip_fatbin`
//! section, reading only headers and the entries asked for (the .so is 1.3 GB).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

pub struct Entry {
    /// Offset of the code object in the host file.
    pub offset: u64,
    pub size: u64,
    /// Bundle entry id, e.g. `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`.
    pub id: String,
}

fn u16_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?) as u64)
}
fn u32_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as u64)
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn read_at(f: &mut File, off: u64, len: usize) -> Option<Vec<u8>> {
    f.seek(SeekFrom::Start(off)).ok()?;
    let mut v = vec![0; len];
    f.read_exact(&mut v).ok()?;
    Some(v)
}

/// (file offset, size) of a named section of a 64-bit little-endian ELF.
fn section(f: &mut File, name: &str) -> Option<(u64, u64)> {
    let eh = read_at(f, 0, 64)?;
    let (shoff, shentsize, shnum, shstrndx) = (
        u64_at(&eh, 0x28)?,
        u16_at(&eh, 0x3A)?,
        u16_at(&eh, 0x3C)?,
        u16_at(&eh, 0x3E)?,
    );
    let sh = read_at(f, shoff, (shentsize * shnum) as usize)?;
    let hdr = |i: u64| -> Option<(u64, u64, u64)> {
        let b = (i * shentsize) as usize;
        Some((
            u32_at(&sh, b)?,
            u64_at(&sh, b + 0x18)?,
            u64_at(&sh, b + 0x20)?,
        ))
    };
    let (_, stroff, strsize) = hdr(shstrndx)?;
    let strtab = read_at(f, stroff, strsize as usize)?;
    (0..shnum).find_map(|i| {
        let (n, off, size) = hdr(i)?;
        let s = strtab.get(n as usize..)?;
        let end = s.iter().position(|c| *c == 0)?;
        (&s[..end] == name.as_bytes()).then_some((off, size))
    })
}

/// All entries of all bundles in `.hip_fatbin`.
pub fn entries(path: &Path) -> Option<Vec<Entry>> {
    let mut f = File::open(path).ok()?;
    let (base, size) = section(&mut f, ".hip_fatbin")?;
    let mut out = Vec::new();
    let mut pos = 0u64;
    while pos + 32 <= size {
        let h = read_at(&mut f, base + pos, 32)?;
        if &h[..24] != b"__CLANG_OFFLOAD_BUNDLE__" {
            break;
        }
        let count = u64_at(&h, 24)?;
        let mut p = base + pos + 32;
        let mut end = 0;
        for _ in 0..count {
            let e = read_at(&mut f, p, 24)?;
            let (o, s, l) = (u64_at(&e, 0)?, u64_at(&e, 8)?, u64_at(&e, 16)?);
            let id = String::from_utf8_lossy(&read_at(&mut f, p + 24, l as usize)?).into_owned();
            p += 24 + l;
            end = end.max(o + s);
            if s > 0 {
                out.push(Entry {
                    offset: base + pos + o,
                    size: s,
                    id,
                });
            }
        }
        pos = (pos + end).div_ceil(4096) * 4096;
    }
    Some(out)
}

pub fn read_entry(path: &Path, e: &Entry) -> Option<Vec<u8>> {
    let mut f = File::open(path).ok()?;
    read_at(&mut f, e.offset, e.size as usize)
}
