//! A fast hasher for the engine's small integer keys.

/// A multiply-rotate hasher for small integer keys (instruction forms,
/// register sets, instruction words): SipHash, the default, was most of
/// the time of a call at every instruction. Nothing hashed with it is
/// chosen by an attacker to collide (at worst, a slow kernel to instrument).
#[derive(Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn finish(&self) -> u64 {
        // SplitMix64's finalizer: the multiply-rotate rounds leave the low
        // bits (the table's bucket index) depending on few input bits, and
        // keys alike in them collided, each probe comparing whole keys.
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn write(&mut self, bytes: &[u8]) {
        // Eight bytes at a time (slices of integers come here whole).
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
        for b in chunks.remainder() {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }
}

pub(crate) type FastHash = std::hash::BuildHasherDefault<FastHasher>;
