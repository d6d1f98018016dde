//! Active MIPS of the virtual GPU (wave instructions executed per second of
//! dispatch wall time) on a suite of fixture kernels, on 1 thread and on all
//! threads, beside the same computations run natively in Rust on the host.
//!
//! Every dispatch's output is checked against the host result, so the suite
//! also shows the emulator computed what it was timed on.
//!
//! ```text
//! cargo run --release -p inlay-vgpu --example mips [-- [FILTER] [--threads 1,2] [--scale N]]
//! ```
//!
//! FILTER keeps the kernels whose name contains it; `--scale` multiplies the
//! problem sizes (default 1); each kernel runs once to warm up, then `--reps`
//! times (default 3), and the fastest run is reported.
//!
//! Columns: `mem%` is the share of executed instructions that access memory
//! (device, LDS or scratch; a kernel is "memory"-bound from 2 %), `MIPS` is
//! wave instructions per second of dispatch wall time, `MIPS/cpu` per second
//! of CPU time all threads spent in the dispatch (on a shared machine wall
//! time also counts what other processes took), `native ms` the best of
//! three runs of the same computation in plain Rust on one host thread, and
//! `slowdown` the dispatch wall time over the native time. The suite: ten
//! kernels from `fixtures/` and three ALU-bound ones from
//! `examples/mips_kernels/alu.cl`, built with clang-19 when it is installed.

use std::time::{Duration, Instant};

use inlay_vgpu::kernarg::Args;
use inlay_vgpu::{Device, Program, Stats};

/// A kernel is memory-bound when at least this share of the instructions
/// it executed access memory (device memory, LDS or scratch), ALU-bound
/// below it: the class comes from the native counts, not from a label.
const MEMORY_BOUND: f64 = 0.02;

/// CPU time of this process so far (all threads, in ns): the sum of the
/// run times the scheduler reports per thread in /proc, 0 where there is no
/// /proc. On a shared machine wall time also counts time other processes
/// took the cores; CPU time does not.
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// One measured kernel run.
struct Run {
    stats: Stats,
    /// CPU time the dispatch took, all threads together.
    cpu: Duration,
    /// Best of a few runs of the native host computation.
    native: Duration,
}

struct Case {
    name: &'static str,
    file: &'static str,
    run: fn(&Device, &Program, usize) -> Run,
}

/// Code object of a case: a committed fixture, or (`alu`) the example's own
/// ALU-bound kernels compiled with clang-19 (None if clang-19 is missing).
fn code_object(name: &str) -> Option<Vec<u8>> {
    if name != "alu" {
        return Some(fixture(name));
    }
    static ALU: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    ALU.get_or_init(|| {
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/mips_kernels/alu.cl");
        let out = std::env::temp_dir().join(format!("inlay-mips-alu-{}.hsaco", std::process::id()));
        let status = std::process::Command::new("clang-19")
            .args(["-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa"])
            .args([
                "-mcpu=gfx90a",
                "-mcode-object-version=5",
                "-O2",
                "-nogpulib",
                src,
                "-o",
            ])
            .arg(&out)
            .status();
        let bytes = match status {
            Ok(s) if s.success() => std::fs::read(&out).ok(),
            _ => None,
        };
        let _ = std::fs::remove_file(&out);
        if bytes.is_none() {
            eprintln!("clang-19 could not build {src}: skipping its kernels");
        }
        bytes
    })
    .clone()
}

