//! What only a flow that sends requests or data holds, behind one pointer
//! in every flow (docs/analysis.md, "Memory"): its sequencing, transport
//! timer, round-trip probe, longest request and DCQCN window. A flow that
//! only answers (ACKs, READ responses) holds 8 bytes for all of it.
//!
//! Every part's default is what a flow without it reads, so the part is
//! made by the first write to any of it and nothing reads differently.

use super::super::compact::{Opt32, Opt64};
use super::super::{dcqcn, rto};
use super::Flow;
use crate::transport::roce::sequencing::GoBackN;

#[derive(Clone, Debug, Default)]
pub(crate) struct Sender {
    /// Its sequencing, from its first request on (RoCE's go-back-N).
    seq: Option<GoBackN>,
    /// The requester's transport timer.
    pub(in crate::analyze) rto: rto::Timer,
    /// Its sending rate and how it answered its CNPs, from its first data
    /// packet on.
    rate: dcqcn::Rate,
    /// A first transmission awaiting its ACK, for the round-trip time:
    /// when it was sent and its PSN.
    rtt_probe_at: Opt64,
    rtt_probe_psn: u32,
    /// Shortest time from a request to the ACK covering it, at this tap.
    min_rtt: Opt64,
    /// The longest request frame (wire length: what an MTU drops), its DSCP.
    max_frame_len: u32,
    max_frame_dscp: u8,
    /// UD: the DETH's source QP of its first packet, to which the
    /// receiver's CNPs for its CE marks go (Annex A17.9.3: a CNP's DestQP
    /// is the marked packet's source QP).
    ud_src_qp: Opt32,
}

impl Flow {
    fn sender_held(&self) -> Option<&Sender> {
        self.sender.as_deref()
    }

    pub(in crate::analyze) fn sender_mut(&mut self) -> &mut Sender {
        self.sender.get_or_insert_with(Box::default)
    }

    /// Its sequencing, from its first request on.
    pub(crate) fn seq(&self) -> Option<&GoBackN> {
        self.sender_held()?.seq.as_ref()
    }

    pub(in crate::analyze) fn seq_mut(&mut self) -> Option<&mut GoBackN> {
        self.sender.as_deref_mut()?.seq.as_mut()
    }

    pub(in crate::analyze) fn start_seq(&mut self, seq: GoBackN) {
        self.sender_mut().seq = Some(seq);
    }

    /// The highest PSN its requests' ACKs acknowledged so far.
    pub(in crate::analyze) fn highest_acked(&self) -> Option<u32> {
        self.sender_held()?.rto.highest_acked()
    }

    /// The end of a packet's processing: the timer in effect when the next
    /// idle time begins (a flow without a timer has none to carry over).
    pub(in crate::analyze) fn timer_packet_done(&mut self) {
        if let Some(s) = self.sender.as_deref_mut() {
            s.rto.packet_done();
        }
    }

    /// Its DCQCN reaction (an empty one before its first data packet).
    pub(crate) fn dcqcn(&self) -> &dcqcn::Reaction {
        self.sender_held()
            .map_or(&dcqcn::NO_REACTION, |s| s.rate.reaction())
    }

    /// Its sending rate, made at its first data packet.
    pub(in crate::analyze) fn rate_mut(&mut self) -> &mut dcqcn::Rate {
        &mut self.sender_mut().rate
    }

    /// Its sending rate when it has one (before its first data packet,
    /// nothing to measure against).
    pub(in crate::analyze) fn rate_held(&mut self) -> Option<&mut dcqcn::Rate> {
        Some(&mut self.sender.as_deref_mut()?.rate)
    }

    /// The first transmission awaiting its ACK: its PSN and when it was sent.
    pub(in crate::analyze) fn rtt_probe(&self) -> Option<(u32, u64)> {
        let s = self.sender_held()?;
        s.rtt_probe_at.get().map(|t| (s.rtt_probe_psn, t))
    }

    pub(in crate::analyze) fn set_rtt_probe(&mut self, probe: Option<(u32, u64)>) {
        if probe.is_none() && self.sender.is_none() {
            return;
        }
        let (psn, at) = probe.map_or((0, Opt64::NONE), |(q, t)| (q, Opt64::some(t)));
        let s = self.sender_mut();
        s.rtt_probe_psn = psn;
        s.rtt_probe_at = at;
    }

    /// Shortest time from a request to the ACK covering it, at this tap.
    pub fn min_rtt_ns(&self) -> Option<u64> {
        self.sender_held()?.min_rtt.get()
    }

    pub(in crate::analyze) fn round_trip(&mut self, rtt: u64) {
        let s = self.sender_mut();
        s.min_rtt = Opt64::some(s.min_rtt.get().map_or(rtt, |m| m.min(rtt)));
    }

    /// The longest request frame's wire length (0 before its first request).
    pub(crate) fn max_frame_len(&self) -> u32 {
        self.sender_held().map_or(0, |s| s.max_frame_len)
    }

    /// The DSCP of its longest request frame.
    pub(in crate::analyze) fn max_frame_dscp(&self) -> u8 {
        self.sender_held().map_or(0, |s| s.max_frame_dscp)
    }

    /// A request frame of `len` bytes with DSCP `dscp`: the longest keeps.
    pub(in crate::analyze) fn request_frame(&mut self, len: u32, dscp: u8) {
        if len > self.max_frame_len() {
            let s = self.sender_mut();
            (s.max_frame_len, s.max_frame_dscp) = (len, dscp);
        }
    }

    /// UD: the DETH's source QP of its first packet.
    pub(in crate::analyze) fn ud_src_qp(&self) -> Option<u32> {
        self.sender_held()?.ud_src_qp.get()
    }

    pub(in crate::analyze) fn set_ud_src_qp(&mut self, qp: Option<u32>) {
        if qp.is_some() || self.sender.is_some() {
            self.sender_mut().ud_src_qp = Opt32::of(qp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sender's part in a 160-byte allocation (docs/analysis.md, "Memory").
    #[test]
    fn a_senders_part_stays_small() {
        assert_eq!(std::mem::size_of::<Sender>(), 152);
    }
}
