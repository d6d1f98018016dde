//! The project's fixture kernels for gfx90a (code object v4 and v5), each run
//! on random inputs with a partial last workgroup and checked against a host
//! reference computed here.

mod common;

use common::*;
use inlay_vgpu::kernarg::Args;
use inlay_vgpu::{Device, FaultKind};

const VERSIONS: [u32; 2] = [4, 5];

#[test]
fn vector_add() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "vector_add");
        let n = 1000usize; // 4 workgroups of 256, the last one partial
        let mut rng = Rng(0x1234 + v as u64);
        let a: Vec<f32> = (0..n).map(|_| rng.f32() * 100.0).collect();
        let b: Vec<f32> = (0..n).map(|_| rng.f32() * 100.0).collect();
        let (da, db) = (upload_f32(&dev, &a), upload_f32(&dev, &b));
        // One guard element past n must stay untouched.
        let dc = upload_f32(&dev, &vec![-7.0; n + 1]);
        let args = Args::new().ptr(da).ptr(db).ptr(dc).u32(n as u32);
        let stats = dev
            .dispatch(
                &p,
                "vector_add",
                [n as u32, 1, 1],
                [256, 1, 1],
                args.as_bytes(),
            )
            .unwrap_or_else(|f| panic!("{f}"));
        let c = download_f32(&dev, dc, n + 1);
        for i in 0..n {
            assert_eq!(c[i], a[i] + b[i], "v{v} element {i}");
        }
        assert_eq!(c[n], -7.0, "v{v}: wrote past n");
        assert_eq!(stats.workgroups, 4);
        assert_eq!(stats.waves, 16);
    }
}

fn run(
    dev: &Device,
    p: &inlay_vgpu::Program,
    k: &str,
    grid: [u32; 3],
    wg: [u32; 3],
    args: &Args,
) -> inlay_vgpu::Stats {
    dev.dispatch(p, k, grid, wg, args.as_bytes())
        .unwrap_or_else(|f| panic!("{f}"))
}

fn close32(got: f32, want: f32, rel: f32) -> bool {
    (got - want).abs() <= rel * want.abs().max(1.0)
}

fn close64(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs().max(1.0)
}

#[test]
fn reduce_sum() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "reduce_sum");
        // n is not a multiple of the (required) workgroup size 256: the kernel
        // pads with zeros; the grid covers n with whole workgroups.
        let n: usize = 5 * 256 - 37;
        let groups = n.div_ceil(256);
        let mut rng = Rng(77 + v as u64);
        let ints: Vec<u32> = (0..n).map(|_| rng.u32()).collect();
        let din = dev.upload_u32(&ints).unwrap();
        let dout = dev.upload_u32(&vec![0; groups]).unwrap();
        let args = Args::new().ptr(din).ptr(dout).u32(n as u32);
        run(
            &dev,
            &p,
            "_Z10reduce_sumIjEvPKT_PS0_j",
            [(groups * 256) as u32, 1, 1],
            [256, 1, 1],
            &args,
        );
        let got = dev.download_u32(dout, groups).unwrap();
        for b in 0..groups {
            let want = ints[b * 256..((b + 1) * 256).min(n)]
                .iter()
                .fold(0u32, |s, x| s.wrapping_add(*x));
            assert_eq!(got[b], want, "v{v} u32 block {b}");
        }
        // Floats that are small integers: every partial sum is exact.
        let fl: Vec<f32> = (0..n).map(|_| (rng.u32() % 1000) as f32 - 500.0).collect();
        let din = upload_f32(&dev, &fl);
        let args = Args::new().ptr(din).ptr(dout).u32(n as u32);
        run(
            &dev,
            &p,
            "_Z10reduce_sumIfEvPKT_PS0_j",
            [(groups * 256) as u32, 1, 1],
            [256, 1, 1],
            &args,
        );
        let got = download_f32(&dev, dout, groups);
        for b in 0..groups {
            let want: f32 = fl[b * 256..((b + 1) * 256).min(n)].iter().sum();
            assert_eq!(got[b], want, "v{v} f32 block {b}");
        }
    }
}

