//! Kernels and files are untrusted: random instruction words and corrupted
//! code objects end in a fault report or a load error, never a panic, and
//! the device keeps working.

use crate::common;

use common::*;
use inlay_codeobj::CodeObject;
use inlay_vgpu::kernarg::Args;
use inlay_vgpu::Device;

#[test]
fn random_instruction_words_never_panic() {
    let mut dev = Device::with_threads(1);
    dev.set_watchdog(20_000);
    let base = fixture(5, "vector_add");
    let co = CodeObject::parse(&base).expect("parse");
    let text = co.section(".text").expect(".text");
    let (off, len) = (text.offset as usize, text.size as usize);
    drop(co);
    let buf = dev.upload(&[0u8; 4096]).expect("alloc");
    let args = Args::new().ptr(buf).ptr(buf).ptr(buf).u32(64);
    let mut rng = Rng(0xfeed);
    let (mut ok, mut faulted) = (0, 0);
    for _ in 0..300 {
        let mut bytes = base.clone();
        // Keep the first instruction words plausible half of the time by only
        // replacing a random tail; otherwise replace everything.
        let start = if rng.u32() & 1 == 0 {
            0
        } else {
            (rng.u32() as usize % 16) * 4
        };
        for w in (off + start..off + len).step_by(4) {
            let word = match rng.u32() % 4 {
                // Bias towards real encodings: SOPP/SOP*, VOP*, memory.
                0 => 0xbf00_0000 | rng.u32() & 0x00ff_ffff,
                1 => rng.u32() & 0x7fff_ffff,
                2 => 0xd000_0000 | rng.u32() & 0x0fff_ffff,
                _ => rng.u32(),
            };
            bytes[w..w + 4].copy_from_slice(&word.to_le_bytes());
        }
        let Ok(p) = dev.load(&bytes) else { continue };
        match dev.dispatch(&p, "vector_add", [128, 1, 1], [64, 1, 1], args.as_bytes()) {
            Ok(_) => ok += 1,
            Err(f) => {
                faulted += 1;
                assert!(!f.instruction.is_empty(), "{f}");
            }
        }
        dev.unload(p).expect("unload");
    }
    assert!(
        faulted > 0 && ok + faulted > 200,
        "ok {ok} faulted {faulted}"
    );
    // Still a working device.
    let p = load(&dev, 5, "vector_add");
    let a = upload_f32(&dev, &[1.0; 64]);
    let c = upload_f32(&dev, &[0.0; 64]);
    let args = Args::new().ptr(a).ptr(a).ptr(c).u32(64);
    dev.dispatch(&p, "vector_add", [64, 1, 1], [64, 1, 1], args.as_bytes())
        .unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(download_f32(&dev, c, 64), vec![2.0; 64]);
}

#[test]
fn corrupted_code_objects_are_refused_or_loaded() {
    let dev = Device::new();
    let base = fixture(5, "device_call");
    let mut rng = Rng(0xbad);
    for _ in 0..300 {
        let mut bytes = base.clone();
        for _ in 0..1 + rng.u32() % 8 {
            let at = rng.u32() as usize % bytes.len();
            bytes[at] = rng.u32() as u8;
        }
        if let Ok(p) = dev.load(&bytes) {
            dev.unload(p).expect("unload");
        }
    }
    // Truncations.
    for cut in [0, 16, 64, 200, base.len() / 2, base.len() - 1] {
        if let Ok(p) = dev.load(&base[..cut]) {
            dev.unload(p).expect("unload");
        }
    }
}
