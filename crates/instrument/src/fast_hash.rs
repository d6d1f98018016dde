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

/// A hash of `words` (and `seed`) for keys of a dozen words or so, looked
/// up at every point: words are multiplied in pairs, each pair's 128-bit
/// product folded to 64 bits, and the folds summed. The multiplies do not
/// wait for each other, where [`FastHasher`]'s one per word, each on the
/// last's result, made a chain as long as the key.
pub(crate) fn hash_words(seed: u64, words: &[u64]) -> u64 {
    use std::hash::Hasher;
    const MIX: [u64; 2] = [0xa076_1d64_78bd_642f, 0xe703_7ed1_a0b4_28db];
    let fold = |a: u64, b: u64| {
        let p = u128::from(a) * u128::from(b);
        p as u64 ^ (p >> 64) as u64
    };
    let mut sum = fold(seed ^ MIX[0], words.len() as u64 ^ MIX[1]);
    let mut pairs = words.chunks_exact(2);
    // (The pair's position is mixed in: the same pair elsewhere differs.)
    for (k, p) in (&mut pairs).enumerate() {
        sum = sum.wrapping_add(fold(p[0] ^ MIX[0], p[1] ^ MIX[1] ^ k as u64));
    }
    if let [last] = pairs.remainder() {
        sum = sum.wrapping_add(fold(*last ^ MIX[0], MIX[1]));
    }
    FastHasher(sum).finish()
}

#[cfg(test)]
mod tests {
    use super::hash_words;

    #[test]
    fn word_hashes_tell_apart_sets_a_bit_or_a_place_apart() {
        // Every set of 12 words with one bit on, pairs swapped, and a
        // different seed: all distinct (a hash blind to some bit, position
        // or the seed would repeat).
        let mut seen = std::collections::HashSet::new();
        for seed in 0..3 {
            for bit in 0..12 * 64 {
                let mut w = [0u64; 12];
                w[bit / 64] = 1 << (bit % 64);
                assert!(seen.insert(hash_words(seed, &w)), "seed {seed} bit {bit}");
            }
            let w: Vec<u64> = (1..=12).collect();
            let mut swapped = w.clone();
            swapped.swap(0, 2);
            swapped.swap(1, 3);
            assert!(seen.insert(hash_words(seed, &w)));
            assert!(seen.insert(hash_words(seed, &swapped)));
            assert!(seen.insert(hash_words(seed, &w[..11])));
        }
    }
}
