//! Retransmission findings: ghost retransmissions (with the NIC timeout
//! advice), real loss, RNR NAKs (`docs/analysis.md`, *Ghost retransmissions*,
//! *NIC retransmission timeout*, *Rewinds*, *NAKs*).

use serde_json::json;

use crate::analyze::rto::{ACK_TIMEOUT_UNIT_NS, NicTimeout};
use crate::analyze::{Finding, Flow, fmt_count, fmt_duration};

use super::input::{Input, params, timeout_exponent};

/// A rewind's trigger (`events.parquet`'s `trigger`), in words.
fn trigger_words(trigger: &str) -> &'static str {
    match trigger {
        "nak" => "after a NAK",
        "rnr" => "after an RNR NAK",
        _ => "on a timeout",
    }
}

pub(super) fn ghost(x: &Input, out: &mut Vec<Finding>) {
    let flows: Vec<&Flow> = x
        .flows()
        .filter(|f| f.rewind().rewinds_timeout_ghost > 0 || f.rewind().spurious > 0)
        .collect();
    if flows.is_empty() {
        return;
    }
    let timeouts: u64 = flows.iter().map(|f| f.rewind().rewinds_timeout_ghost).sum();
    let paused: u64 = flows
        .iter()
        .map(|f| f.rewind().timeout_rewinds_paused)
        .sum();
    let spurious: u64 = flows.iter().map(|f| f.rewind().spurious).sum();
    let retrans: u64 = flows.iter().map(|f| f.retrans).sum();
    let idle_min = flows
        .iter()
        .filter(|f| f.rewind().rewinds_timeout > 0)
        .map(|f| f.rewind().timeout_idle_min_ns)
        .min();
    let idle_max = flows
        .iter()
        .map(|f| f.rewind().timeout_idle_max_ns)
        .max()
        .unwrap_or(0);
    let longest = x.longest_covering_pause();
    let mut detail = format!(
        "{} with no NAK before them on {}, {paused} of them while the flow's priority was paused: the packets were delayed, not lost (already acknowledged, acknowledged sooner after the resend than a round trip allows, or paused while the sender waited).\n{spurious} of {} had already been acknowledged (spurious).",
        fmt_count(timeouts, "timeout-triggered Go-Back-N rewind"),
        fmt_count(flows.len() as u64, "flow"),
        fmt_count(retrans, "retransmitted packet"),
    );
    if let Some(m) = idle_min {
        detail.push_str(&if m == idle_max {
            format!("\nIdle before the rewinds: {}.", fmt_duration(m))
        } else {
            format!(
                "\nIdle before the rewinds: {} to {}.",
                fmt_duration(m),
                fmt_duration(idle_max)
            )
        });
    }
    match longest {
        Some(p) => detail.push_str(&format!(
            "\nLongest pause covering them: {}.",
            x.pause_text(p)
        )),
        None => detail.push_str("\nNo PFC pause covered them."),
    }
    // The most telling rewind.
    if let Some((f, n)) = flows
        .iter()
        .filter_map(|f| Some((f, f.rewind().note?)))
        .max_by_key(|(_, n)| n.rank())
    {
        detail.push_str(&format!(
            "\nWorst: {} at {} rewound {} back to PSN {} after {} idle, {}",
            x.describe(f),
            x.at(n.ts),
            fmt_count(n.depth, "PSN"),
            n.psn,
            fmt_duration(n.idle_ns),
            trigger_words(n.trigger)
        ));
        if n.trigger == "timeout" {
            detail.push_str(" (no NAK preceded it)");
        }
        detail.push_str(&format!(
            "; {} of the {} rewound PSNs had already been acknowledged; the flow resent {} in all, {} of them already acknowledged",
            n.acked, n.depth, fmt_count(f.retrans, "packet"), f.rewind().spurious
        ));
        if let Some(c) = n.cover.filter(|_| n.paused_ns > 0) {
            let p = x.pfc.iter().find(|p| {
                p.iface == f.iface
                    && p.src_mac == c.src_mac
                    && p.priority == c.priority
                    && p.start_ns == c.start_ns
            });
            detail.push_str(&format!(
                "; priority {} was paused for {} of that idle time",
                c.priority,
                fmt_duration(n.paused_ns)
            ));
            if let Some(p) = p {
                detail.push_str(&format!(", covered by the pause of {}", x.pause_text(p)));
            }
        }
        detail.push('.');
    }
    let target = match longest {
        Some(p) => p.end_ns - p.start_ns,
        None => idle_max.saturating_mul(2).max(1),
    };
    let t = timeout_exponent(target);
    let against = if longest.is_some() {
        "the longest pause that covered these rewinds"
    } else {
        "twice the longest wait before them"
    };
    let pause_max = flows
        .iter()
        .flat_map(|f| {
            x.pfc
                .iter()
                .filter(move |p| p.iface == f.iface && Some(p.priority) == f.priority)
        })
        .map(|p| p.end_ns - p.start_ns)
        .max();
    let ids: Vec<u32> = flows.iter().map(|f| f.id).collect();
    let nics: Vec<&NicTimeout> = x
        .summary
        .nic_timeouts
        .iter()
        .filter(|n| n.flows.iter().any(|id| ids.contains(id)))
        .collect();
    let mut recommendation = match nic_timeout_text(&nics) {
        Some(t) => format!("{t}; "),
        None => String::new(),
    };
    if let Some(p) = pause_max {
        recommendation.push_str(&format!(
            "pauses on these flows' priorities last up to {}. ",
            fmt_duration(p)
        ));
    }
    let timeout_ns = ACK_TIMEOUT_UNIT_NS << t;
    recommendation.push_str(&format!(
        "Packets were delayed, not lost: raise the minimum retransmission timeout above {against} ({}): the local ACK timeout is 4.096 µs × 2^T, so T ≥ {t} ({}) (ibv_modify_qp attr.timeout / NCCL_IB_TIMEOUT, or the NIC's minimum-RTO setting). Then shorten the pauses: mark ECN earlier than PFC triggers so DCQCN slows senders first.",
        fmt_duration(target),
        fmt_duration(timeout_ns)
    ));
    out.push(Finding {
        wireshark: None,
        id: "ghost-retransmissions",
        impact: x.traffic_share(&ids),
        severity: if paused > 0 || spurious > 0 {
            "critical"
        } else {
            "warning"
        },
        title: format!(
            "{} without a NAK: packets delayed, not lost ({spurious} resent though acknowledged)",
            fmt_count(timeouts, "timeout rewind")
        ),
        detail,
        recommendation,
        flows: flows.iter().map(|f| f.id).collect(),
        params: params([
            ("timeout_rewinds", json!(timeouts)),
            ("timeout_rewinds_paused", json!(paused)),
            ("spurious_retrans", json!(spurious)),
            ("retrans_packets", json!(retrans)),
            ("idle_min_ns", json!(idle_min)),
            ("idle_max_ns", json!(idle_max)),
            (
                "longest_covering_pause_ns",
                json!(longest.map(|p| p.end_ns - p.start_ns)),
            ),
            ("timeout_must_exceed_ns", json!(target)),
            ("recommended_timeout_exponent", json!(t)),
            ("recommended_timeout_ns", json!(timeout_ns)),
            ("longest_pause_on_their_priorities_ns", json!(pause_max)),
        ]),
    });
}

