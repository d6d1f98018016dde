//! Shared test helpers: fixtures, a small deterministic RNG, buffers.
#![allow(dead_code)]

pub mod asm;

use inlay_vgpu::{Device, Program};

pub fn fixture_path(version: u32, name: &str) -> String {
    format!(
        "{}/../../fixtures/gfx90a/v{version}/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    )
}

pub fn fixture(version: u32, name: &str) -> Vec<u8> {
    let p = fixture_path(version, name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

pub fn load(dev: &Device, version: u32, name: &str) -> Program {
    dev.load(&fixture(version, name))
        .unwrap_or_else(|e| panic!("load {name} v{version}: {e}"))
}

/// xorshift64*: reproducible inputs without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
    /// Uniform in [-1, 1).
    pub fn f32(&mut self) -> f32 {
        (self.u32() >> 8) as f32 / (1u32 << 23) as f32 - 1.0
    }
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

pub fn f32s_to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
pub fn f64s_to_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn upload_f32(dev: &Device, v: &[f32]) -> u64 {
    dev.upload(&f32s_to_bytes(v)).expect("upload")
}
pub fn upload_f64(dev: &Device, v: &[f64]) -> u64 {
    dev.upload(&f64s_to_bytes(v)).expect("upload")
}
pub fn download_f32(dev: &Device, a: u64, n: usize) -> Vec<f32> {
    dev.download_u32(a, n)
        .expect("download")
        .into_iter()
        .map(f32::from_bits)
        .collect()
}
pub fn download_f64(dev: &Device, a: u64, n: usize) -> Vec<f64> {
    dev.download_u64(a, n)
        .expect("download")
        .into_iter()
        .map(f64::from_bits)
        .collect()
}
