//! `ghost-retransmissions` (with the NIC timeout advice), `real-loss` and
//! `receiver-not-ready` in words.

use serde_json::json;

use crate::analyze::Trigger;
use crate::analyze::findings::{Ghost, RealLoss, Rnr};
use crate::analyze::rto::NicTimeout;
use crate::render::{fmt_count, fmt_duration};

use super::{Names, Words, params};

/// A rewind's trigger (`events.parquet`'s `trigger`), in words.
fn trigger_words(trigger: Trigger) -> &'static str {
    match trigger {
        Trigger::Nak => "after a NAK",
        Trigger::Rnr => "after an RNR NAK",
        Trigger::Timeout => "on a timeout",
    }
}

pub(super) fn ghost(e: &Ghost, x: &Names) -> Words {
    let (timeouts, paused, spurious) = (e.timeouts, e.paused, e.spurious);
    let mut detail = format!(
        "{} with no NAK before them on {}, {paused} of them while the flow's priority was paused: the packets were delayed, not lost (already acknowledged, acknowledged sooner after the resend than a round trip allows, or paused while the sender waited).\n{spurious} of {} had already been acknowledged (spurious).",
        fmt_count(timeouts, "timeout-triggered Go-Back-N rewind"),
        fmt_count(e.flows, "flow"),
        fmt_count(e.retrans, "retransmitted packet"),
    );
    let idle_max = e.idle_max_ns;
    if let Some(m) = e.idle_min_ns {
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
    match &e.longest {
        Some(p) => detail.push_str(&format!(
            "\nLongest pause covering them: {}.",
            x.pause_text(p)
        )),
        None => detail.push_str("\nNo PFC pause covered them."),
    }
    if let Some(n) = &e.worst {
        detail.push_str(&format!(
            "\nWorst: {} at {} rewound {} back to PSN {} after {} idle, {}",
            x.describe(&n.flow),
            x.at(n.ts_ns),
            fmt_count(n.depth, "PSN"),
            n.psn,
            fmt_duration(n.idle_ns),
            trigger_words(n.trigger)
        ));
        if n.trigger == Trigger::Timeout {
            detail.push_str(" (no NAK preceded it)");
        }
        detail.push_str(&format!(
            "; {} of the {} rewound PSNs had already been acknowledged; the flow resent {} in all, {} of them already acknowledged",
            n.acked, n.depth, fmt_count(n.flow_retrans, "packet"), n.flow_spurious
        ));
        if let Some((priority, paused_ns)) = n.paused {
            detail.push_str(&format!(
                "; priority {} was paused for {} of that idle time",
                priority,
                fmt_duration(paused_ns)
            ));
            if let Some(p) = &n.cover {
                detail.push_str(&format!(", covered by the pause of {}", x.pause_text(p)));
            }
        }
        detail.push('.');
    }
    let against = if e.longest.is_some() {
        "the longest pause that covered these rewinds"
    } else {
        "twice the longest wait before them"
    };
    let mut recommendation = match nic_timeout_text(&e.nics) {
        Some(t) => format!("{t}; "),
        None => String::new(),
    };
    if let Some(p) = e.pause_max_ns {
        recommendation.push_str(&format!(
            "pauses on these flows' priorities last up to {}. ",
            fmt_duration(p)
        ));
    }
    let t = e.exponent;
    recommendation.push_str(&format!(
        "Packets were delayed, not lost: raise the minimum retransmission timeout above {against} ({}): the local ACK timeout is 4.096 µs × 2^T, so T ≥ {t} ({}) (ibv_modify_qp attr.timeout / NCCL_IB_TIMEOUT, or the NIC's minimum-RTO setting). Then shorten the pauses: mark ECN earlier than PFC triggers so DCQCN slows senders first.",
        fmt_duration(e.target_ns),
        fmt_duration(e.timeout_ns)
    ));
    let mut words = Words {
        title: format!(
            "{} without a NAK: packets delayed, not lost ({spurious} resent though acknowledged)",
            fmt_count(timeouts, "timeout rewind")
        ),
        detail,
        recommendation,
        params: params([
            ("timeout_rewinds", json!(timeouts)),
            ("timeout_rewinds_paused", json!(paused)),
            ("spurious_retrans", json!(spurious)),
            ("retrans_packets", json!(e.retrans)),
            ("idle_min_ns", json!(e.idle_min_ns)),
            ("idle_max_ns", json!(idle_max)),
            (
                "longest_covering_pause_ns",
                json!(e.longest.as_ref().map(|p| p.end_ns - p.start_ns)),
            ),
            ("timeout_must_exceed_ns", json!(e.target_ns)),
            ("recommended_timeout_exponent", json!(t)),
            ("recommended_timeout_ns", json!(e.timeout_ns)),
            (
                "longest_pause_on_their_priorities_ns",
                json!(e.pause_max_ns),
            ),
        ]),
    };
    super::queues::cite(&mut words, e.telemetry.as_ref());
    words
}

/// What the senders' own timeout rewinds say about their NICs' timeout:
/// measured where a rewind no pause held up shows it, else bounded.
fn nic_timeout_text(nics: &[NicTimeout]) -> Option<String> {
    let parts: Vec<String> = nics
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

pub(super) fn real_loss(e: &RealLoss, x: &Names) -> Words {
    let (naks, nak_rewinds, nak_lost, before_tap, timeouts) =
        (e.naks, e.nak_rewinds, e.nak_lost, e.before_tap, e.timeouts);
    let mut parts = vec![format!("On {}:", fmt_count(e.flows, "flow"))];
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
    if let Some(f) = &e.most {
        detail.push_str(&format!(
            "\nMost: {} with {} (deepest {}), {} lost before the tap.",
            x.describe(&f.flow),
            fmt_count(f.nak_rewinds, "NAK rewind"),
            fmt_count(f.max_depth, "PSN"),
            fmt_count(f.lost, "PSN"),
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
    Words {
        title: format!("Packets really lost: {}", headline.join(", ")),
        detail,
        recommendation: "A NAK means the responder saw a PSN hole; a PSN first seen in a resend was lost upstream of the tap. Find the drop on the path (switch discard, CRC/FCS and buffer counters on the lossless priority, PFC headroom).".into(),
        params: params([
            ("naks", json!(naks)),
            ("nak_rewinds", json!(nak_rewinds)),
            ("psns_lost_before_tap", json!(lost)),
            ("unexplained_timeouts", json!(timeouts)),
        ]),
    }
}

pub(super) fn rnr(e: &Rnr) -> Words {
    let (n, r) = (e.rnr_naks, e.rnr_rewinds);
    Words {
        title: format!(
            "{}: receivers ran out of posted receive buffers",
            fmt_count(n, "RNR NAK")
        ),
        detail: format!(
            "{} and {} on {}.",
            fmt_count(n, "RNR NAK"),
            fmt_count(r, "RNR-triggered rewind"),
            fmt_count(e.flows, "flow")
        ),
        recommendation: "Post receive buffers earlier or deepen the receive queue / SRQ; RNR retries wait the RNR timer each time.".into(),
        params: params([("rnr_naks", json!(n)), ("rnr_rewinds", json!(r))]),
    }
}
