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
//! read and the hook called analysed once, and that time is reported and
//! added to each row's total. `--hook NAME` calls that hook of the module
//! instead (with `(1)` for `count_instr`, `(address)` for
//! `trace_address`, like the example tools' hooks). Calls are made as
//! calls unless `--inline` (inlining forced: an error where it cannot be)
//! or `--auto` (the engine's choice) says otherwise. The times are the
//! best of 3 runs (`--runs N`: of N; more runs steady the figures on a
//! machine others load), after one instrumentation that
//! warms the process up (reported apart). Kernels are ranked by
//! instructions reached (the kernel and every device function it calls).
//!
//! Each phase is timed twice, best of the runs each: wall time and the thread's
//! CPU time (on a machine others load, the CPU time is the steadier
//! figure: it leaves out the time the thread waits for a core). With
//! `--digest`, each row also prints a hash of the rewritten code and its
//! relocations, to check that a change to the engine leaves the emitted
//! code as it was. With `--write DIR`, each instrumented code object is
//! written to DIR (to read it with llvm-objdump-19 or llvm-readelf-19).

// The allocator the runtime library and the CLI instrument on.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use inlay_codeobj::CodeObject;
use inlay_instrument::hooks::{Arg, HookCall, HookModule, Placement, Point};
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

/// Wall and thread CPU time of one phase (each the best of the runs).
#[derive(Clone, Copy, Default)]
struct Time {
    wall: Duration,
    cpu: Duration,
}

impl std::ops::Add for Time {
    type Output = Time;
    fn add(self, o: Time) -> Time {
        Time {
            wall: self.wall + o.wall,
            cpu: self.cpu + o.cpu,
        }
    }
}

struct Row {
    file: String,
    kernel: String,
    insts: usize,
    hooks: usize,
    analyse: Time,
    rewrite: Time,
    emit: Time,
    /// Instructions the hooks added (static count).
    added: usize,
    /// FNV-1a of the rewritten code and its relocations.
    digest: u64,
    error: Option<String>,
}

/// CPU time this thread has used.
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to write; the clock id
    // is a constant the kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Runs per measurement (`--runs`).
static RUNS: AtomicUsize = AtomicUsize::new(3);
/// Where `--write` puts the instrumented code objects.
static WRITE_TO: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

fn best<T>(mut f: impl FnMut() -> T) -> (Time, T) {
    best_of_each(|| (), |()| f())
}

/// [`best`], `f` given what `input` makes before each run (untimed).
fn best_of_each<I, T>(mut input: impl FnMut() -> I, mut f: impl FnMut(I) -> T) -> (Time, T) {
    let mut best = Time {
        wall: Duration::MAX,
        cpu: Duration::MAX,
    };
    let mut out = None;
    for _ in 0..RUNS.load(Ordering::Relaxed).max(1) {
        let x = input();
        let (t, c) = (Instant::now(), thread_cpu());
        let r = f(x);
        best.wall = best.wall.min(t.elapsed());
        best.cpu = best.cpu.min(thread_cpu().saturating_sub(c));
        out = Some(r);
    }
    (best, out.expect("ran"))
}

fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h = (*h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
}

fn digest(rw: &inlay_instrument::rewrite::Rewritten) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    fnv(&mut h, &rw.code);
    for r in &rw.relocations {
        fnv(&mut h, &r.offset.to_le_bytes());
        fnv(&mut h, rw.symbols[r.symbol as usize].as_bytes());
        fnv(&mut h, &[u8::from(r.high)]);
        fnv(&mut h, &r.addend.to_le_bytes());
    }
    h
}

/// Which compiled hook is called, and how.
struct Calls {
    hook: Option<String>,
    placement: Placement,
}

