//! A faulting kernel ends its dispatch with a report naming the kernel,
//! workgroup, wave, PC, instruction and address — and the device then runs
//! the next dispatch correctly.

mod common;

use common::*;
use inlay_codeobj::CodeObject;
use inlay_vgpu::kernarg::Args;
use inlay_vgpu::{Device, Fault, FaultKind, MemKind, Memory, Program, Watch};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// A vector_add dispatch that must succeed (after a fault).
fn vector_add_ok(dev: &Device, p: &Program) {
    let n = 300usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| 0.5 * i as f32).collect();
    let (da, db) = (upload_f32(dev, &a), upload_f32(dev, &b));
    let dc = upload_f32(dev, &vec![0.0; n]);
    let args = Args::new().ptr(da).ptr(db).ptr(dc).u32(n as u32);
    dev.dispatch(
        p,
        "vector_add",
        [n as u32, 1, 1],
        [64, 1, 1],
        args.as_bytes(),
    )
    .unwrap_or_else(|f| panic!("{f}"));
    let c = download_f32(dev, dc, n);
    for (i, x) in c.iter().enumerate() {
        assert_eq!(*x, 1.5 * i as f32);
    }
}

/// vector_add with its first instruction words replaced by `words`.
fn patched_vector_add(words: &[u32]) -> Vec<u8> {
    let mut bytes = fixture(5, "vector_add");
    let co = CodeObject::parse(&bytes).expect("parse");
    let text = co.section(".text").expect(".text");
    let entry = co
        .kernel("vector_add")
        .and_then(|k| k.entry_address)
        .expect("entry");
    let off = (entry - text.addr + text.offset) as usize;
    drop(co);
    for (k, w) in words.iter().enumerate() {
        bytes[off + 4 * k..off + 4 * k + 4].copy_from_slice(&w.to_le_bytes());
    }
    bytes
}

#[test]
fn out_of_bounds_store_then_next_dispatch_runs() {
    let dev = Device::new();
    let p = load(&dev, 5, "vector_add");
    let n = 1000usize;
    let da = upload_f32(&dev, &vec![1.0; n]);
    let db = upload_f32(&dev, &vec![2.0; n]);
    // c holds 500 floats: work-item 500 stores 4 bytes past its end.
    let dc = upload_f32(&dev, &vec![0.0; 500]);
    let args = Args::new().ptr(da).ptr(db).ptr(dc).u32(n as u32);
    let f = dev
        .dispatch(
            &p,
            "vector_add",
            [n as u32, 1, 1],
            [256, 1, 1],
            args.as_bytes(),
        )
        .expect_err("must fault");
    assert_eq!(f.kernel, "vector_add");
    assert_eq!(f.instruction, "global_store_dword v[0:1], v2, off");
    assert_eq!(f.pc_offset, 0x198c);
    assert_eq!(f.pc, p.image.unwrap() + 0x198c);
    // Some work-item at or past 500 stores outside `c` (which one depends on
    // what the host allocator placed after it); the report must agree with
    // the address it names.
    let addr = f.address.expect("address");
    assert!(addr >= dc + 2000 && addr < dc + 4000, "{f}");
    let item = (addr - dc) / 4;
    assert_eq!(f.workgroup, [(item / 256) as u32, 0, 0]);
    assert_eq!(f.wave, (item % 256 / 64) as u32);
    assert_eq!(f.lane, Some((item % 64) as u32));
    // The nearest allocation is at most as far from the address as `c`'s end.
    let near = f.nearest.expect("nearest allocation");
    let distance = |a: &inlay_vgpu::Allocation| {
        if addr < a.base {
            a.base - addr
        } else {
            addr.saturating_sub(a.end() - 1)
        }
    };
    assert!(distance(&near) <= addr - (dc + 1999), "{f}");
    assert!(matches!(
        f.kind,
        FaultKind::Memory(Fault::Unmapped { len: 4, .. } | Fault::OutOfBounds { len: 4, .. })
    ));
    vector_add_ok(&dev, &p);
}

