//! MTU mismatch: flows whose RoCE path MTU is smaller than the fabric's or
//! than another flow's between the same hosts, and frames too large for the
//! path they take (see "MTU mismatch" in `docs/analysis.md`).
//!
//! A flow's path MTU is learned exactly from its full-size payloads (a First
//! or Middle packet carries one MTU; see `Flow::mtu`). A connection set up
//! with a smaller MTU than the rest pays more headers and more packets per
//! message (large messages slow, small ones fine); a hop whose MTU is smaller
//! than the frames drops the full-size ones while small ones pass.
//!
//! Computed at the end from the flows: nothing per packet.

use std::collections::BTreeMap;

use crate::analyze::{Flow, Severity};

use super::input::{FlowRef, Input, unanswered};
use super::{Diagnosis, Evidence};

/// `mtu-mismatch`'s evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Mtu {
    /// What most request flows with a learned MTU use (the larger on a
    /// tie); none when no flow's MTU is known.
    pub fabric_mtu: Option<u32>,
    /// Flows using the fabric's MTU, of the request flows with a learned one.
    pub fabric_flows: u64,
    pub sized_flows: u64,
    /// Flows with a smaller MTU than the fabric's or than a flow between
    /// the same hosts, in flow order.
    pub small: Vec<SmallMtu>,
    /// Unanswered or livelocked flows whose frames are larger than every
    /// answered frame on their tap, in flow order.
    pub too_big: Vec<TooBig>,
}

/// A flow with a smaller path MTU than its peers.
#[derive(Clone, Debug, PartialEq)]
pub struct SmallMtu {
    pub flow: FlowRef,
    pub mtu: u32,
    pub data_packets: u64,
    /// The flow between the same hosts with the largest MTU above it:
    /// `(id, mtu)`.
    pub peer: Option<(u32, u32)>,
}

/// A flow whose frames are too large for its path.
#[derive(Clone, Debug, PartialEq)]
pub struct TooBig {
    pub flow: FlowRef,
    pub max_frame_len: u32,
    /// The largest frame of an answered flow on the same tap.
    pub answered_max: u32,
}

/// `mtu-mismatch`.
pub(crate) fn finding(x: &Input) -> Option<Diagnosis> {
    let mut small = Vec::new();
    let mut flows: Vec<u32> = Vec::new();
    // Request flows with a learned MTU.
    let sized: Vec<&Flow> = x
        .flows_if(x.census.sized > 0)
        .filter(|f| f.data_packets() > 0 && f.mtu > 0)
        .collect();
    // The fabric's MTU: what most flows use (the larger on a tie).
    let mut count: BTreeMap<u32, u64> = BTreeMap::new();
    for f in &sized {
        *count.entry(f.mtu).or_default() += 1;
    }
    let majority = count
        .iter()
        .max_by_key(|(m, n)| (**n, **m))
        .map(|(m, _)| *m);
    if let Some(major) = majority {
        // Between each two hosts, the flow with the largest MTU (the last
        // of equals): one walk, not one per flow.
        let mut largest: BTreeMap<([u8; 16], [u8; 16]), &Flow> = BTreeMap::new();
        for f in &sized {
            let top = largest.entry((f.src_ip, f.dst_ip)).or_insert(f);
            if f.mtu >= top.mtu {
                *top = f;
            }
        }
        for f in &sized {
            // The largest MTU another flow between the same hosts uses.
            let peer = largest.get(&(f.src_ip, f.dst_ip)).filter(|o| o.mtu > f.mtu);
            if f.mtu >= major && peer.is_none() {
                continue;
            }
            small.push(SmallMtu {
                flow: FlowRef::from(*f),
                mtu: f.mtu,
                data_packets: f.data_packets(),
                peer: peer.map(|o| (o.id, o.mtu)),
            });
            flows.push(f.id);
        }
    }
    // Frames no answer came back for, larger than every frame that was
    // answered on the same tap: the path carries no more than that.
    let silent: Vec<&Flow> = {
        let mut v = unanswered(x);
        v.extend(
            x.flows_if(x.census.rare > 0)
                .filter(|f| f.rewind().livelock.livelock().is_some()),
        );
        v.sort_by_key(|f| f.id);
        v.dedup_by_key(|f| f.id);
        v
    };
    let mut too_big = Vec::new();
    // Per tap, the largest frame of an answered request flow: one walk, and
    // only when a flow went silent.
    let mut answered: BTreeMap<u16, u32> = BTreeMap::new();
    if !silent.is_empty() {
        for o in x.flows() {
            if o.paired_qp().is_some() && o.data_packets() > 0 {
                let l = answered.entry(o.iface).or_insert(o.max_frame_len());
                *l = (*l).max(o.max_frame_len());
            }
        }
    }
    for f in silent {
        let answered = answered.get(&f.iface).copied();
        let Some(largest) = answered.filter(|&l| f.max_frame_len() > l) else {
            continue;
        };
        too_big.push(TooBig {
            flow: FlowRef::from(f),
            max_frame_len: f.max_frame_len(),
            answered_max: largest,
        });
        flows.push(f.id);
    }
    if small.is_empty() && too_big.is_empty() {
        return None;
    }
    flows.sort_unstable();
    flows.dedup();
    Some(Diagnosis {
        severity: Severity::Warning,
        impact: x.traffic_share(&flows),
        flows,
        evidence: Evidence::Mtu(Mtu {
            fabric_mtu: majority,
            fabric_flows: majority.map_or(0, |m| count.get(&m).copied().unwrap_or(0)),
            sized_flows: sized.len() as u64,
            small,
            too_big,
        }),
    })
}
