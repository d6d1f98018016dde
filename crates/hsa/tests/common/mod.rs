//! Shared by the oracle tests: finding (or building) the drop-in library,
//! a directory that holds it under ROCr's file name, and oracle policy.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// When a tool is missing: fail under INLAY_REQUIRE_ORACLES=1 (CI), else skip with a note.
/// Returns false when the caller should skip.
pub fn oracle_available(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    if std::env::var("INLAY_REQUIRE_ORACLES").as_deref() == Ok("1") {
        panic!("oracle missing: {what} (INLAY_REQUIRE_ORACLES=1)");
    }
    eprintln!("note: skipping, oracle missing: {what}");
    false
}

pub fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// target/<profile>, found from this test binary (target/<profile>/deps/<test>).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .to_path_buf()
}

/// The built cdylib, (re)built once per test binary: `cargo test` builds
/// test binaries but does not relink a cdylib-only package, so without this
/// the tests could run against a stale library.
pub fn cdylib() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = profile_dir();
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut cmd = Command::new(cargo);
            cmd.args(["build", "-q", "-p", "inlay-hsa"]);
            if dir.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            let status = cmd.status().expect("run cargo build");
            assert!(status.success(), "cargo build -p inlay-hsa failed");
            let lib = dir.join("libhsa_runtime64.so");
            assert!(lib.is_file(), "{} missing after build", lib.display());
            lib
        })
        .clone()
}

/// A fresh directory with `libhsa-runtime64.so.1` (and `.so` for linking) pointing at our library.
pub fn lib_dir(name: &str) -> PathBuf {
    let lib = cdylib();
    let dir = std::env::temp_dir().join(format!("inlay-hsa-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    for link in ["libhsa-runtime64.so.1", "libhsa-runtime64.so"] {
        std::os::unix::fs::symlink(&lib, dir.join(link)).expect("symlink");
    }
    dir
}

/// A C compiler: gcc, cc or clang-19, whichever is installed.
pub fn c_compiler() -> Option<PathBuf> {
    ["gcc", "cc", "clang-19", "clang"]
        .iter()
        .find_map(|t| which(t))
}

pub fn hsa_headers_present() -> bool {
    Path::new("/usr/include/hsa/hsa.h").is_file()
        && Path::new("/usr/include/hsa/hsa_ext_amd.h").is_file()
}
