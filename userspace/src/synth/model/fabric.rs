//! The event loop: hosts, switches, ports with per-priority egress queues,
//! PFC per ingress port and priority, WRED/ECN, links with serialisation and
//! propagation delay, and the mirror taps.

use super::hosts::{
    Cabling, IP_TTL, MAX_FLOWS, MAX_SPINES, cable_leaf_spine, ephemeral_port, port_mac,
    receiver_ip, requester_qpn, responder_qpn, sender_ip,
};
use super::mirror::{self, Mirror, Recording};
use super::postcards::{
    DROP_REASON_TRAFFIC_MANAGER, InbandHop, PortName, Postcard, SwitchLog, switch_id,
};
use super::qp::{Placed, Qp, QpStats, RateStep};
use super::scenario::{Config, Dir};
use super::spec::{
    Aeth, CnpSpec, FrameMeta, FrameSpec, MAC_CONTROL_DST, PfcSpec, Reth, RoceSpec, TapDrop,
    TapFrame, Trigger, Vlan,
};
use super::switch::{Rng, ecmp_pick, ecn_mark_probability, trims};
use crate::proto::ib::{self, aeth, op};
use rocescope_common::wire::TransportId;
use serde::Serialize;
use std::any::Any;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::net::Ipv4Addr;

/// Nanoseconds to put `len` bytes (plus preamble and inter-frame gap) on a link.
pub(super) fn wire_ns(len: u32, gbps: f64) -> u64 {
    (((len + 20) as f64 * 8.0) / gbps).ceil() as u64
}

fn quanta_ns(q: u16, gbps: f64) -> u64 {
    (q as f64 * crate::proto::mac_control::BITS_PER_QUANTUM as f64 / gbps).round() as u64
}

#[derive(Clone, Debug)]
struct Pkt {
    spec: FrameSpec,
    prio: u8,
    len: u32,
    /// Switch ingress port the bytes are accounted to while queued.
    ingress: Option<usize>,
    /// At a switch egress queue: when the packet arrived and the bytes
    /// ahead of it (what its telemetry report says).
    queued: Option<(u64, u64)>,
    meta: FrameMeta,
    /// In-band telemetry it carries (`synth --telemetry int-md|ifa`),
    /// newest hop first.
    hops: Vec<InbandHop>,
}

#[derive(Debug)]
struct Port {
    node: usize,
    peer: usize,
    /// Its number on its node (1-based, in cabling order).
    number: u16,
    mac: [u8; 6],
    gbps: f64,
    prop_ns: u64,
    queues: [VecDeque<Pkt>; 8],
    qbytes: [u64; 8],
    ctrl: VecDeque<Pkt>,
    busy: bool,
    paused_until: [u64; 8],
    wake_at: u64,
    // PFC for what arrives on this port.
    pfc_enabled: bool,
    xoff: u64,
    xon: u64,
    in_bytes: [u64; 8],
    pfc_on: [bool; 8],
    pfc_epoch: [u64; 8],
    /// The pause episode (index into `Fabric::pauses`) this port is
    /// sending, per priority.
    pause_id: [Option<usize>; 8],
    /// The episode whose PFC frame last set `paused_until`, per priority.
    paused_by: [Option<usize>; 8],
    // Impairments of the link into this port.
    loss: f64,
    corrupt: f64,
    reorder: f64,
    reorder_delay_ns: u64,
    max_frame: u32,
    /// DSCP rewrites `[from, to]` of what this port sends.
    remark_dscp: Vec<[u8; 2]>,
    taps_tx: Vec<usize>,
    taps_rx: Vec<usize>,
    counters: PortCounters,
}

/// What a port's own hardware counters would show (synth::counters turns
/// them into NIC counter names).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PortCounters {
    pub node: String,
    pub toward: String,
    /// The host's address, when the port is a host's NIC.
    pub ip: Option<Ipv4Addr>,
    /// Frames put on the link into this port by its peer, per priority.
    pub sent: [u64; 8],
    /// Of those, frames that arrived intact.
    pub received: [u64; 8],
    /// Frames that arrived corrupted.
    pub corrupted: u64,
    /// PFC frames received per priority (XON included).
    pub pfc_received: [u64; 8],
    /// Time this port's transmitter was held by received PFC, per priority.
    pub paused_ns: [u64; 8],
}

#[derive(Debug)]
struct Host {
    port: usize,
    ip: Ipv4Addr,
    /// Processing rate in Gb/s; `None` = as fast as frames arrive.
    rx_gbps: Option<f64>,
    /// The configured rate, restored after a slowdown.
    base_rx_gbps: Option<f64>,
    rx: VecDeque<Pkt>,
    rx_busy: bool,
    flows: Vec<usize>,
    rr: usize,
}

#[derive(Debug)]
enum NodeKind {
    Host(usize),
    Switch {
        routes: BTreeMap<Ipv4Addr, Vec<usize>>,
    },
}

#[derive(Debug)]
enum Ev {
    TxDone(usize),
    Arrive(usize, Box<Pkt>),
    Wake(usize),
    RxDone(usize),
    Rto(usize, u64),
    PfcRefresh(usize, u8, u64),
    Dcqcn(usize),
    Rate(usize, f64),
    /// Slowdown `k` starts (`true`) or ends.
    Slow(usize, bool),
    /// A mirror's delayed second copy of a frame is recorded.
    Mirror(Box<(TapFrame, FrameMeta, Vec<InbandHop>)>),
}

struct Entry {
    t: u64,
    seq: u64,
    ev: Ev,
}
impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

/// A mirror tap as resolved on the built fabric.
#[derive(Clone, Debug, Serialize)]
pub struct TapInfo {
    pub name: String,
    pub node: String,
    pub toward: String,
    pub dir: Dir,
    pub link_gbps: f64,
}

/// Fabric-wide counters of the model.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FabricStats {
    pub events: u64,
    pub end_ns: u64,
    /// Discards by switches (queue limit): what a switch's counters show.
    pub switch_drops: u64,
    /// RoCE requests the switches trimmed (`switch.trim_bytes`).
    #[serde(skip_serializing_if = "super::is_zero")]
    pub trimmed: u64,
    pub link_drops: u64,
    pub corrupted: u64,
    pub pfc_frames_sent: u64,
    /// Frames the network delayed on a longer path (`reorder` impairments).
    pub reordered: u64,
    /// Frames the taps should have recorded and dropped (their `drop`).
    pub tap_dropped: u64,
    /// Second copies the taps recorded (their `duplicate`).
    pub tap_duplicates: u64,
    /// Stopped early because the taps recorded `max_frames`.
    pub truncated: bool,
}

/// One pause episode of a port (`docs/synth-truth.md`, "pfc_trees"): from
/// the XOFF it sent when the bytes received on a priority and still held
/// crossed its threshold, to its XON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PauseEpisode {
    /// The pausing port (index into `Run::ports`), its MAC and the priority.
    pub port: usize,
    pub mac: [u8; 6],
    pub priority: u8,
    pub onset_ns: u64,
    /// Its XON (`None`: still pausing when the run ended).
    pub end_ns: Option<u64>,
    /// Bytes received on the port and priority and still held at the onset.
    pub held_bytes: u64,
    /// The egress port where most of them waited (`None`: a NIC's receive
    /// queue).
    pub held_at: Option<usize>,
    /// The episode whose pause held that egress port at the onset (`None`:
    /// the port was not paused; the congestion began here).
    pub cause: Option<usize>,
}

