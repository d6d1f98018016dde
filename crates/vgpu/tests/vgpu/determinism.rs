//! Native counts: hand-derived for vector_add, and the same outputs and
//! counts on one thread as on all threads.

use crate::common;

use common::*;
use inlay_vgpu::kernarg::Args;
use inlay_vgpu::{Device, Stats};

#[test]
fn vector_add_counts_match_the_listing() {
    let dev = Device::new();
    let p = load(&dev, 5, "vector_add");
    let n = 900u32;
    let buf = upload_f32(&dev, &[0.0; 1024]);
    let args = Args::new().ptr(buf).ptr(buf).ptr(buf).u32(n);
    // 1024 work-items in 4 workgroups: 16 waves. Waves 0..14 have an active
    // lane and run the whole 29-instruction body; wave 15 (items 960..1023)
    // has none below n and leaves through s_cbranch_execz after 9
    // instructions, then runs s_endpgm.
    let s = dev
        .dispatch(&p, "vector_add", [1024, 1, 1], [256, 1, 1], args.as_bytes())
        .unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(s.waves, 16);
    assert_eq!(s.instructions, 15 * 29 + 10);
    assert_eq!(s.per_opcode["global_store_dword"], 15);
    assert_eq!(s.per_opcode["s_endpgm"], 16);
    assert_eq!(s.per_opcode["v_addc_co_u32"], 3 * 15);
    let per_offset = s.per_offset(&p);
    assert_eq!(per_offset[&0x1900], 16); // first instruction, every wave
    assert_eq!(per_offset[&0x1930], 15); // first after the branch
    assert_eq!(s.per_pc[&(p.image.unwrap() + 0x1900)], 16);
    assert_eq!(s.per_pc.values().sum::<u64>(), s.instructions);
}

/// Everything in `Stats` except wall time.
type Counts = (u64, u64, u64, Vec<(&'static str, u64)>, Vec<(u64, u64)>);

fn counts(s: &Stats) -> Counts {
    (
        s.instructions,
        s.workgroups,
        s.waves,
        s.per_opcode.iter().map(|(k, v)| (*k, *v)).collect(),
        s.per_pc.iter().map(|(k, v)| (*k, *v)).collect(),
    )
}

/// Per-PC counts keyed by code-object offset, comparable across devices.
fn by_offset(mut s: Stats, p: &inlay_vgpu::Program) -> Stats {
    s.per_pc = s.per_offset(p);
    s
}

/// Runs histogram, matmul and reduce_sum on `dev`; returns outputs and counts.
fn workload(dev: &Device) -> (Vec<Vec<u32>>, Vec<Stats>) {
    let mut outs = Vec::new();
    let mut stats = Vec::new();
    let mut rng = Rng(99);
    let n = 5000usize;
    let data: Vec<u32> = (0..n).map(|_| rng.u32()).collect();
    let dd = dev.upload_u32(&data).unwrap();

    let p = load(dev, 5, "histogram");
    let bins = dev.upload_u32(&[0; 61]).unwrap();
    let args = Args::new().ptr(dd).u32(n as u32).ptr(bins).u32(61);
    stats.push(by_offset(
        dev.dispatch(
            &p,
            "histogram",
            [n as u32, 1, 1],
            [128, 1, 1],
            args.as_bytes(),
        )
        .unwrap(),
        &p,
    ));
    outs.push(dev.download_u32(bins, 61).unwrap());

    let p = load(dev, 4, "reduce_sum");
    let out = dev.upload_u32(&[0; 20]).unwrap();
    let args = Args::new().ptr(dd).ptr(out).u32(n as u32);
    stats.push(by_offset(
        dev.dispatch(
            &p,
            "_Z10reduce_sumIjEvPKT_PS0_j",
            [20 * 256, 1, 1],
            [256, 1, 1],
            args.as_bytes(),
        )
        .unwrap(),
        &p,
    ));
    outs.push(dev.download_u32(out, 20).unwrap());

    let p = load(dev, 5, "matmul");
    let (m, nn, k) = (40u32, 50u32, 33u32);
    let a: Vec<f32> = (0..m * k).map(|_| rng.f32()).collect();
    let b: Vec<f32> = (0..k * nn).map(|_| rng.f32()).collect();
    let (da, db) = (upload_f32(dev, &a), upload_f32(dev, &b));
    let dc = upload_f32(dev, &vec![0.0; (m * nn) as usize]);
    let args = Args::new().ptr(da).ptr(db).ptr(dc).u32(m).u32(nn).u32(k);
    stats.push(by_offset(
        dev.dispatch(
            &p,
            "matmul_tiled",
            [64, 48, 1],
            [16, 16, 1],
            args.as_bytes(),
        )
        .unwrap(),
        &p,
    ));
    outs.push(dev.download_u32(dc, (m * nn) as usize).unwrap());
    (outs, stats)
}

#[test]
fn one_thread_and_all_threads_agree() {
    let one = Device::with_threads(1);
    let all = Device::with_threads(4);
    assert_eq!(one.threads(), 1);
    let (o1, s1) = workload(&one);
    let (o2, s2) = workload(&all);
    assert_eq!(o1, o2);
    for (a, b) in s1.iter().zip(&s2) {
        assert_eq!(counts(a), counts(b));
    }
}

#[test]
fn the_lowest_faulting_workgroup_is_reported_on_any_thread_count() {
    // c is too short from item 3000 on: workgroups 11.. (of 256 items) all
    // fault; the report must name the same first one every time.
    for threads in [1, 4] {
        let dev = Device::with_threads(threads);
        let p = load(&dev, 5, "vector_add");
        let n = 8192u32;
        let a = upload_f32(&dev, &vec![1.0; n as usize]);
        let c = upload_f32(&dev, &vec![0.0; 3000]);
        let args = Args::new().ptr(a).ptr(a).ptr(c).u32(n);
        let f = dev
            .dispatch(&p, "vector_add", [n, 1, 1], [256, 1, 1], args.as_bytes())
            .expect_err("must fault");
        let addr = f.address.expect("address");
        let item = (addr - c) / 4;
        assert_eq!(
            f.workgroup,
            [(item / 256) as u32, 0, 0],
            "{threads} threads"
        );
        // Nothing before item 3000 faults (where after it depends on what
        // the host allocator placed behind the buffer).
        assert!(item >= 3000, "{f}");
        // Run again: the same workgroup is reported.
        let g = dev
            .dispatch(&p, "vector_add", [n, 1, 1], [256, 1, 1], args.as_bytes())
            .expect_err("must fault");
        assert_eq!(
            (g.workgroup, g.wave, g.address),
            (f.workgroup, f.wave, f.address)
        );
    }
}