#[test]
fn histogram() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "histogram");
        let n = 3000usize; // 12 workgroups of 256, the last one partial
        let nbins = 37u32;
        let mut rng = Rng(5 + v as u64);
        let data: Vec<u32> = (0..n).map(|_| rng.u32()).collect();
        let dd = dev.upload_u32(&data).unwrap();
        let db = dev.upload_u32(&vec![0; nbins as usize]).unwrap();
        let args = Args::new().ptr(dd).u32(n as u32).ptr(db).u32(nbins);
        for _ in 0..2 {
            run(&dev, &p, "histogram", [n as u32, 1, 1], [256, 1, 1], &args);
        }
        let mut want = vec![0u32; nbins as usize];
        for d in &data {
            want[(d % nbins) as usize] += 2;
        }
        assert_eq!(dev.download_u32(db, nbins as usize).unwrap(), want, "v{v}");
        let dt = dev.upload_u32(&[0]).unwrap();
        run(
            &dev,
            &p,
            "histogram_total",
            [1, 1, 1],
            [1, 1, 1],
            &Args::new().ptr(dt),
        );
        assert_eq!(
            dev.download_u32(dt, 1).unwrap()[0],
            2 * n as u32,
            "v{v} total"
        );
    }
}

#[test]
fn matmul() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "matmul");
        let (m, n, k) = (37usize, 45usize, 29usize);
        let mut rng = Rng(9 + v as u64);
        // Small integers: every fma is exact, so the order does not matter.
        let a: Vec<f32> = (0..m * k).map(|_| (rng.u32() % 17) as f32 - 8.0).collect();
        let b: Vec<f32> = (0..k * n).map(|_| (rng.u32() % 17) as f32 - 8.0).collect();
        let (da, db) = (upload_f32(&dev, &a), upload_f32(&dev, &b));
        let dc = upload_f32(&dev, &vec![0.0; m * n]);
        let args = Args::new()
            .ptr(da)
            .ptr(db)
            .ptr(dc)
            .u32(m as u32)
            .u32(n as u32)
            .u32(k as u32);
        let grid = [n.div_ceil(16) as u32 * 16, m.div_ceil(16) as u32 * 16, 1];
        run(&dev, &p, "matmul_tiled", grid, [16, 16, 1], &args);
        let c = download_f32(&dev, dc, m * n);
        for r in 0..m {
            for q in 0..n {
                let want: f32 = (0..k).map(|t| a[r * k + t] * b[t * n + q]).sum();
                assert_eq!(c[r * n + q], want, "v{v} c[{r}][{q}]");
            }
        }
    }
}

#[test]
fn prefix_scan() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "prefix_scan");
        let n: usize = 4 * 256 - 100;
        let groups = n.div_ceil(256);
        let mut rng = Rng(11 + v as u64);
        let input: Vec<u32> = (0..n).map(|_| rng.u32()).collect();
        let di = dev.upload_u32(&input).unwrap();
        let dout = dev.upload_u32(&vec![0xdead; n + 1]).unwrap();
        let args = Args::new().ptr(di).ptr(dout).u32(n as u32);
        run(
            &dev,
            &p,
            "scan_inclusive",
            [(groups * 256) as u32, 1, 1],
            [256, 1, 1],
            &args,
        );
        let got = dev.download_u32(dout, n + 1).unwrap();
        for g in 0..n {
            let b = g / 256 * 256;
            let want = input[b..=g].iter().fold(0u32, |s, x| s.wrapping_add(*x));
            assert_eq!(got[g], want, "v{v} out[{g}]");
        }
        assert_eq!(got[n], 0xdead);
        let dc = dev.upload_u32(&[0]).unwrap();
        run(
            &dev,
            &p,
            "scan_groups_read",
            [1, 1, 1],
            [1, 1, 1],
            &Args::new().ptr(dc),
        );
        assert_eq!(dev.download_u32(dc, 1).unwrap()[0], groups as u32, "v{v}");
    }
}

