//! The integration tests of inlay-cli, in one test binary: linking
//! the workspace once per test file made most of a cold CI run. Each
//! module below was a test binary of its own; run one with
//! `cargo test -p inlay-cli --test cli <module>::`.

mod common;

mod bad_input;
mod demo;
mod disasm_damaged;
mod disasm_oracle;
mod errors;
mod hip_programs;
mod inspect_oracle;
mod run_process;
mod run_rocminfo;
mod run_tools;
mod tool_api;
mod tool_examples;
