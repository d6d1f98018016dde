//! `inlay disasm` against `llvm-objdump-19 -d`: byte-identical output on every fixture
//! of the three targets, on code objects inside containers, and on a sample of
//! Debian's librocsparse.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// stdout of `program args... file`, run in the file's directory on its bare name so
/// that the header line (which names the file) is comparable.
fn listing(mut cmd: Command, path: &Path) -> String {
    let out = cmd
        .arg(path.file_name().expect("file name"))
        .current_dir(path.parent().expect("directory"))
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn inlay_disasm(path: &Path) -> String {
    let mut cmd = inlay();
    cmd.arg("disasm");
    listing(cmd, path)
}

fn objdump(path: &Path) -> String {
    let mut cmd = Command::new("llvm-objdump-19");
    cmd.arg("-d");
    listing(cmd, path)
}

fn assert_same(path: &Path, ours: &str, theirs: &str) {
    if ours == theirs {
        return;
    }
    let first = ours
        .lines()
        .zip(theirs.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| format!("line {}:\n  inlay:   {a}\n  objdump: {b}", i + 1))
        .unwrap_or_else(|| {
            format!(
                "lengths differ: {} vs {} lines",
                ours.lines().count(),
                theirs.lines().count()
            )
        });
    panic!(
        "{}: inlay disasm differs from llvm-objdump-19 -d at {first}",
        path.display()
    );
}

#[test]
fn fixtures_are_identical_to_objdump() {
    if tool_missing("llvm-objdump-19") {
        return;
    }
    let files = fixtures(&["hsaco", "object"]);
    for target in ["gfx908", "gfx90a", "gfx942"] {
        assert!(
            files.iter().any(|f| f.to_string_lossy().contains(target)),
            "fixtures for {target}"
        );
    }
    for path in files {
        assert_same(&path, &inlay_disasm(&path), &objdump(&path));
    }
}

/// Every code object inside a container is listed under a header naming its location;
/// the listing below the header is objdump's listing of the extracted code object.
#[test]
fn containers_list_each_code_object_like_objdump() {
    if tool_missing("llvm-objdump-19") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("inlay-disasm-containers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for container in fixtures(&["bundle", "ccob", "host"]) {
        let ours = inlay_disasm(&container);
        let code_objects = extract_code_objects(&container, &["gfx908", "gfx90a", "gfx942"], &dir);
        assert!(
            !code_objects.is_empty(),
            "{}: no code objects",
            container.display()
        );
        // Our listing is one listing per code object, each under a `file format` header.
        let headers = ours
            .lines()
            .filter(|l| l.ends_with(":\tfile format elf64-amdgpu"))
            .count();
        assert_eq!(
            headers,
            code_objects.len(),
            "{}: one header per code object",
            container.display()
        );
        for co in &code_objects {
            let theirs = objdump(co);
            // Strip objdump's header line (it names the extracted file).
            let body = theirs
                .split_once("file format elf64-amdgpu\n")
                .expect("header")
                .1;
            assert!(
                ours.contains(body),
                "{}: listing of {} not found in inlay's output",
                container.display(),
                co.display()
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn rocsparse_sample_is_identical_to_objdump() {
    if tool_missing("llvm-objdump-19") || missing(ROCSPARSE, Path::new(ROCSPARSE).exists()) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("inlay-disasm-rocsparse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let all = extract_code_objects(Path::new(ROCSPARSE), &["gfx90a:xnack-", "gfx908"], &dir);
    // A spread sample: the first, middle and last bundles' code objects for both targets.
    let n = all.len();
    for path in [0, 1, n / 2, n / 2 + 1, n - 2, n - 1].map(|i| &all[i]) {
        assert_same(path, &inlay_disasm(path), &objdump(path));
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `disasm --json`: every instruction objdump lists inside a function appears with the
/// same address, text and encoding words, and carries its registers (EXEC for vector ops).
#[test]
fn json_instructions_match_objdump_lines() {
    if tool_missing("llvm-objdump-19") {
        return;
    }
    for path in fixtures(&["hsaco"])
        .iter()
        .filter(|p| p.to_string_lossy().contains("/v5/"))
    {
        let theirs = objdump(path);
        // "\tTEXT   // 000000001900: WORDS [<target>]" → (address, text, words)
        let mut lines = std::collections::HashMap::new();
        for line in theirs
            .lines()
            .filter(|l| l.starts_with('\t') && l.contains("// "))
        {
            let (text, comment) = line.rsplit_once("// ").unwrap();
            let (addr, words) = comment.split_once(": ").unwrap();
            let words: Vec<String> = words
                .split_whitespace()
                .take_while(|w| !w.starts_with('<'))
                .map(str::to_lowercase)
                .collect();
            lines.insert(
                u64::from_str_radix(addr, 16).unwrap(),
                (text.trim().to_string(), words),
            );
        }
        let out = inlay()
            .arg("disasm")
            .arg("--json")
            .arg(path)
            .output()
            .unwrap();
        assert!(out.status.success());
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["schema"], "inlay-disasm/1");
        let mut seen = 0;
        for co in doc["code_objects"].as_array().unwrap() {
            for f in co["functions"].as_array().unwrap() {
                for i in f["instructions"].as_array().unwrap() {
                    let addr = i["address"].as_u64().unwrap();
                    let (text, words) = lines.get(&addr).unwrap_or_else(|| {
                        panic!("{}: no objdump line at {addr:#x}", path.display())
                    });
                    assert_eq!(
                        i["text"].as_str(),
                        Some(text.as_str()),
                        "{} at {addr:#x}",
                        path.display()
                    );
                    let ours: Vec<String> = i["words"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|w| w.as_str().unwrap().to_string())
                        .collect();
                    assert_eq!(&ours, words, "{} at {addr:#x}", path.display());
                    // Vector instructions read EXEC, except the lane accesses
                    // LLVM describes without it (their lane is an operand;
                    // crates/isa/tests/defuse_llvm.rs checks them exactly).
                    let mnemonic = i["mnemonic"].as_str().unwrap();
                    if mnemonic.starts_with("v_")
                        && !matches!(mnemonic, "v_readlane_b32" | "v_writelane_b32")
                    {
                        let regs = i["registers"].as_array().unwrap();
                        assert!(
                            regs.iter()
                                .any(|r| r["file"] == "exec" && r["access"] == "read"),
                            "{text}: reads EXEC"
                        );
                    }
                    seen += 1;
                }
            }
        }
        assert!(seen > 0, "{}: no instructions", path.display());
    }
}
