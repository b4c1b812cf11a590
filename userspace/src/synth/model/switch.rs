//! Switch decisions that do not need the event loop: ECMP hashing and
//! WRED/ECN marking probability.

use std::net::Ipv4Addr;

/// ECMP member for a 5-tuple-ish key (what a switch hashes for RoCEv2:
/// addresses, UDP source port; the destination QP adds entropy).
pub fn ecmp_pick(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dest_qp: u32, members: usize) -> usize {
    if members <= 1 {
        return 0;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    };
    src.octets().into_iter().for_each(&mut eat);
    dst.octets().into_iter().for_each(&mut eat);
    sport.to_be_bytes().into_iter().for_each(&mut eat);
    dest_qp.to_be_bytes().into_iter().for_each(&mut eat);
    // Fold so that the low bits see every input byte.
    h ^= h >> 29;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 32;
    (h % members as u64) as usize
}

/// Whether a switch trims a request of `len` bytes joining an egress queue
/// of `depth` bytes instead of queueing it whole: it would take the queue
/// past `trim_bytes` (RoCE's `switch.trim_bytes`, UET's `uet.trim_bytes`).
pub fn trims(depth: u64, len: u32, trim_bytes: u64) -> bool {
    depth + u64::from(len) > trim_bytes
}

/// WRED/ECN marking probability for a packet joining a queue of `depth` bytes.
pub fn ecn_mark_probability(depth: u64, min: u64, max: u64, pmax: f64) -> f64 {
    if depth <= min {
        0.0
    } else if depth >= max {
        1.0
    } else {
        pmax * (depth - min) as f64 / (max - min) as f64
    }
}

/// splitmix64: a tiny deterministic PRNG (the crate has no `rand`).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1A4_F87D)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// True with probability `p` (draws nothing when `p` is 0, so turning an
    /// impairment off does not shift the rest of the random stream).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wred_ramp() {
        assert_eq!(ecn_mark_probability(100, 200, 800, 0.1), 0.0);
        assert!((ecn_mark_probability(500, 200, 800, 0.1) - 0.05).abs() < 1e-12);
        assert_eq!(ecn_mark_probability(900, 200, 800, 0.1), 1.0);
    }

    #[test]
    fn ecmp_spreads() {
        let a = Ipv4Addr::new(10, 0, 0, 1);
        let b = Ipv4Addr::new(10, 0, 1, 1);
        let mut seen = [0usize; 2];
        for sport in 0xC000..0xC100u16 {
            seen[ecmp_pick(a, b, sport, 0x200, 2)] += 1;
        }
        assert!(seen[0] > 64 && seen[1] > 64, "{seen:?}");
    }

    #[test]
    fn rng_is_deterministic() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert!((0..1000).map(|_| a.unit()).all(|u| (0.0..1.0).contains(&u)));
    }
}
