//! The integration tests of inlay-hsa, in one test binary: linking
//! the workspace once per test file made most of a cold CI run. Each
//! module below was a test binary of its own; run one with
//! `cargo test -p inlay-hsa --test hsa <module>::`.

mod common;

mod abi;
mod bad_input_all;
mod c_kernels;
mod c_loader;
mod c_programs;
mod descriptors;
mod hostile;
mod rocminfo;
mod status_strings;
