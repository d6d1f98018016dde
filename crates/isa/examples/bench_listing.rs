//! Benchmark: inlay's listing vs `llvm-objdump-19 -d` on the same files.
//!
//!     cargo run --release -p inlay-isa --example bench_listing -- [--no-reference] FILE...
//!
//! inlay: best of 3 runs of decode + format + listing of every executable
//! section into one reused buffer (ELF parsing excluded, done once), on one
//! thread. llvm-objdump: one run of the process, output to a pipe (skipped
//! with `--no-reference`). Prints both and the ratio.
#[path = "../tests/isa/support/mod.rs"]
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use inlay_isa::listing::write_section_bytes;

fn main() {
    let mut files: Vec<String> = std::env::args().skip(1).collect();
    let reference = !files.iter().any(|f| f == "--no-reference");
    files.retain(|f| f != "--no-reference");
    let mut out = Vec::new();
    let (mut ours, mut theirs, mut bytes, mut lines) =
        (Duration::ZERO, Duration::ZERO, 0usize, 0usize);
    for f in &files {
        let data = std::fs::read(f).expect("read");
        let mut best = Duration::MAX;
        support::with_sections(&data, |target, sections| {
            for _ in 0..3 {
                out.clear();
                let t = Instant::now();
                for s in sections {
                    write_section_bytes(target, s, &mut out);
                }
                best = best.min(t.elapsed());
                std::hint::black_box(&out);
            }
            lines += sections.iter().map(|s| s.bytes.len() / 4).sum::<usize>();
        })
        .expect("code object");
        ours += best;
        bytes += data.len();
        if reference {
            let t = Instant::now();
            let _ = support::objdump(Path::new(f));
            theirs += t.elapsed();
        }
    }
    println!(
        "{} files, {:.1} MB, ~{} instruction words: inlay {:.3}s, llvm-objdump-19 {:.3}s, ratio {:.1}x",
        files.len(),
        bytes as f64 / 1e6,
        lines,
        ours.as_secs_f64(),
        theirs.as_secs_f64(),
        theirs.as_secs_f64() / ours.as_secs_f64().max(1e-9)
    );
}