#[test]
fn store_to_freed_buffer() {
    let dev = Device::new();
    let p = load(&dev, 5, "vector_add");
    let da = upload_f32(&dev, &[1.0; 64]);
    let dc = upload_f32(&dev, &[0.0; 64]);
    dev.free(dc).expect("free");
    let args = Args::new().ptr(da).ptr(da).ptr(dc).u32(64);
    let f = dev
        .dispatch(&p, "vector_add", [64, 1, 1], [64, 1, 1], args.as_bytes())
        .expect_err("must fault");
    assert_eq!(f.instruction, "global_store_dword v[0:1], v2, off");
    assert_eq!((f.workgroup, f.wave, f.address), ([0, 0, 0], 0, Some(dc)));
    assert_eq!(
        f.kind,
        FaultKind::Memory(Fault::UseAfterFree {
            addr: dc,
            len: 4,
            base: dc
        })
    );
    vector_add_ok(&dev, &p);
}

#[test]
fn unallocated_pointer_then_next_dispatch_runs() {
    let dev = Device::new();
    let p = load(&dev, 4, "vector_add");
    let db = upload_f32(&dev, &[0.0; 64]);
    let bogus = 0x40u64; // never allocated
    let args = Args::new().ptr(bogus).ptr(db).ptr(db).u32(64);
    let f = dev
        .dispatch(&p, "vector_add", [64, 1, 1], [64, 1, 1], args.as_bytes())
        .expect_err("must fault");
    assert_eq!(f.instruction, "global_load_dword v6, v[4:5], off");
    assert_eq!((f.workgroup, f.wave), ([0, 0, 0], 0));
    // Lane 0 reads a[0] first.
    assert_eq!(f.address, Some(bogus));
    assert_eq!(
        f.kind,
        FaultKind::Memory(Fault::Unmapped {
            addr: bogus,
            len: 4
        })
    );
    vector_add_ok(&dev, &p);
}

#[test]
fn endless_loop_hits_the_watchdog() {
    let mut dev = Device::new();
    dev.set_watchdog(100_000);
    // s_nop 0; s_branch -2 (back to the nop), forever.
    let p = dev
        .load(&patched_vector_add(&[0xbf80_0000, 0xbf82_fffe]))
        .expect("load");
    let f = dev
        .dispatch(&p, "vector_add", [128, 1, 1], [64, 1, 1], &[0; 32])
        .expect_err("must fault");
    assert_eq!(f.kind, FaultKind::Watchdog { budget: 100_000 });
    // The budget runs out on an instruction of the loop.
    assert!(f.instruction == "s_nop 0" || f.instruction.starts_with("s_branch"));
    let good = load(&dev, 4, "vector_add");
    vector_add_ok(&dev, &good);
}

/// The endless loop, dispatched with `watch`: how it ended and how long it took.
fn endless(watch: Watch<'_>) -> (Box<inlay_vgpu::FaultReport>, Duration) {
    let mut dev = Device::new();
    dev.set_watchdog(u64::MAX);
    let p = dev
        .load(&patched_vector_add(&[0xbf80_0000, 0xbf82_fffe]))
        .expect("load");
    let start = Instant::now();
    let f = dev
        .dispatch_watched(
            &p,
            "vector_add",
            [64 * 64, 1, 1],
            [256, 1, 1],
            &[0; 32],
            watch,
        )
        .expect_err("must end early");
    (f, start.elapsed())
}

#[test]
fn a_time_limit_ends_an_endless_loop_with_a_report() {
    let limit = Duration::from_millis(300);
    let (f, took) = endless(Watch {
        stop: None,
        time_limit: Some(limit),
    });
    assert_eq!(f.kind, FaultKind::TimeLimit { limit });
    assert!(
        f.instruction == "s_nop 0" || f.instruction.starts_with("s_branch"),
        "{f}"
    );
    assert!(took >= limit, "ended after {took:?}");
    assert!(took < Duration::from_secs(30), "ended after {took:?}");
}

#[test]
fn a_raised_stop_flag_ends_a_running_dispatch() {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        let (f, took) = endless(Watch {
            stop: Some(&stop),
            time_limit: None,
        });
        assert_eq!(f.kind, FaultKind::Stopped);
        assert!(took < Duration::from_secs(30), "ended after {took:?}");
    });
}

