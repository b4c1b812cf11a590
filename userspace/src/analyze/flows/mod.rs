//! The flow table: a flow per `(tap, source, destination, destination QP)`,
//! the per-frame counters of a BTH frame, and pairing a request flow with its
//! response flow (`docs/analysis.md`, *Flows*, *Pairing*, *Priority*); a
//! flow's row of `flows.parquet` ([`flow_row`]); in `timeline`, its timeline
//! bins.
//!
//! Above the per-flow trackers it owns (`sequence`, `rewind`, `responses`,
//! `livelock`, `dcqcn`, `qos`'s marks, `rto`, `gaps`), none of which names
//! a [`Flow`].

mod counts;
mod hosts;
mod index;
mod interim;
pub(super) mod kept;
mod rare;
mod retire;
mod row;
mod sender;
mod table;
pub(super) mod timeline;

pub(crate) use super::count::Count;
pub(crate) use hosts::HostIndex;
pub(crate) use index::{FlowIndex, KeyHash};
pub(crate) use kept::Retired;
pub(crate) use retire::Expiry;
pub(super) use retire::{CnpCount, cnps_for, idle_past, next_boundary};
pub(super) use row::flow_row;
pub(crate) use table::FlowTable;

use rocescope_common::proto::ib::{self, PSN_MASK, transport};
use rocescope_common::{PacketRecord, flags};

use super::compact::{Opt8, Opt32};
use super::rewind::{STALL_MIN_NS, froze};
use super::rows::{FlowKey, Verdict};
use super::{Analyzer, Sink};
use super::{dups, psn, qos};
use crate::transport::roce::sequencing::GoBackN;
use crate::transport::sequencing::{Ack, Sequencing};
use timeline::bin_mut;

pub(super) type HostPair = (u16, [u8; 16], [u8; 16]);

#[derive(Clone, Debug)]
pub(crate) struct Flow {
    pub id: u32,
    pub iface: u16,
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub dest_qp: u32,
    /// Transport service of its first packet (`opcode >> 5`); none from
    /// the live tap's summaries.
    service: Opt8,
    /// The slot of the flow of the other direction it is paired with.
    paired: Opt32,
    /// Its partner's QP ([`Flow::paired_qp`]).
    partner_qp: Opt32,
    /// Its first packet's UDP source port (when [`Frame::UDP`]).
    udp_sport: u16,
    /// Its first packet's link and encapsulation, and its tap's kind.
    frame: Frame,
    pcp: Opt8,
    dscp: Opt8,
    priority: Opt8,
    pub first_ts: u64,
    pub last_ts: u64,
    /// Its counts' low 32 bits ([`Count`]).
    low: super::count::Low,
    pub max_idle_ns: u64,
    pub(super) mtu: u32,
    /// Highest PSN ACKed by the AETHs this flow carries ([`Flow::acked`]).
    acked: Opt32,
    /// The source MAC of its first packet.
    pub src_mac: [u8; 6],
    /// What only some flows count or keep, from the first on: one pointer
    /// in every flow for all of it.
    pub(super) rare: Option<Box<rare::Rare>>,
    /// What only a flow that sends requests or data holds (its sequencing,
    /// timer, round-trip probe, DCQCN window), from the first write on.
    pub(in crate::analyze) sender: Option<Box<sender::Sender>>,
    /// The DSCPs and PCPs of its frames.
    pub marks: qos::FlowMarks,
}

/// A flow's first packet's link and encapsulation, and its tap's kind, in
/// one byte (docs/analysis.md, "Memory").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Frame(u8);

impl Frame {
    /// Native InfiniBand (an LRH).
    const IB_LINK: u8 = 1;
    /// A UDP header: `udp_sport` holds its source port.
    const UDP: u8 = 1 << 1;
    /// RoCE v1 (a GRH) or v2 (UDP) ([`PacketRecord::roce_version`]).
    const ROCE_V1: u8 = 1 << 2;
    const ROCE_V2: u8 = 1 << 3;
    /// The flow's tap is a sniffer's rewritten capture.
    const SNIFFER_TAP: u8 = 1 << 4;

    /// What `rec`, a flow's first packet, says; the tap's kind stays.
    fn first(was: Frame, rec: &PacketRecord) -> Frame {
        let bit = |on: bool, b: u8| if on { b } else { 0 };
        Frame(
            (was.0 & Self::SNIFFER_TAP)
                | bit(rec.has(flags::IB_LRH), Self::IB_LINK)
                | bit(rec.has(flags::HAS_UDP), Self::UDP)
                | bit(rec.roce_version() == Some(1), Self::ROCE_V1)
                | bit(rec.roce_version() == Some(2), Self::ROCE_V2),
        )
    }

    fn has(self, b: u8) -> bool {
        self.0 & b != 0
    }

