//! `uet-trimming` and `uet-spray-imbalance` in words.

use serde_json::json;

use crate::analyze::findings::transports::uet::{
    HEAVY_FACTOR, LATE_FACTOR, LATE_FLOOR_NS, SPRAY_MIN_PACKETS, SprayImbalance, TrimmedPdc,
    UetTrimming,
};
use crate::render::{fmt_count, fmt_duration, fmt_ip, fmt_pct};
use crate::transport::uet::PdcKey;

use crate::render::words::{Names, Words, params};

/// `10.0.0.1 → 10.0.1.1 PDC 0x100 on leaf1-r0`.
fn pdc(key: &PdcKey, n: &Names) -> String {
    format!(
        "{} → {} PDC {:#x} on {}",
        fmt_ip(&key.src_ip),
        fmt_ip(&key.dst_ip),
        key.spdcid,
        n.tap(key.iface)
    )
}

/// A PDC direction in `params`: its tap, addresses and PDC id, and `more`.
fn pdc_json(key: &PdcKey, n: &Names, more: serde_json::Value) -> serde_json::Value {
    let mut v = json!({
        "iface": n.tap(key.iface),
        "src_ip": fmt_ip(&key.src_ip),
        "dst_ip": fmt_ip(&key.dst_ip),
        "spdcid": key.spdcid,
    });
    if let (Some(v), serde_json::Value::Object(more)) = (v.as_object_mut(), more) {
        v.extend(more);
    }
    v
}

fn us(ns: f64) -> String {
    fmt_duration(ns.round() as u64)
}

fn reaction(p: &TrimmedPdc) -> String {
    let ecn = format!(
        "ECN: {} of its requests CE-marked, {} of {} ACKs with the M flag",
        p.ce, p.answers.acks_ecn, p.answers.acks
    );
    let nscc = if p.answers.acks_nscc > 0 {
        format!(
            "; NSCC: {} of {} congestion-control ACKs asked the sender to hold back",
            p.answers.acks_cwnd_pend, p.answers.acks_nscc
        )
    } else {
        String::new()
    };
    // At a tap near the initiator, PSNs past the last cumulative ACK are
    // its window; near the target, ACKs follow at once and it stays small.
    let window = match (p.inflight_before, p.inflight_after) {
        (Some(b), Some(a)) => format!(
            "; PSNs in flight past the last cumulative ACK at this tap: {b:.1} on average before the first trim, {a:.1} after ({})",
            if a < b {
                "fewer: the window closed"
            } else {
                "not fewer"
            }
        ),
        _ => String::new(),
    };
    format!("{ecn}{nscc}{window}")
}

pub(super) fn trimming(e: &UetTrimming, n: &Names) -> Words {
    let trimmed: u64 = e.taps.iter().map(|(_, t)| t.trimmed).sum();
    let nacks: u64 = e.taps.iter().map(|(_, t)| t.trimmed_nacks).sum();
    let mut lines = vec![
        "Trimmed requests are a congestion signal, not loss: a switch whose egress queue overflowed cut the payload and re-marked the DSCP instead of dropping the packet, the target NACKed it and the initiator resent it at once. A tap that records trimmed requests is downstream of the trimming queue; one that records only trimmed NACKs is upstream of it.".to_string(),
    ];
    for (iface, t) in &e.taps {
        lines.push(format!(
            "{}: {} of {} arrived trimmed (short and re-marked); {}.",
            n.tap(*iface),
            t.trimmed,
            fmt_count(t.requests, "request"),
            fmt_count(t.trimmed_nacks, "trimmed NACK"),
        ));
    }
    for p in &e.pdcs {
        lines.push(format!(
            "{}: {} trimmed and {} of {}, {} resent (RETX); {}.",
            pdc(&p.key, n),
            p.trimmed,
            fmt_count(p.answers.trimmed_nacks, "trimmed NACK"),
            fmt_count(p.requests, "request"),
            p.retransmissions,
            reaction(p),
        ));
    }
    if e.other_pdcs > 0 {
        lines.push(format!(
            "{} more with trims.",
            fmt_count(e.other_pdcs, "PDC direction")
        ));
    }
    let worst = e
        .taps
        .iter()
        .max_by_key(|(i, t)| (t.trimmed, t.trimmed_nacks, *i));
    let title = match worst {
        Some((iface, t)) if t.trimmed > 0 => format!(
            "UET trimming: switches trimmed {} ({} at {}), the fabric's congestion signal",
            fmt_count(trimmed, "request"),
            fmt_pct(t.trimmed as f64 / t.requests.max(1) as f64),
            n.tap(*iface)
        ),
        _ => format!(
            "UET trimming: targets NACKed {} as trimmed downstream of the taps, the fabric's congestion signal",
            fmt_count(nacks, "request")
        ),
    };
    let closed: Vec<bool> = e
        .pdcs
        .iter()
        .filter_map(TrimmedPdc::window_closed)
        .collect();
    Words {
        title,
        detail: lines.join("\n"),
        recommendation: "Trimming says an egress queue overflowed: find the port (upstream of the taps that record trimmed requests; the switches' trim counters name it) and relieve it — fewer initiators writing to one target at once, or the load spread over more targets. Let ECN mark well before the queue trims (the ECN threshold far below the trim threshold) so that NSCC slows the senders before packets are cut; ACKs with the M flag but no window closing mean the initiators do not react — check NSCC's target delay and that it is enabled on the NICs. Keep trimmed packets on a high-priority queue so their NACKs come back at once, and the retransmit timer above the queueing delay so that a trimmed packet is resent on its NACK only".into(),
        params: params([
            (
                "taps",
                json!(e.taps.iter().map(|(i, _)| n.tap(*i)).collect::<Vec<_>>()),
            ),
            ("trimmed_requests", json!(trimmed)),
            ("trimmed_nacks", json!(nacks)),
            (
                "pdcs",
                json!(
                    e.pdcs
                        .iter()
                        .map(|p| pdc_json(&p.key, n, json!({
                            "dpdcid": p.dpdcid,
                            "trimmed": p.trimmed,
                            "trimmed_nacks": p.answers.trimmed_nacks,
                            "acks_ecn": p.answers.acks_ecn,
                            "window_closed": p.window_closed(),
                        })))
                        .collect::<Vec<_>>()
                ),
            ),
            ("other_pdcs", json!(e.other_pdcs)),
            ("windows_closed", json!(closed.iter().filter(|c| **c).count())),
        ]),
    }
}