fn fixture(name: &str) -> Vec<u8> {
    let p = format!(
        "{}/../../fixtures/gfx90a/v5/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn up32(dev: &Device, v: &[u32]) -> u64 {
    dev.upload_u32(v).expect("upload")
}

fn up64(dev: &Device, v: &[f64]) -> u64 {
    let words: Vec<u32> = v
        .iter()
        .flat_map(|x| {
            let b = x.to_bits();
            [b as u32, (b >> 32) as u32]
        })
        .collect();
    up32(dev, &words)
}

fn down32(dev: &Device, a: u64, n: usize) -> Vec<u32> {
    dev.download_u32(a, n).expect("download")
}

fn down64(dev: &Device, a: u64, n: usize) -> Vec<f64> {
    let w = down32(dev, a, 2 * n);
    (0..n)
        .map(|i| f64::from_bits(w[2 * i] as u64 | (w[2 * i + 1] as u64) << 32))
        .collect()
}

fn f32s(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn dispatch(
    dev: &Device,
    p: &Program,
    kernel: &str,
    grid: [u32; 3],
    wg: [u32; 3],
    args: &Args,
) -> Stats {
    let cpu0 = cpu_ns();
    let s = dev
        .dispatch(p, kernel, grid, wg, args.as_bytes())
        .unwrap_or_else(|f| panic!("{kernel}: {f}"));
    CPU.set(Duration::from_nanos(cpu_ns().saturating_sub(cpu0)));
    s
}

thread_local! {
    /// CPU time of the last dispatch this thread made.
    static CPU: std::cell::Cell<Duration> = const { std::cell::Cell::new(Duration::ZERO) };
}

/// Times `f` (best of three) and returns its last result.
fn native<T>(mut f: impl FnMut() -> T) -> (T, Duration) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..3 {
        let t = Instant::now();
        let r = std::hint::black_box(f());
        best = best.min(t.elapsed());
        out = Some(r);
    }
    (out.expect("ran three times"), best)
}

fn check<T: PartialEq + std::fmt::Debug>(name: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{name}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{name}: element {i}: emulated {:?}, host {:?}",
            got[i], want[i]
        );
    }
}

/// Small integer-valued floats: every sum and product below is exact, so
/// emulated and host results must agree bit for bit whatever the order or
/// contraction of the operations.
fn small(i: usize, m: usize) -> f32 {
    (i % m) as f32
}

fn vector_add(dev: &Device, p: &Program, scale: usize) -> Run {
    let n = (1 << 22) * scale;
    let a: Vec<f32> = (0..n).map(|i| small(i, 1000)).collect();
    let b: Vec<f32> = (0..n).map(|i| small(i * 7, 999)).collect();
    let (da, db, dc) = (
        up32(dev, &f32s(&a)),
        up32(dev, &f32s(&b)),
        up32(dev, &vec![0; n]),
    );
    let args = Args::new().ptr(da).ptr(db).ptr(dc).u32(n as u32);
    let stats = dispatch(dev, p, "vector_add", [n as u32, 1, 1], [256, 1, 1], &args);
    let (want, t) = native(|| a.iter().zip(&b).map(|(x, y)| x + y).collect::<Vec<f32>>());
    check("vector_add", &down32(dev, dc, n), &f32s(&want));
    Run {
        stats,
        cpu: CPU.get(),
        native: t,
    }
}

fn daxpy(dev: &Device, p: &Program, scale: usize) -> Run {
    let n = (1 << 21) * scale;
    let x: Vec<f64> = (0..n).map(|i| (i % 1000) as f64).collect();
    let y: Vec<f64> = (0..n).map(|i| (i % 77) as f64).collect();
    let a = 2.5;
    let (dx, dy) = (up64(dev, &x), up64(dev, &y));
    let args = Args::new().f64(a).ptr(dx).ptr(dy).u32(n as u32);
    let stats = dispatch(dev, p, "daxpy", [n as u32, 1, 1], [256, 1, 1], &args);
    let (want, t) = native(|| {
        let mut y = y.clone();
        y.iter_mut().zip(&x).for_each(|(y, x)| *y += a * x);
        y
    });
    check("daxpy", &down64(dev, dy, n), &want);
    Run {
        stats,
        cpu: CPU.get(),
        native: t,
    }
}

