//! The C tool API end to end: a test tool (tests/tools/dump_kernel.c,
//! compiled here with gcc against include/inlay/tool.h) prints every kernel
//! of the HSA program kernels.c as `inlay_instrument` shows it, and the
//! addresses, texts, functions and kinds of instruction must be those of
//! llvm-objdump-19's listing of the same code objects. It inserts nothing,
//! so the program runs its kernels as they are.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn dump_kernel_tool() -> Option<PathBuf> {
    if missing("gcc", Command::new("gcc").arg("--version").output().is_ok()) {
        return None;
    }
    let out_dir = std::env::temp_dir().join(format!("inlay-tool-api-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).expect("temp dir");
    let so = out_dir.join("dump_kernel.so");
    let out = Command::new("gcc")
        .args([
            "-std=gnu11",
            "-O1",
            "-Wall",
            "-Werror",
            "-shared",
            "-fPIC",
            "-I",
        ])
        .arg(root().join("include"))
        .arg(root().join("crates/cli/tests/tools/dump_kernel.c"))
        .arg("-o")
        .arg(&so)
        .output()
        .expect("gcc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(so)
}

/// llvm-objdump-19's listing of a code object: function labels (name →
/// address) and instructions (address → text).
struct Listing {
    functions: HashMap<String, u64>,
    text: HashMap<u64, String>,
}

fn listing(file: &Path) -> Listing {
    let out = Command::new("llvm-objdump-19")
        .arg("-d")
        .arg(file)
        .output()
        .expect("llvm-objdump-19");
    let mut l = Listing {
        functions: HashMap::new(),
        text: HashMap::new(),
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // Labels (`0000000000001900 <vector_add>:`) start the line;
        // instructions are indented.
        if let Some((addr, rest)) = line.split_once(" <").filter(|_| !line.starts_with('\t')) {
            if let (Ok(a), Some(name)) = (u64::from_str_radix(addr, 16), rest.strip_suffix(">:")) {
                l.functions.insert(name.to_string(), a);
            }
        } else if let Some((insn, comment)) = line.split_once("//") {
            let addr = comment.trim().split(':').next().unwrap_or_default();
            if let Ok(a) = u64::from_str_radix(addr, 16) {
                l.text.insert(a, insn.trim().to_string());
            }
        }
    }
    l
}

/// The registers an operand list names as LLVM prints them: (file, first,
/// count) for `v7`, `v[2:3]`, `s4`, `s[0:1]`, `a5`.
fn printed_registers(text: &str) -> Vec<(&'static str, u32, u32)> {
    let operands = text.split_once(' ').map(|x| x.1).unwrap_or_default();
    let mut regs = Vec::new();
    for tok in operands
        .split([',', ' '])
        .map(|t| t.trim_start_matches('-'))
    {
        for (prefix, file) in [("v", "v"), ("s", "s"), ("a", "a")] {
            let Some(rest) = tok.strip_prefix(prefix) else {
                continue;
            };
            if let Ok(n) = rest.parse::<u32>() {
                regs.push((file, n, 1));
            } else if let Some((a, b)) = rest
                .strip_prefix('[')
                .and_then(|r| r.strip_suffix(']'))
                .and_then(|r| r.split_once(':'))
            {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    regs.push((file, a, b - a + 1));
                }
            }
        }
    }
    regs
}

#[test]
fn a_tool_sees_each_kernel_as_llvm_lists_it() {
    let (Some(tool), Some(exe)) = (dump_kernel_tool(), hsa_program("kernels")) else {
        return;
    };
    if tool_missing("llvm-objdump-19") {
        return;
    }
    let fixtures = root().join("fixtures/gfx90a/v5");
    let out = inlay_run()
        .arg("--tool")
        .arg(&tool)
        .arg("--")
        .arg(&exe)
        .arg(&fixtures)
        .output()
        .expect("inlay run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("PASS"),
        "{stdout}\n{stderr}"
    );
    assert!(!stderr.contains("cannot instrument"), "{stderr}");
    // The C API's own checks (see dump_kernel.c).
    for bad in [
        "out of range: not NULL",
        "bad point accepted",
        "inline and call forced together accepted",
        "argument without a call accepted",
    ] {
        assert!(!stderr.contains(bad), "{bad}:\n{stderr}");
    }
    assert!(stderr.contains("error: no call inserted yet"), "{stderr}");

    fn file_of(kernel: &str) -> &str {
        match kernel {
            "_Z10reduce_sumIjEvPKT_PS0_j" => "reduce_sum",
            "histogram_total" => "histogram",
            "matmul_tiled" => "matmul",
            k => k,
        }
    }
    let mut listings: HashMap<&str, Listing> = HashMap::new();
    let mut kernels = 0;
    let mut instructions = 0;
    // Each kernel's block of lines: `kernel NAME: ...` then its functions,
    // blocks and instructions.
    let stderr_lines = format!("\n{stderr}");
    for chunk in stderr_lines.split("\nkernel ").skip(1) {
        let mut lines = chunk.lines();
        let head = lines.next().expect("kernel line");
        let name = head.split(':').next().expect("name");
        let file = file_of(name);
        let l = listings
            .entry(file)
            .or_insert_with(|| listing(&fixtures.join(format!("{file}.hsaco"))));
        kernels += 1;
        let body: Vec<&str> = lines.collect();
        // Function 0 is the kernel, at its symbol's address.
        let f0 = body
            .iter()
            .find(|l| l.starts_with("function 0 "))
            .expect("function 0");
        assert!(
            f0.starts_with(&format!(
                "function 0 {name} entry={:#x} kernel=1 ",
                l.functions[name]
            )),
            "{f0}"
        );
        let mut next_block_instr = 0u32;
        for b in body.iter().filter(|l| l.starts_with("block ")) {
            let range = b
                .split("instrs=")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .expect("instrs");
            let (first, n) = range.split_once('+').expect("first+n");
            assert_eq!(first.parse::<u32>().ok(), Some(next_block_instr), "{b}");
            next_block_instr += n.parse::<u32>().expect("count");
        }
        for i in body.iter().filter(|l| l.starts_with("instr ")) {
            let mut parts = i.splitn(3, '|');
            let head = parts.next().expect("head");
            let text = parts.next().expect("text");
            let regs = parts.next().expect("regs");
            let addr = head.split_whitespace().nth(2).expect("address");
            let addr = u64::from_str_radix(addr.trim_start_matches("0x"), 16).expect("hex");
            let flags = head
                .split("flags=0x")
                .nth(1)
                .and_then(|f| f.split(' ').next())
                .and_then(|f| u32::from_str_radix(f, 16).ok())
                .expect("flags");
            let want = l.text.get(&addr).unwrap_or_else(|| {
                panic!("{name}: no instruction at {addr:#x} in objdump's listing")
            });
            assert_eq!(text, want, "{name} at {addr:#x}");
            let mnemonic = want.split(' ').next().unwrap_or_default();
            // Kinds, from LLVM's mnemonic.
            let scalar = mnemonic.starts_with("s_");
            assert_eq!(flags & 1 != 0, scalar, "SCALAR: {i}");
            assert_eq!(flags & 2 != 0, !scalar, "VECTOR: {i}");
            if mnemonic.starts_with("s_endpgm") {
                assert!(flags & 0x100 != 0, "ENDS_WAVE: {i}");
            }
            if mnemonic.starts_with("s_branch") || mnemonic.starts_with("s_cbranch") {
                assert!(flags & 0x40 != 0, "BRANCH: {i}");
            }
            if mnemonic.starts_with("global_") || mnemonic.starts_with("flat_") {
                assert!(flags & 0x804 == 0x804, "MEMORY and HAS_ADDRESS: {i}");
                assert!(i.contains("|address="), "{i}");
            }
            if mnemonic.starts_with("ds_") {
                assert!(flags & 0x404 == 0x404, "MEMORY and LDS: {i}");
            }
            // Every register LLVM prints is among those reported.
            let reported: Vec<&str> = regs
                .trim_start_matches("regs=")
                .split('|')
                .next()
                .unwrap_or_default()
                .split(' ')
                .collect();
            for (file, first, count) in printed_registers(want) {
                let prefix = format!("{file}{first}+{count}:");
                assert!(
                    reported.iter().any(|r| r.starts_with(&prefix)),
                    "{prefix} of `{want}` not in {reported:?}"
                );
            }
            instructions += 1;
        }
        assert_eq!(
            next_block_instr as usize,
            body.iter().filter(|l| l.starts_with("instr ")).count(),
            "blocks cover every instruction once, in order"
        );
    }
    // kernels.c loads vector_add twice: every kernel is instrumented once
    // per kernel object.
    assert!(
        kernels >= 7 && instructions > 300,
        "{kernels} kernels, {instructions} instructions"
    );
}
