//! The counters a synth run's NICs would have shown, under their mlx5
//! names, as a two-snapshot series (the run's start, all zero, and its
//! end): what `rocescope counters report` diagnoses and what a capture of
//! the same run is reconciled with. docs/counters.md ("Synth") lists each
//! counter's source in the model.
//!
//! Each host NIC is an endpoint: `host` is the node's name (`s0`, `r1`),
//! `iface` the name of the tap that mirrors its link when there is one (so
//! the capture's interface and the counters pair up), else `eth0`;
//! `device` is `mlx5_0`, port 1.
use super::model::bridge::EPOCH_NS;
use super::model::{Config, PortCounters, Run};
use crate::counters::{Endpoint, Snapshot, Source};

/// One snapshot per host NIC at the run's start and one at its end.
pub fn snapshots(run: &Run, cfg: &Config) -> Vec<Snapshot> {
    let end_ns = EPOCH_NS + run.fabric.end_ns;
    let mut out = Vec::new();
    for nic in run.ports.iter().filter(|p| p.ip.is_some()) {
        let endpoint = Endpoint {
            host: Some(nic.node.clone()),
            iface: Some(
                run.taps
                    .iter()
                    .find(|t| t.node == nic.toward && t.toward == nic.node)
                    .map_or_else(|| "eth0".to_string(), |t| t.name.clone()),
            ),
            device: Some("mlx5_0".into()),
            port: Some(1),
        };
        // The switch port at the other end of the NIC's link.
        let peer = run
            .ports
            .iter()
            .find(|p| p.node == nic.toward && p.toward == nic.node);
        let values = nic_values(run, cfg, nic, peer);
        let mut first = Snapshot::new(EPOCH_NS, endpoint.clone());
        let mut last = Snapshot::new(end_ns, endpoint);
        for (name, value, source) in values {
            first.set(&name, 0, source);
            last.set(&name, value, source);
        }
        out.push(first);
        out.push(last);
    }
    out
}

fn nic_values(
    run: &Run,
    cfg: &Config,
    nic: &PortCounters,
    peer: Option<&PortCounters>,
) -> Vec<(String, u64, Source)> {
    let mut v: Vec<(String, u64, Source)> = Vec::new();
    let mut eth = |name: String, value: u64| v.push((name, value, Source::Ethtool));
    // The model's NIC receive queue is unbounded and it has no symbol
    // layer: it never discards, and a damaged frame fails its FCS.
    eth("rx_discards_phy".into(), 0);
    eth("rx_crc_errors_phy".into(), nic.corrupted);
    eth("rx_symbol_err_phy".into(), 0);
    for p in 0..8 {
        let tx = peer.map_or(0, |x| x.sent[p]);
        let rx_pause = nic.pfc_received[p];
        let tx_pause = peer.map_or(0, |x| x.pfc_received[p]);
        eth(format!("rx_prio{p}_packets"), nic.received[p]);
        eth(format!("tx_prio{p}_packets"), tx);
        eth(format!("rx_prio{p}_pause"), rx_pause);
        eth(
            format!("rx_prio{p}_pause_duration"),
            nic.paused_ns[p] / 1000,
        );
        eth(format!("tx_prio{p}_pause"), tx_pause);
        eth(
            format!("tx_prio{p}_pause_duration"),
            peer.map_or(0, |x| x.paused_ns[p]) / 1000,
        );
    }
    let ip = nic.ip;
    let mine = |of: std::net::Ipv4Addr| Some(of) == ip;
    let mut rdma = |name: &str, value: u64| v.push((name.to_string(), value, Source::Rdma));
    let req = run.qps.iter().filter(|q| mine(q.src_ip));
    let (mut timeouts, mut naks, mut cnps_in) = (0, 0, 0);
    for q in req {
        timeouts += q.stats.timeouts;
        naks += q.stats.naks_received;
        cnps_in += q.stats.cnps_received;
    }
    let (mut ce, mut cnps_out, mut dups) = (0, 0, 0);
    for q in run.qps.iter().filter(|q| mine(q.dst_ip)) {
        ce += q.stats.ce_received;
        cnps_out += q.stats.cnps_sent;
        dups += q.stats.duplicate_packets;
    }
    rdma("local_ack_timeout_err", timeouts);
    rdma("packet_seq_err", naks);
    rdma("duplicate_request", dups);
    rdma("np_ecn_marked_roce_packets", ce);
    rdma("np_cnp_sent", cnps_out);
    // A reaction point without DCQCN receives CNPs and does nothing.
    let (handled, ignored) = if cfg.nic.dcqcn.enabled {
        (cnps_in, 0)
    } else {
        (0, cnps_in)
    };
    rdma("rp_cnp_handled", handled);
    rdma("rp_cnp_ignored", ignored);
    v
}
