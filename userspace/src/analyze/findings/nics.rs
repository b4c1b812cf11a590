//! `slow-nic-reaction`: a NIC whose median reaction latency is at least
//! [`SLOWER`] times its peers' in the same capture (the per-NIC
//! distributions: `analyze/nics.rs`; see "NIC reaction latencies" in
//! `docs/analysis.md`).

use serde_json::json;

use crate::analyze::nics::{Histogram, Latency};
use crate::analyze::{Finding, NicRow, fmt_count, fmt_duration, fmt_ip, fmt_mac};

use super::input::{Input, params};

/// A NIC this many times slower (median against median) than its peers is
/// slow.
pub(crate) const SLOWER: u64 = 4;
/// Fewest samples on each side (the NIC's, its peers' together).
pub(crate) const MIN_SAMPLES: u64 = 5;

/// What one slow NIC's finding says.
struct Slow<'a> {
    iface: u16,
    nic: &'a NicRow,
    kind: Latency,
    median_ns: u64,
    count: u64,
    peers_median_ns: u64,
    peers_count: u64,
    peers: usize,
}

/// `slow-nic-reaction`: one finding per NIC, tap and latency that is slow.
pub(crate) fn finding(x: &Input, out: &mut Vec<Finding>) {
    for kind in Latency::ALL {
        for i in 0..x.nics.len() {
            if let Some(s) = slow(x.nics, i, kind) {
                out.push(render(x, s));
            }
        }
    }
}

/// NIC `i` against every other NIC with samples of `kind` at the same tap,
/// pooled: a latency at a tap includes the path from the tap to the NIC and
/// back, so NICs seen from different taps are not compared.
fn slow(nics: &[(u16, NicRow)], i: usize, kind: Latency) -> Option<Slow<'_>> {
    let (iface, nic) = (nics[i].0, &nics[i].1);
    let own = nic.histogram(kind);
    if own.count < MIN_SAMPLES {
        return None;
    }
    let mut pooled = Histogram::default();
    let mut peers = 0;
    for (j, (tap, p)) in nics.iter().enumerate() {
        let h = p.histogram(kind);
        if j != i && *tap == iface && h.count > 0 {
            pooled.merge(h);
            peers += 1;
        }
    }
    if pooled.count < MIN_SAMPLES {
        return None;
    }
    let median = own.percentile(50)?;
    let peers_median = pooled.percentile(50)?;
    (median > peers_median && median >= SLOWER.saturating_mul(peers_median)).then_some(Slow {
        iface,
        nic,
        kind,
        median_ns: median,
        count: own.count,
        peers_median_ns: peers_median,
        peers_count: pooled.count,
        peers,
    })
}

fn render(x: &Input, s: Slow) -> Finding {
    let nic = s.nic;
    let receiver = matches!(s.kind, Latency::NakGeneration | Latency::CnpGeneration);
    // The request flows this NIC reacted for: as their receiver or sender.
    let ids: Vec<u32> = x
        .flows()
        .filter(|f| f.data_packets > 0 && f.iface == s.iface)
        .filter(|f| {
            if receiver {
                f.dst_ip == nic.ip
            } else {
                f.src_ip == nic.ip && f.src_mac == nic.mac
            }
        })
        .map(|f| f.id)
        .collect();
    let who = format!("{} ({})", fmt_ip(&nic.ip), fmt_mac(&nic.mac));
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
    Finding {
        id: "slow-nic-reaction",
        severity: "warning",
        impact: x.traffic_share(&ids),
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
        flows: ids,
        params: params([
            ("latency", json!(s.kind.as_str())),
            ("iface", json!(tap)),
            ("nic_mac", json!(fmt_mac(&nic.mac))),
            ("nic_ip", json!(fmt_ip(&nic.ip))),
            ("median_ns", json!(s.median_ns)),
            ("count", json!(s.count)),
            ("peers", json!(s.peers)),
            ("peers_median_ns", json!(s.peers_median_ns)),
            ("peers_count", json!(s.peers_count)),
            ("threshold_ratio", json!(SLOWER)),
        ]),
        wireshark: None,
    }
}
