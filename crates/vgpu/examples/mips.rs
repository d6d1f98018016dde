//! Active MIPS of the virtual GPU: wave instructions per second of dispatch
//! wall time, on 1 thread and on 2, for vector_add, matmul and reduce_sum.
//!
//! `cargo run --release -p inlay-vgpu --example mips`

use inlay_vgpu::kernarg::Args;
use inlay_vgpu::{Device, Program, Stats};

fn fixture(name: &str) -> Vec<u8> {
    let p = format!(
        "{}/../../fixtures/gfx90a/v5/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn load(dev: &Device, name: &str) -> Program {
    dev.load(&fixture(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn buffer(dev: &Device, words: usize, f: impl Fn(usize) -> u32) -> u64 {
    let v: Vec<u32> = (0..words).map(f).collect();
    dev.upload_u32(&v).expect("upload")
}

fn vector_add(dev: &Device) -> (Stats, f64) {
    let p = load(dev, "vector_add");
    let n = 1 << 22;
    let a = buffer(dev, n, |i| (i as f32).to_bits());
    let b = buffer(dev, n, |i| (2.0 * i as f32).to_bits());
    let c = buffer(dev, n, |_| 0);
    let args = Args::new().ptr(a).ptr(b).ptr(c).u32(n as u32);
    timed(|| {
        dev.dispatch(
            &p,
            "vector_add",
            [n as u32, 1, 1],
            [256, 1, 1],
            args.as_bytes(),
        )
    })
}

fn matmul(dev: &Device) -> (Stats, f64) {
    let p = load(dev, "matmul");
    let s = 256u32;
    let n = (s * s) as usize;
    let a = buffer(dev, n, |i| ((i % 7) as f32).to_bits());
    let b = buffer(dev, n, |i| ((i % 5) as f32).to_bits());
    let c = buffer(dev, n, |_| 0);
    let args = Args::new().ptr(a).ptr(b).ptr(c).u32(s).u32(s).u32(s);
    timed(|| dev.dispatch(&p, "matmul_tiled", [s, s, 1], [16, 16, 1], args.as_bytes()))
}

fn reduce(dev: &Device) -> (Stats, f64) {
    let p = load(dev, "reduce_sum");
    let n = 1 << 22;
    let input = buffer(dev, n, |i| i as u32);
    let out = buffer(dev, n / 256, |_| 0);
    let args = Args::new().ptr(input).ptr(out).u32(n as u32);
    timed(|| {
        dev.dispatch(
            &p,
            "_Z10reduce_sumIjEvPKT_PS0_j",
            [n as u32, 1, 1],
            [256, 1, 1],
            args.as_bytes(),
        )
    })
}

/// CPU time of this process (all threads) in seconds, from /proc/self/stat
/// (user + system ticks at 100 Hz); 0 where that file does not exist. On a
/// shared machine wall-time MIPS understate the emulator: this shows by how much.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the parenthesised command name; utime and stime are 14 and 15.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

/// Runs a dispatch; returns its stats and the process CPU seconds it took.
fn timed(run: impl FnOnce() -> Result<Stats, Box<inlay_vgpu::FaultReport>>) -> (Stats, f64) {
    let cpu0 = cpu_seconds();
    let s = run().unwrap_or_else(|f| panic!("{f}"));
    (s, cpu_seconds() - cpu0)
}

fn main() {
    println!(
        "{:<12} {:>7} {:>14} {:>10} {:>8} {:>8} {:>10}",
        "kernel", "threads", "wave insts", "wall ms", "MIPS", "cpu ms", "MIPS/cpu"
    );
    for threads in [1, 2] {
        let dev = Device::with_threads(threads);
        for (name, run) in [
            ("vector_add", vector_add as fn(&Device) -> (Stats, f64)),
            ("matmul", matmul),
            ("reduce_sum", reduce),
        ] {
            let (s, cpu) = run(&dev);
            println!(
                "{:<12} {:>7} {:>14} {:>10.1} {:>8.2} {:>8.0} {:>10.2}",
                name,
                threads,
                s.instructions,
                s.wall.as_secs_f64() * 1e3,
                s.mips(),
                cpu * 1e3,
                s.instructions as f64 / cpu.max(1e-3) / 1e6
            );
        }
    }
}