fn dnorm(dev: &Device, p: &Program, scale: usize) -> Run {
    let n = (1 << 20) * scale;
    // x² + y² exact; its square root is correctly rounded on both sides.
    let x: Vec<f64> = (0..n).map(|i| (i % 1000) as f64).collect();
    let y: Vec<f64> = (0..n).map(|i| (i % 333) as f64).collect();
    let (dx, dy, dout) = (up64(dev, &x), up64(dev, &y), up64(dev, &vec![0.0; n]));
    let args = Args::new().ptr(dx).ptr(dy).ptr(dout).u32(n as u32);
    let stats = dispatch(dev, p, "dnorm_fma", [n as u32, 1, 1], [256, 1, 1], &args);
    let (want, t) = native(|| {
        x.iter()
            .zip(&y)
            .map(|(x, y)| (x * x + y * y).sqrt())
            .collect::<Vec<f64>>()
    });
    check("dnorm_fma", &down64(dev, dout, n), &want);
    Run {
        stats,
        cpu: CPU.get(),
        native: t,
    }
}

fn matmul(dev: &Device, p: &Program, scale: usize) -> Run {
    let s = 256 * scale.isqrt().max(1);
    let n = s * s;
    let a: Vec<f32> = (0..n).map(|i| small(i, 7)).collect();
    let b: Vec<f32> = (0..n).map(|i| small(i, 5)).collect();
    let (da, db, dc) = (
        up32(dev, &f32s(&a)),
        up32(dev, &f32s(&b)),
        up32(dev, &vec![0; n]),
    );
    let su = s as u32;
    let args = Args::new().ptr(da).ptr(db).ptr(dc).u32(su).u32(su).u32(su);
    let stats = dispatch(dev, p, "matmul_tiled", [su, su, 1], [16, 16, 1], &args);
    let (want, t) = native(|| {
        let mut c = vec![0f32; n];
        for r in 0..s {
            for k in 0..s {
                let x = a[r * s + k];
                let (row, brow) = (&mut c[r * s..(r + 1) * s], &b[k * s..(k + 1) * s]);
                row.iter_mut().zip(brow).for_each(|(c, b)| *c += x * b);
            }
        }
        c
    });
    check("matmul", &down32(dev, dc, n), &f32s(&want));
    Run {
        stats,
        cpu: CPU.get(),
        native: t,
    }
}

fn reduce(dev: &Device, p: &Program, scale: usize) -> Run {
    let n = (1 << 22) * scale;
    let input: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let (di, dout) = (up32(dev, &input), up32(dev, &vec![0; n / 256]));
    let args = Args::new().ptr(di).ptr(dout).u32(n as u32);
    let k = "_Z10reduce_sumIjEvPKT_PS0_j";
    let stats = dispatch(dev, p, k, [n as u32, 1, 1], [256, 1, 1], &args);
    let (want, t) = native(|| {
        input
            .chunks(256)
            .map(|c| c.iter().fold(0u32, |s, &v| s.wrapping_add(v)))
            .collect::<Vec<u32>>()
    });
    check("reduce_sum", &down32(dev, dout, n / 256), &want);
    Run {
        stats,
        cpu: CPU.get(),
        native: t,
    }
}

fn histogram(dev: &Device, p: &Program, scale: usize) -> Run {
    let n = (1 << 20) * scale;
    let nbins = 256u32;
    let data: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 7)
        .collect();
    let (dd, db) = (up32(dev, &data), up32(dev, &vec![0; nbins as usize]));
    let args = Args::new().ptr(dd).u32(n as u32).ptr(db).u32(nbins);
    let stats = dispatch(dev, p, "histogram", [n as u32, 1, 1], [256, 1, 1], &args);
    let (want, t) = native(|| {
        let mut bins = vec![0u32; nbins as usize];
        data.iter().for_each(|&v| bins[(v % nbins) as usize] += 1);
        bins
    });
    check("histogram", &down32(dev, db, nbins as usize), &want);
    Run {
        stats,
        cpu: CPU.get(),
        native: t,
    }
}