fn measure(
    file: &str,
    bytes: &[u8],
    kernel: &str,
    hooks: Hooks,
    module: Option<&HookModule>,
    choice: &Calls,
) -> Row {
    let mut row = Row {
        file: file.to_string(),
        kernel: kernel.to_string(),
        insts: 0,
        hooks: 0,
        analyse: Time::default(),
        rewrite: Time::default(),
        emit: Time::default(),
        added: 0,
        digest: 0,
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
            let (hook, value) = match hooks {
                Hooks::Memory => ("obs_value64", Arg::Address),
                _ => ("obs_value", Arg::Const32(0)),
            };
            let hook = choice.hook.as_deref().unwrap_or(hook);
            // (One name shared by every call, as a tool's insertions do.)
            let name: std::sync::Arc<str> = hook.into();
            let calls = sites
                .iter()
                .enumerate()
                .map(|(n, &i)| {
                    let args = match hook {
                        "count_instr" => vec![Arg::Const32(1)],
                        "trace_address" => vec![Arg::Address],
                        _ => vec![Arg::Const32(n as u32), exec.clone(), value.clone()],
                    };
                    HookCall {
                        point: Point::Before(i),
                        module: 0,
                        hook: name.clone(),
                        args,
                        once_per_wave: false,
                        placement: choice.placement,
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
    row.digest = digest(&rw);
    // (Each run writes its own copy of the rewritten kernel, made untimed.)
    let (t, out) = best_of_each(|| rw.clone(), |rw| emit::code_object(&co, kernel, rw));
    row.emit = t;
    match (out, WRITE_TO.get()) {
        (Err(e), _) => row.error = Some(format!("emit: {e}")),
        (Ok(bytes), Some(dir)) => {
            let name = format!("{}.{kernel}.hsaco", file.rsplit('/').next().unwrap_or(""));
            if let Err(e) = std::fs::write(dir.join(&name), bytes) {
                row.error = Some(format!("writing {name}: {e}"));
            }
        }
        (Ok(_), None) => {}
    }
    row
}

fn main() {
    let mut top = 10usize;
    let mut hooks = Hooks::Blocks;
    let mut files = Vec::new();
    let mut calls: Option<String> = None;
    let mut show_digest = false;
    let mut choice = Calls {
        hook: None,
        placement: Placement::Call,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--top" => top = args.next().and_then(|n| n.parse().ok()).unwrap_or(10),
            "--runs" => {
                let runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(3);
                RUNS.store(runs, Ordering::Relaxed);
            }
            "--every-instruction" => hooks = Hooks::Every,
            "--memory-trace" => hooks = Hooks::Memory,
            "--calls" => calls = args.next(),
            "--digest" => show_digest = true,
            "--write" => {
                let _ = WRITE_TO.set(args.next().unwrap_or_default().into());
            }
            "--hook" => choice.hook = args.next(),
            "--inline" => choice.placement = Placement::Inline,
            "--auto" => choice.placement = Placement::Auto,
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
            // The module read, and the hook the calls name analysed.
            let hook = choice.hook.as_deref().unwrap_or(match hooks {
                Hooks::Memory => "obs_value64",
                _ => "obs_value",
            });
            let (t, m) = best(|| {
                let m = HookModule::new(path, bytes.clone())?;
                m.hook(hook)?;
                Ok::<_, inlay_instrument::hooks::HookError>(m)
            });
            match m {
                Ok(m) => {
                    println!(
                        "hook module {path}: read and {hook} analysed in {:.2} ms wall, {:.2} ms CPU (best of {})",
                        t.wall.as_secs_f64() * 1e3,
                        t.cpu.as_secs_f64() * 1e3,
                        RUNS.load(Ordering::Relaxed)
                    );
                    (Some(m), t)
                }
                Err(e) => {
                    eprintln!("{e}");
                    std::process::exit(1);
                }
            }
        }
        None => (None, Time::default()),
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
        let cold = measure(f, &data[f], k, hooks, module.as_ref(), &choice);
        let total = cold.analyse + cold.rewrite + cold.emit;
        println!(
            "first instrumentation in this process (not in the rows): {} instructions, best of {} {:.2} ms wall, {:.2} ms CPU",
            cold.insts,
            RUNS.load(Ordering::Relaxed),
            total.wall.as_secs_f64() * 1e3,
            total.cpu.as_secs_f64() * 1e3
        );
    }
    let mut rows: Vec<Row> = candidates
        .iter()
        .take(top)
        .map(|(_, f, k)| measure(f, &data[f], k, hooks, module.as_ref(), &choice))
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.insts));
    println!(
        "times: wall / thread CPU, best of {} each; total includes the hook module's analysis",
        RUNS.load(Ordering::Relaxed)
    );
    println!(
        "{:>8} {:>7} {:>9} {:>17} {:>17} {:>15} {:>17} {:>15}  kernel",
        "insts", "hooks", "per hook", "analyse", "rewrite", "emit", "total", "per 10k"
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let pair = |t: Time| format!("{:.2}/{:.2}", ms(t.wall), ms(t.cpu));
    for r in &rows {
        let total = r.analyse + r.rewrite + r.emit + module_time;
        let per = |d: Duration| ms(d) * 10_000.0 / r.insts.max(1) as f64;
        let name: String = r.kernel.chars().take(60).collect();
        let digest = if show_digest {
            format!(" digest {:016x}", r.digest)
        } else {
            String::new()
        };
        match &r.error {
            None => println!(
                "{:>8} {:>7} {:>9.1} {:>17} {:>17} {:>15} {:>17} {:>15}  {name} ({}){digest}",
                r.insts,
                r.hooks,
                r.added as f64 / r.hooks.max(1) as f64,
                pair(r.analyse),
                pair(r.rewrite),
                pair(r.emit),
                pair(total),
                format!("{:.2}/{:.2}", per(total.wall), per(total.cpu)),
                r.file.rsplit('/').next().unwrap_or(""),
            ),
            Some(e) => println!("{:>8} {name}: {e}", r.insts),
        }
    }
}
