//! 24-bit serial arithmetic on PSNs (IBA Vol. 1 §9.7.1): PSNs wrap at 2^24,
//! and of two PSNs the one less than 2^23 ahead is "after".

use rocescope_common::proto::ib::{PSN_MASK, PSN_MODULUS};

/// Half the PSN space: the largest distance that still has a direction.
const HALF: u32 = PSN_MODULUS / 2;

/// `a - b` as a signed distance in (-2^23, 2^23]: positive when `a` is after `b`.
pub fn diff(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) & PSN_MASK;
    if d > HALF {
        d as i32 - PSN_MODULUS as i32
    } else {
        d as i32
    }
}

/// `psn + n`, wrapped to 24 bits.
pub fn add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

/// `a` is serially after `b`.
pub fn after(a: u32, b: u32) -> bool {
    diff(a, b) > 0
}

/// The serially later of two PSNs.
pub fn max(a: u32, b: u32) -> u32 {
    if after(b, a) { b } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_2_pow_24() {
        assert_eq!(diff(0, PSN_MASK), 1);
        assert_eq!(diff(PSN_MASK, 0), -1);
        assert_eq!(diff(5, 5), 0);
        assert_eq!(diff(2, 0xFF_FFFE), 4);
        assert_eq!(add(PSN_MASK, 3), 2);
        assert!(diff(0xFF_FFF0, 3) < 0);
        assert!(after(3, 0xFF_FFF0));
        assert_eq!(max(0xFF_FFF0, 3), 3);
        assert_eq!(max(3, 0xFF_FFF0), 3);
        assert_eq!(diff(HALF, 0), HALF as i32);
    }
}