fn scan(dev: &Device, p: &Program, scale: usize) -> Run {
    let n = (1 << 20) * scale;
    let input: Vec<u32> = (0..n as u32).map(|i| i % 1013).collect();
    let (di, dout) = (up32(dev, &input), up32(dev, &vec![0; n]));
    let args = Args::new().ptr(di).ptr(dout).u32(n as u32);
    let stats = dispatch(
        dev,
        p,
        "scan_inclusive",
        [n as u32, 1, 1],
        [256, 1, 1],
        &args,
    );
    let (want, t) = native(|| {
        let mut out = Vec::with_capacity(n);
        for c in input.chunks(256) {
            let mut s = 0u32;
            out.extend(c.iter().map(|&v| {
                s = s.wrapping_add(v);
                s
            }));
        }
        out
    });
    check("scan_inclusive", &down32(dev, dout, n), &want);
    Run {
        stats,
        cpu: CPU.get(),
        native: t,
    }
}

fn scratch(dev: &Device, p: &Program, scale: usize) -> Run {
    let n = (1 << 14) * scale;
    let seed: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(747_796_405)).collect();
    let idx: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_891_336_453))
        .collect();
    let (ds, di, dout) = (up32(dev, &seed), up32(dev, &idx), up32(dev, &vec![0; n]));
    let args = Args::new().ptr(ds).ptr(di).ptr(dout).u32(n as u32);
    let stats = dispatch(
        dev,
        p,
        "scratch_lookup",
        [n as u32, 1, 1],
        [256, 1, 1],
        &args,
    );
    let (want, t) = native(|| {
        seed.iter()
            .zip(&idx)
            .map(|(&s, &k)| {
                // The kernel's private table, built and read the same way.
                let mut table = [0u32; 256];
                for (j, e) in table.iter_mut().enumerate() {
                    *e = s.wrapping_mul(j as u32).wrapping_add(j as u32 ^ 0x55);
                }
                let table = std::hint::black_box(table);
                table[(k % 256) as usize].wrapping_add(table[(k.wrapping_mul(7) % 256) as usize])
            })
            .collect::<Vec<u32>>()
    });
    check("scratch_lookup", &down32(dev, dout, n), &want);
    Run {
        stats,
        cpu: CPU.get(),
        native: t,
    }
}

fn wave_sum(dev: &Device, p: &Program, scale: usize) -> Run {
    let n = (1 << 20) * scale;
    let input: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(40_503) % 100_000)
        .collect();
    let (di, dout) = (up32(dev, &input), up32(dev, &vec![0; n]));
    let args = Args::new().ptr(di).ptr(dout);
    let stats = dispatch(dev, p, "wave_sum_xor", [n as u32, 1, 1], [64, 1, 1], &args);
    let (want, t) = native(|| {
        let mut out = Vec::with_capacity(n);
        for c in input.chunks(64) {
            let s = c.iter().fold(0u32, |s, &v| s.wrapping_add(v));
            out.extend(std::iter::repeat_n(s, c.len()));
        }
        out
    });
    check("wave_sum_xor", &down32(dev, dout, n), &want);
    Run {
        stats,
        cpu: CPU.get(),
        native: t,
    }
}

fn call_direct(dev: &Device, p: &Program, scale: usize) -> Run {
    let n = (1 << 20) * scale;
    let x: Vec<f32> = (0..n).map(|i| small(i, 100)).collect();
    let (dx, dy) = (up32(dev, &f32s(&x)), up32(dev, &vec![0; n]));
    let args = Args::new().ptr(dx).ptr(dy).u32(n as u32);
    let stats = dispatch(dev, p, "call_direct", [n as u32, 1, 1], [256, 1, 1], &args);
    let (want, t) = native(|| {
        x.iter()
            .map(|&v| 3.0 * v * v + 2.0 * v + 1.0)
            .collect::<Vec<f32>>()
    });
    check("call_direct", &down32(dev, dy, n), &f32s(&want));
    Run {
        stats,
        cpu: CPU.get(),
        native: t,
    }
}

