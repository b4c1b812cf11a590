//! Output rows: what the analyzer hands the tables and the report
//! (`docs/tables.md` has every column).

use std::collections::BTreeMap;

use serde::Serialize;

use rocescope_common::proto::ib::transport;

use super::flows::Flow;
use super::fmt::iface_name;
use super::{dups, gaps, rto, tree};

/// What `packets.parquet` needs for one record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// The flow the packet belongs to (for a CNP: the request flow it is
    /// attributed to, when known).
    pub flow_id: Option<u32>,
    /// Whether a sequence-analysed request packet was a retransmission;
    /// null for everything else.
    pub retrans: Option<bool>,
    /// A mirror copy of a frame the tap had just recorded (see [`dups`]).
    pub mirror_copy: bool,
    /// The ICRC fails because a sniffer rewrote the frame, not because it
    /// was corrupted: `icrc_ok` is null (see "ICRC" in `docs/analysis.md`).
    pub icrc_unknown: bool,
}

/// A row of `events.parquet`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    pub ts_ns: u64,
    pub iface: u16,
    pub flow_id: Option<u32>,
    /// `rewind`, `gap`, `nak`, `rnr_nak`, `cnp`, `pfc_pause`, `pfc_storm`.
    pub kind: &'static str,
    pub psn: Option<u32>,
    pub depth: Option<u32>,
    /// For rewinds: `nak`, `rnr` or `timeout`.
    pub trigger: Option<&'static str>,
    pub idle_us: Option<f64>,
    pub detail: String,
}

/// A row of `timeline.parquet`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimelineRow {
    pub flow_id: u32,
    pub bin_start_ns: u64,
    pub bin_ns: u64,
    pub packets: u64,
    pub bytes: u64,
    pub retrans_packets: u64,
    pub ce: u64,
    pub cnps: u64,
    pub gbps: f64,
    pub goodput_gbps: f64,
    pub paused_ns: u64,
}

/// A row of `pfc.parquet`: one merged pause interval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PfcInterval {
    pub iface: u16,
    pub src_mac: [u8; 6],
    pub priority: u8,
    pub start_ns: u64,
    pub end_ns: u64,
    pub frames: u64,
    /// `xon`, `expiry` or `capture_end`.
    pub ended_by: &'static str,
}

/// A row of `flows.parquet`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlowRow {
    pub flow_id: u32,
    pub iface: u16,
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub dest_qp: u32,
    pub paired_qp: Option<u32>,
    /// 1 (GRH over Ethernet) or 2 (UDP), from the flow's first packet.
    pub roce_version: Option<u8>,
    pub udp_sport: Option<u16>,
    pub pcp: Option<u8>,
    pub dscp: Option<u8>,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    pub packets: u64,
    pub bytes: u64,
    pub data_packets: u64,
    pub payload_bytes: u64,
    pub retrans_packets: u64,
    pub retrans_rate: f64,
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
    pub gbps: f64,
    pub goodput_gbps: f64,
    pub max_idle_us: f64,
    /// Timeout rewinds with evidence that the resent packets had been
    /// delayed, not lost (see "Ghost retransmissions").
    pub rewinds_timeout_ghost: u64,
    /// Missing PSNs by what became of them (see [`gaps`]).
    pub gap_late: u64,
    pub gap_lost_before_tap: u64,
    pub gap_nak_lost: u64,
    pub gap_capture_lost: u64,
    pub gap_unresolved: u64,
    /// The latest of the late PSNs: how long after it went missing (when the
    /// PSN after it was seen) it arrived, and how far behind the highest PSN
    /// seen by then.
    pub late_max_us: Option<f64>,
    pub late_max_psns: Option<u32>,
    /// Frames whose ICRC failed (null on a sniffer-rewritten tap).
    pub icrc_errors: Option<u64>,
    /// Mirror copies of the flow's frames (not counted anywhere else).
    pub mirror_copies: u64,
    /// Wireshark display filter showing the flow's frames, and the Decode
    /// As mapping it needs ([`super::wireshark`]).
    pub display_filter: String,
    pub decode_as: String,
    /// The NIC's retransmission timeout measured from the flow's timeout
    /// rewinds (see [`rto`]): rewinds no pause held up, the shortest and
    /// longest wait, the IB exponent T nearest to the shortest; rewinds a
    /// pause held up, and the bounds they put on the timeout.
    pub nic_timeout_samples: u64,
    pub nic_timeout_us: Option<f64>,
    pub nic_timeout_max_us: Option<f64>,
    pub nic_timeout_exponent: Option<u8>,
    pub nic_timeout_bounded: u64,
    pub nic_timeout_lower_us: Option<f64>,
    pub nic_timeout_upper_us: Option<f64>,
    /// The most rewinds to one PSN with no ACK progress between, and that
    /// PSN when they make a livelock (3 or more; see `livelock`).
    pub max_rewinds_one_psn: u64,
    pub livelock_psn: Option<u32>,
    /// How the sender's rate answered its CNPs (see "DCQCN reaction"): CNPs
    /// it slowed down after, the mean and longest time from the CNP to the
    /// first packet at the lower rate, the mean time from a first drop back
    /// to the rate before; CNPs after which its rate did not drop.
    pub dcqcn_reactions: u64,
    pub dcqcn_reaction_us: Option<f64>,
    pub dcqcn_reaction_max_us: Option<f64>,
    pub dcqcn_recovery_us: Option<f64>,
    pub dcqcn_cnps_without_reaction: u64,
    /// The transport service of the flow's first packet (`RC`, `UC`, `RD`,
    /// `UD`, `XRC`; null when unknown: reserved opcodes, live summaries).
    pub service: Option<&'static str>,
    /// `ib` for native InfiniBand, `roce` otherwise (the first packet's).
    pub link: &'static str,
    /// Packets with BECN set.
    pub becn: u64,
}

