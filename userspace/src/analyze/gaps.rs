//! What became of the PSNs a tap missed (`docs/analysis.md`, "Gaps"): the
//! counts per flow and per capture.
//!
//! A transport's sequencing (`crate::transport::sequencing`; RoCE's is
//! `transport::roce::sequencing`) keeps a flow's missing PSNs until the
//! capture shows what happened to each of them; every missing PSN ends in
//! exactly one [`GapClass`]:
//!
//! * `late`: the original arrived later with no Go-Back-N resend covering
//!   it (reordering): not a retransmission, not a rewind;
//! * `lost_before_tap`: it first appeared in a rewind's resend;
//! * `nak_lost`: a sequence-error NAK named it;
//! * `capture_lost`: never seen, but an ACK on the paired flow covered it
//!   with no NAK and no resend: the responder got it, the tap missed it;
//! * `unresolved`: none of these by the end of the capture (e.g. the reverse
//!   direction is not in the capture): unknown, which is not loss; the
//!   summary says it as a capture fact.

use serde::Serialize;

pub use crate::transport::sequencing::GapClass;

/// Missing PSNs by resolution, for a flow or a capture.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GapCounts {
    pub late: u64,
    pub lost_before_tap: u64,
    pub nak_lost: u64,
    pub capture_lost: u64,
    pub unresolved: u64,
}

impl GapCounts {
    pub(crate) fn add(&mut self, class: GapClass, n: u64) {
        let slot = match class {
            GapClass::Late => &mut self.late,
            GapClass::LostBeforeTap => &mut self.lost_before_tap,
            GapClass::NakLost => &mut self.nak_lost,
            GapClass::CaptureLost => &mut self.capture_lost,
            GapClass::Unresolved => &mut self.unresolved,
        };
        *slot += n;
    }

    pub(crate) fn sum(&mut self, o: &GapCounts) {
        self.late += o.late;
        self.lost_before_tap += o.lost_before_tap;
        self.nak_lost += o.nak_lost;
        self.capture_lost += o.capture_lost;
        self.unresolved += o.unresolved;
    }

    /// Missing PSNs the capture shows were lost in the network: first seen
    /// in a resend, or named by a NAK. An `unresolved` PSN is not among
    /// them: its fate is unknown (`docs/analysis.md`, "Gaps").
    pub(crate) fn lost(&self) -> u64 {
        self.lost_before_tap + self.nak_lost
    }
}
