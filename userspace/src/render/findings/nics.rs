//! `slow-nic-reaction` in words.

use serde_json::json;

use crate::analyze::Latency;
use crate::analyze::findings::SlowNic;
use crate::render::{fmt_count, fmt_duration, fmt_ip, fmt_mac};

use super::{Names, Words, params};

pub(super) fn slow_nic(s: &SlowNic, x: &Names) -> Words {
    let who = format!("{} ({})", fmt_ip(&s.ip), fmt_mac(&s.mac));
    let tap = x.iface(s.iface);
    let check = match s.kind {
        Latency::NakGeneration => {
            "This receiver is slow to NAK a packet out of sequence. Compare its NIC's firmware and settings with its peers' (mlx5: ethtool -S out_of_sequence, out_of_buffer), its PCIe link (lspci: width and speed) and the host's load; and check the tap sits as far from it as from its peers: at a mirror between the NICs the latency includes the path to this NIC and back, so a longer or more congested path looks like a slower NIC."
        }
        Latency::NakReaction => {
            "This sender is slow to resend after a NAK. Compare its NIC's firmware and settings with its peers', its PCIe link and the host's load (a requester that must re-read the data from host memory waits on PCIe), and check the tap sits as far from it as from its peers: at a mirror between the NICs the latency includes the path from the tap to this NIC and back."
        }
        Latency::TimeoutRetrans => {
            "This sender's retransmission timeout is longer than its peers': the QP's local ACK timeout T (4.096 µs × 2^T: ibv_modify_qp's timeout, NCCL_IB_TIMEOUT, rdma_set_option RDMA_OPTION_ID_ACK_TIMEOUT) differs on this host. Set the same T everywhere, as small as the fabric's longest round trip under congestion allows."
        }
        Latency::CnpGeneration => {
            "This receiver is slow to send a CNP for a CE-marked packet. Check its notification point: CNPs enabled for the priority (mlx5: /sys/class/net/<if>/ecn/roce_np/enable/<prio>), its minimum time between CNPs (mlx5 cc_params np_min_time_between_cnps) against its peers', and the CNPs' priority and DSCP (a CNP queued behind data on the way back arrives late); at a mirror between the NICs the latency includes the path."
        }
    };
    Words {
        title: format!(
            "NIC {who} is slow at {} on {tap}: median {} against its peers' {}",
            s.kind.words(),
            fmt_duration(s.median_ns),
            fmt_duration(s.peers_median_ns)
        ),
        detail: format!(
            "{who} as {tap} sees it: median {} over {}; the {} other NICs {tap} shows together: median {} over {} ({:.1}x slower); each latency includes the path between {tap} and the NIC",
            fmt_duration(s.median_ns),
            fmt_count(s.count, "sample"),
            s.peers,
            fmt_duration(s.peers_median_ns),
            fmt_count(s.peers_count, "sample"),
            s.median_ns as f64 / s.peers_median_ns.max(1) as f64
        ),
        recommendation: check.into(),
        params: params([
            ("latency", json!(s.kind.as_str())),
            ("iface", json!(tap)),
            ("nic_mac", json!(fmt_mac(&s.mac))),
            ("nic_ip", json!(fmt_ip(&s.ip))),
            ("median_ns", json!(s.median_ns)),
            ("count", json!(s.count)),
            ("peers", json!(s.peers)),
            ("peers_median_ns", json!(s.peers_median_ns)),
            ("peers_count", json!(s.peers_count)),
            ("threshold_ratio", json!(s.threshold_ratio)),
        ]),
    }
}
