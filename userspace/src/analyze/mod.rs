//! The streaming analyzer: [`PacketRecord`]s in capture order in, per-flow
//! statistics, events, PFC pause intervals, per-time-bin timelines and
//! findings out.
//!
//! Memory grows with the number of flows and PFC intervals, never with the
//! number of packets: events and timeline rows go to a [`Sink`] as soon as
//! they are final; flows, PFC intervals and the summary come from
//! [`Analyzer::finish`].
//!
//! Every definition — flows, pairing, retransmissions, rewinds, ghost
//! retransmissions, gaps and their resolution, mirror duplicates, ICRC and
//! sniffer captures, PFC, victims, CNPs, findings — is written once, in
//! `docs/analysis.md`; the columns are in `docs/tables.md`. The rooms:
//! [`gaps`] (what became of missing PSNs), [`dups`] (mirror copies), `pfc`
//! (pause intervals), [`rto`] (the NIC's retransmission timeout), `livelock` (the same PSN
//! resent over and over), `unanswered` (requests nothing answers), `mtu`
//! (path MTU mismatches), `findings`
//! (the diagnosis), `report` (the text).

pub mod dups;
mod findings;
pub mod gaps;
pub mod hash;
mod livelock;
mod mtu;
mod pfc;
pub mod psn;
mod report;
pub mod rto;
#[cfg(test)]
mod tests;
pub mod tree;
mod unanswered;

use std::collections::BTreeMap;

use hash::FastMap;
use std::fmt::Write as _;

use crate::addr::{Ip, Mac};

use rocescope_common::proto;
use rocescope_common::proto::ib::{self, PSN_MASK, aeth, op, transport};
use rocescope_common::summary::{FlowDelta, delta_flags};
use rocescope_common::{Kind, PacketRecord, flags};
use serde::Serialize;

pub(crate) use findings::{sort_by_severity, timeout_exponent};
use pfc::{Cover, PfcTracker};
pub use report::{
    flow_json, frames_line, more_findings, render_findings, render_json, render_text,
    shown_findings,
};

/// Analysis parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Link speed the PFC quanta are timed at (default 100 Gb/s).
    pub link_speed_bps: u64,
    /// A continuous pause longer than this is a storm (default 200 ms).
    pub storm_ns: u64,
    /// Timeline bin width (default 100 µs).
    pub bin_ns: u64,
    /// DSCP → priority for untagged traffic (default: DSCP >> 3).
    pub dscp_to_priority: Option<[u8; 64]>,
    /// Link speed of particular taps, by interface name (`--link-speed
    /// TAP=400G`); others use `link_speed_bps`.
    pub tap_link_speed_bps: Vec<(String, u64)>,
    /// A BTH frame recorded again at the same tap within this time is a
    /// mirror copy (see [`dups`]); 0 turns the detection off.
    pub dup_window_ns: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            link_speed_bps: 100_000_000_000,
            storm_ns: 200_000_000,
            bin_ns: 100_000,
            dscp_to_priority: None,
            tap_link_speed_bps: Vec::new(),
            dup_window_ns: dups::DEFAULT_WINDOW_NS,
        }
    }
}

/// Receives events and timeline rows as soon as they are final.
pub trait Sink {
    fn event(&mut self, e: &Event);
    fn timeline(&mut self, row: &TimelineRow);
}

/// Collects everything in memory (tests, small captures).
#[derive(Debug, Default)]
pub struct VecSink {
    pub events: Vec<Event>,
    pub timeline: Vec<TimelineRow>,
}

impl Sink for VecSink {
    fn event(&mut self, e: &Event) {
        self.events.push(e.clone());
    }
    fn timeline(&mut self, row: &TimelineRow) {
        self.timeline.push(row.clone());
    }
}

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
    /// As mapping it needs ([`crate::wireshark`]).
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub id: &'static str,
    /// `critical`, `warning` or `info`.
    pub severity: &'static str,
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
    pub wireshark: Option<crate::wireshark::Handoff>,
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
    /// Per sender with timeout rewinds: its NIC's retransmission timeout
    /// (see [`rto`]).
    pub nic_timeouts: Vec<rto::NicTimeout>,
    pub findings: Vec<Finding>,
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
    pub summary: Summary,
}

/// `(iface, src_ip, dst_ip, dest_qp)`.
pub type FlowKey = (u16, [u8; 16], [u8; 16], u32);
type HostPair = (u16, [u8; 16], [u8; 16]);

/// Most outstanding NAKs kept per response flow.
const MAX_PENDING_NAKS: usize = 16;
/// Shortest idle time that can make a stall without a rewind.
const STALL_MIN_NS: u64 = 10_000;
/// Smallest IB path MTU.
const MIN_MTU: u32 = 256;

/// Request-sequence state of a flow.
#[derive(Clone, Copy, Debug)]
struct Seq {
    first_psn: u32,
    /// One past the highest PSN carried.
    next: u32,
    /// One past the highest PSN an un-sized READ may have consumed (≥ next).
    slack_end: u32,
    /// PSNs that may follow the previous packet: `[prev_lo, prev_hi]`.
    prev_lo: u32,
    prev_hi: u32,
    /// The previous request packet's PSN: a rewind goes back to or before it.
    prev_psn: u32,
    /// The previous request packet was part of a resend (a retransmission or
    /// a missing PSN filled by one): a forward step continues that resend.
    resending: bool,
}

/// A missing PSN that arrived, not yet known to be a late original or the
/// first packet of a resend (the next request packet tells).
#[derive(Clone, Copy, Debug)]
struct Fill {
    psn: u32,
    ts: u64,
    /// When it went missing (the PSN after it was seen).
    since: u64,
    /// How far behind the highest PSN seen it arrived.
    psns_late: u32,
}

/// Consecutive request packets that filled gaps, awaiting the packet that
/// tells whether they began a resend.
#[derive(Clone, Debug)]
struct FillRun {
    /// What a rewind starting at the first fill would record.
    idle: u64,
    paused: u64,
    cover: Option<Cover>,
    next: u32,
    acked: Option<u32>,
    fills: Vec<Fill>,
}

/// Most fills one run holds; a longer run is decided as late.
const MAX_FILLS: usize = 256;

/// A timeout rewind awaiting the evidence that tells delay from loss.
#[derive(Clone, Copy, Debug)]
struct TimeoutRewind {
    ts: u64,
    psn: u32,
    /// Already ACKed when resent.
    spurious: bool,
    /// The idle time before it overlapped a pause of the flow's priority on
    /// its tap.
    cover: Option<Cover>,
    /// The rewound PSN was never seen before: lost upstream, not delayed.
    lost: bool,
    /// First ACK covering the rewound PSN after the rewind.
    acked_at: Option<u64>,
}

/// Most timeout rewinds awaiting evidence per flow; the oldest is decided
/// with what is known when a newer one needs room.
const MAX_TIMEOUTS_PENDING: usize = 64;

/// What a rewind records.
#[derive(Clone, Copy, Debug)]
struct Rewind {
    /// The PSN resent.
    q: u32,
    /// `next` before it: the rewind's depth is `next - q`.
    next: u32,
    idle: u64,
    paused: u64,
    cover: Option<Cover>,
    acked: Option<u32>,
    nak: Option<PendingNak>,
    /// `q` had never been seen before.
    lost: bool,
}

#[derive(Clone, Copy, Debug)]
struct PendingNak {
    psn: u32,
    ts: u64,
    rnr: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct Bin {
    start: u64,
    packets: u64,
    bytes: u64,
    retrans: u64,
    ce: u64,
    cnps: u64,
    goodput_bytes: u64,
}

/// The rewind a finding quotes for a flow.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RewindNote {
    pub ts: u64,
    pub psn: u32,
    pub depth: u32,
    pub trigger: &'static str,
    pub idle_ns: u64,
    /// Of the `depth` rewound PSNs, how many were already ACKed.
    pub acked: u32,
    /// Pause time within the idle window.
    pub paused_ns: u64,
    pub cover: Option<Cover>,
}

