//! RC queue-pair state: the requester (Go-Back-N, retransmission timer,
//! DCQCN reaction point) and the responder (PSN check, NAK once per gap,
//! coalesced ACKs, CNP notification point) of one connection.
//!
//! Internally packets are numbered by a 64-bit index from the connection's
//! start; the wire PSN is `(start_psn + index) mod 2^24`.

use super::scenario::FlowCfg;
use super::spec::Trigger;
use crate::proto::ib::{PSN_MASK, op};
use serde::Serialize;
use std::collections::BTreeMap;

/// What the model itself did on one connection (not tap-relative).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QpStats {
    pub sent_packets: u64,
    pub retrans_packets: u64,
    pub rewinds_nak: u64,
    pub rewinds_rnr: u64,
    pub rewinds_timeout: u64,
    /// Resends of packets the responder had already acknowledged.
    pub spurious_retrans: u64,
    pub timeouts: u64,
    pub naks_received: u64,
    pub cnps_received: u64,
    pub delivered_packets: u64,
    /// Payload the responder accepted in order (what the application got).
    pub delivered_bytes: u64,
    pub duplicate_packets: u64,
    pub corrupt_discarded: u64,
    /// Trimmed requests the responder received (and discarded).
    #[serde(skip_serializing_if = "super::is_zero")]
    pub trimmed_received: u64,
    pub acks_sent: u64,
    pub naks_sent: u64,
    pub cnps_sent: u64,
    pub ce_received: u64,
    /// Packets of this connection discarded by a switch (queue limit).
    pub switch_drops: u64,
    /// Requests of this connection a switch trimmed.
    #[serde(skip_serializing_if = "super::is_zero")]
    pub trimmed: u64,
    /// Packets of this connection lost on a link.
    pub link_drops: u64,
    /// Of those, frames longer than a link carries (`max_frame`).
    pub oversize_drops: u64,
    pub messages_completed: u64,
    pub done_ns: Option<u64>,
    pub min_rate_gbps: f64,
    pub final_rate_gbps: f64,
    /// Resends of packets the responder had already received (in order or
    /// placed out of order) when the resend left the requester.
    pub spurious_received: u64,
    /// Packets of this connection (requests and responses) the network
    /// delayed on a longer path (a link's `reorder` impairment).
    pub reordered: u64,
    /// Request packets the responder placed out of order (`ooo_tolerant`).
    pub ooo_received: u64,
    /// Packets of this connection a bit error hit on a link.
    pub corrupted: u64,
    /// Responses the requester discarded for a bad ICRC.
    pub corrupt_responses_discarded: u64,
}

/// One expiry of the retransmission timer with packets outstanding: when
/// the timer that fired had (re)started, when it fired, and when the first
/// resend of the rewind it began left the NIC (`None` when the timer fired
/// again before the requester could send: a pause held it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerFire {
    pub armed_ns: u64,
    pub fired_ns: u64,
    pub resent_ns: Option<u64>,
}

/// A step of a requester's sending rate (the DCQCN rate, capped by the
/// flow's offered `gbps`): a CNP it received (a cut, or no change with
/// DCQCN off) or a DCQCN timer's increase.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RateStep {
    pub at_ns: u64,
    /// `cnp` or `timer`.
    pub cause: &'static str,
    pub before_gbps: f64,
    pub after_gbps: f64,
}

/// A request packet the responder placed ahead of the expected PSN.
#[derive(Clone, Copy, Debug)]
pub struct Placed {
    pub payload: u32,
    /// Last packet of its message (the MSN counts it once delivered).
    pub last: bool,
    pub ack_req: bool,
}

#[derive(Clone, Debug)]
pub struct Qp {
    pub cfg: FlowCfg,
    pub src_host: usize,
    pub dst_host: usize,
    pub requester_qpn: u32,
    pub responder_qpn: u32,
    pub sport: u16,
    /// The connection's RoCE path MTU.
    pub mtu: u32,
    /// Packets per message.
    pub ppm: u64,
    /// Total packets to write (None: unbounded).
    pub total: Option<u64>,

    // Requester.
    pub snd_nxt: u64,
    pub snd_una: u64,
    pub snd_max: u64,
    pub next_tx_ns: u64,
    pub pending_rewind: Option<Trigger>,
    pub rto_armed: bool,
    pub rto_epoch: u64,
    /// When the retransmission timer last (re)started.
    pub rto_armed_ns: u64,
    pub timer_fires: Vec<TimerFire>,
    /// Rewinds to one packet since the last ACK progress: `(index, count)`,
    /// and the most of them.
    pub rewind_run: Option<(u64, u64)>,
    pub max_rewind_run: Option<(u64, u64)>,
    pub rate_gbps: f64,
    pub target_gbps: f64,
    pub alpha: f64,
    pub stage: u32,
    pub cnp_in_period: bool,
    pub dcqcn_timer: bool,
    /// Every change of the requester's sending rate and every CNP it got.
    pub rate_log: Vec<RateStep>,