    fn roce_version(self) -> Option<u8> {
        if self.has(Self::ROCE_V1) {
            Some(1)
        } else if self.has(Self::ROCE_V2) {
            Some(2)
        } else {
            None
        }
    }
}

impl Flow {
    /// The QP the CNPs answering this flow's CE marks are sent to: the
    /// paired flow's for a sequenced service, the DETH's source QP for UD.
    pub(super) fn cnp_qp(&self) -> Option<u32> {
        match self.seq() {
            Some(_) => self.paired_qp(),
            None => self.ud_src_qp(),
        }
    }

    /// Its partner's QP: the flow of the other direction it is paired with
    /// (by PSNs or a CM exchange), kept when that flow retires.
    pub fn paired_qp(&self) -> Option<u32> {
        self.partner_qp.get()
    }

    pub(super) fn set_paired_qp(&mut self, qp: u32) {
        self.partner_qp = Opt32::of(Some(qp));
    }

    /// The slot of the flow it is paired with while both are live.
    pub(super) fn paired(&self) -> Option<usize> {
        self.paired.slot()
    }

    pub(super) fn set_paired(&mut self, slot: Option<usize>) {
        self.paired = Opt32::of_slot(slot);
    }

    /// Highest PSN ACKed by the AETHs this flow carries.
    pub(super) fn acked(&self) -> Option<u32> {
        self.acked.get()
    }

    /// Advances [`Flow::acked`] by `ack` (go-back-N's cumulative rule);
    /// returns the PSN it acknowledges.
    pub(super) fn acknowledge(&mut self, ack: &Ack) -> u32 {
        let mut a = self.acked.get();
        let psn = GoBackN::acknowledge(&mut a, ack);
        self.acked = Opt32::of(a);
        psn
    }

    /// Transport service of its first packet (`opcode >> 5`); `None` from
    /// the live tap's summaries.
    pub(crate) fn service(&self) -> Option<u8> {
        self.service.get()
    }

    pub(crate) fn roce_version(&self) -> Option<u8> {
        self.frame.roce_version()
    }

    pub(crate) fn udp_sport(&self) -> Option<u16> {
        self.frame.has(Frame::UDP).then_some(self.udp_sport)
    }

    /// Its first packet was native InfiniBand (an LRH).
    pub(crate) fn ib_link(&self) -> bool {
        self.frame.has(Frame::IB_LINK)
    }

    /// The flow's tap is a sniffer's rewritten capture: ICRCs say nothing.
    pub(crate) fn sniffer_tap(&self) -> bool {
        self.frame.has(Frame::SNIFFER_TAP)
    }

    pub(in crate::analyze) fn set_sniffer_tap(&mut self) {
        self.frame.0 |= Frame::SNIFFER_TAP;
    }

    /// The PCP and DSCP of its first packet.
    pub(crate) fn pcp(&self) -> Option<u8> {
        self.pcp.get()
    }

    pub(crate) fn dscp(&self) -> Option<u8> {
        self.dscp.get()
    }

    /// Its priority (the first packet's that had one).
    pub(crate) fn priority(&self) -> Option<u8> {
        self.priority.get()
    }

    pub(super) fn new(id: u32, key: FlowKey, ts: u64) -> Self {
        Flow {
            id,
            iface: key.0,
            src_ip: key.1,
            dst_ip: key.2,
            dest_qp: key.3,
            service: Opt8::NONE,
            paired: Opt32::NONE,
            partner_qp: Opt32::NONE,
            udp_sport: 0,
            frame: Frame::default(),
            pcp: Opt8::NONE,
            dscp: Opt8::NONE,
            priority: Opt8::NONE,
            first_ts: ts,
            last_ts: ts,
            low: [0; super::count::COUNTS],
            max_idle_ns: 0,
            mtu: 0,
            acked: Opt32::NONE,
            src_mac: [0; 6],
            rare: None,
            sender: None,
            marks: qos::FlowMarks::default(),
        }
    }

    /// Gb/s of `bytes` over the flow's life (0 when that is one instant):
    /// `gbps` and `goodput_gbps`.
    pub(crate) fn rate_gbps(&self, bytes: u64) -> f64 {
        super::rows::gbps(bytes, self.first_ts, self.last_ts)
    }

    pub(super) fn key(&self) -> FlowKey {
        (self.iface, self.src_ip, self.dst_ip, self.dest_qp)
    }

    /// PSNs `[lo, hi)` the flow's requests have covered (READ slack included).
    pub(super) fn sent_range(&self) -> Option<(u32, u32)> {
        self.seq().map(GoBackN::sent_range)
    }
}

