//! Hosts as requesters: the next data packet, the retransmission timer,
//! responses and CNPs, DCQCN.

use crate::proto::ib::aeth;
use crate::synth::model::hosts::IP_TTL;
use crate::synth::model::qp::RateStep;
use crate::synth::model::spec::{FrameMeta, FrameSpec, Reth, RoceSpec, Trigger, Vlan};

use super::{Ev, Fabric, Pkt, ib_ecn, wire_ns};

impl Fabric {
    pub(super) fn vlan(&self, prio: u8) -> Option<Vlan> {
        self.cfg.vlan.map(|vid| Vlan { vid, pcp: prio })
    }

    /// Next data packet of host `h`'s QPs (round robin over the eligible
    /// ones), or the time to look again.
    pub(super) fn pull(&mut self, h: usize) -> Result<Pkt, u64> {
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
    pub(super) fn data_prio(&self, qi: usize) -> u8 {
        self.qps[qi].cfg.prio.unwrap_or(self.cfg.data_prio)
    }

    pub(super) fn data_dscp(&self, qi: usize) -> u8 {
        self.qps[qi].cfg.dscp.unwrap_or(self.cfg.data_dscp)
    }

    pub(super) fn make_data(&mut self, qi: usize) -> Pkt {
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

    pub(super) fn arm_rto(&mut self, qi: usize) {
        let q = &mut self.qps[qi];
        q.rto_armed = true;
        q.rto_epoch += 1;
        q.rto_armed_ns = self.now;
        let e = q.rto_epoch;
        let t = self.now + self.cfg.nic.min_rto_ns;
        self.push(t, Ev::Rto(qi, e));
    }

    pub(super) fn disarm_rto(&mut self, qi: usize) {
        let q = &mut self.qps[qi];
        q.rto_armed = false;
        q.rto_epoch += 1;
    }

    pub(super) fn rto(&mut self, qi: usize, epoch: u64) {
        let q = &mut self.qps[qi];
        if !q.rto_armed || q.rto_epoch != epoch {
            return;
        }
        if q.snd_una < q.snd_max {
            q.snd_nxt = q.snd_una;
            q.pending_rewind = Some(Trigger::Timeout);
            q.stats.timeouts += 1;
            let armed_ns = q.rto_armed_ns;
            q.timer_fires.push(crate::synth::model::qp::TimerFire {
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
    pub(super) fn on_response(&mut self, qi: usize, r: &RoceSpec, resp_seq: Option<u64>) {
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

    pub(super) fn on_cnp(&mut self, qi: usize) {
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

    pub(super) fn dcqcn_timer(&mut self, qi: usize) {
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
}