/// What the senders' own timeout rewinds say about their NICs' timeout:
/// measured where a rewind no pause held up shows it, else bounded.
fn nic_timeout_text(nics: &[&NicTimeout]) -> Option<String> {
    // A sender seen at several taps: the tap with the most to say.
    let mut best: Vec<&NicTimeout> = Vec::new();
    for n in nics {
        match best.iter_mut().find(|b| b.src_ip == n.src_ip) {
            Some(b) if (n.samples, n.bounded) > (b.samples, b.bounded) => *b = n,
            Some(_) => {}
            None => best.push(n),
        }
    }
    let parts: Vec<String> = best
        .iter()
        .filter_map(|n| match (n.timeout_us, n.exponent, n.lower_us, n.upper_us) {
            (Some(us), Some(t), ..) => Some(format!(
                "{}'s NIC times out after ≈ {us:.1} µs (T≈{t}; {} timeout rewinds no pause held up, waits up to {:.1} µs)",
                n.src_ip,
                n.samples,
                n.max_wait_us.unwrap_or(us)
            )),
            (None, _, Some(lo), Some(hi)) => Some(format!(
                "{}'s NIC times out after more than {lo:.1} µs and at most {hi:.1} µs (each of its {} timeout rewinds waited out a pause, so the timer fired during it)",
                n.src_ip, n.bounded
            )),
            _ => None,
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// `real-loss`: only what the capture shows was lost (NAKs, PSNs first seen
/// in a resend, timeouts nothing shows were delays). Unresolved PSNs are not
/// evidence: the summary's capture facts say them.
pub(super) fn real_loss(x: &Input, out: &mut Vec<Finding>) {
    let flows: Vec<&Flow> = x
        .flows()
        .filter(|f| {
            f.rewind().rewinds_nak > 0
                || f.nak().naks > 0
                || f.gap().gap_counts.lost() > 0
                || f.rewind().rewinds_timeout_unexplained > 0
        })
        .collect();
    if flows.is_empty() {
        return;
    }
    let sum = |g: fn(&Flow) -> u64| -> u64 { flows.iter().map(|f| g(f)).sum() };
    let naks = sum(|f| f.nak().naks);
    let nak_rewinds = sum(|f| f.rewind().rewinds_nak);
    let nak_lost = sum(|f| f.gap().gap_counts.nak_lost);
    let before_tap = sum(|f| f.gap().gap_counts.lost_before_tap);
    let timeouts = sum(|f| f.rewind().rewinds_timeout_unexplained);
    let mut parts = vec![format!("On {}:", fmt_count(flows.len() as u64, "flow"))];
    if naks + nak_rewinds > 0 {
        parts.push(format!(
            "NAK-driven loss: {}, {}, {} a NAK named.",
            fmt_count(naks, "NAK"),
            fmt_count(nak_rewinds, "NAK-triggered rewind"),
            fmt_count(nak_lost, "missing PSN")
        ));
    }
    if before_tap > 0 {
        parts.push(format!(
            "Resends of lost packets: {} the tap first saw in a resend (lost before the tap).",
            fmt_count(before_tap, "PSN")
        ));
    }
    if timeouts > 0 {
        parts.push(format!(
            "{} of packets the tap had seen, with no sign they were only delayed (not acknowledged before the resend, no pause while waiting): lost after the tap.",
            fmt_count(timeouts, "timeout rewind")
        ));
    }
    let mut detail = parts.join("\n");
    if let Some(f) = flows.iter().max_by_key(|f| {
        (
            f.rewind().rewinds_nak
                + f.gap().gap_counts.lost()
                + f.rewind().rewinds_timeout_unexplained,
            f.rewind().max_depth,
        )
    }) {
        detail.push_str(&format!(
            "\nMost: {} with {} (deepest {}), {} lost before the tap.",
            x.describe(f),
            fmt_count(f.rewind().rewinds_nak, "NAK rewind"),
            fmt_count(f.rewind().max_depth, "PSN"),
            fmt_count(f.gap().gap_counts.lost(), "PSN"),
        ));
    }
    let lost = before_tap + nak_lost;
    let mut headline = Vec::new();
    for (n, what) in [
        (nak_rewinds, fmt_count(nak_rewinds, "NAK rewind")),
        (
            lost,
            format!("{} lost before the tap", fmt_count(lost, "PSN")),
        ),
        (timeouts, fmt_count(timeouts, "unexplained timeout")),
    ] {
        if n > 0 {
            headline.push(what);
        }
    }
    out.push(Finding {
        wireshark: None,
        id: "real-loss",
        impact: x.traffic_share(&flows.iter().map(|f| f.id).collect::<Vec<_>>()),
        severity: "warning",
        title: format!("Packets really lost: {}", headline.join(", ")),
        detail,
        recommendation: "A NAK means the responder saw a PSN hole; a PSN first seen in a resend was lost upstream of the tap. Find the drop on the path (switch discard, CRC/FCS and buffer counters on the lossless priority, PFC headroom).".into(),
        flows: flows.iter().map(|f| f.id).collect(),
        params: params([
            ("naks", json!(naks)),
            ("nak_rewinds", json!(nak_rewinds)),
            ("psns_lost_before_tap", json!(lost)),
            ("unexplained_timeouts", json!(timeouts)),
        ]),
    });
}

pub(super) fn rnr(x: &Input, out: &mut Vec<Finding>) {
    let flows: Vec<&Flow> = x
        .flows()
        .filter(|f| f.nak().rnr_naks > 0 || f.rewind().rewinds_rnr > 0)
        .collect();
    if flows.is_empty() {
        return;
    }
    let n: u64 = flows.iter().map(|f| f.nak().rnr_naks).sum();
    let r: u64 = flows.iter().map(|f| f.rewind().rewinds_rnr).sum();
    out.push(Finding {
        wireshark: None,
        id: "receiver-not-ready",
        impact: x.traffic_share(&flows.iter().map(|f| f.id).collect::<Vec<_>>()),
        severity: "warning",
        title: format!(
            "{}: receivers ran out of posted receive buffers",
            fmt_count(n, "RNR NAK")
        ),
        detail: format!(
            "{} and {} on {}.",
            fmt_count(n, "RNR NAK"),
            fmt_count(r, "RNR-triggered rewind"),
            fmt_count(flows.len() as u64, "flow")
        ),
        recommendation: "Post receive buffers earlier or deepen the receive queue / SRQ; RNR retries wait the RNR timer each time.".into(),
        flows: flows.iter().map(|f| f.id).collect(),
        params: params([("rnr_naks", json!(n)), ("rnr_rewinds", json!(r))]),
    });
}