#[test]
fn device_call() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "device_call");
        let n = 700usize;
        let mut rng = Rng(13 + v as u64);
        let x: Vec<f32> = (0..n).map(|_| rng.f32() * 10.0).collect();
        let dx = upload_f32(&dev, &x);
        let dy = upload_f32(&dev, &vec![0.0; n]);
        let grid = [n as u32, 1, 1];
        run(
            &dev,
            &p,
            "call_direct",
            grid,
            [128, 1, 1],
            &Args::new().ptr(dx).ptr(dy).u32(n as u32),
        );
        let y = download_f32(&dev, dy, n);
        for i in 0..n {
            let want = 3.0 * x[i] * x[i] + 2.0 * x[i] + 1.0;
            assert!(
                close32(y[i], want, 1e-5),
                "v{v} direct {i}: {} vs {want}",
                y[i]
            );
        }
        for op in 0..4u32 {
            let args = Args::new().ptr(dx).ptr(dy).u32(n as u32).u32(op);
            run(&dev, &p, "call_indirect", grid, [128, 1, 1], &args);
            let y = download_f32(&dev, dy, n);
            for i in 0..n {
                let xv = x[i];
                let want = match op % 3 {
                    0 => 3.0 * xv * xv + 2.0 * xv + 1.0,
                    1 => 2.0 * xv,
                    _ => -xv,
                };
                assert!(
                    close32(y[i], want, 1e-5),
                    "v{v} op {op} {i}: {} vs {want}",
                    y[i]
                );
            }
        }
    }
}

#[test]
fn daxpy_and_dnorm() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "daxpy");
        let n = 777usize;
        let mut rng = Rng(17 + v as u64);
        let x: Vec<f64> = (0..n).map(|_| rng.f64() * 100.0).collect();
        let y: Vec<f64> = (0..n).map(|_| rng.f64() * 100.0).collect();
        let a = 2.5f64;
        let (dx, dy) = (upload_f64(&dev, &x), upload_f64(&dev, &y));
        run(
            &dev,
            &p,
            "daxpy",
            [n as u32, 1, 1],
            [64, 1, 1],
            &Args::new().f64(a).ptr(dx).ptr(dy).u32(n as u32),
        );
        let got = download_f64(&dev, dy, n);
        for i in 0..n {
            // The compiler may contract a·x + y into one fma: accept exactly either.
            let (fused, split) = (a.mul_add(x[i], y[i]), a * x[i] + y[i]);
            assert!(
                got[i] == fused || got[i] == split,
                "v{v} daxpy {i}: {} vs {fused}",
                got[i]
            );
        }
        let dy = upload_f64(&dev, &y);
        let dout = upload_f64(&dev, &vec![0.0; n]);
        run(
            &dev,
            &p,
            "dnorm_fma",
            [n as u32, 1, 1],
            [64, 1, 1],
            &Args::new().ptr(dx).ptr(dy).ptr(dout).u32(n as u32),
        );
        let got = download_f64(&dev, dout, n);
        for i in 0..n {
            let want = x[i].mul_add(x[i], y[i] * y[i]).sqrt();
            assert!(
                close64(got[i], want, 1e-14),
                "v{v} dnorm {i}: {} vs {want}",
                got[i]
            );
        }
    }
}

