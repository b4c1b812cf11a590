//! `qos-mismatch` in words.

use std::collections::BTreeMap;

use serde_json::json;

use crate::analyze::findings::QosMismatch;
use crate::analyze::qos::FlowMarks;
use crate::render::{fmt_count, fmt_ip};

use super::{Names, Words, params};

/// A flow's marks: `DSCP 10/26 PCP 3`.
pub(crate) fn marks_words(m: &FlowMarks) -> String {
    let dscps: Vec<String> = (0..64)
        .filter(|d| m.dscps & (1 << d) != 0)
        .map(|d: u8| d.to_string())
        .collect();
    let pcps: Vec<String> = (0..8)
        .filter(|p| m.pcps & (1 << p) != 0)
        .map(|p: u8| p.to_string())
        .collect();
    let mut s = format!("DSCP {}", dscps.join("/"));
    if !pcps.is_empty() {
        s.push_str(&format!(" PCP {}", pcps.join("/")));
    }
    s
}

pub(super) fn qos_mismatch(e: &QosMismatch, x: &Names) -> Words {
    let mut lines = Vec::new();
    let paused_words: Vec<String> = e.paused.iter().map(u8::to_string).collect();
    for u in &e.unprotected {
        lines.push(format!(
            "{} sends its RoCE data on priority {} ({}), which no PFC frame of the capture pauses, while PFC pauses priority {}: its packets are dropped, not paused, when a queue fills.",
            x.describe(&u.flow),
            u.priority,
            marks_words(&u.marks),
            paused_words.join(", ")
        ));
    }
    for r in &e.remarked {
        let seen: Vec<String> = r
            .at
            .iter()
            .map(|(iface, id, m)| format!("{} at {} (flow {id})", marks_words(m), x.iface(*iface)))
            .collect();
        lines.push(format!(
            "{} → {} QP {} is marked differently at its taps: {}: a hop between them rewrites its DSCP or priority.",
            fmt_ip(&r.src_ip),
            fmt_ip(&r.dst_ip),
            r.dest_qp,
            seen.join(", ")
        ));
    }
    for r in &e.cnps_remarked {
        let seen: Vec<String> =
            r.at.iter()
                .map(|(iface, _, m)| format!("{} at {}", marks_words(m), x.iface(*iface)))
                .collect();
        lines.push(format!(
            "{} → {} QP {} carries CE marks, and its CNPs come back marked differently at its taps: {}: a hop rewrites the CNPs' DSCP or priority, so they may land in a queue that drops or delays them.",
            fmt_ip(&r.src_ip),
            fmt_ip(&r.dst_ip),
            r.dest_qp,
            seen.join(", ")
        ));
    }
    // The map in use, as the frames show it.
    let mut per_tap: BTreeMap<u16, Vec<String>> = BTreeMap::new();
    for &(iface, dscp, pcp) in &e.pairs {
        per_tap.entry(iface).or_default().push(match pcp {
            Some(p) => format!("{dscp}→{p}"),
            None => format!("{dscp}→untagged"),
        });
    }
    let map: Vec<String> = per_tap
        .iter()
        .map(|(i, m)| format!("{}: {}", x.iface(*i), m.join(", ")))
        .collect();
    lines.push(format!(
        "DSCP → priority (PCP) in use, as the RoCE frames and CNPs show it: {}.",
        map.join("; ")
    ));
    Words {
        title: format!(
            "QoS mismatch: {} on a priority PFC never pauses, {} remarked on the path, {} whose CNPs are remarked",
            fmt_count(e.unprotected.len() as u64, "flow"),
            fmt_count(e.remarked.len() as u64, "connection"),
            fmt_count(e.cnps_remarked.len() as u64, "connection")
        ),
        detail: lines.join("\n"),
        recommendation: "Put RoCE on the lossless priority end to end: set the NICs' RoCE traffic class (cma_roce_tos -d DEV -t 106 for DSCP 26 with ECN, or the NIC's default TOS; NCCL_IB_TC) so every host sends the DSCP the fabric maps to the PFC priority; trust DSCP on the NIC ports (mlnx_qos -i IF --trust dscp, PFC on that priority: --pfc 0,0,0,1,0,0,0,0); give every switch the same DSCP → queue map with PFC and ECN on that queue, and remove DSCP rewrites (remarking) on the path".into(),
        params: params([
            ("unprotected_flows", json!(e.unprotected.iter().map(|u| u.flow.id).collect::<Vec<_>>())),
            ("paused_priorities", json!(e.paused)),
            ("remarked_connections", json!(e.remarked.len())),
            ("cnp_remarked_connections", json!(e.cnps_remarked.len())),
            (
                "dscp_pcp_seen",
                json!(e.pairs
                    .iter()
                    .map(|&(i, d, p)| json!({"iface": x.iface(i), "dscp": d, "pcp": p}))
                    .collect::<Vec<_>>()),
            ),
        ]),
    }
}
