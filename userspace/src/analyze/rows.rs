//! Output rows: what the analyzer hands the tables and the report
//! (`docs/tables.md` has every column).

use std::collections::BTreeMap;

use rocescope_common::Kind;
use rocescope_common::wire::TransportId;
use serde::Serialize;

use super::rto;
use super::totals::is_zero;

pub use super::totals::{MatchingSummary, PfcSummary, Reaction, TapSummary, Totals};

pub use super::gaps::GapClass;
pub use transports::{
    BEYOND_ROCE, TransportFrames, TransportInput, TransportRetirement, TransportRow,
    TransportTables, TransportTotals,
};

mod transports;
pub use super::livelock::Trigger;

/// How a pause interval ended (`pfc.parquet`'s `ended_by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseEnd {
    /// An XON (a pause of 0 quanta) for the priority.
    Xon,
    /// The last pause ran out without a refresh.
    Expiry,
    /// Still paused when the capture ended.
    CaptureEnd,
}

impl PauseEnd {
    /// As in `pfc.parquet`.
    pub fn as_str(self) -> &'static str {
        match self {
            PauseEnd::Xon => "xon",
            PauseEnd::Expiry => "expiry",
            PauseEnd::CaptureEnd => "capture_end",
        }
    }
}

/// How much a finding costs (docs/analysis.md, "Findings"), in rank order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The fabric is losing throughput to it now.
    Critical,
    /// It costs throughput or will.
    Warning,
    /// Worth knowing.
    Info,
}

impl Severity {
    /// As in `summary.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `(iface, src_ip, dst_ip, dest_qp)`.
pub type FlowKey = (u16, [u8; 16], [u8; 16], u32);

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
    /// The ICRC fails because a sniffer rewrote the frame or a switch cut
    /// it (trimmed), not because it was corrupted: `icrc_ok` is null (see
    /// "ICRC" and "RoCE: trimmed frames" in `docs/analysis.md`).
    pub icrc_unknown: bool,
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
    pub ended_by: PauseEnd,
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
    /// Request frames a switch trimmed that the receiver NAKed (see "RoCE:
    /// trimmed frames"): in neither `icrc_errors` nor `frames.cut`.
    #[serde(skip_serializing_if = "is_zero")]
    pub trimmed: u64,
    /// Mirror copies of the flow's frames (not counted anywhere else).
    pub mirror_copies: u64,
    /// Wireshark display filter showing the flow's frames, and the Decode
    /// As mapping it needs (`crate::render::wireshark` fills them).
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
    /// An interim row: the flow, active longer than `--flow-active`, goes
    /// on in later rows (docs/tables.md, "flows.parquet").
    pub interim: bool,
    /// The values of a flow of a transport beside RoCE (its prefixed
    /// columns); none on a QP's row, whose `transport` is `roce`.
    #[serde(flatten)]
    pub transport: TransportRow,
}

impl FlowRow {
    /// Its transport's own counts less `base`'s (an interim row's; the
    /// interim rows take the shared counts off themselves).
    pub(in crate::analyze) fn subtract_transport(&mut self, base: &FlowRow) {
        self.transport.subtract(&base.transport);
    }

    /// What names the flow's end when its transport's part does
    /// ([`TransportRow::end`]); `None` on a QP's row, which its QP names.
    pub fn transport_end(&self) -> Option<String> {
        self.transport.end()
    }
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
    /// The records of each transport beside RoCE (each absent from
    /// `summary.json` when there were none, as in every RoCE capture).
    #[serde(flatten)]
    pub transports: TransportFrames,
    /// Of the records above, mirror copies (see [`dups`]).
    pub mirror_copies: u64,
    /// RoCE frames cut short of their IP length (by a snap length, a sniffer
    /// or an ERSPAN truncation): their ICRC cannot be checked.
    pub cut: u64,
}

impl FrameCounts {
    /// The records of every kind counted (all but `other`), each with its
    /// kind: the live metrics' `kind` label is [`Kind::as_str`].
    pub fn by_kind(&self) -> [(Kind, u64); 5 + BEYOND_ROCE] {
        let kinds = [(Kind::Roce, self.roce), (Kind::Cnp, self.cnp)]
            .into_iter()
            .chain(self.transports.by_kind())
            .chain([
                (Kind::Pfc, self.pfc),
                (Kind::Pause, self.pause),
                (Kind::Malformed, self.malformed),
            ]);
        let mut out = [(Kind::Other, 0); 5 + BEYOND_ROCE];
        for (slot, kind) in out.iter_mut().zip(kinds) {
            *slot = kind;
        }
        out
    }

