//! Reader tests over code objects built at test time and the committed fixtures:
//! model consistency, symbol classification, kernel entries, and bad input.

use crate::reader_support as support;

use inlay_codeobj::symbols::{Binding, SymbolKind, SymbolTable};
use inlay_codeobj::target::Family;
use inlay_codeobj::{CodeObject, Metadata, TargetId};

#[test]
fn every_code_object_parses_and_target_matches_metadata() {
    let corpus = support::corpus();
    for (name, bytes) in &corpus {
        let co = CodeObject::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        // amdhsa.target was written by LLVM: our e_flags decoding must print the same string.
        let md = co
            .metadata
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no metadata"));
        assert_eq!(Some(co.target.to_string()), md.target, "{name}");
        let parsed: TargetId = md.target.as_deref().unwrap().parse().unwrap();
        assert_eq!(parsed.processor, co.target.processor, "{name}");
        // Every metadata kernel has a descriptor and an entry function where the descriptor points.
        assert_eq!(co.kernels.len(), md.kernels.len(), "{name}");
        for mk in &md.kernels {
            let k = co
                .kernel(&mk.name)
                .unwrap_or_else(|| panic!("{name}: kernel {} has no descriptor", mk.name));
            assert_eq!(mk.symbol, format!("{}.kd", k.name));
            assert_eq!(k.entry_symbol, Some(k.name), "{name}: {} entry", k.name);
            assert_eq!(
                Some(u64::from(k.descriptor.kernarg_size)),
                mk.kernarg_segment_size,
                "{name}"
            );
            assert_eq!(
                Some(u64::from(k.descriptor.group_segment_fixed_size)),
                mk.group_segment_fixed_size
            );
            assert_eq!(
                Some(u64::from(k.descriptor.private_segment_fixed_size)),
                mk.private_segment_fixed_size
            );
            // Granulated register counts cover what the metadata says the kernel uses. On
            // gfx90a/gfx94x .vgpr_count already counts the unified file (AGPRs start at
            // accum_offset); gfx908 allocates VGPRs and AGPRs alike.
            let (v, a) = (mk.vgpr_count.unwrap(), mk.agpr_count.unwrap_or(0));
            let regs = match co.target.processor.family() {
                Family::Gfx90a | Family::Gfx94x => {
                    let accum = u64::from(k.decoded.accum_offset.unwrap());
                    assert!(
                        a == 0 || accum + a <= u64::from(k.decoded.vgpr_count),
                        "{name}: {} agprs",
                        k.name
                    );
                    v
                }
                _ => v.max(a),
            };
            assert!(
                u64::from(k.decoded.vgpr_count) >= regs,
                "{name}: {} vgprs",
                k.name
            );
            if let Some(sgprs) = k.decoded.sgpr_count {
                assert!(
                    u64::from(sgprs) >= mk.sgpr_count.unwrap(),
                    "{name}: {} sgprs",
                    k.name
                );
            }
            assert_eq!(
                mk.wavefront_size == Some(32),
                k.decoded.properties.enable_wavefront_size32
            );
        }
        // The model serializes (what `inspect --json` prints).
        serde_json::to_string(&co).unwrap();
    }
    assert!(corpus.len() >= 12 || support::tool("clang-19").is_none());
}

#[test]
fn symbols_are_classified() {
    for link in [false, true] {
        let Some(bytes) = support::build(support::SAMPLE, "gfx90a", 5, link) else {
            return;
        };
        let co = CodeObject::parse(&bytes).unwrap();
        let names = |kind| {
            let mut v: Vec<&str> = co.symbols.of_kind(kind).map(|s| s.name).collect();
            v.sort();
            v
        };
        assert_eq!(names(SymbolKind::Kernel), ["add", "lds", "scale"]);
        assert_eq!(
            names(SymbolKind::KernelDescriptor),
            ["add.kd", "lds.kd", "scale.kd"]
        );
        assert_eq!(names(SymbolKind::DeviceFunction), ["ext_helper", "helper"]);
        assert!(names(SymbolKind::Variable).contains(&"gvar"));
        assert!(names(SymbolKind::Variable).contains(&"ctab"));
        let helper = co.symbols.get("helper").unwrap();
        assert_eq!(helper.binding, Binding::Local);
        assert_eq!(helper.table, SymbolTable::Symtab);
        assert_eq!(helper.section, Some(".text"));
        assert_eq!(co.symbols.get("add.kd").unwrap().size, 64);
        if link {
            // Shared objects export kernels and descriptors in .dynsym too.
            assert!(co
                .symbols
                .in_table(SymbolTable::Dynsym)
                .iter()
                .any(|s| s.name == "add.kd"));
        }
    }
}

