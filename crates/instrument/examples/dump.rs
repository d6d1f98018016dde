//! Prints a lifted kernel: blocks, edges, calls, and liveness before every
//! instruction (`A:` needed in enabled lanes, `I:` needed only in disabled lanes).
//!
//!     cargo run -p inlay-instrument --example dump -- FILE KERNEL

use inlay_codeobj::CodeObject;
use inlay_isa::format::to_string;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: dump FILE KERNEL");
        std::process::exit(2);
    }
    let bytes = std::fs::read(&args[1]).unwrap_or_else(|e| {
        eprintln!("{}: {e}", args[1]);
        std::process::exit(1)
    });
    let co = CodeObject::parse(&bytes).unwrap_or_else(|e| {
        eprintln!("{}: {e}", args[1]);
        std::process::exit(1)
    });
    let a = inlay_instrument::analyse(&co, &args[2]).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let p = &a.program;
    println!("{:?}", a.resources);
    for (fi, f) in p.functions.iter().enumerate() {
        println!(
            "function {fi} {:?} at {:#x} ({:?})",
            f.name, f.entry, f.kind
        );
        for b in f.blocks.clone() {
            let bl = &p.blocks[b];
            println!(
                "  block {b}: exit {:?} succs {:?} preds {:?}",
                bl.exit, bl.succs, bl.preds
            );
            for i in bl.insts.clone() {
                let l = a.live_before(i);
                let ina = l.inactive.difference(&l.active);
                println!("    A:{:?}", l.active);
                if !ina.is_empty() {
                    println!("    I:{:?}", ina);
                }
                println!("  {:#8x}: {}", p.insts[i].addr, to_string(&p.insts[i].inst));
            }
        }
    }
    for c in &p.calls {
        println!(
            "call at {:#x}: {:?}{}",
            p.insts[c.inst].addr,
            c.callee,
            if c.tail { " (tail)" } else { "" }
        );
    }
}
