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

use crate::analyze::{Flow, Severity};

use super::input::{FlowRef, Input};
use super::{Diagnosis, Evidence};

/// CNPs more often than one per this time, on average over the flow's
/// life, keep DCQCN from recovering: its fast recovery climbs back in 5
/// steps of 55 µs (ConnectX: rpg_time_reset, 300 µs).
pub(crate) const CNP_INTERVAL_NS: u64 = 200_000;
/// A link carrying less than this share of its speed is not full.
pub(crate) const NOT_FULL: f64 = 0.75;
/// A flow with goodput below this share of its fair share is held down.
pub(crate) const HELD_DOWN: f64 = 0.75;

/// `cnp-overload`'s evidence: the held-down flows by destination.
#[derive(Clone, Debug, PartialEq)]
pub struct CnpOverload {
    /// In address order.
    pub destinations: Vec<Destination>,
    /// The CNPs of every held-down flow.
    pub cnps: u64,
    /// The shortest of their mean CNP intervals.
    pub shortest_interval_ns: u64,
    /// The lowest share of its link a destination's connections used.
    pub lowest_link_use: f64,
}

/// One destination's connections and the flows into it held down.
#[derive(Clone, Debug, PartialEq)]
pub struct Destination {
    pub dst_ip: [u8; 16],
    /// Connections into it, held down or not, and their rate together.
    pub connections: u64,
    pub into_gbps: f64,
    /// Its link's speed (the first held-down flow's tap).
    pub link_gbps: f64,
    pub flows: Vec<HeldDown>,
}

/// A flow getting CNPs faster than DCQCN recovers.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldDown {
    pub flow: FlowRef,
    pub cnps: u64,
    /// From its first frame to its last, and that over its CNPs.
    pub life_ns: u64,
    pub interval_ns: u64,
    pub goodput_gbps: f64,
    /// Its fair share of the destination's link.
    pub share_gbps: f64,
}

/// `(src_ip, dst_ip, dest_qp)`: one connection, at whichever tap.
type Conn = ([u8; 16], [u8; 16], u32);

/// `cnp-overload`.
pub(crate) fn finding(x: &Input) -> Option<Diagnosis> {
    let speed = |iface: u16| {
        x.summary
            .taps
            .iter()
            .find(|t| t.iface == iface)
            .map_or(x.summary.link_speed_bps, |t| t.link_speed_bps) as f64
            / 1e9
    };
    // Loss (Go-Back-N) explains low goodput by itself; a flow needs two
    // CNPs at least every CNP_INTERVAL_NS to be overloaded. Checked first:
    // without such a flow, no map of every connection is made.
    let candidate = |f: &Flow| {
        let life = f.last_ts - f.first_ts;
        f.rewind().rewinds == 0
            && f.cnps() >= 2
            && life > 0
            && f.cnps().saturating_mul(CNP_INTERVAL_NS) >= life
    };
    let live = x.census.congested > 0;
    if !x
        .flows_if(live)
        .any(|f| f.data_packets() > 0 && candidate(f))
    {
        return None;
    }
    // (flow, its gbps, its goodput in Gb/s)
    let requests: Vec<(&Flow, f64, f64)> = x
        .flows()
        .filter(|f| f.data_packets() > 0)
        .map(|f| (f, f.rate_gbps(f.bytes()), f.rate_gbps(f.goodput_bytes())))
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
        if !candidate(f) {
            continue;
        }
        let paused = x.pfc.iter().any(|p| {
            p.iface == f.iface
                && Some(p.priority) == f.priority()
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
        return None;
    }
    let mut destinations = Vec::new();
    let mut flows = Vec::new();
    let mut worst_interval = u64::MAX;
    let mut cnps = 0;
    let mut lowest_use = f64::INFINITY;
    for (dst, members) in &groups {
        let link_gbps = speed(members[0].0.iface);
        let into_gbps: f64 = into(*dst).map(|(_, g)| g).sum();
        lowest_use = lowest_use.min(into_gbps / link_gbps);
        let held: Vec<HeldDown> = members
            .iter()
            .map(|&(f, goodput_gbps, share_gbps)| {
                let life_ns = f.last_ts - f.first_ts;
                let interval_ns = life_ns / f.cnps();
                worst_interval = worst_interval.min(interval_ns);
                cnps += f.cnps();
                flows.push(f.id);
                HeldDown {
                    flow: FlowRef::from(f),
                    cnps: f.cnps(),
                    life_ns,
                    interval_ns,
                    goodput_gbps,
                    share_gbps,
                }
            })
            .collect();
        destinations.push(Destination {
            dst_ip: *dst,
            connections: into(*dst).count() as u64,
            into_gbps,
            link_gbps,
            flows: held,
        });
    }
    flows.sort_unstable();
    Some(Diagnosis {
        severity: Severity::Warning,
        impact: x.traffic_share(&flows),
        flows,
        evidence: Evidence::CnpOverload(CnpOverload {
            destinations,
            cnps,
            shortest_interval_ns: worst_interval,
            lowest_link_use: lowest_use,
        }),
    })
}
