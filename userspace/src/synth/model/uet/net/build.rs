//! Building the UET fabric: the RoCE model's leaf-spine cabling and
//! addressing with UET endpoints, and trimming switches.

use crate::synth::model::fabric::{FabricStats, TapInfo};
use crate::synth::model::hosts::{Cabling, cable_leaf_spine, port_mac};
use crate::synth::model::mirror::{self, Mirror};
use crate::synth::model::scenario::{Config, Dir};
use crate::synth::model::switch::Rng;
use crate::synth::model::uet::pdc::{Rx, Tx};
use crate::synth::model::uet::{UetCfg, UetLog};
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::net::Ipv4Addr;

use super::{Ev, Kind, Net, Port};

impl Net {
    pub fn new(cfg: &Config, ucfg: &UetCfg) -> Result<Net, String> {
        let c = cfg.clone();
        if c.senders == 0 || c.receivers == 0 || c.spines == 0 {
            return Err("senders, receivers and spines must be at least 1".into());
        }
        if c.senders > 250 || c.receivers > 250 || c.spines > 64 {
            return Err("at most 250 senders, 250 receivers and 64 spines".into());
        }
        if c.mtu == 0 || c.mtu > 0x3FFF || c.link_gbps <= 0.0 {
            return Err(
                "mtu is 1 to 16383 (SES payload length: 14 bits) and link_gbps positive".into(),
            );
        }
        if ucfg.entropies == 0 {
            return Err("uet.entropies must be at least 1".into());
        }
        if c.flows.len() > 0x1000 {
            return Err("at most 4096 PDCs".into());
        }
        let mut n = Net {
            ucfg: ucfg.clone(),
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            evs: vec![],
            free: vec![],
            rng: Rng::new(c.seed),
            names: vec![],
            kinds: vec![],
            ports: vec![],
            host_port: vec![],
            host_pdcs: vec![],
            host_rr: vec![],
            tx: vec![],
            rx: vec![],
            log: UetLog::default(),
            taps: vec![],
            mirrors: vec![],
            frames: vec![],
            meta: vec![],
            tap_drops: vec![],
            stats: FabricStats::default(),
            max_frame_len: 0,
            cfg: c.clone(),
        };
        for (prefix, count) in [("s", c.senders), ("r", c.receivers)] {
            for i in 0..count {
                n.kinds.push(Kind::Host(n.host_port.len()));
                n.names.push(format!("{prefix}{i}"));
                n.host_port.push(usize::MAX);
                n.host_pdcs.push(vec![]);
                n.host_rr.push(0);
            }
        }
        let hosts = n.names.len();
        for name in ["leaf0".to_string(), "leaf1".to_string()]
            .into_iter()
            .chain((0..c.spines).map(|i| format!("spine{i}")))
        {
            n.names.push(name);
            n.kinds.push(Kind::Switch(BTreeMap::new()));
        }
        let host_nodes: Vec<usize> = (0..hosts).collect();
        let spines: Vec<usize> = (0..c.spines).map(|s| hosts + 2 + s).collect();
        n.host_port = cable_leaf_spine(&mut n, &host_nodes, c.senders, [hosts, hosts + 1], &spines);
        for (i, fc) in c.flows.iter().enumerate() {
            if fc.src >= c.senders || fc.dst >= c.receivers {
                return Err(format!(
                    "flows.{i}: s{} -> r{} is not in the fabric",
                    fc.src, fc.dst
                ));
            }
            n.tx.push(Tx::new(i, fc, c.mtu, ucfg));
            n.rx.push(Rx::new(i, n.tx[i].packets));
            n.host_pdcs[fc.src].push(i);
            n.push(fc.start_ns, Ev::Pull(fc.src));
        }
        for (k, imp) in c.impairments.iter().enumerate() {
            for (what, p) in [("loss", imp.loss), ("reorder", imp.reorder)] {
                if !(0.0..=1.0).contains(&p) {
                    return Err(format!(
                        "impairments.{k}.{what} = {p}: a probability is between 0 and 1"
                    ));
                }
            }
            if imp.corrupt > 0.0 || imp.max_frame > 0 || !imp.remark_dscp.is_empty() {
                return Err(format!(
                    "impairments.{k}: the UET model has loss and reorder (a slower path), not corrupt, max_frame or remark_dscp"
                ));
            }
            let p = n.port_of(&imp.node, &imp.toward)?;
            let peer = n.ports[p].peer;
            n.ports[peer].loss = imp.loss;
            n.ports[peer].slow = imp.reorder;
            n.ports[peer].slow_ns = imp.reorder_delay_ns;
        }
        for (t, tp) in c.taps.iter().enumerate() {
            mirror::check(t, tp)?;
            let p = n.port_of(&tp.node, &tp.toward)?;
            if matches!(tp.dir, Dir::Tx | Dir::Both) {
                n.ports[p].taps_tx.push(t);
            }
            if matches!(tp.dir, Dir::Rx | Dir::Both) {
                n.ports[p].taps_rx.push(t);
            }
            n.mirrors.push(Mirror::new(t, tp, c.seed));
            n.taps.push(TapInfo {
                name: tp.name(),
                node: tp.node.clone(),
                toward: tp.toward.clone(),
                dir: tp.dir,
                link_gbps: c.link_gbps,
            });
        }
        Ok(n)
    }
}

impl Cabling for Net {
    fn cable(&mut self, a: usize, b: usize) -> (usize, usize) {
        let pa = self.ports.len();
        for (node, peer) in [(a, pa + 1), (b, pa)] {
            let local = self.ports.iter().filter(|p| p.node == node).count();
            let host = matches!(self.kinds[node], Kind::Host(_));
            self.ports.push(Port {
                node,
                peer,
                mac: port_mac(host, node, local),
                hi: VecDeque::new(),
                queue: VecDeque::new(),
                qbytes: 0,
                hibytes: 0,
                busy: false,
                loss: 0.0,
                slow: 0.0,
                slow_ns: 0,
                taps_tx: vec![],
                taps_rx: vec![],
            });
        }
        (pa, pa + 1)
    }

    fn route_to(&mut self, node: usize, ip: Ipv4Addr, ports: Vec<usize>) {
        if let Kind::Switch(routes) = &mut self.kinds[node] {
            routes.insert(ip, ports);
        }
    }
}

impl Net {
    pub(super) fn port_of(&self, node: &str, toward: &str) -> Result<usize, String> {
        let find = |x: &str| {
            self.names
                .iter()
                .position(|n| n == x)
                .ok_or_else(|| format!("no node `{x}`"))
        };
        let (a, b) = (find(node)?, find(toward)?);
        self.ports
            .iter()
            .position(|p| p.node == a && self.ports[p.peer].node == b)
            .ok_or_else(|| format!("`{node}` has no port toward `{toward}`"))
    }
}
