//! `qos-mismatch`: RoCE data on a priority PFC never pauses, flows and CNPs
//! remarked on the path (the marks per tap and per flow: `analyze/qos.rs`;
//! see "QoS mismatch" in `docs/analysis.md`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use crate::analyze::qos::{FlowMarks, Marks};
use crate::analyze::{Finding, Flow, fmt_count, fmt_ip};

use super::input::{Input, params};

/// `qos-mismatch`.
pub(crate) fn finding(x: &Input, marks: &Marks, out: &mut Vec<Finding>) {
    let requests: Vec<&Flow> = x.flows().filter(|f| f.data_packets > 0).collect();
    // Priorities PFC paused anywhere in the capture.
    let paused: BTreeSet<u8> = x
        .summary
        .pfc
        .iter()
        .filter(|p| p.paused_ns > 0)
        .map(|p| p.priority)
        .collect();
    let mut lines = Vec::new();
    let mut ids: Vec<u32> = Vec::new();
    let unprotected: Vec<&&Flow> = if paused.is_empty() {
        Vec::new()
    } else {
        requests
            .iter()
            .filter(|f| f.priority.is_some_and(|p| !paused.contains(&p)))
            .collect()
    };
    let paused_words: Vec<String> = paused.iter().map(u8::to_string).collect();
    for f in &unprotected {
        lines.push(format!(
            "{} sends its RoCE data on priority {} ({}), which no PFC frame of the capture pauses, while PFC pauses priority {}: its packets are dropped, not paused, when a queue fills.",
            x.describe(f),
            f.priority.unwrap_or(0),
            f.marks.words(),
            paused_words.join(", ")
        ));
        ids.push(f.id);
    }
    // The same connection at several taps: its marks at each.
    // By (source, destination, destination QP).
    type Conn = ([u8; 16], [u8; 16], u32);
    let mut by_conn: BTreeMap<Conn, Vec<&Flow>> = BTreeMap::new();
    for f in &requests {
        by_conn
            .entry((f.src_ip, f.dst_ip, f.dest_qp))
            .or_default()
            .push(f);
    }
    let mut remarked = 0u64;
    for ((s, d, qp), at) in &by_conn {
        if at.len() < 2 || at.iter().all(|f| f.marks == at[0].marks) {
            continue;
        }
        remarked += 1;
        let seen: Vec<String> = at
            .iter()
            .map(|f| {
                format!(
                    "{} at {} (flow {})",
                    f.marks.words(),
                    x.iface(f.iface),
                    f.id
                )
            })
            .collect();
        lines.push(format!(
            "{} → {} QP {qp} is marked differently at its taps: {}: a hop between them rewrites its DSCP or priority.",
            fmt_ip(s),
            fmt_ip(d),
            seen.join(", ")
        ));
        ids.extend(at.iter().map(|f| f.id));
    }
    // CE-marked connections whose CNPs come back marked differently at two
    // taps: the CNPs' DSCP or priority is rewritten on their way.
    let mut cnps_remarked = 0u64;
    for ((s, d, qp), at) in &by_conn {
        if at.iter().all(|f| f.ce == 0) {
            continue;
        }
        let cnp: Vec<(&Flow, FlowMarks)> = at
            .iter()
            .filter_map(|f| {
                let m = *marks
                    .cnps
                    .get(&(f.iface, f.dst_ip, f.src_ip, f.paired_qp?))?;
                Some((*f, m))
            })
            .collect();
        if cnp.len() < 2 || cnp.iter().all(|(_, m)| *m == cnp[0].1) {
            continue;
        }
        cnps_remarked += 1;
        let seen: Vec<String> = cnp
            .iter()
            .map(|(f, m)| format!("{} at {}", m.words(), x.iface(f.iface)))
            .collect();
        lines.push(format!(
            "{} → {} QP {qp} carries CE marks, and its CNPs come back marked differently at its taps: {}: a hop rewrites the CNPs' DSCP or priority, so they may land in a queue that drops or delays them.",
            fmt_ip(s),
            fmt_ip(d),
            seen.join(", ")
        ));
        ids.extend(at.iter().map(|f| f.id));
    }
    if lines.is_empty() {
        return;
    }
    // The map in use, as the frames show it.
    let pairs = marks.pairs();
    let mut per_tap: BTreeMap<u16, Vec<String>> = BTreeMap::new();
    for &(iface, dscp, pcp) in &pairs {
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
    ids.sort_unstable();
    ids.dedup();
    out.push(Finding {
        id: "qos-mismatch",
        severity: "warning",
        impact: x.traffic_share(&ids),
        title: format!(
            "QoS mismatch: {} on a priority PFC never pauses, {} remarked on the path, {} whose CNPs are remarked",
            fmt_count(unprotected.len() as u64, "flow"),
            fmt_count(remarked, "connection"),
            fmt_count(cnps_remarked, "connection")
        ),
        detail: lines.join("\n"),
        recommendation: "Put RoCE on the lossless priority end to end: set the NICs' RoCE traffic class (cma_roce_tos -d DEV -t 106 for DSCP 26 with ECN, or the NIC's default TOS; NCCL_IB_TC) so every host sends the DSCP the fabric maps to the PFC priority; trust DSCP on the NIC ports (mlnx_qos -i IF --trust dscp, PFC on that priority: --pfc 0,0,0,1,0,0,0,0); give every switch the same DSCP → queue map with PFC and ECN on that queue, and remove DSCP rewrites (remarking) on the path".into(),
        flows: ids,
        params: params([
            ("unprotected_flows", json!(unprotected.iter().map(|f| f.id).collect::<Vec<_>>())),
            ("paused_priorities", json!(paused)),
            ("remarked_connections", json!(remarked)),
            ("cnp_remarked_connections", json!(cnps_remarked)),
            (
                "dscp_pcp_seen",
                json!(pairs
                    .iter()
                    .map(|&(i, d, p)| json!({"iface": x.iface(i), "dscp": d, "pcp": p}))
                    .collect::<Vec<_>>()),
            ),
        ]),
        wireshark: None,
    });
}