#[test]
fn undefined_symbols_and_relocations_in_relocatable_objects() {
    let src = "float ext_fn(float); __kernel void k(__global float *a) { a[0] = ext_fn(a[1]); }";
    let Some(bytes) = support::build(src, "gfx90a", 5, false) else {
        return;
    };
    let co = CodeObject::parse(&bytes).unwrap();
    let undef: Vec<_> = co
        .symbols
        .of_kind(SymbolKind::Undefined)
        .map(|s| s.name)
        .collect();
    assert_eq!(undef, ["ext_fn"]);
    let r: Vec<_> = co
        .relocations
        .iter()
        .filter(|r| r.symbol == Some("ext_fn"))
        .collect();
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(r.iter().all(|r| r.target_section == Some(".text")));
    let kd = co.kernel("k").unwrap();
    assert_eq!(kd.entry_symbol, Some("k"));
}

/// Parsing must return an error (never panic) for every prefix of a valid file.
#[test]
fn truncated_files_are_errors_with_offsets() {
    for link in [false, true] {
        let Some(bytes) = support::build(support::SAMPLE, "gfx90a", 5, link) else {
            return;
        };
        let step = (bytes.len() / 400).max(1);
        for cut in (0..bytes.len())
            .step_by(step)
            .chain([1, 4, 63, 64, bytes.len() - 1])
        {
            let err = CodeObject::parse(&bytes[..cut]).expect_err("truncated file parsed");
            assert!(err.offset.is_some(), "cut {cut}: {err}");
        }
    }
}

fn patched(bytes: &[u8], at: usize, new: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[at..at + new.len()].copy_from_slice(new);
    b
}

#[test]
fn header_errors_name_the_field_and_offset() {
    let Some(bytes) = support::build(support::SAMPLE, "gfx90a", 5, true) else {
        return;
    };
    let cases: [(usize, &[u8], u64, &str); 9] = [
        (0, b"\x7fELG", 0, "not an ELF"),
        (4, &[1], 4, "EI_CLASS"),
        (5, &[2], 5, "EI_DATA"),
        (7, &[0], 7, "EI_OSABI"),
        (8, &[1], 8, "EI_ABIVERSION"),
        (18, &62u16.to_le_bytes(), 18, "e_machine"),
        (48, &0xeeu32.to_le_bytes(), 48, "EF_AMDGPU_MACH"),
        (
            40,
            &(1u64 << 40).to_le_bytes(),
            1 << 40,
            "section header table",
        ),
        (58, &40u16.to_le_bytes(), 58, "e_shentsize"),
    ];
    for (at, new, offset, what) in cases {
        let err = CodeObject::parse(&patched(&bytes, at, new)).expect_err(what);
        assert_eq!(err.offset, Some(offset), "{what}: {err}");
        assert!(err.to_string().contains(what), "{what}: {err}");
    }
    // Absurd counts.
    let err = CodeObject::parse(&patched(&bytes, 60, &u16::MAX.to_le_bytes())).unwrap_err();
    assert!(err.offset.is_some(), "{err}");
    let co = CodeObject::parse(&bytes).unwrap();
    // A section whose contents lie outside the file.
    let text = co.section(".text").unwrap().index;
    let sh = co.header.e_shoff as usize + text * 64;
    let err = CodeObject::parse(&patched(&bytes, sh + 24, &u64::MAX.to_le_bytes())).unwrap_err();
    assert_eq!(err.offset, Some(sh as u64 + 24), "{err}");
    let err =
        CodeObject::parse(&patched(&bytes, sh + 32, &(1u64 << 50).to_le_bytes())).unwrap_err();
    assert_eq!(err.offset, Some(sh as u64 + 24), "{err}");
}

#[test]
fn malformed_metadata_is_an_error_naming_the_key() {
    let Some(bytes) = support::build(support::SAMPLE, "gfx90a", 5, true) else {
        return;
    };
    let co = CodeObject::parse(&bytes).unwrap();
    let note = co.notes.iter().find(|n| n.n_type == 32).unwrap();
    // Truncated msgpack inside the note (descriptor cut short by overwriting its tail).
    let mut broken = bytes.clone();
    let at = note.desc_offset as usize;
    broken[at] = 0xdf; // map32 with a huge length
    broken[at + 1..at + 5].copy_from_slice(&u32::MAX.to_be_bytes());
    let err = CodeObject::parse(&broken).unwrap_err();
    assert!(err.offset.unwrap() >= note.desc_offset, "{err}");
    assert!(err.to_string().contains("msgpack"), "{err}");

    // Wrong shapes, built with rmpv.
    use rmpv::Value;
    let doc = |kernels: Value| {
        let mut b = Vec::new();
        let m = Value::Map(vec![
            (
                Value::from("amdhsa.version"),
                Value::Array(vec![1.into(), 2.into()]),
            ),
            (Value::from("amdhsa.kernels"), kernels),
        ]);
        rmpv::encode::write_value(&mut b, &m).unwrap();
        b
    };
    let err = Metadata::parse(&doc(Value::from("nope")), 100).unwrap_err();
    assert_eq!(err.offset, Some(100));
    assert!(
        err.what.contains("amdhsa.kernels") && err.what.contains("array"),
        "{err}"
    );
    let kernel = Value::Map(vec![
        (Value::from(".name"), Value::from("k")),
        (Value::from(".symbol"), Value::from("k.kd")),
        (Value::from(".sgpr_count"), Value::from("many")),
    ]);
    let err = Metadata::parse(&doc(Value::Array(vec![kernel])), 0).unwrap_err();
    assert!(
        err.what.contains("amdhsa.kernels[0]..sgpr_count") || err.what.contains(".sgpr_count"),
        "{err}"
    );
    assert!(err.what.contains("unsigned integer"), "{err}");
    let err = Metadata::parse(&doc(Value::Array(vec![Value::Map(vec![])])), 0).unwrap_err();
    assert!(
        err.what.contains(".name") && err.what.contains("missing"),
        "{err}"
    );
}