    /// Records of transports other than RoCE: what RoCE-only wording must
    /// not claim as RoCE's.
    pub fn beyond_roce(&self) -> u64 {
        self.beyond_roce_by_transport().iter().map(|(_, n)| n).sum()
    }

    /// Those records per transport, in the registry's order.
    pub fn beyond_roce_by_transport(&self) -> [(TransportId, u64); BEYOND_ROCE] {
        self.transports.by_transport()
    }

    /// Adds another analyzer's counts (`shard`); `pauses`: whether its PFC
    /// and PAUSE frames count (analyzer 0's only: every analyzer saw them).
    pub(crate) fn add(&mut self, more: &FrameCounts, pauses: bool) {
        let again = if pauses { 0 } else { more.pfc + more.pause };
        self.total += more.total - again;
        self.roce += more.roce;
        self.cnp += more.cnp;
        if pauses {
            self.pfc += more.pfc;
            self.pause += more.pause;
        }
        self.malformed += more.malformed;
        self.transports.add(&more.transports);
        self.mirror_copies += more.mirror_copies;
        self.cut += more.cut;
    }
}

/// `summary.json`'s `retirement`: what `--flow-idle` and `--flow-active`
/// did over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Retirement {
    pub flow_idle_ns: u64,
    pub flow_active_ns: u64,
    /// Flows retired before the end of the run (their rows written then).
    pub retired_flows: u64,
    /// The flows of each transport beside RoCE retired before the end
    /// (`retired_flows` counts QP flows), each present when the run had
    /// its records, so a RoCE run's summary reads as before.
    #[serde(flatten)]
    pub transports: TransportRetirement,
    /// Interim rows written for flows active longer than `flow_active_ns`.
    pub interim_rows: u64,
    /// The most flows live at once, QP flows and UET PDC directions
    /// together (each a row of `flows.parquet`).
    pub peak_live_flows: u64,
    /// Per finding family, retired flows that were evidence of it but not
    /// among its worst K kept (`evidence_k`): the findings' lists of flows
    /// leave them out.
    pub evidence_k: u64,
    pub evidence_omitted: std::collections::BTreeMap<&'static str, u64>,
    /// Flows live at the end whose rows were written as they were made,
    /// more than the reports hold (docs/analysis.md, "Retirement"): only
    /// the findings' evidence among them is in the reports.
    #[serde(skip_serializing_if = "is_zero")]
    pub rows_streamed_at_end: u64,
}

/// One diagnosis.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub id: &'static str,
    pub severity: Severity,
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
    pub wireshark: Option<Handoff>,
}

/// What a finding carries for Wireshark (flattened into its summary.json
/// object; `crate::render::wireshark` fills it and writes its report line).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Handoff {
    /// Shows the finding's frames: its flows', or for `link-pause` the
    /// PAUSE frames.
    pub display_filter: String,
    /// `tshark -d` arguments (Wireshark: Analyze → Decode As…, UDP port →
    /// InfiniBand) the filter needs to match every frame.
    pub decode_as: Vec<String>,
    /// Flows the filter leaves out to stay under
    /// `crate::render::wireshark::MAX_FILTER_CHARS`.
    pub flows_left_out: usize,
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
    /// The totals of the transports beside RoCE, each its own key.
    #[serde(flatten)]
    pub transports: TransportTotals,
    pub ce_to_cnp: Option<Reaction>,
    pub pfc: Vec<PfcSummary>,
    /// Per tap (interface): what the capture itself did.
    pub taps: Vec<TapSummary>,
    /// Facts about the capture that limit what it can show, in words:
    /// [`Analysis::facts`](super::Analysis) worded by `crate::render::tell`.
    pub capture_facts: Vec<String>,
    /// The PFC congestion trees: who paused whom (see [`super::tree`]).
    pub pfc_trees: Vec<PauseTree>,
    /// Per tap pair with matched frames: its clock offset (see [`super::hops`]).
    pub clock_offsets: Vec<super::hops::ClockOffset>,
    /// Cross-tap matching: null with one tap.
    pub matching: Option<MatchingSummary>,
    /// Per sender with timeout rewinds: its NIC's retransmission timeout
    /// (see [`rto`]).
    pub nic_timeouts: Vec<rto::NicTimeout>,
    /// Flows retired before the end (docs/analysis.md, "Retirement"); absent
    /// when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retirement: Option<Retirement>,
    /// Worded from the analysis' diagnoses by `crate::render::tell`, with
    /// the counters' findings when a counter series was given.
    pub findings: Vec<Finding>,
}

