//! The listing memoises instruction lines per thread, keyed by the words. The
//! memo must never change a line: every line of a listing equals the
//! instruction formatted on its own, whatever came before it (same first word
//! with another literal or second dword, another target, invalid words).

use inlay_isa::format::to_string;
use inlay_isa::listing::{write_section, Section};
use inlay_isa::{Decoder, Target};

fn words(ws: &[u32]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The instruction text of each listing line (between the tab and the comment).
fn listed(target: Target, bytes: &[u8]) -> Vec<String> {
    let sec = Section {
        file_name: "t",
        section_name: ".text",
        bytes,
        address: 0x100,
        symbols: &[],
        file: None,
    };
    let mut out = String::new();
    write_section(target, &sec, &mut out);
    out.lines()
        .filter_map(|l| l.strip_prefix('\t'))
        .filter(|l| !l.starts_with('\t'))
        .map(|l| l.split("//").next().unwrap_or("").trim_end().to_string())
        .collect()
}

/// Each instruction formatted on its own.
fn expected(target: Target, bytes: &[u8]) -> Vec<String> {
    let d = Decoder::new(target);
    let mut v = Vec::new();
    let mut off = 0;
    while off < bytes.len() {
        let Ok(i) = d.decode(&bytes[off..]) else {
            break;
        };
        v.push(to_string(&i));
        off += i.len();
    }
    v
}

#[test]
fn memoised_lines_equal_fresh_formatting() {
    let code = words(&[
        // s_mov_b32 s0, literal: same first word, different literals
        0xBE8000FF, 0x12345678, 0xBE8000FF, 0x3F800000, 0xBE8000FF, 0x12345678,
        // v_add_f32_e64 v0, v1, v2 then the same first dword with other sources
        0xD1010000, 0x00020501, 0xD1010000, 0x00020701, 0xD1010000, 0x00020501,
        // v_mov_b32_e32 v1, v2 (4 bytes) followed by different words
        0x7E020302, 0xBF800000, 0x7E020302, 0x7E020302, 0xBF810000,
        // an undecodable word, twice
        0xFFFFFFFF, 0xFFFFFFFF,
    ]);
    for target in [
        Target::Gfx90a,
        Target::Gfx908,
        Target::Gfx942,
        Target::Gfx90a,
    ] {
        let want = expected(target, &code);
        assert_eq!(listed(target, &code), want, "{target:?}");
        // again, with the memo warm
        assert_eq!(listed(target, &code), want, "{target:?} (second time)");
        assert!(want.iter().any(|l| l == "s_mov_b32 s0, 0x12345678"));
        assert!(want.iter().any(|l| l == "s_mov_b32 s0, 1.0"));
    }
}

#[test]
fn second_dword_that_makes_an_instruction_invalid_is_not_memoised_as_valid() {
    // A VOP3 word whose second dword is fine, then the same first word with a
    // second dword holding bits LLVM rejects (when the table says so): whatever
    // the decoder decides, the listing agrees with it word for word.
    let d = Decoder::new(Target::Gfx90a);
    let first = 0xD1010000u32;
    let mut code = Vec::new();
    for w1 in [
        0x00020501u32,
        0xFFFFFFFF,
        0x00020501,
        0x80000000,
        0x00020501,
    ] {
        code.extend(words(&[first, w1]));
    }
    let want = expected(Target::Gfx90a, &code);
    assert_eq!(listed(Target::Gfx90a, &code), want);
    assert!(d.decode(&words(&[first, 0x00020501])).unwrap().is_valid());
}