pub(super) fn spray_imbalance(e: &SprayImbalance, n: &Names) -> Words {
    let mut lines = vec![format!(
        "Per PDC direction with at least {SPRAY_MIN_PACKETS} requests at a tap: an entropy value (a path) is heavy when it carried at least {HEAVY_FACTOR}× the direction's mean per value, late when its requests arrived on average at least {LATE_FACTOR}× later behind higher PSNs than the direction's other values' (and at least {}).",
        us(LATE_FLOOR_NS)
    )];
    for p in &e.pdcs {
        let mut parts = Vec::new();
        for l in &p.late {
            parts.push(format!(
                "entropy {} late: {} of its {} arrived behind a higher PSN, on average {} (up to {}) against {} for the others",
                l.entropy,
                l.late_packets,
                fmt_count(l.packets, "request"),
                us(l.mean_late_ns),
                fmt_duration(l.max_late_ns),
                us(l.others_mean_late_ns),
            ));
        }
        for h in &p.heavy {
            parts.push(format!(
                "entropy {} heavy: {} ({:.1}× the mean)",
                h.entropy,
                fmt_count(h.packets, "request"),
                h.factor
            ));
        }
        lines.push(format!(
            "{}: {} over {} ({} of them on these): {}.",
            pdc(&p.key, n),
            fmt_count(p.requests, "request"),
            fmt_count(p.entropies, "entropy value"),
            fmt_pct(p.share),
            parts.join("; ")
        ));
    }
    if e.other_pdcs > 0 {
        lines.push(format!(
            "{} more.",
            fmt_count(e.other_pdcs, "uneven PDC direction")
        ));
    }
    let first = &e.pdcs[0];
    let title = match (first.late.first(), first.heavy.first()) {
        (Some(l), _) => format!(
            "UET spray imbalance: entropy {} of {} arrived {} behind its PDC's other paths on average",
            l.entropy,
            pdc(&first.key, n),
            us(l.mean_late_ns)
        ),
        (None, Some(h)) => format!(
            "UET spray imbalance: entropy {} of {} carried {:.1}× its share",
            h.entropy,
            pdc(&first.key, n),
            h.factor
        ),
        (None, None) => "UET spray imbalance".into(),
    };
    Words {
        title,
        detail: lines.join("\n"),
        recommendation: "An entropy value is a path: one whose packets arrive behind its PDC's others crosses a slower or busier link (a degraded or flapping link, a congested spine, a longer route) — find it by the switches' ECMP hash of that UDP source port (or a traceroute from the same source port) and repair or drain the link; reordering across paths is normal under spraying, but a path this much slower holds the target's reorder state and delays every message that sprays over it. A heavy value means the initiator's spraying favours one path: check the NIC's entropy selection (how many values it sprays over per PDC, and whether its path selection moved traffic there on purpose, away from congested paths)".into(),
        params: params([
            (
                "pdcs",
                json!(
                    e.pdcs
                        .iter()
                        .map(|p| pdc_json(&p.key, n, json!({
                            "late_entropies": p.late.iter().map(|l| l.entropy).collect::<Vec<_>>(),
                            "heavy_entropies": p.heavy.iter().map(|h| h.entropy).collect::<Vec<_>>(),
                            "share": p.share,
                        })))
                        .collect::<Vec<_>>()
                ),
            ),
            ("other_pdcs", json!(e.other_pdcs)),
            ("heavy_factor", json!(HEAVY_FACTOR)),
            ("late_factor", json!(LATE_FACTOR)),
        ]),
    }
}
