//! A PDC's two ends in RUD mode: the initiator ([`Tx`]: per-packet
//! retransmit timers, RETX resends on a NACK or a timeout, NSCC's window,
//! a new entropy value per packet) and the target ([`Rx`]: every packet
//! placed whatever its order, an ACK_CC per packet with the cumulative PSN
//! and a SACK bitmap, a NACK by code for a trimmed one).

use super::UetCfg;
use super::frame::{Ack, Nack, Pdu, Request, UetSpec};
pub use super::log::{PdcSummary, Reason};
use crate::synth::model::hosts::{IP_TTL, ephemeral_port};
use crate::synth::model::scenario::{Config, FlowCfg};
use rocescope_common::proto::ip::ECN_ECT0;
use rocescope_common::wire::uet::NackCode;
use std::collections::VecDeque;
use std::net::Ipv4Addr;

/// The initiator's PDC id for PDC `q`, and the target's.
pub fn initiator_pdcid(q: usize) -> u16 {
    0x100 + q as u16
}
pub fn target_pdcid(q: usize) -> u16 {
    0x2000 + q as u16
}

/// The initiator.
#[derive(Debug)]
pub struct Tx {
    pub pdc: usize,
    pub start_ns: u64,
    pub start_psn: u32,
    pub packets: u64,
    ppm: u64,
    msg_bytes: u32,
    mtu: u32,
    dpdcid: Option<u16>,
    pub entropies: Vec<u16>,
    rr: usize,
    next_new: u64,
    acked: Vec<bool>,
    sends: Vec<u32>,
    in_flight: Vec<bool>,
    queued: Vec<bool>,
    last_send: Vec<u64>,
    inflight_bytes: u64,
    resend: VecDeque<(u64, Reason)>,
    una: u64,
    cwnd: f64,
    last_md_ns: Option<u64>,
    s: PdcSummary,
}

impl Tx {
    pub fn new(q: usize, fc: &FlowCfg, mtu: u32, u: &UetCfg) -> Tx {
        let ppm = u64::from(fc.msg_bytes.max(1).div_ceil(mtu));
        let packets = ppm * fc.messages.unwrap_or(0);
        let n = packets as usize;
        // Entropy values: a run of the ephemeral range from the flow's
        // own base, one per path the PDC sprays over.
        let base = fc.udp_sport.unwrap_or_else(|| ephemeral_port(q, 0x1F3));
        let entropies = (0..u.entropies)
            .map(|k| 0xC000 | (base.wrapping_sub(0xC000).wrapping_add(k) & 0x3FFF))
            .collect();
        let cwnd = u.nscc.init_cwnd as f64;
        Tx {
            pdc: q,
            start_ns: fc.start_ns,
            start_psn: fc.start_psn,
            packets,
            ppm,
            msg_bytes: fc.msg_bytes.max(1),
            mtu,
            dpdcid: None,
            entropies,
            rr: 0,
            next_new: 0,
            acked: vec![false; n],
            sends: vec![0; n],
            in_flight: vec![false; n],
            queued: vec![false; n],
            last_send: vec![0; n],
            inflight_bytes: 0,
            resend: VecDeque::new(),
            una: 0,
            cwnd,
            last_md_ns: None,
            s: PdcSummary {
                pdc: q,
                spdcid: initiator_pdcid(q),
                start_psn: fc.start_psn,
                packets,
                cwnd_initial: u.nscc.init_cwnd,
                cwnd_min: u.nscc.init_cwnd,
                cwnd_max: u.nscc.init_cwnd,
                ..PdcSummary::default()
            },
        }
    }

    pub fn psn(&self, idx: u64) -> u32 {
        self.start_psn.wrapping_add(idx as u32)
    }

    /// The packet index of `psn` (negative before the PDC's start).
    pub fn index(&self, psn: u32) -> i64 {
        i64::from(psn.wrapping_sub(self.start_psn) as i32)
    }

    /// Payload bytes of packet `idx`.
    pub fn size(&self, idx: u64) -> u32 {
        let k = idx % self.ppm;
        if k + 1 == self.ppm {
            self.msg_bytes - (self.ppm as u32 - 1) * self.mtu
        } else {
            self.mtu
        }
    }