fn xorshift(dev: &Device, p: &Program, scale: usize) -> Run {
    let n = (1 << 16) * scale;
    let rounds = 1024u32;
    let seed: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) | 1)
        .collect();
    let (ds, dout) = (up32(dev, &seed), up32(dev, &vec![0; n]));
    let args = Args::new().ptr(ds).ptr(dout).u32(rounds);
    let stats = dispatch(
        dev,
        p,
        "xorshift_rounds",
        [n as u32, 1, 1],
        [256, 1, 1],
        &args,
    );
    let (want, t) = native(|| {
        seed.iter()
            .map(|&s| {
                let mut x = s;
                for r in 0..rounds {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    x = x.wrapping_mul(0x9E37_79B1).wrapping_add(r);
                }
                x
            })
            .collect::<Vec<u32>>()
    });
    check("xorshift_rounds", &down32(dev, dout, n), &want);
    Run {
        stats,
        cpu: CPU.get(),
        native: t,
    }
}

fn julia(dev: &Device, p: &Program, scale: usize) -> Run {
    let n = (1 << 16) * scale;
    let iters = 1024u32;
    let cre: Vec<f32> = (0..n).map(|i| -0.5 + (i % 1000) as f32 / 4000.0).collect();
    let (dc, dout) = (up32(dev, &f32s(&cre)), up32(dev, &vec![0; n]));
    let args = Args::new().ptr(dc).ptr(dout).u32(iters);
    let stats = dispatch(dev, p, "julia_f32", [n as u32, 1, 1], [256, 1, 1], &args);
    let (want, t) = native(|| {
        cre.iter()
            .map(|&cr| {
                let (ci, mut zr, mut zi) = (0.25f32, 0.0f32, 0.0f32);
                for _ in 0..iters {
                    let t = zr.mul_add(zr, -(zi * zi));
                    let u = zr * zi;
                    zr = t.mul_add(0.5, cr);
                    zi = u.mul_add(1.0, ci);
                }
                zr + zi
            })
            .collect::<Vec<f32>>()
    });
    check("julia_f32", &down32(dev, dout, n), &f32s(&want));
    Run {
        stats,
        cpu: CPU.get(),
        native: t,
    }
}

fn horner(dev: &Device, p: &Program, scale: usize) -> Run {
    let n = (1 << 16) * scale;
    let terms = 1024u32;
    let x: Vec<f64> = (0..n).map(|i| (i % 1000) as f64 / 1000.0 - 0.5).collect();
    let (dx, dout) = (up64(dev, &x), up64(dev, &vec![0.0; n]));
    let args = Args::new().ptr(dx).ptr(dout).u32(terms);
    let stats = dispatch(dev, p, "horner_f64", [n as u32, 1, 1], [256, 1, 1], &args);
    let (want, t) = native(|| {
        x.iter()
            .map(|&v| {
                let mut acc = 0.0f64;
                for k in 0..terms {
                    acc = acc.mul_add(v, (k & 7) as f64 * 0.125);
                }
                acc
            })
            .collect::<Vec<f64>>()
    });
    check("horner_f64", &down64(dev, dout, n), &want);
    Run {
        stats,
        cpu: CPU.get(),
        native: t,
    }
}

const CASES: &[Case] = &[
    Case {
        name: "xorshift",
        file: "alu",
        run: xorshift,
    },
    Case {
        name: "julia_f32",
        file: "alu",
        run: julia,
    },
    Case {
        name: "horner_f64",
        file: "alu",
        run: horner,
    },
    Case {
        name: "vector_add",
        file: "vector_add",
        run: vector_add,
    },
    Case {
        name: "daxpy",
        file: "daxpy",
        run: daxpy,
    },
    Case {
        name: "dnorm_fma",
        file: "daxpy",
        run: dnorm,
    },
    Case {
        name: "histogram",
        file: "histogram",
        run: histogram,
    },
    Case {
        name: "reduce_sum",
        file: "reduce_sum",
        run: reduce,
    },
    Case {
        name: "scan",
        file: "prefix_scan",
        run: scan,
    },
    Case {
        name: "matmul",
        file: "matmul",
        run: matmul,
    },
    Case {
        name: "scratch",
        file: "scratch",
        run: scratch,
    },
    Case {
        name: "wave_sum_xor",
        file: "wave_ops",
        run: wave_sum,
    },
    Case {
        name: "call_direct",
        file: "device_call",
        run: call_direct,
    },
];

