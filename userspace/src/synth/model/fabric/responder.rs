//! Hosts as responders: receiving requests, acknowledging them (ACK, NAK)
//! and notifying congestion (CNP).

use crate::proto::ib::{self, aeth, op};
use crate::synth::model::hosts::IP_TTL;
use crate::synth::model::qp::Placed;
use crate::synth::model::spec::{Aeth, CnpSpec, FrameMeta, FrameSpec, RoceSpec, Vlan};

use super::{Ev, Fabric, Pkt, ib_ecn};

impl Fabric {
    pub(super) fn host_rx(&mut self, h: usize, p: usize, pkt: Pkt) {
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

    pub(super) fn start_rx(&mut self, h: usize) {
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

    pub(super) fn rx_done(&mut self, h: usize) {
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
    pub(super) fn respond(&mut self, h: usize, qi: usize, pkt: &Pkt) {
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

    pub(super) fn send_aeth(&mut self, h: usize, qi: usize, syndrome: u8) {
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

    pub(super) fn send_cnp(&mut self, h: usize, qi: usize) {
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
