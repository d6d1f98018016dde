//! `inlay inspect --json` against llvm-readelf-19 and the raw descriptor bytes:
//! symbols, relocations, the metadata note and kernel descriptors, field by field,
//! on every fixture and on every gfx90a and gfx908 code object of Debian's librocsparse.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::Value;
use yaml_rust2::{Yaml, YamlLoader};

fn run_json(cmd: &mut Command) -> Value {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// The one code object in `inlay inspect --json FILE`.
fn inspect(path: &Path) -> Value {
    let doc = run_json(inlay().arg("inspect").arg("--json").arg(path));
    assert_eq!(doc["schema"], "inlay-inspect/1");
    let entries = doc["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 1, "{}: one code object", path.display());
    assert!(
        entries[0]["error"].is_null(),
        "{}: {}",
        path.display(),
        entries[0]["error"]
    );
    entries[0]["code_object"].clone()
}

fn readelf(path: &Path) -> Value {
    let mut doc = run_json(
        Command::new("llvm-readelf-19")
            .args([
                "--elf-output-style=JSON",
                "--symbols",
                "--dyn-syms",
                "--relocs",
                "--notes",
            ])
            .arg(path),
    );
    doc[0].take()
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

type SymbolRow = (String, u64, u64, u64, u64, u64, String);

/// Symbols of one table as readelf prints them, keyed by index (the null symbol left out).
fn readelf_symbols(re: &Value, key: &str) -> BTreeMap<u64, SymbolRow> {
    let mut rows = BTreeMap::new();
    for (i, s) in re[key].as_array().into_iter().flatten().enumerate().skip(1) {
        let s = &s["Symbol"];
        // readelf appends "@VERSION" to versioned dynamic symbols; code objects have none.
        rows.insert(
            i as u64,
            (
                s["Name"]["Name"].as_str().unwrap_or_default().to_string(),
                num(&s["Value"]),
                num(&s["Size"]),
                num(&s["Binding"]["Value"]),
                num(&s["Type"]["Value"]),
                num(&s["Other"]["Value"]) & 3,
                s["Section"]["Name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            ),
        );
    }
    rows
}

fn our_symbols(co: &Value, table: &str) -> BTreeMap<u64, SymbolRow> {
    let mut rows = BTreeMap::new();
    for s in co["symbols"].as_array().expect("symbols") {
        if s["table"] != table {
            continue;
        }
        let binding = match &s["binding"] {
            Value::String(b) if b == "local" => 0,
            Value::String(b) if b == "global" => 1,
            Value::String(b) if b == "weak" => 2,
            other => num(&other["other"]),
        };
        let visibility = match s["visibility"].as_str() {
            Some("default") => 0,
            Some("internal") => 1,
            Some("hidden") => 2,
            Some("protected") => 3,
            v => panic!("visibility {v:?}"),
        };
        let section = match num(&s["shndx"]) {
            0 => "Undefined".to_string(),
            0xfff1 => "Absolute".to_string(),
            0xfff2 => "Common".to_string(),
            _ => s["section"].as_str().unwrap_or_default().to_string(),
        };
        rows.insert(
            num(&s["index"]),
            (
                s["name"].as_str().unwrap_or_default().to_string(),
                num(&s["value"]),
                num(&s["size"]),
                binding,
                num(&s["elf_type"]),
                visibility,
                section,
            ),
        );
    }
    rows
}

fn compare_symbols(path: &Path, co: &Value, re: &Value) {
    for (table, key) in [("symtab", "Symbols"), ("dynsym", "DynamicSymbols")] {
        let theirs = readelf_symbols(re, key);
        let ours = our_symbols(co, table);
        assert_eq!(
            ours,
            theirs,
            "{}: {table} differs from llvm-readelf",
            path.display()
        );
    }
}

fn compare_relocations(path: &Path, co: &Value, re: &Value) {
    let mut theirs = Vec::new();
    for group in re["Relocations"].as_array().into_iter().flatten() {
        for r in group["Relocs"].as_array().into_iter().flatten() {
            let r = &r["Relocation"];
            let sym = r["Symbol"]["Name"].as_str().unwrap_or_default();
            theirs.push((
                num(&r["Offset"]),
                r["Type"]["Name"].as_str().unwrap_or_default().to_string(),
                if sym == "-" {
                    String::new()
                } else {
                    sym.to_string()
                },
                r["Addend"].as_i64().unwrap_or(0),
            ));
        }
    }
    let mut ours: Vec<_> = co["relocations"]
        .as_array()
        .expect("relocations")
        .iter()
        .map(|r| {
            (
                num(&r["offset"]),
                r["type"].as_str().unwrap_or_default().to_string(),
                r["symbol"].as_str().unwrap_or_default().to_string(),
                r["addend"].as_i64().expect("addend"),
            )
        })
        .collect();
    theirs.sort();
    ours.sort();
    assert_eq!(
        ours,
        theirs,
        "{}: relocations differ from llvm-readelf",
        path.display()
    );
}

/// Compares a YAML value from readelf's metadata dump with ours. `ours` is the typed
/// field (or the entry in `unknown`).
fn same_value(yaml: &Yaml, ours: &Value) -> bool {
    match (yaml, ours) {
        (Yaml::Integer(a), Value::Number(b)) => b.as_i64() == Some(*a),
        (Yaml::Integer(a), Value::Bool(b)) => (*a != 0) == *b,
        (Yaml::Boolean(a), Value::Bool(b)) => a == b,
        (Yaml::Boolean(a), Value::Number(b)) => b.as_u64() == Some(u64::from(*a)),
        (Yaml::String(a), Value::String(b)) => a == b,
        // YAML prints numbers that look like other scalars unquoted.
        (Yaml::Real(a), Value::String(b)) => a == b,
        (Yaml::Real(a), Value::Number(b)) => a.parse::<f64>().ok() == b.as_f64(),
        (Yaml::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
        }
        _ => false,
    }
}

/// Every key readelf shows in a metadata map must be in ours with the same value:
/// `.foo` as the typed field `foo`, or kept under its own name in `unknown`.
fn compare_map(path: &Path, what: &str, yaml: &Yaml, ours: &Value, children: &[(&str, &str)]) {
    let map = yaml
        .as_hash()
        .unwrap_or_else(|| panic!("{what}: not a map"));
    for (k, v) in map {
        let key = k.as_str().expect("string key");
        if let Some((_, our_key)) = children.iter().find(|(yk, _)| *yk == key) {
            let (ys, os) = (
                v.as_vec().expect("sequence"),
                ours[our_key].as_array().expect("array"),
            );
            assert_eq!(ys.len(), os.len(), "{}: {what}{key} length", path.display());
            // Kernels hold argument lists; arguments hold nothing nested.
            let grandchildren: &[(&str, &str)] = if key == "amdhsa.kernels" {
                &[(".args", "args")]
            } else {
                &[]
            };
            for (i, (y, o)) in ys.iter().zip(os).enumerate() {
                compare_map(path, &format!("{what}{key}[{i}]"), y, o, grandchildren);
            }
            continue;
        }
        let field = key.strip_prefix('.').unwrap_or(key);
        let field = field.strip_prefix("amdhsa.").unwrap_or(field);
        let value = match ours.get(field) {
            Some(v) if !v.is_null() => v,
            _ => ours["unknown"].get(key).unwrap_or(&Value::Null),
        };
        assert!(
            same_value(v, value),
            "{}: metadata {what}{key}: readelf says {v:?}, we say {value}",
            path.display()
        );
    }
}

fn compare_metadata(path: &Path, co: &Value, re: &Value) {
    let mut yaml_text = None;
    for section in re["NoteSections"].as_array().into_iter().flatten() {
        for note in section["NoteSection"]["Notes"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(t) = note["AMDGPU Metadata"].as_str() {
                yaml_text = Some(t.to_string());
            }
        }
    }
    let yaml_text =
        yaml_text.unwrap_or_else(|| panic!("{}: readelf shows no metadata", path.display()));
    let docs = YamlLoader::load_from_str(&yaml_text).expect("readelf's metadata YAML");
    let md = &co["metadata"];
    compare_map(path, "", &docs[0], md, &[("amdhsa.kernels", "kernels")]);
    // The target ID we print from e_flags is the one the compiler wrote into the metadata.
    let target = docs[0]["amdhsa.target"].as_str().expect("amdhsa.target");
    assert_eq!(
        co["target_id"].as_str(),
        Some(target),
        "{}: target ID",
        path.display()
    );
}

/// Each kernel's descriptor fields against the 64 bytes at the `.kd` symbol, decoded here.
fn compare_descriptors(path: &Path, co: &Value, re: &Value) {
    let bytes = std::fs::read(path).expect("read");
    let symbols = readelf_symbols(re, "Symbols");
    let dynamic = readelf_symbols(re, "DynamicSymbols");
    for k in co["kernels"].as_array().expect("kernels") {
        let name = k["name"].as_str().expect("name");
        let kd_name = format!("{name}.kd");
        let kd = symbols
            .values()
            .chain(dynamic.values())
            .find(|s| s.0 == kd_name);
        let kd = kd.unwrap_or_else(|| panic!("{}: readelf has no {kd_name}", path.display()));
        assert_eq!(
            num(&k["descriptor_address"]),
            kd.1,
            "{}: {kd_name} address",
            path.display()
        );
        let at = num(&k["descriptor_file_offset"]) as usize;
        let b = &bytes[at..at + 64];
        let u32_at = |o: usize| u64::from(u32::from_le_bytes(b[o..o + 4].try_into().unwrap()));
        let u16_at = |o: usize| u64::from(u16::from_le_bytes(b[o..o + 2].try_into().unwrap()));
        let d = &k["descriptor"];
        let checks = [
            ("group_segment_fixed_size", u32_at(0)),
            ("private_segment_fixed_size", u32_at(4)),
            ("kernarg_size", u32_at(8)),
            ("compute_pgm_rsrc3", u32_at(44)),
            ("compute_pgm_rsrc1", u32_at(48)),
            ("compute_pgm_rsrc2", u32_at(52)),
            ("kernel_code_properties", u16_at(56)),
            ("kernarg_preload", u16_at(58)),
        ];
        for (field, raw) in checks {
            assert_eq!(
                num(&d[field]),
                raw,
                "{}: {name} descriptor {field}",
                path.display()
            );
        }
        let entry = i64::from_le_bytes(b[16..24].try_into().unwrap());
        if co["header"]["e_type"] == 3 {
            assert_eq!(d["kernel_code_entry_byte_offset"].as_i64(), Some(entry));
            // The entry is the kernel's function symbol.
            let func = symbols
                .values()
                .chain(dynamic.values())
                .find(|s| s.0 == name)
                .expect("entry symbol");
            assert_eq!(
                kd.1.wrapping_add_signed(entry),
                func.1,
                "{}: {name} entry",
                path.display()
            );
            assert_eq!(num(&k["entry_address"]), func.1);
        }
        // Register counts from the granulated fields (gfx9: VGPR granule 4; gfx90a/gfx94x: 8).
        let rsrc1 = u32_at(48);
        let granule = if co["target_id"]
            .as_str()
            .is_some_and(|t| t.contains("gfx90a") || t.contains("gfx94"))
        {
            8
        } else {
            4
        };
        assert_eq!(
            num(&k["decoded"]["vgpr_count"]),
            ((rsrc1 & 0x3f) + 1) * granule
        );
        assert_eq!(
            num(&k["decoded"]["sgpr_count"]),
            (((rsrc1 >> 6) & 0xf) + 1) * 8
        );
    }
}

fn check(path: &Path) {
    let co = inspect(path);
    let re = readelf(path);
    compare_symbols(path, &co, &re);
    compare_relocations(path, &co, &re);
    compare_descriptors(path, &co, &re);
    if co["header"]["e_type"] == 3 || re["NoteSections"].is_array() {
        compare_metadata(path, &co, &re);
    }
}

#[test]
fn fixtures_agree_with_readelf() {
    if tool_missing("llvm-readelf-19") {
        return;
    }
    for path in fixtures(&["hsaco", "object"]) {
        check(&path);
    }
}

#[test]
fn rocsparse_gfx90a_and_gfx908_agree_with_readelf() {
    if tool_missing("llvm-readelf-19") || missing(ROCSPARSE, Path::new(ROCSPARSE).exists()) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("inlay-inspect-oracle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = extract_code_objects(Path::new(ROCSPARSE), &["gfx90a", "gfx908"], &dir);
    // 111 bundles, each with gfx908:xnack-, gfx90a:xnack- and gfx90a:xnack+.
    assert_eq!(
        files.len(),
        333,
        "gfx90a and gfx908 code objects in librocsparse"
    );
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for chunk in files.chunks(files.len().div_ceil(threads)) {
            s.spawn(move || chunk.iter().for_each(|p| check(p)));
        }
    });
    std::fs::remove_dir_all(&dir).ok();
}
