//! `dcqcn-reaction`: senders that did not slow down for their CNPs (the
//! per-flow measurement: `analyze/dcqcn.rs`; see "DCQCN reaction" in
//! `docs/analysis.md`).

use crate::analyze::dcqcn::{DECIDE_PACKETS, DROP};
use crate::analyze::{Flow, Severity};

use super::input::{FlowRef, Input};
use super::{Diagnosis, Evidence};

/// `dcqcn-reaction`'s evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct Dcqcn {
    /// The flows whose sender never slowed down, and those that did.
    pub deaf: Vec<Deaf>,
    pub working: Vec<Working>,
    /// CNPs the deaf flows got, and those not followed by a drop.
    pub cnps: u64,
    pub cnps_without_reaction: u64,
    /// Over the working flows: the longest reaction and recovery.
    pub reaction_max_ns: Option<u64>,
    pub recovery_max_ns: Option<u64>,
    /// The judgement's thresholds: the rate drop that counts, and the
    /// packets after a CNP it is looked for in.
    pub drop_fraction: f64,
    pub decide_packets: u32,
}

/// A flow that kept its rate after its CNPs.
#[derive(Clone, Debug, PartialEq)]
pub struct Deaf {
    pub flow: FlowRef,
    pub cnps: u64,
    /// CNPs followed by no drop, and the mean rate before them.
    pub without: u64,
    pub without_mean_gbps: f64,
}

/// A flow that slowed down after its CNPs.
#[derive(Clone, Debug, PartialEq)]
pub struct Working {
    pub flow: FlowRef,
    pub reactions: u64,
    /// Mean and longest time from a CNP to the first packet at the lower
    /// rate.
    pub reaction_mean_ns: u64,
    pub reaction_max_ns: u64,
    /// Mean time from a first drop back to the rate before (none when it
    /// never got back), how many recoveries, the longest.
    pub recovery_mean_ns: Option<u64>,
    pub recoveries: u64,
    pub recovery_max_ns: u64,
}

/// `dcqcn-reaction`: request flows whose sender never slowed down for its
/// CNPs, with how the loop worked on the others.
pub(crate) fn finding(x: &Input) -> Option<Diagnosis> {
    // A connection seen at several taps reacts when any of them shows it: a
    // tap past a congested queue sees that queue's pacing, not the sender's.
    let conn = |f: &Flow| (f.src_ip, f.dst_ip, f.dest_qp);
    // A reaction is measured from a CNP frame on (`analyze/cnp.rs`): with
    // none in the capture, no live flow has one.
    let live = x.summary.frames.cnp > 0;
    let reacted: std::collections::BTreeSet<_> = x
        .flows_if(live)
        .filter(|f| f.dcqcn().reactions > 0)
        .map(conn)
        .collect();
    let deaf: Vec<&Flow> = x
        .flows_if(live)
        .filter(|f| f.dcqcn().ignored() && !reacted.contains(&conn(f)))
        .collect();
    if deaf.is_empty() {
        return None;
    }
    let working: Vec<&Flow> = x.flows().filter(|f| f.dcqcn().reactions > 0).collect();
    let ns = |us: f64| (us * 1e3).round() as u64;
    let ids: Vec<u32> = deaf.iter().map(|f| f.id).collect();
    Some(Diagnosis {
        severity: Severity::Warning,
        impact: x.traffic_share(&ids),
        flows: ids,
        evidence: Evidence::Dcqcn(Dcqcn {
            cnps: deaf.iter().map(|f| f.cnps()).sum(),
            cnps_without_reaction: deaf.iter().map(|f| f.dcqcn().without).sum(),
            reaction_max_ns: working.iter().map(|f| f.dcqcn().reaction_max_ns).max(),
            recovery_max_ns: working.iter().map(|f| f.dcqcn().recovery_max_ns).max(),
            deaf: deaf
                .iter()
                .map(|f| {
                    let d = f.dcqcn();
                    Deaf {
                        flow: FlowRef::from(*f),
                        cnps: f.cnps(),
                        without: d.without,
                        without_mean_gbps: d.without_gbps_sum / d.without as f64,
                    }
                })
                .collect(),
            working: working
                .iter()
                .map(|f| {
                    let d = f.dcqcn();
                    Working {
                        flow: FlowRef::from(*f),
                        reactions: d.reactions,
                        reaction_mean_ns: ns(d.reaction_us().unwrap_or(0.0)),
                        reaction_max_ns: d.reaction_max_ns,
                        recovery_mean_ns: d.recovery_us().map(ns),
                        recoveries: d.recoveries,
                        recovery_max_ns: d.recovery_max_ns,
                    }
                })
                .collect(),
            drop_fraction: DROP,
            decide_packets: DECIDE_PACKETS,
        }),
    })
}
