//! Shared helpers of the CLI's integration tests: oracles, fixtures, corpora.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub const ROCSPARSE: &str = "/usr/lib/x86_64-linux-gnu/librocsparse.so.0.1";

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn inlay() -> Command {
    Command::new(env!("CARGO_BIN_EXE_inlay"))
}

/// True if an oracle is missing and the test should be skipped; fails instead when
/// CI requires the oracles (INLAY_REQUIRE_ORACLES=1).
pub fn missing(what: &str, present: bool) -> bool {
    if present {
        return false;
    }
    if std::env::var_os("INLAY_REQUIRE_ORACLES").is_some_and(|v| v == "1") {
        panic!("{what} is required (INLAY_REQUIRE_ORACLES=1) but not installed; run scripts/install-deps");
    }
    eprintln!("skipping: {what} not installed (scripts/install-deps installs it)");
    true
}

pub fn tool_missing(tool: &str) -> bool {
    let present = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    missing(tool, present)
}

/// Every fixture file of the given kinds, from fixtures/manifest.json.
pub fn fixtures(kinds: &[&str]) -> Vec<PathBuf> {
    let manifest = root().join("fixtures/manifest.json");
    let text = std::fs::read_to_string(&manifest).expect("fixtures/manifest.json");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("manifest is JSON");
    let files = doc["files"]
        .as_array()
        .or_else(|| doc.as_array())
        .expect("manifest lists files");
    let list: Vec<PathBuf> = files
        .iter()
        .filter(|f| kinds.iter().any(|k| f["kind"].as_str() == Some(k)))
        .map(|f| {
            root()
                .join("fixtures")
                .join(f["path"].as_str().expect("path"))
        })
        .collect();
    assert!(!list.is_empty(), "no fixtures of kinds {kinds:?}");
    list
}

/// Writes the code objects of the given targets (`gfx90a`, `gfx908`, matched as the start of the
/// target ID) inside `library` to `dir`, returning their paths.
pub fn extract_code_objects(library: &Path, targets: &[&str], dir: &Path) -> Vec<PathBuf> {
    let file = inlay_codeobj::file::MappedFile::open(library).expect("map library");
    let mut out = Vec::new();
    for (i, entry) in inlay_codeobj::container::walk(file.bytes(), "lib").enumerate() {
        let entry = entry.expect("walk");
        if entry.kind != inlay_codeobj::container::EntryKind::CodeObject {
            continue;
        }
        if !targets
            .iter()
            .any(|t| entry.target_id == *t || entry.target_id.starts_with(&format!("{t}:")))
        {
            continue;
        }
        let path = dir.join(format!(
            "co{i:04}-{}.hsaco",
            entry.target_id.replace(':', "_")
        ));
        std::fs::write(&path, &entry.bytes).expect("write code object");
        out.push(path);
    }
    out
}

/// The drop-in runtime cargo built for these tests: inlay-hsa is a
/// dev-dependency, so its library (cdylib beside the rlib) is built into the
/// directory of the test binaries before they are linked. A missing one fails
/// the test; it is never a library left over from another build.
pub fn runtime_library() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let lib = exe.with_file_name("libhsa_runtime64.so");
    assert!(
        lib.is_file(),
        "{} is missing: cargo builds it for the tests of inlay-cli (run them with cargo test)",
        lib.display()
    );
    lib
}

/// `inlay run` with this test's runtime library.
pub fn inlay_run() -> Command {
    let mut cmd = inlay();
    cmd.arg("run").env("INLAY_HSA_LIBRARY", runtime_library());
    cmd
}

/// A C program of crates/hsa/tests/c compiled against our runtime, once
/// per test binary (tests run in parallel; one running the program while
/// another's gcc rewrites it would fail). None when gcc or the HSA headers
/// are missing.
pub fn hsa_program(name: &'static str) -> Option<PathBuf> {
    static BUILT: std::sync::OnceLock<
        std::sync::Mutex<std::collections::BTreeMap<&'static str, PathBuf>>,
    > = std::sync::OnceLock::new();
    let headers = Path::new("/usr/include/hsa/hsa.h").is_file();
    let gcc = Command::new("gcc").arg("--version").output().is_ok();
    if missing(
        "gcc and Debian's HSA headers (libhsa-runtime-dev)",
        gcc && headers,
    ) {
        return None;
    }
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = built.get(name) {
        return Some(p.clone());
    }
    let dir = std::env::temp_dir().join(format!("inlay-hsa-programs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let link = dir.join("libhsa-runtime64.so");
    if !link.exists() {
        std::os::unix::fs::symlink(runtime_library(), &link).expect("symlink");
    }
    let exe = dir.join(name);
    let src = root().join(format!("crates/hsa/tests/c/{name}.c"));
    let out = Command::new("gcc")
        .args(["-std=gnu11", "-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg(format!("-L{}", dir.display()))
        .args(["-lhsa-runtime64", "-lpthread", "-lm"])
        .output()
        .expect("gcc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    built.insert(name, exe.clone());
    Some(exe)
}