/// Records seen, per kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FrameCounts {
    pub total: u64,
    pub roce: u64,
    pub cnp: u64,
    pub pfc: u64,
    /// 802.3x PAUSE (not PFC).
    pub pause: u64,
    pub malformed: u64,
    /// Of the records above, mirror copies (see [`dups`]).
    pub mirror_copies: u64,
    /// RoCE frames cut short of their IP length (by a snap length, a sniffer
    /// or an ERSPAN truncation): their ICRC cannot be checked.
    pub cut: u64,
}

/// Sums over all flows.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    pub flows: u64,
    /// Flows with sequence-analysed request packets.
    pub request_flows: u64,
    /// Flows with response packets.
    pub response_flows: u64,
    /// Request flows with a known partner.
    pub paired_flows: u64,
    pub packets: u64,
    pub bytes: u64,
    pub data_packets: u64,
    pub payload_bytes: u64,
    pub retrans_packets: u64,
    pub retrans_rate: f64,
    pub rewinds: u64,
    pub rewinds_nak: u64,
    pub rewinds_rnr: u64,
    pub rewinds_timeout: u64,
    pub spurious_retrans: u64,
    pub gaps: u64,
    pub acks: u64,
    pub naks: u64,
    pub rnr_naks: u64,
    pub ce: u64,
    /// CNPs attributed to a flow.
    pub cnps: u64,
    /// CNPs no request flow could be found for.
    pub cnps_unattributed: u64,
    pub pfc_intervals: u64,
    pub pfc_storms: u64,
    pub rewinds_timeout_ghost: u64,
    /// Missing PSNs by resolution.
    pub gaps_resolved: gaps::GapCounts,
    pub icrc_errors: u64,
    pub mirror_copies: u64,
}

/// CE → CNP reaction time over all flows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reaction {
    pub samples: u64,
    pub min_us: f64,
    pub mean_us: f64,
    pub max_us: f64,
}

/// One `(iface, priority)` of `summary.json`'s `pfc`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PfcSummary {
    /// The interface's index (names in `Summary::ifaces`).
    #[serde(rename = "iface_index")]
    pub iface: u16,
    /// The interface's name, as in the tables' `iface` columns.
    #[serde(rename = "iface")]
    pub iface_name: String,
    pub priority: u8,
    pub frames: u64,
    pub xon_frames: u64,
    pub paused_ns: u64,
    pub fraction: f64,
    pub storms: u64,
}

