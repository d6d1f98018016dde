//! The integration tests of inlay-instrument, in one test binary: linking
//! the workspace once per test file made most of a cold CI run. Each
//! module below was a test binary of its own; run one with
//! `cargo test -p inlay-instrument --test instrument <module>::`.

mod harness;

mod clobber_vgpu;
mod fixtures;
mod hazards;
mod hooks_vgpu;
mod liveness;
mod record_vgpu;
mod rewrite_robustness;
mod rewrite_vgpu;
