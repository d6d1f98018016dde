//! The structures of include/inlay/tool.h as a C compiler lays them out
//! must be the ones crates/tools/src/capi.rs reads and writes: a C program
//! compiled with gcc against the header prints every field's offset and
//! every structure's size, and they must equal Rust's.

use std::mem::{offset_of, size_of};
use std::path::Path;
use std::process::Command;

use inlay_tools::capi::{CAddressOperand, CBlock, CFunction, CInstr, CLaunch, CLaunchEnd, CReg};
use inlay_tools::Class;

/// (C expression, Rust value) for every field and size.
fn layout() -> Vec<(&'static str, usize)> {
    macro_rules! fields {
        ($c:literal, $r:ty, [$($f:ident),*]) => {
            vec![
                (concat!("sizeof(", $c, ")"), size_of::<$r>()),
                $((concat!("offsetof(", $c, ", ", stringify!($f), ")"), offset_of!($r, $f)),)*
            ]
        };
    }
    [
        fields!("inlay_reg_t", CReg, [file, first, count, access]),
        fields!(
            "inlay_address_operand_t",
            CAddressOperand,
            [space, vector_base, scalar_base, scalar_offset, offset]
        ),
        fields!(
            "inlay_instr_t",
            CInstr,
            [
                index,
                function,
                block,
                size,
                address,
                opcode,
                mnemonic,
                text,
                flags,
                num_regs,
                regs,
                has_address_operand,
                address_operand
            ]
        ),
        fields!(
            "inlay_function_t",
            CFunction,
            [
                name,
                is_kernel,
                entry,
                first_block,
                num_blocks,
                first_instr,
                num_instrs
            ]
        ),
        fields!(
            "inlay_block_t",
            CBlock,
            [
                function,
                first_instr,
                num_instrs,
                ends_wave,
                returns,
                num_succs,
                succs
            ]
        ),
        fields!(
            "inlay_launch_t",
            CLaunch,
            [
                index,
                kernel,
                kernel_demangled,
                kernel_object,
                dimensions,
                grid,
                workgroup,
                kernarg,
                kernarg_size,
                kernarg_address
            ]
        ),
        fields!(
            "inlay_launch_end_t",
            CLaunchEnd,
            [instrumented, error, globals]
        ),
        constants(),
    ]
    .concat()
}

/// The header's flag values, which the runtime fills in.
fn constants() -> Vec<(&'static str, usize)> {
    let flags = [
        ("INLAY_INSTR_SCALAR", Class::SCALAR),
        ("INLAY_INSTR_VECTOR", Class::VECTOR),
        ("INLAY_INSTR_MEMORY", Class::MEMORY),
        ("INLAY_INSTR_LOAD", Class::LOAD),
        ("INLAY_INSTR_STORE", Class::STORE),
        ("INLAY_INSTR_ATOMIC", Class::ATOMIC),
        ("INLAY_INSTR_BRANCH", Class::BRANCH),
        ("INLAY_INSTR_CALL", Class::CALL),
        ("INLAY_INSTR_ENDS_WAVE", Class::ENDS_WAVE),
        ("INLAY_INSTR_LANE_ACCESS", Class::LANE_ACCESS),
        ("INLAY_INSTR_LDS", Class::LDS),
        ("INLAY_INSTR_HAS_ADDRESS", Class::HAS_ADDRESS),
    ];
    flags.iter().map(|(n, c)| (*n, c.0 as usize)).collect()
}

#[test]
fn tool_h_structures_match_the_runtime() {
    if Command::new("gcc").arg("--version").output().is_err() {
        if std::env::var_os("INLAY_REQUIRE_ORACLES").is_some_and(|v| v == "1") {
            panic!("gcc is required (INLAY_REQUIRE_ORACLES=1)");
        }
        eprintln!("skipping: gcc not installed");
        return;
    }
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include");
    let dir = std::env::temp_dir().join(format!("inlay-c-abi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let rows = layout();
    let mut src = String::from(
        "#include <inlay/tool.h>\n#include <stddef.h>\n#include <stdio.h>\nint main(void) {\n",
    );
    for (expr, _) in &rows {
        src.push_str(&format!("  printf(\"%zu\\n\", (size_t){expr});\n"));
    }
    src.push_str("  return 0;\n}\n");
    let c = dir.join("layout.c");
    let exe = dir.join("layout");
    std::fs::write(&c, src).expect("write layout.c");
    let out = Command::new("gcc")
        .args(["-std=c11", "-Wall", "-Werror", "-I"])
        .arg(&include)
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("gcc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = Command::new(&exe).output().expect("run layout");
    let _ = std::fs::remove_dir_all(&dir);
    let values: Vec<usize> = String::from_utf8_lossy(&printed.stdout)
        .lines()
        .map(|l| l.parse().expect("a number"))
        .collect();
    assert_eq!(values.len(), rows.len());
    for ((expr, rust), c) in rows.iter().zip(values) {
        assert_eq!(*rust, c, "{expr}: Rust {rust}, C {c}");
    }
}
