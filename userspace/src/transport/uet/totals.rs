//! UET's totals over a run (`summary.json`'s `uet`, docs/tables.md): sums
//! over every PDC direction the taps saw, retired before the end or live
//! at it, so they do not depend on when directions retired. A direction
//! adds itself (`transport::uet::pdc`).

use serde::Serialize;

/// Sums over PDC directions, each counted once per tap it was seen at (a
/// PDC seen at two taps counts twice, as its rows do in `flows.parquet`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UetTotals {
    /// Rows of `flows.parquet` with `transport` `uet`, retired ones too.
    pub pdc_directions: u64,
    /// Of them, those that sent RUD/ROD requests.
    pub request_directions: u64,
    /// RUD/ROD requests (`data_packets` of their rows).
    pub data_packets: u64,
    pub payload_bytes: u64,
    /// Requests with the RETX flag.
    pub retrans_packets: u64,
    /// `retrans_packets / data_packets` (0 without data).
    pub retrans_rate: f64,
    /// RETX requests of a PSN an ACK the tap saw had already covered.
    pub spurious_retrans: u64,
    /// Of the RETX requests, those no NACK asked for: the sender's timer.
    pub timeout_resends: u64,
    pub acks: u64,
    pub nacks: u64,
    /// NACKs by the code groups of the `uet_nacks_*` columns.
    pub nacks_trimmed: u64,
    pub nacks_no_pdc: u64,
    pub nacks_no_pkt_buffer: u64,
    pub nacks_psn_oor_window: u64,
    pub nacks_no_resource: u64,
    pub nacks_other: u64,
    /// PSNs cumulative ACKs covered, and PSNs only SACK bits covered.
    pub delivered: u64,
    pub sacked: u64,
    /// ECN (docs/report.md, "Capture"): requests that arrived CE-marked,
    /// and ACKs with the M flag (the target echoing a CE mark).
    pub ce: u64,
    pub acks_ecn: u64,
}
