//! `ecmp-imbalance`: a group whose busiest member carried far more than its
//! fair share while another idled, and the elephants that collided on it;
//! without a group named, the capture fact that says how to name one (the
//! load per member: `analyze/ecmp.rs`; see "ECMP imbalance" in
//! `docs/analysis.md`). Worded in `render/findings/ecmp.rs`.

use std::collections::{BTreeMap, BTreeSet};

use crate::analyze::ecmp::{ELEPHANT_SHARE, EcmpLoad, GroupLoad, IMBALANCED_BINS};
use crate::analyze::{CaptureFact, Flow, Severity};

use super::input::{FlowRef, Input, share};
use super::{Diagnosis, Evidence};
use crate::analyze::flows::kept::QpsByPair;

/// Source and destination address.
type HostPair = ([u8; 16], [u8; 16]);
/// A source address and UDP source port; a destination address and QP.
type SourcePort = ([u8; 16], u16);
type Qp = ([u8; 16], u32);

/// `ecmp-imbalance`'s evidence: one group's load per member, the
/// elephants that collided on the busiest and the entropy the hash had.
#[derive(Clone, Debug, PartialEq)]
pub struct EcmpImbalance {
    /// The members as `--ecmp-group` named them, their bytes and their
    /// shares of the group's.
    pub members: Vec<String>,
    pub bytes: Vec<u64>,
    pub shares: Vec<f64>,
    /// What each member's tap recorded.
    pub member_use: Vec<MemberUse>,
    /// Indices into `members`.
    pub busiest: usize,
    pub idlest: usize,
    /// Bins of `bin_ns` in which the group carried at least
    /// [`LOADED_SHARE`] of a member's link, and those imbalanced.
    pub loaded_bins: u64,
    pub imbalanced_bins: u64,
    pub bin_ns: u64,
    /// One member's fair share of the group's bytes.
    pub fair_share: f64,
    /// The first and last imbalanced bins' times, within the capture.
    pub first_imbalanced_ns: u64,
    pub last_imbalanced_ns: u64,
    /// Elephants on the busiest member that ran at the same time, in flow
    /// order, and the time all of them were sending.
    pub collided: Vec<Elephant>,
    pub collided_from_ns: u64,
    pub collided_to_ns: u64,
    /// The group's request flows per host pair, in address order.
    pub entropy: Vec<PairEntropy>,
    /// UDP source ports (per source address) that several QPs shared.
    pub shared_ports: u64,
}

/// What a member's tap recorded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MemberUse {
    /// Its name is none of the capture's interfaces.
    NotCaptured,
    /// Its capture declares the interface but recorded no frame.
    Idle,
    /// Its fullest bin's share of its link, and the flows it carried.
    Carried { peak_link_share: f64, flows: u64 },
}

/// A large flow on the busiest member.
#[derive(Clone, Debug, PartialEq)]
pub struct Elephant {
    pub flow: FlowRef,
    pub udp_sport: Option<u16>,
    pub bytes: u64,
    /// Its share of the member's bytes.
    pub share: f64,
}

/// A host pair's request flows in the group: the UDP source ports and QPs
/// the hash had to spread.
#[derive(Clone, Debug, PartialEq)]
pub struct PairEntropy {
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub source_ports: u64,
    pub qps: u64,
}

/// `ecmp-imbalance`: a group whose busiest member carried ≥ 1.5× its fair
/// share while another carried ≤ 0.5× in at least half of its loaded bins.
pub(crate) fn finding(x: &Input, load: &EcmpLoad, out: &mut Vec<Diagnosis>) {
    for g in &load.groups {
        if g.loaded_bins == 0 || (g.imbalanced_bins as f64) < IMBALANCED_BINS * g.loaded_bins as f64
        {
            continue;
        }
        out.push(imbalance(x, g, load.bin_ns));
    }
}

