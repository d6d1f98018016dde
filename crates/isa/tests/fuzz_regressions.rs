//! Inputs the `isa` fuzz target found (fuzz/regressions/isa), replayed with
//! the target's properties, plus the LLVM facts behind each fix.

use inlay_isa::format::to_string;
use inlay_isa::listing::{write_section, Section};
use inlay_isa::{encode, Decoder, Target};

const TARGETS: [Target; 3] = [Target::Gfx908, Target::Gfx90a, Target::Gfx942];

/// The fuzz target's checks: round trip, no empty operand, and listing lines
/// that equal formatting each instruction alone.
fn check(data: &[u8]) {
    for target in TARGETS {
        let d = Decoder::new(target);
        let mut at = 0;
        while at < data.len() {
            let Ok(i) = d.decode(&data[at..]) else { break };
            assert_eq!(encode(&i), &data[at..at + i.len()]);
            let text = to_string(&i);
            assert!(
                !text.ends_with(' ') && !text.contains(", ,"),
                "{target:?} at {at}: empty operand in {text:?}"
            );
            at += i.len();
        }
        let sec = Section {
            file_name: "f",
            section_name: ".text",
            bytes: data,
            address: 0x1000,
            symbols: &[],
            file: None,
        };
        let mut listing = String::new();
        write_section(target, &sec, &mut listing);
        for line in listing.lines() {
            let Some((text, comment)) = line.split_once("// ") else {
                continue;
            };
            let addr = u64::from_str_radix(&comment[..12], 16).unwrap();
            let i = d.decode(&data[(addr - 0x1000) as usize..]).unwrap();
            assert_eq!(text.trim_start_matches('\t').trim_end(), to_string(&i));
        }
    }
}

#[test]
fn every_isa_regression_input_holds() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/regressions/isa");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        check(&std::fs::read(entry.unwrap().path()).unwrap());
        n += 1;
    }
    assert!(n >= 1);
}

/// global_store_dwordx4 v1, v[2:5], saddr: llvm-mc-19 --disassemble rejects a
/// GLOBAL scalar base with no 64-bit name (flat_scratch_hi 0x67, vcc_hi 0x6b,
/// m0 0x7c) on gfx908/gfx90a/gfx942, and prints SCRATCH's 32-bit ones.
#[test]
fn global_saddr_needs_a_64_bit_register() {
    for target in TARGETS {
        let d = Decoder::new(target);
        for (saddr, global) in [
            (0x64, Some("global_store_dwordx4 v1, v[2:5], s[100:101]")),
            (0x65, Some("global_store_dwordx4 v1, v[2:5], s[100:101]")),
            (0x67, None),
            (0x6b, None),
            (0x7b, Some("global_store_dwordx4 v1, v[2:5], ttmp[14:15]")),
            (0x7c, None),
            (0x7d, Some("global_store_dwordx4 v1, v[2:5], null")),
        ] {
            let i = d
                .decode(&[0x00, 0x80, 0x7c, 0xdc, 0x01, 0x02, saddr, 0x00])
                .unwrap();
            let text = i.is_valid().then(|| to_string(&i));
            assert_eq!(text.as_deref(), global, "{target:?} saddr {saddr:#x}");
        }
        for (saddr, name) in [(0x67, "flat_scratch_hi"), (0x6b, "vcc_hi"), (0x7c, "m0")] {
            let i = d
                .decode(&[0x00, 0x40, 0x7c, 0xdc, 0x01, 0x02, saddr, 0x00])
                .unwrap();
            assert_eq!(
                to_string(&i),
                format!("scratch_store_dwordx4 off, v[2:5], {name}"),
                "{target:?}"
            );
        }
    }
}
