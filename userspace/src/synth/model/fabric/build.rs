//! Building the leaf-spine fabric of a [`Config`]: nodes, cabled ports,
//! routes, impairments and taps.

use crate::synth::model::hosts::{
    Cabling, MAX_FLOWS, MAX_SPINES, cable_leaf_spine, ephemeral_port, port_mac, receiver_ip,
    requester_qpn, responder_qpn, sender_ip,
};
use crate::synth::model::mirror::{self, Mirror};
use crate::synth::model::postcards::SwitchLog;
use crate::synth::model::qp::Qp;
use crate::synth::model::scenario::{Config, Dir};
use crate::synth::model::switch::Rng;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::net::Ipv4Addr;

use super::{Ev, Fabric, FabricStats, Host, NodeKind, Port, PortCounters, TapInfo};

impl Fabric {
    /// Build the leaf-spine fabric of `cfg`. Errors name the bad setting.
    pub fn new(cfg: &Config) -> Result<Fabric, String> {
        let cfg = cfg.clone();
        if cfg.senders == 0 || cfg.receivers == 0 || cfg.spines == 0 {
            return Err("senders, receivers and spines must be at least 1".into());
        }
        if cfg.senders > 250 || cfg.receivers > 250 {
            return Err("at most 250 senders and 250 receivers".into());
        }
        if cfg.spines > MAX_SPINES {
            return Err(format!("at most {MAX_SPINES} spines"));
        }
        if cfg.flows.len() > MAX_FLOWS {
            return Err(format!(
                "{} flows: at most {MAX_FLOWS} (their QP numbers are 24 bits)",
                cfg.flows.len()
            ));
        }
        if cfg.mtu == 0 || cfg.link_gbps <= 0.0 {
            return Err("mtu and link_gbps must be positive".into());
        }
        let switch_log = SwitchLog::new(cfg.switch.telemetry.clone());
        let mut f = Fabric {
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            rng: Rng::new(cfg.seed),
            names: vec![],
            kinds: vec![],
            ports: vec![],
            hosts: vec![],
            qps: vec![],
            taps: vec![],
            mirrors: vec![],
            frames: vec![],
            meta: vec![],
            tap_drops: vec![],
            net_drops: vec![],
            switch_log,
            pauses: vec![],
            max_frame_len: 0,
            stats: FabricStats::default(),
            requests_via: vec![],
            dscp_rewrites: vec![],
            cfg,
        };
        let c = f.cfg.clone();
        let mut host_nodes = vec![];
        for (prefix, n) in [("s", c.senders), ("r", c.receivers)] {
            for i in 0..n {
                let ip = if prefix == "s" {
                    sender_ip(i)
                } else {
                    receiver_ip(i)
                };
                let h = f.hosts.len();
                f.names.push(format!("{prefix}{i}"));
                f.kinds.push(NodeKind::Host(h));
                let rx = if prefix == "r" {
                    c.rx_gbps.get(i).copied().filter(|g| *g > 0.0)
                } else {
                    None
                };
                f.hosts.push(Host {
                    port: usize::MAX,
                    ip,
                    rx_gbps: rx,
                    base_rx_gbps: rx,
                    rx: VecDeque::new(),
                    rx_busy: false,
                    flows: vec![],
                    rr: 0,
                });
                host_nodes.push(f.names.len() - 1);
            }
        }
        let switch = |f: &mut Fabric, name: String| {
            f.names.push(name);
            f.kinds.push(NodeKind::Switch {
                routes: BTreeMap::new(),
            });
            f.names.len() - 1
        };
        let leaf0 = switch(&mut f, "leaf0".into());
        let leaf1 = switch(&mut f, "leaf1".into());
        let spines: Vec<usize> = (0..c.spines)
            .map(|i| switch(&mut f, format!("spine{i}")))
            .collect();
        // Links.
        let host_ports = cable_leaf_spine(&mut f, &host_nodes, c.senders, [leaf0, leaf1], &spines);
        for (host, port) in f.hosts.iter_mut().zip(host_ports) {
            host.port = port;
        }
        // Queue pairs.
        for (i, fc) in c.flows.iter().enumerate() {
            if fc.src >= c.senders || fc.dst >= c.receivers {
                return Err(format!(
                    "flows.{i}: s{} -> r{} is not in the fabric",
                    fc.src, fc.dst
                ));
            }
            let sport = fc.udp_sport.unwrap_or_else(|| ephemeral_port(i, 0x1F3));
            if fc.mtu == Some(0) {
                return Err(format!("flows.{i}.mtu must be positive"));
            }
            if fc.prio.is_some_and(|p| p > 7) || fc.dscp.is_some_and(|d| d > 63) {
                return Err(format!("flows.{i}: prio is 0 to 7 and dscp 0 to 63"));
            }
            f.qps.push(Qp::new(
                fc.clone(),
                fc.mtu.unwrap_or(c.mtu),
                c.link_gbps,
                requester_qpn(i),
                responder_qpn(i),
                sport,
            ));
            f.hosts[fc.src].flows.push(i);
            f.requests_via.push(vec![]);
            f.dscp_rewrites.push(vec![]);
            f.push(fc.start_ns, Ev::Wake(f.hosts[fc.src].port));
        }
        // Impairments and taps.
        let probability = |what: String, p: f64| {
            if (0.0..=1.0).contains(&p) {
                Ok(())
            } else {
                Err(format!("{what} = {p}: a probability is between 0 and 1"))
            }
        };
        for (k, imp) in c.impairments.iter().enumerate() {
            probability(format!("impairments.{k}.loss"), imp.loss)?;
            probability(format!("impairments.{k}.corrupt"), imp.corrupt)?;
            probability(format!("impairments.{k}.reorder"), imp.reorder)?;
            if imp.remark_dscp.iter().flatten().any(|&d| d > 63) {
                return Err(format!("impairments.{k}.remark_dscp: a DSCP is 0 to 63"));
            }
        }
        for (t, tp) in c.taps.iter().enumerate() {
            mirror::check(t, tp)?;
        }
        for imp in &c.impairments {
            let p = f.port_of(&imp.node, &imp.toward)?;
            let peer = f.ports[p].peer;
            f.ports[peer].loss = imp.loss;
            f.ports[peer].corrupt = imp.corrupt;
            f.ports[peer].reorder = imp.reorder;
            f.ports[peer].reorder_delay_ns = imp.reorder_delay_ns;
            f.ports[peer].max_frame = imp.max_frame;
            f.ports[p].remark_dscp = imp.remark_dscp.clone();
        }
        for (t, tp) in c.taps.iter().enumerate() {
            let p = f.port_of(&tp.node, &tp.toward)?;
            if matches!(tp.dir, Dir::Tx | Dir::Both) {
                f.ports[p].taps_tx.push(t);
            }
            if matches!(tp.dir, Dir::Rx | Dir::Both) {
                f.ports[p].taps_rx.push(t);
            }
            f.mirrors.push(Mirror::new(t, tp, c.seed));
            f.taps.push(TapInfo {
                name: tp.name(),
                node: tp.node.clone(),
                toward: tp.toward.clone(),
                dir: tp.dir,
                link_gbps: c.link_gbps,
            });
        }
        for rc in &c.rate_changes {
            if rc.host >= c.receivers {
                return Err(format!("rate change for r{}: no such receiver", rc.host));
            }
            f.push(rc.at_ns, Ev::Rate(c.senders + rc.host, rc.gbps));
        }
        for (k, sd) in c.slowdowns.iter().enumerate() {
            if sd.host >= c.receivers {
                return Err(format!("slowdowns.{k}: no receiver r{}", sd.host));
            }
            if sd.period_ns == 0 || sd.slow_ns > sd.period_ns {
                return Err(format!("slowdowns.{k}: need 0 < slow_ns <= period_ns"));
            }
            f.push(sd.start_ns, Ev::Slow(k, true));
        }
        Ok(f)
    }