fn imbalance(x: &Input, g: &GroupLoad, bin_ns: u64) -> Diagnosis {
    let n = g.members.len();
    let total: u64 = g.bytes.iter().sum();
    let shares: Vec<f64> = g.bytes.iter().map(|&b| share(b, total)).collect();
    let busiest = (0..n)
        .max_by_key(|&m| (g.bytes[m], std::cmp::Reverse(m)))
        .unwrap_or(0);
    let idlest = (0..n).min_by_key(|&m| (g.bytes[m], m)).unwrap_or(0);
    let on = |m: usize| -> Vec<&Flow> {
        x.flows()
            .filter(|f| g.ifaces[m] == Some(f.iface) && f.packets() > 0)
            .collect()
    };
    let idle = |iface: u16| {
        x.summary
            .taps
            .iter()
            .any(|t| t.iface == iface && t.records == 0)
    };
    let member_use: Vec<MemberUse> = (0..n)
        .map(|m| match g.ifaces[m] {
            None => MemberUse::NotCaptured,
            Some(i) if idle(i) => MemberUse::Idle,
            Some(_) => {
                let link = g.speed_bps[m] as f64 / 8.0 * bin_ns as f64 / 1e9;
                MemberUse::Carried {
                    peak_link_share: if link > 0.0 {
                        g.peak_bin_bytes[m] as f64 / link
                    } else {
                        0.0
                    },
                    flows: on(m).len() as u64,
                }
            }
        })
        .collect();
    // Elephants on the busiest member that ran at the same time.
    let busy = on(busiest);
    let elephants: Vec<&Flow> = busy
        .iter()
        .copied()
        .filter(|f| f.bytes() as f64 >= ELEPHANT_SHARE * g.bytes[busiest] as f64)
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
    // The entropy the hash had: the group's QPs by host pair.
    // Per host pair its source ports and QPs; per source port its QPs.
    let mut pairs: BTreeMap<HostPair, (BTreeSet<u16>, BTreeSet<u32>)> = BTreeMap::new();
    let mut by_port: BTreeMap<SourcePort, BTreeSet<Qp>> = BTreeMap::new();
    for m in 0..n {
        for f in on(m).into_iter().filter(|f| f.data_packets() > 0) {
            let e = pairs.entry((f.src_ip, f.dst_ip)).or_default();
            e.1.insert(f.dest_qp);
            if let Some(p) = f.udp_sport() {
                e.0.insert(p);
                by_port
                    .entry((f.src_ip, p))
                    .or_default()
                    .insert((f.dst_ip, f.dest_qp));
            }
        }
    }
    let ids: Vec<u32> = if collided.is_empty() {
        busy.iter().map(|f| f.id).collect()
    } else {
        collided.iter().map(|f| f.id).collect()
    };
    Diagnosis {
        severity: Severity::Warning,
        impact: share(g.imbalanced_bins, g.loaded_bins),
        flows: ids,
        evidence: Evidence::Ecmp(EcmpImbalance {
            members: g.members.clone(),
            bytes: g.bytes.clone(),
            shares,
            member_use,
            busiest,
            idlest,
            loaded_bins: g.loaded_bins,
            imbalanced_bins: g.imbalanced_bins,
            bin_ns,
            fair_share: 1.0 / n as f64,
            // Bins run past the capture's ends: the times within it.
            first_imbalanced_ns: g.first_imbalanced_ns.unwrap_or(0),
            last_imbalanced_ns: g
                .last_imbalanced_ns
                .unwrap_or(0)
                .min(x.summary.last_ts_ns.unwrap_or(u64::MAX)),
            collided_from_ns: collided.iter().map(|f| f.first_ts).max().unwrap_or(0),
            collided_to_ns: collided.iter().map(|f| f.last_ts).min().unwrap_or(0),
            collided: collided
                .iter()
                .map(|f| Elephant {
                    flow: FlowRef::from(*f),
                    udp_sport: f.udp_sport(),
                    bytes: f.bytes(),
                    share: share(f.bytes(), g.bytes[busiest]),
                })
                .collect(),
            entropy: pairs
                .iter()
                .map(|((s, d), (ports, qps))| PairEntropy {
                    src_ip: *s,
                    dst_ip: *d,
                    source_ports: ports.len() as u64,
                    qps: qps.len() as u64,
                })
                .collect(),
            shared_ports: by_port.values().filter(|q| q.len() > 1).count() as u64,
        }),
    }
}

/// Without a group named: taps that carry different QPs between the same
/// two hosts may be parallel paths, but nothing in a capture says they are
/// (an idle member carries nothing to compare). Said once, as a capture fact.
/// `by_pair`: the QPs with data per host pair and tap.
pub(crate) fn unnamed_fact(by_pair: &QpsByPair) -> Option<CaptureFact> {
    for (&(src, dst), taps) in by_pair {
        let taps: Vec<(&u16, &BTreeSet<u32>)> = taps.iter().collect();
        for (i, (a, qa)) in taps.iter().enumerate() {
            for (b, qb) in &taps[i + 1..] {
                if qa.is_disjoint(qb) {
                    return Some(CaptureFact::UnnamedParallelPaths {
                        taps: [**a, **b],
                        src,
                        dst,
                    });
                }
            }
        }
    }
    None
}
