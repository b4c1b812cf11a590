//! QoS mismatch: RoCE data on a priority PFC never pauses while it pauses
//! another, and flows whose DSCP or PCP differs from tap to tap (remarked
//! on the path); with the DSCP → priority map in use as the frames show it
//! (see "QoS mismatch" in `docs/analysis.md`).
//!
//! RoCE needs its data on the lossless priority, the one PFC protects and
//! ECN marks: a NIC left at TOS 0 sends on priority 0, which drops instead
//! of pausing, and a switch that rewrites DSCP on the way moves the flow to
//! another queue at the next hop (or takes it out of the ECN-enabled one).
//!
//! O(1) per record (an OR into a bitmap per tap, one per flow).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::findings::{Input, params};
use super::hash::FastMap;
use super::{Finding, Flow, FlowKey, fmt_count, fmt_ip};

/// DSCP values seen per tap and PCP: index 0-7 the PCP of tagged frames, 8
/// untagged frames; bit N is DSCP N.
#[derive(Clone, Debug, Default)]
pub(crate) struct Marks {
    per_tap: Vec<[u64; 9]>,
    /// The marks of the CNPs per `(iface, CNP src, CNP dst, CNP dest QP)`.
    cnps: FastMap<FlowKey, FlowMarks>,
}

impl Marks {
    /// A RoCE frame or CNP with DSCP `dscp` and, when tagged, PCP `pcp`.
    pub fn frame(&mut self, iface: u16, dscp: u8, pcp: Option<u8>) {
        let i = usize::from(iface);
        if self.per_tap.len() <= i {
            self.per_tap.resize(i + 1, [0; 9]);
        }
        let slot = pcp.map_or(8, |p| usize::from(p & 7));
        self.per_tap[i][slot] |= 1 << (dscp & 63);
    }

    /// A CNP to `key`'s QP with DSCP `dscp` and, when tagged, PCP `pcp`.
    pub fn cnp(&mut self, key: FlowKey, dscp: u8, pcp: Option<u8>) {
        self.cnps.entry(key).or_default().frame(Some(dscp), pcp);
    }

    /// `(iface, dscp, pcp)` seen, in order; `pcp` `None` for untagged.
    fn pairs(&self) -> Vec<(u16, u8, Option<u8>)> {
        let mut out = Vec::new();
        for (iface, slots) in self.per_tap.iter().enumerate() {
            for dscp in 0..64u8 {
                for (slot, bits) in slots.iter().enumerate() {
                    if bits & (1 << dscp) != 0 {
                        let pcp = (slot < 8).then_some(slot as u8);
                        out.push((iface as u16, dscp, pcp));
                    }
                }
            }
        }
        out
    }
}

/// The DSCPs and PCPs of a flow's frames at its tap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FlowMarks {
    pub dscps: u64,
    pub pcps: u8,
}

impl FlowMarks {
    pub fn frame(&mut self, dscp: Option<u8>, pcp: Option<u8>) {
        if let Some(d) = dscp {
            self.dscps |= 1 << (d & 63);
        }
        if let Some(p) = pcp {
            self.pcps |= 1 << (p & 7);
        }
    }

    fn words(&self) -> String {
        let dscps: Vec<String> = (0..64)
            .filter(|d| self.dscps & (1 << d) != 0)
            .map(|d: u8| d.to_string())
            .collect();
        let pcps: Vec<String> = (0..8)
            .filter(|p| self.pcps & (1 << p) != 0)
            .map(|p: u8| p.to_string())
            .collect();
        let mut s = format!("DSCP {}", dscps.join("/"));
        if !pcps.is_empty() {
            s.push_str(&format!(" PCP {}", pcps.join("/")));
        }
        s
    }
}

/// `qos-mismatch`.
pub(crate) fn finding(x: &Input, marks: &Marks, out: &mut Vec<Finding>) {
    let requests: Vec<&Flow> = x.flows.iter().filter(|f| f.data_packets > 0).collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_keep_each_dscp_and_pcp_pair_per_tap() {
        let mut m = Marks::default();
        m.frame(2, 26, Some(3));
        m.frame(2, 26, Some(3));
        m.frame(2, 48, Some(6));
        m.frame(0, 0, None);
        assert_eq!(
            m.pairs(),
            [(0, 0, None), (2, 26, Some(3)), (2, 48, Some(6))]
        );
        let mut f = FlowMarks::default();
        f.frame(Some(26), Some(3));
        f.frame(Some(10), Some(3));
        assert_eq!(f.words(), "DSCP 10/26 PCP 3");
    }
}
