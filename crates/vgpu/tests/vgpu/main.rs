//! The integration tests of inlay-vgpu, in one test binary: linking
//! the workspace once per test file made most of a cold CI run. Each
//! module below was a test binary of its own; run one with
//! `cargo test -p inlay-vgpu --test vgpu <module>::`.

mod common;
mod pcode;

mod baseline_valu;
mod determinism;
mod faults;
mod fixtures;
mod isa_ops;
mod mnemonic_coverage;
mod opcodes;
mod pcode_oracle;
mod rocsparse_ops;
mod untrusted;
