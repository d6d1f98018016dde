//! The whole fat binary of Debian's librocsparse (1.3 GB, 111 bundles of 7
//! device targets), walked lazily from a memory map and spot-checked against
//! llvm-readelf-19 and clang-offload-bundler-19.

use crate::container_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use container_support::*;
use inlay_codeobj::container::handles::kernel_handles;
use inlay_codeobj::container::host::fatbin_wrappers;
use inlay_codeobj::container::list::list;
use inlay_codeobj::container::EntryKind;
use inlay_codeobj::file::MappedFile;

const LIB: &str = "/usr/lib/x86_64-linux-gnu/librocsparse.so.0.1";

/// (address, file offset, size) of `section` per llvm-readelf-19.
fn section(lib: &str, name: &str) -> (u64, u64, u64) {
    let text = run_text(Command::new("llvm-readelf-19").args(["-S", "--wide", lib]));
    let line = text
        .lines()
        .find(|l| l.split_whitespace().any(|f| f == name))
        .unwrap_or_else(|| panic!("no {name} section"));
    let f: Vec<&str> = line.split(']').nth(1).unwrap().split_whitespace().collect();
    let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
    (hex(f[2]), hex(f[3]), hex(f[4]))
}

fn read_at(path: &str, offset: u64, len: u64) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    let mut buf = vec![0; len as usize];
    f.read_exact(&mut buf).unwrap();
    buf
}

/// Entry ID → (offset in the file, size, kernel names), for one bundle.
type BundleEntries = BTreeMap<String, (u64, usize, Vec<String>)>;

/// The bundle offset in a location like `lib[.hip_fatbin bundle 3 @0x1234000] id`.
fn bundle_offset(location: &str) -> u64 {
    let at = location.split(" @0x").nth(1).unwrap();
    u64::from_str_radix(at.split(']').next().unwrap(), 16).unwrap()
}

