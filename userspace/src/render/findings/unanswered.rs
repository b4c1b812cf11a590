//! `unanswered-flows` in words.

use serde_json::json;

use crate::analyze::findings::Unanswered;
use crate::render::{fmt_count, fmt_duration, fmt_ip};

use super::{Names, Words, params};

pub(super) fn words(e: &Unanswered, n: &Names) -> Words {
    let names: Vec<String> = e
        .host_pairs
        .iter()
        .map(|(s, d)| format!("{} → {}", fmt_ip(s), fmt_ip(d)))
        .collect();
    let parts: Vec<String> = e
        .flows
        .iter()
        .map(|f| {
            format!(
                "{} sent {} request packets over {} and got no ACK, NAK or response",
                n.describe(&f.flow),
                f.data_packets,
                fmt_duration(f.sent_ns)
            )
        })
        .collect();
    Words {
        title: format!(
            "{} between {} got no answer at all ({})",
            fmt_count(e.flows.len() as u64, "flow"),
            fmt_count(e.host_pairs.len() as u64, "host pair"),
            names.join(", ")
        ),
        detail: format!(
            "{}; the same taps recorded the responses of other flows, so the capture does see answers",
            parts.join("; ")
        ),
        recommendation: "The requests reach no responder, or its answers no requester: check L3 reachability between these hosts over the RoCE interfaces both ways (the route back, ARP/ND), that UDP port 4791 passes every ACL on the path, the VLAN on every trunk and the routing between the switches (works within a switch, fails across: the inter-switch path); if full-size frames vanish while small ones pass, a hop's MTU is too small".into(),
        params: params([
            ("flows", json!(e.flows.len())),
            ("host_pairs", json!(names)),
            ("threshold_ns", json!(e.threshold_ns)),
        ]),
    }
}
