//! `dcqcn-reaction` in words.

use serde_json::json;

use crate::analyze::findings::Dcqcn;
use crate::render::{fmt_count, fmt_duration, fmt_gbps, fmt_ip};

use super::{Names, Words, params};

pub(super) fn dcqcn(e: &Dcqcn, x: &Names) -> Words {
    let mut parts: Vec<String> = e
        .deaf
        .iter()
        .map(|f| {
            format!(
                "{} got {}; after {} of them its next {} packets kept the rate it had before (mean {}): none left at {:.0} % of it or less",
                x.describe(&f.flow),
                fmt_count(f.cnps, "CNP"),
                f.without,
                e.decide_packets,
                fmt_gbps(f.without_mean_gbps),
                e.drop_fraction * 100.0
            )
        })
        .collect();
    for f in &e.working {
        let mut s = format!(
            "{} slowed down after {} of its CNPs, {} after the CNP on average (at most {})",
            x.describe(&f.flow),
            f.reactions,
            fmt_duration(f.reaction_mean_ns),
            fmt_duration(f.reaction_max_ns)
        );
        match f.recovery_mean_ns {
            Some(mean) => s.push_str(&format!(
                " and was back at its rate {} after the first drop on average ({}, at most {})",
                fmt_duration(mean),
                fmt_count(f.recoveries, "recovery"),
                fmt_duration(f.recovery_max_ns)
            )),
            None => s.push_str(" and never got back to its rate before the CNPs"),
        }
        parts.push(s);
    }
    let mut senders: Vec<String> = e.deaf.iter().map(|f| fmt_ip(&f.flow.src_ip)).collect();
    senders.sort();
    senders.dedup();
    Words {
        title: format!(
            "{} ({}) did not slow down for {}: congestion control is not acting on them",
            fmt_count(e.deaf.len() as u64, "flow"),
            senders.join(", "),
            fmt_count(e.cnps, "CNP")
        ),
        detail: parts.join("; "),
        recommendation: "Enable the DCQCN reaction point on these senders' NICs for the RoCE priority (mlx5: echo 1 > /sys/class/net/<if>/ecn/roce_rp/enable/<prio>; the reaction point and notification point are enabled per priority, on both ends) and check the CNPs reach it: the DSCP and priority the receiving NIC gives its CNPs must be ones the fabric forwards and the sender trusts. A sender whose application sends below the rate DCQCN allows shows no change either: compare with its NIC's counters (np_cnp_sent at the receiver, rp_cnp_handled at the sender).".into(),
        params: params([
            ("flows", json!(e.deaf.len())),
            ("cnps", json!(e.cnps)),
            ("cnps_without_reaction", json!(e.cnps_without_reaction)),
            ("reacting_flows", json!(e.working.len())),
            ("reaction_max_ns", json!(e.reaction_max_ns)),
            ("recovery_max_ns", json!(e.recovery_max_ns.filter(|&n| n > 0))),
            ("drop_fraction", json!(e.drop_fraction)),
            ("decide_packets", json!(e.decide_packets)),
        ]),
    }
}
