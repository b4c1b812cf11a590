//! `congested-queue` in words.

use serde_json::json;

use crate::analyze::findings::queues::{CONGESTED_LATENCY, CongestedQueue, QueueCitation, QueueId};
use crate::render::{fmt_count, fmt_ip};

use super::{Names, Words, params};

/// A queue as the findings name it (also the live findings' `subject`).
pub fn queue_name(id: &QueueId) -> String {
    format!(
        "switch {} port {} queue {}",
        id.switch_id, id.egress_port, id.queue_id
    )
}

pub(super) fn congested_queue(q: &CongestedQueue, x: &Names) -> Words {
    let id = &q.queue;
    let queue = queue_name(id);
    let mut detail = format!(
        "{} of {} telemetry hops about it congested (hop latency at least {CONGESTED_LATENCY}, or flagged) from {} to {}; occupancy peaked at {} at {}, hop latency at {} at {} (the switch's units)",
        q.congested_hops,
        q.hops,
        x.at(q.first_ns),
        x.at(q.last_ns),
        q.peak_occupancy,
        x.at(q.peak_occupancy_ns),
        q.peak_latency,
        x.at(q.peak_latency_ns),
    );
    if q.dropped() > 0 {
        let reasons: Vec<String> = q
            .drops
            .iter()
            .map(|(reason, n)| match reason {
                Some(r) => format!("{n} with drop reason {r}"),
                None => format!("{n} without a reason"),
            })
            .collect();
        detail.push_str(&format!(
            ". The switch reported {} here: {} (network loss)",
            fmt_count(q.dropped(), "dropped packet"),
            reasons.join(", ")
        ));
    }
    if !q.flows.is_empty() {
        let listed: Vec<String> = q
            .flows
            .iter()
            .map(|f| match &f.seen {
                Some(r) => x.describe(r),
                None => format!(
                    "{} → {} QP {} (in the telemetry only)",
                    fmt_ip(&f.src_ip),
                    fmt_ip(&f.dst_ip),
                    f.dest_qp
                ),
            })
            .collect();
        detail.push_str(&format!(". Flows through it: {}", listed.join("; ")));
        if q.flows_more > 0 {
            detail.push_str(&format!(" and {} more", q.flows_more));
        }
    }
    let e = &q.endpoints;
    detail.push_str(&format!(
        ". At the endpoints' taps these flows carried {} and went back {} ({} of them timeouts with nothing lost)",
        fmt_count(e.ce, "CE mark"),
        fmt_count(e.rewinds, "time"),
        e.ghost_rewinds
    ));
    if let Some(root) = &e.pfc_root {
        detail.push_str(&format!(
            "; the PFC congestion tree on priority {} has its root at {} on {}{}",
            root.priority,
            root.src_mac,
            root.iface_name,
            root.device
                .as_ref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        ));
    }
    if q.other_queues > 0 {
        detail.push_str(&format!(
            "; {} more congested",
            fmt_count(q.other_queues, "queue")
        ));
    }
    Words {
        title: format!(
            "Telemetry: {queue} congested, occupancy up to {} and hop latency up to {}",
            q.peak_occupancy, q.peak_latency
        ),
        detail,
        recommendation: if q.dropped() > 0 {
            "This queue overflowed: the switch dropped packets a lossless class should never lose. Check PFC is enabled for this priority on this port and that its headroom covers the cable length; then relieve the queue as below.".into()
        } else {
            "This is the queue the flows wait in. Relieve it: ECN-mark earlier on this queue (WRED minimum below the PFC XOFF threshold), spread the flows that share it (ECMP entropy: UDP source ports), or move bulk traffic to another priority; if a receiver downstream is slow, fix it (the PFC tree's root).".into()
        },
        params: params([
            ("switch_id", json!(id.switch_id)),
            ("egress_port", json!(id.egress_port)),
            ("queue_id", json!(id.queue_id)),
            ("hops", json!(q.hops)),
            ("congested_hops", json!(q.congested_hops)),
            ("first_ns", json!(q.first_ns)),
            ("last_ns", json!(q.last_ns)),
            ("peak_occupancy", json!(q.peak_occupancy)),
            ("peak_latency", json!(q.peak_latency)),
            ("dropped", json!(q.dropped())),
            (
                "queue_flows",
                json!(
                    q.flows
                        .iter()
                        .map(|f| json!({
                            "src_ip": fmt_ip(&f.src_ip),
                            "dst_ip": fmt_ip(&f.dst_ip),
                            "dest_qp": f.dest_qp,
                            "flow_id": f.seen.map(|r| r.id),
                        }))
                        .collect::<Vec<_>>()
                ),
            ),
            ("flows_more", json!(q.flows_more)),
            ("ce", json!(e.ce)),
            ("rewinds", json!(e.rewinds)),
            ("ghost_rewinds", json!(e.ghost_rewinds)),
            (
                "pfc_root",
                json!(e.pfc_root.as_ref().map(|r| r.src_mac.clone())),
            ),
            ("other_queues", json!(q.other_queues)),
        ]),
    }
}

/// A finding that cites a congested queue its flows crossed: a sentence of
/// its detail and `params.telemetry_queue` (docs/analysis.md, "Congested
/// queues"); nothing without one.
pub(super) fn cite(w: &mut Words, cited: Option<&QueueCitation>) {
    let Some(c) = cited else {
        return;
    };
    let q = &c.queue;
    let mut queue = format!(
        "switch {} port {} queue {} (occupancy up to {}, hop latency up to {}",
        q.switch_id, q.egress_port, q.queue_id, c.peak_occupancy, c.peak_latency
    );
    if c.dropped > 0 {
        queue.push_str(&format!(", {} reported", fmt_count(c.dropped, "drop")));
    }
    w.detail.push_str(&format!(
        "\nSwitch telemetry: these flows crossed the congested {queue})."
    ));
    w.params.insert(
        "telemetry_queue",
        json!({
            "switch_id": q.switch_id,
            "egress_port": q.egress_port,
            "queue_id": q.queue_id,
            "peak_occupancy": c.peak_occupancy,
            "peak_latency": c.peak_latency,
            "dropped": c.dropped,
        }),
    );
}
