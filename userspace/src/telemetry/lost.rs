//! Telemetry reports lost before the capture, from the group headers'
//! sequence numbers: per reporting (node id, hw_id), as the Telemetry
//! Report spec v2.0 numbers them (§3.2, "can be used to detect loss of
//! telemetry reports"). A capture fact: reports the collector's tap never
//! saw, so the hops they carried are missing from `telemetry.parquet`.
use std::collections::BTreeMap;

use rocescope_common::wire::report::field::group::SEQUENCE_MASK;

/// Half the sequence space: a step forward shorter than this is new
/// reports (the ones between lost); a longer one is an older report
/// arriving late, or a duplicate.
const FORWARD: u32 = 1 << 21;
const _: () = assert!(FORWARD * 2 == SEQUENCE_MASK + 1);

/// One reporting switch's count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SwitchReports {
    pub switch_id: u32,
    pub hw_id: u8,
    /// Report packets captured.
    pub reports: u64,
    /// Sequence numbers skipped between them: reports lost before the tap.
    pub lost: u64,
    /// Reports that came late (behind the highest number seen) or twice.
    pub out_of_order: u64,
    #[serde(skip)]
    last: u32,
}

/// Every reporting switch's count, by (node id, hw_id). Memory grows with
/// the switches, never with the reports.
#[derive(Clone, Debug, Default)]
pub struct LostReports {
    switches: BTreeMap<(u32, u8), SwitchReports>,
}

impl LostReports {
    /// A report packet from `switch_id`/`hw_id` with sequence number `seq`.
    pub fn report(&mut self, switch_id: u32, hw_id: u8, seq: u32) {
        let seq = seq & SEQUENCE_MASK;
        let s = self
            .switches
            .entry((switch_id, hw_id))
            .or_insert(SwitchReports {
                switch_id,
                hw_id,
                last: seq.wrapping_sub(1) & SEQUENCE_MASK,
                ..SwitchReports::default()
            });
        s.reports += 1;
        let step = seq.wrapping_sub(s.last) & SEQUENCE_MASK;
        if step == 0 || step >= FORWARD {
            s.out_of_order += 1;
            return;
        }
        s.lost += u64::from(step - 1);
        s.last = seq;
    }

    /// Per switch, in (node id, hw_id) order.
    pub fn switches(&self) -> Vec<SwitchReports> {
        self.switches.values().copied().collect()
    }

    /// Reports lost over every switch.
    pub fn lost(&self) -> u64 {
        self.switches.values().map(|s| s.lost).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gaps are lost reports, a late or repeated number is not, and the
    /// 22-bit number wraps.
    #[test]
    fn gaps_in_sequence_numbers_are_lost_reports() {
        let mut l = LostReports::default();
        for seq in [10, 11, 14, 13, 14, 15] {
            l.report(7, 1, seq);
        }
        // Wrapping: 0x3FFFFE, 0x3FFFFF, then 1 (0 lost).
        for seq in [SEQUENCE_MASK - 1, SEQUENCE_MASK, 1] {
            l.report(9, 0, seq);
        }
        let s = l.switches();
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].switch_id, s[0].hw_id), (7, 1));
        assert_eq!((s[0].reports, s[0].lost, s[0].out_of_order), (6, 2, 2));
        assert_eq!((s[1].switch_id, s[1].reports, s[1].lost), (9, 3, 1));
        assert_eq!(l.lost(), 3);
    }
}
