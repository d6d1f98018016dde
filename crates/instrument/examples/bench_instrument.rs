//! Instrumentation time per kernel against kernel size: lift and analyse
//! (liveness), plan the counting hooks, rewrite, and write the instrumented
//! code object, for the largest kernels of the given code objects.
//!
//!     cargo run --release -p inlay-instrument --example bench_instrument -- [--top N] FILES...
//!
//! Hooks are counting hooks per basic block (the blocks the counting plan
//! measures) or, with `--every-instruction`, before every instruction; with
//! `--memory-trace`, the hooks record every lane's address before every
//! FLAT and GLOBAL instruction (what the `mem-trace` tool asks for). With
//! `--calls HOOKS.hsaco`, the hooks are calls to compiled hooks of that
//! module instead (`obs_value(n, exec, 0)` at every instruction,
//! `obs_value64(n, exec, address)` at every memory instruction: the test
//! module fixtures/gfx90a/v5/hooks_test.hsaco has both); the module is
//! analysed once, and that time is reported and added to each row's
//! total. The times are the best of 3 runs, after one instrumentation that
//! warms the process up (reported apart). Kernels are ranked by
//! instructions reached (the kernel and every device function it calls).

use std::time::{Duration, Instant};

use inlay_codeobj::CodeObject;
use inlay_instrument::hooks::{Arg, HookCall, HookModule, Point};
use inlay_instrument::rewrite::{has_address, rewrite, Hook, LaneValue, Plan, Trace};
use inlay_isa::{RegFile, Register};

/// Where the hooks go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hooks {
    Blocks,
    Every,
    Memory,
}
use inlay_instrument::{analyse, counting, emit};

struct Row {
    file: String,
    kernel: String,
    insts: usize,
    hooks: usize,
    analyse: Duration,
    rewrite: Duration,
    emit: Duration,
    /// Instructions the hooks added (static count).
    added: usize,
    error: Option<String>,
}

fn best<T>(mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..3 {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed());
        out = Some(r);
    }
    (best, out.expect("ran"))
}

fn measure(
    file: &str,
    bytes: &[u8],
    kernel: &str,
    hooks: Hooks,
    module: Option<&HookModule>,
) -> Row {
    let mut row = Row {
        file: file.to_string(),
        kernel: kernel.to_string(),
        insts: 0,
        hooks: 0,
        analyse: Duration::ZERO,
        rewrite: Duration::ZERO,
        emit: Duration::ZERO,
        added: 0,
        error: None,
    };
    let co = match CodeObject::parse(bytes) {
        Ok(c) => c,
        Err(e) => {
            row.error = Some(e.to_string());
            return row;
        }
    };
    let (t, an) = best(|| analyse(&co, kernel));
    row.analyse = t;
    let an = match an {
        Ok(a) => a,
        Err(e) => {
            row.error = Some(format!("lift: {e}"));
            return row;
        }
    };
    row.insts = an.program.insts.len();
    let Some(kd) = co.kernel(kernel).map(|k| k.descriptor) else {
        row.error = Some("no descriptor".into());
        return row;
    };
    let (t, rw) = best(|| {
        let prog = &an.program;
        let sites: Vec<usize> = match hooks {
            Hooks::Every => (0..prog.insts.len()).collect(),
            Hooks::Blocks => counting::plan(prog)
                .measured
                .iter()
                .map(|&b| prog.blocks[b].insts.start)
                .collect(),
            Hooks::Memory => (0..prog.insts.len())
                .filter(|&i| has_address(&prog.insts[i].inst))
                .collect(),
        };
        let trace = Trace {
            cursor: 0,
            records: 0x7d00_0000_0000,
            capacity: 1 << 30,
        };
        if let Some(m) = module {
            // Compiled hooks: the same sites, calls instead.
            let exec = Arg::Value(Register::new(RegFile::Exec, 0, 2));
            let calls = sites
                .iter()
                .enumerate()
                .map(|(n, &i)| {
                    let (hook, value) = match hooks {
                        Hooks::Memory => ("obs_value64", Arg::Address),
                        _ => ("obs_value", Arg::Const32(0)),
                    };
                    HookCall {
                        point: Point::Before(i),
                        module: 0,
                        hook: hook.into(),
                        args: vec![Arg::Const32(n as u32), exec.clone(), value],
                        once_per_wave: false,
                    }
                })
                .collect();
            let plan = Plan {
                calls,
                modules: vec![m.clone()],
                private_segment_size: Some(0),
                ..Plan::default()
            };
            return (sites.len(), rewrite(&an, 0x7e00_0000_0000, &kd, &plan));
        }
        let plan = Plan {
            counters: 0x7f00_0000_0000,
            dead_registers_only: false,
            all_branches_long: false,
            hooks: sites
                .iter()
                .enumerate()
                .map(|(n, &i)| {
                    let offset = 8 * n as u32;
                    let hook = match hooks {
                        Hooks::Memory => Hook::RecordLanes {
                            trace,
                            id: n as u32 + 1,
                            value: LaneValue::Address,
                        },
                        _ => Hook::Count { offset },
                    };
                    (i, hook)
                })
                .collect(),
            ..Plan::default()
        };
        (sites.len(), rewrite(&an, 0x7e00_0000_0000, &kd, &plan))
    });
    row.rewrite = t;
    row.hooks = rw.0;
    let rw = match rw.1 {
        Ok(r) => r,
        Err(e) => {
            row.error = Some(format!("rewrite: {e}"));
            return row;
        }
    };
    row.added = rw.added_by_hooks;
    let (t, out) = best(|| emit::code_object(&co, kernel, &rw));
    row.emit = t;
    if let Err(e) = out {
        row.error = Some(format!("emit: {e}"));
    }
    row
}

