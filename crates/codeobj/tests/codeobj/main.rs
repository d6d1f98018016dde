//! The integration tests of inlay-codeobj, in one test binary: linking
//! the workspace once per test file made most of a cold CI run. Each
//! module below was a test binary of its own; run one with
//! `cargo test -p inlay-codeobj --test codeobj <module>::`.

mod container_support;
mod reader_support;

mod container_bundle;
mod container_host;
mod container_regressions;
mod container_rocsparse;
mod descriptor_llvm;
mod parse_code;
mod readelf_oracle;
mod reader;
mod reader_rocm;
mod writer;
mod writer_regressions;