impl RewindNote {
    fn rank(&self) -> (bool, bool, u32, std::cmp::Reverse<u64>) {
        (
            self.trigger == "timeout" && self.paused_ns > 0,
            self.trigger == "timeout",
            self.depth,
            std::cmp::Reverse(self.ts),
        )
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Flow {
    pub id: u32,
    pub iface: u16,
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub dest_qp: u32,
    paired: Option<usize>,
    pub paired_qp: Option<u32>,
    pub udp_sport: Option<u16>,
    pub pcp: Option<u8>,
    pub dscp: Option<u8>,
    pub priority: Option<u8>,
    pub first_ts: u64,
    pub last_ts: u64,
    pub packets: u64,
    pub bytes: u64,
    pub data_packets: u64,
    pub payload_bytes: u64,
    pub goodput_bytes: u64,
    pub retrans: u64,
    pub rewinds: u64,
    pub rewinds_nak: u64,
    pub rewinds_rnr: u64,
    pub rewinds_timeout: u64,
    pub max_depth: u32,
    pub spurious: u64,
    pub gaps: u64,
    /// PSNs missing over all gaps.
    pub gap_psns: u64,
    pub acks: u64,
    pub naks: u64,
    pub rnr_naks: u64,
    pub ce: u64,
    pub responses: u64,
    pub max_idle_ns: u64,
    mtu: u32,
    seq: Option<Seq>,
    /// Highest PSN ACKed by the AETHs this flow carries.
    acked: Option<u32>,
    pending: Vec<PendingNak>,
    ce_unanswered: Option<u64>,
    bin: Option<Bin>,
    /// Stalls overlapping a pause of the flow's priority.
    pub stalls: u64,
    pub stall_paused_ns: u64,
    /// Timeout rewinds whose idle time overlapped a pause.
    pub timeout_rewinds_paused: u64,
    pub timeout_idle_min_ns: u64,
    pub timeout_idle_max_ns: u64,
    pub note: Option<RewindNote>,
    /// CNPs resolved at the end.
    pub cnps: u64,
    pending_gaps: gaps::Pending,
    pub gap_counts: gaps::GapCounts,
    pub late_max_ns: Option<u64>,
    pub late_max_psns: u32,
    fills: Option<FillRun>,
    timeouts: Vec<TimeoutRewind>,
    pub rewinds_timeout_ghost: u64,
    /// Timeout rewinds of PSNs the tap had seen and nothing showed delayed.
    pub rewinds_timeout_unexplained: u64,
    /// A first transmission awaiting its ACK, for the round-trip time.
    rtt_probe: Option<(u32, u64)>,
    /// Shortest time from a request to the ACK covering it, at this tap.
    pub min_rtt_ns: Option<u64>,
    /// When the flow last carried a NAK or RNR NAK.
    last_nak_ts: Option<u64>,
    /// The source MAC of its first packet.
    pub src_mac: [u8; 6],
    /// Frames whose ICRC failed.
    pub icrc_errors: u64,
    /// The flow's tap is a sniffer's rewritten capture: ICRCs say nothing.
    pub sniffer_tap: bool,
    pub mirror_copies: u64,
    /// The requester's transport timer and what its timeout rewinds measured.
    pub rto: rto::Timer,
    /// Rewinds to the same PSN without ACK progress.
    pub livelock: livelock::Livelock,
    /// The longest request frame (wire length): what an MTU drops.
    pub max_frame_len: u32,
}

impl Flow {
    fn new(id: u32, key: FlowKey, ts: u64) -> Self {
        Flow {
            id,
            iface: key.0,
            src_ip: key.1,
            dst_ip: key.2,
            dest_qp: key.3,
            paired: None,
            paired_qp: None,
            udp_sport: None,
            pcp: None,
            dscp: None,
            priority: None,
            first_ts: ts,
            last_ts: ts,
            packets: 0,
            bytes: 0,
            data_packets: 0,
            payload_bytes: 0,
            goodput_bytes: 0,
            retrans: 0,
            rewinds: 0,
            rewinds_nak: 0,
            rewinds_rnr: 0,
            rewinds_timeout: 0,
            max_depth: 0,
            spurious: 0,
            gaps: 0,
            gap_psns: 0,
            acks: 0,
            naks: 0,
            rnr_naks: 0,
            ce: 0,
            responses: 0,
            max_idle_ns: 0,
            mtu: 0,
            seq: None,
            acked: None,
            pending: Vec::new(),
            ce_unanswered: None,
            bin: None,
            stalls: 0,
            stall_paused_ns: 0,
            timeout_rewinds_paused: 0,
            timeout_idle_min_ns: u64::MAX,
            timeout_idle_max_ns: 0,
            note: None,
            cnps: 0,
            pending_gaps: gaps::Pending::default(),
            gap_counts: gaps::GapCounts::default(),
            late_max_ns: None,
            late_max_psns: 0,
            fills: None,
            timeouts: Vec::new(),
            rewinds_timeout_ghost: 0,
            rewinds_timeout_unexplained: 0,
            rtt_probe: None,
            min_rtt_ns: None,
            last_nak_ts: None,
            src_mac: [0; 6],
            icrc_errors: 0,
            sniffer_tap: false,
            mirror_copies: 0,
            rto: rto::Timer::default(),
            livelock: livelock::Livelock::default(),
            max_frame_len: 0,
        }
    }

    fn key(&self) -> FlowKey {
        (self.iface, self.src_ip, self.dst_ip, self.dest_qp)
    }

    /// PSNs `[lo, hi)` the flow's requests have covered (READ slack included).
    fn sent_range(&self) -> Option<(u32, u32)> {
        self.seq
            .map(|s| (s.first_psn, psn::max(s.next, s.slack_end)))
    }
}

/// The streaming analyzer.
pub struct Analyzer {
    config: Config,
    flows: Vec<Flow>,
    by_key: FastMap<FlowKey, usize>,
    by_hosts: FastMap<HostPair, Vec<usize>>,
    /// CNPs per `(iface, CNP src, CNP dst, CNP dest QP)`.
    cnp_counts: FastMap<FlowKey, u64>,
    /// CM-learned pairings: request flow key → requester QP.
    hints: FastMap<FlowKey, u32>,
    /// CM REQs awaiting their REP: (iface, active ip, passive ip, comm id) → active QP.
    cm_requests: FastMap<(u16, [u8; 16], [u8; 16], u32), u32>,
    pfc: PfcTracker,
    frames: FrameCounts,
    first_ts: Option<u64>,
    last_ts: u64,
    /// CE → CNP reaction times: (samples, sum, min, max) in ns.
    reactions: (u64, u64, u64, u64),
    ifaces: BTreeMap<u16, String>,
    /// Pairings made since [`Analyzer::take_pairings`] last ran, when asked
    /// for with [`Analyzer::log_pairings`] (the live tap's summary mode).
    pairings: Option<Vec<(FlowKey, FlowKey)>>,
    dups: dups::MirrorDups,
    /// Per interface index: first and last record, ICRC tallies.
    taps: Vec<TapState>,
    /// The pauses that covered ghost timeout rewinds: `(iface, priority,
    /// sender, start)`, for the timeout advice.
    ghost_covers: std::collections::BTreeSet<(u16, u8, [u8; 6], u64)>,
    /// MACs that sent CNPs (end hosts, for the congestion tree).
    cnp_macs: std::collections::BTreeSet<[u8; 6]>,
}

/// What the analyzer tallies per tap (interface).
#[derive(Clone, Copy, Debug, Default)]
struct TapState {
    /// The capture file it is an interface of, and its index there.
    capture: u32,
    local: u32,
    /// The capture's own drop counters (pcapng ISB), when it wrote them.
    isb_ifdrop: Option<u64>,
    isb_osdrop: Option<u64>,
    seen: bool,
    first_ts: u64,
    last_ts: u64,
    icrc_checked: u64,
    icrc_failed: u64,
    /// Failing frames from UDP source port 4791 (a sniffer's rewrite).
    failed_from_4791: u64,
    /// RoCE frames from another UDP source port.
    other_sport: u64,
}

impl TapState {
    /// A frame on a tap that, so far, looks like a sniffer's: every RoCE
    /// frame from UDP port 4791 with a failing ICRC.
    fn sniffer_like(&self) -> bool {
        self.other_sport == 0
            && self.failed_from_4791 > 0
            && self.failed_from_4791 == self.icrc_failed
    }

    /// The verdict at the end: (almost) every checked frame failed, and
    /// every one came from port 4791.
    fn is_sniffer(&self) -> bool {
        self.other_sport == 0
            && self.icrc_checked > 0
            && self.failed_from_4791 * 100 >= self.icrc_checked * 95
    }
}

impl Analyzer {
    pub fn new(config: Config) -> Self {
        let pfc = PfcTracker::new(config.link_speed_bps, config.storm_ns);
        let mut config = config;
        config.bin_ns = config.bin_ns.max(1);
        let dups = dups::MirrorDups::new(config.dup_window_ns);
        Analyzer {
            config,
            flows: Vec::new(),
            by_key: FastMap::default(),
            by_hosts: FastMap::default(),
            cnp_counts: FastMap::default(),
            hints: FastMap::default(),
            cm_requests: FastMap::default(),
            pfc,
            frames: FrameCounts::default(),
            first_ts: None,
            last_ts: 0,
            reactions: (0, 0, u64::MAX, 0),
            ifaces: BTreeMap::new(),
            pairings: None,
            dups,
            taps: Vec::new(),
            ghost_covers: Default::default(),
            cnp_macs: Default::default(),
        }
    }

    /// Interface `iface` belongs to capture file `capture`: its pauses end
    /// when that capture ends (by default every interface is of capture 0).
    pub fn set_iface_capture(&mut self, iface: u16, capture: u32, local: u32) {
        let t = self.tap_mut(iface);
        t.capture = capture;
        t.local = local;
    }

    /// The capture of interface `iface` says it dropped frames: `ifdrop` by
    /// the interface, `osdrop` by the capture host (pcapng interface
    /// statistics, cumulative).
    pub fn set_tap_drops(&mut self, iface: u16, ifdrop: Option<u64>, osdrop: Option<u64>) {
        let t = self.tap_mut(iface);
        t.isb_ifdrop = ifdrop.or(t.isb_ifdrop);
        t.isb_osdrop = osdrop.or(t.isb_osdrop);
    }

    fn tap_mut(&mut self, iface: u16) -> &mut TapState {
        let i = usize::from(iface);
        if self.taps.len() <= i {
            self.taps.resize(i + 1, TapState::default());
        }
        &mut self.taps[i]
    }

    /// A RoCE frame's ICRC on its tap: counts it, and says whether the
    /// failure is a sniffer's rewrite rather than corruption.
    fn icrc(&mut self, rec: &PacketRecord) -> (bool, bool) {
        let checked = rec.has(flags::ICRC_CHECKED);
        let failed = checked && !rec.has(flags::ICRC_OK);
        let from_4791 = rec.has(flags::HAS_UDP) && rec.udp_sport == proto::udp::ROCEV2_PORT;
        let t = self.tap_mut(rec.iface);
        if rec.has(flags::HAS_UDP) && !from_4791 {
            t.other_sport += 1;
        }
        if checked {
            t.icrc_checked += 1;
        }
        if failed {
            t.icrc_failed += 1;
            t.failed_from_4791 += u64::from(from_4791);
        }
        let rewritten = failed && t.sniffer_like();
        (failed && !rewritten, rewritten)
    }

    /// Names an interface index for the summary and the report.
    pub fn set_iface_name(&mut self, iface: u16, name: &str) {
        self.ifaces.insert(iface, name.to_string());
        if let Some(&(_, bps)) = self
            .config
            .tap_link_speed_bps
            .iter()
            .find(|(n, _)| n == name)
        {
            self.pfc.set_speed(iface, bps);
        }
    }

    /// A CM REQ or REP seen in `rec` (a QP1 MAD): once a REP answers a REQ,
    /// both directions of the connection are paired exactly.
    pub fn cm(&mut self, rec: &PacketRecord, msg: crate::decode::cm::CmMessage) {
        use crate::decode::cm::CmMessage;
        match msg {
            CmMessage::Req {
                local_comm_id,
                local_qpn,
                ..
            } => {
                self.cm_requests.insert(
                    (rec.iface, rec.src_ip, rec.dst_ip, local_comm_id),
                    local_qpn,
                );
            }
            CmMessage::Rep {
                remote_comm_id,
                local_qpn: passive_qp,
                ..
            } => {
                let key = (rec.iface, rec.dst_ip, rec.src_ip, remote_comm_id);
                if let Some(active_qp) = self.cm_requests.remove(&key) {
                    let (active, passive) = (rec.dst_ip, rec.src_ip);
                    self.pair_hint(rec.iface, active, active_qp, passive, passive_qp);
                    self.pair_hint(rec.iface, passive, passive_qp, active, active_qp);
                }
            }
        }
    }

    /// Hook for connection management (CM REQ/REP MADs name both QPs of a
    /// connection): the requests from `requester_ip` to `responder_qp` on
    /// `responder_ip` are answered on `requester_qp`. Pairs the two flows now
    /// or when they appear.
    pub fn pair_hint(
        &mut self,
        iface: u16,
        requester_ip: [u8; 16],
        requester_qp: u32,
        responder_ip: [u8; 16],
        responder_qp: u32,
    ) {
        let rkey = (iface, requester_ip, responder_ip, responder_qp);
        self.hints.insert(rkey, requester_qp);
        if let Some(&r) = self.by_key.get(&rkey) {
            self.apply_hint(r);
        }
    }

    fn apply_hint(&mut self, r: usize) {
        let Some(&qp) = self.hints.get(&self.flows[r].key()) else {
            return;
        };
        if self.flows[r].paired.is_some() {
            return;
        }
        self.flows[r].paired_qp = Some(qp);
        let f = &self.flows[r];
        let skey = (f.iface, f.dst_ip, f.src_ip, qp);
        if let Some(&s) = self.by_key.get(&skey)
            && self.flows[s].paired.is_none()
        {
            self.link(r, s);
        }
    }

    /// From now on, remember every pairing for [`Analyzer::take_pairings`].
    pub fn log_pairings(&mut self) {
        self.pairings.get_or_insert_with(Vec::new);
    }

    /// The pairings (request flow, response flow) made since the last call.
    pub fn take_pairings(&mut self) -> Vec<(FlowKey, FlowKey)> {
        self.pairings
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    fn link(&mut self, r: usize, s: usize) {
        if let Some(log) = &mut self.pairings {
            log.push((self.flows[r].key(), self.flows[s].key()));
        }
        let mtu = self.flows[r].mtu.max(self.flows[s].mtu);
        let (rq, sq) = (self.flows[r].dest_qp, self.flows[s].dest_qp);
        let fr = &mut self.flows[r];
        fr.paired = Some(s);
        fr.paired_qp = Some(sq);
        fr.mtu = mtu;
        let fs = &mut self.flows[s];
        fs.paired = Some(r);
        fs.paired_qp = Some(rq);
        fs.mtu = mtu;
    }

    fn flow_index(&mut self, key: FlowKey, ts: u64) -> usize {
        if let Some(&i) = self.by_key.get(&key) {
            return i;
        }
        let i = self.flows.len();
        self.flows.push(Flow::new(i as u32, key, ts));
        self.by_key.insert(key, i);
        self.by_hosts
            .entry((key.0, key.1, key.2))
            .or_default()
            .push(i);
        // A hint may name this flow as the request or the response side.
        self.apply_hint(i);
        let reverse: Vec<FlowKey> = self
            .hints
            .iter()
            .filter(|(k, qp)| k.0 == key.0 && k.1 == key.2 && k.2 == key.1 && **qp == key.3)
            .map(|(k, _)| *k)
            .collect();
        for k in reverse {
            if let Some(&r) = self.by_key.get(&k) {
                self.apply_hint(r);
            }
        }
        i
    }

    /// One record (kind != Other), in capture order.
    pub fn push(&mut self, rec: &PacketRecord, sink: &mut impl Sink) -> Verdict {
        let kind = rec.kind();
        let now = rec.ts_ns;
        match kind {
            Kind::Other => return Verdict::default(),
            Kind::Roce => self.frames.roce += 1,
            Kind::Cnp => self.frames.cnp += 1,
            Kind::Pfc => self.frames.pfc += 1,
            Kind::Pause => self.frames.pause += 1,
            Kind::Malformed => self.frames.malformed += 1,
        }
        self.frames.total += 1;
        if self.first_ts.is_none() {
            self.first_ts = Some(now);
        }
        self.last_ts = self.last_ts.max(now);
        let t = self.tap_mut(rec.iface);
        if !t.seen {
            t.seen = true;
            t.first_ts = now;
        }
        t.last_ts = t.last_ts.max(now);
        if rec.has(flags::CUT) {
            self.frames.cut += 1;
        }
        match kind {
            Kind::Pfc if rec.has(flags::HAS_PFC) => {
                self.pfc.frame(rec, sink);
                Verdict::default()
            }
            Kind::Cnp if rec.has(flags::HAS_BTH) => self.cnp(rec, sink),
            Kind::Roce if rec.has(flags::HAS_BTH) => self.roce(rec, sink),
            _ => Verdict::default(),
        }
    }

    /// Frames of one flow the live tap counted in the kernel instead of
    /// sending them as records (`live --mode summary`; see
    /// `rocescope_common::summary`), in their place in the record order.
    ///
    /// They are what [`Analyzer::push`] would have made of those frames,
    /// which the kernel only counts when that is a plain sum: in-order
    /// requests (never retransmissions: payload is goodput; `next` moves to
    /// the delta's `next_psn`) and plain ACKs (their highest PSN raises the
    /// flow's `acked`). The delta also carries the flow's path MTU and its
    /// partner's highest ACKed PSN and MTU, which the analyzer may not have
    /// seen yet (they came in frames that were only counted).
    ///
    /// Approximate, by design: the timeline spreads the frames evenly over
    /// `first_ts_ns..=last_ts_ns` (see `spread_over_bins`; per-flow sums
    /// are exact), and stalls are not looked for in the idle times of
    /// counted frames (only their longest idle
    /// raises `max_idle_us`); the requester's transport timer (see [`rto`])
    /// starts at a delta's first request when it was stopped and restarts at
    /// an ACK delta's last frame when the delta raised the highest ACKed PSN.
    /// A delta for a flow the analyzer has not seen (its first record was
    /// lost) is ignored.
    pub fn apply_delta(&mut self, iface: u16, d: &FlowDelta, sink: &mut impl Sink) {
        let key = (
            iface,
            d.key.src_ip,
            d.key.dst_ip,
            d.key.dest_qp & ib::QPN_MASK,
        );
        let Some(&i) = self.by_key.get(&key) else {
            return;
        };
        let paired = self.flows[i].paired;
        // State first: the path MTU and the highest ACKed PSNs.
        let raise_mtu = |f: &mut Flow, m: u32| f.mtu = f.mtu.max(m);
        raise_mtu(&mut self.flows[i], d.mtu);
        if let Some(p) = paired {
            raise_mtu(&mut self.flows[p], d.mtu);
            if d.has(delta_flags::PARTNER) {
                raise_mtu(&mut self.flows[p], d.partner_mtu);
                raise_mtu(&mut self.flows[i], d.partner_mtu);
            }
        }
        let raise_acked = |f: &mut Flow, q: u32| {
            f.acked = Some(f.acked.map_or(q, |a| psn::max(a, q)));
        };
        if d.has(delta_flags::ACKED) {
            raise_acked(&mut self.flows[i], d.acked_psn & PSN_MASK);
            if let Some(p) = paired {
                self.flows[p]
                    .rto
                    .acked_counted(d.acked_psn & PSN_MASK, d.last_ts_ns);
            }
        }
        if let Some(p) = paired
            && d.has(delta_flags::PARTNER_ACKED)
        {
            raise_acked(&mut self.flows[p], d.partner_acked_psn & PSN_MASK);
        }
        if d.packets == 0 {
            return;
        }
        let now = d.last_ts_ns;
        self.frames.roce += d.packets;
        self.frames.total += d.packets;
        self.last_ts = self.last_ts.max(now);
        let bin_ns = self.config.bin_ns;
        if d.data_packets > 0 {
            // New data after them: pending fills were late originals.
            self.decide_fills(i, false, sink);
        }
        let f = &mut self.flows[i];
        if d.data_packets > 0
            && let Some(s) = &mut f.seq
        {
            // Every counted request was in order and none was a READ.
            let next = d.next_psn & PSN_MASK;
            s.next = next;
            s.slack_end = next;
            s.prev_lo = next;
            s.prev_hi = next;
            s.prev_psn = psn::add(next, PSN_MASK);
            s.resending = false;
        }
        f.packets += d.packets;
        f.bytes += d.bytes;
        f.payload_bytes += d.payload_bytes;
        f.goodput_bytes += d.payload_bytes;
        f.data_packets += u64::from(d.data_packets);
        f.acks += u64::from(d.acks);
        f.responses += u64::from(d.responses);
        if d.ce > 0 {
            f.ce += u64::from(d.ce);
            if f.ce_unanswered.is_none() {
                f.ce_unanswered = Some(d.first_ce_ts_ns);
            }
        }
        f.max_idle_ns = f.max_idle_ns.max(d.max_idle_ns);
        f.last_ts = f.last_ts.max(now);
        if d.data_packets > 0 {
            f.rto.sent(d.first_ts_ns);
        }
        f.rto.packet_done();
        spread_over_bins(f, &self.pfc, d, bin_ns, sink);
    }

    fn priority_of(&self, rec: &PacketRecord) -> Option<u8> {
        if rec.has(flags::HAS_VLAN) {
            Some(rec.pcp & 7)
        } else if rec.has(flags::HAS_IPV4 | flags::HAS_IPV6) {
            let d = (rec.dscp & 63) as usize;
            Some(match &self.config.dscp_to_priority {
                Some(m) => m[d] & 7,
                None => (d >> 3) as u8,
            })
        } else {
            None
        }
    }

    fn roce(&mut self, rec: &PacketRecord, sink: &mut impl Sink) -> Verdict {
        let now = rec.ts_ns;
        let key = (
            rec.iface,
            rec.src_ip,
            rec.dst_ip,
            rec.dest_qp & ib::QPN_MASK,
        );
        let i = self.flow_index(key, now);
        let last_nak = self.flows[i].paired.and_then(|p| self.flows[p].last_nak_ts);
        if self.dups.is_copy(rec, last_nak) {
            self.flows[i].mirror_copies += 1;
            self.frames.mirror_copies += 1;
            return Verdict {
                flow_id: Some(self.flows[i].id),
                mirror_copy: true,
                ..Verdict::default()
            };
        }
        let (corrupt, rewritten) = self.icrc(rec);
        if corrupt {
            self.flows[i].icrc_errors += 1;
        }
        let prio = self.priority_of(rec);
        {
            let f = &mut self.flows[i];
            if f.packets == 0 {
                f.src_mac = rec.src_mac;
                f.udp_sport = rec.has(flags::HAS_UDP).then_some(rec.udp_sport);
                f.pcp = rec.has(flags::HAS_VLAN).then_some(rec.pcp);
                f.dscp = rec
                    .has(flags::HAS_IPV4 | flags::HAS_IPV6)
                    .then_some(rec.dscp);
            }
            if f.priority.is_none() {
                f.priority = prio;
            }
        }
        let idle = if self.flows[i].packets == 0 {
            0
        } else {
            now.saturating_sub(self.flows[i].last_ts)
        };
        // Pause overlap of the idle time before this packet: wanted for
        // stalls (long idles) and rewinds (retransmissions).
        let maybe_rewind = ib::is_request(rec.opcode)
            && self.flows[i]
                .seq
                .is_some_and(|s| psn::diff(rec.psn & PSN_MASK, s.next) < 0);
        let (paused, cover) = match self.flows[i].priority {
            Some(p) if idle > 0 && (idle >= STALL_MIN_NS || maybe_rewind) => {
                self.pfc.paused(rec.iface, p, now - idle, now, now)
            }
            _ => (0, None),
        };

        let opcode = rec.opcode;
        let service = opcode >> 5;
        let payload = if rec.has(flags::HAS_PAYLOAD_LEN) {
            rec.payload_len as u64
        } else {
            0
        };
        // Path MTU: a First or Middle packet carries exactly one.
        if ib::payload_is_path_mtu(opcode) && payload > 0 {
            let m = payload.min(u32::MAX as u64) as u32;
            let f = &mut self.flows[i];
            f.mtu = f.mtu.max(m);
            if let Some(p) = f.paired {
                self.flows[p].mtu = self.flows[p].mtu.max(m);
            }
        }

        let mut verdict = Verdict {
            flow_id: Some(self.flows[i].id),
            icrc_unknown: rewritten,
            ..Verdict::default()
        };
        let mut rewound = false;
        if ib::is_request(opcode) {
            let (retrans, rw) = self.request(i, rec, idle, paused, cover, sink);
            verdict.retrans = Some(retrans);
            rewound = rw;
            self.flows[i].rto.sent(now);
        } else if ib::is_response(opcode) {
            self.response(i, rec, sink);
        } else if service == transport::UD {
            self.flows[i].data_packets += 1;
        }

        let retrans = verdict.retrans == Some(true);
        let ce = ib::is_request(opcode) && rec.is_ce();
        let bin_ns = self.config.bin_ns;
        let f = &mut self.flows[i];
        if ib::is_request(opcode) {
            f.max_frame_len = f.max_frame_len.max(rec.frame_len);
        }
        f.packets += 1;
        f.bytes += rec.frame_len as u64;
        f.payload_bytes += payload;
        if !retrans {
            f.goodput_bytes += payload;
        }
        if ce {
            f.ce += 1;
            if f.ce_unanswered.is_none() {
                f.ce_unanswered = Some(now);
            }
        }
        f.max_idle_ns = f.max_idle_ns.max(idle);
        if paused > 0 && (rewound || froze(idle, paused, cover, now - idle)) {
            f.stalls += 1;
            f.stall_paused_ns += paused;
        }
        f.last_ts = f.last_ts.max(now);
        f.rto.packet_done();
        let b = bin_mut(f, &self.pfc, now, bin_ns, sink);
        b.packets += 1;
        b.bytes += rec.frame_len as u64;
        if retrans {
            b.retrans += 1;
        } else {
            b.goodput_bytes += payload;
        }
        if ce {
            b.ce += 1;
        }
        verdict
    }

    /// PSNs a request consumes: `(at least, at most)`.
    fn consumption(&self, i: usize, rec: &PacketRecord) -> (u32, u32) {
        if rec.opcode & 0x1F != op::READ_REQUEST || !rec.has(flags::HAS_RETH) {
            return (1, 1);
        }
        let len = rec.reth_len as u64;
        let f = &self.flows[i];
        let mtu = f.mtu.max(f.paired.map(|p| self.flows[p].mtu).unwrap_or(0));
        let ceil = |m: u64| len.div_ceil(m).clamp(1, 1 << 22) as u32;
        if mtu > 0 {
            let n = ceil(mtu as u64);
            (n, n)
        } else {
            (1, ceil(MIN_MTU as u64))
        }
    }

    /// A request packet: returns (retransmission, rewind).
    fn request(
        &mut self,
        i: usize,
        rec: &PacketRecord,
        idle: u64,
        paused: u64,
        cover: Option<Cover>,
        sink: &mut impl Sink,
    ) -> (bool, bool) {
        let now = rec.ts_ns;
        let q = rec.psn & PSN_MASK;
        let (n_min, n_max) = self.consumption(i, rec);
        self.flows[i].data_packets += 1;
        let paired = self.flows[i].paired;
        // Outstanding NAKs for this PSN are consumed by any send of it.
        let mut nak: Option<PendingNak> = None;
        if let Some(p) = paired {
            let pend = &mut self.flows[p].pending;
            pend.retain(|n| {
                if n.psn == q {
                    if nak.is_none_or(|m| n.ts >= m.ts) {
                        nak = Some(*n);
                    }
                    false
                } else {
                    true
                }
            });
        }
        let acked = paired.and_then(|p| self.flows[p].acked);
        let Some(mut s) = self.flows[i].seq else {
            self.flows[i].seq = Some(Seq {
                first_psn: q,
                next: psn::add(q, n_min),
                slack_end: psn::add(q, n_max),
                prev_lo: psn::add(q, n_min),
                prev_hi: psn::add(q, n_max),
                prev_psn: q,
                resending: false,
            });
            self.flows[i].rtt_probe = Some((q, now));
            return (false, false);
        };
        let forward = psn::diff(q, s.prev_psn) > 0;
        let mut result = (false, false);
        // What a rewind starting at this packet records.
        let rewind_here = |lost| Rewind {
            q,
            next: s.next,
            idle,
            paused,
            cover,
            acked,
            nak,
            lost,
        };
        if psn::diff(q, s.next) < 0 {
            if let Some((since, nak_named)) = self.flows[i].pending_gaps.take(q) {
                // A PSN the tap missed, seen for the first time: no copy of
                // it was seen before, so it is no retransmission here.
                let continues = s.resending && forward;
                let this_psn = |class| gaps::Resolved {
                    class,
                    lo: q,
                    len: 1,
                    since_ns: since,
                };
                if nak_named || nak.is_some() {
                    let class = if nak_named || nak.is_some_and(|n| !n.rnr) {
                        gaps::GapClass::NakLost
                    } else {
                        gaps::GapClass::LostBeforeTap
                    };
                    self.decide_fills(i, false, sink);
                    self.resolved(i, this_psn(class), now, sink);
                    if !continues {
                        self.rewind(i, rec.iface, now, rewind_here(true), sink);
                        result.1 = true;
                    }
                    s.resending = true;
                } else if continues {
                    self.resolved(i, this_psn(gaps::GapClass::LostBeforeTap), now, sink);
                } else {
                    // A late original, or the first packet of a resend: the
                    // next request packet tells.
                    let f = &mut self.flows[i];
                    let run = f.fills.get_or_insert_with(|| FillRun {
                        idle,
                        paused,
                        cover,
                        next: s.next,
                        acked,
                        fills: Vec::new(),
                    });
                    run.fills.push(Fill {
                        psn: q,
                        ts: now,
                        since,
                        psns_late: (psn::diff(s.next, q) - 1).max(0) as u32,
                    });
                    if run.fills.len() >= MAX_FILLS {
                        self.decide_fills(i, false, sink);
                    }
                    s.resending = false;
                }
            } else {
                // Seen before: a retransmission.
                result.0 = true;
                let f = &mut self.flows[i];
                f.retrans += 1;
                f.rtt_probe = None;
                let spurious = acked.is_some_and(|a| psn::diff(a, q) >= 0);
                if spurious {
                    f.spurious += 1;
                }
                let resend_began_at_fills = forward && f.fills.is_some();
                self.decide_fills(i, resend_began_at_fills, sink);
                // A rewind goes back: a forward step inside a resend (an ACK
                // covered the rest, or a PSN was lost upstream) continues it.
                if !(forward && (s.resending || resend_began_at_fills)) {
                    self.rewind(i, rec.iface, now, rewind_here(false), sink);
                    result.1 = true;
                }
                s.resending = true;
            }
        } else {
            self.decide_fills(i, false, sink);
            s.resending = false;
            let bound = psn::max(s.next, s.slack_end);
            let g = psn::diff(q, bound);
            if g > 0 {
                let f = &mut self.flows[i];
                f.gaps += 1;
                f.gap_psns += g as u64;
                let evicted = f.pending_gaps.add(bound, g as u32, now);
                sink.event(&Event {
                    ts_ns: now,
                    iface: rec.iface,
                    flow_id: Some(f.id),
                    kind: "gap",
                    psn: Some(bound),
                    depth: Some(g as u32),
                    trigger: None,
                    idle_us: Some(idle as f64 / 1000.0),
                    detail: format!("{g} PSNs missing: {bound}..={}", psn::add(q, PSN_MASK)),
                });
                if let Some((lo, len, nak_named)) = evicted {
                    let class = if nak_named {
                        gaps::GapClass::NakLost
                    } else if acked.is_some_and(|a| psn::diff(a, psn::add(lo, len - 1)) >= 0) {
                        gaps::GapClass::CaptureLost
                    } else {
                        gaps::GapClass::Unresolved
                    };
                    self.resolved(
                        i,
                        gaps::Resolved {
                            class,
                            lo,
                            len,
                            since_ns: now,
                        },
                        now,
                        sink,
                    );
                }
            }
            s.next = psn::add(q, n_min);
            s.slack_end = psn::add(q, n_max);
            let f = &mut self.flows[i];
            if f.rtt_probe.is_none() {
                f.rtt_probe = Some((q, now));
            }
        }
        s.prev_lo = psn::add(q, n_min);
        s.prev_hi = psn::add(q, n_max);
        s.prev_psn = q;
        self.flows[i].seq = Some(s);
        result
    }

    /// The flow's pending fills are decided: the first packet of a resend
    /// (`resend`: a retransmission continued forward from them), or late
    /// originals.
    fn decide_fills(&mut self, i: usize, resend: bool, sink: &mut impl Sink) {
        let Some(run) = self.flows[i].fills.take() else {
            return;
        };
        let iface = self.flows[i].iface;
        if resend {
            let Some(first) = run.fills.first().copied() else {
                return;
            };
            let r = Rewind {
                q: first.psn,
                next: run.next,
                idle: run.idle,
                paused: run.paused,
                cover: run.cover,
                acked: run.acked,
                nak: None,
                lost: true,
            };
            self.rewind(i, iface, first.ts, r, sink);
            for fl in &run.fills {
                let class = gaps::GapClass::LostBeforeTap;
                self.resolved(
                    i,
                    gaps::Resolved {
                        class,
                        lo: fl.psn,
                        len: 1,
                        since_ns: fl.since,
                    },
                    fl.ts,
                    sink,
                );
            }
            return;
        }
        for fl in &run.fills {
            let late_ns = fl.ts.saturating_sub(fl.since);
            let f = &mut self.flows[i];
            f.gap_counts.add(gaps::GapClass::Late, 1);
            f.late_max_ns = Some(f.late_max_ns.map_or(late_ns, |m| m.max(late_ns)));
            f.late_max_psns = f.late_max_psns.max(fl.psns_late);
            sink.event(&Event {
                ts_ns: fl.ts,
                iface,
                flow_id: Some(f.id),
                kind: "late",
                psn: Some(fl.psn),
                depth: Some(fl.psns_late),
                trigger: None,
                idle_us: None,
                detail: format!(
                    "PSN {} arrived {} after it went missing, {} PSNs late, and was not resent: reordered on the path",
                    fl.psn,
                    fmt_duration(late_ns),
                    fl.psns_late
                ),
            });
        }
    }

    /// Missing PSNs resolved (not `late`, which [`Analyzer::decide_fills`]
    /// writes itself): counted, and an event.
    fn resolved(&mut self, i: usize, r: gaps::Resolved, now: u64, sink: &mut impl Sink) {
        let f = &mut self.flows[i];
        f.gap_counts.add(r.class, u64::from(r.len));
        let last = psn::add(r.lo, r.len.saturating_sub(1));
        let why = match r.class {
            gaps::GapClass::LostBeforeTap => "first seen in a resend: lost before the tap",
            gaps::GapClass::NakLost => "named by a sequence-error NAK: lost before the responder",
            gaps::GapClass::CaptureLost => {
                "never seen, yet acknowledged with no NAK and no resend: the tap missed them"
            }
            gaps::GapClass::Unresolved => {
                "never seen, and nothing in the capture says what became of them"
            }
            gaps::GapClass::Late => "arrived late",
        };
        sink.event(&Event {
            ts_ns: now,
            iface: f.iface,
            flow_id: Some(f.id),
            kind: r.class.as_str(),
            psn: Some(r.lo),
            depth: Some(r.len),
            trigger: None,
            idle_us: None,
            detail: format!(
                "{} missing PSN{} {}..={last} {why} (missing since {} before)",
                r.len,
                if r.len == 1 { "" } else { "s" },
                r.lo,
                fmt_duration(now.saturating_sub(r.since_ns))
            ),
        });
    }

    /// A Go-Back-N rewind: counted, noted, and an event.
    fn rewind(&mut self, i: usize, iface: u16, now: u64, r: Rewind, sink: &mut impl Sink) {
        let Rewind {
            q,
            next,
            idle,
            paused,
            cover,
            acked,
            nak,
            lost,
        } = r;
        let depth = psn::diff(next, q).max(0) as u32;
        let trigger = match nak {
            Some(n) if n.rnr => "rnr",
            Some(_) => "nak",
            None => "timeout",
        };
        let acked_n = acked
            .map(|a| psn::diff(a, q) + 1)
            .filter(|&k| k > 0)
            .map(|k| (k as u32).min(depth))
            .unwrap_or(0);
        let f = &mut self.flows[i];
        f.rewinds += 1;
        f.livelock.rewind(q, now);
        f.max_depth = f.max_depth.max(depth);
        match trigger {
            "nak" => f.rewinds_nak += 1,
            "rnr" => f.rewinds_rnr += 1,
            _ => {
                f.rewinds_timeout += 1;
                f.timeout_idle_min_ns = f.timeout_idle_min_ns.min(idle);
                f.timeout_idle_max_ns = f.timeout_idle_max_ns.max(idle);
                if paused > 0 {
                    f.timeout_rewinds_paused += 1;
                }
                f.rto.timeout_rewind(now, idle, paused);
                if f.timeouts.len() >= MAX_TIMEOUTS_PENDING {
                    let t = f.timeouts.remove(0);
                    self.judge_timeout(i, t);
                }
                self.flows[i].timeouts.push(TimeoutRewind {
                    ts: now,
                    psn: q,
                    spurious: acked_n > 0,
                    cover: cover.filter(|_| paused > 0),
                    lost,
                    acked_at: None,
                });
            }
        }
        let f = &mut self.flows[i];
        let note = RewindNote {
            ts: now,
            psn: q,
            depth,
            trigger,
            idle_ns: idle,
            acked: acked_n,
            paused_ns: paused,
            cover,
        };
        if f.note.is_none_or(|n| note.rank() > n.rank()) {
            f.note = Some(note);
        }
        let why = match nak {
            Some(n) => format!(
                "{} for PSN {q} seen {} before",
                if n.rnr { "RNR NAK" } else { "NAK" },
                fmt_duration(now.saturating_sub(n.ts))
            ),
            None => format!("no NAK for PSN {q} seen"),
        };
        let mut detail = format!(
            "go-back-N from next PSN {next} back to {q} (depth {depth}), {why}; idle {}; {acked_n} of the rewound PSNs already acknowledged",
            fmt_duration(idle)
        );
        if lost {
            detail.push_str(&format!(
                "; PSN {q} was never seen before: lost before the tap"
            ));
        }
        if let (Some(c), true) = (cover, paused > 0) {
            detail.push_str(&format!(
                "; priority {} paused {} of the idle time (pause by {} from {})",
                c.priority,
                fmt_duration(paused),
                fmt_mac(&c.src_mac),
                c.start_ns
            ));
        }
        sink.event(&Event {
            ts_ns: now,
            iface,
            flow_id: Some(f.id),
            kind: "rewind",
            psn: Some(q),
            depth: Some(depth),
            trigger: Some(trigger),
            idle_us: Some(idle as f64 / 1000.0),
            detail,
        });
    }

    /// A timeout rewind decided: delayed (a ghost: already ACKed, ACKed
    /// sooner after the resend than a round trip allows, or paused while
    /// idle) or not.
    fn judge_timeout(&mut self, i: usize, t: TimeoutRewind) {
        let f = &mut self.flows[i];
        let acked_late = match (t.acked_at, f.min_rtt_ns) {
            (Some(at), Some(rtt)) => at.saturating_sub(t.ts) < rtt,
            _ => false,
        };
        let ghost = !t.lost && (t.spurious || acked_late || t.cover.is_some());
        if ghost {
            f.rewinds_timeout_ghost += 1;
            if let Some(c) = t.cover {
                self.ghost_covers
                    .insert((f.iface, c.priority, c.src_mac, c.start_ns));
            }
        } else if !t.lost {
            f.rewinds_timeout_unexplained += 1;
        }
    }

    /// A response packet (ACK, atomic ACK, READ response, NAK).
    fn response(&mut self, i: usize, rec: &PacketRecord, sink: &mut impl Sink) {
        let now = rec.ts_ns;
        let q = rec.psn & PSN_MASK;
        self.flows[i].responses += 1;
        if self.flows[i].paired.is_none() {
            self.try_pair(i, q);
        }
        if !rec.has(flags::HAS_AETH) {
            return;
        }
        let syn = rec.aeth_syndrome;
        let o = rec.opcode & 0x1F;
        let request = self.flows[i].paired;
        let paired = request.map(|p| self.flows[p].id);
        let f = &mut self.flows[i];
        if aeth::is_ack(syn) {
            if matches!(o, op::ACKNOWLEDGE | op::ATOMIC_ACKNOWLEDGE) {
                f.acks += 1;
            }
            let a = match f.acked {
                Some(a) => psn::max(a, q),
                None => q,
            };
            f.acked = Some(a);
            if let Some(r) = request {
                self.acked(r, a, now, sink);
            }
        } else if aeth::is_nak(syn) || aeth::is_rnr_nak(syn) {
            let rnr = aeth::is_rnr_nak(syn);
            if rnr {
                f.rnr_naks += 1;
            } else {
                f.naks += 1;
            }
            if f.pending.len() >= MAX_PENDING_NAKS {
                f.pending.remove(0);
            }
            f.last_nak_ts = Some(now);
            if let Some(r) = request {
                self.flows[r].rto.nak(now);
            }
            if let (Some(r), false) = (request, rnr) {
                // A sequence error names the PSN the responder expected.
                if syn & 0x1F == aeth::NAK_PSN_SEQUENCE_ERROR {
                    self.flows[r].pending_gaps.nak(q);
                }
            }
            let f = &mut self.flows[i];
            f.pending.push(PendingNak {
                psn: q,
                ts: now,
                rnr,
            });
            let what = if rnr {
                format!("RNR NAK (timer code {}) for PSN {q}", syn & 0x1F)
            } else {
                format!("NAK {} for PSN {q}", nak_name(syn))
            };
            let to = match paired {
                Some(id) => format!(" to request flow {id}"),
                None => String::new(),
            };
            sink.event(&Event {
                ts_ns: now,
                iface: rec.iface,
                flow_id: Some(f.id),
                kind: if rnr { "rnr_nak" } else { "nak" },
                psn: Some(q),
                depth: None,
                trigger: None,
                idle_us: None,
                detail: format!("{what}{to}"),
            });
        }
    }

    /// The response flow paired with request flow `r` acknowledged up to
    /// `a`: missing PSNs it covers resolve, timeout rewinds learn when their
    /// PSN was ACKed, and the round-trip probe completes.
    fn acked(&mut self, r: usize, a: u32, now: u64, sink: &mut impl Sink) {
        let f = &mut self.flows[r];
        let next = f.seq.map(|s| s.next);
        f.rto.acked(a, next, now);
        f.livelock.acked(a);
        for t in &mut f.timeouts {
            if t.acked_at.is_none() && psn::diff(a, t.psn) >= 0 {
                t.acked_at = Some(now);
            }
        }
        if let Some((p, t)) = f.rtt_probe
            && psn::diff(a, p) >= 0
        {
            let rtt = now.saturating_sub(t);
            f.min_rtt_ns = Some(f.min_rtt_ns.map_or(rtt, |m| m.min(rtt)));
            f.rtt_probe = None;
        }
        if f.pending_gaps.is_empty() {
            return;
        }
        let mut out = Vec::new();
        f.pending_gaps.acked(a, &mut out);
        for g in out {
            self.resolved(r, g, now, sink);
        }
    }

    /// Pair response flow `s` by its response PSN `q`.
    fn try_pair(&mut self, s: usize, q: u32) {
        let f = &self.flows[s];
        let Some(cands) = self.by_hosts.get(&(f.iface, f.dst_ip, f.src_ip)) else {
            return;
        };
        let mut found = None;
        for &r in cands {
            if r == s {
                continue;
            }
            let fr = &self.flows[r];
            if fr.paired.is_some() || fr.paired_qp.is_some() {
                continue;
            }
            let Some((lo, hi)) = fr.sent_range() else {
                continue;
            };
            if psn::diff(q, lo) >= 0 && psn::diff(q, hi) < 0 {
                if found.is_some() {
                    return; // ambiguous: wait for another response
                }
                found = Some(r);
            }
        }
        if let Some(r) = found {
            self.link(r, s);
        }
    }

    fn cnp(&mut self, rec: &PacketRecord, sink: &mut impl Sink) -> Verdict {
        let now = rec.ts_ns;
        let qp = rec.dest_qp & ib::QPN_MASK;
        if self.dups.is_copy(rec, None) {
            self.frames.mirror_copies += 1;
            return Verdict {
                mirror_copy: true,
                ..Verdict::default()
            };
        }
        let (_, rewritten) = self.icrc(rec);
        self.cnp_macs.insert(rec.src_mac);
        *self
            .cnp_counts
            .entry((rec.iface, rec.src_ip, rec.dst_ip, qp))
            .or_default() += 1;
        let target = self
            .by_hosts
            .get(&(rec.iface, rec.dst_ip, rec.src_ip))
            .and_then(|c| {
                c.iter()
                    .copied()
                    .find(|&r| self.flows[r].paired_qp == Some(qp) && self.flows[r].seq.is_some())
            });
        let mut reaction = None;
        if let Some(r) = target {
            let bin_ns = self.config.bin_ns;
            let f = &mut self.flows[r];
            if let Some(t) = f.ce_unanswered.take() {
                reaction = Some(now.saturating_sub(t));
            }
            let b = bin_mut(f, &self.pfc, now, bin_ns, sink);
            b.cnps += 1;
        }
        if let Some(rt) = reaction {
            let r = &mut self.reactions;
            *r = (r.0 + 1, r.1 + rt, r.2.min(rt), r.3.max(rt));
        }
        let flow_id = target.map(|r| self.flows[r].id);
        // Built in place: one CNP event per CNP, tens of thousands a capture.
        let mut detail = String::with_capacity(96);
        // Writing to a String cannot fail.
        let _ = write!(
            detail,
            "CNP from {} to QP {qp} on {}",
            Ip(rec.src_ip),
            Ip(rec.dst_ip)
        );
        if let Some(rt) = reaction {
            let _ = write!(
                detail,
                ", {:.1} µs after the first unanswered CE",
                rt as f64 / 1000.0
            );
        }
        sink.event(&Event {
            ts_ns: now,
            iface: rec.iface,
            flow_id,
            kind: "cnp",
            psn: None,
            depth: None,
            trigger: None,
            idle_us: None,
            detail,
        });
        Verdict {
            flow_id,
            icrc_unknown: rewritten,
            ..Verdict::default()
        }
    }

    /// End of input: flush open bins and intervals, return the tables.
    pub fn finish(mut self, sink: &mut impl Sink) -> Analysis {
        let last = self.last_ts;
        // What the capture never settled, settled with what it showed.
        for i in 0..self.flows.len() {
            self.decide_fills(i, false, sink);
            let acked = self.flows[i].paired.and_then(|p| self.flows[p].acked);
            let mut out = Vec::new();
            self.flows[i].pending_gaps.finish(acked, &mut out);
            for g in out {
                self.resolved(i, g, last, sink);
            }
            for t in std::mem::take(&mut self.flows[i].timeouts) {
                self.judge_timeout(i, t);
            }
        }
        let taps = self.taps.clone();
        // A capture ends with the last record of any of its interfaces.
        let mut capture_end: BTreeMap<u32, u64> = BTreeMap::new();
        for t in taps.iter().filter(|t| t.seen) {
            let e = capture_end.entry(t.capture).or_default();
            *e = (*e).max(t.last_ts);
        }
        let tap_end = |iface: u16| {
            taps.get(usize::from(iface))
                .and_then(|t| capture_end.get(&t.capture))
                .copied()
                .unwrap_or(last)
        };
        // A sniffer's rewrite is no corruption.
        for f in &mut self.flows {
            if taps
                .get(usize::from(f.iface))
                .is_some_and(TapState::is_sniffer)
            {
                f.icrc_errors = 0;
                f.sniffer_tap = true;
            }
        }
        self.pfc.finish(tap_end, sink);
        // A flow that went silent as a pause began and stayed so to the end
        // of its tap's capture was frozen by it.
        for f in &mut self.flows {
            let Some(p) = f.priority else { continue };
            let end = tap_end(f.iface);
            let idle = end.saturating_sub(f.last_ts);
            if idle < STALL_MIN_NS || f.packets == 0 {
                continue;
            }
            let (paused, cover) = self.pfc.paused(f.iface, p, f.last_ts, end, end);
            if froze(idle, paused, cover, f.last_ts) {
                f.stalls += 1;
                f.stall_paused_ns += paused;
            }
        }
        let bin_ns = self.config.bin_ns;
        for f in &mut self.flows {
            if let Some(b) = f.bin.take() {
                flush_bin(f, &b, &self.pfc, bin_ns, u64::MAX, sink);
            }
        }
        // CNPs by pairing as known at the end.
        let mut attributed = 0;
        for f in &mut self.flows {
            if f.seq.is_some()
                && let Some(qp) = f.paired_qp
            {
                f.cnps = self
                    .cnp_counts
                    .get(&(f.iface, f.dst_ip, f.src_ip, qp))
                    .copied()
                    .unwrap_or(0);
                attributed += f.cnps;
            }
        }
        let mut rows: Vec<FlowRow> = self.flows.iter().map(flow_row).collect();
        let duration = self.first_ts.map(|f| last - f).unwrap_or(0);
        let pfc_summary: Vec<PfcSummary> = self
            .pfc
            .stats
            .iter()
            .map(|(&(iface, priority), st)| {
                let paused_ns = self.pfc.paused_total(iface, priority);
                PfcSummary {
                    iface,
                    iface_name: iface_name(&self.ifaces, iface),
                    priority,
                    frames: st.frames,
                    xon_frames: st.xon_frames,
                    paused_ns,
                    fraction: ratio(paused_ns, duration),
                    storms: st.storms,
                }
            })
            .collect();
        let mut t = Totals {
            flows: rows.len() as u64,
            ..Totals::default()
        };
        for (f, r) in self.flows.iter().zip(&rows) {
            t.request_flows += f.seq.is_some() as u64;
            t.response_flows += (f.responses > 0) as u64;
            t.paired_flows += (f.seq.is_some() && f.paired_qp.is_some()) as u64;
            t.packets += r.packets;
            t.bytes += r.bytes;
            t.data_packets += r.data_packets;
            t.payload_bytes += r.payload_bytes;
            t.retrans_packets += r.retrans_packets;
            t.rewinds += r.rewinds;
            t.rewinds_nak += r.rewinds_nak;
            t.rewinds_rnr += r.rewinds_rnr;
            t.rewinds_timeout += r.rewinds_timeout;
            t.spurious_retrans += r.spurious_retrans;
            t.gaps += r.gaps;
            t.acks += r.acks;
            t.naks += r.naks;
            t.rnr_naks += r.rnr_naks;
            t.ce += r.ce;
        }
        t.retrans_rate = ratio(t.retrans_packets, t.data_packets);
        t.cnps = attributed;
        t.cnps_unattributed = self.frames.cnp - attributed;
        t.pfc_intervals = self.pfc.rows.len() as u64;
        t.pfc_storms = pfc_summary.iter().map(|p| p.storms).sum();
        let mut capture_lost = vec![0u64; self.taps.len()];
        for f in &self.flows {
            t.rewinds_timeout_ghost += f.rewinds_timeout_ghost;
            t.gaps_resolved.sum(&f.gap_counts);
            t.icrc_errors += f.icrc_errors;
            t.mirror_copies += f.mirror_copies;
            if let Some(c) = capture_lost.get_mut(usize::from(f.iface)) {
                *c += f.gap_counts.capture_lost;
            }
        }
        let tap_rows: Vec<TapSummary> = self
            .taps
            .iter()
            .enumerate()
            .filter(|(_, t)| t.seen)
            .map(|(i, t)| {
                let iface = i as u16;
                let dup = self.dups.per_tap.get(&iface).cloned();
                TapSummary {
                    iface,
                    iface_name: iface_name(&self.ifaces, iface),
                    first_ts_ns: t.first_ts,
                    last_ts_ns: t.last_ts,
                    link_speed_bps: self.pfc.speed(iface),
                    duplicates: dup.as_ref().map_or(0, |d| d.copies),
                    duplicate_gaps: dup,
                    capture_lost: capture_lost[i],
                    icrc_checked: t.icrc_checked,
                    icrc_failed: t.icrc_failed,
                    sniffer: t.is_sniffer(),
                    isb_ifdrop: t.isb_ifdrop,
                    isb_osdrop: t.isb_osdrop,
                }
            })
            .collect();
        let mut facts = Vec::new();
        for r in tap_rows.iter().filter(|r| r.sniffer) {
            facts.push(format!(
                "{}: a NIC's RDMA sniffer capture (every RoCE frame from UDP port 4791 with a failing ICRC: the sniffer rewrote the headers); ICRC results are unknown for its frames",
                r.iface_name
            ));
        }
        if self.frames.cut > 0 {
            facts.push(format!(
                "{} RoCE frames are cut short of their IP length (snap length, sniffer or ERSPAN truncation): their ICRC could not be checked",
                self.frames.cut
            ));
        }
        if t.gaps_resolved.capture_lost > 0 {
            facts.push(format!(
                "the capture is incomplete: {} PSNs the responders acknowledged never reached the capture; every count is a lower bound",
                t.gaps_resolved.capture_lost
            ));
        }
        let (n, sum, min, max) = self.reactions;
        let ce_to_cnp = (n > 0).then(|| Reaction {
            samples: n,
            min_us: min as f64 / 1000.0,
            mean_us: sum as f64 / n as f64 / 1000.0,
            max_us: max as f64 / 1000.0,
        });
        let mut hosts: std::collections::BTreeSet<[u8; 6]> =
            self.flows.iter().map(|f| f.src_mac).collect();
        hosts.extend(&self.cnp_macs);
        let flows = &self.flows;
        let names = &self.ifaces;
        let pfc_trees = tree::build(
            &self.pfc.rows,
            &hosts,
            |i| iface_name(names, i),
            |i| {
                flows
                    .iter()
                    .filter(|f| f.iface == i && f.stalls > 0)
                    .map(|f| f.id)
                    .collect()
            },
        );
        let mut summary = Summary {
            first_ts_ns: self.first_ts,
            last_ts_ns: self.first_ts.map(|_| last),
            duration_ns: duration,
            frames: self.frames.clone(),
            ifaces: self.ifaces.clone(),
            link_speed_bps: self.config.link_speed_bps,
            bin_ns,
            storm_ns: self.config.storm_ns,
            dscp_to_priority: self.config.dscp_to_priority.map(|m| m.to_vec()),
            totals: t,
            ce_to_cnp,
            pfc: pfc_summary,
            taps: tap_rows,
            capture_facts: facts,
            pfc_trees,
            nic_timeouts: nic_timeouts(&self.flows, &self.ifaces),
            findings: Vec::new(),
        };
        summary.findings = findings::diagnose(&findings::Input {
            flows: &self.flows,
            rows: &rows,
            pfc: &self.pfc.rows,
            summary: &summary,
            ghost_covers: &self.ghost_covers,
        });
        let taps = &self.taps;
        let origin = |iface: u16| {
            let t = taps.get(usize::from(iface)).copied().unwrap_or_default();
            crate::wireshark::IfaceOrigin {
                local: t.local,
                shared_file: taps
                    .iter()
                    .filter(|o| o.seen && o.capture == t.capture)
                    .count()
                    > 1,
            }
        };
        crate::wireshark::annotate(&mut rows, &mut summary.findings, origin);
        Analysis {
            flows: rows,
            pfc: std::mem::take(&mut self.pfc.rows),
            summary,
        }
    }
}

/// Whether an idle time of `idle` ns starting at `from`, of which `paused` ns
/// were paused (`cover` the pause that covered the most), froze the flow:
/// most of it paused, or a pause of the flow's priority began right as the
/// flow went quiet (it was active until then) and lasted a stall's length.
fn froze(idle: u64, paused: u64, cover: Option<Cover>, from: u64) -> bool {
    idle >= STALL_MIN_NS
        && paused > 0
        && (paused * 2 >= idle
            || (paused >= STALL_MIN_NS
                && cover.is_some_and(|c| c.start_ns <= from.saturating_add(STALL_MIN_NS))))
}

/// The flow's bin for time `now`, flushing the previous one when `now` is
/// in a later bin.
fn bin_mut<'a>(
    f: &'a mut Flow,
    pfc: &PfcTracker,
    now: u64,
    bin_ns: u64,
    sink: &mut impl Sink,
) -> &'a mut Bin {
    let start = now - now % bin_ns;
    if let Some(b) = f.bin
        && b.start < start
    {
        flush_bin(f, &b, pfc, bin_ns, now, sink);
        f.bin = None;
    }
    f.bin.get_or_insert(Bin {
        start,
        ..Bin::default()
    })
}

/// Most timeline bins one delta's frames are spread over; a longer span
/// (a flush interval far above the bin width) goes into its last bin.
const MAX_SPREAD_BINS: u64 = 4096;

/// A delta's frames into the flow's timeline, spread evenly over the time
/// they were counted in (`first_ts_ns..=last_ts_ns`): each bin gets the
/// share of the packets its part of that span holds (rounded so the shares
/// add up exactly), and bytes, goodput and CE marks in proportion to its
/// packets. Exact per flow; the shape within the span is an estimate.
fn spread_over_bins(
    f: &mut Flow,
    pfc: &PfcTracker,
    d: &FlowDelta,
    bin_ns: u64,
    sink: &mut impl Sink,
) {
    let last = d.last_ts_ns;
    let mut first = d.first_ts_ns.min(last).max(f.bin.map_or(0, |b| b.start));
    if (last - first) / bin_ns >= MAX_SPREAD_BINS {
        first = last;
    }
    let span = u128::from(last - first) + 1;
    let share = |total: u64, of: u128, whole: u128| (u128::from(total) * of / whole) as u64;
    let (mut packets, mut bytes, mut goodput, mut ce) = (0u64, 0u64, 0u64, 0u64);
    let mut start = first - first % bin_ns;
    loop {
        let end = start.saturating_add(bin_ns).min(last.saturating_add(1));
        // Cumulative shares up to the end of this bin.
        let p = share(d.packets, u128::from(end - first), span);
        let by_packets = |total: u64| share(total, u128::from(p), u128::from(d.packets));
        let (b_, g_, c_) = (
            by_packets(d.bytes),
            by_packets(d.payload_bytes),
            by_packets(u64::from(d.ce)),
        );
        if p > packets {
            let b = bin_mut(f, pfc, start.max(first), bin_ns, sink);
            b.packets += p - packets;
            b.bytes += b_ - bytes;
            b.goodput_bytes += g_ - goodput;
            b.ce += c_ - ce;
            (packets, bytes, goodput, ce) = (p, b_, g_, c_);
        }
        if end > last {
            break;
        }
        start += bin_ns;
    }
}

fn flush_bin(f: &Flow, b: &Bin, pfc: &PfcTracker, bin_ns: u64, now: u64, sink: &mut impl Sink) {
    let paused_ns = f
        .priority
        .map(|p| {
            pfc.paused(f.iface, p, b.start, b.start.saturating_add(bin_ns), now)
                .0
        })
        .unwrap_or(0);
    sink.timeline(&TimelineRow {
        flow_id: f.id,
        bin_start_ns: b.start,
        bin_ns,
        packets: b.packets,
        bytes: b.bytes,
        retrans_packets: b.retrans,
        ce: b.ce,
        cnps: b.cnps,
        gbps: b.bytes as f64 * 8.0 / bin_ns as f64,
        goodput_gbps: b.goodput_bytes as f64 * 8.0 / bin_ns as f64,
        paused_ns,
    });
}

fn flow_row(f: &Flow) -> FlowRow {
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
    }
}

