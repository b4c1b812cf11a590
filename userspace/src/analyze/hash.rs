//! The hasher of the analyzer's per-packet map lookups (and the packets
//! table's dictionaries): foldhash's fast variant.
//!
//! std's default SipHash-1-3 costs more than the rest of a flow lookup: the
//! keys here are short fixed-size tuples (interface, two addresses, a QPN)
//! looked up once or twice per packet. foldhash (without its `std`
//! feature, as hashbrown has it) seeds every map from the address-space
//! layout, randomised per process, and a per-map counter: a capture crafted
//! in advance cannot know the hash. The multiply-rotate hasher it replaces
//! drew its seed from std's `RandomState`; neither resists an attacker who
//! can watch the process.

/// Builds the hashers of a [`FastMap`] (a per-map random seed).
pub type FastState = foldhash::fast::RandomState;

/// A `HashMap` with [`FastState`].
pub type FastMap<K, V> = std::collections::HashMap<K, V, FastState>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

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