/// Deterministic byte corruption all over real files: Ok or Err, never a panic.
#[test]
fn corrupted_bytes_never_panic() {
    let corpus = support::corpus();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (_, bytes) in corpus.iter().take(6) {
        for _ in 0..support::fuzz_iterations() {
            let mut b = bytes.clone();
            for _ in 0..1 + next() % 4 {
                let at = support::corruption_offset(&b, next());
                b[at] = next() as u8;
            }
            if let Ok(co) = CodeObject::parse(&b) {
                let _ = serde_json::to_string(&co);
            }
        }
    }
}

/// A descriptor symbol pointing past its section is an error at that symbol's entry.
#[test]
fn descriptor_outside_its_section_is_an_error_at_the_symbol() {
    let Some(bytes) = support::build(support::SAMPLE, "gfx90a", 5, true) else {
        return;
    };
    let co = CodeObject::parse(&bytes).unwrap();
    let kd = co.symbols.get("add.kd").unwrap();
    let table = co
        .sections
        .iter()
        .find(|s| s.sh_type == inlay_codeobj::elf::SHT_DYNSYM)
        .unwrap();
    let entry = table.offset + kd.index as u64 * 24;
    let mut b = bytes.clone();
    b[entry as usize + 8..entry as usize + 16].copy_from_slice(&0x7fff_0000u64.to_le_bytes());
    let err = CodeObject::parse(&b).unwrap_err();
    assert_eq!(err.offset, Some(entry), "{err}");
    assert!(err.what.contains("add.kd"), "{err}");
}

/// amdhsa.printf and keys nobody models survive parse → serialize → parse.
#[test]
fn printf_and_unknown_keys_round_trip() {
    use rmpv::Value;
    let arg = Value::Map(vec![
        (".offset".into(), 0.into()),
        (".size".into(), 8.into()),
        (".value_kind".into(), "hidden_printf_buffer".into()),
        (
            ".x_vendor".into(),
            Value::Array(vec![1.into(), "two".into()]),
        ),
    ]);
    let kernel = Value::Map(vec![
        (".name".into(), "k".into()),
        (".symbol".into(), "k.kd".into()),
        (".args".into(), Value::Array(vec![arg])),
        (".uses_dynamic_stack".into(), false.into()),
        (".x_flag".into(), Value::Nil),
    ]);
    let doc = Value::Map(vec![
        (
            "amdhsa.version".into(),
            Value::Array(vec![1.into(), 2.into()]),
        ),
        (
            "amdhsa.printf".into(),
            Value::Array(vec!["1:1:4:%d\\n".into()]),
        ),
        ("amdhsa.kernels".into(), Value::Array(vec![kernel])),
        ("vendor.extra".into(), Value::F64(0.5)),
    ]);
    let mut bytes = Vec::new();
    rmpv::encode::write_value(&mut bytes, &doc).unwrap();
    let md = Metadata::parse(&bytes, 0).unwrap();
    assert_eq!(md.printf.as_deref(), Some(&["1:1:4:%d\\n".to_string()][..]));
    assert_eq!(md.kernels[0].args[0].value_kind, "hidden_printf_buffer");
    assert_eq!(md.kernels[0].args[0].unknown[0].0, ".x_vendor");
    assert_eq!(
        md.kernels[0].unknown,
        vec![(".x_flag".to_string(), Value::Nil)]
    );
    assert_eq!(
        md.unknown,
        vec![("vendor.extra".to_string(), Value::F64(0.5))]
    );
    let again = Metadata::parse(&md.to_msgpack(), 0).unwrap();
    assert_eq!(again, md);
    let json = serde_json::to_value(&md).unwrap();
    assert_eq!(json["unknown"]["vendor.extra"], 0.5);
    assert_eq!(
        json["kernels"][0]["args"][0]["unknown"][".x_vendor"][1],
        "two"
    );
}
