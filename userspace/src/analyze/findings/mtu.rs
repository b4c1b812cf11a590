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

use serde_json::json;

use crate::analyze::{Finding, Flow, fmt_count, fmt_ip};

use super::input::{Input, params, unanswered};

/// `mtu-mismatch`.
pub(crate) fn finding(x: &Input, out: &mut Vec<Finding>) {
    let mut parts = Vec::new();
    let mut flows: Vec<u32> = Vec::new();
    // Request flows with a learned MTU.
    let sized: Vec<&Flow> = x
        .flows()
        .filter(|f| f.data_packets > 0 && f.mtu > 0)
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
    let mut small = 0;
    if let Some(major) = majority {
        for f in &sized {
            // The largest MTU another flow between the same hosts uses.
            let peer = sized
                .iter()
                .filter(|o| o.src_ip == f.src_ip && o.dst_ip == f.dst_ip && o.mtu > f.mtu)
                .max_by_key(|o| o.mtu);
            if f.mtu >= major && peer.is_none() {
                continue;
            }
            small += 1;
            let mut s = format!(
                "{} uses path MTU {} ({} request packets) while {} of {} flows use {}",
                x.describe(f),
                f.mtu,
                f.data_packets,
                count.get(&major).copied().unwrap_or(0),
                sized.len(),
                major
            );
            if let Some(o) = peer {
                s.push_str(&format!(
                    "; flow {} between the same hosts uses {}",
                    o.id, o.mtu
                ));
            }
            parts.push(s);
            flows.push(f.id);
        }
    }
    // Frames no answer came back for, larger than every frame that was
    // answered on the same tap: the path carries no more than that.
    let silent: Vec<&Flow> = {
        let mut v = unanswered(x);
        v.extend(
            x.flows()
                .filter(|f| f.rewind().livelock.livelock().is_some()),
        );
        v.sort_by_key(|f| f.id);
        v.dedup_by_key(|f| f.id);
        v
    };
    let mut too_big = 0;
    for f in silent {
        let answered = x
            .flows()
            .filter(|o| o.iface == f.iface && o.paired_qp.is_some() && o.data_packets > 0)
            .map(|o| o.max_frame_len)
            .max();
        let Some(largest) = answered.filter(|&l| f.max_frame_len > l) else {
            continue;
        };
        too_big += 1;
        parts.push(format!(
            "{} sends frames of up to {} bytes and gets nothing through, while flows on the same tap with frames of up to {largest} bytes are answered: a hop on the path from {} to {} drops frames of {} bytes (it carries {largest})",
            x.describe(f),
            f.max_frame_len,
            fmt_ip(&f.src_ip),
            fmt_ip(&f.dst_ip),
            f.max_frame_len
        ));
        flows.push(f.id);
    }
    if parts.is_empty() {
        return;
    }
    flows.sort_unstable();
    flows.dedup();
    out.push(Finding {
        id: "mtu-mismatch",
        impact: x.traffic_share(&flows),
        severity: "warning",
        title: format!(
            "MTU mismatch: {} with a smaller path MTU than their peers, {} whose frames are too large for their path",
            fmt_count(small as u64, "flow"),
            fmt_count(too_big as u64, "flow")
        ),
        detail: parts.join("; "),
        recommendation: "Use RoCE MTU 4096 on every NIC (ibv_devinfo active_mtu follows the netdev MTU: 4096 needs an Ethernet MTU above 4200 bytes, so set 9000), and the same Ethernet MTU on every hop — NIC ports, switch ports, VLAN and routed interfaces; an application or NCCL setting (NCCL_IB_MTU) asking for less lowers it per connection".into(),
        flows,
        params: params([
            ("fabric_mtu", json!(majority)),
            ("smaller_mtu_flows", json!(small)),
            ("too_large_flows", json!(too_big)),
        ]),
        wireshark: None,
    });
}
