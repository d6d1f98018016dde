//! Gives the cdylib ROCr's SONAME and defines the `ROCR_1` symbol version.
//!
//! rustc passes its own (anonymous) version script naming every export, which
//! wins over a wildcard in ours. So the exports are Rust functions named
//! `inlay_hsa_*`, and `.symver` directives (see `export!` in lib.rs) bind the
//! public names `hsa_*@@ROCR_1` to them; this script only has to define the
//! `ROCR_1` node. tests/hsa/abi.rs checks the result with readelf.

fn main() {
    let out = std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into());
    let script = std::path::Path::new(&out).join("rocr.map");
    if let Err(e) = std::fs::write(&script, "ROCR_1 { global: hsa_*; local: *; };\n") {
        println!("cargo:warning=cannot write the version script: {e}");
        return;
    }
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        script.display()
    );
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libhsa-runtime64.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}