    fn fits(&self, idx: u64) -> bool {
        self.inflight_bytes == 0
            || self.inflight_bytes + u64::from(self.size(idx)) <= self.cwnd as u64
    }

    /// What to send next, if the window lets it: a pending resend first.
    pub fn next(&mut self, _mtu: u32) -> Option<(u64, Option<Reason>)> {
        while let Some(&(idx, reason)) = self.resend.front() {
            if self.acked[idx as usize] {
                self.resend.pop_front();
                self.queued[idx as usize] = false;
                continue;
            }
            if !self.fits(idx) {
                return None;
            }
            self.resend.pop_front();
            self.queued[idx as usize] = false;
            return Some((idx, Some(reason)));
        }
        (self.next_new < self.packets && self.fits(self.next_new)).then(|| {
            self.next_new += 1;
            (self.next_new - 1, None)
        })
    }

    /// Packet `idx` leaves now: its spec and the number of this send.
    pub fn packet(
        &mut self,
        idx: u64,
        retx: bool,
        now: u64,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        cfg: &Config,
    ) -> (UetSpec, u32) {
        let i = idx as usize;
        self.sends[i] += 1;
        self.in_flight[i] = true;
        self.last_send[i] = now;
        self.inflight_bytes += u64::from(self.size(idx));
        self.s.packets_sent += 1;
        if retx {
            self.s.resends += 1;
        } else {
            self.s.first_transmissions += 1;
        }
        let entropy = self.entropies[self.rr % self.entropies.len()];
        self.rr += 1;
        let k = idx % self.ppm;
        let msg = idx / self.ppm;
        let spec = UetSpec {
            src_mac: [0; 6],
            dst_mac: [0; 6],
            src_ip: src,
            dst_ip: dst,
            dscp: self.s_dscp(cfg),
            ecn: if cfg.nic.ect { ECN_ECT0 } else { 0 },
            ttl: IP_TTL,
            entropy,
            pdu: Pdu::Request(Request {
                psn: self.psn(idx),
                spdcid: initiator_pdcid(self.pdc),
                dpdcid: self.dpdcid,
                psn_offset: (idx & 0x0FFF) as u16,
                clear_psn_offset: (self.una as i64 - idx as i64).max(i64::from(i16::MIN)) as i16,
                retx,
                ar: k + 1 == self.ppm,
                som: k == 0,
                eom: k + 1 == self.ppm,
                message_id: msg as u16,
                message_offset: (k as u32) * self.mtu,
                len: self.size(idx),
                message_len: self.msg_bytes,
                job_id: 0x0A11,
                memory_key: 0x1000 + self.pdc as u64,
            }),
            payload_len: self.size(idx),
            trimmed: false,
        };
        (spec, self.sends[i])
    }

    fn s_dscp(&self, cfg: &Config) -> u8 {
        cfg.flows[self.pdc].dscp.unwrap_or(cfg.data_dscp)
    }

    fn lost(&mut self, idx: u64, reason: Reason) {
        let i = idx as usize;
        if self.in_flight[i] {
            self.in_flight[i] = false;
            self.inflight_bytes -= u64::from(self.size(idx));
        }
        if !self.queued[i] {
            self.queued[i] = true;
            self.resend.push_back((idx, reason));
        }
    }

    /// The timer of packet `idx` armed at its `n`th send expires: true
    /// when that send is still unanswered (the packet is queued for a
    /// resend).
    pub fn expire(&mut self, idx: u64, n: u32) -> bool {
        let i = idx as usize;
        if self.acked[i] || self.sends[i] != n || !self.in_flight[i] {
            return false;
        }
        self.s.timeouts += 1;
        self.lost(idx, Reason::Timeout);
        self.decrease(0.5, None);
        true
    }

    fn decrease(&mut self, by: f64, now: Option<u64>) {
        let min = self.s.cwnd_initial.min(u64::from(self.mtu)) as f64;
        self.cwnd = (self.cwnd * (1.0 - by)).max(min);
        if let Some(t) = now {
            self.last_md_ns = Some(t);
        }
        self.s.cwnd_decreases += 1;
        self.note_cwnd();
    }

    fn note_cwnd(&mut self) {
        let c = self.cwnd as u64;
        self.s.cwnd_min = self.s.cwnd_min.min(c);
        self.s.cwnd_max = self.s.cwnd_max.max(c);
    }

