//! Benchmark: decode-only throughput (instructions per second) over the code
//! sections of the given code objects, decoding into one reused `Instruction`.
//!
//!     cargo run --release -p inlay-isa --example bench_decode -- FILE...
//!
//! Each file's sections are decoded 5 times; the best time per file counts.
//! Afterwards every instruction is re-encoded and compared with its bytes.
#[path = "../tests/isa/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use inlay_isa::{Decoder, Instruction};

fn main() {
    let (mut total, mut instructions, mut bytes) = (Duration::ZERO, 0u64, 0usize);
    let (mut round_tripped, mut mismatches) = (0usize, 0usize);
    for f in std::env::args().skip(1) {
        let data = std::fs::read(&f).expect("read");
        support::with_sections(&data, |target, sections| {
            let decoder = Decoder::new(target);
            let mut best = Duration::MAX;
            let mut count = 0;
            for _ in 0..5 {
                let mut inst = Instruction::default();
                count = 0u64;
                let t = Instant::now();
                for s in sections {
                    let mut at = 0;
                    while let Ok(n) = decoder.decode_into(&s.bytes[at..], &mut inst) {
                        count += 1;
                        at += n;
                    }
                }
                best = best.min(t.elapsed());
            }
            total += best;
            instructions += count;
            bytes += sections.iter().map(|s| s.bytes.len()).sum::<usize>();
        });
        let (checked, bad) = support::round_trip(&data);
        round_tripped += checked;
        mismatches += bad.len();
        for b in bad.iter().take(3) {
            eprintln!("{f}: {b}");
        }
    }
    let secs = total.as_secs_f64();
    println!(
        "decoded {instructions} instructions ({:.1} MB of code) in {secs:.3} s: {:.1} million instructions/s, {:.0} MB/s",
        bytes as f64 / 1e6,
        instructions as f64 / secs / 1e6,
        bytes as f64 / secs / 1e6
    );
    println!(
        "encode(decode(x)) == x: {round_tripped} instructions checked, {mismatches} mismatches"
    );
}
