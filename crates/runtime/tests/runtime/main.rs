//! The integration tests of inlay-runtime, in one test binary: linking
//! the workspace once per test file made most of a cold CI run. Each
//! module below was a test binary of its own; run one with
//! `cargo test -p inlay-runtime --test runtime <module>::`.

mod runtime;
