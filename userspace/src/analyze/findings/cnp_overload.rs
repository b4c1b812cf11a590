//! CNP overload: flows that get CNPs faster than DCQCN recovers while the
//! links they cross are far from full and no pause explains it (see "CNP
//! overload" in `docs/analysis.md`).
//!
//! CNPs are meant for a queue that grows: a link asked for more than it
//! carries. When they keep coming while every link the capture sees on the
//! flows' way carries well under its speed, the queues that were marked were
//! short: ECN thresholds too low for the port (a packet or two of queue
//! already marks), or marking on a queue other than the one the RoCE
//! traffic really waits in. DCQCN then holds the senders far below what the
//! fabric would carry.
//!
//! Computed at the end from the flows: nothing per packet.

use std::collections::BTreeMap;

use serde_json::json;

use crate::analyze::{Finding, Flow, Severity, fmt_count, fmt_duration, fmt_gbps, fmt_ip, fmt_pct};

use super::input::{Input, params};

/// CNPs more often than one per this time, on average over the flow's
/// life, keep DCQCN from recovering: its fast recovery climbs back in 5
/// steps of 55 µs (ConnectX: rpg_time_reset, 300 µs).
pub(crate) const CNP_INTERVAL_NS: u64 = 200_000;
/// A link carrying less than this share of its speed is not full.
pub(crate) const NOT_FULL: f64 = 0.75;
/// A flow with goodput below this share of its fair share is held down.
pub(crate) const HELD_DOWN: f64 = 0.75;

/// `(src_ip, dst_ip, dest_qp)`: one connection, at whichever tap.
type Conn = ([u8; 16], [u8; 16], u32);