    pub(super) fn link(&mut self, a: usize, b: usize) -> (usize, usize) {
        let pa = self.ports.len();
        let pb = pa + 1;
        for (node, peer) in [(a, pb), (b, pa)] {
            let local = self.ports.iter().filter(|p| p.node == node).count();
            let host = matches!(self.kinds[node], NodeKind::Host(_));
            let (pfc, xoff, xon) = if host {
                (
                    self.cfg.nic.pfc_enabled,
                    self.cfg.nic.rx_xoff,
                    self.cfg.nic.rx_xon,
                )
            } else {
                (
                    self.cfg.switch.pfc_enabled,
                    self.cfg.switch.pfc_xoff,
                    self.cfg.switch.pfc_xon,
                )
            };
            self.ports.push(Port {
                node,
                peer,
                number: u16::try_from(local + 1).unwrap_or(u16::MAX),
                mac: port_mac(host, node, local),
                gbps: self.cfg.link_gbps,
                prop_ns: self.cfg.prop_ns,
                queues: Default::default(),
                qbytes: [0; 8],
                ctrl: VecDeque::new(),
                busy: false,
                paused_until: [0; 8],
                wake_at: u64::MAX,
                pfc_enabled: pfc,
                xoff,
                xon,
                in_bytes: [0; 8],
                pfc_on: [false; 8],
                pfc_epoch: [0; 8],
                pause_id: [None; 8],
                paused_by: [None; 8],
                loss: 0.0,
                corrupt: 0.0,
                reorder: 0.0,
                reorder_delay_ns: 0,
                max_frame: 0,
                remark_dscp: vec![],
                taps_tx: vec![],
                taps_rx: vec![],
                counters: PortCounters::default(),
            });
        }
        (pa, pb)
    }

    pub(super) fn route(&mut self, node: usize, ip: Ipv4Addr, ports: Vec<usize>) {
        if let NodeKind::Switch { routes } = &mut self.kinds[node] {
            routes.insert(ip, ports);
        }
    }
}

impl Cabling for Fabric {
    fn cable(&mut self, a: usize, b: usize) -> (usize, usize) {
        self.link(a, b)
    }
    fn route_to(&mut self, node: usize, ip: Ipv4Addr, ports: Vec<usize>) {
        self.route(node, ip, ports);
    }
}

impl Fabric {
    pub(super) fn port_of(&self, node: &str, toward: &str) -> Result<usize, String> {
        let n = self
            .names
            .iter()
            .position(|x| x == node)
            .ok_or_else(|| format!("no node `{node}`"))?;
        let t = self
            .names
            .iter()
            .position(|x| x == toward)
            .ok_or_else(|| format!("no node `{toward}`"))?;
        self.ports
            .iter()
            .position(|p| p.node == n && self.ports[p.peer].node == t)
            .ok_or_else(|| format!("`{node}` has no port toward `{toward}`"))
    }
}
