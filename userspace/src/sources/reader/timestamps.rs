//! Timestamps: an interface's scale (`if_tsresol`, `if_tsoffset`) and a
//! raw timestamp scaled to ns since the epoch.
pub(super) const NS_PER_SEC: u64 = 1_000_000_000;

/// Per-interface timestamp scale.
#[derive(Debug, Clone, Copy)]
pub(super) struct TsScale {
    /// Timestamp units per second.
    pub(super) units: u64,
    /// if_tsoffset, in seconds.
    pub(super) offset_s: i64,
}

/// `ts` in `units` per second, plus an offset in seconds, as ns since the
/// epoch; `None` when that is before 1970 or past the u64 ns range (2554).
pub(super) fn scale_ts(ts: u64, scale: TsScale) -> Option<u64> {
    let units = scale.units.max(1);
    // The usual resolutions (ns, µs, ms) divide a second: no 128-bit division.
    let ns = if NS_PER_SEC.is_multiple_of(units) {
        i128::from(ts) * i128::from(NS_PER_SEC / units)
    } else {
        (u128::from(ts) * u128::from(NS_PER_SEC) / u128::from(units)) as i128
    } + i128::from(scale.offset_s) * i128::from(NS_PER_SEC);
    u64::try_from(ns).ok()
}

/// Units per second of an `if_tsresol` byte: 10^n, or 2^n with the top bit.
pub(super) fn ts_units(resol: u8) -> Option<u64> {
    if resol & 0x80 == 0 {
        10u64.checked_pow(u32::from(resol))
    } else {
        1u64.checked_shl(u32::from(resol & 0x7f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The multiply-only path gives what the 128-bit division gives, for
    /// decimal and binary resolutions, offsets and timestamps near the limits.
    #[test]
    fn scaled_timestamps_match_the_exact_division() {
        let exact = |ts: u64, s: TsScale| {
            let ns = (u128::from(ts) * u128::from(NS_PER_SEC) / u128::from(s.units.max(1))) as i128
                + i128::from(s.offset_s) * i128::from(NS_PER_SEC);
            u64::try_from(ns).ok()
        };
        let units =
            (0..=9)
                .chain([12, 19])
                .filter_map(ts_units)
                .chain([1 << 20, 1 << 30, 1 << 63, 0]);
        for units in units {
            for offset_s in [0, 1, -1, 1_700_000_000, i64::MIN, i64::MAX] {
                for ts in [0, 1, 999, 1_700_000_000_123_456_789, u64::MAX / 3, u64::MAX] {
                    let s = TsScale { units, offset_s };
                    assert_eq!(
                        scale_ts(ts, s),
                        exact(ts, s),
                        "{ts} at {units}/s + {offset_s} s"
                    );
                }
            }
        }
    }
}