    fn cover(&mut self, idx: i64) -> u64 {
        if idx < 0 || idx as u64 >= self.packets {
            return 0;
        }
        let i = idx as usize;
        if self.acked[i] {
            return 0;
        }
        self.acked[i] = true;
        self.s.acked_packets += 1;
        if self.in_flight[i] {
            self.in_flight[i] = false;
            self.inflight_bytes -= u64::from(self.size(idx as u64));
        }
        u64::from(self.size(idx as u64))
    }

    /// An ACK_CC arrives: what it covers is acknowledged, and NSCC adjusts
    /// the window from its ECN mark and the acknowledged packet's delay.
    pub fn on_ack(&mut self, a: &Ack, now: u64, u: &UetCfg, mtu: u32) -> Option<u64> {
        self.s.acks_received += 1;
        self.dpdcid = Some(a.spdcid);
        let cack = self.index(a.cack_psn);
        let mut bytes = 0;
        for idx in self.una as i64..=cack {
            bytes += self.cover(idx);
        }
        let base = a.cack_psn.wrapping_add(u32::from(a.sack_psn_offset));
        for bit in 0..64 {
            if a.sack_bitmap & (1 << bit) != 0 {
                bytes += self.cover(self.index(base.wrapping_add(bit)));
            }
        }
        while self.una < self.packets && self.acked[self.una as usize] {
            self.una += 1;
        }
        if self.una == self.packets && self.s.done_ns.is_none() {
            self.s.done_ns = Some(now);
        }
        let acked = self.index(a.cack_psn.wrapping_add_signed(i32::from(a.ack_psn_offset)));
        let delay = (acked >= 0 && (acked as u64) < self.packets)
            .then(|| now - self.last_send[acked as usize])?;
        self.nscc(a.ecn_marked, delay, bytes, now, u, mtu);
        Some(delay)
    }

    /// NSCC's four cases (UE 1.0 NSCC, simplified): ECN and delay above
    /// target cut the window in proportion to the excess, at most once per
    /// target delay; no ECN below target grows it fast; no ECN above target
    /// grows it slowly (fairness); ECN below target leaves it.
    fn nscc(&mut self, ecn: bool, delay: u64, bytes: u64, now: u64, u: &UetCfg, mtu: u32) {
        let n = &u.nscc;
        let target = n.target_delay_ns as f64;
        let cwnd = self.cwnd.max(1.0);
        match (ecn, delay as f64 > target) {
            (true, true) => {
                if self.last_md_ns.is_none_or(|t| now >= t + n.target_delay_ns) {
                    let excess = ((delay as f64 - target) / delay as f64).min(1.0);
                    self.decrease(n.md * excess, Some(now));
                }
                return;
            }
            (false, false) => self.cwnd += n.fast_increase * bytes as f64 * f64::from(mtu) / cwnd,
            (false, true) => self.cwnd += n.fair_increase * bytes as f64 * f64::from(mtu) / cwnd,
            (true, false) => return,
        }
        self.cwnd = self.cwnd.min(n.max_cwnd as f64);
        self.note_cwnd();
    }

    /// A NACK arrives: the packet it names is resent (a trimmed one is a
    /// congestion signal: the window gives back one packet).
    pub fn on_nack(&mut self, nack: &Nack, _now: u64, mtu: u32) {
        self.s.nacks_received += 1;
        let idx = self.index(nack.psn);
        if idx < 0 || idx as u64 >= self.packets || self.acked[idx as usize] {
            return;
        }
        self.lost(idx as u64, Reason::Nack(nack.code));
        if NackCode::from_u8(nack.code).is_some_and(NackCode::is_trimmed) {
            let min = self.s.cwnd_initial.min(u64::from(mtu)) as f64;
            self.cwnd = (self.cwnd - f64::from(mtu)).max(min);
            self.s.cwnd_decreases += 1;
            self.note_cwnd();
        }
    }

    pub fn summary(&self, rx: &Rx) -> PdcSummary {
        let mut s = self.s.clone();
        s.entropies = self.entropies.clone();
        s.dpdcid = target_pdcid(self.pdc);
        s.cwnd_final = self.cwnd as u64;
        s.delivered_packets = rx.delivered;
        s.delivered_bytes = rx.delivered_bytes;
        s.duplicates_received = rx.duplicates;
        s.trimmed_received = rx.trimmed;
        s.ce_received = rx.ce;
        s.acks_sent = rx.acks;
        s.nacks_sent = rx.nacks;
        s
    }