impl Analyzer {
    /// The slot of the flow of `key` (whose hash `hash` is, if made
    /// already), a new flow if none.
    pub(super) fn flow_index(&mut self, key: FlowKey, hash: Option<KeyHash>, ts: u64) -> usize {
        let hash = hash.unwrap_or_else(|| self.by_key.hash(&key));
        let hash = match self.by_key.find_hashed(&self.flows, &key, hash) {
            Ok(i) => return i,
            Err(hash) => hash,
        };
        let i = self.flows.insert(Flow::new(self.ids.take(), key, ts));
        self.note_live();
        self.expiry.new_flow(&self.config, ts, i, self.flows[i].id);
        self.by_key.insert_hashed(&self.flows, i, hash);
        self.by_hosts.insert_hashed(&self.flows, i, hash.pair());
        // A hint may name this flow as the request or the response side.
        self.apply_hint(i);
        let reverse: Vec<FlowKey> = self
            .hints
            .iter()
            .filter(|(k, qp)| k.0 == key.0 && k.1 == key.2 && k.2 == key.1 && **qp == key.3)
            .map(|(k, _)| *k)
            .collect();
        for k in reverse {
            if let Some(r) = self.by_key.get(&self.flows, &k) {
                self.apply_hint(r);
            }
        }
        i
    }

    pub(super) fn link(&mut self, r: usize, s: usize) {
        if let Some(log) = &mut self.pairings {
            log.push((self.flows[r].key(), self.flows[s].key()));
        }
        let mtu = self.flows[r].mtu.max(self.flows[s].mtu);
        let (rq, sq) = (self.flows[r].dest_qp, self.flows[s].dest_qp);
        let fr = &mut self.flows[r];
        fr.set_paired(Some(s));
        fr.set_paired_qp(sq);
        fr.mtu = mtu;
        let fs = &mut self.flows[s];
        fs.set_paired(Some(r));
        fs.set_paired_qp(rq);
        fs.mtu = mtu;
    }

    /// Pair response flow `s` by its response PSN `q`.
    pub(super) fn try_pair(&mut self, s: usize, q: u32) {
        let f = &self.flows[s];
        let Some(cands) = self
            .by_hosts
            .get(&self.flows, &(f.iface, f.dst_ip, f.src_ip))
        else {
            return;
        };
        let mut found = None;
        for r in cands.iter() {
            if r == s {
                continue;
            }
            let fr = &self.flows[r];
            if fr.paired().is_some() || fr.paired_qp().is_some() {
                continue;
            }
            let Some((lo, hi)) = fr.sent_range() else {
                continue;
            };
            if psn::diff(q, lo) >= 0 && psn::diff(q, hi) < 0 {
                if found.is_some() {
                    return; // ambiguous: wait for another response
                }
                found = Some(r);
            }
        }
        if let Some(r) = found {
            self.link(r, s);
        }
    }

    /// From now on, remember every pairing for [`Analyzer::take_pairings`].
    pub fn log_pairings(&mut self) {
        self.pairings.get_or_insert_with(Vec::new);
    }

