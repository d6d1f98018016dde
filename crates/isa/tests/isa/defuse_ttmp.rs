//! Trap temporaries in def/use: on gfx9 ttmp0..ttmp15 are scalar codes 108..123.
//! The encodings come from llvm-mc-19, the register numbers from the assembly text.

use std::io::Write;
use std::process::{Command, Stdio};

use inlay_isa::{info, Access, Decoder, RegFile, Register, Target};

fn assemble(line: &str) -> Option<Vec<u8>> {
    let mut child = Command::new("llvm-mc-19")
        .args([
            "-triple=amdgcn-amd-amdhsa",
            "-mcpu=gfx90a",
            "--show-encoding",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(line.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let enc = text.split("encoding: [").nth(1)?.split(']').next()?;
    enc.split(',')
        .map(|b| u8::from_str_radix(b.trim_start_matches("0x"), 16).ok())
        .collect()
}

#[test]
fn ttmp_operands_are_reported() {
    let present = Command::new("llvm-mc-19").arg("--version").output().is_ok();
    if !present {
        assert!(
            std::env::var("INLAY_REQUIRE_ORACLES").as_deref() != Ok("1"),
            "llvm-mc-19 required"
        );
        eprintln!("skipping: llvm-mc-19 not installed");
        return;
    }
    let cases = [
        (
            "s_mov_b32 ttmp0, s0",
            Register::new(RegFile::Ttmp, 0, 1),
            Access::Write,
        ),
        (
            "s_mov_b32 s1, ttmp5",
            Register::new(RegFile::Ttmp, 5, 1),
            Access::Read,
        ),
        (
            "s_mov_b64 ttmp[4:5], s[2:3]",
            Register::new(RegFile::Ttmp, 4, 2),
            Access::Write,
        ),
        (
            "s_mov_b32 ttmp15, s0",
            Register::new(RegFile::Ttmp, 15, 1),
            Access::Write,
        ),
    ];
    let decoder = Decoder::new(Target::Gfx90a);
    for (line, register, access) in cases {
        let bytes = assemble(line).unwrap_or_else(|| panic!("llvm-mc-19 assembles {line}"));
        let inst = decoder.decode(&bytes).expect("decodes");
        let used = info(&inst);
        assert!(
            used.used_registers()
                .iter()
                .any(|u| u.register == register && u.access == access),
            "{line}: expected {register:?} {access:?}, got {:?}",
            used.used_registers()
        );
    }
}
