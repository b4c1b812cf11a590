//! Unanswered flows: requests sent for a long time with nothing coming back
//! from their destination at all, on a tap that does record responses of
//! other flows (see "Unanswered flows" in `docs/analysis.md`).
//!
//! A reliable connection's responder answers within a round trip (an ACK, a
//! NAK, a READ response); a requester that keeps sending with no answer for
//! a millisecond reaches no responder: no route back, an ACL dropping UDP
//! 4791, a VLAN missing on a trunk, or its frames vanishing on the way (an
//! MTU black hole). A tap that records no responses at all is a one-way
//! mirror, and says nothing about answers.
//!
//! Computed at the end from the flows: nothing per packet (which flows: in
//! `input.rs`, as `mtu-mismatch` reads them too).

use serde_json::json;

use crate::analyze::{Finding, Severity, fmt_count, fmt_duration, fmt_ip};

use super::input::{Input, UNANSWERED_NS, params, unanswered};

/// `unanswered-flows`: request flows sending for [`UNANSWERED_NS`] or more
/// whose destination sent nothing back to their source on their tap, on a
/// tap that recorded responses of other flows.
pub(crate) fn finding(x: &Input, out: &mut Vec<Finding>) {
    let silent = unanswered(x);
    if silent.is_empty() {
        return;
    }
    let mut pairs: Vec<([u8; 16], [u8; 16])> =
        silent.iter().map(|f| (f.src_ip, f.dst_ip)).collect();
    pairs.sort_unstable();
    pairs.dedup();
    let names: Vec<String> = pairs
        .iter()
        .map(|(s, d)| format!("{} → {}", fmt_ip(s), fmt_ip(d)))
        .collect();
    let parts: Vec<String> = silent
        .iter()
        .map(|f| {
            format!(
                "{} sent {} request packets over {} and got no ACK, NAK or response",
                x.describe(f),
                f.data_packets,
                fmt_duration(f.last_ts - f.first_ts)
            )
        })
        .collect();
    out.push(Finding {
        id: "unanswered-flows",
        impact: x.traffic_share(&silent.iter().map(|f| f.id).collect::<Vec<_>>()),
        severity: Severity::Critical,
        title: format!(
            "{} between {} got no answer at all ({})",
            fmt_count(silent.len() as u64, "flow"),
            fmt_count(pairs.len() as u64, "host pair"),
            names.join(", ")
        ),
        detail: format!(
            "{}; the same taps recorded the responses of other flows, so the capture does see answers",
            parts.join("; ")
        ),
        recommendation: "The requests reach no responder, or its answers no requester: check L3 reachability between these hosts over the RoCE interfaces both ways (the route back, ARP/ND), that UDP port 4791 passes every ACL on the path, the VLAN on every trunk and the routing between the switches (works within a switch, fails across: the inter-switch path); if full-size frames vanish while small ones pass, a hop's MTU is too small".into(),
        flows: silent.iter().map(|f| f.id).collect(),
        params: params([
            ("flows", json!(silent.len())),
            ("host_pairs", json!(names)),
            ("threshold_ns", json!(UNANSWERED_NS)),
        ]),
        wireshark: None,
    });
}