/// One diagnosis.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub id: &'static str,
    /// `critical`, `warning` or `info`.
    pub severity: &'static str,
    /// How much of the capture it concerns, in [0, 1]: the share of the
    /// traffic or of the time affected, defined per finding (docs/analysis.md,
    /// "Findings"). Findings of one severity are ranked by it.
    pub impact: f64,
    pub title: String,
    pub detail: String,
    pub recommendation: String,
    pub flows: Vec<u32>,
    /// The finding's numbers and recommended settings for a program to
    /// act on, by name (docs/report.md lists them per finding), e.g.
    /// `recommended_timeout_exponent` for ghost retransmissions.
    pub params: BTreeMap<&'static str, serde_json::Value>,
    /// Its frames in Wireshark, filled once every finding is made.
    #[serde(flatten)]
    pub wireshark: Option<super::wireshark::Handoff>,
}

/// `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub first_ts_ns: Option<u64>,
    pub last_ts_ns: Option<u64>,
    pub duration_ns: u64,
    pub frames: FrameCounts,
    /// Interface names given through [`Analyzer::set_iface_name`].
    pub ifaces: BTreeMap<u16, String>,
    pub link_speed_bps: u64,
    pub bin_ns: u64,
    pub storm_ns: u64,
    /// The run's `--dscp-map`: priority by DSCP (64 entries), `None` for
    /// the default `DSCP >> 3`. Notebooks derive a flow's priority with it.
    pub dscp_to_priority: Option<Vec<u8>>,
    pub totals: Totals,
    pub ce_to_cnp: Option<Reaction>,
    pub pfc: Vec<PfcSummary>,
    /// Per tap (interface): what the capture itself did.
    pub taps: Vec<TapSummary>,
    /// Facts about the capture that limit what it can show, in words.
    pub capture_facts: Vec<String>,
    /// The PFC congestion trees: who paused whom (see [`tree`]).
    pub pfc_trees: Vec<tree::PauseTree>,
    /// Per tap pair with matched frames: its clock offset (see [`super::hops`]).
    pub clock_offsets: Vec<super::hops::ClockOffset>,
    /// Cross-tap matching: null with one tap.
    pub matching: Option<MatchingSummary>,
    /// Per sender with timeout rewinds: its NIC's retransmission timeout
    /// (see [`rto`]).
    pub nic_timeouts: Vec<rto::NicTimeout>,
    pub findings: Vec<Finding>,
}

/// `summary.json`'s `matching`: how the cross-tap matching went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MatchingSummary {
    pub window_ns: u64,
    /// Frames more than a window out of time order: not matched.
    pub late_frames: u64,
    /// Most frame keys held at once (the window's memory).
    pub peak_keys: usize,
    /// Rows of `hops.parquet`.
    pub hops: usize,
}

/// One tap (capture interface) of `summary.json`'s `taps`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TapSummary {
    #[serde(rename = "iface_index")]
    pub iface: u16,
    #[serde(rename = "iface")]
    pub iface_name: String,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    /// The speed PFC quanta were timed at on this tap.
    pub link_speed_bps: u64,
    /// Mirror copies this tap recorded.
    pub duplicates: u64,
    pub duplicate_gaps: Option<dups::TapDuplicates>,
    /// Missing PSNs the responder acknowledged: frames the tap missed.
    pub capture_lost: u64,
    /// RoCE frames with an ICRC checked, and of them failing.
    pub icrc_checked: u64,
    pub icrc_failed: u64,
    /// Every RoCE frame came from UDP port 4791 and failed its ICRC: a NIC's
    /// RDMA sniffer rewrote the headers (ICRC results are unknown here).
    pub sniffer: bool,
    /// The capture's own counters (pcapng Interface Statistics Block):
    /// frames dropped by the interface and by the capture host.
    pub isb_ifdrop: Option<u64>,
    pub isb_osdrop: Option<u64>,
}