#[test]
fn wave_ops() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "wave_ops");
        let n = 256usize;
        let mut rng = Rng(19 + v as u64);
        let input: Vec<i32> = (0..n).map(|_| (rng.u32() % 2001) as i32 - 1000).collect();
        let din = dev
            .upload_u32(&input.iter().map(|x| *x as u32).collect::<Vec<_>>())
            .unwrap();
        let dout = dev.upload_u32(&vec![0; n]).unwrap();
        let kernels: [(&str, &dyn Fn(usize) -> i32); 6] = [
            ("wave_sum_xor", &|g| {
                input[g / 64 * 64..g / 64 * 64 + 64].iter().sum()
            }),
            ("row_sum_dpp", &|g| {
                input[g / 16 * 16..g / 16 * 16 + 16].iter().sum()
            }),
            ("reverse_bperm", &|g| input[g / 64 * 64 + 63 - g % 64]),
            ("broadcast_shfl", &|g| {
                input[g / 64 * 64 + ((g % 64) ^ 5)] + input[g / 64 * 64]
            }),
            ("quad_reverse_dpp", &|g| input[g / 4 * 4 + 3 - g % 4]),
            ("row_shr_dpp", &|g| {
                if g % 16 == 0 {
                    -1
                } else {
                    input[g - 1]
                }
            }),
        ];
        for (k, want) in kernels {
            run(
                &dev,
                &p,
                k,
                [n as u32, 1, 1],
                [64, 1, 1],
                &Args::new().ptr(din).ptr(dout),
            );
            let got = dev.download_u32(dout, n).unwrap();
            for (g, x) in got.iter().enumerate() {
                assert_eq!(*x as i32, want(g), "v{v} {k} lane {g}");
            }
        }
    }
}

#[test]
fn scratch_lookup() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "scratch");
        let n = 300usize;
        let mut rng = Rng(23 + v as u64);
        let seed: Vec<u32> = (0..n).map(|_| rng.u32()).collect();
        let idx: Vec<u32> = (0..n).map(|_| rng.u32()).collect();
        let (ds, di) = (
            dev.upload_u32(&seed).unwrap(),
            dev.upload_u32(&idx).unwrap(),
        );
        let dout = dev.upload_u32(&vec![0; n]).unwrap();
        let args = Args::new().ptr(ds).ptr(di).ptr(dout).u32(n as u32);
        run(
            &dev,
            &p,
            "scratch_lookup",
            [n as u32, 1, 1],
            [64, 1, 1],
            &args,
        );
        let got = dev.download_u32(dout, n).unwrap();
        for g in 0..n {
            let t = |j: u32| seed[g].wrapping_mul(j).wrapping_add(j ^ 0x55);
            let want = t(idx[g] % 256).wrapping_add(t(idx[g].wrapping_mul(7) % 256));
            assert_eq!(got[g], want, "v{v} out[{g}]");
        }
    }
}

#[test]
fn mfma_32x32x2() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "mfma");
        let mut rng = Rng(29 + v as u64);
        let a: Vec<f32> = (0..64).map(|_| rng.f32()).collect();
        let b: Vec<f32> = (0..64).map(|_| rng.f32()).collect();
        let (da, db) = (upload_f32(&dev, &a), upload_f32(&dev, &b));
        let dc = upload_f32(&dev, &[0.0; 1024]);
        run(
            &dev,
            &p,
            "mfma_32x32x2",
            [64, 1, 1],
            [64, 1, 1],
            &Args::new().ptr(da).ptr(db).ptr(dc),
        );
        let c = download_f32(&dev, dc, 1024);
        for i in 0..32 {
            for j in 0..32 {
                let want = a[i * 2] * b[j] + a[i * 2 + 1] * b[32 + j];
                assert!(close32(c[i * 32 + j], want, 1e-6), "v{v} c[{i}][{j}]");
            }
        }
    }
}

