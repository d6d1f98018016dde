//! The VALU's baseline build (what runs where the CPU lacks AVX2 or FMA),
//! forced on this machine: fixture kernels against host references. The
//! other test binaries run the AVX2 build wherever the CPU has it.

use crate::common;

use std::sync::atomic::Ordering;

use common::*;
use inlay_vgpu::kernarg::Args;
use inlay_vgpu::valu::FORCE_BASELINE;
use inlay_vgpu::Device;

fn baseline_device() -> Device {
    FORCE_BASELINE.store(true, Ordering::Relaxed);
    Device::new()
}

fn f64s(dev: &Device, a: u64, n: usize) -> Vec<f64> {
    dev.download_u64(a, n)
        .expect("read")
        .into_iter()
        .map(f64::from_bits)
        .collect()
}

#[test]
fn matmul_with_fma_on_the_baseline_build() {
    let dev = baseline_device();
    let p = load(&dev, 5, "matmul");
    let s = 48usize;
    // Small integers: every product and sum is exact, in any order.
    let a: Vec<f32> = (0..s * s).map(|i| (i % 7) as f32).collect();
    let b: Vec<f32> = (0..s * s).map(|i| (i % 5) as f32 - 2.0).collect();
    let (da, db) = (upload_f32(&dev, &a), upload_f32(&dev, &b));
    let dc = upload_f32(&dev, &vec![0.0; s * s]);
    let su = s as u32;
    let args = Args::new().ptr(da).ptr(db).ptr(dc).u32(su).u32(su).u32(su);
    dev.dispatch(
        &p,
        "matmul_tiled",
        [su, su, 1],
        [16, 16, 1],
        args.as_bytes(),
    )
    .expect("dispatch");
    let got = download_f32(&dev, dc, s * s);
    for r in 0..s {
        for c in 0..s {
            let want: f32 = (0..s).map(|k| a[r * s + k] * b[k * s + c]).sum();
            assert_eq!(got[r * s + c], want, "c[{r}][{c}]");
        }
    }
}

#[test]
fn f64_kernels_on_the_baseline_build() {
    let dev = baseline_device();
    let p = load(&dev, 5, "daxpy");
    let n = 1000usize;
    let x: Vec<f64> = (0..n).map(|i| (i % 100) as f64).collect();
    let y: Vec<f64> = (0..n).map(|i| (i % 33) as f64).collect();
    let (dx, dy) = (upload_f64(&dev, &x), upload_f64(&dev, &y));
    let args = Args::new().f64(2.5).ptr(dx).ptr(dy).u32(n as u32);
    dev.dispatch(&p, "daxpy", [n as u32, 1, 1], [64, 1, 1], args.as_bytes())
        .expect("daxpy");
    let got = f64s(&dev, dy, n);
    for i in 0..n {
        assert_eq!(got[i], 2.5 * x[i] + y[i], "daxpy {i}");
    }
    // sqrt(x² + y²) with x² + y² exact: correctly rounded on both sides.
    let dy = upload_f64(&dev, &y);
    let dout = upload_f64(&dev, &vec![0.0; n]);
    let args = Args::new().ptr(dx).ptr(dy).ptr(dout).u32(n as u32);
    dev.dispatch(
        &p,
        "dnorm_fma",
        [n as u32, 1, 1],
        [64, 1, 1],
        args.as_bytes(),
    )
    .expect("dnorm");
    let got = f64s(&dev, dout, n);
    for i in 0..n {
        assert_eq!(got[i], (x[i] * x[i] + y[i] * y[i]).sqrt(), "dnorm {i}");
    }
}

#[test]
fn reduction_on_the_baseline_build() {
    let dev = baseline_device();
    let p = load(&dev, 5, "reduce_sum");
    let n: usize = 256 * 9 + 17;
    let input: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let di = dev.upload_u32(&input).expect("upload");
    let groups = n.div_ceil(256);
    let dout = dev.upload_u32(&vec![0; groups]).expect("upload");
    let args = Args::new().ptr(di).ptr(dout).u32(n as u32);
    dev.dispatch(
        &p,
        "_Z10reduce_sumIjEvPKT_PS0_j",
        [n as u32, 1, 1],
        [256, 1, 1],
        args.as_bytes(),
    )
    .expect("dispatch");
    let got = dev.download_u32(dout, groups).expect("read");
    for (g, c) in input.chunks(256).enumerate() {
        let want = c.iter().fold(0u32, |s, &v| s.wrapping_add(v));
        assert_eq!(got[g], want, "group {g}");
    }
}
