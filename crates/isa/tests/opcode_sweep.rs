//! Every opcode number of every encoding, with every other field zero, decodes
//! and prints exactly as `llvm-mc-19 --disassemble` does (or is invalid for both).
//! This catches opcodes the generator's probes missed: a missing table entry
//! would print `.long` where LLVM prints an instruction.

use std::io::Write;
use std::process::{Command, Stdio};

use inlay_isa::format::to_string;
use inlay_isa::{Decoder, Target};

/// (encoding, fixed bits, opcode shift, opcode count, 64-bit) — from the ISA's encoding
/// tables. VOP1/VOP2/VOPC take v0 as src0 (0x100), which every one of them accepts.
const SPACES: &[(&str, u32, u32, u32, bool)] = &[
    (
        "SOP2/SOPK (and the other scalar prefixes)",
        0x8000_0000,
        23,
        128,
        false,
    ),
    ("SOP1", 0xBE80_0000, 8, 256, false),
    ("SOPC", 0xBF00_0000, 16, 128, false),
    ("SOPP", 0xBF80_0000, 16, 128, false),
    ("SMEM", 0xC000_0000, 18, 256, true),
    ("VOP2", 0x0000_0100, 25, 63, false),
    ("VOP1", 0x7E00_0100, 9, 256, false),
    ("VOPC", 0x7C00_0100, 17, 256, false),
    ("VOP3", 0xD000_0000, 16, 896, true),
    ("VOP3P", 0xD380_0000, 16, 128, true),
    ("DS", 0xD800_0000, 17, 256, true),
    ("FLAT", 0xDC00_0000, 18, 128, true),
    ("SCRATCH", 0xDC00_4000, 18, 128, true),
    ("GLOBAL", 0xDC00_8000, 18, 128, true),
    ("MUBUF", 0xE000_0000, 18, 128, true),
    ("MTBUF", 0xE800_0000, 15, 16, true),
];

/// One byte stream: each probe word, 64-bit encodings with a zero second dword,
/// 32-bit ones followed by `s_nop 0` (which becomes the literal of an instruction that
/// takes one, or else is listed as itself — the same for both decoders).
fn stream() -> Vec<u8> {
    let mut v = Vec::new();
    for &(name, fixed, shift, count, wide) in SPACES {
        // VOP3P sources are v0, v0, v0 (MFMA accumulators have no SGPR tuples).
        let second: u32 = if name == "VOP3P" { 0x0402_0100 } else { 0 };
        for op in 0..count {
            v.extend_from_slice(&(fixed | op << shift).to_le_bytes());
            v.extend_from_slice(&if wide { second } else { 0xBF80_0000 }.to_le_bytes());
        }
    }
    v
}

/// Texts of the valid instructions llvm-mc decodes from the stream, in order.
fn llvm(target: &str, bytes: &[u8]) -> Option<Vec<String>> {
    let text: String = bytes
        .chunks(4)
        .map(|w| {
            w.iter()
                .map(|x| format!("{x:#04x}"))
                .collect::<Vec<_>>()
                .join(",")
                + "\n"
        })
        .collect();
    let mut child = Command::new("llvm-mc-19")
        .args([
            "--disassemble",
            "-triple=amdgcn-amd-amdhsa",
            &format!("-mcpu={target}"),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(text.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    Some(
        stdout
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with(".text"))
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn every_opcode_number_prints_like_llvm_mc() {
    if Command::new("llvm-mc-19")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var("INLAY_REQUIRE_ORACLES").as_deref() != Ok("1"),
            "llvm-mc-19 required"
        );
        eprintln!("skipping: llvm-mc-19 not installed");
        return;
    }
    let bytes = stream();
    for target in [Target::Gfx908, Target::Gfx90a, Target::Gfx942] {
        let theirs = llvm(target.name(), &bytes).expect("llvm-mc-19 runs");
        let decoder = Decoder::new(target);
        let mut ours = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let Ok(i) = decoder.decode(&bytes[at..]) else {
                break;
            };
            if i.is_valid() {
                ours.push(to_string(&i));
            }
            at += i.len();
        }
        let first = ours.iter().zip(&theirs).position(|(a, b)| a != b);
        if let Some(k) =
            first.or((ours.len() != theirs.len()).then(|| ours.len().min(theirs.len())))
        {
            let show = |v: &[String]| v[k.saturating_sub(2)..(k + 3).min(v.len())].join(" | ");
            panic!(
                "{}: listing differs at instruction {k}:\n  inlay:   {}\n  llvm-mc: {}",
                target.name(),
                show(&ours),
                show(&theirs)
            );
        }
    }
}