#[test]
fn many_args() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "many_args");
        let info = p.kernel("many_args").expect("kernel");
        let gi = dev.upload_u32(&[(-42i32) as u32]).unwrap();
        let kf = upload_f32(&dev, &[1.25]);
        let out = upload_f64(&dev, &[0.0; 6]);
        let mut pod = Vec::new();
        pod.extend_from_slice(&7i32.to_le_bytes());
        pod.extend_from_slice(&0.5f32.to_le_bytes());
        pod.extend_from_slice(&(-1_000_000_000_000i64).to_le_bytes());
        let v4: Vec<u8> = [1.5f32, -2.0, 3.25, 4.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let v2: Vec<u8> = [6i32, -7].iter().flat_map(|x| x.to_le_bytes()).collect();
        let values: Vec<Vec<u8>> = vec![
            vec![(-3i8) as u8],
            (-300i16).to_le_bytes().to_vec(),
            100_000i32.to_le_bytes().to_vec(),
            (5_000_000_000i64).to_le_bytes().to_vec(),
            0.75f32.to_le_bytes().to_vec(),
            (-1.5e10f64).to_le_bytes().to_vec(),
            gi.to_le_bytes().to_vec(),
            kf.to_le_bytes().to_vec(),
            pod,
            v4,
            v2,
            vec![200u8],
            out.to_le_bytes().to_vec(),
        ];
        // Place each explicit argument at the offset the metadata gives.
        let explicit: Vec<_> = info
            .args
            .iter()
            .filter(|a| !a.value_kind.starts_with("hidden"))
            .collect();
        assert_eq!(explicit.len(), values.len());
        let mut bytes = vec![0u8; info.kernarg_size as usize];
        for (a, val) in explicit.iter().zip(&values) {
            assert_eq!(a.size as usize, val.len(), "{:?}", a.name);
            bytes[a.offset as usize..a.offset as usize + val.len()].copy_from_slice(val);
        }
        let stats = dev
            .dispatch(&p, "many_args", [64, 1, 1], [64, 1, 1], &bytes)
            .unwrap_or_else(|f| panic!("{f}"));
        assert!(stats.instructions > 0);
        let got = download_f64(&dev, out, 6);
        let want = [
            (-3i64 - 300 + 100_000 + 5_000_000_000) as f64,
            0.75f64 + -1.5e10,
            -42.0 + 1.25,
            7.0 + 0.5 + -1e12,
            1.5 + -2.0 + 3.25 + 4.0,
            (6 * -7 + 200) as f64,
        ];
        assert_eq!(got, want, "v{v}");
    }
}

/// `k` as f16 bits, for integers with |k| < 2048 (all exact in f16).
fn f16_of_int(k: i32) -> u16 {
    if k == 0 {
        return 0;
    }
    let (sign, m) = (if k < 0 { 0x8000 } else { 0 }, k.unsigned_abs());
    let e = 31 - m.leading_zeros(); // m = 1.f × 2^e
    sign | ((e + 15) << 10 | (m << 10 >> e & 0x3ff)) as u16
}

#[test]
fn f16_of_int_matches_known_encodings() {
    // From the IEEE 754 binary16 layout: 1.0, 2.0, -3.0, 1000.0, 2047.0.
    let want = [
        (1, 0x3c00),
        (2, 0x4000),
        (-3, 0xc200),
        (1000, 0x63d0),
        (2047, 0x67ff),
    ];
    for (k, bits) in want {
        assert_eq!(f16_of_int(k), bits, "{k}");
    }
}

/// Eighths of small integers: every sum of a few thousand is exact in f64
/// and f32 whatever the order the atomics apply in.
fn eighths(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| (rng.u32() % 4001) as f64 / 8.0 - 250.0)
        .collect()
}

