//! Real-world code objects: Debian's librocsparse (ROCm 6, seven targets, built by
//! AMD's compiler, not by us). Every one must parse, agree with its own metadata,
//! have kernel descriptors a loader accepts, and write back byte for byte.

#[path = "reader_support.rs"]
mod support;

use inlay_codeobj::container::{walk, EntryKind};
use inlay_codeobj::file::MappedFile;
use inlay_codeobj::{write, CodeObject};

const ROCSPARSE: &str = "/usr/lib/x86_64-linux-gnu/librocsparse.so.0.1";

fn library() -> Option<MappedFile> {
    if !std::path::Path::new(ROCSPARSE).exists() {
        if std::env::var("INLAY_REQUIRE_ORACLES").as_deref() == Ok("1") {
            panic!("{ROCSPARSE} is required (INLAY_REQUIRE_ORACLES=1); install librocsparse0");
        }
        eprintln!("note: {ROCSPARSE} not installed; skipping");
        return None;
    }
    Some(MappedFile::open(ROCSPARSE).unwrap())
}

/// Checks one code object; returns its kernel count.
fn check(location: &str, bytes: &[u8]) -> usize {
    let co = CodeObject::parse(bytes).unwrap_or_else(|e| panic!("{location}: {e}"));
    let md = co
        .metadata
        .as_ref()
        .unwrap_or_else(|| panic!("{location}: no metadata"));
    assert_eq!(
        md.target.as_deref(),
        Some(co.target.to_string().as_str()),
        "{location}"
    );
    assert_eq!(md.kernels.len(), co.kernels.len(), "{location}");
    for k in &co.kernels {
        assert_eq!(k.entry_symbol, Some(k.name), "{location}: {}", k.name);
        // AMD's compiler wrote these descriptors: none is impossible.
        let problems = k.descriptor_problems.clone();
        assert!(problems.is_empty(), "{location}: {}: {problems:?}", k.name);
    }
    assert!(
        write::write(&co).unwrap() == bytes,
        "{location}: write differs"
    );
    co.kernels.len()
}

#[test]
fn first_bundles_of_rocsparse_parse_and_round_trip() {
    let Some(lib) = library() else { return };
    let mut seen = 0;
    let mut kernels = 0;
    let mut first = None;
    for entry in walk(lib.bytes(), "librocsparse.so.0").take(40) {
        let entry = entry.unwrap();
        if entry.kind != EntryKind::CodeObject {
            continue;
        }
        kernels += check(&entry.location, &entry.bytes);
        first.get_or_insert_with(|| entry.bytes.to_vec());
        seen += 1;
    }
    assert!(
        seen >= 14 && kernels > 100,
        "{seen} code objects, {kernels} kernels"
    );

    // One of them, symbol by symbol, against llvm-readelf-19.
    let (Some(bytes), Some(readelf)) = (first, support::tool("llvm-readelf-19")) else {
        return;
    };
    let path = support::temp_file("rocsparse-first.hsaco", &bytes);
    let out = support::run(
        &readelf,
        &["--elf-output-style=JSON", "--dyn-symbols", "--symbols"],
        &path,
    );
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let co = CodeObject::parse(&bytes).unwrap();
    for (key, table) in [
        ("Symbols", inlay_codeobj::symbols::SymbolTable::Symtab),
        (
            "DynamicSymbols",
            inlay_codeobj::symbols::SymbolTable::Dynsym,
        ),
    ] {
        let theirs: Vec<(String, u64, u64)> = j[0][key]
            .as_array()
            .map(|a| {
                a.iter()
                    .skip(1)
                    .map(|s| {
                        let s = &s["Symbol"];
                        (
                            s["Name"]["Name"].as_str().unwrap().to_string(),
                            s["Value"].as_u64().unwrap(),
                            s["Size"].as_u64().unwrap(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let ours: Vec<(String, u64, u64)> = co
            .symbols
            .in_table(table)
            .iter()
            .map(|s| (s.name.to_string(), s.value, s.size))
            .collect();
        assert_eq!(ours, theirs, "{key}");
    }
}

/// All 777 code objects (about 1.2 GB, read through a memory map; ~8 s at the test profile).
#[test]
fn all_of_rocsparse_parses_and_round_trips() {
    let Some(lib) = library() else { return };
    let mut seen = 0;
    for entry in walk(lib.bytes(), "librocsparse.so.0") {
        let entry = entry.unwrap();
        if entry.kind == EntryKind::CodeObject {
            check(&entry.location, &entry.bytes);
            seen += 1;
        }
    }
    assert!(seen > 700, "{seen}");
}