/// Everything a run produced: the tap frames (time-ordered) with the
/// model's own annotations, and its counters.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub scenario: String,
    pub seed: u64,
    pub taps: Vec<TapInfo>,
    pub frames: Vec<TapFrame>,
    /// `meta[i]` annotates `frames[i]`.
    pub meta: Vec<FrameMeta>,
    /// Frames a tap should have recorded and did not (time-ordered).
    pub tap_drops: Vec<TapDrop>,
    /// Requests and responses (ACK, NAK) the network lost (a link or a
    /// switch), time-ordered: the truth of what vanished between taps.
    #[serde(skip)]
    pub net_drops: Vec<TapDrop>,
    pub qps: Vec<QpSummary>,
    pub fabric: FabricStats,
    /// Every port's counters.
    pub ports: Vec<PortCounters>,
    /// The requesters' retransmission timeout (`nic.min_rto_ns`).
    pub rto_ns: u64,
    /// Every pause episode of every port, by onset.
    #[serde(skip)]
    pub pauses: Vec<PauseEpisode>,
    /// Every link's propagation delay (`prop_ns`) and the longest frame
    /// any port sent: what bounds how late a tap records a PFC frame.
    pub prop_ns: u64,
    pub max_frame_len: u32,
    /// Every link's speed.
    pub link_gbps: f64,
    /// The switches' queue peaks and the telemetry reports they sent.
    #[serde(skip)]
    pub switch_log: SwitchLog,
    /// Every port's node, name (`NODE-TOWARD`) and number on its node,
    /// for the telemetry truth.
    #[serde(skip)]
    pub port_names: Vec<PortName>,
    /// The own record of a run of a transport beside RoCE (its model's,
    /// `super::TransportModel`); `None` for RoCE.
    #[serde(skip)]
    pub transport_log: Option<Box<dyn TransportLog>>,
}

impl Run {
    /// The transport the run's flows are (a scenario has one).
    pub fn transport(&self) -> TransportId {
        self.transport_log
            .as_ref()
            .map_or(TransportId::Roce, |l| l.transport())
    }

    /// The record a transport's model kept of the run, as its own type `T`.
    pub fn log_as<T: TransportLog>(&self) -> Option<&T> {
        let log: &dyn Any = &**self.transport_log.as_ref()?;
        log.downcast_ref()
    }
}

/// What the model of a transport beside RoCE records of a run, beside the
/// frames, for its truth: carried by [`Run::transport_log`].
pub trait TransportLog: Any + std::fmt::Debug + Send + Sync {
    /// The transport the run's flows are.
    fn transport(&self) -> TransportId;
    fn boxed_clone(&self) -> Box<dyn TransportLog>;
}

impl Clone for Box<dyn TransportLog> {
    fn clone(&self) -> Self {
        self.boxed_clone()
    }
}

/// One connection as configured, with what the model did on it.
#[derive(Clone, Debug, Serialize)]
pub struct QpSummary {
    pub src_ip: Ipv4Addr,
    pub dst_ip: Ipv4Addr,
    pub requester_qpn: u32,
    pub responder_qpn: u32,
    pub udp_sport: u16,
    /// Delivered payload over the run's simulated time (the application's goodput).
    pub goodput_gbps: f64,
    pub stats: QpStats,
    /// Indices the responder named in sequence-error NAKs.
    #[serde(skip)]
    pub nak_named: Vec<u64>,
    /// Each sequence-error NAK's cause: `(send_seq, resp_seq)` (`Qp::nak_causes`).
    #[serde(skip)]
    pub nak_causes: Vec<(u64, u64)>,
    /// The NAKs of trimmed requests: `(index named, resp_seq)`
    /// (`Qp::trim_naks`).
    #[serde(skip)]
    pub trim_naks: Vec<(u64, u64)>,
    /// Each NAK's first resend: `(resp_seq, send_seq)` (`Qp::nak_resends`).
    #[serde(skip)]
    pub nak_resends: Vec<(u64, u64)>,
    /// One past the highest index the responder acknowledged.
    #[serde(skip)]
    pub resp_acked: u64,
    /// The reason of each Go-Back-N rewind, in order.
    #[serde(skip)]
    pub rewinds: Vec<Trigger>,
    /// Every expiry of the retransmission timer with packets outstanding.
    #[serde(skip)]
    pub timer_fires: Vec<super::qp::TimerFire>,
    /// The most rewinds to one packet with no ACK progress between: its PSN
    /// and how many.
    #[serde(skip)]
    pub max_rewind_run: Option<(u32, u64)>,
    /// The connection's RoCE path MTU.
    #[serde(skip)]
    pub mtu: u32,
    /// The switch ports its requests left by (`NODE-TOWARD`), in path order.
    #[serde(skip)]
    pub requests_via: Vec<String>,
    /// Its data and ACKs' priority and DSCP as sent, and the DSCP rewrites
    /// its frames met (`NODE-TOWARD: FROM → TO`).
    #[serde(skip)]
    pub priority: u8,
    #[serde(skip)]
    pub dscp: u8,
    #[serde(skip)]
    pub dscp_rewrites: Vec<String>,
    /// Its requester's rate steps.
    #[serde(skip)]
    pub rate_log: Vec<RateStep>,
    /// Its requester runs DCQCN.
    #[serde(skip)]
    pub dcqcn: bool,
}