impl Summary {
    /// The interface's name, or `if<N>`.
    pub fn iface_name(&self, iface: u16) -> String {
        iface_name(&self.ifaces, iface)
    }
}

/// Everything [`Analyzer::finish`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    pub flows: Vec<FlowRow>,
    pub pfc: Vec<PfcInterval>,
    /// `hops.parquet` (empty with one tap).
    pub hops: Vec<super::hops::HopRow>,
    pub summary: Summary,
}

pub(super) fn flow_row(f: &Flow) -> FlowRow {
    let dur = f.last_ts - f.first_ts;
    let w = f.rto.waits;
    let measured = w.samples > 0;
    let us = |ns: u64| ns as f64 / 1000.0;
    let rate = |bytes: u64| {
        if dur == 0 {
            0.0
        } else {
            bytes as f64 * 8.0 / dur as f64
        }
    };
    FlowRow {
        flow_id: f.id,
        iface: f.iface,
        src_ip: f.src_ip,
        dst_ip: f.dst_ip,
        dest_qp: f.dest_qp,
        paired_qp: f.paired_qp,
        roce_version: f.roce_version,
        udp_sport: f.udp_sport,
        pcp: f.pcp,
        dscp: f.dscp,
        first_ts_ns: f.first_ts,
        last_ts_ns: f.last_ts,
        packets: f.packets,
        bytes: f.bytes,
        data_packets: f.data_packets,
        payload_bytes: f.payload_bytes,
        retrans_packets: f.retrans,
        retrans_rate: ratio(f.retrans, f.data_packets),
        rewinds: f.rewinds,
        rewinds_nak: f.rewinds_nak,
        rewinds_rnr: f.rewinds_rnr,
        rewinds_timeout: f.rewinds_timeout,
        max_rewind_depth: f.max_depth,
        spurious_retrans: f.spurious,
        gaps: f.gaps,
        acks: f.acks,
        naks: f.naks,
        rnr_naks: f.rnr_naks,
        ce: f.ce,
        cnps: f.cnps,
        gbps: rate(f.bytes),
        goodput_gbps: rate(f.goodput_bytes),
        max_idle_us: f.max_idle_ns as f64 / 1000.0,
        rewinds_timeout_ghost: f.rewinds_timeout_ghost,
        gap_late: f.gap_counts.late,
        gap_lost_before_tap: f.gap_counts.lost_before_tap,
        gap_nak_lost: f.gap_counts.nak_lost,
        gap_capture_lost: f.gap_counts.capture_lost,
        gap_unresolved: f.gap_counts.unresolved,
        late_max_us: f.late_max_ns.map(|n| n as f64 / 1000.0),
        late_max_psns: f.late_max_ns.map(|_| f.late_max_psns),
        icrc_errors: (!f.sniffer_tap).then_some(f.icrc_errors),
        mirror_copies: f.mirror_copies,
        display_filter: String::new(),
        decode_as: String::new(),
        nic_timeout_samples: w.samples,
        nic_timeout_us: measured.then(|| us(w.min_ns)),
        nic_timeout_max_us: measured.then(|| us(w.max_ns)),
        nic_timeout_exponent: measured.then(|| rto::nearest_exponent(w.min_ns)),
        nic_timeout_bounded: w.bounded,
        nic_timeout_lower_us: w.bounds().map(|b| us(b.0)),
        nic_timeout_upper_us: w.bounds().map(|b| us(b.1)),
        max_rewinds_one_psn: f.livelock.worst.map_or(0, |r| r.rewinds),
        livelock_psn: f.livelock.livelock().map(|r| r.psn),
        dcqcn_reactions: f.dcqcn.reactions,
        dcqcn_reaction_us: f.dcqcn.reaction_us(),
        dcqcn_reaction_max_us: (f.dcqcn.reactions > 0).then(|| us(f.dcqcn.reaction_max_ns)),
        dcqcn_recovery_us: f.dcqcn.recovery_us(),
        dcqcn_cnps_without_reaction: f.dcqcn.without,
        service: f.service.and_then(transport::name),
        link: if f.ib_link { "ib" } else { "roce" },
        becn: f.becn,
    }
}

pub(super) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}
