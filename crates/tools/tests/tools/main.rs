//! The integration tests of inlay-tools, in one test binary: linking
//! the workspace once per test file made most of a cold CI run. Each
//! module below was a test binary of its own; run one with
//! `cargo test -p inlay-tools --test tools <module>::`.

mod c_abi;
mod host;
