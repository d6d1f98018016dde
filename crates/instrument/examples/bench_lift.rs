//! Lift + liveness time per kernel against kernel size.
//!
//!     cargo run --release -p inlay-instrument --example bench_lift -- [--objdump] FILES...
//!
//! For every kernel of every code object: the time to lift it (decode by
//! recursive descent, blocks, calls) and to compute liveness at every
//! instruction, best of 5 runs, next to the time to merely decode the same
//! instructions once more with inlay-isa (the reference, measured in the
//! same run). Prints the largest kernels, failures by kind, and a summary.
//! With `--objdump`, also times `llvm-objdump-19 -d` over the same files
//! (LLVM disassembling the same code, output discarded) as an outside
//! reference.
//!
//! With `--digest`, nothing is timed: each kernel's `analyse` result (the
//! lifted program with every instruction's def/use, liveness before every
//! instruction, callee summaries, resources) is printed as a hash, to
//! compare two builds' results over a corpus.

// The allocator the runtime library and the CLI analyse on.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::{Duration, Instant};

use inlay_codeobj::CodeObject;
use inlay_isa::{Decoder, Instruction};

struct Row {
    file: String,
    kernel: String,
    insts: usize,
    functions: usize,
    blocks: usize,
    lift: Duration,
    live: Duration,
    decode: Duration,
    defuse: Duration,
}

fn best<T>(n: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..n {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed());
        out = Some(r);
    }
    (best, out.expect("n > 0"))
}