fn main() {
    let mut top = 10usize;
    let mut hooks = Hooks::Blocks;
    let mut files = Vec::new();
    let mut calls: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--top" => top = args.next().and_then(|n| n.parse().ok()).unwrap_or(10),
            "--every-instruction" => hooks = Hooks::Every,
            "--memory-trace" => hooks = Hooks::Memory,
            "--calls" => calls = args.next(),
            _ => files.push(a),
        }
    }
    // The hook module, analysed once (its time counts for every kernel).
    let (module, module_time) = match &calls {
        Some(path) => {
            let bytes: std::sync::Arc<[u8]> = match std::fs::read(path) {
                Ok(b) => b.into(),
                Err(e) => {
                    eprintln!("{path}: {e}");
                    std::process::exit(1);
                }
            };
            let (t, m) = best(|| HookModule::new(path, bytes.clone()));
            match m {
                Ok(m) => {
                    println!(
                        "hook module {path}: {} hooks analysed in {:.2} ms (best of 3)",
                        m.hooks().len(),
                        t.as_secs_f64() * 1e3
                    );
                    (Some(m), t)
                }
                Err(e) => {
                    eprintln!("{e}");
                    std::process::exit(1);
                }
            }
        }
        None => (None, Duration::ZERO),
    };
    // Rank kernels by code size first (cheap), then measure the largest.
    let mut candidates: Vec<(u64, String, String)> = Vec::new();
    let mut data = std::collections::HashMap::new();
    for f in &files {
        let Ok(bytes) = std::fs::read(f) else {
            eprintln!("{f}: cannot read");
            continue;
        };
        if let Ok(co) = CodeObject::parse(&bytes) {
            for k in &co.kernels {
                let size = co.symbols.get(k.name).map_or(0, |s| s.size);
                candidates.push((size, f.clone(), k.name.to_string()));
            }
        }
        data.insert(f.clone(), bytes);
    }
    candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
    // The process's first instrumentation is slower than the rest (heap
    // growth, first page faults, tables initialised on first use), whichever
    // kernel it is: it is reported apart, and the rows are measured after it.
    if let Some((_, f, k)) = candidates.first() {
        let cold = measure(f, &data[f], k, hooks, module.as_ref());
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "first instrumentation in this process (not in the rows): {} instructions, best of 3 {:.2} ms",
            cold.insts,
            ms(cold.analyse) + ms(cold.rewrite) + ms(cold.emit)
        );
    }
    let mut rows: Vec<Row> = candidates
        .iter()
        .take(top)
        .map(|(_, f, k)| measure(f, &data[f], k, hooks, module.as_ref()))
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.insts));
    println!(
        "{:>8} {:>7} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10}  kernel",
        "insts", "hooks", "per hook", "analyse", "rewrite", "emit", "total", "per 10k"
    );
    for r in &rows {
        let total = r.analyse + r.rewrite + r.emit + module_time;
        let per10k = total.as_secs_f64() * 1e3 * 10_000.0 / r.insts.max(1) as f64;
        let name: String = r.kernel.chars().take(60).collect();
        match &r.error {
            None => println!(
                "{:>8} {:>7} {:>9.1} {:>8.2}ms {:>8.2}ms {:>8.2}ms {:>8.2}ms {:>8.2}ms  {name} ({})",
                r.insts,
                r.hooks,
                r.added as f64 / r.hooks.max(1) as f64,
                r.analyse.as_secs_f64() * 1e3,
                r.rewrite.as_secs_f64() * 1e3,
                r.emit.as_secs_f64() * 1e3,
                total.as_secs_f64() * 1e3,
                per10k,
                r.file.rsplit('/').next().unwrap_or(""),
            ),
            Some(e) => println!("{:>8} {name}: {e}", r.insts),
        }
    }
}