#[test]
fn float_atomics_global_and_flat() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "float_atomics");
        let n = 1000usize; // 4 workgroups of 256, the last one partial
        let mut rng = Rng(0xf10a7 + v as u64);
        let x = eighths(&mut rng, n);
        let (lo, hi) = x
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        let sum: f64 = x.iter().sum();
        let inf = f64::INFINITY;
        let dx = upload_f64(&dev, &x);
        let dout = upload_f64(&dev, &[1.5, inf, -inf, -2.0, inf, -inf, 99.0]);
        let args = Args::new().ptr(dx).ptr(dout).u32(n as u32);
        run(&dev, &p, "atomic_f64", [1024, 1, 1], [256, 1, 1], &args);
        let got = download_f64(&dev, dout, 7);
        assert_eq!(
            got,
            [1.5 + sum, lo, hi, -2.0 + sum, lo, hi, 99.0],
            "v{v}: global then flat add/min/max_f64 (last: guard)"
        );

        // Returning adds: the old values seen are 0, 1, ..., n-1 in some order.
        let dout = upload_f64(&dev, &[0.0, 0.0]);
        let dolds = upload_f64(&dev, &vec![-1.0; 2 * n]);
        let args = Args::new().ptr(dout).ptr(dolds).u32(n as u32);
        run(&dev, &p, "atomic_f64_rtn", [1024, 1, 1], [256, 1, 1], &args);
        assert_eq!(download_f64(&dev, dout, 2), [n as f64, n as f64], "v{v}");
        let olds = download_f64(&dev, dolds, 2 * n);
        for (what, half) in [("global", &olds[..n]), ("flat", &olds[n..])] {
            let mut seen: Vec<u64> = half.iter().map(|&o| o as u64).collect();
            assert!(
                half.iter().all(|o| o.fract() == 0.0),
                "v{v} {what}: {half:?}"
            );
            seen.sort_unstable();
            assert_eq!(seen, (0..n as u64).collect::<Vec<_>>(), "v{v} {what} olds");
        }

        // f32 add and packed f16 add; small integers keep every sum exact.
        let xf: Vec<f32> = (0..n).map(|_| (rng.u32() % 201) as f32 - 100.0).collect();
        let halves: Vec<(i32, i32)> = (0..n)
            .map(|_| ((rng.u32() % 3) as i32, -((rng.u32() % 3) as i32)))
            .collect();
        let h: Vec<u32> = halves
            .iter()
            .map(|&(a, b)| f16_of_int(a) as u32 | (f16_of_int(b) as u32) << 16)
            .collect();
        let dxf = upload_f32(&dev, &xf);
        let dh = dev.upload_u32(&h).unwrap();
        let dsum = upload_f32(&dev, &[0.25]);
        let dsumh = dev
            .upload_u32(&[f16_of_int(5) as u32 | (f16_of_int(-7) as u32) << 16])
            .unwrap();
        let args = Args::new()
            .ptr(dxf)
            .ptr(dh)
            .ptr(dsum)
            .ptr(dsumh)
            .u32(n as u32);
        run(&dev, &p, "atomic_f32_f16", [1024, 1, 1], [256, 1, 1], &args);
        let want32 = 0.25 + xf.iter().sum::<f32>();
        assert_eq!(download_f32(&dev, dsum, 1)[0], want32, "v{v} f32 add");
        let (sa, sb) = halves
            .iter()
            .fold((5, -7), |(a, b), &(x, y)| (a + x, b + y));
        let want16 = f16_of_int(sa) as u32 | (f16_of_int(sb) as u32) << 16;
        let got16 = dev.download_u32(dsumh, 1).unwrap()[0];
        assert_eq!(got16, want16, "v{v} pk_add_f16: halves {sa}, {sb}");
    }
}

#[test]
fn float_atomics_lds() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "float_atomics");
        let (n, wg) = (700usize, 256usize); // 3 workgroups, the last partial
        let groups = n.div_ceil(wg);
        let mut rng = Rng(0x1d5 + v as u64);
        let x = eighths(&mut rng, n);
        let y: Vec<f32> = (0..n)
            .map(|_| (rng.u32() % 64) as f32 / 4.0 - 8.0)
            .collect();
        let (dx, dy) = (upload_f64(&dev, &x), upload_f32(&dev, &y));
        let dout = upload_f64(&dev, &vec![7.0; 5 * groups + 1]);
        let args = Args::new().ptr(dx).ptr(dy).ptr(dout).u32(n as u32);
        run(
            &dev,
            &p,
            "atomic_lds",
            [(groups * wg) as u32, 1, 1],
            [wg as u32, 1, 1],
            &args,
        );
        let got = download_f64(&dev, dout, 5 * groups + 1);
        for b in 0..groups {
            let r = b * wg..((b + 1) * wg).min(n);
            let xs = &x[r.clone()];
            let sum: f64 = xs.iter().sum();
            let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let sf: f32 = y[r].iter().sum();
            assert_eq!(
                got[5 * b..5 * b + 5],
                [sum, lo, hi, sf as f64, sum],
                "v{v} workgroup {b}: ds add/min/max_f64, ds_add_f32, flat add_f64 on LDS"
            );
        }
        assert_eq!(got[5 * groups], 7.0, "v{v}: wrote past the last workgroup");
    }
}

