//! Compare inlay's listing with llvm-objdump-19 -d on many code objects.
//!
//!     cargo run --release -p inlay-isa --example objdump_compare -- FILE...
//!
//! Prints per-file mismatch counts, the most common mismatching mnemonics and
//! a few examples, and the time each side took. With BY_ADDRESS=1 set, lines
//! are paired by address (for listings that lose step, e.g. random words).
#[path = "../tests/isa/support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    let (mut t_ours, mut t_llvm) = (Duration::ZERO, Duration::ZERO);
    let (mut lines, mut bad) = (0usize, 0usize);
    let mut by_mn: HashMap<String, (usize, String, String)> = HashMap::new();
    for (k, f) in files.iter().enumerate() {
        let p = Path::new(f);
        let data = std::fs::read(p).expect("read");
        let t0 = Instant::now();
        let theirs = support::objdump(p).unwrap_or_default();
        t_llvm += t0.elapsed();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let t1 = Instant::now();
        let Some(ours) = support::inlay_listing(&data, name) else {
            eprintln!("{f}: not a supported code object");
            continue;
        };
        t_ours += t1.elapsed();
        let (n, ex) = if std::env::var("BY_ADDRESS").is_ok() {
            let d = support::diff_by_address(&ours, &theirs);
            (
                d.len(),
                d.into_iter().map(|(a, x, y)| (a as usize, x, y)).collect(),
            )
        } else {
            support::diff_lines(&ours, &theirs, usize::MAX)
        };
        lines += theirs.lines().count();
        bad += n;
        for (_, a, b) in ex {
            let mn = b
                .trim_start()
                .split([' ', '\t'])
                .next()
                .unwrap_or("")
                .to_string();
            let e = by_mn.entry(mn).or_insert((0, a, b));
            e.0 += 1;
        }
        eprintln!("[{}/{}] {f}: {n} mismatching lines", k + 1, files.len());
    }
    let mut v: Vec<_> = by_mn.into_iter().collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.1 .0));
    for (mn, (n, a, b)) in v.iter().take(40) {
        println!("{n:8} {mn}\n   ours:   {a}\n   llvm:   {b}");
    }
    println!("total: {bad} mismatching lines of {lines}");
    println!(
        "time: inlay {:.3}s, llvm-objdump-19 {:.3}s, ratio {:.1}x",
        t_ours.as_secs_f64(),
        t_llvm.as_secs_f64(),
        t_llvm.as_secs_f64() / t_ours.as_secs_f64().max(1e-9)
    );
}
