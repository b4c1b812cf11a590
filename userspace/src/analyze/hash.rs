//! A fast hasher for the analyzer's per-packet map lookups.
//!
//! std's default SipHash-1-3 costs more than the rest of a flow lookup: the
//! keys here are short fixed-size tuples (interface, two addresses, a QPN)
//! looked up once or twice per packet. This is a multiply-rotate hash in the
//! style of rustc's FxHash, seeded per map from std's `RandomState` so that a
//! crafted capture cannot pick colliding keys in advance.
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

const K: u64 = 0x517c_c1b7_2722_0a95;

/// Builds [`FastHasher`]s with a per-map random seed.
#[derive(Clone, Copy, Debug)]
pub struct FastState {
    seed: u64,
}

impl Default for FastState {
    fn default() -> Self {
        Self {
            seed: RandomState::new().hash_one(0x5eed_u64),
        }
    }
}

impl BuildHasher for FastState {
    type Hasher = FastHasher;
    #[inline]
    fn build_hasher(&self) -> FastHasher {
        FastHasher(self.seed)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct FastHasher(u64);

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // A multiply only carries low bits upwards: finish with a full
        // avalanche (MurmurHash3's fmix64) so that every bit of the key
        // reaches the low bits (bucket index, cache slot) and the top 7
        // (hashbrown's control byte).
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// A `HashMap` with [`FastState`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, FastState>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_hash_equal_and_maps_work() {
        let s = FastState::default();
        let k = (3u16, [1u8; 16], [2u8; 16], 0x11u32);
        assert_eq!(s.hash_one(k), s.hash_one(k));
        assert_ne!(
            s.hash_one(k),
            s.hash_one((3u16, [1u8; 16], [2u8; 16], 0x12u32))
        );
        let mut m: FastMap<(u16, [u8; 16], [u8; 16], u32), usize> = FastMap::default();
        for i in 0..10_000u32 {
            m.insert((0, [i as u8; 16], [0; 16], i), i as usize);
        }
        assert_eq!(m.len(), 10_000);
        assert_eq!(m.get(&(0, [7; 16], [0; 16], 7)), Some(&7));
        // IPv4-mapped addresses differing in the last octet spread over the low bits.
        let slots: std::collections::HashSet<u64> = (0..64u8)
            .map(|i| {
                let mut a = [0u8; 16];
                a[10] = 0xff;
                a[11] = 0xff;
                a[12] = 10;
                a[15] = i;
                s.hash_one(a) % 256
            })
            .collect();
        assert!(slots.len() > 40, "{} distinct slots of 256", slots.len());
    }
}