fn main() {
    let mut files: Vec<String> = std::env::args().skip(1).collect();
    let objdump = files.iter().any(|f| f == "--objdump");
    let digest = files.iter().any(|f| f == "--digest");
    files.retain(|f| f != "--objdump" && f != "--digest");
    if files.is_empty() {
        eprintln!("usage: bench_lift FILES...");
        std::process::exit(2);
    }
    let mut rows = Vec::new();
    let mut failures: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let wall = Instant::now();
    for (n, path) in files.iter().enumerate() {
        eprint!("\r[{}/{}] {path}        ", n + 1, files.len());
        let Ok(bytes) = std::fs::read(path) else {
            eprintln!("\ncannot read {path}");
            continue;
        };
        let co = match CodeObject::parse(&bytes) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("\n{path}: {e}");
                continue;
            }
        };
        if digest {
            for k in &co.kernels {
                let h = match inlay_instrument::analyse(&co, k.name) {
                    Ok(a) => format!("{:016x}", analysis_digest(&a)),
                    Err(e) => format!("error {e}"),
                };
                println!("{path} {} {h}", k.name);
            }
            continue;
        }
        for k in &co.kernels {
            let (lift, prog) = best(5, || inlay_instrument::lift(&co, k.name));
            let prog = match prog {
                Ok(p) => p,
                Err(e) => {
                    let kind = format!("{e:?}");
                    let kind = kind.split([' ', '(', '{']).next().unwrap_or("").to_string();
                    failures
                        .entry(kind)
                        .or_default()
                        .push(format!("{path} {}: {e}", k.name));
                    continue;
                }
            };
            let (live, _) = best(5, || inlay_instrument::liveness::analyse(&prog));
            // Reference: decode the same instructions again (no control flow).
            let dec = Decoder::new(prog.target);
            let words: Vec<Vec<u8>> = prog
                .insts
                .iter()
                .map(|i| inlay_isa::encode(&i.inst))
                .collect();
            let (decode, _) = best(5, || {
                let mut x = Instruction::default();
                let mut total = 0usize;
                for w in &words {
                    total += dec.decode_into(w, &mut x).unwrap_or(0);
                }
                total
            });
            // Part of liveness: inlay-isa's def/use of every instruction.
            let (defuse, _) = best(5, || {
                prog.insts
                    .iter()
                    .map(|i| inlay_isa::info(&i.inst).used_registers().len())
                    .sum::<usize>()
            });
            rows.push(Row {
                defuse,
                file: path.rsplit('/').next().unwrap_or(path).to_string(),
                kernel: k.name.to_string(),
                insts: prog.insts.len(),
                functions: prog.functions.len(),
                blocks: prog.blocks.len(),
                lift,
                live,
                decode,
            });
        }
    }
    eprintln!();
    if digest {
        return;
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.insts));
    println!(
        "{:>7} {:>5} {:>6} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9}  kernel",
        "insts",
        "funcs",
        "blocks",
        "lift ms",
        "live ms",
        "total ms",
        "ms/10k",
        "x decode",
        "defuse ms"
    );
    for r in rows.iter().take(25) {
        let total = r.lift + r.live;
        println!(
            "{:>7} {:>5} {:>6} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>8.1} {:>9.3}  {} {}",
            r.insts,
            r.functions,
            r.blocks,
            r.lift.as_secs_f64() * 1e3,
            r.live.as_secs_f64() * 1e3,
            total.as_secs_f64() * 1e3,
            total.as_secs_f64() * 1e3 * 10_000.0 / r.insts.max(1) as f64,
            total.as_secs_f64() / r.decode.as_secs_f64().max(1e-9),
            r.defuse.as_secs_f64() * 1e3,
            r.file,
            truncate(&r.kernel, 60)
        );
    }
    let n = rows.len();
    let insts: usize = rows.iter().map(|r| r.insts).sum();
    let lift: f64 = rows.iter().map(|r| r.lift.as_secs_f64()).sum();
    let live: f64 = rows.iter().map(|r| r.live.as_secs_f64()).sum();
    let decode: f64 = rows.iter().map(|r| r.decode.as_secs_f64()).sum();
    let big: Vec<&Row> = rows.iter().filter(|r| r.insts >= 10_000).collect();
    let worst_big = big
        .iter()
        .map(|r| (r.lift + r.live).as_secs_f64() * 1e3 * 10_000.0 / r.insts as f64)
        .fold(0.0f64, f64::max);
    println!(
        "\n{n} kernels lifted, {insts} instructions; lift {:.1} ms + liveness {:.1} ms = {:.1} ms \
         ({:.3} ms per 10k instructions; plain decode {:.1} ms, ratio {:.1}x)",
        lift * 1e3,
        live * 1e3,
        (lift + live) * 1e3,
        (lift + live) * 1e3 * 10_000.0 / insts.max(1) as f64,
        decode * 1e3,
        (lift + live) / decode.max(1e-9)
    );
    println!(
        "{} kernels with >= 10,000 instructions; worst {:.3} ms per 10k instructions (goal 5 ms)",
        big.len(),
        worst_big
    );
    let failed: usize = failures.values().map(|v| v.len()).sum();
    println!("{failed} kernels not lifted");
    for (kind, list) in &failures {
        println!("  {kind}: {}", list.len());
        for l in list.iter().take(3) {
            println!("    {l}");
        }
    }
    println!("wall {:.1} s", wall.elapsed().as_secs_f64());
    if objdump {
        let t = Instant::now();
        let mut ok = 0;
        for (n, path) in files.iter().enumerate() {
            eprint!(
                "\r[{}/{}] llvm-objdump-19 -d {path}        ",
                n + 1,
                files.len()
            );
            let st = std::process::Command::new("llvm-objdump-19")
                .args(["-d", path])
                .stdout(std::process::Stdio::null())
                .status();
            ok += st.map(|s| s.success() as usize).unwrap_or(0);
        }
        eprintln!();
        let ref_s = t.elapsed().as_secs_f64();
        println!(
            "reference: llvm-objdump-19 -d over the same {} files ({ok} ran): {:.2} s; \
             lift + liveness of every kernel: {:.2} s; ratio {:.1}x",
            files.len(),
            ref_s,
            lift + live,
            ref_s / (lift + live).max(1e-9)
        );
    }
}

/// A hash of everything `analyse` found, through public fields and queries
/// only (so that builds with different internals compare).
fn analysis_digest(a: &inlay_instrument::Analysis) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let p = &a.program;
    p.kernel.hash(&mut h);
    for (k, i) in p.insts.iter().enumerate() {
        (i.addr, inlay_isa::encode(&i.inst), i.block).hash(&mut h);
        format!("{:?}", p.used_registers(k)).hash(&mut h);
        let l = a.live_before(k);
        (l.active.words(), l.inactive.words()).hash(&mut h);
    }
    format!(
        "{:?} {:?} {:?} {:?} {:?} {:?}",
        p.blocks, p.functions, p.calls, a.liveness.summaries, a.liveness.contexts, a.resources
    )
    .hash(&mut h);
    h.finish()
}

fn truncate(s: &str, n: usize) -> String {
    if s.len() <= n {
        s.to_string()
    } else {
        let mut end = n;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    }
}
