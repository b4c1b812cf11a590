//! `retransmission-livelock`: the flows whose rewinds to one PSN made a
//! livelock (the per-flow runs: `analyze/livelock.rs`; see "Retransmission
//! livelock" in `docs/analysis.md`).

use serde_json::json;

use crate::analyze::livelock::Run;
use crate::analyze::{Finding, Flow, fmt_count, fmt_duration};

use super::input::{Input, params};

/// `retransmission-livelock`: every flow in a livelock, the longest first.
pub(crate) fn finding(x: &Input, out: &mut Vec<Finding>) {
    let mut stuck: Vec<(&Flow, Run)> = x
        .flows
        .iter()
        .filter_map(|f| Some((f, f.rewind().livelock.livelock()?)))
        .collect();
    if stuck.is_empty() {
        return;
    }
    stuck.sort_by_key(|(f, r)| (std::cmp::Reverse(r.rewinds), f.id));
    let parts: Vec<String> = stuck
        .iter()
        .map(|(f, r)| {
            format!(
                "{} went back to PSN {} {} times from {} to {} ({}) with nothing acknowledged between; its largest frame was {} bytes",
                x.describe(f),
                r.psn,
                r.rewinds,
                x.at(r.first_ts),
                x.at(r.last_ts),
                fmt_duration(r.last_ts - r.first_ts),
                f.max_frame_len
            )
        })
        .collect();
    let (f, r) = stuck[0];
    out.push(Finding {
        id: "retransmission-livelock",
        impact: x.traffic_share(&stuck.iter().map(|(f, _)| f.id).collect::<Vec<_>>()),
        severity: "critical",
        title: format!(
            "{} resend the same PSN over and over (flow {} PSN {}: {}, no progress)",
            fmt_count(stuck.len() as u64, "flow"),
            f.id,
            r.psn,
            fmt_count(r.rewinds, "rewind")
        ),
        detail: parts.join("; "),
        recommendation: "Something drops this packet every time, not by chance: compare the frame's length with the MTU of every hop on the path (a RoCE MTU of 4096 needs an Ethernet MTU above 4200 bytes on every link and VLAN interface; a smaller one silently drops full-size frames while small messages pass), then check ACLs and the switches' discard counters for the flow's UDP port; the requester will spend its retry count (retry_cnt) on it and move the QP to the error state".into(),
        flows: stuck.iter().map(|(f, _)| f.id).collect(),
        params: params([
            ("flows", json!(stuck.len())),
            ("worst_flow", json!(f.id)),
            ("psn", json!(r.psn)),
            ("rewinds", json!(r.rewinds)),
            ("first_rewind_ns", json!(r.first_ts)),
            ("last_rewind_ns", json!(r.last_ts)),
            ("max_frame_len", json!(f.max_frame_len)),
        ]),
        wireshark: None,
    });
}