pub struct Fabric {
    cfg: Config,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Entry>,
    rng: Rng,
    names: Vec<String>,
    kinds: Vec<NodeKind>,
    ports: Vec<Port>,
    hosts: Vec<Host>,
    qps: Vec<Qp>,
    taps: Vec<TapInfo>,
    mirrors: Vec<Mirror>,
    frames: Vec<TapFrame>,
    meta: Vec<FrameMeta>,
    tap_drops: Vec<TapDrop>,
    net_drops: Vec<TapDrop>,
    pauses: Vec<PauseEpisode>,
    max_frame_len: u32,
    stats: FabricStats,
    /// Per connection: the switch ports its requests left by, in first-use
    /// order (the ECMP choices the model made).
    requests_via: Vec<Vec<usize>>,
    /// Per connection: the DSCP rewrites its frames met, `(port, from, to)`.
    dscp_rewrites: Vec<Vec<(usize, u8, u8)>>,
    switch_log: SwitchLog,
}

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

    fn link(&mut self, a: usize, b: usize) -> (usize, usize) {
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

    fn route(&mut self, node: usize, ip: Ipv4Addr, ports: Vec<usize>) {
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
    fn port_of(&self, node: &str, toward: &str) -> Result<usize, String> {
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

    fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry {
            t,
            seq: self.seq,
            ev,
        });
    }

    /// Run to the end (duration, frame limit, or nothing left to do).
    pub fn run(mut self) -> Run {
        let limit = self.cfg.max_frames.unwrap_or(usize::MAX);
        while let Some(e) = self.heap.pop() {
            if e.t > self.cfg.duration_ns {
                break;
            }
            self.now = e.t;
            self.stats.events += 1;
            self.handle(e.ev);
            if self.frames.len() >= limit {
                self.frames.truncate(limit);
                self.meta.truncate(limit);
                self.stats.truncated = true;
                break;
            }
        }
        self.stats.end_ns = self.now;
        let qps = self
            .qps
            .iter()
            .enumerate()
            .map(|(qi, q)| {
                let mut stats = q.stats.clone();
                stats.final_rate_gbps = q.rate_gbps;
                QpSummary {
                    src_ip: self.hosts[q.src_host].ip,
                    dst_ip: self.hosts[self.cfg.senders + q.dst_host].ip,
                    requester_qpn: q.requester_qpn,
                    responder_qpn: q.responder_qpn,
                    udp_sport: q.sport,
                    goodput_gbps: if self.now > 0 {
                        stats.delivered_bytes as f64 * 8.0 / self.now as f64
                    } else {
                        0.0
                    },
                    stats,
                    nak_named: q.nak_named.clone(),
                    nak_causes: q.nak_causes.clone(),
                    trim_naks: q.trim_naks.clone(),
                    nak_resends: q.nak_resends.clone(),
                    resp_acked: q.resp_acked,
                    rewinds: q.rewinds.clone(),
                    timer_fires: q.timer_fires.clone(),
                    max_rewind_run: q.max_rewind_run.map(|(i, n)| (q.psn(i), n)),
                    mtu: q.mtu,
                    priority: self.data_prio(qi),
                    dscp: self.data_dscp(qi),
                    dscp_rewrites: self.dscp_rewrites[qi]
                        .iter()
                        .map(|&(p, from, to)| {
                            let port = &self.ports[p];
                            format!(
                                "{}-{}: {from} → {to}",
                                self.names[port.node], self.names[self.ports[port.peer].node]
                            )
                        })
                        .collect(),
                    requests_via: self.requests_via[qi]
                        .iter()
                        .map(|&p| {
                            let port = &self.ports[p];
                            format!(
                                "{}-{}",
                                self.names[port.node], self.names[self.ports[port.peer].node]
                            )
                        })
                        .collect(),
                    rate_log: q.rate_log.clone(),
                    dcqcn: q.cfg.dcqcn.unwrap_or(self.cfg.nic.dcqcn.enabled),
                }
            })
            .collect();
        let end = self.now;
        let port_names = self
            .ports
            .iter()
            .map(|port| PortName {
                node: self.names[port.node].clone(),
                node_index: port.node,
                name: format!(
                    "{}-{}",
                    self.names[port.node], self.names[self.ports[port.peer].node]
                ),
                number: port.number,
            })
            .collect();
        let ports = (0..self.ports.len())
            .map(|p| {
                let port = &self.ports[p];
                let mut c = port.counters.clone();
                c.node = self.names[port.node].clone();
                c.toward = self.names[self.ports[port.peer].node].clone();
                if let NodeKind::Host(h) = self.kinds[port.node] {
                    c.ip = Some(self.hosts[h].ip);
                }
                // A pause running past the end was counted whole.
                for (ns, until) in c.paused_ns.iter_mut().zip(port.paused_until) {
                    *ns -= until.saturating_sub(end).min(*ns);
                }
                c
            })
            .collect();
        Run {
            ports,
            rto_ns: self.cfg.nic.min_rto_ns,
            scenario: self.cfg.name.clone(),
            seed: self.cfg.seed,
            taps: self.taps,
            frames: self.frames,
            meta: self.meta,
            tap_drops: self.tap_drops,
            net_drops: self.net_drops,
            pauses: self.pauses,
            prop_ns: self.cfg.prop_ns,
            max_frame_len: self.max_frame_len,
            link_gbps: self.cfg.link_gbps,
            qps,
            fabric: self.stats,
            switch_log: self.switch_log,
            port_names,
            transport_log: None,
        }
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::TxDone(p) => {
                self.ports[p].busy = false;
                self.try_tx(p);
            }
            Ev::Wake(p) => {
                if self.ports[p].wake_at <= self.now {
                    self.ports[p].wake_at = u64::MAX;
                }
                self.try_tx(p);
            }
            Ev::Arrive(p, pkt) => self.arrive(p, *pkt),
            Ev::RxDone(h) => self.rx_done(h),
            Ev::Rto(q, epoch) => self.rto(q, epoch),
            Ev::PfcRefresh(p, prio, epoch) => {
                let port = &self.ports[p];
                if port.pfc_on[prio as usize] && port.pfc_epoch[prio as usize] == epoch {
                    self.send_pfc(p, prio, self.cfg.pfc_quanta);
                    let t = self.now + quanta_ns(self.cfg.pfc_quanta, self.ports[p].gbps) / 2;
                    self.push(t.max(self.now + 1), Ev::PfcRefresh(p, prio, epoch));
                }
            }
            Ev::Dcqcn(q) => self.dcqcn_timer(q),
            Ev::Rate(h, gbps) => {
                self.hosts[h].rx_gbps = Some(gbps);
                self.start_rx(h);
            }
            Ev::Slow(k, on) => {
                let sd = &self.cfg.slowdowns[k];
                let h = self.cfg.senders + sd.host;
                let (rate, next) = if on {
                    (Some(sd.gbps), self.now + sd.slow_ns)
                } else {
                    (
                        self.hosts[h].base_rx_gbps,
                        self.now + (sd.period_ns - sd.slow_ns),
                    )
                };
                self.hosts[h].rx_gbps = rate;
                // Once every connection is done, stop (or the run would never end).
                let busy = self
                    .qps
                    .iter()
                    .any(|q| q.has_data() || q.snd_una < q.snd_max);
                if busy || !self.hosts[h].rx.is_empty() {
                    self.push(next.max(self.now + 1), Ev::Slow(k, !on));
                }
                self.start_rx(h);
            }
            Ev::Mirror(copy) => {
                let (frame, meta, hops) = *copy;
                self.frames.push(frame);
                self.meta.push(meta);
                self.log_hops(&hops);
            }
        }
    }

    /// The network lost `pkt` at port `p` (`tap` of the drop is the port).
    fn net_drop(&mut self, p: usize, pkt: &Pkt) {
        if pkt.meta.index.is_some() || pkt.meta.resp_seq.is_some() {
            self.net_drops.push(TapDrop {
                ts_ns: self.now,
                tap: p,
                meta: pkt.meta,
            });
        }
    }

    /// The taps `taps` see `pkt` pass: each records it (or drops it), and
    /// may record it a second time.
    fn record(&mut self, taps: &[usize], pkt: &Pkt) {
        let now = self.now;
        for &t in taps {
            let recording = self.mirrors[t].record(!matches!(pkt.spec, FrameSpec::Pfc(_)));
            if recording == Recording::Dropped {
                self.stats.tap_dropped += 1;
                self.tap_drops.push(TapDrop {
                    ts_ns: now,
                    tap: t,
                    meta: pkt.meta,
                });
                continue;
            }
            self.frames.push(TapFrame {
                ts_ns: now,
                tap: t,
                frame: pkt.spec.clone(),
            });
            self.meta.push(pkt.meta);
            self.log_hops(&pkt.hops);
            let Some(copy) = recording.copy(now, t, &pkt.spec) else {
                continue;
            };
            self.stats.tap_duplicates += 1;
            let meta = FrameMeta {
                copy: true,
                ..pkt.meta
            };
            if copy.ts_ns == now {
                self.frames.push(copy);
                self.meta.push(meta);
                self.log_hops(&pkt.hops);
            } else {
                let at = copy.ts_ns;
                self.push(at, Ev::Mirror(Box::new((copy, meta, pkt.hops.clone()))));
            }
        }
    }

    /// The in-band telemetry of the tap frame just recorded, if it has any.
    fn log_hops(&mut self, hops: &[InbandHop]) {
        if !hops.is_empty() {
            let frame = self.frames.len() - 1;
            self.switch_log.inband.insert(frame, hops.to_vec());
        }
    }

    // ---- ports -------------------------------------------------------------

    fn try_tx(&mut self, p: usize) {
        let now = self.now;
        if self.ports[p].busy {
            return;
        }
        let mut blocked = u64::MAX;
        let mut pkt = self.ports[p].ctrl.pop_front();
        if pkt.is_none() {
            let port = &mut self.ports[p];
            for prio in (0..8).rev() {
                if port.queues[prio].is_empty() {
                    continue;
                }
                if port.paused_until[prio] > now {
                    blocked = blocked.min(port.paused_until[prio]);
                    continue;
                }
                let Some(k) = port.queues[prio].pop_front() else {
                    continue;
                };
                port.qbytes[prio] -= k.len as u64;
                pkt = Some(k);
                break;
            }
        }
        if pkt.is_none()
            && let NodeKind::Host(h) = self.kinds[self.ports[p].node]
        {
            match self.pull(h) {
                Ok(k) => pkt = Some(k),
                Err(t) => blocked = blocked.min(t),
            }
        }
        let Some(mut pkt) = pkt else {
            if blocked < self.ports[p].wake_at {
                self.ports[p].wake_at = blocked;
                self.push(blocked, Ev::Wake(p));
            }
            return;
        };
        let ingress = pkt.ingress.take();
        if let Some(i) = ingress {
            self.ingress_sub(i, pkt.prio, pkt.len);
        }
        let peer = self.ports[p].peer;
        pkt.spec.set_macs(self.ports[p].mac, self.ports[peer].mac);
        self.remark(p, &mut pkt);
        if let Some((arrived, depth)) = pkt.queued.take() {
            self.postcard(ingress, p, (arrived, depth), &mut pkt, false);
        }
        self.max_frame_len = self.max_frame_len.max(pkt.len);
        let port = &mut self.ports[p];
        port.busy = true;
        let ser = wire_ns(pkt.len, port.gbps);
        let prop = port.prop_ns;
        let taps = std::mem::take(&mut self.ports[p].taps_tx);
        self.record(&taps, &pkt);
        self.ports[p].taps_tx = taps;
        // A routed frame may take a longer path to the far end (PFC is
        // link-local and never does).
        let mut at = now + ser + prop;
        let (reorder, delay) = (self.ports[peer].reorder, self.ports[peer].reorder_delay_ns);
        if !matches!(pkt.spec, FrameSpec::Pfc(_)) && self.rng.chance(reorder) {
            at += delay;
            pkt.meta.delayed = true;
            self.stats.reordered += 1;
            if let Some(q) = pkt.meta.flow {
                self.qps[q].stats.reordered += 1;
            }
        }
        self.push(now + ser, Ev::TxDone(p));
        self.push(at, Ev::Arrive(peer, Box::new(pkt)));
    }

    /// The DSCP rewrite of port `p`, if one applies to `pkt`.
    fn remark(&mut self, p: usize, pkt: &mut Pkt) {
        let dscp = match &mut pkt.spec {
            FrameSpec::Roce(r) => &mut r.dscp,
            FrameSpec::Cnp(c) => &mut c.dscp,
            FrameSpec::Pfc(_) | FrameSpec::Transport(_) => return,
        };
        let Some(&[from, to]) = self.ports[p].remark_dscp.iter().find(|r| r[0] == *dscp) else {
            return;
        };
        *dscp = to;
        if let Some(seen) = pkt.meta.flow.and_then(|q| self.dscp_rewrites.get_mut(q))
            && !seen.contains(&(p, from, to))
        {
            seen.push((p, from, to));
        }
    }

    fn enqueue(&mut self, p: usize, pkt: Pkt) {
        let port = &mut self.ports[p];
        port.qbytes[pkt.prio as usize] += pkt.len as u64;
        port.queues[pkt.prio as usize].push_back(pkt);
        self.try_tx(p);
    }

    fn arrive(&mut self, p: usize, mut pkt: Pkt) {
        let (loss, corrupt) = (self.ports[p].loss, self.ports[p].corrupt);
        let data = !matches!(pkt.spec, FrameSpec::Pfc(_));
        if data {
            self.ports[p].counters.sent[pkt.prio as usize & 7] += 1;
        }
        let max_frame = self.ports[p].max_frame;
        if max_frame > 0 && pkt.len > max_frame {
            self.net_drop(p, &pkt);
            self.stats.link_drops += 1;
            if let Some(q) = pkt.meta.flow {
                self.qps[q].stats.link_drops += 1;
                self.qps[q].stats.oversize_drops += 1;
            }
            return;
        }
        if self.rng.chance(loss) {
            self.net_drop(p, &pkt);
            self.stats.link_drops += 1;
            if let Some(q) = pkt.meta.flow {
                self.qps[q].stats.link_drops += 1;
            }
            return;
        }
        if let FrameSpec::Roce(r) = &mut pkt.spec
            && self.rng.chance(corrupt)
        {
            r.corrupt = true;
            self.stats.corrupted += 1;
            if let Some(q) = pkt.meta.flow {
                self.qps[q].stats.corrupted += 1;
            }
        }
        let taps = std::mem::take(&mut self.ports[p].taps_rx);
        self.record(&taps, &pkt);
        self.ports[p].taps_rx = taps;
        let c = &mut self.ports[p].counters;
        match &pkt.spec {
            FrameSpec::Roce(r) if r.corrupt => c.corrupted += 1,
            _ if data => c.received[pkt.prio as usize & 7] += 1,
            _ => {}
        }
        if let FrameSpec::Pfc(pfc) = &pkt.spec {
            let (gbps, now) = (self.ports[p].gbps, self.now);
            for prio in 0..8 {
                if pfc.enable_vector & (1 << prio) != 0 {
                    let q = pfc.quanta[prio];
                    let port = &mut self.ports[p];
                    let (old, new) = (port.paused_until[prio], now + quanta_ns(q, gbps));
                    port.paused_until[prio] = new;
                    if q > 0 {
                        port.paused_by[prio] = pkt.meta.pause;
                    }
                    // Counted whole when set, less what a refresh or XON cuts off.
                    let c = &mut port.counters;
                    c.pfc_received[prio] += 1;
                    c.paused_ns[prio] =
                        (c.paused_ns[prio] + (new - now)).saturating_sub(old.saturating_sub(now));
                }
            }
            self.try_tx(p);
            return;
        }
        match self.kinds[self.ports[p].node] {
            NodeKind::Host(h) => self.host_rx(h, p, pkt),
            NodeKind::Switch { .. } => self.forward(p, pkt),
        }
    }

    fn forward(&mut self, p_in: usize, mut pkt: Pkt) {
        let (src, dst, sport, qp) = match &pkt.spec {
            FrameSpec::Roce(r) => (r.src_ip, r.dst_ip, r.udp_sport, r.dest_qp),
            FrameSpec::Cnp(c) => (c.src_ip, c.dst_ip, c.udp_sport, c.dest_qp),
            FrameSpec::Pfc(_) | FrameSpec::Transport(_) => return,
        };
        let NodeKind::Switch { routes } = &self.kinds[self.ports[p_in].node] else {
            return;
        };
        let Some(members) = routes.get(&dst) else {
            return;
        };
        let e = members[ecmp_pick(src, dst, sport, qp, members.len())];
        if let (FrameSpec::Roce(r), Some(q)) = (&pkt.spec, pkt.meta.flow)
            && ib::is_request(r.opcode)
            && let Some(via) = self.requests_via.get_mut(q)
            && !via.contains(&e)
        {
            via.push(e);
        }
        self.trim(e, &mut pkt);
        let prio = pkt.prio as usize;
        let depth = self.ports[e].qbytes[prio];
        let sw = &self.cfg.switch;
        if depth + pkt.len as u64 > sw.queue_limit {
            self.net_drop(e, &pkt);
            self.postcard(Some(p_in), e, (self.now, depth), &mut pkt, true);
            self.stats.switch_drops += 1;
            if let Some(q) = pkt.meta.flow {
                self.qps[q].stats.switch_drops += 1;
            }
            return;
        }
        if sw.ecn_enabled
            && let FrameSpec::Roce(r) = &mut pkt.spec
            && (r.ecn == ib_ecn::ECT0 || r.ecn == ib_ecn::ECT1)
        {
            let pr = ecn_mark_probability(depth, sw.ecn_min, sw.ecn_max, sw.ecn_pmax);
            if self.rng.chance(pr) {
                r.ecn = ib_ecn::CE;
            }
        }
        pkt.ingress = Some(p_in);
        pkt.queued = Some((self.now, depth));
        self.switch_log
            .joined(e, pkt.prio, pkt.meta.flow, depth + pkt.len as u64, self.now);
        self.ingress_add(p_in, pkt.prio, pkt.len, Some(e));
        self.enqueue(e, pkt);
    }

    /// A RoCE request that would take egress `e`'s queue past
    /// `switch.trim_bytes` is trimmed (docs/synth-truth.md): its payload
    /// cut, its DSCP re-marked, and it goes on `cnp_prio`'s queue, served
    /// before the data's, as UET's switches trim.
    fn trim(&mut self, e: usize, pkt: &mut Pkt) {
        let sw = &self.cfg.switch;
        let depth = self.ports[e].qbytes[pkt.prio as usize];
        let FrameSpec::Roce(r) = &mut pkt.spec else {
            return;
        };
        if sw.trim_bytes == 0
            || r.trimmed
            || r.payload_len == 0
            || !ib::is_request(r.opcode)
            || !trims(depth, pkt.len, sw.trim_bytes)
        {
            return;
        }
        r.trimmed = true;
        r.payload_len = 0;
        r.dscp = sw.trim_dscp;
        pkt.len = pkt.spec.frame_len();
        pkt.prio = self.cfg.cnp_prio;
        self.stats.trimmed += 1;
        if let Some(q) = pkt.meta.flow {
            self.qps[q].stats.trimmed += 1;
        }
    }

    /// With telemetry on, the report of the switch owning `egress` on the
    /// RoCE request `pkt` (`docs/synth-truth.md`, "telemetry"): it leaves
    /// now, or was dropped (`dropped`); `queued` is when it arrived and the
    /// bytes ahead of it in the egress queue.
    fn postcard(
        &mut self,
        ingress: Option<usize>,
        egress: usize,
        queued: (u64, u64),
        pkt: &mut Pkt,
        dropped: bool,
    ) {
        let FrameSpec::Roce(r) = &pkt.spec else {
            return;
        };
        if !ib::is_request(r.opcode) {
            return;
        }
        let (arrived, depth) = queued;
        let node = self.ports[egress].node;
        if self.switch_log.in_band().is_some() {
            // In the packet instead: the first switch inserts the header,
            // each pushes its hop, the last (toward a host) strips them
            // before the host's link. A dropped packet's hops go with it.
            if dropped {
                return;
            }
            let hop = InbandHop {
                node,
                switch_id: switch_id(node),
                ingress_port: ingress.map_or(0, |i| self.ports[i].number),
                egress_port: self.ports[egress].number,
                egress,
                queue: pkt.prio,
                occupancy: u32::try_from(depth).unwrap_or(u32::MAX),
                hop_latency_ns: u32::try_from(self.now - arrived).unwrap_or(u32::MAX),
                arrival_ns: arrived,
                departure_ns: self.now,
                ttl: r.ttl,
                gbps: self.ports[egress].gbps,
            };
            pkt.hops.insert(0, hop);
            let peer = self.ports[egress].peer;
            if matches!(self.kinds[self.ports[peer].node], NodeKind::Host(_)) {
                pkt.hops.clear();
            }
            return;
        }
        let Some(congested) = self.switch_log.reports(node, depth, dropped) else {
            return;
        };
        self.switch_log.send(Postcard {
            ts_ns: self.now,
            node,
            switch_id: switch_id(node),
            sequence: 0,
            ingress_port: ingress.map_or(0, |i| self.ports[i].number),
            egress_port: self.ports[egress].number,
            egress,
            queue: pkt.prio,
            occupancy: u32::try_from(depth).unwrap_or(u32::MAX),
            hop_latency_ns: u32::try_from(self.now - arrived).unwrap_or(u32::MAX),
            arrival_ns: arrived,
            dropped,
            congested,
            drop_reason: dropped.then_some(DROP_REASON_TRAFFIC_MANAGER),
            flow: pkt.meta.flow,
            packet: pkt.spec.clone(),
        });
    }

    // ---- PFC ---------------------------------------------------------------

    /// `len` more bytes received on port `p` are held (`to`: the egress
    /// port they wait at; `None`: the host's receive queue).
    fn ingress_add(&mut self, p: usize, prio: u8, len: u32, to: Option<usize>) {
        let lossless = self
            .cfg
            .pfc_priorities
            .as_ref()
            .is_none_or(|l| l.contains(&prio));
        let port = &mut self.ports[p];
        let i = prio as usize;
        port.in_bytes[i] += len as u64;
        if lossless && port.pfc_enabled && !port.pfc_on[i] && port.in_bytes[i] > port.xoff {
            let (held_at, cause) = self.pause_cause(p, prio, len, to);
            let port = &mut self.ports[p];
            port.pause_id[i] = Some(self.pauses.len());
            self.pauses.push(PauseEpisode {
                port: p,
                mac: port.mac,
                priority: prio,
                onset_ns: self.now,
                end_ns: None,
                held_bytes: port.in_bytes[i],
                held_at,
                cause,
            });
            port.pfc_on[i] = true;
            port.pfc_epoch[i] += 1;
            let epoch = port.pfc_epoch[i];
            let t = self.now + quanta_ns(self.cfg.pfc_quanta, port.gbps) / 2;
            self.send_pfc(p, prio, self.cfg.pfc_quanta);
            self.push(t.max(self.now + 1), Ev::PfcRefresh(p, prio, epoch));
        }
    }

    fn ingress_sub(&mut self, p: usize, prio: u8, len: u32) {
        let port = &mut self.ports[p];
        let i = prio as usize;
        port.in_bytes[i] -= len as u64;
        if port.pfc_on[i] && port.in_bytes[i] <= port.xon {
            port.pfc_on[i] = false;
            port.pfc_epoch[i] += 1;
            if let Some(e) = port.pause_id[i].and_then(|e| self.pauses.get_mut(e)) {
                e.end_ns = Some(self.now);
            }
            self.send_pfc(p, prio, 0);
        }
    }

    /// Why port `p` pauses `prio` now (`len` bytes bound for `to` just
    /// crossed its threshold): the egress port of its node where most of
    /// the bytes it received wait (ties: `to`), and the pause episode that
    /// held that port, if one did. A NIC's bytes wait in its receive queue,
    /// which no pause holds.
    fn pause_cause(
        &self,
        p: usize,
        prio: u8,
        len: u32,
        to: Option<usize>,
    ) -> (Option<usize>, Option<usize>) {
        let Some(to) = to else {
            return (None, None);
        };
        let node = self.ports[p].node;
        let i = prio as usize;
        let held = |e: usize| -> u64 {
            let queued: u64 = self.ports[e].queues[i]
                .iter()
                .filter(|k| k.ingress == Some(p))
                .map(|k| k.len as u64)
                .sum();
            queued + if e == to { len as u64 } else { 0 }
        };
        let at = (0..self.ports.len())
            .filter(|&e| self.ports[e].node == node)
            .map(|e| (held(e), e == to, std::cmp::Reverse(e)))
            .max()
            .map_or(to, |(_, _, std::cmp::Reverse(e))| e);
        let port = &self.ports[at];
        let cause = (port.paused_until[i] > self.now)
            .then_some(port.paused_by[i])
            .flatten();
        (Some(at), cause)
    }

    fn send_pfc(&mut self, p: usize, prio: u8, q: u16) {
        let mut quanta = [0u16; 8];
        quanta[prio as usize] = q;
        let spec = FrameSpec::Pfc(PfcSpec {
            src_mac: self.ports[p].mac,
            dst_mac: MAC_CONTROL_DST,
            enable_vector: 1 << prio,
            quanta,
        });
        let len = spec.frame_len();
        let meta = FrameMeta {
            pause: self.ports[p].pause_id[prio as usize],
            ..FrameMeta::default()
        };
        self.stats.pfc_frames_sent += 1;
        self.ports[p].ctrl.push_back(Pkt {
            spec,
            prio: 7,
            len,
            ingress: None,
            queued: None,
            meta,
            hops: Vec::new(),
        });
        self.try_tx(p);
    }

    // ---- hosts: requester --------------------------------------------------

    fn vlan(&self, prio: u8) -> Option<Vlan> {
        self.cfg.vlan.map(|vid| Vlan { vid, pcp: prio })
    }

    /// Next data packet of host `h`'s QPs (round robin over the eligible
    /// ones), or the time to look again.
    fn pull(&mut self, h: usize) -> Result<Pkt, u64> {
        let now = self.now;
        let hp = self.hosts[h].port;
        let n = self.hosts[h].flows.len();
        let mut wake = u64::MAX;
        for k in 0..n {
            let qi = self.hosts[h].flows[(self.hosts[h].rr + k) % n];
            let paused_until = self.ports[hp].paused_until[self.data_prio(qi) as usize];
            if paused_until > now {
                wake = wake.min(paused_until);
                continue;
            }
            let q = &self.qps[qi];
            if !q.has_data() || q.snd_nxt - q.snd_una >= self.cfg.nic.max_outstanding as u64 {
                continue;
            }
            if q.next_tx_ns > now {
                wake = wake.min(q.next_tx_ns);
                continue;
            }
            self.hosts[h].rr = (self.hosts[h].rr + k + 1) % n;
            return Ok(self.make_data(qi));
        }
        Err(wake)
    }

    /// Connection `qi`'s priority and DSCP for data and ACKs.
    fn data_prio(&self, qi: usize) -> u8 {
        self.qps[qi].cfg.prio.unwrap_or(self.cfg.data_prio)
    }

    fn data_dscp(&self, qi: usize) -> u8 {
        self.qps[qi].cfg.dscp.unwrap_or(self.cfg.data_dscp)
    }

    fn make_data(&mut self, qi: usize) -> Pkt {
        let now = self.now;
        let (mtu, prio, dscp) = (self.qps[qi].mtu, self.data_prio(qi), self.data_dscp(qi));
        let ack_req_every = self.cfg.nic.ack_req_every.max(1) as u64;
        let ect = self.cfg.nic.ect;
        let vlan = self.vlan(prio);
        let src_ip = self.hosts[self.qps[qi].src_host].ip;
        let dst_ip = self.hosts[self.cfg.senders + self.qps[qi].dst_host].ip;
        let q = &mut self.qps[qi];
        let idx = q.snd_nxt;
        let (opcode, payload) = q.write_packet(idx, mtu);
        let k = idx % q.ppm;
        let msg = idx / q.ppm;
        let retrans = idx < q.snd_max;
        let rewind = if retrans {
            q.pending_rewind.take()
        } else {
            None
        };
        if let (Some(Trigger::Nak), Some(nak)) = (rewind, q.pending_nak.take()) {
            q.nak_resends.push((nak, q.stats.sent_packets));
        }
        if !retrans {
            q.pending_rewind = None;
            q.pending_nak = None;
        }
        let spurious = retrans && idx < q.resp_acked;
        let send_seq = q.stats.sent_packets;
        if retrans && (idx < q.epsn || q.ooo.contains_key(&idx)) {
            q.stats.spurious_received += 1;
        }
        q.stats.sent_packets += 1;
        if retrans {
            q.stats.retrans_packets += 1;
        }
        if spurious {
            q.stats.spurious_retrans += 1;
        }
        match rewind {
            Some(Trigger::Nak) => q.stats.rewinds_nak += 1,
            Some(Trigger::Rnr) => q.stats.rewinds_rnr += 1,
            Some(Trigger::Timeout) => {
                q.stats.rewinds_timeout += 1;
                if let Some(f) = q.timer_fires.last_mut() {
                    f.resent_ns = Some(now);
                }
            }
            None => {}
        }
        if rewind.is_some() {
            // Rewinds to one packet with no ACK progress between.
            let run = match q.rewind_run {
                Some((i, n)) if i == idx => (idx, n + 1),
                _ => (idx, 1),
            };
            q.rewind_run = Some(run);
            if q.max_rewind_run.is_none_or(|(_, n)| run.1 > n) {
                q.max_rewind_run = Some(run);
            }
        }
        q.rewinds.extend(rewind);
        let rewind_no = if retrans {
            (q.rewinds.len() as u64).checked_sub(1)
        } else {
            None
        };
        let spec = FrameSpec::Roce(RoceSpec {
            src_mac: [0; 6],
            dst_mac: [0; 6],
            vlan,
            src_ip,
            dst_ip,
            dscp,
            ecn: if ect { ib_ecn::ECT0 } else { 0 },
            ttl: IP_TTL,
            udp_sport: q.sport,
            opcode,
            fecn: false,
            becn: false,
            dest_qp: q.responder_qpn,
            ack_req: k == q.ppm - 1 || (idx + 1).is_multiple_of(ack_req_every),
            psn: q.psn(idx),
            reth: (k == 0).then(|| Reth {
                va: 0x7F00_0000_0000 + msg * q.cfg.msg_bytes as u64,
                rkey: 0x1000 + qi as u32,
                len: q.cfg.msg_bytes,
            }),
            aeth: None,
            payload_len: payload,
            corrupt: false,
            trimmed: false,
        });
        q.snd_nxt += 1;
        q.snd_max = q.snd_max.max(q.snd_nxt);
        let len = spec.frame_len();
        q.next_tx_ns = now + wire_ns(len, q.send_gbps());
        let arm = !q.rto_armed;
        if arm {
            self.arm_rto(qi);
        }
        Pkt {
            spec,
            prio,
            len,
            ingress: None,
            queued: None,
            meta: FrameMeta {
                flow: Some(qi),
                retrans,
                rewind,
                spurious,
                index: Some(idx),
                send_seq,
                rewind_no,
                ..FrameMeta::default()
            },
            hops: Vec::new(),
        }
    }

    fn arm_rto(&mut self, qi: usize) {
        let q = &mut self.qps[qi];
        q.rto_armed = true;
        q.rto_epoch += 1;
        q.rto_armed_ns = self.now;
        let e = q.rto_epoch;
        let t = self.now + self.cfg.nic.min_rto_ns;
        self.push(t, Ev::Rto(qi, e));
    }

    fn disarm_rto(&mut self, qi: usize) {
        let q = &mut self.qps[qi];
        q.rto_armed = false;
        q.rto_epoch += 1;
    }

    fn rto(&mut self, qi: usize, epoch: u64) {
        let q = &mut self.qps[qi];
        if !q.rto_armed || q.rto_epoch != epoch {
            return;
        }
        if q.snd_una < q.snd_max {
            q.snd_nxt = q.snd_una;
            q.pending_rewind = Some(Trigger::Timeout);
            q.stats.timeouts += 1;
            let armed_ns = q.rto_armed_ns;
            q.timer_fires.push(super::qp::TimerFire {
                armed_ns,
                fired_ns: self.now,
                resent_ns: None,
            });
            self.arm_rto(qi);
            let hp = self.hosts[self.qps[qi].src_host].port;
            self.try_tx(hp);
        } else {
            q.rto_armed = false;
        }
    }

    /// A response to connection `qi`'s requester; `resp_seq` its place in
    /// the responder's order.
    fn on_response(&mut self, qi: usize, r: &RoceSpec, resp_seq: Option<u64>) {
        let Some(a) = r.aeth else { return };
        let q = &mut self.qps[qi];
        let idx = q.index_near(r.psn, q.snd_una);
        let before = q.snd_una;
        if aeth::is_ack(a.syndrome) {
            if idx >= q.snd_una as i64 && idx < q.snd_max as i64 {
                q.snd_una = idx as u64 + 1;
                q.snd_nxt = q.snd_nxt.max(q.snd_una);
            }
        } else if aeth::is_nak(a.syndrome) || aeth::is_rnr_nak(a.syndrome) {
            q.stats.naks_received += 1;
            if idx >= q.snd_una as i64 && idx <= q.snd_max as i64 {
                q.snd_una = idx as u64;
                q.snd_nxt = idx as u64;
                q.pending_rewind = Some(if aeth::is_nak(a.syndrome) {
                    Trigger::Nak
                } else {
                    Trigger::Rnr
                });
                q.pending_nak = resp_seq.filter(|_| aeth::is_nak(a.syndrome));
            }
        }
        let q = &mut self.qps[qi];
        q.stats.messages_completed = q.snd_una / q.ppm;
        if q.done() && q.stats.done_ns.is_none() {
            q.stats.done_ns = Some(self.now);
        }
        if q.snd_una > before {
            q.rewind_run = None;
        }
        if q.snd_una > before || q.pending_rewind == Some(Trigger::Nak) {
            if q.snd_una < q.snd_max {
                self.arm_rto(qi);
            } else {
                self.disarm_rto(qi);
            }
        }
        let hp = self.hosts[self.qps[qi].src_host].port;
        self.try_tx(hp);
    }

    fn on_cnp(&mut self, qi: usize) {
        let d = self.cfg.nic.dcqcn.clone();
        let q = &mut self.qps[qi];
        q.stats.cnps_received += 1;
        let before = q.send_gbps();
        if !q.cfg.dcqcn.unwrap_or(d.enabled) {
            q.rate_log.push(RateStep {
                at_ns: self.now,
                cause: "cnp",
                before_gbps: before,
                after_gbps: before,
            });
            return;
        }
        q.target_gbps = q.rate_gbps;
        q.rate_gbps = (q.rate_gbps * (1.0 - q.alpha / 2.0)).max(d.min_gbps);
        q.alpha = (1.0 - d.g) * q.alpha + d.g;
        q.stage = 0;
        q.cnp_in_period = true;
        q.stats.min_rate_gbps = q.stats.min_rate_gbps.min(q.rate_gbps);
        q.rate_log.push(RateStep {
            at_ns: self.now,
            cause: "cnp",
            before_gbps: before,
            after_gbps: q.send_gbps(),
        });
        if !q.dcqcn_timer {
            q.dcqcn_timer = true;
            self.push(self.now + d.timer_ns, Ev::Dcqcn(qi));
        }
    }

    fn dcqcn_timer(&mut self, qi: usize) {
        let d = &self.cfg.nic.dcqcn;
        let line = self.cfg.link_gbps;
        let q = &mut self.qps[qi];
        let before = q.send_gbps();
        if !q.cnp_in_period {
            q.alpha *= 1.0 - d.g;
        }
        q.cnp_in_period = false;
        q.stage += 1;
        if q.stage > d.fast_stages {
            q.target_gbps = (q.target_gbps + d.rai_gbps).min(line);
        }
        q.rate_gbps = ((q.rate_gbps + q.target_gbps) / 2.0).min(line);
        let full = q.rate_gbps >= line * 0.999;
        if full {
            q.rate_gbps = line;
        }
        if q.send_gbps() != before {
            q.rate_log.push(RateStep {
                at_ns: self.now,
                cause: "timer",
                before_gbps: before,
                after_gbps: q.send_gbps(),
            });
        }
        if full {
            q.dcqcn_timer = false;
        } else {
            let t = self.now + d.timer_ns;
            self.push(t, Ev::Dcqcn(qi));
        }
    }

    // ---- hosts: responder --------------------------------------------------

    fn host_rx(&mut self, h: usize, p: usize, pkt: Pkt) {
        let Some(qi) = pkt.meta.flow else { return };
        match &pkt.spec {
            FrameSpec::Roce(r) if ib::is_request(r.opcode) => {
                if r.ecn == ib_ecn::CE {
                    self.qps[qi].stats.ce_received += 1;
                    let due = self.qps[qi]
                        .last_cnp_ns
                        .is_none_or(|t| self.now >= t + self.cfg.nic.cnp_interval_ns);
                    if self.cfg.nic.cnp_enabled && due {
                        self.qps[qi].last_cnp_ns = Some(self.now);
                        self.send_cnp(h, qi);
                    }
                }
                // Straight through at line rate, unless packets are still
                // queued from a slower spell (they go first).
                if self.hosts[h].rx_gbps.is_none() && self.hosts[h].rx.is_empty() {
                    self.respond(h, qi, &pkt);
                } else {
                    self.ingress_add(p, pkt.prio, pkt.len, None);
                    self.hosts[h].rx.push_back(pkt);
                    self.start_rx(h);
                }
            }
            FrameSpec::Roce(r) => {
                if r.corrupt {
                    // The requester's NIC drops a response whose ICRC fails.
                    self.qps[qi].stats.corrupt_responses_discarded += 1;
                    return;
                }
                let r = r.clone();
                self.on_response(qi, &r, pkt.meta.resp_seq);
            }
            FrameSpec::Cnp(_) => self.on_cnp(qi),
            FrameSpec::Pfc(_) | FrameSpec::Transport(_) => {}
        }
    }

    fn start_rx(&mut self, h: usize) {
        let host = &mut self.hosts[h];
        if host.rx_busy {
            return;
        }
        let Some(front) = host.rx.front() else { return };
        // A backlog left by a slow spell drains at line rate.
        let gbps = host.rx_gbps.unwrap_or(self.cfg.link_gbps);
        if gbps <= 0.0 {
            return;
        }
        host.rx_busy = true;
        let t = self.now + ((front.len as f64 * 8.0) / gbps).ceil() as u64;
        self.push(t, Ev::RxDone(h));
    }

    fn rx_done(&mut self, h: usize) {
        self.hosts[h].rx_busy = false;
        let Some(pkt) = self.hosts[h].rx.pop_front() else {
            return;
        };
        let p = self.hosts[h].port;
        self.ingress_sub(p, pkt.prio, pkt.len);
        if let Some(qi) = pkt.meta.flow {
            self.respond(h, qi, &pkt);
        }
        self.start_rx(h);
    }

    /// The responder's transport check of one request packet.
    fn respond(&mut self, h: usize, qi: usize, pkt: &Pkt) {
        let Some(r) = pkt.spec.as_roce() else { return };
        let ack_every = self.cfg.nic.ack_every.max(1);
        let ooo_window = self
            .cfg
            .nic
            .ooo_tolerant
            .then_some(self.cfg.nic.max_outstanding as i64);
        let q = &mut self.qps[qi];
        if r.corrupt {
            q.stats.corrupt_discarded += 1;
            return;
        }
        let idx = q.index_near(r.psn, q.epsn);
        if r.trimmed && idx == q.epsn as i64 {
            // A NIC that knows trimming NAKs the expected packet trimmed
            // at once (again for a resend trimmed again), then drops it.
            q.stats.trimmed_received += 1;
            q.nak_sent = true;
            let resp_seq = q.stats.acks_sent + q.stats.naks_sent;
            q.trim_naks.push((q.epsn, resp_seq));
            self.send_aeth(h, qi, aeth::KIND_NAK | aeth::NAK_PSN_SEQUENCE_ERROR);
            return;
        }
        if r.trimmed {
            // Out of sequence or a duplicate: as if it never came, its
            // loss shows as the next packet's gap.
            q.stats.trimmed_received += 1;
            return;
        }
        let last = matches!(r.opcode & 0x1F, op::WRITE_LAST | op::WRITE_ONLY);
        let reply = if idx == q.epsn as i64 {
            q.epsn += 1;
            q.nak_sent = false;
            q.in_dup_run = false;
            q.stats.delivered_packets += 1;
            q.stats.delivered_bytes += r.payload_len as u64;
            if last {
                q.msn += 1;
            }
            q.since_ack += 1;
            let mut ack_req = r.ack_req;
            // Packets placed ahead of it are in order now, and the ACK covers them.
            while let Some(p) = q.ooo.remove(&q.epsn) {
                q.epsn += 1;
                q.stats.delivered_packets += 1;
                q.stats.delivered_bytes += p.payload as u64;
                q.msn += p.last as u64;
                q.since_ack += 1;
                ack_req |= p.ack_req;
            }
            if ack_req || q.since_ack >= ack_every {
                q.since_ack = 0;
                q.resp_acked = q.epsn;
                Some(0x1F)
            } else {
                None
            }
        } else if idx > q.epsn as i64 && ooo_window.is_some_and(|w| idx - (q.epsn as i64) < w) {
            match q.ooo.entry(idx as u64) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(Placed {
                        payload: r.payload_len,
                        last,
                        ack_req: r.ack_req,
                    });
                    q.stats.ooo_received += 1;
                }
                std::collections::btree_map::Entry::Occupied(_) => q.stats.duplicate_packets += 1,
            }
            None
        } else if idx > q.epsn as i64 {
            if q.nak_sent {
                None
            } else {
                q.nak_sent = true;
                q.nak_named.push(q.epsn);
                // send_aeth numbers it next.
                let resp_seq = q.stats.acks_sent + q.stats.naks_sent;
                q.nak_causes.push((pkt.meta.send_seq, resp_seq));
                Some(aeth::KIND_NAK | aeth::NAK_PSN_SEQUENCE_ERROR)
            }
        } else {
            q.stats.duplicate_packets += 1;
            q.since_ack += 1;
            if !q.in_dup_run || r.ack_req || q.since_ack >= ack_every {
                q.in_dup_run = true;
                q.since_ack = 0;
                q.resp_acked = q.epsn;
                Some(0x1F)
            } else {
                None
            }
        };
        if let Some(syn) = reply {
            self.send_aeth(h, qi, syn);
        }
    }

    fn send_aeth(&mut self, h: usize, qi: usize, syndrome: u8) {
        let (prio, dscp) = (self.data_prio(qi), self.data_dscp(qi));
        let vlan = self.vlan(prio);
        let q = &mut self.qps[qi];
        // ACK: the last in-order PSN; NAK: the expected PSN.
        let psn = if aeth::is_nak(syndrome) {
            q.psn(q.epsn)
        } else {
            q.psn(q.epsn.wrapping_sub(1))
        };
        let resp_seq = q.stats.acks_sent + q.stats.naks_sent;
        if aeth::is_nak(syndrome) {
            q.stats.naks_sent += 1;
        } else {
            q.stats.acks_sent += 1;
        }
        let spec = FrameSpec::Roce(RoceSpec {
            src_mac: [0; 6],
            dst_mac: [0; 6],
            vlan,
            src_ip: self.hosts[h].ip,
            dst_ip: self.hosts[q.src_host].ip,
            dscp,
            ecn: 0,
            ttl: IP_TTL,
            udp_sport: q.sport,
            opcode: op::ACKNOWLEDGE,
            fecn: false,
            becn: false,
            dest_qp: q.requester_qpn,
            ack_req: false,
            psn,
            reth: None,
            aeth: Some(Aeth {
                syndrome,
                msn: (q.msn & ib::PSN_MASK as u64) as u32,
            }),
            payload_len: 0,
            corrupt: false,
            trimmed: false,
        });
        let len = spec.frame_len();
        let meta = FrameMeta {
            flow: Some(qi),
            acked: aeth::is_ack(syndrome).then_some(q.epsn),
            resp_seq: Some(resp_seq),
            ..FrameMeta::default()
        };
        let hp = self.hosts[h].port;
        self.enqueue(
            hp,
            Pkt {
                spec,
                prio,
                len,
                ingress: None,
                queued: None,
                meta,
                hops: Vec::new(),
            },
        );
    }

    fn send_cnp(&mut self, h: usize, qi: usize) {
        let prio = self.cfg.cnp_prio;
        let q = &mut self.qps[qi];
        q.stats.cnps_sent += 1;
        let spec = FrameSpec::Cnp(CnpSpec {
            src_mac: [0; 6],
            dst_mac: [0; 6],
            vlan: self.cfg.vlan.map(|vid| Vlan { vid, pcp: prio }),
            src_ip: self.hosts[h].ip,
            dst_ip: self.hosts[q.src_host].ip,
            dscp: self.cfg.cnp_dscp,
            ecn: 0,
            ttl: IP_TTL,
            udp_sport: q.sport,
            dest_qp: q.requester_qpn,
            fecn: false,
            becn: true,
        });
        let len = spec.frame_len();
        let meta = FrameMeta {
            flow: Some(qi),
            ..FrameMeta::default()
        };
        let hp = self.hosts[h].port;
        self.enqueue(
            hp,
            Pkt {
                spec,
                prio,
                len,
                ingress: None,
                queued: None,
                meta,
                hops: Vec::new(),
            },
        );
    }
}

/// ECN codepoints.
mod ib_ecn {
    pub use crate::proto::ip::{ECN_CE as CE, ECN_ECT0 as ECT0, ECN_ECT1 as ECT1};
}
