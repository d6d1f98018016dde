//! Which mnemonics of a set of code objects the virtual GPU cannot run: the
//! instructions its predecoder maps to `Op::Unimplemented`, by mnemonic,
//! most frequent (statically) first.
//!
//! ```text
//! cargo run --release -p inlay-vgpu --example coverage [-- DIR_OR_FILES...]
//! ```
//!
//! Without arguments it reads `/tmp/co90a`, where `inlay extract` leaves the
//! gfx90a code objects of Debian's librocsparse0 (nothing from that package
//! is committed here). Each code object is loaded onto a device, which
//! decodes and predecodes every instruction of its code.

use std::collections::BTreeMap;
use std::path::PathBuf;

use inlay_vgpu::inst::Op;
use inlay_vgpu::Device;

fn inputs() -> Vec<PathBuf> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let roots = if args.is_empty() {
        vec!["/tmp/co90a".to_string()]
    } else {
        args
    };
    let mut files = Vec::new();
    for r in roots {
        let p = PathBuf::from(&r);
        match std::fs::read_dir(&p) {
            Ok(dir) => {
                let mut v: Vec<PathBuf> = dir.filter_map(|e| Some(e.ok()?.path())).collect();
                v.sort();
                files.extend(v);
            }
            Err(_) => files.push(p),
        }
    }
    files
}

fn main() {
    let dev = Device::new();
    // mnemonic -> (instructions using it, code objects using it)
    let mut all: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut missing: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let (mut objects, mut failed, mut insts) = (0u64, 0u64, 0u64);
    for f in inputs() {
        let Ok(bytes) = std::fs::read(&f) else {
            eprintln!("{}: cannot read", f.display());
            failed += 1;
            continue;
        };
        let program = match dev.load(&bytes) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("{}: {e}", f.display());
                failed += 1;
                continue;
            }
        };
        objects += 1;
        let mut seen_all: BTreeMap<String, ()> = BTreeMap::new();
        let mut seen_missing: BTreeMap<String, ()> = BTreeMap::new();
        for (p, d) in program.insts.iter().zip(&program.decoded) {
            let name = d
                .opcode()
                .map_or_else(|| "<not decoded>".to_string(), |o| o.name().to_string());
            insts += 1;
            let e = all.entry(name.clone()).or_default();
            e.0 += 1;
            if seen_all.insert(name.clone(), ()).is_none() {
                e.1 += 1;
            }
            if p.op == Op::Unimplemented {
                let e = missing.entry(name.clone()).or_default();
                e.0 += 1;
                if seen_missing.insert(name, ()).is_none() {
                    e.1 += 1;
                }
            }
        }
        let _ = dev.unload(program);
    }
    let mut rows: Vec<(&String, &(u64, u64))> = missing.iter().collect();
    rows.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    println!(
        "{:<36} {:>12} {:>14}",
        "mnemonic", "instructions", "code objects"
    );
    for (name, (n, objs)) in &rows {
        println!("{name:<36} {n:>12} {objs:>14}");
    }
    let missing_insts: u64 = missing.values().map(|v| v.0).sum();
    println!();
    println!(
        "{objects} code objects ({failed} not loaded), {insts} instructions, {} mnemonics; \
         {} mnemonics ({missing_insts} instructions, {:.2} %) unimplemented",
        all.len(),
        missing.len(),
        100.0 * missing_insts as f64 / insts.max(1) as f64
    );
}
