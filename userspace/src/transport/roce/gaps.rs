//! A go-back-N flow's missing PSNs, in 24-bit ranges, until the capture
//! shows what became of each (docs/analysis.md, "Gaps"; the classes are
//! [`GapClass`]).
//!
//! Memory is bounded: at most [`MAX_RANGES`] pending ranges per flow; when a
//! new gap would exceed that, the oldest range is resolved with what is
//! known at that moment (ACKed: `capture_lost`, else `unresolved`).

use rocescope_common::proto::ib::PSN_MASK;

use super::psn;
use crate::transport::sequencing::{GapClass, Resolved};

/// Most pending gap ranges kept per flow.
pub(crate) const MAX_RANGES: usize = 64;

/// A run of missing PSNs `[lo, lo + len)`, missing since `since_ns` (when the
/// PSN after them was seen).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    lo: u32,
    len: u32,
    since_ns: u64,
    /// A sequence-error NAK named `lo`.
    nak_named: bool,
}

/// The pending missing PSNs of one request flow, in PSN order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pending {
    ranges: Vec<Range>,
}

impl Pending {
    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// PSNs `[lo, lo + len)` went missing at `now`. Returns the range evicted
    /// to make room, if any, for the caller to resolve.
    pub(crate) fn add(&mut self, lo: u32, len: u32, now: u64) -> Option<(u32, u32, bool)> {
        let evicted = if self.ranges.len() >= MAX_RANGES {
            let r = self.ranges.remove(0);
            Some((r.lo, r.len, r.nak_named))
        } else {
            None
        };
        // Gaps open at `next`, which only grows: appending keeps PSN order.
        self.ranges.push(Range {
            lo,
            len,
            since_ns: now,
            nak_named: false,
        });
        evicted
    }

    fn find(&self, q: u32) -> Option<usize> {
        self.ranges.iter().position(|r| {
            let d = psn::diff(q, r.lo);
            d >= 0 && (d as u32) < r.len
        })
    }

    /// Whether `q` is pending.
    #[cfg(test)]
    pub(crate) fn contains(&self, q: u32) -> bool {
        self.find(q).is_some()
    }

    /// Splits so that `q` starts a range of its own; returns its index.
    fn isolate(&mut self, q: u32) -> Option<usize> {
        let i = self.find(q)?;
        let r = self.ranges[i];
        let off = psn::diff(q, r.lo) as u32;
        if off == 0 {
            return Some(i);
        }
        self.ranges[i].len = off;
        self.ranges.insert(
            i + 1,
            Range {
                lo: q,
                len: r.len - off,
                since_ns: r.since_ns,
                nak_named: false,
            },
        );
        Some(i + 1)
    }

    /// A sequence-error NAK named `q`: remembered for its resolution.
    pub(crate) fn nak(&mut self, q: u32) {
        if let Some(i) = self.isolate(q) {
            self.ranges[i].nak_named = true;
        }
    }

    /// `q` was seen: takes it out of its range. Returns when it went missing
    /// and whether a NAK named it, or `None` when `q` was not pending.
    pub(crate) fn take(&mut self, q: u32) -> Option<(u64, bool)> {
        let i = self.isolate(q)?;
        let r = &mut self.ranges[i];
        let out = (r.since_ns, r.nak_named);
        r.lo = psn::add(r.lo, 1) & PSN_MASK;
        r.len -= 1;
        r.nak_named = false;
        if r.len == 0 {
            self.ranges.remove(i);
        }
        Some(out)
    }

    /// Every pending PSN serially at or before `acked`, resolved by an ACK
    /// that covered it: `nak_lost` where a NAK named it, else `capture_lost`.
    pub(crate) fn acked(&mut self, acked: u32, now: u64, out: &mut Vec<Resolved>) {
        while let Some(r) = self.ranges.first().copied() {
            let d = psn::diff(acked, r.lo);
            if d < 0 {
                break;
            }
            let covered = (d as u32 + 1).min(r.len);
            let class = if r.nak_named {
                GapClass::NakLost
            } else {
                GapClass::CaptureLost
            };
            out.push(resolved(class, r.lo, covered, r.since_ns, now));
            if covered == r.len {
                self.ranges.remove(0);
            } else {
                let f = &mut self.ranges[0];
                f.lo = psn::add(f.lo, covered);
                f.len -= covered;
                f.nak_named = false;
            }
        }
    }

    /// End of capture: whatever is left, by the last ACK state (`acked`).
    pub(crate) fn finish(&mut self, acked: Option<u32>, end: u64, out: &mut Vec<Resolved>) {
        if let Some(a) = acked {
            self.acked(a, end, out);
        }
        for r in self.ranges.drain(..) {
            let class = if r.nak_named {
                GapClass::NakLost
            } else {
                GapClass::Unresolved
            };
            out.push(resolved(class, r.lo, r.len, r.since_ns, end));
        }
    }
}

/// `[lo, lo + len)` resolved as `class` at `at_ns`.
pub(crate) fn resolved(class: GapClass, lo: u32, len: u32, since_ns: u64, at_ns: u64) -> Resolved {
    Resolved {
        class,
        lo,
        len,
        last: psn::add(lo, len.saturating_sub(1)),
        since_ns,
        at_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filled_psn_splits_its_range_and_the_rest_resolves_by_ack() {
        let mut p = Pending::default();
        assert_eq!(p.add(10, 5, 100), None); // 10..=14
        assert_eq!(p.take(12), Some((100, false)));
        assert!(p.contains(11) && p.contains(13) && !p.contains(12));
        p.nak(13);
        let mut out = Vec::new();
        p.acked(13, 0, &mut out);
        let got: Vec<(&str, u32, u32)> = out
            .iter()
            .map(|r| (r.class.as_str(), r.lo, r.len))
            .collect();
        assert_eq!(
            got,
            [("capture_lost", 10, 2), ("nak_lost", 13, 1)],
            "10 and 11 ACKed unseen; 13 was NAKed first"
        );
        let mut rest = Vec::new();
        p.finish(None, 0, &mut rest);
        assert_eq!(rest.len(), 1);
        assert_eq!(
            (rest[0].class, rest[0].lo, rest[0].len),
            (GapClass::Unresolved, 14, 1)
        );
        assert!(p.is_empty());
    }

    #[test]
    fn ranges_wrap_at_psn_2_pow_24() {
        let mut p = Pending::default();
        p.add(PSN_MASK - 1, 4, 0); // 0xFFFFFE, 0xFFFFFF, 0, 1
        assert!(p.contains(0) && p.contains(1) && p.contains(PSN_MASK));
        assert_eq!(p.take(PSN_MASK - 1), Some((0, false)));
        let mut out = Vec::new();
        p.acked(0, 0, &mut out);
        assert_eq!((out[0].lo, out[0].len), (PSN_MASK, 2));
        assert!(p.contains(1));
    }

    #[test]
    fn a_full_table_evicts_the_oldest_range() {
        let mut p = Pending::default();
        for i in 0..MAX_RANGES as u32 {
            assert_eq!(p.add(i * 10, 2, u64::from(i)), None);
        }
        assert_eq!(p.add(10_000, 1, 99), Some((0, 2, false)));
        assert!(!p.contains(0) && p.contains(10_000));
    }
}
