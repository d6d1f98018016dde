//! Fuzzes the code object writer on every code object the reader accepts.
//! The writer may refuse an input, never panic on one; after an edit that
//! moves sections (.text grows, metadata is written back) its output must
//! parse again with the same kernels and metadata.
//!
//! With INLAY_FUZZ_STRICT_WRITER=1 it also checks the documented promise that
//! an unedited write reproduces the input byte for byte. That check is opt-in
//! because known findings (regressions/writer/) stop every run at once.
#![no_main]

use inlay_codeobj::container::{self, EntryKind};
use inlay_codeobj::write::{self, Builder};
use inlay_codeobj::CodeObject;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(co) = CodeObject::parse(data) {
        check_writer(&co);
    }
    // Also the code objects inside bundles and fat binaries.
    for entry in container::walk(data, "fuzz").take(64) {
        let Ok(entry) = entry else { continue };
        if entry.kind == EntryKind::CodeObject && entry.offset != Some(0) {
            if let Ok(co) = CodeObject::parse(&entry.bytes) {
                check_writer(&co);
            }
        }
    }
});

fn check_writer(co: &CodeObject<'_>) {
    let strict = std::env::var_os("INLAY_FUZZ_STRICT_WRITER").is_some();
    if let Ok(out) = write::write(co) {
        let input = co.data();
        if strict && out != input {
            // For triage: INLAY_FUZZ_DUMP=path keeps the writer's output.
            if let Some(path) = std::env::var_os("INLAY_FUZZ_DUMP") {
                let _ = std::fs::write(path, &out);
            }
            let first = out.iter().zip(input).position(|(a, b)| a != b);
            panic!(
                "unedited write differs from the input: {} bytes written, {} read, first difference at {:?}",
                out.len(),
                input.len(),
                first
            );
        }
    }
    // Grow .text (all later sections move) and write the metadata back.
    let mut b = Builder::new(co);
    if let Some(text) = co.section(".text") {
        let mut bytes = co.section_data(text).to_vec();
        bytes.extend_from_slice(&[0; 260]);
        let _ = b.set_section_data(".text", bytes);
    }
    if let Some(md) = &co.metadata {
        let _ = b.set_metadata(md.clone());
    }
    let Ok(out) = b.write() else { return };
    let again = match CodeObject::parse(&out) {
        Ok(c) => c,
        Err(e) => {
            if let Some(path) = std::env::var_os("INLAY_FUZZ_DUMP") {
                let _ = std::fs::write(path, &out);
            }
            panic!("the writer's output does not parse: {e}")
        }
    };
    let names = |c: &CodeObject<'_>| c.kernels.iter().map(|k| k.name.to_string()).collect::<Vec<_>>();
    assert_eq!(names(&again), names(co), "kernels changed across an edit");
    // As msgpack bytes, so a NaN in an unknown key still compares equal.
    let md = |c: &CodeObject<'_>| c.metadata.as_ref().map(|m| m.to_msgpack());
    assert!(md(&again) == md(co), "metadata changed across an edit");
}