    /// Counts one resend by its reason (the model's log does the rest).
    pub fn count_resend(&mut self, reason: Reason, spurious: bool) {
        match reason {
            Reason::Nack(_) => self.s.resends_nack += 1,
            Reason::Timeout => self.s.resends_timeout += 1,
        }
        if spurious {
            self.s.spurious_resends += 1;
        }
    }
}

/// What the target answers one request with.
pub struct Reply {
    pub pdu: Pdu,
    /// The request was placed: the first time its PSN arrived whole.
    pub delivered: bool,
}

/// The target.
#[derive(Debug)]
pub struct Rx {
    pdc: usize,
    got: Vec<bool>,
    /// Packets received in order from the start (the next one missing).
    cack: u64,
    max_plus1: u64,
    rcvd_bytes: u64,
    delivered: u64,
    delivered_bytes: u64,
    duplicates: u64,
    trimmed: u64,
    ce: u64,
    acks: u64,
    nacks: u64,
}

impl Rx {
    pub fn new(pdc: usize, packets: u64) -> Rx {
        Rx {
            pdc,
            got: vec![false; packets as usize],
            cack: 0,
            max_plus1: 0,
            rcvd_bytes: 0,
            delivered: 0,
            delivered_bytes: 0,
            duplicates: 0,
            trimmed: 0,
            ce: 0,
            acks: 0,
            nacks: 0,
        }
    }

    /// The target holds packet `idx` whole.
    pub fn has(&self, idx: u64) -> bool {
        self.got.get(idx as usize).copied().unwrap_or(false)
    }

    pub fn receive(
        &mut self,
        idx: i64,
        trimmed: bool,
        payload: u32,
        ce: bool,
        tx: &Tx,
        r: &Request,
    ) -> Reply {
        let known = idx >= 0 && (idx as u64) < self.got.len() as u64;
        let have = known && self.got[idx as usize];
        self.ce += u64::from(ce);
        if trimmed {
            self.trimmed += 1;
        }
        if trimmed && known && !have {
            self.nacks += 1;
            return Reply {
                pdu: Pdu::Nack(Nack {
                    code: NackCode::Trimmed as u8,
                    psn: r.psn,
                    spdcid: target_pdcid(self.pdc),
                    dpdcid: r.spdcid,
                    max_recv_psn_plus_1: tx.psn(self.max_plus1),
                }),
                delivered: false,
            };
        }
        let mut delivered = false;
        if known && !have && !trimmed {
            let i = idx as usize;
            self.got[i] = true;
            self.delivered += 1;
            self.delivered_bytes += u64::from(payload);
            self.rcvd_bytes += u64::from(payload);
            self.max_plus1 = self.max_plus1.max(idx as u64 + 1);
            while (self.cack as usize) < self.got.len() && self.got[self.cack as usize] {
                self.cack += 1;
            }
            delivered = true;
        } else {
            self.duplicates += 1;
        }
        self.acks += 1;
        // The cumulative PSN is the last one received in order; the SACK
        // bitmap starts right after it.
        let cack_psn = tx.psn(self.cack).wrapping_sub(1);
        let mut bitmap = 0u64;
        let mut ooo = 0u64;
        for (bit, got) in self.got.iter().skip(self.cack as usize).enumerate() {
            if *got {
                ooo += 1;
                if bit < 64 {
                    bitmap |= 1 << bit;
                }
            }
        }
        let offset = (idx - (self.cack as i64 - 1)).clamp(i16::MIN.into(), i16::MAX.into());
        Reply {
            pdu: Pdu::Ack(Ack {
                cack_psn,
                ack_psn_offset: offset as i16,
                spdcid: target_pdcid(self.pdc),
                dpdcid: r.spdcid,
                ecn_marked: ce,
                sack_psn_offset: 1,
                sack_bitmap: bitmap,
                service_time: 0,
                rcvd_bytes: (self.rcvd_bytes & 0xFF_FFFF) as u32,
                ooo_count: ooo.min(0xFFFF) as u16,
                message_id: r.message_id,
                modified_length: payload,
            }),
            delivered,
        }
    }
}