/// Per tap and sender (source address) with timeout rewinds, its NIC's
/// timeout over all its request flows there, in order of the first flow (a
/// sender seen at two taps is measured twice, by the same rewinds).
fn nic_timeouts(flows: &[Flow], names: &BTreeMap<u16, String>) -> Vec<rto::NicTimeout> {
    let mut by_sender: Vec<(u16, [u8; 16], Vec<u32>, rto::Waits)> = Vec::new();
    for f in flows.iter().filter(|f| f.rewinds_timeout > 0) {
        match by_sender
            .iter_mut()
            .find(|(t, ip, ..)| *t == f.iface && *ip == f.src_ip)
        {
            Some((.., ids, w)) => {
                ids.push(f.id);
                w.merge(&f.rto.waits);
            }
            None => by_sender.push((f.iface, f.src_ip, vec![f.id], f.rto.waits)),
        }
    }
    by_sender
        .into_iter()
        .map(|(t, ip, ids, w)| rto::NicTimeout::new(iface_name(names, t), fmt_ip(&ip), ids, &w))
        .collect()
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

fn nak_name(syndrome: u8) -> &'static str {
    match syndrome & 0x1F {
        aeth::NAK_PSN_SEQUENCE_ERROR => "PSN sequence error",
        aeth::NAK_INVALID_REQUEST => "invalid request",
        aeth::NAK_REMOTE_ACCESS_ERROR => "remote access error",
        aeth::NAK_REMOTE_OPERATIONAL_ERROR => "remote operational error",
        aeth::NAK_INVALID_RD_REQUEST => "invalid RD request",
        _ => "reserved code",
    }
}

