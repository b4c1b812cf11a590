//! Ground truth of a run, per tap (what a capture at that point holds)
//! and per connection (what the senders and responders did).
//!
//! Two kinds of per-tap counters, told apart by their doc comments:
//!
//! * the capture read literally, in the analyzer's vocabulary
//!   (docs/analysis.md), over the frames the tap recorded, the mirror's
//!   copies left out (`data_packets`, `rewinds`, `gaps`, …); here a rewind is
//!   a retransmission whose PSN does not follow the previous request's;
//! * what happened, counted from the model's own events and the mirror's
//!   own decisions, never from the frames' order (`model_*`, `tap_*`,
//!   `late`, `missing_*`, `icrc_bad`, `cut`): what the analysis should
//!   conclude.
//!
//! `connections` holds the model's counters per connection, not
//! tap-relative. docs/synth-truth.md describes every field.
//!
//! The types are here; `count` computes them from a run.

use super::bridge::CaptureOptions;
use super::fabric::{FabricStats, QpSummary, Run};
use serde::Serialize;
use std::net::Ipv4Addr;

mod count;

/// Default storm threshold: a continuous pause longer than this.
pub const STORM_NS: u64 = 200_000_000;

/// 24-bit serial PSN distance: the analyzer's own arithmetic.
pub use crate::analyze::psn::diff as psn_diff;

#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowTruth {
    pub tap: usize,
    pub iface: String,
    /// Index of the model's connection.
    pub flow: usize,
    pub src_ip: Option<Ipv4Addr>,
    pub dst_ip: Option<Ipv4Addr>,
    pub dest_qp: u32,
    pub paired_qp: u32,
    pub udp_sport: u16,
    pub data_packets: u64,
    pub payload_bytes: u64,
    pub retrans_packets: u64,
    pub rewinds: u64,
    pub rewinds_nak: u64,
    pub rewinds_rnr: u64,
    pub rewinds_timeout: u64,
    pub max_rewind_depth: u32,
    pub spurious_retrans: u64,
    pub gaps: u64,
    pub acks: u64,
    pub naks: u64,
    pub rnr_naks: u64,
    pub ce: u64,
    pub cnps: u64,
    pub corrupt: u64,
    /// Request frames here the requester sent as resends (model's view).
    pub model_retrans: u64,
    /// Request frames here that began a Go-Back-N, by the requester's reason.
    pub model_rewinds_nak: u64,
    pub model_rewinds_timeout: u64,
    /// Resends here of packets the responder had already acknowledged.
    pub model_spurious: u64,
    /// The requester's Go-Back-N rewinds of which this tap recorded at
    /// least one resent packet, by the requester's reason (equal to
    /// `model_rewinds_*` unless the mirror dropped a rewind's first packet).
    pub model_rewinds_seen_nak: u64,
    pub model_rewinds_seen_rnr: u64,
    pub model_rewinds_seen_timeout: u64,
    /// Frames of this connection (requests, responses, CNPs) the mirror
    /// should have recorded here and dropped (the tap's `drop`).
    pub tap_dropped: u64,
    /// Second copies of this connection's frames the mirror recorded here
    /// (the tap's `duplicate`); every other count of the flow leaves them out.
    pub tap_duplicates: u64,
    /// Of those, copies of request frames.
    pub tap_duplicate_requests: u64,
    /// Request frames recorded here after a frame of the connection that
    /// the requester sent after them, because the network delayed them
    /// (a `reorder` impairment upstream of this tap).
    pub late: u64,
    /// Of those, the longest time from the first frame that overtook one to
    /// the late frame itself, and the largest PSN distance from the highest
    /// PSN that overtook it.
    pub max_late_ns: u64,
    pub max_late_psns: u64,
    /// First transmissions missing here: the tap recorded a later packet of
    /// the connection before it recorded them (or never recorded them).
    /// Nothing before the first request the tap recorded counts. Each is
    /// exactly one of the five `missing_*` below; `missing_nak` overlaps.
    pub missing: u64,
    /// The mirror dropped every copy of it that passed here, and an ACK
    /// recorded here covers it: the capture lost it, the network did not.
    pub missing_tap_dropped_acked: u64,
    /// The mirror dropped its first transmission and recorded a resend.
    pub missing_tap_dropped_resent: u64,
    /// The network lost the first transmission before this tap: the tap
    /// first recorded it in a resend.
    pub missing_lost_upstream: u64,
    /// The network delayed it: the tap recorded the first transmission
    /// late (by first transmissions, the same as `late`).
    pub missing_late: u64,
    /// Neither recorded later nor covered by an ACK recorded here (the
    /// capture ended first, or the tap does not see the responses).
    pub missing_unresolved: u64,
    /// Of the missing, those the responder named in a sequence-error NAK,
    /// and of those how many are late, lost upstream, dropped by the mirror
    /// (`missing_tap_dropped_*`) and unresolved.
    pub missing_nak: u64,
    pub missing_nak_late: u64,
    pub missing_nak_lost_upstream: u64,
    pub missing_nak_tap_dropped: u64,
    pub missing_nak_unresolved: u64,
    /// RoCE frames of this connection (requests, responses, CNPs) recorded
    /// whole whose ICRC fails: a bit error upstream of this tap, a trim not
    /// `trimmed`, or every frame of a sniffer capture.
    pub icrc_bad: u64,
    /// Requests a switch trimmed before this tap, recorded here, that a NAK
    /// recorded here asked for again ([`trims_naked`]; absent when none).
    #[serde(skip_serializing_if = "super::is_zero")]
    pub trimmed: u64,
    /// Frames of this connection recorded with fewer bytes than the frame
    /// had (snaplen, or a sniffer's cut).
    pub cut: u64,
}