#[test]
fn system_scope_release_acquire() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "float_atomics");
        let n = 300usize;
        let (data, flag, seen) = (
            dev.upload_u32(&vec![0; n]).unwrap(),
            dev.upload_u32(&vec![0; n]).unwrap(),
            dev.upload_u32(&vec![0; n]).unwrap(),
        );
        let args = Args::new().ptr(data).ptr(flag).ptr(seen).u32(n as u32);
        let stats = run(&dev, &p, "release_acquire", [320, 1, 1], [64, 1, 1], &args);
        let want: Vec<u32> = (1..=n as u32).collect();
        assert_eq!(dev.download_u32(seen, n).unwrap(), want, "v{v}");
        assert_eq!(dev.download_u32(flag, n).unwrap(), vec![1; n], "v{v}");
        for op in ["buffer_wbl2", "buffer_invl2"] {
            assert!(
                stats.per_opcode.get(op).copied().unwrap_or(0) > 0,
                "v{v}: no {op} ran"
            );
        }
    }
}
#[test]
fn cooperative_grid_sync_between_rounds() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "cooperative");
        let (groups, rounds) = (12u32, 3u32);
        let mut rng = Rng(0xc0 + v as u64);
        let input: Vec<u32> = (0..groups * 256).map(|_| rng.u32() % 1000).collect();
        let total = input.iter().fold(0u32, |s, x| s.wrapping_add(*x));
        let din = dev.upload_u32(&input).unwrap();
        let dacc = dev.upload_u32(&vec![0; groups as usize]).unwrap();
        let dout = dev
            .upload_u32(&vec![0; (groups * rounds) as usize])
            .unwrap();
        // As ROCclr does before a cooperative launch: GWS resource 0 as a
        // barrier of all workgroups.
        let init = Args::new().u32(groups - 1).u32(0);
        run(&dev, &p, "gws_init", [1, 1, 1], [1, 1, 1], &init);
        let args = Args::new().ptr(din).ptr(dacc).ptr(dout).u32(rounds);
        run(
            &dev,
            &p,
            "grid_rounds",
            [groups * 256, 1, 1],
            [256, 1, 1],
            &args,
        );
        let got = dev.download_u32(dout, (groups * rounds) as usize).unwrap();
        for r in 0..rounds {
            for b in 0..groups {
                assert_eq!(
                    got[(r * groups + b) as usize],
                    total.wrapping_mul(r + 1),
                    "v{v} round {r} workgroup {b}"
                );
            }
        }
    }
}

#[test]
fn cooperative_dispatch_larger_than_the_device_is_refused() {
    let dev = Device::new();
    let p = load(&dev, 5, "cooperative");
    // 833 workgroups of 4 waves: 3332 waves, more than 104 CUs x 32 waves.
    let dacc = dev.upload_u32(&[0; 4]).unwrap();
    let args = Args::new().ptr(dacc).ptr(dacc).ptr(dacc).u32(1);
    let f = dev
        .dispatch(
            &p,
            "grid_rounds",
            [833 * 256, 1, 1],
            [256, 1, 1],
            args.as_bytes(),
        )
        .expect_err("a cooperative grid that cannot be resident");
    assert!(matches!(f.kind, FaultKind::Launch(_)), "{f}");
}

