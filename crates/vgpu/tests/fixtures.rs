//! The project's fixture kernels for gfx90a (code object v4 and v5), each run
//! on random inputs with a partial last workgroup and checked against a host
//! reference computed here.

mod common;

use common::*;
use inlay_vgpu::kernarg::Args;
use inlay_vgpu::Device;

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
