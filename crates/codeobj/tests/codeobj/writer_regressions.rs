//! The writer's fuzz findings (fuzz/regressions/writer/): inputs the reader accepts but
//! whose layout the writer used to mangle. Each must now either be written faithfully
//! or be refused with an error — never come back as a corrupt file.

use std::path::Path;

use inlay_codeobj::write::{self, Builder};
use inlay_codeobj::CodeObject;

fn check(name: &str, data: &[u8]) {
    let Ok(co) = CodeObject::parse(data) else {
        return;
    };
    match write::write(&co) {
        Ok(out) => assert_eq!(
            out, data,
            "{name}: an unedited write must reproduce the input"
        ),
        Err(e) => assert!(e.to_string().contains("cannot lay out"), "{name}: {e}"),
    }
    let mut b = Builder::new(&co);
    if let Some(text) = co.section(".text") {
        let mut bytes = co.section_data(text).to_vec();
        bytes.extend_from_slice(&[0; 260]);
        let _ = b.set_section_data(".text", bytes);
    }
    if let Some(md) = &co.metadata {
        let _ = b.set_metadata(md.clone());
    }
    if let Ok(out) = b.write() {
        let again = CodeObject::parse(&out)
            .unwrap_or_else(|e| panic!("{name}: edited output does not parse: {e}"));
        for seg in &again.segments {
            assert!(
                seg.offset + seg.filesz <= out.len() as u64,
                "{name}: segment past the end"
            );
        }
        for k in &co.kernels {
            assert!(
                again.kernel(k.name).is_some(),
                "{name}: kernel {} lost",
                k.name
            );
        }
    }
}

#[test]
fn writer_findings_are_written_faithfully_or_refused() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/writer");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("fuzz/regressions/writer") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "bin") {
            check(&path.display().to_string(), &std::fs::read(&path).unwrap());
            n += 1;
        }
    }
    assert!(n >= 5, "expected the committed writer findings, found {n}");
}
