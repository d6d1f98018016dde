//! Bad input to every export of the built library (tests/c/badinput_all.c),
//! each checked against the status ROCr's source gives it (the ROW table).
//!
//! The C program prints `COVER <function>` for each call it makes; the list
//! of exports comes from the built `.so` with `nm -D --defined-only`. The test
//! fails if any export was never called with bad input, so a new export
//! without a bad-input case breaks it.

mod common;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

fn fixture(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(rel)
        .display()
        .to_string()
}

/// Public function names the library defines, from `nm -D --defined-only`.
/// The `inlay_*` twins that carry each body are checked to be aliases
/// (same address) of a public name rather than exports of their own.
fn exported_functions(nm: &Path) -> Vec<String> {
    let out = Command::new(nm)
        .args(["-D", "--defined-only"])
        .arg(common::cdylib())
        .output()
        .expect("run nm");
    assert!(out.status.success(), "nm failed");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut public: BTreeMap<String, String> = BTreeMap::new(); // name -> address
    let mut internal: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() != 3 || !matches!(cols[1], "T" | "W" | "i") {
            continue;
        }
        let name = cols[2].split('@').next().unwrap_or("").to_string();
        if name.starts_with("inlay_") {
            internal.push((name, cols[0].to_string()));
        } else {
            public.insert(name, cols[0].to_string());
        }
    }
    // The tool API (include/inlay/tool.h) is the library's own C ABI, and
    // `inlay run` checks tool options through inlay_tools_check: exports in
    // their own right.
    let tool_h = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include/inlay/tool.h"),
    )
    .expect("include/inlay/tool.h");
    let tool_api = |name: &str| name == "inlay_tools_check" || tool_h.contains(&format!("{name}("));
    for (name, addr) in internal.iter().filter(|(name, _)| !tool_api(name)) {
        let twin = name.trim_start_matches("inlay_");
        assert_eq!(
            public.get(twin),
            Some(addr),
            "{name} is exported but is not the body of a public {twin}"
        );
    }
    public.into_keys().collect()
}

#[test]
fn every_export_refuses_bad_input_with_the_expected_status() {
    let Some(cc) = common::c_compiler() else {
        common::oracle_available("a C compiler (gcc)", false);
        return;
    };
    let nm = common::which("nm");
    if !common::oracle_available("nm (binutils)", nm.is_some())
        || !common::oracle_available("/usr/include/hsa headers", common::hsa_headers_present())
    {
        return;
    }
    let exports = exported_functions(&nm.unwrap_or_default());
    assert!(exports.len() > 150, "only {} exports found", exports.len());

    let dir = common::lib_dir("badinput_all");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/badinput_all.c");
    let exe = dir.join("badinput_all");
    let out = Command::new(&cc)
        .args(["-std=gnu11", "-O1", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg(format!("-L{}", dir.display()))
        .args(["-lhsa-runtime64", "-lpthread", "-ldl"])
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "compiling badinput_all.c:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe)
        .arg(fixture("gfx90a/v5/vector_add.hsaco"))
        .arg(fixture("gfx908/v5/vector_add.hsaco"))
        .env("LD_LIBRARY_PATH", &dir)
        .output()
        .expect("run badinput_all");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    let tail: Vec<&str> = stdout.lines().rev().take(5).collect();
    assert!(
        run.status.success() && stdout.lines().any(|l| l == "PASS"),
        "badinput_all failed ({:?}):\n{stderr}\nlast lines: {tail:?}",
        run.status
    );
    let covered: BTreeSet<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("COVER "))
        .collect();
    // Value functions abort on a bad handle: tests/hostile.rs covers them.
    let aborting = common::value_functions(&exports);
    let missing: Vec<&String> = exports
        .iter()
        .filter(|e| !covered.contains(e.as_str()) && !aborting.contains(e))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} exports are never called with bad input in badinput_all.c: {missing:?}",
        missing.len(),
        exports.len()
    );
    // And nothing is claimed that the library does not export.
    let unknown: Vec<&&str> = covered
        .iter()
        .filter(|c| !exports.iter().any(|e| e == **c))
        .collect();
    assert!(unknown.is_empty(), "covered but not exported: {unknown:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
