//! The integration tests of inlay-loader, in one test binary: linking
//! the workspace once per test file made most of a cold CI run. Each
//! module below was a test binary of its own; run one with
//! `cargo test -p inlay-loader --test loader <module>::`.

mod common;

mod bad_input;
mod load;
mod rocsparse;
