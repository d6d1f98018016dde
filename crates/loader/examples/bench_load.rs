//! Benchmark (issue 5): load + freeze of one code object through
//! inlay-loader's Rust API, and symbol lookup by name, against copying the
//! file's bytes in the same run. Not a test; run by scripts/bench/hsa-loader.
//!
//!     cargo run --release -p inlay-loader --example bench_load -- FILE [ROUNDS]

use inlay_loader::{AgentRef, Executable, SymbolKind};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: bench_load FILE [ROUNDS] [TARGET]")?;
    let rounds: usize = args
        .next()
        .map_or(Ok(15), |s| s.parse())
        .map_err(|e| format!("{e}"))?;
    let target = args
        .next()
        .unwrap_or_else(|| "gfx90a:sramecc+:xnack-".into());
    let bytes = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let agent = AgentRef {
        key: 1,
        target: target
            .parse()
            .map_err(|e| format!("target {target}: {e:?}"))?,
    };
    let memory = Arc::new(inlay_vgpu::memory::Memory::new());

    // Reference: copy the bytes (into a fresh buffer each time, as a loader must).
    let mut copy = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        black_box(bytes.to_vec());
        copy.push(t.elapsed());
    }

    let (mut load, mut freeze, mut drop_t) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        let mut exe = Executable::new(memory.clone());
        exe.load(&agent, &bytes, Some(&path))
            .map_err(|e| e.to_string())?;
        let t1 = Instant::now();
        exe.freeze().map_err(|e| e.to_string())?;
        let t2 = Instant::now();
        drop(exe);
        drop_t.push(t2.elapsed());
        load.push(t1 - t);
        freeze.push(t2 - t1);
    }

    let mut exe = Executable::new(memory.clone());
    exe.load(&agent, &bytes, Some(&path))
        .map_err(|e| e.to_string())?;
    exe.freeze().map_err(|e| e.to_string())?;
    let names = |want_kernel: bool| -> Vec<String> {
        exe.symbols()
            .iter()
            .filter(|s| matches!(s.kind, SymbolKind::Kernel(_)) == want_kernel)
            .filter(|s| want_kernel || matches!(s.kind, SymbolKind::Function(_)))
            .map(|s| s.name.clone())
            .collect()
    };
    let (kernels, functions) = (names(true), names(false));
    let lookup = |list: &[String]| -> Option<f64> {
        if list.is_empty() {
            return None;
        }
        let reps = (2_000_000 / list.len()).max(1);
        let t = Instant::now();
        for _ in 0..reps {
            for n in list {
                black_box(exe.symbol(black_box(n), Some(1)));
            }
        }
        Some(t.elapsed().as_nanos() as f64 / (reps * list.len()) as f64)
    };
    let (kl, fl) = (lookup(&kernels), lookup(&functions));

    let (c, l, f) = (median(copy), median(load), median(freeze));
    println!(
        "file: {path} ({} bytes), {rounds} rounds, medians",
        bytes.len()
    );
    println!("rust copy of the bytes (reference): {:.3} ms", ms(c));
    println!("rust load:   {:.3} ms", ms(l));
    println!("rust freeze: {:.3} ms", ms(f));
    println!(
        "rust load+freeze: {:.3} ms ({:.1}x the copy)",
        ms(l + f),
        (l + f).as_secs_f64() / c.as_secs_f64()
    );
    println!("rust destroy: {:.3} ms", ms(median(drop_t)));
    match kl {
        Some(ns) => println!(
            "rust lookup: {ns:.1} ns per kernel name ({} kernels)",
            kernels.len()
        ),
        None => println!("rust lookup: no kernels"),
    }
    match fl {
        Some(ns) => println!(
            "rust lookup: {ns:.1} ns per device function name ({} functions)",
            functions.len()
        ),
        None => println!("rust lookup: no device functions in this code object"),
    }
    Ok(())
}
