//! Real code objects: the first gfx90a code objects of Debian's librocsparse
//! fat binary, each loaded and frozen in its own executable (as HIP does per
//! bundle). Layout is checked against the raw program headers, kernels
//! against the `object` crate's symbol listing.

use crate::common;
use common::*;
use inlay_codeobj::container::list::list;
use inlay_codeobj::file::MappedFile;
use inlay_loader::SymbolKind;
use std::collections::BTreeSet;

const LIB: &str = "/usr/lib/x86_64-linux-gnu/librocsparse.so.0.1";

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes([b[at], b[at + 1]]) as usize
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

#[test]
fn librocsparse_gfx90a_code_objects_load_and_freeze() {
    if !oracle_available(LIB, std::path::Path::new(LIB).is_file()) {
        return;
    }
    let file = MappedFile::open(LIB).unwrap();
    let mut loaded = 0;
    for item in list(file.bytes(), "librocsparse") {
        let item = item.unwrap();
        if !item.entry.target_id.starts_with("gfx90a") {
            continue;
        }
        let bytes = &item.entry.bytes;
        let (memory, mut exe) = executable();
        // The fat binary carries gfx90a:xnack+ and gfx90a:xnack-: each runs only on its own.
        let a = agent(&item.entry.target_id);
        let other = if item.entry.target_id.contains("xnack+") {
            "gfx90a:xnack-"
        } else {
            "gfx90a:xnack+"
        };
        let (_m, mut wrong) = executable();
        let e = wrong.load(&agent(other), bytes, None).unwrap_err();
        assert_eq!(e.kind, inlay_loader::ErrorKind::IncompatibleTarget);
        let id = exe
            .load(&a, bytes, Some(&item.entry.location))
            .unwrap_or_else(|e| panic!("{e}"));
        exe.freeze().unwrap_or_else(|e| panic!("{e}"));
        let co = exe.code_object(id).unwrap();
        // PT_LOAD file bytes at delta + p_vaddr (ELF64 program headers, read raw).
        let (phoff, phentsize, phnum) = (
            u64_at(bytes, 32) as usize,
            u16_at(bytes, 54),
            u16_at(bytes, 56),
        );
        let mut dynamic_sites = BTreeSet::new();
        for r in &exe_relocation_sites(bytes) {
            dynamic_sites.extend(*r..*r + 8);
        }
        for i in 0..phnum {
            let ph = &bytes[phoff + i * phentsize..];
            if u32::from_le_bytes(ph[..4].try_into().unwrap()) != 1 {
                continue;
            }
            let (off, vaddr, filesz) = (u64_at(ph, 8), u64_at(ph, 16), u64_at(ph, 32));
            let got = read_mem(&memory, co.load_delta + vaddr, filesz as usize);
            let want = &bytes[off as usize..(off + filesz) as usize];
            for (j, (g, w)) in got.iter().zip(want).enumerate() {
                if !dynamic_sites.contains(&(vaddr + j as u64)) {
                    assert_eq!(
                        g,
                        w,
                        "{}: byte {:#x}",
                        item.entry.location,
                        vaddr + j as u64
                    );
                }
            }
        }
        let ours: BTreeSet<String> = exe
            .kernels()
            .iter()
            .map(|k| exe.get(*k).unwrap().name.clone())
            .collect();
        let theirs: BTreeSet<String> = item.kernels.unwrap().into_iter().collect();
        assert_eq!(ours, theirs, "{}", item.entry.location);
        for k in exe.kernels() {
            let SymbolKind::Kernel(info) = &exe.get(*k).unwrap().kind else {
                panic!()
            };
            assert!(exe.find_address(info.object).is_some_and(|(c, _)| c == id));
        }
        loaded += 1;
        if loaded == 6 {
            break;
        }
    }
    assert_eq!(loaded, 6);
}

/// r_offset of every entry of every SHT_RELA section (raw section headers).
fn exe_relocation_sites(bytes: &[u8]) -> Vec<u64> {
    let (shoff, shentsize, shnum) = (
        u64_at(bytes, 40) as usize,
        u16_at(bytes, 58),
        u16_at(bytes, 60),
    );
    let mut out = Vec::new();
    for i in 0..shnum {
        let sh = &bytes[shoff + i * shentsize..];
        if u32::from_le_bytes(sh[4..8].try_into().unwrap()) != 4 {
            continue;
        }
        let (off, size) = (u64_at(sh, 24) as usize, u64_at(sh, 32) as usize);
        out.extend(
            bytes[off..off + size]
                .chunks_exact(24)
                .map(|e| u64_at(e, 0)),
        );
    }
    out
}
