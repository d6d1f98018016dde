//! Hashing for symbol-name tables. Names in large code objects are long
//! mangled C++ names (100-200 bytes in librocsparse), where the standard
//! SipHash costs most of a lookup. This hasher takes 8 bytes per step
//! (rotate, xor, multiply by an odd constant) and starts from a per-table
//! random seed, so the layout differs from run to run.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// Odd 64-bit multiplier with well-mixed bits (from the golden ratio's
/// fractional part, made odd).
const K: u64 = 0x9e37_79b9_7f4a_7c15;

#[derive(Clone, Copy)]
pub struct NameHasher(u64);

impl NameHasher {
    #[inline]
    fn step(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for NameHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.step(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.step(u64::from_le_bytes(w));
        }
    }

    #[inline]
    fn write_u8(&mut self, b: u8) {
        self.step(u64::from(b));
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.step(v);
    }

    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.step(v as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // Fold the high bits (best mixed by the multiply) into the low ones
        // the table indexes by.
        self.0 ^ (self.0 >> 29)
    }
}

/// Builds [`NameHasher`]s from one random seed per table.
#[derive(Clone, Copy)]
pub struct Names {
    seed: u64,
}

impl Default for Names {
    fn default() -> Self {
        Names {
            seed: RandomState::new().hash_one(0x1a7_u64) | 1,
        }
    }
}

impl BuildHasher for Names {
    type Hasher = NameHasher;
    #[inline]
    fn build_hasher(&self) -> NameHasher {
        NameHasher(self.seed)
    }
}

pub type NameMap<V> = std::collections::HashMap<String, V, Names>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_names_hash_equal_and_near_names_differ() {
        let b = Names::default();
        let name = "_ZN9rocsparse13csrmv_generalILj256ELj64EfEEvPKiS2_PKT1_S5_S5_PS3_21rocsparse_index_base_";
        assert_eq!(b.hash_one(name), b.hash_one(String::from(name)));
        // Every one-byte change and every truncation changes the hash.
        let mut seen = std::collections::HashSet::new();
        seen.insert(b.hash_one(name));
        for i in 0..name.len() {
            let mut v = name.as_bytes().to_vec();
            v[i] ^= 1;
            assert!(
                seen.insert(b.hash_one(String::from_utf8(v).unwrap())),
                "flip at {i}"
            );
            assert!(seen.insert(b.hash_one(&name[..i])), "prefix of {i}");
        }
    }

    #[test]
    fn a_map_finds_what_it_holds() {
        let mut m: NameMap<usize> = NameMap::default();
        for i in 0..5000 {
            m.insert(format!("kernel_{i}_with_a_long_mangled_suffix"), i);
        }
        for i in 0..5000 {
            assert_eq!(
                m.get(format!("kernel_{i}_with_a_long_mangled_suffix").as_str()),
                Some(&i)
            );
        }
        assert_eq!(m.get("kernel_5000_with_a_long_mangled_suffix"), None);
    }
}
