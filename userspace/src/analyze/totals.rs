//! `summary.json`'s sums and tallies beside its [`Summary`](super::Summary)
//! (docs/tables.md, "summary.json"): the totals over all flows, the CE → CNP
//! reaction, per interface and priority PFC, the cross-tap matching and
//! each tap's own counts. Plain data the modules that own it fill
//! (`finish`, `running`).

use serde::Serialize;

use super::{dups, gaps};

pub(super) fn is_zero(n: &u64) -> bool {
    *n == 0
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
    /// Frames a switch trimmed (absent when none, as in a run without).
    #[serde(skip_serializing_if = "is_zero")]
    pub trimmed: u64,
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
    /// Its records: 0 for an interface its capture declared that recorded
    /// nothing (or nothing rocescope reads).
    pub records: u64,
    /// First and last record; null without any.
    pub first_ts_ns: Option<u64>,
    pub last_ts_ns: Option<u64>,
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
    /// RoCE frames a switch trimmed (absent when none): not in
    /// `icrc_failed`.
    #[serde(skip_serializing_if = "is_zero")]
    pub trimmed: u64,
    /// Every RoCE frame came from UDP port 4791 and failed its ICRC: a NIC's
    /// RDMA sniffer rewrote the headers (ICRC results are unknown here).
    pub sniffer: bool,
    /// The capture's own counters (pcapng Interface Statistics Block):
    /// frames dropped by the interface and by the capture host.
    pub isb_ifdrop: Option<u64>,
    pub isb_osdrop: Option<u64>,
}
