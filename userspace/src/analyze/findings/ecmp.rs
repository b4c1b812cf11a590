//! `ecmp-imbalance`: a group whose busiest member carried far more than its
//! fair share while another idled, and the elephants that collided on it;
//! without a group named, the capture fact that says how to name one (the
//! load per member: `analyze/ecmp.rs`; see "ECMP imbalance" in
//! `docs/analysis.md`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use crate::analyze::ecmp::{
    BUSY_FACTOR, ELEPHANT_SHARE, EcmpLoad, GroupLoad, IDLE_FACTOR, IMBALANCED_BINS, LOADED_SHARE,
};
use crate::analyze::{
    Finding, Flow, Severity, fmt_count, fmt_duration, fmt_ip, fmt_pct, iface_name,
};

use super::input::{Input, params, share};
use crate::analyze::flows::kept::QpsByPair;

/// Source and destination address.
type HostPair = ([u8; 16], [u8; 16]);
/// A source address and UDP source port; a destination address and QP.
type SourcePort = ([u8; 16], u16);
type Qp = ([u8; 16], u32);

/// `ecmp-imbalance`: a group whose busiest member carried ≥ 1.5× its fair
/// share while another carried ≤ 0.5× in at least half of its loaded bins.
pub(crate) fn finding(x: &Input, load: &EcmpLoad, out: &mut Vec<Finding>) {
    for g in &load.groups {
        if g.loaded_bins == 0 || (g.imbalanced_bins as f64) < IMBALANCED_BINS * g.loaded_bins as f64
        {
            continue;
        }
        imbalance(x, g, load.bin_ns, out);
    }
}