#[test]
fn gws_semaphore_hands_data_to_every_workgroup() {
    let dev = Device::new();
    for v in VERSIONS {
        let p = load(&dev, v, "cooperative");
        let (groups, resource) = (20u32, 3u32);
        let data = dev.upload_u32(&vec![0; groups as usize]).unwrap();
        let seen = dev.upload_u32(&vec![0; groups as usize]).unwrap();
        run(
            &dev,
            &p,
            "gws_init",
            [1, 1, 1],
            [1, 1, 1],
            &Args::new().u32(0).u32(resource),
        );
        let args = Args::new().ptr(data).ptr(seen).u32(resource);
        run(
            &dev,
            &p,
            "gws_semaphore",
            [groups * 64, 1, 1],
            [64, 1, 1],
            &args,
        );
        let want: Vec<u32> = (0..groups).map(|b| b + 7).collect();
        assert_eq!(
            dev.download_u32(seen, groups as usize).unwrap(),
            want,
            "v{v}"
        );
    }
}

/// A probe at grid.sync()'s `ds_gws_barrier`s (found with
/// llvm-objdump-19) sees each wave execution once before and once after,
/// however often the wave retried while it waited: what an instrumentation
/// test compares its hooks' calls with. Each of the round's two grid.sync()
/// runs its barrier in one wave per workgroup (its work-item 0's).
#[test]
fn a_probe_sees_a_waiting_gws_barrier_once_per_execution() {
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    let dev = Device::new();
    let p = load(&dev, 5, "cooperative");
    let listing = std::process::Command::new("llvm-objdump-19")
        .args(["-d", "--disassemble-symbols=grid_rounds"])
        .arg(fixture_path(5, "cooperative"))
        .output()
        .expect("llvm-objdump-19 (scripts/install-deps installs it)");
    let listing = String::from_utf8_lossy(&listing.stdout);
    let image = p.image.expect("image");
    let barriers: Vec<u64> = listing
        .lines()
        .filter(|l| l.trim_start().starts_with("ds_gws_barrier"))
        .filter_map(|l| {
            let at = l.split("// ").nth(1)?.split(':').next()?;
            Some(image + u64::from_str_radix(at.trim(), 16).ok()?)
        })
        .collect();
    assert_eq!(barriers.len(), 2, "grid_rounds' barriers:\n{listing}");
    let (groups, rounds) = (12u32, 3u32);
    type Hits = BTreeMap<(u64, bool, [u32; 3], u32), u64>;
    let seen: Mutex<Hits> = Mutex::default();
    let probe = inlay_vgpu::Probe {
        before: barriers.clone(),
        after: barriers.clone(),
        see: Box::new(|hit| {
            *seen
                .lock()
                .unwrap()
                .entry((hit.addr, hit.after, hit.workgroup, hit.wave))
                .or_default() += 1;
        }),
    };
    let din = dev.upload_u32(&vec![1; (groups * 256) as usize]).unwrap();
    let dacc = dev.upload_u32(&vec![0; groups as usize]).unwrap();
    let dout = dev
        .upload_u32(&vec![0; (groups * rounds) as usize])
        .unwrap();
    run(
        &dev,
        &p,
        "gws_init",
        [1, 1, 1],
        [1, 1, 1],
        &Args::new().u32(groups - 1).u32(0),
    );
    let args = Args::new().ptr(din).ptr(dacc).ptr(dout).u32(rounds);
    let stats = dev
        .dispatch_probed(
            &p,
            "grid_rounds",
            [groups * 256, 1, 1],
            [256, 1, 1],
            args.as_bytes(),
            Some(&probe),
        )
        .unwrap_or_else(|f| panic!("{f}"));
    drop(probe);
    let mut want = Hits::new();
    for &addr in &barriers {
        for b in 0..groups {
            for after in [false, true] {
                want.insert((addr, after, [b, 0, 0], 0), u64::from(rounds));
            }
        }
        assert_eq!(
            stats.per_pc.get(&addr).copied(),
            Some(u64::from(groups * rounds)),
            "executions counted at {addr:#x}"
        );
    }
    assert_eq!(
        seen.into_inner().unwrap(),
        want,
        "probe hits per (barrier, after, workgroup, wave)"
    );
}