    /// The pairings (request flow, response flow) made since the last call.
    pub fn take_pairings(&mut self) -> Vec<(FlowKey, FlowKey)> {
        self.pairings
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    pub(super) fn priority_of(&self, rec: &PacketRecord) -> Option<u8> {
        if rec.has(flags::HAS_VLAN) {
            Some(rec.pcp & 7)
        } else if rec.has_traffic_class() {
            // Trusting DSCP, the NIC maps the traffic class to a priority
            // (IP's, or RoCEv1's TClass: the same byte to the verbs).
            let d = (rec.dscp & 63) as usize;
            Some(match &self.config.dscp_to_priority {
                Some(m) => m[d] & 7,
                None => (d >> 3) as u8,
            })
        } else {
            None
        }
    }

    pub(super) fn roce(
        &mut self,
        rec: &PacketRecord,
        hash: Option<KeyHash>,
        sink: &mut impl Sink,
    ) -> Verdict {
        let now = rec.ts_ns;
        let i = self.flow_index(super::roce_key(rec), hash, now);
        let flows = &self.flows;
        let last_nak = || flows[i].paired().and_then(|p| flows[p].nak().last_nak_ts);
        if self
            .dups
            .is_copy_with(rec, dups::Owner::Flow(flows[i].id as usize), last_nak)
        {
            self.flows[i].rare_mut().mirror_copies += 1;
            self.frames.mirror_copies += 1;
            return Verdict {
                flow_id: Some(self.flows[i].id),
                mirror_copy: true,
                ..Verdict::default()
            };
        }
        self.matcher.push(rec, i);
        let rewritten = self.flow_icrc(i, rec);
        let prio = self.priority_of(rec);
        {
            let f = &mut self.flows[i];
            if f.packets() == 0 {
                let service = rec.has(flags::HAS_BTH).then_some(rec.roce().opcode >> 5);
                f.service = Opt8::of(service);
                f.set_ud_src_qp(
                    (service == Some(transport::UD) && rec.has(flags::HAS_DETH))
                        .then_some(rec.roce().deth_src_qp & ib::QPN_MASK),
                );
                f.frame = Frame::first(f.frame, rec);
                f.udp_sport = rec.udp_sport;
                f.src_mac = rec.src_mac;
                f.pcp = Opt8::of(rec.has(flags::HAS_VLAN).then_some(rec.pcp));
                f.dscp = Opt8::of(rec.has_traffic_class().then_some(rec.dscp));
            }
            if f.priority == Opt8::NONE {
                f.priority = Opt8::of(prio);
            }
            f.marks.frame(
                rec.has_traffic_class().then_some(rec.dscp),
                rec.has(flags::HAS_VLAN).then_some(rec.pcp),
            );
        }
        let idle = if self.flows[i].packets() == 0 {
            0
        } else {
            now.saturating_sub(self.flows[i].last_ts)
        };
        // Pause overlap of the idle time before this packet: wanted for
        // stalls (long idles) and rewinds (retransmissions).
        let maybe_rewind = ib::is_request(rec.roce().opcode)
            && self.flows[i]
                .seq()
                .is_some_and(|s| s.behind(rec.roce().psn & PSN_MASK));
        let (paused, cover) = match self.flows[i].priority() {
            Some(p) if idle > 0 && (idle >= STALL_MIN_NS || maybe_rewind) => {
                self.pfc.paused(rec.iface, p, now - idle, now, now)
            }
            _ => (0, None),
        };

        let opcode = rec.roce().opcode;
        let service = opcode >> 5;
        let payload = if rec.has(flags::HAS_PAYLOAD_LEN) {
            rec.payload_len as u64
        } else {
            0
        };
        // Path MTU: a First or Middle packet carries exactly one.
        if ib::payload_is_path_mtu(opcode) && payload > 0 {
            let m = payload.min(u32::MAX as u64) as u32;
            let f = &mut self.flows[i];
            f.mtu = f.mtu.max(m);
            if let Some(p) = f.paired() {
                self.flows[p].mtu = self.flows[p].mtu.max(m);
            }
        }

        let mut verdict = Verdict {
            flow_id: Some(self.flows[i].id),
            icrc_unknown: rewritten,
            ..Verdict::default()
        };
        let mut rewound = false;
        if ib::is_request(opcode) {
            let (retrans, rw) = self.request(i, rec, idle, paused, cover, sink);
            verdict.retrans = Some(retrans);
            rewound = rw;
            self.flows[i].sender_mut().rto.sent(now);
        } else if ib::is_response(opcode) {
            self.response(i, rec, sink);
        } else if service == transport::UD {
            self.flows[i].add(Count::DataPackets, 1);
        }

        let retrans = verdict.retrans == Some(true);
        // UD sends carry data as requests do: their CE marks count, and
        // the sender's rate answers the CNPs for them (docs/analysis.md).
        let data = ib::is_request(opcode) || service == transport::UD;
        let ce = data && rec.is_ce();
        let bin_ns = self.config.bin_ns;
        let f = &mut self.flows[i];
        if ib::is_request(opcode) {
            f.request_frame(rec.frame_len, rec.dscp);
        }
        if data {
            let (pfc, iface, prio) = (&self.pfc, f.iface, f.priority());
            f.rate_mut().request(now, rec.frame_len, |from, to| {
                prio.is_some_and(|p| pfc.paused(iface, p, from, to, now).0 > 0)
            });
        }
        f.add(Count::Packets, 1);
        if rec.has(flags::BECN) {
            f.rare_mut().becn += 1;
        }
        f.add(Count::Bytes, u64::from(rec.frame_len));
        f.add(Count::PayloadBytes, payload);
        if !retrans {
            f.add(Count::GoodputBytes, payload);
        }
        if ce {
            f.add(Count::Ce, 1);
            self.running.ce += 1;
            f.ce_marked(now);
        }
        f.max_idle_ns = f.max_idle_ns.max(idle);
        if paused > 0 && (rewound || froze(idle, paused, cover, now - idle)) {
            let r = f.rare_mut();
            r.stalls += 1;
            r.stall_paused_ns += paused;
        }
        f.last_ts = f.last_ts.max(now);
        f.timer_packet_done();
        let f = &self.flows[i];
        if let Some(b) = bin_mut(&mut self.bins, i, f, &self.pfc, now, bin_ns, sink) {
            b.packets += 1;
            b.bytes += rec.frame_len as u64;
            if retrans {
                b.retrans += 1;
            } else {
                b.goodput_bytes += payload;
            }
            if ce {
                b.ce += 1;
            }
        }
        verdict
    }
}