/// PFC pause per `(tap, src_mac, priority)`: one sender's pauses.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PfcTruth {
    pub tap: usize,
    pub iface: String,
    pub src_mac: String,
    pub priority: u8,
    pub frames: u64,
    pub xon_frames: u64,
    pub paused_ns: u64,
    /// paused_ns over the capture's duration (first to last frame).
    pub fraction: f64,
    pub max_pause_ns: u64,
    pub storms: u64,
}

/// Paused time per `(tap, priority)`, the union over every sender's pauses:
/// what `summary.json`'s `pfc` entries report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PausedTruth {
    pub tap: usize,
    pub iface: String,
    pub priority: u8,
    /// PFC frames with this priority's class-enable bit (XON included).
    pub frames: u64,
    pub xon_frames: u64,
    pub paused_ns: u64,
    /// paused_ns over the capture's duration (first to last frame).
    pub fraction: f64,
    pub storms: u64,
}

/// The capture the truth describes: the taps written, in model time
/// (a capture's timestamps are `epoch_ns` + model time).
#[derive(Clone, Debug, Default, Serialize)]
pub struct CaptureTruth {
    pub taps: Vec<usize>,
    pub epoch_ns: u64,
    pub frames: u64,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    pub duration_ns: u64,
    /// Written as a NIC's RDMA sniffer records (UDP source port 4791 and a
    /// rewritten source MAC on every RoCE frame), frames cut at
    /// `sniffer_cut` bytes (0: not cut) with the record's original length
    /// equal to what it holds.
    pub sniffer: bool,
    pub sniffer_cut: u32,
    /// Record snaplen (0: none); a cut record keeps its original length.
    pub snaplen: u32,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct TapTruth {
    pub tap: usize,
    pub iface: String,
    pub frames: u64,
    pub roce: u64,
    pub cnp: u64,
    pub pfc: u64,
    pub bytes: u64,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    /// Speed of the tapped link: PFC quanta to time.
    pub link_gbps: f64,
    /// Frames (any kind, PFC included) the mirror should have recorded and
    /// dropped; second copies it recorded.
    pub tap_dropped: u64,
    pub tap_duplicates: u64,
    /// The sum of the flows' `late`.
    pub late: u64,
    /// Records (second copies included) of RoCE frames held whole whose
    /// ICRC fails, and of frames of any kind held cut.
    pub icrc_bad: u64,
    pub cut: u64,
    /// The sum of the flows' `trimmed` (absent when none).
    #[serde(skip_serializing_if = "super::is_zero")]
    pub trimmed: u64,
}

/// One connection: what its requester and responder did, and what the
/// network did to its packets. Counted by the model, not at a tap.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ConnectionTruth {
    pub flow: usize,
    pub src_ip: Option<Ipv4Addr>,
    pub dst_ip: Option<Ipv4Addr>,
    pub requester_qpn: u32,
    pub responder_qpn: u32,
    pub udp_sport: u16,
    /// The connection's RoCE path MTU (`flows.N.mtu`, else `mtu`).
    pub mtu: u32,
    /// Requester: request packets sent, of them first transmissions and
    /// resends.
    pub packets_sent: u64,
    pub first_transmissions: u64,
    pub packets_resent: u64,
    /// Retransmission timer expiries with packets outstanding (each one
    /// rewinds to the oldest unacknowledged packet).
    pub timeouts: u64,
    /// Go-Back-N rewinds, by reason: the first resend after a timeout, a
    /// sequence-error NAK or an RNR NAK. A resend that skips forward (an
    /// ACK covered the rest) is part of the same rewind.
    pub rewinds_timeout: u64,
    pub rewinds_nak: u64,
    pub rewinds_rnr: u64,
    /// Resends of packets the responder had already received (in order or
    /// placed) when they left the requester; of packets it had already
    /// acknowledged.
    pub spurious_resends: u64,
    pub spurious_resends_acked: u64,
    pub naks_received: u64,
    /// Responder: ACKs and sequence-error NAKs sent, request packets
    /// received again (duplicates), placed out of order, discarded for a
    /// bad ICRC, and delivered in order.
    pub acks_sent: u64,
    pub naks_sent: u64,
    pub duplicates_received: u64,
    pub ooo_received: u64,
    pub corrupt_discarded: u64,
    pub delivered_packets: u64,
    /// Network: this connection's packets delayed on a longer path, hit by
    /// a bit error, lost on a link, discarded by a switch; responses the
    /// requester discarded for a bad ICRC.
    pub reordered: u64,
    pub corrupted: u64,
    pub link_drops: u64,
    pub switch_drops: u64,
    pub corrupt_responses_discarded: u64,
    /// The requester's retransmission timeout (`nic.min_rto_ns`: each
    /// expiry came exactly this long after the timer's last start), and its
    /// expiries with packets outstanding by what followed: the rewind's first
    /// resend left at the expiry instant (nothing held the requester), left
    /// later (a pause or the rate limit held it), or the timer fired again
    /// first.
    pub rto_ns: u64,
    pub timeouts_resent_at_once: u64,
    pub timeouts_resent_later: u64,
    pub timeouts_fired_again: u64,
    /// Of `link_drops`, frames longer than the link carries (`max_frame`).
    pub oversize_drops: u64,
    /// The most Go-Back-N rewinds to one packet with no ACK progress
    /// between, and that packet's PSN (null without a rewind).
    pub max_rewinds_same_psn: u64,
    pub stuck_psn: Option<u32>,
    /// The switch ports its request packets left by, in path order, as
    /// `NODE-TOWARD` (`leaf0-spine0`): where each switch's ECMP hash put
    /// the connection.
    pub requests_via: Vec<String>,
    /// The priority (PCP) and DSCP its data and ACKs were sent with
    /// (`flows.N.prio`/`dscp`, else `data_prio`/`data_dscp`), and the DSCP
    /// rewrites its frames met on the path, `NODE-TOWARD: FROM → TO`.
    pub priority: u8,
    pub dscp: u8,
    pub dscp_rewrites: Vec<String>,
    /// Its requester runs DCQCN (`nic.dcqcn.enabled`, `flows.N.dcqcn`);
    /// CNPs it received and marked packets its responder received.
    pub dcqcn: bool,
    pub cnps_received: u64,
    pub ce_received: u64,
    /// Every step of the requester's sending rate, in order: each CNP it
    /// received (`cause` `cnp`: the cut, or no change with DCQCN off) and
    /// each increase of the DCQCN timer (`timer`), with the rate it paced
    /// its packets at before and after, in Gb/s (the DCQCN rate capped by
    /// the flow's offered `gbps`).
    pub rate_steps: Vec<super::qp::RateStep>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Truth {
    pub scenario: String,
    pub seed: u64,
    pub capture: CaptureTruth,
    pub taps: Vec<TapTruth>,
    pub flows: Vec<FlowTruth>,
    pub pfc: Vec<PfcTruth>,
    pub paused: Vec<PausedTruth>,
    /// The model's own per-connection counters (not tap-relative).
    pub qps: Vec<QpSummary>,
    pub fabric: FabricStats,
    /// What each connection's requester and responder did.
    pub connections: Vec<ConnectionTruth>,
    /// Per connection and tap pair: what passed one tap and reached the
    /// other, what the network lost between them, the one-way delays.
    pub hops: Vec<super::hop_truth::HopTruth>,
    /// The PFC congestion trees: who paused whom, from the model's record
    /// of why each port paused, and which taps saw each pause.
    pub pfc_trees: super::pause_truth::PauseTrees,
    /// How the NICs reacted, per NIC as the taps name it: NAK generation
    /// and reaction latencies from the model's record of their causes.
    pub nics: Vec<super::nic_truth::NicTruth>,
    /// The switches' telemetry reports and the queue the model congested
    /// (`synth --telemetry`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<super::telemetry_truth::TelemetryTruth>,
}

impl ConnectionTruth {
    fn of(flow: usize, q: &QpSummary, rto_ns: u64) -> ConnectionTruth {
        let s = &q.stats;
        let count = |p: fn(&super::qp::TimerFire) -> bool| {
            q.timer_fires.iter().filter(|f| p(f)).count() as u64
        };
        ConnectionTruth {
            flow,
            src_ip: Some(q.src_ip),
            dst_ip: Some(q.dst_ip),
            requester_qpn: q.requester_qpn,
            responder_qpn: q.responder_qpn,
            udp_sport: q.udp_sport,
            mtu: q.mtu,
            packets_sent: s.sent_packets,
            first_transmissions: s.sent_packets - s.retrans_packets,
            packets_resent: s.retrans_packets,
            timeouts: s.timeouts,
            rewinds_timeout: s.rewinds_timeout,
            rewinds_nak: s.rewinds_nak,
            rewinds_rnr: s.rewinds_rnr,
            spurious_resends: s.spurious_received,
            spurious_resends_acked: s.spurious_retrans,
            naks_received: s.naks_received,
            acks_sent: s.acks_sent,
            naks_sent: s.naks_sent,
            duplicates_received: s.duplicate_packets,
            ooo_received: s.ooo_received,
            corrupt_discarded: s.corrupt_discarded,
            delivered_packets: s.delivered_packets,
            reordered: s.reordered,
            corrupted: s.corrupted,
            link_drops: s.link_drops,
            switch_drops: s.switch_drops,
            corrupt_responses_discarded: s.corrupt_responses_discarded,
            rto_ns,
            timeouts_resent_at_once: count(|f| f.resent_ns == Some(f.fired_ns)),
            timeouts_resent_later: count(|f| f.resent_ns.is_some_and(|r| r > f.fired_ns)),
            timeouts_fired_again: count(|f| f.resent_ns.is_none()),
            oversize_drops: s.oversize_drops,
            max_rewinds_same_psn: q.max_rewind_run.map_or(0, |r| r.1),
            stuck_psn: q.max_rewind_run.map(|r| r.0),
            requests_via: q.requests_via.clone(),
            priority: q.priority,
            dscp: q.dscp,
            dscp_rewrites: q.dscp_rewrites.clone(),
            dcqcn: q.dcqcn,
            cnps_received: s.cnps_received,
            ce_received: s.ce_received,
            rate_steps: q.rate_log.clone(),
        }
    }
}

impl Truth {
    /// The truth of a capture holding every tap of `run`.
    pub fn of(run: &Run) -> Truth {
        Truth::of_taps(run, None)
    }

    /// The truth of a capture holding the taps `only` (`None`: every tap),
    /// written whole.
    pub fn of_taps(run: &Run, only: Option<&[usize]>) -> Truth {
        Truth::of_capture(
            run,
            &CaptureOptions {
                taps: only.map(<[usize]>::to_vec),
                ..CaptureOptions::default()
            },
        )
    }

    /// The flow truth of connection `flow` at tap `tap`.
    pub fn flow(&self, tap: usize, flow: usize) -> Option<&FlowTruth> {
        self.flows.iter().find(|f| f.tap == tap && f.flow == flow)
    }

    /// Paused time at a tap (union over senders, summed over priorities),
    /// as a fraction of the capture's duration.
    pub fn pause_fraction(&self, tap: usize) -> f64 {
        self.paused
            .iter()
            .filter(|p| p.tap == tap)
            .map(|p| p.fraction)
            .sum()
    }
}
