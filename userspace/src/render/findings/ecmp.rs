//! `ecmp-imbalance` in words.

use serde_json::json;

use crate::analyze::findings::{
    BUSY_FACTOR, ELEPHANT_SHARE, EcmpImbalance, IDLE_FACTOR, LOADED_SHARE, MemberUse,
};
use crate::render::{fmt_count, fmt_duration, fmt_ip, fmt_pct};

use super::{Names, Words, params};

pub(super) fn ecmp_imbalance(e: &EcmpImbalance, n: &Names) -> Words {
    let mut lines = vec![format!(
        "{} of {} bins of {} in which the group carried at least {} of a member's link were imbalanced (the busiest member at least {}× its fair share of {}, another at most {}×), from {} to {}.",
        e.imbalanced_bins,
        e.loaded_bins,
        fmt_duration(e.bin_ns),
        fmt_pct(LOADED_SHARE),
        BUSY_FACTOR,
        fmt_pct(e.fair_share),
        IDLE_FACTOR,
        n.at(e.first_imbalanced_ns),
        n.at(e.last_imbalanced_ns),
    )];
    for (m, member) in e.members.iter().enumerate() {
        lines.push(match e.member_use[m] {
            MemberUse::NotCaptured => {
                // The capture's interfaces, for a member that is none of them.
                let names: Vec<&str> = n.0.taps.iter().map(|t| t.iface_name.as_str()).collect();
                format!(
                    "{member}: no frame recorded — a name that is none of the capture's interfaces ({}).",
                    names.join(", ")
                )
            }
            MemberUse::Idle => format!(
                "{member}: no frame recorded — its capture declares the interface: an idle path."
            ),
            MemberUse::Carried {
                peak_link_share,
                flows,
            } => format!(
                "{member}: {} bytes, {} of the group's, up to {} of its link in one bin; {}.",
                e.bytes[m],
                fmt_pct(e.shares[m]),
                fmt_pct(peak_link_share),
                fmt_count(flows, "flow"),
            ),
        });
    }
    let busiest = &e.members[e.busiest];
    if !e.collided.is_empty() {
        let names: Vec<String> = e
            .collided
            .iter()
            .map(|el| {
                format!(
                    "{} UDP source port {}, {} bytes ({})",
                    n.describe(&el.flow),
                    el.udp_sport.map_or("-".into(), |p| p.to_string()),
                    el.bytes,
                    fmt_pct(el.share)
                )
            })
            .collect();
        lines.push(format!(
            "Elephants that collided on {busiest} (each at least {} of its bytes, all sending from {} to {}): {}.",
            fmt_pct(ELEPHANT_SHARE),
            n.at(e.collided_from_ns),
            n.at(e.collided_to_ns),
            names.join("; ")
        ));
    }
    let entropy: Vec<String> = e
        .entropy
        .iter()
        .map(|p| {
            format!(
                "{} → {}: {} over {}",
                fmt_ip(&p.src_ip),
                fmt_ip(&p.dst_ip),
                fmt_count(p.source_ports, "UDP source port"),
                fmt_count(p.qps, "QP")
            )
        })
        .collect();
    lines.push(format!(
        "Entropy the hash had: {}; {} shared by several QPs.",
        entropy.join("; "),
        fmt_count(e.shared_ports, "source port"),
    ));
    let per_pair: Vec<u64> = e.entropy.iter().map(|p| p.source_ports).collect();
    Words {
        title: format!(
            "ECMP imbalance: {busiest} carried {} of its group's traffic, {} {}{}",
            fmt_pct(e.shares[e.busiest]),
            e.members[e.idlest],
            fmt_pct(e.shares[e.idlest]),
            if e.collided.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} collided)",
                    fmt_count(e.collided.len() as u64, "elephant flow")
                )
            }
        ),
        detail: lines.join("\n"),
        recommendation: "The hash put these flows on one path while its twin idled: enable flowlet or adaptive load balancing on the switches (flowlet switching re-picks a path at gaps longer than the path skew), make sure the ECMP hash includes the UDP source port (RoCEv2's entropy field), and give the hash more to work with — more QPs per connection (NCCL_IB_QPS_PER_CONNECTION) and source ports spread per QP (the NIC's or the RDMA CM's UDP source port selection) instead of one per host pair".into(),
        params: params([
            ("members", json!(e.members)),
            ("member_bytes", json!(e.bytes)),
            ("member_shares", json!(e.shares)),
            ("busiest", json!(busiest)),
            ("idlest", json!(e.members[e.idlest])),
            ("loaded_bins", json!(e.loaded_bins)),
            ("imbalanced_bins", json!(e.imbalanced_bins)),
            (
                "collided_flows",
                json!(e.collided.iter().map(|el| el.flow.id).collect::<Vec<_>>()),
            ),
            ("source_ports_per_host_pair", json!(per_pair)),
            ("shared_source_ports", json!(e.shared_ports)),
        ]),
    }
}