/// One sender of pauses in a tree ([`super::tree`] builds the trees and
/// names their nodes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PauseNode {
    /// The sender's MAC, as in `pfc.parquet`.
    pub src_mac: String,
    /// The interface (tap) its pauses were seen on.
    #[serde(rename = "iface_index")]
    pub iface: u16,
    #[serde(rename = "iface")]
    pub iface_name: String,
    pub kind: NodeKind,
    /// Its first pause in this tree.
    pub first_pause_ns: u64,
    /// Its paused time in this tree (sum of its intervals).
    pub paused_ns: u64,
    /// The node whose pause was running when this one began (index into
    /// the tree's `nodes`; null for the root).
    pub parent: Option<usize>,
    /// From the parent's first pause to this one's.
    pub delay_ns: Option<u64>,
    /// Flows on this tap that stalled (the victims seen there).
    pub victims: Vec<u32>,
    /// The sender's device, from `--topology` (`macs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Where the tap is, from `--topology` (`taps`): `device port`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub place: Option<String>,
}

/// What sent a pause in a tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// It sends RoCE traffic (or CNPs) too: an end host.
    Host,
    Switch,
}

impl NodeKind {
    /// As in `summary.json`'s `pfc_trees`.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Host => "host",
            NodeKind::Switch => "switch",
        }
    }
}

impl std::fmt::Display for NodeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One tree: a root and the pauses it set off, in order of onset.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PauseTree {
    pub priority: u8,
    /// `nodes[0]` is the root.
    pub nodes: Vec<PauseNode>,
}

impl Summary {
    /// Whether a transport other than RoCE has totals of its own beside
    /// RoCE's: RoCE-only wording then says it is RoCE's.
    pub fn beyond_roce(&self) -> bool {
        self.transports.any()
    }

    /// The interface's name, or `if<N>`.
    pub fn iface_name(&self, iface: u16) -> String {
        iface_name(&self.ifaces, iface)
    }
}

/// Where a capture interface comes from, for its `frame.interface_id` in
/// a Wireshark filter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IfaceOrigin {
    /// The interface's index in its own file.
    pub local: u32,
    /// Its file has other interfaces with RoCE too: a filter must name it.
    pub shared_file: bool,
}

/// The interface's name, or `if<N>`.
pub(crate) fn iface_name(names: &BTreeMap<u16, String>, iface: u16) -> String {
    names
        .get(&iface)
        .cloned()
        .unwrap_or_else(|| format!("if{iface}"))
}

/// Gb/s of `bytes` from `first` to `last` (0 when that is one instant).
pub(super) fn gbps(bytes: u64, first: u64, last: u64) -> f64 {
    let dur = last.saturating_sub(first);
    if dur == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 / dur as f64
    }
}

pub(super) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind counted once, in the order the live metrics list them,
    /// the transports' beside RoCE in the registry's place.
    #[test]
    fn frames_by_kind_list_every_kind_once_in_order() {
        let mut f = FrameCounts {
            roce: 1,
            cnp: 2,
            pfc: 3,
            pause: 4,
            malformed: 5,
            ..FrameCounts::default()
        };
        f.transports.count(Kind::Uet);
        f.transports.count(Kind::Roce);
        assert_eq!(
            f.by_kind(),
            [
                (Kind::Roce, 1),
                (Kind::Cnp, 2),
                (Kind::Uet, 1),
                (Kind::Pfc, 3),
                (Kind::Pause, 4),
                (Kind::Malformed, 5),
            ]
        );
        assert_eq!(f.beyond_roce(), 1);
    }
}
