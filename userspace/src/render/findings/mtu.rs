//! `mtu-mismatch` in words.

use serde_json::json;

use crate::analyze::findings::Mtu;
use crate::render::{fmt_count, fmt_ip};

use super::{Names, Words, params};

pub(super) fn words(e: &Mtu, n: &Names) -> Words {
    let mut parts = Vec::new();
    for f in &e.small {
        let mut s = format!(
            "{} uses path MTU {} ({} request packets) while {} of {} flows use {}",
            n.describe(&f.flow),
            f.mtu,
            f.data_packets,
            e.fabric_flows,
            e.sized_flows,
            e.fabric_mtu.unwrap_or_default()
        );
        if let Some((id, mtu)) = f.peer {
            s.push_str(&format!("; flow {id} between the same hosts uses {mtu}"));
        }
        parts.push(s);
    }
    for f in &e.too_big {
        let largest = f.answered_max;
        parts.push(format!(
            "{} sends frames of up to {} bytes and gets nothing through, while flows on the same tap with frames of up to {largest} bytes are answered: a hop on the path from {} to {} drops frames of {} bytes (it carries {largest})",
            n.describe(&f.flow),
            f.max_frame_len,
            fmt_ip(&f.flow.src_ip),
            fmt_ip(&f.flow.dst_ip),
            f.max_frame_len
        ));
    }
    Words {
        title: format!(
            "MTU mismatch: {} with a smaller path MTU than their peers, {} whose frames are too large for their path",
            fmt_count(e.small.len() as u64, "flow"),
            fmt_count(e.too_big.len() as u64, "flow")
        ),
        detail: parts.join("; "),
        recommendation: "Use RoCE MTU 4096 on every NIC (ibv_devinfo active_mtu follows the netdev MTU: 4096 needs an Ethernet MTU above 4200 bytes, so set 9000), and the same Ethernet MTU on every hop — NIC ports, switch ports, VLAN and routed interfaces; an application or NCCL setting (NCCL_IB_MTU) asking for less lowers it per connection".into(),
        params: params([
            ("fabric_mtu", json!(e.fabric_mtu)),
            ("smaller_mtu_flows", json!(e.small.len())),
            ("too_large_flows", json!(e.too_big.len())),
        ]),
    }
}
