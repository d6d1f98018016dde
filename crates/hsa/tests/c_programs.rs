//! C programs written against Debian's HSA headers, compiled at test time and
//! linked against our libhsa-runtime64.so.1. Each prints PASS and exits 0.

mod common;
use std::path::Path;
use std::process::Command;

fn run_c(name: &str) {
    run_c_with(name, &[]);
}

/// Compiles and runs tests/c/NAME.c with `args`; returns its standard
/// output (empty when the compiler or headers are missing and allowed to be).
fn run_c_with(name: &str, args: &[String]) -> String {
    common::run_c_program(name, args).unwrap_or_default()
}

#[test]
fn memory_pools_copies_and_pointer_info() {
    run_c("memory");
}

#[test]
fn signals_every_operation_and_wait() {
    run_c("signals");
}

#[test]
fn queues_barriers_and_async_copies() {
    run_c("queues");
}

#[test]
fn barriers_across_queues_and_chained_copies_keep_their_order() {
    run_c("ordering");
}

#[test]
fn kernels_chained_across_two_queues_by_barrier_packets() {
    let vector_add = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/gfx90a/v5/vector_add.hsaco")
        .display()
        .to_string();
    run_c_with("kernel_ordering", &[vector_add]);
}

/// Every `hsa_*` export of the library, by name (from readelf).
fn exported_names() -> Option<Vec<String>> {
    let tool = common::which("readelf");
    if !common::oracle_available("readelf (binutils)", tool.is_some()) {
        return None;
    }
    let out = Command::new(tool?)
        .args(["--dyn-syms", "-W"])
        .arg(common::cdylib())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let names: Vec<String> = text
        .split_whitespace()
        .filter_map(|w| w.strip_suffix("@@ROCR_1"))
        .map(str::to_string)
        .collect();
    Some(names)
}

#[test]
fn every_export_survives_all_zero_arguments_before_and_after_init() {
    let Some(names) = exported_names() else {
        return;
    };
    assert!(names.len() > 150, "only {} exports found", names.len());
    let out = run_c_with("sweep", &names);
    if !out.is_empty() {
        assert!(
            out.contains(&format!("PASS {} symbols", names.len())),
            "{out}"
        );
    }
}