pub(crate) fn iface_name(names: &BTreeMap<u16, String>, iface: u16) -> String {
    names
        .get(&iface)
        .cloned()
        .unwrap_or_else(|| format!("if{iface}"))
}

/// `aa:bb:cc:dd:ee:ff`.
pub(crate) fn fmt_mac(m: &[u8; 6]) -> String {
    Mac(*m).to_string()
}

/// An address in its usual form (IPv4-mapped addresses as IPv4).
pub(crate) fn fmt_ip(a: &[u8; 16]) -> String {
    Ip(*a).to_string()
}

/// A value scaled to the unit its size calls for: ns below 1 µs, µs below
/// 1 ms, ms below 1 s, s above, with `decimals[i]` decimals in unit `i`
/// (a value that rounds up to 1000 of a unit moves to the next one).
fn scaled(ns: u64, decimals: [usize; 4]) -> String {
    const UNITS: [(&str, f64); 4] = [("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)];
    let x = ns as f64;
    let mut i = UNITS
        .iter()
        .rposition(|&(_, scale)| x >= scale)
        .unwrap_or(0);
    // 999.96 µs is 1.00 ms, not "1000.0 µs".
    if i < 3 {
        let shown = format!("{:.*}", decimals[i], x / UNITS[i].1);
        if shown.parse::<f64>().is_ok_and(|v| v >= 1000.0) {
            i += 1;
        }
    }
    let (unit, scale) = UNITS[i];
    format!("{:.*} {unit}", decimals[i], x / scale)
}

/// A duration for a person, in the unit its size calls for: `850 ns`,
/// `100.3 µs`, `249.81 ms`, `12.50 s`. Every duration the report, the
/// findings and the events' `detail` print goes through here.
pub fn fmt_duration(ns: u64) -> String {
    scaled(ns, [0, 1, 2, 2])
}

/// A time since the capture's first frame, to the microsecond:
/// `t+700.5 µs`, `t+124.568 ms`, `t+12.345678 s`.
pub fn fmt_offset(ns: u64) -> String {
    format!("t+{}", scaled(ns, [0, 1, 3, 6]))
}

/// A rate in Gb/s (`119.19 Gb/s`; below 1 Gb/s, Mb/s).
pub fn fmt_gbps(gbps: f64) -> String {
    if gbps > 0.0 && gbps < 1.0 {
        format!("{:.1} Mb/s", gbps * 1e3)
    } else {
        format!("{gbps:.2} Gb/s")
    }
}

/// `n` and the noun, plural unless `n` is 1: `1 flow`, `2 flows`,
/// `3 copies`, `1 CNP`, `0 NAKs`.
pub fn fmt_count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        return format!("1 {noun}");
    }
    let plural = match noun.strip_suffix('y') {
        Some(stem) if !stem.ends_with(['a', 'e', 'o', 'u']) => format!("{stem}ies"),
        _ => format!("{noun}s"),
    };
    format!("{n} {plural}")
}

/// A fraction as a percentage with two decimals: `20.04 %`.
pub fn fmt_pct(x: f64) -> String {
    format!("{:.2} %", x * 100.0)
}

/// A port and priority's PFC in one phrase: `leaf0 priority 3: 8 PFC
/// frames (2 XON), paused 200.3 µs = 20.04 % of the capture`.
pub(crate) fn fmt_pfc(iface: &str, p: &PfcSummary) -> String {
    format!(
        "{iface} priority {}: {} ({} XON), paused {} = {} of the capture",
        p.priority,
        fmt_count(p.frames, "PFC frame"),
        p.xon_frames,
        fmt_duration(p.paused_ns),
        fmt_pct(p.fraction)
    )
}

/// How a pause interval ended (`pfc.parquet`'s `ended_by`), in words.
pub fn fmt_ended_by(ended_by: &str) -> &'static str {
    match ended_by {
        "xon" => "ended by an XON",
        "expiry" => "ran out without a refresh",
        "capture_end" => "still paused when the capture ended",
        _ => "ended",
    }
}

/// Nanoseconds since the Unix epoch as ISO 8601 UTC with microseconds.
pub(crate) fn fmt_utc(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ns % 1_000_000_000 / 1000
    )
}
