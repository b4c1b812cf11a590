//! The UET fabric's event loop: the leaf-spine of the RoCE model (its
//! addressing, links, ECMP hash and taps) with UET endpoints and switches
//! that trim instead of pausing. No PFC: a queue past `trim_bytes` cuts a
//! request to its headers and sends those ahead on a priority queue; past
//! `queue_limit` it drops.

use super::frame::{Pdu, UetSpec};
use super::pdc::{Reason, Rx, Tx};
use super::{NetEvent, UetCfg, UetLog};
use crate::synth::model::fabric::{FabricStats, Run, TapInfo, wire_ns};
use crate::synth::model::hosts::{receiver_ip, sender_ip};
use crate::synth::model::mirror::{Mirror, Recording};
use crate::synth::model::postcards::SwitchLog;
use crate::synth::model::scenario::Config;
use crate::synth::model::spec::{FrameMeta, TapDrop, TapFrame};
use crate::synth::model::switch::{Rng, ecmp_pick, trims};
use rocescope_common::proto::ip::{ECN_CE, ECN_ECT0, ECN_ECT1};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::net::Ipv4Addr;

mod build;

/// A packet in the network, with what the model knows of it.
#[derive(Clone, Debug)]
pub(super) struct Pkt {
    pub spec: UetSpec,
    pub len: u32,
    pub pdc: usize,
    /// Requests: the send (index into `UetLog::sends`).
    pub send: Option<usize>,
}

struct Port {
    node: usize,
    peer: usize,
    mac: [u8; 6],
    /// Trimmed headers go first.
    hi: VecDeque<Pkt>,
    queue: VecDeque<Pkt>,
    qbytes: u64,
    hibytes: u64,
    busy: bool,
    // Impairments of the link into this port.
    loss: f64,
    slow: f64,
    slow_ns: u64,
    taps_tx: Vec<usize>,
    taps_rx: Vec<usize>,
}

enum Kind {
    Host(usize),
    Switch(BTreeMap<Ipv4Addr, Vec<usize>>),
}

enum Ev {
    TxDone(usize),
    Arrive(usize, Box<Pkt>),
    /// A host looks for something to send.
    Pull(usize),
    /// The retransmit timer of a PDC's packet `idx`, armed at its `n`th send.
    Rto(usize, u64, u32),
    /// A mirror's delayed second copy of a frame is recorded (with the
    /// send it is, for `UetLog::frame_sends`).
    Mirror(Box<(TapFrame, FrameMeta, Option<usize>)>),
}

pub(super) struct Net {
    pub cfg: Config,
    pub ucfg: UetCfg,
    pub now: u64,
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    evs: Vec<Option<Ev>>,
    free: Vec<usize>,
    rng: Rng,
    names: Vec<String>,
    kinds: Vec<Kind>,
    ports: Vec<Port>,
    /// Per host: its port and its PDCs (senders) or nothing (receivers).
    host_port: Vec<usize>,
    host_pdcs: Vec<Vec<usize>>,
    host_rr: Vec<usize>,
    pub tx: Vec<Tx>,
    pub rx: Vec<Rx>,
    pub log: UetLog,
    taps: Vec<TapInfo>,
    mirrors: Vec<Mirror>,
    frames: Vec<TapFrame>,
    meta: Vec<FrameMeta>,
    tap_drops: Vec<TapDrop>,
    stats: FabricStats,
    max_frame_len: u32,
}

impl Net {
    /// The port's name, `NODE-TOWARD`.
    pub fn port_name(&self, p: usize) -> String {
        let port = &self.ports[p];
        format!(
            "{}-{}",
            self.names[port.node], self.names[self.ports[port.peer].node]
        )
    }

    fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(s) => {
                self.evs[s] = Some(ev);
                s
            }
            None => {
                self.evs.push(Some(ev));
                self.evs.len() - 1
            }
        };
        self.heap.push(Reverse((t, self.seq, slot)));
    }

    pub fn run(mut self) -> Run {
        let limit = self.cfg.max_frames.unwrap_or(usize::MAX);
        while let Some(Reverse((t, _, slot))) = self.heap.pop() {
            if t > self.cfg.duration_ns {
                break;
            }
            let Some(ev) = self.evs[slot].take() else {
                continue;
            };
            self.free.push(slot);
            self.now = t;
            self.stats.events += 1;
            match ev {
                Ev::TxDone(p) => {
                    self.ports[p].busy = false;
                    self.try_tx(p);
                }
                Ev::Arrive(p, pkt) => self.arrive(p, *pkt),
                Ev::Pull(h) => {
                    let p = self.host_port[h];
                    self.try_tx(p);
                }
                Ev::Rto(q, idx, n) => self.rto(q, idx, n),
                Ev::Mirror(copy) => {
                    let (frame, meta, send) = *copy;
                    self.frames.push(frame);
                    self.meta.push(meta);
                    self.log.frame_sends.push(send);
                }
            }
            if self.frames.len() >= limit {
                self.frames.truncate(limit);
                self.meta.truncate(limit);
                self.log.frame_sends.truncate(limit);
                self.stats.truncated = true;
                break;
            }
        }
        self.stats.end_ns = self.now;
        self.finish()
    }

    fn finish(mut self) -> Run {
        self.log.rto_ns = self.cfg.nic.min_rto_ns;
        self.log.end_ns = self.now;
        self.log.pdcs = self
            .tx
            .iter()
            .zip(&self.rx)
            .zip(&self.cfg.flows)
            .map(|((t, r), fc)| {
                let mut s = t.summary(r);
                s.src_ip = Some(sender_ip(fc.src));
                s.dst_ip = Some(receiver_ip(fc.dst));
                s
            })
            .collect();
        self.log.port_names = (0..self.ports.len()).map(|p| self.port_name(p)).collect();
        Run {
            scenario: self.cfg.name.clone(),
            seed: self.cfg.seed,
            taps: self.taps,
            frames: self.frames,
            meta: self.meta,
            tap_drops: self.tap_drops,
            net_drops: vec![],
            qps: vec![],
            fabric: self.stats,
            ports: vec![],
            rto_ns: self.cfg.nic.min_rto_ns,
            pauses: vec![],
            prop_ns: self.cfg.prop_ns,
            max_frame_len: self.max_frame_len,
            link_gbps: self.cfg.link_gbps,
            switch_log: SwitchLog::new(None),
            port_names: vec![],
            transport_log: Some(Box::new(self.log)),
        }
    }

    /// The taps `taps` see `pkt` pass: each records it (or its mirror drops
    /// it), and may record it a second time (the RoCE fabric's mirrors).
    fn record(&mut self, taps: &[usize], pkt: &Pkt) {
        let now = self.now;
        let meta = FrameMeta {
            flow: Some(pkt.pdc),
            retrans: pkt.spec.request().is_some_and(|r| r.retx),
            index: pkt.send.map(|s| self.log.sends[s].idx),
            send_seq: pkt.send.map_or(0, |s| s as u64),
            ..FrameMeta::default()
        };
        for &t in taps {
            let recording = self.mirrors[t].record(true);
            if recording == Recording::Dropped {
                self.stats.tap_dropped += 1;
                self.tap_drops.push(TapDrop {
                    ts_ns: now,
                    tap: t,
                    meta,
                });
                continue;
            }
            let frame = super::frame::carried(pkt.spec.clone());
            let copy = recording.copy(now, t, &frame);
            self.frames.push(TapFrame {
                ts_ns: now,
                tap: t,
                frame,
            });
            self.meta.push(meta);
            self.log.frame_sends.push(pkt.send);
            let Some(copy) = copy else {
                continue;
            };
            self.stats.tap_duplicates += 1;
            let meta = FrameMeta { copy: true, ..meta };
            if copy.ts_ns == now {
                self.frames.push(copy);
                self.meta.push(meta);
                self.log.frame_sends.push(pkt.send);
            } else {
                let at = copy.ts_ns;
                self.push(at, Ev::Mirror(Box::new((copy, meta, pkt.send))));
            }
        }
    }

    fn try_tx(&mut self, p: usize) {
        if self.ports[p].busy {
            return;
        }
        let port = &mut self.ports[p];
        let mut pkt = match port.hi.pop_front() {
            Some(k) => {
                port.hibytes -= u64::from(k.len);
                Some(k)
            }
            None => port
                .queue
                .pop_front()
                .inspect(|k| port.qbytes -= u64::from(k.len)),
        };
        if pkt.is_none()
            && let Kind::Host(h) = self.kinds[self.ports[p].node]
        {
            pkt = self.pull(h);
        }
        let Some(mut pkt) = pkt else { return };
        let peer = self.ports[p].peer;
        pkt.spec.src_mac = self.ports[p].mac;
        pkt.spec.dst_mac = self.ports[peer].mac;
        self.max_frame_len = self.max_frame_len.max(pkt.len);
        self.ports[p].busy = true;
        let ser = wire_ns(pkt.len, self.cfg.link_gbps);
        let taps = std::mem::take(&mut self.ports[p].taps_tx);
        self.record(&taps, &pkt);
        self.ports[p].taps_tx = taps;
        let mut at = self.now + ser + self.cfg.prop_ns;
        let (slow, slow_ns) = (self.ports[peer].slow, self.ports[peer].slow_ns);
        if self.rng.chance(slow) {
            at += slow_ns;
            self.stats.reordered += 1;
        }
        self.push(self.now + ser, Ev::TxDone(p));
        self.push(at, Ev::Arrive(peer, Box::new(pkt)));
    }

    fn arrive(&mut self, p: usize, pkt: Pkt) {
        if self.rng.chance(self.ports[p].loss) {
            self.stats.link_drops += 1;
            self.log.drop(self.now, p, &pkt, false);
            return;
        }
        let taps = std::mem::take(&mut self.ports[p].taps_rx);
        self.record(&taps, &pkt);
        self.ports[p].taps_rx = taps;
        match self.kinds[self.ports[p].node] {
            Kind::Host(_) => self.host_rx(pkt),
            Kind::Switch(_) => self.forward(p, pkt),
        }
    }

    /// A switch: ECMP on the entropy (the UDP source port), then trim,
    /// drop or queue.
    fn forward(&mut self, p_in: usize, mut pkt: Pkt) {
        let s = &pkt.spec;
        let node = self.ports[p_in].node;
        let Kind::Switch(routes) = &self.kinds[node] else {
            return;
        };
        let Some(members) = routes.get(&s.dst_ip) else {
            return;
        };
        let e = members[ecmp_pick(s.src_ip, s.dst_ip, s.entropy, 0, members.len())];
        let u = &self.ucfg;
        let depth = self.ports[e].qbytes;
        let request = matches!(pkt.spec.pdu, Pdu::Request(_));
        if request && !pkt.spec.trimmed && trims(depth, pkt.len, u.trim_bytes) {
            pkt.spec.trimmed = true;
            pkt.spec.payload_len = 0;
            pkt.spec.dscp = u.trim_dscp;
            pkt.len = pkt.spec.frame_len();
            if self.ports[e].hibytes + u64::from(pkt.len) > u.queue_limit {
                self.stats.switch_drops += 1;
                self.log.drop(self.now, e, &pkt, true);
                return;
            }
            self.log.trim(self.now, e, &pkt);
            let port = &mut self.ports[e];
            port.hibytes += u64::from(pkt.len);
            port.hi.push_back(pkt);
            self.try_tx(e);
            return;
        }
        if depth + u64::from(pkt.len) > u.queue_limit {
            self.stats.switch_drops += 1;
            self.log.drop(self.now, e, &pkt, true);
            return;
        }
        if request && depth > u.ecn_bytes && (pkt.spec.ecn == ECN_ECT0 || pkt.spec.ecn == ECN_ECT1)
        {
            pkt.spec.ecn = ECN_CE;
        }
        let port = &mut self.ports[e];
        port.qbytes += u64::from(pkt.len);
        port.queue.push_back(pkt);
        self.try_tx(e);
    }

    // ---- endpoints ---------------------------------------------------------

    /// The next request of host `h`'s PDCs (round robin over those the
    /// window lets send).
    fn pull(&mut self, h: usize) -> Option<Pkt> {
        let n = self.host_pdcs[h].len();
        for k in 0..n {
            let q = self.host_pdcs[h][(self.host_rr[h] + k) % n];
            if self.tx[q].start_ns > self.now {
                continue;
            }
            let Some((idx, reason)) = self.tx[q].next(self.cfg.mtu) else {
                continue;
            };
            self.host_rr[h] = (self.host_rr[h] + k + 1) % n;
            return Some(self.send(q, idx, reason));
        }
        None
    }

    fn send(&mut self, q: usize, idx: u64, reason: Option<Reason>) -> Pkt {
        let src = sender_ip(self.cfg.flows[q].src);
        let dst = receiver_ip(self.cfg.flows[q].dst);
        let spurious = reason.is_some() && self.rx[q].has(idx);
        let send = self.log.sends.len();
        if let Some(r) = reason {
            self.tx[q].count_resend(r, spurious);
        }
        let (spec, n) = self.tx[q].packet(idx, reason.is_some(), self.now, src, dst, &self.cfg);
        self.log.sends.push(super::SendEvent {
            pdc: q,
            idx,
            ts_ns: self.now,
            reason,
            entropy: spec.entropy,
            spurious,
        });
        let t = self.now + self.cfg.nic.min_rto_ns;
        self.push(t, Ev::Rto(q, idx, n));
        Pkt {
            len: spec.frame_len(),
            spec,
            pdc: q,
            send: Some(send),
        }
    }

    fn rto(&mut self, q: usize, idx: u64, n: u32) {
        if self.tx[q].expire(idx, n) {
            self.log.timeouts += 1;
            let h = self.cfg.flows[q].src;
            self.try_tx(self.host_port[h]);
        }
    }

    fn host_rx(&mut self, pkt: Pkt) {
        let q = pkt.pdc;
        match &pkt.spec.pdu {
            Pdu::Request(r) => {
                let idx = self.tx[q].index(r.psn);
                let ce = pkt.spec.ecn == ECN_CE;
                let reply = self.rx[q].receive(
                    idx,
                    pkt.spec.trimmed,
                    pkt.spec.payload_len,
                    ce,
                    &self.tx[q],
                    r,
                );
                let idx = idx.max(0) as u64;
                if reply.delivered {
                    self.log.delivers.push(super::DeliverEvent {
                        pdc: q,
                        idx,
                        ts_ns: self.now,
                        send: pkt.send,
                    });
                }
                if let Pdu::Nack(n) = &reply.pdu {
                    self.log.nacks.push(super::NackEvent {
                        pdc: q,
                        idx,
                        code: n.code,
                        ts_ns: self.now,
                    });
                }
                let h = self.cfg.senders + self.cfg.flows[q].dst;
                let spec = UetSpec {
                    src_mac: [0; 6],
                    dst_mac: [0; 6],
                    src_ip: pkt.spec.dst_ip,
                    dst_ip: pkt.spec.src_ip,
                    dscp: self.cfg.data_dscp,
                    ecn: 0,
                    ttl: pkt.spec.ttl,
                    // ACKs and NACKs go back on the request's entropy.
                    entropy: pkt.spec.entropy,
                    pdu: reply.pdu,
                    payload_len: 0,
                    trimmed: false,
                };
                let len = spec.frame_len();
                let p = self.host_port[h];
                let port = &mut self.ports[p];
                port.qbytes += u64::from(len);
                port.queue.push_back(Pkt {
                    spec,
                    len,
                    pdc: q,
                    send: None,
                });
                self.try_tx(p);
            }
            Pdu::Ack(a) => {
                self.tx[q].on_ack(a, self.now, &self.ucfg, self.cfg.mtu);
                self.try_tx(self.host_port[self.cfg.flows[q].src]);
            }
            Pdu::Nack(n) => {
                self.tx[q].on_nack(n, self.now, self.cfg.mtu);
                self.try_tx(self.host_port[self.cfg.flows[q].src]);
            }
        }
    }
}

impl UetLog {
    fn event(&self, ts_ns: u64, port: usize, pkt: &Pkt, switch: bool) -> NetEvent {
        NetEvent {
            ts_ns,
            port,
            pdc: pkt.pdc,
            send: pkt.send,
            switch,
            frames_before: self.frame_sends.len(),
        }
    }

    fn trim(&mut self, ts_ns: u64, port: usize, pkt: &Pkt) {
        self.trims.push(self.event(ts_ns, port, pkt, true));
    }

    fn drop(&mut self, ts_ns: u64, port: usize, pkt: &Pkt, switch: bool) {
        self.drops.push(self.event(ts_ns, port, pkt, switch));
    }
}
