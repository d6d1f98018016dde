//! The library's dynamic ABI, checked with binutils' readelf: ROCr's SONAME,
//! every export versioned ROCR_1, and every hsa_* symbol that Debian's
//! rocminfo and libamdhip64 import is defined.

use crate::common;
use std::process::Command;

fn readelf(args: &[&str], file: &std::path::Path) -> Option<String> {
    let tool = common::which("readelf");
    if !common::oracle_available("readelf (binutils)", tool.is_some()) {
        return None;
    }
    let out = Command::new(tool.unwrap())
        .args(args)
        .arg(file)
        .output()
        .expect("run readelf");
    assert!(out.status.success());
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `name@VERSION` pairs of defined (or, with `undefined`, imported) dynamic symbols.
fn dyn_syms(text: &str, undefined: bool) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            if cols.len() < 8 || !cols[0].ends_with(':') {
                return None;
            }
            ((cols[6] == "UND") == undefined)
                .then(|| cols[7].split(" (").next().unwrap_or("").to_string())
        })
        .collect()
}

#[test]
fn soname_and_rocr_1_versions() {
    let lib = common::cdylib();
    let Some(dynamic) = readelf(&["-d"], &lib) else {
        return;
    };
    assert!(
        dynamic.contains("Library soname: [libhsa-runtime64.so.1]"),
        "{dynamic}"
    );
    let Some(syms) = readelf(&["--dyn-syms", "-W"], &lib) else {
        return;
    };
    let defined = dyn_syms(&syms, false);
    let hsa: Vec<&String> = defined.iter().filter(|s| s.starts_with("hsa_")).collect();
    assert!(hsa.len() > 150, "only {} hsa_ exports", hsa.len());
    for s in &hsa {
        assert!(s.ends_with("@@ROCR_1"), "{s} is not versioned ROCR_1");
    }
    let Some(versions) = readelf(&["-V"], &lib) else {
        return;
    };
    assert!(versions.contains("Name: ROCR_1"), "{versions}");
}

#[test]
fn exports_everything_rocminfo_and_hip_import() {
    let lib = common::cdylib();
    let Some(syms) = readelf(&["--dyn-syms", "-W"], &lib) else {
        return;
    };
    let defined = dyn_syms(&syms, false);
    let importers = [
        "/usr/bin/rocminfo",
        "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5",
    ];
    for imp in importers {
        let path = std::path::Path::new(imp);
        if !common::oracle_available(imp, path.is_file()) {
            continue;
        }
        let Some(text) = readelf(&["--dyn-syms", "-W"], path) else {
            return;
        };
        let wanted: Vec<String> = dyn_syms(&text, true)
            .into_iter()
            .filter(|s| s.starts_with("hsa_"))
            .collect();
        assert!(!wanted.is_empty(), "{imp} imports no hsa_ symbol?");
        for w in wanted {
            // Imports read `name@ROCR_1`; the definition is `name@@ROCR_1`.
            let def = w.replace("@ROCR_1", "@@ROCR_1");
            assert!(
                defined.contains(&def),
                "{imp} needs {w}, which we do not export"
            );
        }
    }
}