fn imbalance(x: &Input, g: &GroupLoad, bin_ns: u64, out: &mut Vec<Finding>) {
    let n = g.members.len();
    let total: u64 = g.bytes.iter().sum();
    let fair = 1.0 / n as f64;
    let shares: Vec<f64> = g.bytes.iter().map(|&b| share(b, total)).collect();
    let busiest = (0..n)
        .max_by_key(|&m| (g.bytes[m], std::cmp::Reverse(m)))
        .unwrap_or(0);
    let idlest = (0..n).min_by_key(|&m| (g.bytes[m], m)).unwrap_or(0);
    let on = |m: usize| -> Vec<&Flow> {
        x.flows()
            .filter(|f| g.ifaces[m] == Some(f.iface) && f.packets > 0)
            .collect()
    };
    // The capture's interfaces, for a member that is none of them.
    let names: Vec<&str> = x
        .summary
        .taps
        .iter()
        .map(|t| t.iface_name.as_str())
        .collect();
    let idle = |iface: u16| {
        x.summary
            .taps
            .iter()
            .any(|t| t.iface == iface && t.records == 0)
    };
    let mut lines = vec![format!(
        "{} of {} bins of {} in which the group carried at least {} of a member's link were imbalanced (the busiest member at least {}× its fair share of {}, another at most {}×), from {} to {}.",
        g.imbalanced_bins,
        g.loaded_bins,
        fmt_duration(bin_ns),
        fmt_pct(LOADED_SHARE),
        BUSY_FACTOR,
        fmt_pct(fair),
        IDLE_FACTOR,
        // Bins run past the capture's ends: the times within it.
        x.at(g.first_imbalanced_ns.unwrap_or(0)),
        x.at(g
            .last_imbalanced_ns
            .unwrap_or(0)
            .min(x.summary.last_ts_ns.unwrap_or(u64::MAX))),
    )];
    for (m, member_share) in shares.iter().enumerate() {
        match g.ifaces[m] {
            None => {
                lines.push(format!(
                    "{}: no frame recorded — a name that is none of the capture's interfaces ({}).",
                    g.members[m],
                    names.join(", ")
                ));
                continue;
            }
            Some(i) if idle(i) => {
                lines.push(format!(
                    "{}: no frame recorded — its capture declares the interface: an idle path.",
                    g.members[m]
                ));
                continue;
            }
            Some(_) => {}
        }
        let link = g.speed_bps[m] as f64 / 8.0 * bin_ns as f64 / 1e9;
        lines.push(format!(
            "{}: {} bytes, {} of the group's, up to {} of its link in one bin; {}.",
            g.members[m],
            g.bytes[m],
            fmt_pct(*member_share),
            fmt_pct(if link > 0.0 {
                g.peak_bin_bytes[m] as f64 / link
            } else {
                0.0
            }),
            fmt_count(on(m).len() as u64, "flow"),
        ));
    }
    // Elephants on the busiest member that ran at the same time.
    let busy = on(busiest);
    let elephants: Vec<&Flow> = busy
        .iter()
        .copied()
        .filter(|f| f.bytes as f64 >= ELEPHANT_SHARE * g.bytes[busiest] as f64)
        .collect();
    let mut collided: Vec<&Flow> = elephants
        .iter()
        .copied()
        .filter(|f| {
            elephants
                .iter()
                .any(|o| o.id != f.id && o.first_ts <= f.last_ts && f.first_ts <= o.last_ts)
        })
        .collect();
    collided.sort_by_key(|f| f.id);
    if !collided.is_empty() {
        let from = collided.iter().map(|f| f.first_ts).max().unwrap_or(0);
        let to = collided.iter().map(|f| f.last_ts).min().unwrap_or(0);
        let names: Vec<String> = collided
            .iter()
            .map(|f| {
                format!(
                    "{} UDP source port {}, {} bytes ({})",
                    x.describe(f),
                    f.udp_sport.map_or("-".into(), |p| p.to_string()),
                    f.bytes,
                    fmt_pct(share(f.bytes, g.bytes[busiest]))
                )
            })
            .collect();
        lines.push(format!(
            "Elephants that collided on {} (each at least {} of its bytes, all sending from {} to {}): {}.",
            g.members[busiest],
            fmt_pct(ELEPHANT_SHARE),
            x.at(from),
            x.at(to),
            names.join("; ")
        ));
    }
    // The entropy the hash had: the group's QPs by host pair.
    // Per host pair its source ports and QPs; per source port its QPs.
    let mut pairs: BTreeMap<HostPair, (BTreeSet<u16>, BTreeSet<u32>)> = BTreeMap::new();
    let mut by_port: BTreeMap<SourcePort, BTreeSet<Qp>> = BTreeMap::new();
    for m in 0..n {
        for f in on(m).into_iter().filter(|f| f.data_packets > 0) {
            let e = pairs.entry((f.src_ip, f.dst_ip)).or_default();
            e.1.insert(f.dest_qp);
            if let Some(p) = f.udp_sport {
                e.0.insert(p);
                by_port
                    .entry((f.src_ip, p))
                    .or_default()
                    .insert((f.dst_ip, f.dest_qp));
            }
        }
    }
    let entropy: Vec<String> = pairs
        .iter()
        .map(|((s, d), (ports, qps))| {
            format!(
                "{} → {}: {} over {}",
                fmt_ip(s),
                fmt_ip(d),
                fmt_count(ports.len() as u64, "UDP source port"),
                fmt_count(qps.len() as u64, "QP")
            )
        })
        .collect();
    let shared_ports = by_port.values().filter(|q| q.len() > 1).count();
    lines.push(format!(
        "Entropy the hash had: {}; {} shared by several QPs.",
        entropy.join("; "),
        fmt_count(shared_ports as u64, "source port"),
    ));
    let ids: Vec<u32> = if collided.is_empty() {
        busy.iter().map(|f| f.id).collect()
    } else {
        collided.iter().map(|f| f.id).collect()
    };
    let per_pair: Vec<usize> = pairs.values().map(|(p, _)| p.len()).collect();
    out.push(Finding {
        id: "ecmp-imbalance",
        severity: Severity::Warning,
        impact: share(g.imbalanced_bins, g.loaded_bins),
        title: format!(
            "ECMP imbalance: {} carried {} of its group's traffic, {} {}{}",
            g.members[busiest],
            fmt_pct(shares[busiest]),
            g.members[idlest],
            fmt_pct(shares[idlest]),
            if collided.is_empty() {
                String::new()
            } else {
                format!(" ({} collided)", fmt_count(collided.len() as u64, "elephant flow"))
            }
        ),
        detail: lines.join("\n"),
        recommendation: "The hash put these flows on one path while its twin idled: enable flowlet or adaptive load balancing on the switches (flowlet switching re-picks a path at gaps longer than the path skew), make sure the ECMP hash includes the UDP source port (RoCEv2's entropy field), and give the hash more to work with — more QPs per connection (NCCL_IB_QPS_PER_CONNECTION) and source ports spread per QP (the NIC's or the RDMA CM's UDP source port selection) instead of one per host pair".into(),
        flows: ids,
        params: params([
            ("members", json!(g.members)),
            ("member_bytes", json!(g.bytes)),
            ("member_shares", json!(shares)),
            ("busiest", json!(g.members[busiest])),
            ("idlest", json!(g.members[idlest])),
            ("loaded_bins", json!(g.loaded_bins)),
            ("imbalanced_bins", json!(g.imbalanced_bins)),
            ("collided_flows", json!(collided.iter().map(|f| f.id).collect::<Vec<_>>())),
            ("source_ports_per_host_pair", json!(per_pair)),
            ("shared_source_ports", json!(shared_ports)),
        ]),
        wireshark: None,
    });
}

/// Without a group named: taps that carry different QPs between the same
/// two hosts may be parallel paths, but nothing in a capture says they are
/// (an idle member carries nothing to compare). Said once, as a capture fact.
/// `by_pair`: the QPs with data per host pair and tap.
pub(crate) fn unnamed_fact(by_pair: &QpsByPair, names: &BTreeMap<u16, String>) -> Option<String> {
    for ((s, d), taps) in by_pair {
        let taps: Vec<(&u16, &BTreeSet<u32>)> = taps.iter().collect();
        for (i, (a, qa)) in taps.iter().enumerate() {
            for (b, qb) in &taps[i + 1..] {
                if qa.is_disjoint(qb) {
                    let (a, b) = (iface_name(names, **a), iface_name(names, **b));
                    return Some(format!(
                        "{a} and {b} carry different QPs between the same hosts ({} → {}): if they are parallel paths, name them with --ecmp-group {a},{b}; ECMP balance is judged only for named groups",
                        fmt_ip(s),
                        fmt_ip(d)
                    ));
                }
            }
        }
    }
    None
}
