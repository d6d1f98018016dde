//! Kernels dispatched through the drop-in runtime by C programs, in the flow
//! of LLVM libc's AMDHSA loader, on the virtual GPU; every result is checked
//! against a reference the C program computes on the host.

use crate::common;
use std::path::Path;

fn fixtures(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(rel)
        .display()
        .to_string()
}

#[test]
fn fixture_kernels_code_object_v4() {
    common::run_c_program("kernels", &[fixtures("gfx90a/v4")]);
}

#[test]
fn fixture_kernels_code_object_v5() {
    common::run_c_program("kernels", &[fixtures("gfx90a/v5")]);
}

/// The memory model HIP relies on, with a fixture kernel: locked memory by
/// its agent address, shared virtual memory, the rectangular copy, signals
/// as amd_signal_t, profiling timestamps, and a fault on pageable memory.
#[test]
fn memory_model_locked_svm_signals_and_faults() {
    common::run_c_program("memory_model", &[fixtures("gfx90a/v5")]);
}
