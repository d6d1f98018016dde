//! Prints what the engine learns of each hook of a hook module: arguments
//! read, ABI inputs, registers clobbered, stack.
//!
//!     cargo run -p inlay-instrument --example hook_info -- HOOKS.hsaco

use std::sync::Arc;

use inlay_instrument::hooks::HookModule;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: hook_info HOOKS.hsaco");
        std::process::exit(2);
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let m = match HookModule::new(&path, Arc::from(bytes)) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    for h in m.hooks() {
        println!(
            "{} at {:#x}: {} argument dwords, inputs {:?}, stack {} bytes, \
             {} instructions in {} functions, uses s0..s{} v0..v{} a0..a{}\n  clobbers {:?}",
            h.name,
            h.address,
            h.arg_dwords,
            h.inputs,
            h.stack_bytes,
            h.program.insts.len(),
            h.program.functions.len(),
            h.sgprs,
            h.vgprs,
            h.agprs,
            h.clobbers
        );
    }
}
