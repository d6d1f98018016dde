//! The integration tests of inlay-isa, in one test binary: linking
//! the workspace once per test file made most of a cold CI run. Each
//! module below was a test binary of its own; run one with
//! `cargo test -p inlay-isa --test isa <module>::`.

mod support;

mod defuse_fixtures;
mod defuse_llvm;
mod defuse_spec;
mod defuse_ttmp;
mod encode_llvm_mc;
mod format_llvm_mc;
mod fuzz_regressions;
mod listing_cache;
mod objdump_fixtures;
mod objdump_rocsparse;
mod opcode_sweep;
mod robustness;
