//! The event loop: hosts, switches, ports with per-priority egress queues,
//! PFC per ingress port and priority, WRED/ECN, links with serialisation and
//! propagation delay, and the mirror taps.
//!
//! Here the fabric's state and the loop that dispatches its events; one
//! file for each part of what the events do: `build` (the fabric of a
//! [`Config`]), `ports` (transmit, queue, arrive, forward), `pfc`
//! (pausing), `requester` and `responder` (the hosts' RC ends), and
//! `run` (what a run hands back).

use super::mirror::{Mirror, Recording};
use super::postcards::{InbandHop, PortName, SwitchLog};
use super::qp::Qp;
use super::scenario::Config;
use super::spec::{FrameMeta, FrameSpec, TapDrop, TapFrame};
use super::switch::Rng;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::net::Ipv4Addr;

mod build;
mod pfc;
mod ports;
mod requester;
mod responder;
mod run;

pub use run::{FabricStats, PauseEpisode, PortCounters, QpSummary, Run, TapInfo, TransportLog};

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
}

/// ECN codepoints.
mod ib_ecn {
    pub use crate::proto::ip::{ECN_CE as CE, ECN_ECT0 as ECT0, ECN_ECT1 as ECT1};
}
