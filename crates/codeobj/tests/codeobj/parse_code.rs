//! `CodeObject::parse_code` (the disassembler's light parse) reads the same
//! header, target, sections, segments and symbols as the full parse.

use crate::reader_support as support;

use inlay_codeobj::CodeObject;

#[test]
fn parse_code_agrees_with_parse_on_every_fixture() {
    let mut checked = 0;
    for path in support::fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let Ok(full) = CodeObject::parse(&bytes) else {
            continue;
        };
        let light =
            CodeObject::parse_code(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.display();
        assert_eq!(light.header, full.header, "{name}");
        assert_eq!(light.target.to_string(), full.target.to_string(), "{name}");
        assert_eq!(
            light.code_object_version, full.code_object_version,
            "{name}"
        );
        assert_eq!(light.sections, full.sections, "{name}");
        assert_eq!(light.segments, full.segments, "{name}");
        assert_eq!(light.symbols.all(), full.symbols.all(), "{name}");
        for s in &full.sections {
            assert_eq!(light.section_data(s), full.section_data(s), "{name}");
        }
        assert!(
            light.metadata.is_none() && light.kernels.is_empty(),
            "{name}"
        );
        checked += 1;
    }
    assert!(checked > 10, "only {checked} fixtures parsed");
}

#[test]
fn parse_code_rejects_what_parse_rejects_in_the_elf() {
    let bytes = std::fs::read(&support::fixtures()[0]).unwrap();
    for cut in [0, 16, 63] {
        assert!(
            CodeObject::parse_code(&bytes[..cut]).is_err(),
            "cut at {cut}"
        );
    }
}
