//! End-to-end check of liveness on the virtual GPU, independent of the
//! def/use tables: at every `s_waitcnt`/`s_nop` of a fixture kernel (4-byte
//! instructions with no register effect on inlay-vgpu, which completes
//! memory operations at once), the instruction is replaced by a 4-byte write
//! of a register the analysis reports free there; the kernel must produce
//! exactly the same output. Registers: every dead SGPR the descriptor
//! allows, every VGPR dead in all lanes and every VGPR dead only in the
//! enabled lanes (the clobber runs under the current EXEC), and SCC, VCC, M0
//! when they are dead. As a check that the harness can see a difference,
//! clobbering the registers reported live must change the output (or fault)
//! at least once per kernel.

use inlay_codeobj::CodeObject;
use inlay_instrument::analyse;
use inlay_isa::{encode, Builder, Encoding, Operand, Target};
use inlay_vgpu::kernarg::Args;
use inlay_vgpu::Device;

fn fixture(version: u32, name: &str) -> Vec<u8> {
    let p = format!(
        "{}/../../fixtures/gfx90a/v{version}/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Builds a launch's arguments on a device; returns them and the output
/// buffers (address, number of dwords).
type Setup = fn(&Device) -> (Args, Vec<(u64, usize)>);

/// One launch: the kernel's arguments and the buffers it writes.
struct Launch {
    kernel: &'static str,
    grid: [u32; 3],
    wg: [u32; 3],
    setup: Setup,
}

fn rng(seed: &mut u64) -> u32 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    (*seed >> 16) as u32
}

fn vector_add(dev: &Device) -> (Args, Vec<(u64, usize)>) {
    let mut s = 7;
    let n = 900usize;
    let a: Vec<u32> = (0..n)
        .map(|_| (rng(&mut s) % 1000) as f32)
        .map(f32::to_bits)
        .collect();
    let b: Vec<u32> = (0..n)
        .map(|_| (rng(&mut s) % 1000) as f32)
        .map(f32::to_bits)
        .collect();
    let (da, db) = (dev.upload_u32(&a).unwrap(), dev.upload_u32(&b).unwrap());
    let dc = dev.upload_u32(&vec![0; 1024]).unwrap();
    (
        Args::new().ptr(da).ptr(db).ptr(dc).u32(n as u32),
        vec![(dc, 1024)],
    )
}

fn reduce_sum(dev: &Device) -> (Args, Vec<(u64, usize)>) {
    let mut s = 11;
    let n = 5000usize - 37;
    let data: Vec<u32> = (0..n).map(|_| rng(&mut s) % 100_000).collect();
    let dd = dev.upload_u32(&data).unwrap();
    let out = dev.upload_u32(&[0; 20]).unwrap();
    (Args::new().ptr(dd).ptr(out).u32(n as u32), vec![(out, 20)])
}

fn histogram(dev: &Device) -> (Args, Vec<(u64, usize)>) {
    let mut s = 13;
    let n = 1000usize;
    let data: Vec<u32> = (0..n).map(|_| rng(&mut s)).collect();
    let dd = dev.upload_u32(&data).unwrap();
    let bins = dev.upload_u32(&[0; 61]).unwrap();
    (
        Args::new().ptr(dd).u32(n as u32).ptr(bins).u32(61),
        vec![(bins, 61)],
    )
}

/// Runs the (possibly patched) code object; the outputs, or None on a fault.
fn run(bytes: &[u8], l: &Launch) -> Option<Vec<Vec<u32>>> {
    let dev = Device::new();
    let p = dev.load(bytes).ok()?;
    let (args, outs) = (l.setup)(&dev);
    dev.dispatch(&p, l.kernel, l.grid, l.wg, args.as_bytes())
        .ok()?;
    Some(
        outs.iter()
            .map(|(a, n)| dev.download_u32(*a, *n).unwrap())
            .collect(),
    )
}

/// A 4-byte instruction that overwrites `what`.
fn clobber(b: &Builder, what: &str) -> Vec<u8> {
    let sgpr = |n: u16| Operand::Sgpr { first: n, count: 1 };
    let minus7 = Operand::Inline(199);
    let i = match what {
        "scc0" => b.build(Encoding::Sopc, "s_cmp_lg_u32", &[sgpr(0), sgpr(0)]),
        "scc1" => b.build(Encoding::Sopc, "s_cmp_eq_u32", &[sgpr(0), sgpr(0)]),
        "vcc" => b.build(
            Encoding::Sop1,
            "s_mov_b64",
            &[
                Operand::Special {
                    code: 106,
                    count: 2,
                },
                minus7,
            ],
        ),
        "m0" => b.build(
            Encoding::Sop1,
            "s_mov_b32",
            &[
                Operand::Special {
                    code: 124,
                    count: 1,
                },
                minus7,
            ],
        ),
        _ => {
            let n: u16 = what[1..].parse().unwrap();
            if what.starts_with('s') {
                b.build(Encoding::Sop1, "s_mov_b32", &[sgpr(n), minus7])
            } else {
                b.build(
                    Encoding::Vop1,
                    "v_mov_b32_e32",
                    &[Operand::Vgpr { first: n, count: 1 }, minus7],
                )
            }
        }
    };
    let bytes = encode(&i.unwrap_or_else(|e| panic!("build {what}: {e}")));
    assert_eq!(bytes.len(), 4, "{what}");
    bytes
}

fn check_kernel(version: u32, file: &str, l: &Launch) {
    let original = fixture(version, file);
    let co = CodeObject::parse(&original).unwrap();
    let a = analyse(&co, l.kernel).unwrap();
    let text = co.section(".text").unwrap();
    let (text_addr, text_off) = (text.addr, text.offset);
    let baseline = run(&original, l).expect("original runs");
    let b = Builder::new(Target::Gfx90a);
    let (mut safe, mut live_changed, mut live_tried) = (0, 0, 0);
    for (i, ins) in a.program.insts.iter().enumerate() {
        let m = ins.inst.mnemonic();
        if !(m == "s_waitcnt" || m == "s_nop") {
            continue;
        }
        let free = a.free_before(i);
        let live = a.live_before(i).any();
        let mut dead: Vec<String> = Vec::new();
        dead.extend(free.sgprs.iter().map(|s| format!("s{s}")));
        dead.extend(free.vgprs.iter().map(|v| format!("v{v}")));
        dead.extend(free.vgprs_active_lanes.iter().map(|v| format!("v{v}")));
        if !free.scc_live {
            dead.push("scc0".into());
            dead.push("scc1".into());
        }
        if !free.vcc_live {
            dead.push("vcc".into());
        }
        if !free.m0_live {
            dead.push("m0".into());
        }
        let mut live_regs: Vec<String> = Vec::new();
        live_regs.extend(
            (0..a.resources.sgprs_usable as u16)
                .filter(|s| live.has_sgpr(*s))
                .map(|s| format!("s{s}")),
        );
        live_regs.extend(
            (0..a.resources.vgprs_allocated as u16)
                .filter(|v| a.live_before(i).active.has_vgpr(*v))
                .map(|v| format!("v{v}")),
        );
        let off = (ins.addr - text_addr + text_off) as usize;
        let patched = |what: &str| {
            let mut bytes = original.clone();
            bytes[off..off + 4].copy_from_slice(&clobber(&b, what));
            bytes
        };
        for what in &dead {
            let got = run(&patched(what), l);
            assert_eq!(
                got.as_ref(),
                Some(&baseline),
                "{file} {}: writing {what} before {:#x} ({m}), which liveness calls dead, changed the result",
                l.kernel,
                ins.addr
            );
            safe += 1;
        }
        for what in &live_regs {
            live_tried += 1;
            if run(&patched(what), l).as_ref() != Some(&baseline) {
                live_changed += 1;
            }
        }
    }
    eprintln!(
        "{file} {}: {safe} clobbers of dead registers left the output unchanged; \
         {live_changed} of {live_tried} clobbers of live ones changed it",
        l.kernel
    );
    assert!(safe > 0, "{file}: no clobber slots");
    assert!(
        live_changed > 0,
        "{file}: the harness never saw a difference"
    );
}

#[test]
fn vector_add_dead_registers_are_dead() {
    let l = Launch {
        kernel: "vector_add",
        grid: [1024, 1, 1],
        wg: [256, 1, 1],
        setup: vector_add,
    };
    check_kernel(5, "vector_add", &l);
    check_kernel(4, "vector_add", &l);
}

#[test]
fn reduce_sum_dead_registers_are_dead() {
    let l = Launch {
        kernel: "_Z10reduce_sumIjEvPKT_PS0_j",
        grid: [20 * 256, 1, 1],
        wg: [256, 1, 1],
        setup: reduce_sum,
    };
    check_kernel(4, "reduce_sum", &l);
    check_kernel(5, "reduce_sum", &l);
}

#[test]
fn histogram_dead_registers_are_dead() {
    let l = Launch {
        kernel: "histogram",
        grid: [1000, 1, 1],
        wg: [128, 1, 1],
        setup: histogram,
    };
    check_kernel(5, "histogram", &l);
}

fn matmul(dev: &Device) -> (Args, Vec<(u64, usize)>) {
    let mut s = 17;
    let (m, n, k) = (40u32, 50u32, 33u32);
    let mut f = |len: u32| -> Vec<u32> {
        (0..len)
            .map(|_| ((rng(&mut s) % 64) as f32 / 8.0).to_bits())
            .collect()
    };
    let (a, b) = (f(m * k), f(k * n));
    let (da, db) = (dev.upload_u32(&a).unwrap(), dev.upload_u32(&b).unwrap());
    let dc = dev.upload_u32(&vec![0; (m * n) as usize]).unwrap();
    (
        Args::new().ptr(da).ptr(db).ptr(dc).u32(m).u32(n).u32(k),
        vec![(dc, (m * n) as usize)],
    )
}

fn wave_io(dev: &Device) -> (Args, Vec<(u64, usize)>) {
    let mut s = 19;
    let data: Vec<u32> = (0..128).map(|_| rng(&mut s) % 1000).collect();
    let din = dev.upload_u32(&data).unwrap();
    let out = dev.upload_u32(&[0; 128]).unwrap();
    (Args::new().ptr(din).ptr(out), vec![(out, 128)])
}

#[test]
fn matmul_dead_registers_are_dead() {
    let l = Launch {
        kernel: "matmul_tiled",
        grid: [64, 48, 1],
        wg: [16, 16, 1],
        setup: matmul,
    };
    check_kernel(5, "matmul", &l);
}

/// Cross-lane operations (shuffles through ds_bpermute, DPP row rotations).
#[test]
fn wave_ops_dead_registers_are_dead() {
    for kernel in [
        "wave_sum_xor",
        "row_sum_dpp",
        "reverse_bperm",
        "broadcast_shfl",
    ] {
        let l = Launch {
            kernel,
            grid: [128, 1, 1],
            wg: [64, 1, 1],
            setup: wave_io,
        };
        check_kernel(5, "wave_ops", &l);
    }
}

fn floats_in_out(dev: &Device, seed: u64) -> (u64, u64) {
    let mut s = seed;
    let x: Vec<u32> = (0..1024)
        .map(|_| ((rng(&mut s) % 200) as f32 / 16.0 - 6.0).to_bits())
        .collect();
    (
        dev.upload_u32(&x).unwrap(),
        dev.upload_u32(&[0; 1024]).unwrap(),
    )
}

fn call_direct(dev: &Device) -> (Args, Vec<(u64, usize)>) {
    let (x, y) = floats_in_out(dev, 23);
    (Args::new().ptr(x).ptr(y).u32(900), vec![(y, 1024)])
}

fn call_indirect(dev: &Device, op: u32) -> (Args, Vec<(u64, usize)>) {
    let (x, y) = floats_in_out(dev, 29);
    (Args::new().ptr(x).ptr(y).u32(900).u32(op), vec![(y, 1024)])
}

fn daxpy(dev: &Device) -> (Args, Vec<(u64, usize)>) {
    let mut s = 31;
    let n = 1000usize;
    let mut f = || -> Vec<u32> {
        (0..n)
            .flat_map(|_| {
                let v = ((rng(&mut s) % 512) as f64 / 32.0).to_bits();
                [v as u32, (v >> 32) as u32]
            })
            .collect()
    };
    let (x, y) = (f(), f());
    let (dx, dy) = (dev.upload_u32(&x).unwrap(), dev.upload_u32(&y).unwrap());
    (
        Args::new().f64(1.5).ptr(dx).ptr(dy).u32(n as u32),
        vec![(dy, 2 * n)],
    )
}

/// Calls: slots inside the callees (their leading s_waitcnt) and around the
/// calls test the callee summaries and the return contexts.
#[test]
fn device_calls_dead_registers_are_dead() {
    let l = Launch {
        kernel: "call_direct",
        grid: [1024, 1, 1],
        wg: [256, 1, 1],
        setup: call_direct,
    };
    check_kernel(5, "device_call", &l);
    let ops: [Setup; 3] = [
        |d| call_indirect(d, 0),
        |d| call_indirect(d, 1),
        |d| call_indirect(d, 5),
    ];
    for setup in ops {
        let l = Launch {
            kernel: "call_indirect",
            grid: [1024, 1, 1],
            wg: [256, 1, 1],
            setup,
        };
        check_kernel(5, "device_call", &l);
    }
}

#[test]
fn daxpy_dead_registers_are_dead() {
    let l = Launch {
        kernel: "daxpy",
        grid: [1024, 1, 1],
        wg: [64, 1, 1],
        setup: daxpy,
    };
    check_kernel(5, "daxpy", &l);
}