#[test]
fn librocsparse_fat_binary() {
    let Some(lib) = oracle(LIB) else { return };
    if oracles(&[
        "llvm-readelf-19",
        "llvm-objcopy-19",
        "clang-offload-bundler-19",
    ])
    .is_none()
    {
        return;
    }
    let lib = lib.to_str().unwrap();
    let dir = scratch("rocsparse");

    // Oracle: each 24-byte HIP fat binary wrapper in .hipFatBinSegment points
    // (second field) at one bundle inside .hip_fatbin.
    let (fatbin_addr, fatbin_offset, fatbin_size) = section(lib, ".hip_fatbin");
    let (_, segment_offset, segment_size) = section(lib, ".hipFatBinSegment");
    let wrappers = read_at(lib, segment_offset, segment_size);
    let expected_starts: BTreeSet<u64> = wrappers
        .chunks_exact(24)
        .map(|w| u64::from_le_bytes(w[8..16].try_into().unwrap()) - fatbin_addr + fatbin_offset)
        .collect();
    assert_eq!(
        expected_starts.len(),
        111,
        "Debian's librocsparse0 registers 111 fat binaries"
    );

    let file = MappedFile::open(lib).unwrap();
    let ours: BTreeSet<u64> = fatbin_wrappers(file.bytes())
        .unwrap()
        .iter()
        .map(|w| w.fatbin_offset.unwrap())
        .collect();
    assert_eq!(ours, expected_starts);
    let mut bundles: BTreeMap<u64, BundleEntries> = BTreeMap::new();
    let mut code_objects = 0;
    for item in list(file.bytes(), "librocsparse.so.0.1") {
        let item = item.unwrap_or_else(|e| panic!("{e}"));
        let entry = &item.entry;
        let id = entry.bundle_id.clone().unwrap();
        let kernels = item.kernels.unwrap_or_else(|e| panic!("{e}"));
        match entry.kind {
            EntryKind::CodeObject => {
                code_objects += 1;
                assert!(!kernels.is_empty(), "{}", entry.location);
                assert!(id.ends_with(&entry.target_id), "{}", entry.location);
            }
            EntryKind::Host => assert!(entry.bytes.is_empty()),
            EntryKind::Other => panic!("unexpected entry {}", entry.location),
        }
        let offset = entry.offset.unwrap();
        assert!(
            offset >= fatbin_offset
                && offset + entry.bytes.len() as u64 <= fatbin_offset + fatbin_size
        );
        let info = (offset, entry.bytes.len(), kernels);
        bundles
            .entry(bundle_offset(&entry.location))
            .or_default()
            .insert(id, info);
    }
    assert_eq!(code_objects, 777);
    assert_eq!(
        bundles.keys().copied().collect::<BTreeSet<_>>(),
        expected_starts
    );

    // Sampled bundles: cut out with the next bundle's start as the end.
    let starts: Vec<u64> = bundles.keys().copied().collect();
    let first_ids: BTreeSet<&String> = bundles[&starts[0]].keys().collect();
    for (i, &start) in starts.iter().enumerate() {
        assert_eq!(
            bundles[&start].keys().collect::<BTreeSet<_>>(),
            first_ids,
            "bundle {i}"
        );
    }
    for i in [0, 1, 55, 110] {
        let start = starts[i];
        let end = starts
            .get(i + 1)
            .copied()
            .unwrap_or(fatbin_offset + fatbin_size);
        let bytes = &file.bytes()[start as usize..end as usize];
        let path = dir.join(format!("bundle{i}"));
        std::fs::write(&path, bytes).unwrap();
        let entries = &bundles[&start];
        let ids: Vec<String> = entries.keys().cloned().collect();
        assert_eq!(ids, bundler_list(&path), "bundle {i}");
        assert_eq!(entries.len(), 8, "host + 7 device targets");
        for (id, (offset, size, kernels)) in entries {
            if id.starts_with("host-") {
                continue;
            }
            let expected = bundler_unbundle(&dir, &path, id);
            let ours = &file.bytes()[*offset as usize..*offset as usize + size];
            assert!(ours == expected.as_slice(), "bundle {i} {id}: bytes differ");
            check_kernels(&dir, &expected, kernels);
        }
    }
    // Kernel handles: the library is stripped of .symtab and exports no kernel
    // handles or stubs, so every kernel is mapped with neither, but still with
    // its presence in each of the 777 code objects.
    let map = kernel_handles(file.bytes(), "librocsparse.so.0.1").unwrap();
    assert!(map.errors.is_empty(), "{:?}", map.errors);
    assert_eq!(map.code_objects.len(), 777);
    let all_kernels: BTreeSet<&String> = bundles
        .values()
        .flat_map(|b| b.values().flat_map(|(_, _, kernels)| kernels))
        .collect();
    assert_eq!(map.kernels.len(), all_kernels.len());
    let dynsym = run_text(Command::new("llvm-readelf-19").args(["--dyn-symbols", "--wide", lib]));
    let exported: BTreeSet<&str> = dynsym
        .lines()
        .filter_map(|l| l.split_whitespace().nth(7))
        .collect();
    for k in &map.kernels {
        assert_eq!(
            k.handle.is_some(),
            exported.contains(k.kernel.as_str()),
            "{}",
            k.kernel
        );
        assert!(k.in_code_object.iter().any(|&present| present));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Our kernel list equals the `.kd` symbols llvm-readelf-19 shows.
fn check_kernels(dir: &Path, code_object: &[u8], ours: &[String]) {
    let path = dir.join("co.hsaco");
    std::fs::write(&path, code_object).unwrap();
    let text = run_text(
        Command::new("llvm-readelf-19")
            .args(["--symbols", "--wide"])
            .arg(&path),
    );
    let theirs: BTreeSet<String> = text
        .lines()
        .filter(|l| l.contains(" OBJECT "))
        .filter_map(|l| {
            l.split_whitespace()
                .last()?
                .strip_suffix(".kd")
                .map(str::to_string)
        })
        .collect();
    let ours: BTreeSet<String> = ours.iter().cloned().collect();
    assert_eq!(ours, theirs);
}