/// Share of the executed instructions that access memory: global, flat,
/// buffer, scratch, scalar loads, atomics and LDS (`ds_*`), from the native
/// per-opcode counts.
fn memory_share(s: &Stats) -> f64 {
    let mem: u64 = s
        .per_opcode
        .iter()
        .filter(|(k, _)| {
            [
                "global_",
                "flat_",
                "buffer_",
                "scratch_",
                "s_load_",
                "s_buffer_load_",
                "ds_",
            ]
            .iter()
            .any(|p| k.starts_with(p))
        })
        .map(|(_, c)| c)
        .sum();
    mem as f64 / s.instructions.max(1) as f64
}

fn main() {
    let mut filter = String::new();
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut threads = if all > 1 { vec![1, all] } else { vec![1] };
    let mut scale = 1usize;
    let mut reps = 3usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => {
                threads = args
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .filter_map(|t| t.parse().ok())
                    .collect()
            }
            "--scale" => scale = args.next().and_then(|s| s.parse().ok()).unwrap_or(1),
            "--reps" => reps = args.next().and_then(|s| s.parse().ok()).unwrap_or(3).max(1),
            f => filter = f.to_string(),
        }
    }
    let cases: Vec<&Case> = CASES.iter().filter(|c| c.name.contains(&filter)).collect();
    println!(
        "{:<13} {:<6} {:>5} {:>3} {:>12} {:>9} {:>8} {:>9} {:>9} {:>10} {:>9}",
        "kernel",
        "class",
        "mem%",
        "thr",
        "wave insts",
        "wall ms",
        "MIPS",
        "cpu ms",
        "MIPS/cpu",
        "native ms",
        "slowdown"
    );
    // MIPS of each kernel by thread count, for the summary.
    // (wall MIPS, CPU seconds) of each kernel by thread count, for the summary.
    let mut table: Vec<(&Case, Vec<(f64, f64)>)> = cases.iter().map(|c| (*c, Vec::new())).collect();
    for &t in &threads {
        let dev = Device::with_threads(t);
        for (case, mips) in table.iter_mut() {
            let Some(code) = code_object(case.file) else {
                continue;
            };
            let p = dev
                .load(&code)
                .unwrap_or_else(|e| panic!("{}: {e}", case.file));
            // A first run warms the caches and the worker threads; of the
            // timed runs the fastest counts (the machine may be shared).
            (case.run)(&dev, &p, scale);
            let r = (0..reps)
                .map(|_| (case.run)(&dev, &p, scale))
                .min_by_key(|r| r.stats.wall)
                .expect("at least one run");
            let s = &r.stats;
            mips.push((s.mips(), r.cpu.as_secs_f64()));
            println!(
                "{:<13} {:<6} {:>4.0}% {:>3} {:>12} {:>9.1} {:>8.1} {:>9.1} {:>9.1} {:>10.2} {:>8.1}x",
                case.name,
                if memory_share(s) < MEMORY_BOUND {
                    "alu"
                } else {
                    "memory"
                },
                memory_share(s) * 100.0,
                t,
                s.instructions,
                s.wall.as_secs_f64() * 1e3,
                s.mips(),
                r.cpu.as_secs_f64() * 1e3,
                s.instructions as f64 / r.cpu.as_secs_f64().max(1e-9) / 1e6,
                r.native.as_secs_f64() * 1e3,
                s.wall.as_secs_f64() / r.native.as_secs_f64().max(1e-9)
            );
        }
    }
    if threads.len() > 1 {
        println!();
        println!(
            "{} threads over {}: wall-time speedup, and CPU time ratio (1.00: no work lost to threading)",
            threads[threads.len() - 1],
            threads[0]
        );
        for (case, runs) in &table {
            let (Some(first), Some(last)) = (runs.first(), runs.last()) else {
                continue;
            };
            println!(
                "  {:<13} {:>5.2}x   cpu {:>4.2}",
                case.name,
                last.0 / first.0.max(1e-9),
                last.1 / first.1.max(1e-9)
            );
        }
    }
}
