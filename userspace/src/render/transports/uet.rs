//! UET's lines in the report's Capture section and the HTML page's facts
//! (docs/report.md, "Capture"): its totals over PDC directions and its ECN;
//! its clause in `mirror-duplicates`' words; and its findings in words:
//! over its paths (`paths`: `uet-trimming`, `uet-spray-imbalance`) and its
//! PDC directions (`pdc`: `uet-spurious-retransmissions`,
//! `uet-receiver-resources`).

mod paths;
mod pdc;

use crate::analyze::findings::transports::uet::UetEvidence;
use crate::render::words::{Names, Words};
use crate::render::{fmt_count, fmt_pct};
use crate::transport::uet::UetTotals;

/// UET's totals (`summary.json`'s `uet`) the way the RoCE line reads: PDC
/// directions, requests and resends, NACKs by what their code says (the
/// groups of the `uet_nacks_*` columns, only those that came), and what
/// the ACKs covered.
pub(super) fn totals_line(u: &UetTotals) -> String {
    let groups = [
        (u.nacks_trimmed, "trimmed"),
        (u.nacks_no_pdc, "no PDC"),
        (u.nacks_no_pkt_buffer, "no packet buffer"),
        (u.nacks_psn_oor_window, "PSN out of window"),
        (u.nacks_no_resource, "other resource short"),
        (u.nacks_other, "other code"),
    ];
    let by: Vec<String> = groups
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
    let nacks = if by.is_empty() {
        fmt_count(u.nacks, "NACK")
    } else {
        format!("{} ({})", fmt_count(u.nacks, "NACK"), by.join(", "))
    };
    format!(
        "UET: {} ({} sending); {}, {} retransmitted ({}), {} spurious; {nacks}; {} delivered, {} SACKed",
        fmt_count(u.pdc_directions, "PDC direction"),
        u.request_directions,
        fmt_count(u.data_packets, "data packet"),
        u.retrans_packets,
        fmt_pct(u.retrans_rate),
        u.spurious_retrans,
        u.delivered,
        u.sacked,
    )
}

/// UET's ECN: no CNPs, the mark comes back in the ACKs' M flag
/// (docs/report.md, "Capture").
pub(super) fn ecn_line(u: &UetTotals) -> String {
    format!(
        "UET ECN: {}; {} of {} echoed a mark (M flag)",
        fmt_count(u.ce, "CE-marked request"),
        u.acks_ecn,
        fmt_count(u.acks, "ACK")
    )
}

/// `mirror-duplicates`: `n` copies of UET frames, and what they matched on.
pub(super) fn copies_clause(n: u64) -> String {
    format!(
        "; {n} of UET PDCs: same addresses, PDC, PDS type, flags, PSN and every other header field"
    )
}

/// What a `uet-*` finding says: UET's one arm in `transports::words`.
pub(super) fn words(e: &UetEvidence, n: &Names) -> Words {
    match e {
        UetEvidence::Trimming(e) => paths::trimming(e, n),
        UetEvidence::Spray(e) => paths::spray_imbalance(e, n),
        UetEvidence::Spurious(e) => pdc::spurious(e, n),
        UetEvidence::Resources(e) => pdc::resources(e, n),
    }
}