    // Responder.
    pub epsn: u64,
    pub nak_sent: bool,
    pub in_dup_run: bool,
    pub since_ack: u32,
    pub last_cnp_ns: Option<u64>,
    /// One past the highest index the responder has acknowledged.
    pub resp_acked: u64,
    pub msn: u64,
    /// Packets placed out of order, by index (`ooo_tolerant` only).
    pub ooo: BTreeMap<u64, Placed>,
    /// Indices the responder named in sequence-error NAKs, in order.
    pub nak_named: Vec<u64>,
    /// What made each of the responder's sequence-error NAKs: `(send_seq of
    /// the packet out of sequence it answered, the NAK's resp_seq)`.
    pub nak_causes: Vec<(u64, u64)>,
    /// Each NAK the responder sent for a trimmed request it expected next:
    /// `(the index it named, the NAK's resp_seq)` (in neither `nak_named`
    /// nor `nak_causes`: nothing was missing or out of sequence).
    pub trim_naks: Vec<(u64, u64)>,
    /// The NAK (its resp_seq) the pending rewind answers.
    pub pending_nak: Option<u64>,
    /// The requester's first resend after each NAK: `(the NAK's resp_seq,
    /// the resend's send_seq)`.
    pub nak_resends: Vec<(u64, u64)>,
    /// The reason of each Go-Back-N the requester made, in order.
    pub rewinds: Vec<Trigger>,

    pub stats: QpStats,
}

impl Qp {
    pub fn new(
        cfg: FlowCfg,
        mtu: u32,
        line_gbps: f64,
        requester_qpn: u32,
        responder_qpn: u32,
        sport: u16,
    ) -> Qp {
        let ppm = (cfg.msg_bytes.max(1) as u64).div_ceil(mtu as u64);
        Qp {
            src_host: cfg.src,
            dst_host: cfg.dst,
            requester_qpn,
            responder_qpn,
            sport,
            mtu,
            ppm,
            total: cfg.messages.map(|m| m * ppm),
            next_tx_ns: cfg.start_ns,
            cfg,
            snd_nxt: 0,
            snd_una: 0,
            snd_max: 0,
            pending_rewind: None,
            rto_armed: false,
            rto_epoch: 0,
            rto_armed_ns: 0,
            timer_fires: vec![],
            rewind_run: None,
            max_rewind_run: None,
            rate_gbps: line_gbps,
            target_gbps: line_gbps,
            alpha: 1.0,
            stage: 0,
            cnp_in_period: false,
            dcqcn_timer: false,
            rate_log: vec![],
            epsn: 0,
            nak_sent: false,
            in_dup_run: false,
            since_ack: 0,
            last_cnp_ns: None,
            resp_acked: 0,
            msn: 0,
            ooo: BTreeMap::new(),
            nak_named: vec![],
            nak_causes: vec![],
            trim_naks: vec![],
            pending_nak: None,
            nak_resends: vec![],
            rewinds: vec![],
            stats: QpStats {
                min_rate_gbps: line_gbps,
                ..QpStats::default()
            },
        }
    }

    /// The rate the requester paces its packets at.
    pub fn send_gbps(&self) -> f64 {
        self.rate_gbps.min(self.cfg.gbps.unwrap_or(f64::INFINITY))
    }

    pub fn psn(&self, index: u64) -> u32 {
        ((self.cfg.start_psn as u64 + index) & PSN_MASK as u64) as u32
    }

    /// Index of `psn` relative to `base` (serial arithmetic: within half the
    /// PSN space before or after).
    pub fn index_near(&self, psn: u32, base: u64) -> i64 {
        let diff = psn.wrapping_sub(self.psn(base)) & PSN_MASK;
        if diff < (1 << 23) {
            base as i64 + diff as i64
        } else {
            base as i64 - ((1i64 << 24) - diff as i64)
        }
    }

    pub fn has_data(&self) -> bool {
        self.total.is_none_or(|t| self.snd_nxt < t)
    }

    pub fn done(&self) -> bool {
        self.total.is_some_and(|t| self.snd_una >= t)
    }

    /// RC RDMA WRITE opcode and payload length of packet `index`.
    pub fn write_packet(&self, index: u64, mtu: u32) -> (u8, u32) {
        let k = index % self.ppm;
        let last = k == self.ppm - 1;
        let payload = if last {
            self.cfg.msg_bytes - (self.ppm as u32 - 1) * mtu
        } else {
            mtu
        };
        let opcode = if self.ppm == 1 {
            op::WRITE_ONLY
        } else if k == 0 {
            op::WRITE_FIRST
        } else if last {
            op::WRITE_LAST
        } else {
            op::WRITE_MIDDLE
        };
        (opcode, payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_wraps_and_maps_back() {
        let cfg = FlowCfg {
            start_psn: PSN_MASK - 2,
            ..FlowCfg::new(0, 0, 4096 * 3 + 10, Some(2))
        };
        let q = Qp::new(cfg, 4096, 100.0, 0x100, 0x200, 0xC000);
        assert_eq!(q.ppm, 4);
        assert_eq!(q.total, Some(8));
        assert_eq!(q.psn(0), PSN_MASK - 2);
        assert_eq!(q.psn(3), 0);
        assert_eq!(q.index_near(1, 0), 4);
        assert_eq!(q.index_near(PSN_MASK, 4), 2);
        assert_eq!(q.write_packet(0, 4096), (op::WRITE_FIRST, 4096));
        assert_eq!(q.write_packet(1, 4096), (op::WRITE_MIDDLE, 4096));
        assert_eq!(q.write_packet(3, 4096), (op::WRITE_LAST, 10));
    }
}
