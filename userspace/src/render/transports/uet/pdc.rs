//! `uet-spurious-retransmissions` and `uet-receiver-resources` in words
//! (docs/report.md).

use serde_json::json;

use crate::analyze::findings::transports::uet::{PdcRef, UetResources, UetSpurious};
use crate::render::{fmt_count, fmt_duration, fmt_ip};

use crate::render::words::{Names, Words, params};

/// A PDC direction: its ids, addresses, tap and row.
fn describe(p: &PdcRef, n: &Names) -> String {
    let peer = p.dpdcid.map_or_else(|| "?".into(), |d| d.to_string());
    format!(
        "PDC {}→{} {} → {} on {} (flow {})",
        p.spdcid,
        peer,
        fmt_ip(&p.src_ip),
        fmt_ip(&p.dst_ip),
        n.tap(p.iface),
        p.id
    )
}

fn more(other: usize) -> String {
    if other > 0 {
        format!("; and {}", fmt_count(other as u64, "other PDC"))
    } else {
        String::new()
    }
}

pub(super) fn spurious(e: &UetSpurious, n: &Names) -> Words {
    let parts: Vec<String> = e
        .pdcs
        .iter()
        .map(|p| {
            let mut s = format!(
                "{}: {} of {} resends of PSNs the tap had already seen acknowledged ({} requests; times as the tap saw them)",
                describe(&p.pdc, n),
                p.spurious,
                p.retransmissions,
                p.requests
            );
            if let Some(w) = p.resend_wait_min_ns {
                s.push_str(&format!(", timer resends after {}", fmt_duration(w)));
            }
            if let Some(d) = p.ack_delay_max_ns {
                s.push_str(&format!(", ACKs up to {} after the send", fmt_duration(d)));
            }
            s
        })
        .collect();
    let timer = match (e.resend_wait_min_ns, e.ack_delay_max_ns) {
        (Some(w), Some(d)) => format!(
            "the senders' timers resent after as little as {} while ACKs took up to {} to pass the tap: the retransmit timeout is shorter than the delay the packets and their ACKs see",
            fmt_duration(w),
            fmt_duration(d)
        ),
        _ => "resends went out before the ACKs already on their way reached the sender".into(),
    };
    let mut causes = vec![];
    if e.nacks.trimmed > 0 {
        causes.push(format!(
            "{} TRIMMED (a switch cut the packet: congestion, not loss)",
            e.nacks.trimmed
        ));
    }
    let short = codes(&e.nacks);
    if !short.is_empty() {
        causes.push(short);
    }
    if e.nacks.other > 0 {
        causes.push(format!("{} with other codes", e.nacks.other));
    }
    let nacked = if causes.is_empty() {
        "no NACK came before any of them".to_string()
    } else {
        format!(
            "{} of these PDCs' {} resends followed a NACK naming their PSN; the NACKs the taps saw: {}",
            e.nack_resends,
            e.retransmissions,
            causes.join(", ")
        )
    };
    Words {
        title: format!(
            "{} of {} UET retransmissions were spurious: the PSN had already been acknowledged",
            e.spurious, e.retransmissions
        ),
        detail: format!(
            "{}{}; {timer}; {nacked}",
            parts.join("; "),
            more(e.other_pdcs)
        ),
        recommendation: "Raise the UET retransmit timeout above the worst ACK delay the path shows (queueing in the fabric included), or let the sender rely on NACKs and SACKs before its timer; spurious resends are UET's ghost drops: they add load to the queues that delayed the ACKs".into(),
        params: params([
            ("spurious", json!(e.spurious)),
            ("retransmissions", json!(e.retransmissions)),
            ("pdcs", json!(e.pdcs.len() + e.other_pdcs)),
            ("resend_wait_min_ns", json!(e.resend_wait_min_ns)),
            ("ack_delay_max_ns", json!(e.ack_delay_max_ns)),
            ("nack_resends", json!(e.nack_resends)),
            ("nacks_trimmed", json!(e.nacks.trimmed)),
        ]),
    }
}

/// The codes a count names, as the specification spells them.
fn codes(c: &crate::transport::uet::pdc::NackCounts) -> String {
    let named = [
        ("NO_PKT_BUFFER", c.no_pkt_buffer),
        ("NO_PDC_AVAIL", c.no_pdc),
        ("PSN_OOR_WINDOW", c.psn_oor_window),
        ("other no-resource codes", c.no_resource),
    ];
    let parts: Vec<String> = named
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{n} {name}"))
        .collect();
    parts.join(", ")
}

pub(super) fn resources(e: &UetResources, n: &Names) -> Words {
    let parts: Vec<String> = e
        .pdcs
        .iter()
        .map(|p| format!("{} sent {}", describe(&p.pdc, n), codes(&p.nacks)))
        .collect();
    let trimmed = if e.nacks.trimmed > 0 {
        format!(
            "; the same receivers sent {} TRIMMED NACKs, a congestion signal, not counted here",
            e.nacks.trimmed
        )
    } else {
        String::new()
    };
    Words {
        title: format!(
            "UET receivers refused packets for want of resources: {}",
            codes(&e.nacks)
        ),
        detail: format!("{}{}{trimmed}", parts.join("; "), more(e.other_pdcs)),
        recommendation: "The receiving NIC ran short: NO_PKT_BUFFER — more receive buffers or fewer requests in flight per PDC; NO_PDC_AVAIL — raise the PDC limit or reuse PDCs between the same hosts; PSN_OOR_WINDOW — the sender runs ahead of the receiver's window: cap the sender's outstanding packets at the receiver's window".into(),
        params: params([
            ("no_pkt_buffer", json!(e.nacks.no_pkt_buffer)),
            ("no_pdc_avail", json!(e.nacks.no_pdc)),
            ("psn_oor_window", json!(e.nacks.psn_oor_window)),
            ("no_resource", json!(e.nacks.no_resource)),
            ("trimmed", json!(e.nacks.trimmed)),
            ("pdcs", json!(e.pdcs.len() + e.other_pdcs)),
        ]),
    }
}
