//! Untrusted bytes never panic: decode, format and listing over pseudo-random
//! words (biased towards real encoding prefixes), and encode(decode(x)) == x.

use inlay_isa::listing::{write_section, Section, Symbol, SymbolKind};
use inlay_isa::{encode, format::format, Decoder, Instruction, Target};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }
}

const PREFIXES: [u32; 12] = [
    0x0000_0000,
    0x7E00_0000,
    0x7C00_0000,
    0x8000_0000,
    0xBE80_0000,
    0xBF80_0000,
    0xC000_0000,
    0xD000_0000,
    0xD380_0000,
    0xD800_0000,
    0xDC00_0000,
    0xE000_0000,
];

#[test]
fn random_words_decode_format_and_round_trip() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut text = String::new();
    let mut inst = Instruction::default();
    for target in [Target::Gfx908, Target::Gfx90a, Target::Gfx942] {
        let dec = Decoder::new(target);
        let mut valid = 0;
        for n in 0..200_000u32 {
            let p = PREFIXES[(n % 12) as usize];
            let w0 = p | (rng.next() & !(p | 0x8000_0000 | if p == 0 { 0 } else { 0x7000_0000 }));
            let w0 = if n % 7 == 0 { rng.next() } else { w0 };
            let bytes: Vec<u8> = [w0, rng.next()]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect();
            for len in [0, 3, 4, 8] {
                let Ok(size) = dec.decode_into(&bytes[..len], &mut inst) else {
                    continue;
                };
                text.clear();
                format(&inst, &mut text);
                assert!(!text.is_empty());
                assert_eq!(encode(&inst), bytes[..size].to_vec(), "{text}");
                valid += inst.is_valid() as u32;
                let _ = inst.operands().count();
            }
        }
        assert!(
            valid > 100_000,
            "{}: only {valid} valid decodes",
            target.name()
        );
    }
}

#[test]
fn listing_survives_garbage_and_odd_symbols() {
    let mut rng = Rng(42);
    let bytes: Vec<u8> = (0..4099).map(|_| rng.next() as u8).collect();
    let syms = [
        Symbol {
            address: 0x1000,
            name: "a",
            size: 0,
            kind: SymbolKind::Function,
        },
        Symbol {
            address: 0x1006,
            name: "misaligned",
            size: 4,
            kind: SymbolKind::NoType,
        },
        Symbol {
            address: 0x9999_0000,
            name: "outside",
            size: 4,
            kind: SymbolKind::Function,
        },
        Symbol {
            address: 0,
            name: "before",
            size: 4,
            kind: SymbolKind::Object,
        },
    ];
    let sec = Section {
        file_name: "x",
        section_name: ".text",
        bytes: &bytes,
        address: 0x1000,
        symbols: &syms,
        file: None,
    };
    let mut out = String::new();
    write_section(Target::Gfx90a, &sec, &mut out);
    assert!(out.contains("<a>:"));
}
