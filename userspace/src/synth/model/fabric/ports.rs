//! Ports: transmission, DSCP remarking, queueing, arrival (loss,
//! corruption, reordering, PFC frames), forwarding with WRED/ECN, trimming
//! and telemetry postcards.

use crate::proto::ib::{self};
use crate::synth::model::postcards::{DROP_REASON_TRAFFIC_MANAGER, InbandHop, Postcard, switch_id};
use crate::synth::model::spec::FrameSpec;
use crate::synth::model::switch::{ecmp_pick, ecn_mark_probability, trims};

use super::{Ev, Fabric, NodeKind, Pkt, ib_ecn, quanta_ns, wire_ns};

impl Fabric {
    pub(super) fn try_tx(&mut self, p: usize) {
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
    pub(super) fn remark(&mut self, p: usize, pkt: &mut Pkt) {
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

    pub(super) fn enqueue(&mut self, p: usize, pkt: Pkt) {
        let port = &mut self.ports[p];
        port.qbytes[pkt.prio as usize] += pkt.len as u64;
        port.queues[pkt.prio as usize].push_back(pkt);
        self.try_tx(p);
    }

    pub(super) fn arrive(&mut self, p: usize, mut pkt: Pkt) {
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

    pub(super) fn forward(&mut self, p_in: usize, mut pkt: Pkt) {
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
    pub(super) fn trim(&mut self, e: usize, pkt: &mut Pkt) {
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
    pub(super) fn postcard(
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
}
