//! decode → format → def/use → encode over arbitrary bytes, for every target:
//! no panic, and whenever decoding succeeds, the encoding is the input bytes and
//! (for valid instructions) decoding them again gives the same instruction and text.
//! The objdump-style listing (which memoises lines by their words) prints every
//! instruction exactly as formatting it alone does, cold or warm.
#![no_main]

use inlay_isa::encode::encode;
use inlay_isa::format::to_string;
use inlay_isa::listing::{write_section, Section};
use inlay_isa::{info, Decoder, Instruction, Target};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for target in [Target::Gfx908, Target::Gfx90a, Target::Gfx942] {
        let decoder = Decoder::new(target);
        let mut inst = Instruction::default();
        let mut at = 0;
        while at < data.len() {
            let Ok(n) = decoder.decode_into(&data[at..], &mut inst) else { break };
            assert!(n == inst.len() && n > 0 && n <= 8, "length {n}");
            let text = to_string(&inst);
            let _ = info(&inst).used_registers().len();
            let bytes = encode(&inst);
            assert_eq!(bytes, &data[at..at + n], "encode(decode(x)) != x for {text}");
            // An invalid word stands alone only once its encoding's full width is known
            // (objdump prints it as `.long` and steps 4 bytes); valid ones re-decode alone.
            if inst.is_valid() {
                let again = decoder.decode(&bytes).expect("re-decode");
                assert_eq!(again, inst);
                assert_eq!(to_string(&again), text);
            }
            at += n;
        }
        let sec = Section {
            file_name: "f",
            section_name: ".text",
            bytes: data,
            address: 0x1000,
            symbols: &[],
            file: None,
        };
        let mut first = String::new();
        write_section(target, &sec, &mut first);
        let mut second = String::new();
        write_section(target, &sec, &mut second);
        assert_eq!(first, second, "listing changes once the memo is warm");
        for line in first.lines() {
            let Some((text, comment)) = line.split_once("// ") else { continue };
            let addr = u64::from_str_radix(&comment[..12], 16).expect("address");
            let at = (addr - 0x1000) as usize;
            let inst = decoder.decode(&data[at..]).expect("listed instruction decodes");
            assert_eq!(text.trim_start_matches('\t').trim_end(), to_string(&inst), "at {at}");
        }
    }
});
