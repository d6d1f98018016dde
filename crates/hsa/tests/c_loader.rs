//! C programs against Debian's HSA headers exercising code object readers,
//! executables, symbols and the AMD loader extension. Expected addresses and
//! sizes come from llvm-readelf-19, passed to the programs as arguments.

mod common;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(rel)
        .display()
        .to_string()
}

/// Compiles tests/c/NAME.c against the headers and our library and runs it with `args`.
fn run_c(name: &str, args: &[String]) {
    common::run_c_program(name, args);
}

/// llvm-readelf-19 output for `args` on `file`, or `None` (with the oracle note).
fn readelf(args: &[&str], file: &str) -> Option<String> {
    let tool: Option<PathBuf> = common::which("llvm-readelf-19");
    if !common::oracle_available("llvm-readelf-19", tool.is_some()) {
        return None;
    }
    let out = Command::new(tool?).args(args).arg(file).output().ok()?;
    assert!(out.status.success());
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// (value in hex, size) of symbol `name` from `readelf -s`.
fn symbol(syms: &str, name: &str) -> (String, String) {
    let w: Vec<&str> = syms
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.len() == 8 && w[7] == name)
        .unwrap_or_else(|| panic!("readelf lists no {name}"));
    (w[1].to_string(), w[2].to_string())
}

/// `key: value` for kernel `kernel` from the metadata readelf --notes prints.
fn metadata(notes: &str, kernel: &str, key: &str) -> Option<String> {
    // Kernels are the items of `amdhsa.kernels`, indented by two spaces
    // (argument items are indented further).
    let target = format!(".symbol: {kernel}.kd");
    let block = notes
        .split("\n  - .")
        .find(|b| {
            b.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") == target)
        })
        .unwrap_or_else(|| panic!("no metadata for {kernel}"));
    block.lines().find_map(|l| {
        l.trim()
            .strip_prefix(&format!(".{key}:"))
            .map(|v| v.trim().to_string())
    })
}

#[test]
fn llvm_libc_loader_flow_from_memory_and_file() {
    for (file, kernel) in [
        ("gfx90a/v5/vector_add.hsaco", "vector_add"),
        ("gfx90a/v4/scratch.hsaco", "scratch_lookup"),
        ("gfx90a/v5/reduce_sum.hsaco", "_Z10reduce_sumIfEvPKT_PS0_j"),
    ] {
        let path = fixture(file);
        let (Some(syms), Some(notes)) = (readelf(&["-sW"], &path), readelf(&["--notes"], &path))
        else {
            return;
        };
        let md = |k: &str| metadata(&notes, kernel, k).unwrap_or_else(|| panic!("{kernel}: .{k}"));
        let kd = symbol(&syms, &format!("{kernel}.kd")).0;
        // Code object v4 metadata has no .uses_dynamic_stack; the descriptor's
        // kernel_code_properties bit 11 says it (the fixtures' first segment
        // starts at file offset 0, so the symbol value is the file offset).
        let dynamic = metadata(&notes, kernel, "uses_dynamic_stack").unwrap_or_else(|| {
            let bytes = std::fs::read(&path).unwrap();
            let at = usize::from_str_radix(&kd, 16).unwrap() + 56;
            let props = u16::from_le_bytes([bytes[at], bytes[at + 1]]);
            (props & (1 << 11) != 0).to_string()
        });
        let args = vec![
            path.clone(),
            kernel.to_string(),
            kd,
            md("kernarg_segment_size"),
            md("kernarg_segment_align"),
            md("group_segment_fixed_size"),
            md("private_segment_fixed_size"),
            dynamic,
        ];
        run_c("loader_flow", &args);
    }
}

#[test]
fn device_function_library_and_caller_in_both_orders() {
    let (lib, caller) = (
        fixture("gfx90a/v5/devlib_lib.hsaco"),
        fixture("gfx90a/v5/devlib_caller.hsaco"),
    );
    let (Some(lib_syms), Some(relocs)) = (readelf(&["-sW"], &lib), readelf(&["-rW"], &caller))
    else {
        return;
    };
    let got = relocs
        .lines()
        .find(|l| l.contains("R_AMDGPU_ABS64") && l.contains("inlay_lib_scale"))
        .and_then(|l| l.split_whitespace().next())
        .expect("the caller's GOT relocation")
        .to_string();
    let (scale, scale_size) = symbol(&lib_syms, "inlay_lib_scale");
    let (bias, bias_size) = symbol(&lib_syms, "inlay_lib_bias");
    run_c(
        "devlib",
        &[lib, caller, scale, scale_size, got, bias, bias_size],
    );
}

#[test]
fn local_device_functions_and_host_variables() {
    let path = fixture("gfx90a/v5/device_call.hsaco");
    let Some(syms) = readelf(&["-sW"], &path) else {
        return;
    };
    let mut args = vec![path];
    // In table order: inlay_ops = {poly, twice, negate}.
    for name in ["_Z4polyf", "_Z5twicef", "_Z6negatef"] {
        let (value, size) = symbol(&syms, name);
        args.extend([name.to_string(), value, size]);
    }
    run_c("local_functions", &args);
}