/// `cnp-overload`.
pub(crate) fn finding(x: &Input, out: &mut Vec<Finding>) {
    let speed = |iface: u16| {
        x.summary
            .taps
            .iter()
            .find(|t| t.iface == iface)
            .map_or(x.summary.link_speed_bps, |t| t.link_speed_bps) as f64
            / 1e9
    };
    // (flow, its gbps, its goodput in Gb/s)
    let requests: Vec<(&Flow, f64, f64)> = x
        .flows()
        .filter(|f| f.data_packets > 0)
        .map(|f| (f, f.rate_gbps(f.bytes), f.rate_gbps(f.goodput_bytes)))
        .collect();
    // Each connection's wire rate, the highest of the taps that saw it.
    let mut conns: BTreeMap<Conn, f64> = BTreeMap::new();
    for &(f, gbps, _) in &requests {
        let e = conns.entry((f.src_ip, f.dst_ip, f.dest_qp)).or_default();
        *e = e.max(gbps);
    }
    // What each tap carried of request flows.
    let mut tap_load: BTreeMap<u16, f64> = BTreeMap::new();
    for &(f, gbps, _) in &requests {
        *tap_load.entry(f.iface).or_default() += gbps;
    }
    let into = |dst: [u8; 16]| conns.iter().filter(move |(c, _)| c.1 == dst);
    let mut groups: BTreeMap<[u8; 16], Vec<(&Flow, f64, f64)>> = BTreeMap::new();
    for &(f, _, goodput_gbps) in &requests {
        let life = f.last_ts - f.first_ts;
        // Loss (Go-Back-N) explains low goodput by itself.
        if f.rewind().rewinds > 0
            || f.cnps < 2
            || life == 0
            || f.cnps.saturating_mul(CNP_INTERVAL_NS) < life
        {
            continue;
        }
        let paused = x.pfc.iter().any(|p| {
            p.iface == f.iface
                && Some(p.priority) == f.priority
                && p.start_ns < f.last_ts
                && p.end_ns > f.first_ts
        });
        if paused {
            continue;
        }
        let link = speed(f.iface);
        let conn = (f.src_ip, f.dst_ip, f.dest_qp);
        // Every tap that saw the connection, and the receiver's link.
        let taps_full = requests
            .iter()
            .filter(|(o, ..)| (o.src_ip, o.dst_ip, o.dest_qp) == conn)
            .any(|(o, ..)| {
                tap_load.get(&o.iface).copied().unwrap_or(0.0) >= NOT_FULL * speed(o.iface)
            });
        let sharing = into(f.dst_ip).count().max(1);
        let into_dst: f64 = into(f.dst_ip).map(|(_, g)| g).sum();
        if taps_full || into_dst >= NOT_FULL * link {
            continue;
        }
        let share = link / sharing as f64;
        if goodput_gbps >= HELD_DOWN * share {
            continue;
        }
        groups
            .entry(f.dst_ip)
            .or_default()
            .push((f, goodput_gbps, share));
    }
    if groups.is_empty() {
        return;
    }
    let mut parts = Vec::new();
    let mut flows = Vec::new();
    let mut worst_interval = u64::MAX;
    let mut cnps = 0;
    let mut lowest_use = f64::INFINITY;
    for (dst, members) in &groups {
        let link = speed(members[0].0.iface);
        let into_dst: f64 = into(*dst).map(|(_, g)| g).sum();
        lowest_use = lowest_use.min(into_dst / link);
        let each: Vec<String> = members
            .iter()
            .map(|(f, goodput_gbps, share)| {
                let interval = (f.last_ts - f.first_ts) / f.cnps;
                worst_interval = worst_interval.min(interval);
                cnps += f.cnps;
                flows.push(f.id);
                format!(
                    "{}: {} in {} (one every {}), goodput {} of a {} share",
                    x.describe(f),
                    fmt_count(f.cnps, "CNP"),
                    fmt_duration(f.last_ts - f.first_ts),
                    fmt_duration(interval),
                    fmt_gbps(*goodput_gbps),
                    fmt_gbps(*share)
                )
            })
            .collect();
        parts.push(format!(
            "Into {}: {} carried {} together, {} of its {} link; no pause hit their priority at their taps and they resent nothing; {}",
            fmt_ip(dst),
            fmt_count(into(*dst).count() as u64, "connection"),
            fmt_gbps(into_dst),
            fmt_pct(into_dst / link),
            fmt_gbps(link),
            each.join("; ")
        ));
    }
    flows.sort_unstable();
    out.push(Finding {
        id: "cnp-overload",
        severity: Severity::Warning,
        title: format!(
            "{} got {} (one every {} on average, or more often) while their links ran at {} or less: ECN marks queues that are not congested",
            fmt_count(flows.len() as u64, "flow"),
            fmt_count(cnps, "CNP"),
            fmt_duration(worst_interval),
            fmt_pct(lowest_use.max(0.0))
        ),
        detail: parts.join("\n"),
        recommendation: "The switches mark ECN on queues that are barely filled: check the RoCE queue's ECN/WRED profile on every hop (Kmin, Kmax, Pmax: for 100 Gb/s ports Kmin around 150–200 KB and Kmax around 800 KB–1.5 MB with Pmax 1–10 % are common starting points; a Kmin of a few KB marks every burst), and that it is applied to the queue the RoCE DSCP really maps to (the switch's DSCP → traffic class → queue map, trust DSCP on the port) and not to a shared or default queue. Then the CNP rate should fall with the marks, and the senders' rate rise toward the link's.".into(),
        impact: x.traffic_share(&flows),
        flows,
        params: params([
            ("cnps", json!(cnps)),
            ("shortest_cnp_interval_ns", json!(worst_interval)),
            ("cnp_interval_threshold_ns", json!(CNP_INTERVAL_NS)),
            ("lowest_link_use", json!(lowest_use)),
            ("not_full_fraction", json!(NOT_FULL)),
            ("held_down_fraction", json!(HELD_DOWN)),
            (
                "destinations",
                json!(groups.keys().map(fmt_ip).collect::<Vec<_>>()),
            ),
        ]),
        wireshark: None,
    });
}
