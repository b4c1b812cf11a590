//! `dcqcn-reaction`: senders that did not slow down for their CNPs (the
//! per-flow measurement: `analyze/dcqcn.rs`; see "DCQCN reaction" in
//! `docs/analysis.md`).

use serde_json::json;

use crate::analyze::dcqcn::{DECIDE_PACKETS, DROP};
use crate::analyze::{Finding, Flow, fmt_count, fmt_duration, fmt_gbps, fmt_ip};

use super::input::{Input, params};

/// `dcqcn-reaction`: request flows whose sender never slowed down for its
/// CNPs, with how the loop worked on the others.
pub(crate) fn finding(x: &Input, out: &mut Vec<Finding>) {
    // A connection seen at several taps reacts when any of them shows it: a
    // tap past a congested queue sees that queue's pacing, not the sender's.
    let conn = |f: &Flow| (f.src_ip, f.dst_ip, f.dest_qp);
    let reacted: std::collections::BTreeSet<_> = x
        .flows()
        .filter(|f| f.dcqcn().reactions > 0)
        .map(conn)
        .collect();
    let deaf: Vec<&Flow> = x
        .flows()
        .filter(|f| f.dcqcn().ignored() && !reacted.contains(&conn(f)))
        .collect();
    if deaf.is_empty() {
        return;
    }
    let mut parts: Vec<String> = deaf
        .iter()
        .map(|f| {
            let d = f.dcqcn();
            format!(
                "{} got {}; after {} of them its next {} packets kept the rate it had before (mean {}): none left at {:.0} % of it or less",
                x.describe(f),
                fmt_count(f.cnps, "CNP"),
                d.without,
                DECIDE_PACKETS,
                fmt_gbps(d.without_gbps_sum / d.without as f64),
                DROP * 100.0
            )
        })
        .collect();
    let working: Vec<&Flow> = x.flows().filter(|f| f.dcqcn().reactions > 0).collect();
    let ns = |us: f64| (us * 1e3).round() as u64;
    for f in &working {
        let d = f.dcqcn();
        let mut s = format!(
            "{} slowed down after {} of its CNPs, {} after the CNP on average (at most {})",
            x.describe(f),
            d.reactions,
            fmt_duration(ns(d.reaction_us().unwrap_or(0.0))),
            fmt_duration(d.reaction_max_ns)
        );
        match d.recovery_us() {
            Some(us) => s.push_str(&format!(
                " and was back at its rate {} after the first drop on average ({}, at most {})",
                fmt_duration(ns(us)),
                fmt_count(d.recoveries, "recovery"),
                fmt_duration(d.recovery_max_ns)
            )),
            None => s.push_str(" and never got back to its rate before the CNPs"),
        }
        parts.push(s);
    }
    let cnps: u64 = deaf.iter().map(|f| f.cnps).sum();
    let reaction_max = working.iter().map(|f| f.dcqcn().reaction_max_ns).max();
    let recovery_max = working.iter().map(|f| f.dcqcn().recovery_max_ns).max();
    let ids: Vec<u32> = deaf.iter().map(|f| f.id).collect();
    let mut senders: Vec<String> = deaf.iter().map(|f| fmt_ip(&f.src_ip)).collect();
    senders.sort();
    senders.dedup();
    out.push(Finding {
        id: "dcqcn-reaction",
        severity: "warning",
        title: format!(
            "{} ({}) did not slow down for {}: congestion control is not acting on them",
            fmt_count(deaf.len() as u64, "flow"),
            senders.join(", "),
            fmt_count(cnps, "CNP")
        ),
        detail: parts.join("; "),
        recommendation: "Enable the DCQCN reaction point on these senders' NICs for the RoCE priority (mlx5: echo 1 > /sys/class/net/<if>/ecn/roce_rp/enable/<prio>; the reaction point and notification point are enabled per priority, on both ends) and check the CNPs reach it: the DSCP and priority the receiving NIC gives its CNPs must be ones the fabric forwards and the sender trusts. A sender whose application sends below the rate DCQCN allows shows no change either: compare with its NIC's counters (np_cnp_sent at the receiver, rp_cnp_handled at the sender).".into(),
        impact: x.traffic_share(&ids),
        flows: ids,
        params: params([
            ("flows", json!(deaf.len())),
            ("cnps", json!(cnps)),
            (
                "cnps_without_reaction",
                json!(deaf.iter().map(|f| f.dcqcn().without).sum::<u64>()),
            ),
            ("reacting_flows", json!(working.len())),
            ("reaction_max_ns", json!(reaction_max)),
            ("recovery_max_ns", json!(recovery_max.filter(|&n| n > 0))),
            ("drop_fraction", json!(DROP)),
            ("decide_packets", json!(DECIDE_PACKETS)),
        ]),
        wireshark: None,
    });
}