#[test]
fn nearest_allocation_is_the_one_holding_or_closest_to_an_address() {
    let m = Memory::new();
    assert_eq!(m.nearest(0x1000), None);
    let a = m.alloc(0x1000, 0x1000, MemKind::Device, 0).expect("alloc");
    let b = m.alloc(0x1000, 0x1000, MemKind::Device, 0).expect("alloc");
    let (lo, hi) = (a.min(b), a.max(b));
    let base = |x: Option<inlay_vgpu::Allocation>| x.map(|a| a.base);
    assert_eq!(base(m.nearest(lo + 5)), Some(lo));
    assert_eq!(base(m.nearest(lo - 1)), Some(lo));
    assert_eq!(base(m.nearest(hi + 0x1000 + 7)), Some(hi));
    // Between the two: whichever edge is closer.
    let gap = hi - (lo + 0x1000);
    if gap >= 4 {
        assert_eq!(base(m.nearest(lo + 0x1000)), Some(lo));
        assert_eq!(base(m.nearest(hi - 1)), Some(hi));
    }
    m.free(lo).expect("free");
    assert_eq!(base(m.nearest(lo)), Some(hi));
}

#[test]
fn s_trap_ends_the_dispatch() {
    let dev = Device::new();
    // s_trap 2
    let p = dev.load(&patched_vector_add(&[0xbf92_0002])).expect("load");
    let f = dev
        .dispatch(&p, "vector_add", [64, 1, 1], [64, 1, 1], &[0; 32])
        .expect_err("must fault");
    assert_eq!(f.kind, FaultKind::Trap(2));
    assert_eq!(f.instruction, "s_trap 2");
    assert_eq!(f.pc, p.image.unwrap() + 0x1900);
    let good = load(&dev, 5, "vector_add");
    vector_add_ok(&dev, &good);
}

#[test]
fn gws_barrier_no_other_wave_can_reach_is_a_deadlock() {
    let dev = Device::new();
    // v_mov_b32 v0, 1; ds_gws_barrier v0 gds (a barrier of two waves);
    // s_endpgm — run by a single wave (llvm-mc-19's encodings).
    let words = [0x7e00_0281, 0xd93b_0000, 0x0000_0000, 0xbf81_0000];
    let p = dev.load(&patched_vector_add(&words)).expect("load");
    let f = dev
        .dispatch(&p, "vector_add", [64, 1, 1], [64, 1, 1], &[0; 32])
        .expect_err("must fault");
    assert!(matches!(f.kind, FaultKind::Deadlock(_)), "{f}");
    assert_eq!(f.instruction, "ds_gws_barrier v0 gds");
    let good = load(&dev, 5, "vector_add");
    vector_add_ok(&dev, &good);
}

#[test]
fn undecodable_word_faults_only_when_run() {
    let dev = Device::new();
    let p = dev.load(&patched_vector_add(&[0xffff_ffff])).expect("load");
    assert!(p.unimplemented_count() >= 1);
    let f = dev
        .dispatch(&p, "vector_add", [64, 1, 1], [64, 1, 1], &[0; 32])
        .expect_err("must fault");
    // llvm-mc-19 -disassemble calls 0xffffffff an invalid gfx90a encoding.
    assert_eq!(f.kind, FaultKind::IllegalInstruction);
    assert_eq!(f.instruction, ".long 0xffffffff");
    assert_eq!(f.pc_offset, 0x1900);
}

#[test]
fn refused_launches() {
    let dev = Device::new();
    let p = load(&dev, 5, "vector_add");
    let no = dev
        .dispatch(&p, "nope", [64, 1, 1], [64, 1, 1], &[])
        .expect_err("no kernel");
    assert!(matches!(no.kind, FaultKind::Launch(_)));
    let big = dev
        .dispatch(&p, "vector_add", [64, 1, 1], [2048, 1, 1], &[])
        .expect_err("too big");
    assert!(matches!(big.kind, FaultKind::Launch(_)));
}

#[test]
fn lds_access_outside_the_workgroup_allocation() {
    let dev = Device::new();
    // ds_read_b32 v1, v0 offset:8; s_waitcnt lgkmcnt(0); s_endpgm — in a
    // kernel whose descriptor asks for no LDS at all.
    let p = dev
        .load(&patched_vector_add(&[
            0xd86c_0008,
            0x0100_0000,
            0xbf8c_c07f,
            0xbf81_0000,
        ]))
        .expect("load");
    let f = dev
        .dispatch(&p, "vector_add", [64, 1, 1], [64, 1, 1], &[0; 32])
        .expect_err("must fault");
    assert_eq!(f.instruction, "ds_read_b32 v1, v0 offset:8");
    // Lane 0 (v0 = 0) reads bytes 8..12 of a 0-byte LDS.
    assert_eq!(
        f.kind,
        FaultKind::Lds {
            offset: 8,
            len: 4,
            size: 0
        }
    );
    assert_eq!(f.address, Some(8));
}
