//! `qos-mismatch`: RoCE data on a priority PFC never pauses, flows and CNPs
//! remarked on the path (the marks per tap and per flow: `analyze/qos.rs`;
//! see "QoS mismatch" in `docs/analysis.md`).

use std::collections::{BTreeMap, BTreeSet};

use crate::analyze::qos::{FlowMarks, Marks};
use crate::analyze::{Flow, Severity};

use super::input::{FlowRef, Input};
use super::{Diagnosis, Evidence};

/// `qos-mismatch`'s evidence.
#[derive(Clone, Debug, PartialEq)]
pub struct QosMismatch {
    /// Priorities PFC paused anywhere in the capture.
    pub paused: Vec<u8>,
    /// Request flows on a priority no PFC frame pauses.
    pub unprotected: Vec<Unprotected>,
    /// Connections marked differently at two taps.
    pub remarked: Vec<Remarked>,
    /// CE-marked connections whose CNPs come back marked differently.
    pub cnps_remarked: Vec<Remarked>,
    /// `(tap, DSCP, PCP)` pairs the RoCE frames and CNPs show.
    pub pairs: Vec<(u16, u8, Option<u8>)>,
}

/// A request flow on a priority no PFC frame pauses.
#[derive(Clone, Debug, PartialEq)]
pub struct Unprotected {
    pub flow: FlowRef,
    pub priority: u8,
    pub marks: FlowMarks,
}

/// A connection whose marks (or whose CNPs' marks) differ between taps:
/// `(tap, flow id, marks)` at each.
#[derive(Clone, Debug, PartialEq)]
pub struct Remarked {
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub dest_qp: u32,
    pub at: Vec<(u16, u32, FlowMarks)>,
}

/// `qos-mismatch`.
pub(crate) fn finding(x: &Input, marks: &Marks) -> Option<Diagnosis> {
    // Priorities PFC paused anywhere in the capture.
    let paused: BTreeSet<u8> = x
        .summary
        .pfc
        .iter()
        .filter(|p| p.paused_ns > 0)
        .map(|p| p.priority)
        .collect();
    // The live request flows are read only when a priority was paused or
    // request flows were seen at two taps: else neither part below has any.
    let kept: Vec<&Flow> = x.flows_if(false).filter(|f| f.data_packets() > 0).collect();
    let mut taps = kept.iter().map(|f| f.iface).chain(x.census.request_tap);
    let first = taps.next();
    let two_taps = x.census.requests_at_two_taps || taps.any(|t| Some(t) != first);
    let requests: Vec<&Flow> = if paused.is_empty() && !two_taps {
        kept
    } else {
        x.flows().filter(|f| f.data_packets() > 0).collect()
    };
    let mut ids: Vec<u32> = Vec::new();
    let unprotected: Vec<Unprotected> = if paused.is_empty() {
        Vec::new()
    } else {
        requests
            .iter()
            .filter(|f| f.priority().is_some_and(|p| !paused.contains(&p)))
            .map(|f| Unprotected {
                flow: FlowRef::from(*f),
                priority: f.priority().unwrap_or(0),
                marks: f.marks,
            })
            .collect()
    };
    ids.extend(unprotected.iter().map(|u| u.flow.id));
    // The same connection at several taps: its marks at each.
    // By (source, destination, destination QP).
    type Conn = ([u8; 16], [u8; 16], u32);
    let mut by_conn: BTreeMap<Conn, Vec<&Flow>> = BTreeMap::new();
    // Only where request flows were seen at two taps or more (a map of
    // every connection cost a tenth of a run of a million QPs at one tap).
    let first_tap = requests.first().map(|f| f.iface);
    let compared = if requests.iter().any(|f| Some(f.iface) != first_tap) {
        &requests[..]
    } else {
        &[]
    };
    for f in compared {
        by_conn
            .entry((f.src_ip, f.dst_ip, f.dest_qp))
            .or_default()
            .push(f);
    }
    let mut remarked = Vec::new();
    for ((s, d, qp), at) in &by_conn {
        if at.len() < 2 || at.iter().all(|f| f.marks == at[0].marks) {
            continue;
        }
        remarked.push(Remarked {
            src_ip: *s,
            dst_ip: *d,
            dest_qp: *qp,
            at: at.iter().map(|f| (f.iface, f.id, f.marks)).collect(),
        });
        ids.extend(at.iter().map(|f| f.id));
    }
    // CE-marked connections whose CNPs come back marked differently at two
    // taps: the CNPs' DSCP or priority is rewritten on their way.
    let mut cnps_remarked = Vec::new();
    for ((s, d, qp), at) in &by_conn {
        if at.iter().all(|f| f.ce() == 0) {
            continue;
        }
        let cnp: Vec<(&Flow, FlowMarks)> = at
            .iter()
            .filter_map(|f| {
                let m = *marks
                    .cnps
                    .get(&(f.iface, f.dst_ip, f.src_ip, f.paired_qp()?))?;
                Some((*f, m))
            })
            .collect();
        if cnp.len() < 2 || cnp.iter().all(|(_, m)| *m == cnp[0].1) {
            continue;
        }
        cnps_remarked.push(Remarked {
            src_ip: *s,
            dst_ip: *d,
            dest_qp: *qp,
            at: cnp.iter().map(|(f, m)| (f.iface, f.id, *m)).collect(),
        });
        ids.extend(at.iter().map(|f| f.id));
    }
    if unprotected.is_empty() && remarked.is_empty() && cnps_remarked.is_empty() {
        return None;
    }
    ids.sort_unstable();
    ids.dedup();
    Some(Diagnosis {
        severity: Severity::Warning,
        impact: x.traffic_share(&ids),
        flows: ids,
        evidence: Evidence::Qos(QosMismatch {
            paused: paused.into_iter().collect(),
            unprotected,
            remarked,
            cnps_remarked,
            pairs: marks.pairs(),
        }),
    })
}
