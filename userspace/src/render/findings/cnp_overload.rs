//! `cnp-overload` in words.

use serde_json::json;

use crate::analyze::findings::{CNP_INTERVAL_NS, CnpOverload, HELD_DOWN, NOT_FULL};
use crate::render::{fmt_count, fmt_duration, fmt_gbps, fmt_ip, fmt_pct};

use super::{Names, Words, params};

pub(super) fn cnp_overload(e: &CnpOverload, n: &Names) -> Words {
    let parts: Vec<String> = e
        .destinations
        .iter()
        .map(|d| {
            let each: Vec<String> = d
                .flows
                .iter()
                .map(|h| {
                    format!(
                        "{}: {} in {} (one every {}), goodput {} of a {} share",
                        n.describe(&h.flow),
                        fmt_count(h.cnps, "CNP"),
                        fmt_duration(h.life_ns),
                        fmt_duration(h.interval_ns),
                        fmt_gbps(h.goodput_gbps),
                        fmt_gbps(h.share_gbps)
                    )
                })
                .collect();
            format!(
                "Into {}: {} carried {} together, {} of its {} link; no pause hit their priority at their taps and they resent nothing; {}",
                fmt_ip(&d.dst_ip),
                fmt_count(d.connections, "connection"),
                fmt_gbps(d.into_gbps),
                fmt_pct(d.into_gbps / d.link_gbps),
                fmt_gbps(d.link_gbps),
                each.join("; ")
            )
        })
        .collect();
    let flows: usize = e.destinations.iter().map(|d| d.flows.len()).sum();
    Words {
        title: format!(
            "{} got {} (one every {} on average, or more often) while their links ran at {} or less: ECN marks queues that are not congested",
            fmt_count(flows as u64, "flow"),
            fmt_count(e.cnps, "CNP"),
            fmt_duration(e.shortest_interval_ns),
            fmt_pct(e.lowest_link_use.max(0.0))
        ),
        detail: parts.join("\n"),
        recommendation: "The switches mark ECN on queues that are barely filled: check the RoCE queue's ECN/WRED profile on every hop (Kmin, Kmax, Pmax: for 100 Gb/s ports Kmin around 150–200 KB and Kmax around 800 KB–1.5 MB with Pmax 1–10 % are common starting points; a Kmin of a few KB marks every burst), and that it is applied to the queue the RoCE DSCP really maps to (the switch's DSCP → traffic class → queue map, trust DSCP on the port) and not to a shared or default queue. Then the CNP rate should fall with the marks, and the senders' rate rise toward the link's.".into(),
        params: params([
            ("cnps", json!(e.cnps)),
            ("shortest_cnp_interval_ns", json!(e.shortest_interval_ns)),
            ("cnp_interval_threshold_ns", json!(CNP_INTERVAL_NS)),
            ("lowest_link_use", json!(e.lowest_link_use)),
            ("not_full_fraction", json!(NOT_FULL)),
            ("held_down_fraction", json!(HELD_DOWN)),
            (
                "destinations",
                json!(e.destinations.iter().map(|d| fmt_ip(&d.dst_ip)).collect::<Vec<_>>()),
            ),
        ]),
    }
}
