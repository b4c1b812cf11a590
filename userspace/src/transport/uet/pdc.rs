//! UET's per-PDC analysis (docs/analysis.md, "UET: PDCs"): one [`Pdc`] per
//! direction of a PDC at a tap ([`PdcKey`]), counting what a QP's flow
//! counts and what only UET says (NACKs by code, SACKed PSNs, ECN-marked
//! ACKs), its requests judged by [`Sack`] against what its reverse
//! direction's ACKs covered.
//!
//! A direction's own packets count on its row (an ACK on the direction
//! that sent it); what its data became — delivered, SACKed, NACKed,
//! spurious resends, gaps — on the data's direction.

use std::collections::{BTreeMap, BTreeSet};

use rocescope_common::proto::ip::ECN_CE;
use rocescope_common::wire::uet::pds::field as pf;
use rocescope_common::wire::uet::{NackCode as Code, PdsType};
use rocescope_common::{PacketRecord, flags};

use super::sack::{Covered, Sack, WINDOW, diff};
use super::{Carrier, PdcKey, UetTotals};
use crate::transport::sequencing::{Ack, Data, GapClass, Judgement, Nack, NackCode, Sequencing};

/// NACKs by what their code says, in a bounded shape (docs/tables.md,
/// `uet_nacks_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NackCounts {
    /// TRIMMED, TRIMMED_LASTHOP, TRIMMED_ACK: a switch cut the packet (a
    /// congestion signal).
    pub trimmed: u64,
    /// NO_PDC_AVAIL.
    pub no_pdc: u64,
    /// NO_PKT_BUFFER.
    pub no_pkt_buffer: u64,
    /// PSN_OOR_WINDOW.
    pub psn_oor_window: u64,
    /// The other "no resource" codes: NO_CCC_AVAIL, NO_BITMAP,
    /// NO_GTD_DEL_AVAIL, NO_SES_MSG_AVAIL, NO_RESOURCE.
    pub no_resource: u64,
    /// Every other code.
    pub other: u64,
}

impl NackCounts {
    pub(super) fn add(&mut self, code: u8) {
        let slot = match Code::from_u8(code) {
            Some(c) if c.is_trimmed() => &mut self.trimmed,
            Some(Code::NoPdcAvail) => &mut self.no_pdc,
            Some(Code::NoPktBuffer) => &mut self.no_pkt_buffer,
            Some(Code::PsnOorWindow) => &mut self.psn_oor_window,
            Some(
                Code::NoCccAvail
                | Code::NoBitmap
                | Code::NoGtdDelAvail
                | Code::NoSesMsgAvail
                | Code::NoResource,
            ) => &mut self.no_resource,
            _ => &mut self.other,
        };
        *slot += 1;
    }

    /// Adds `o`'s counts.
    pub fn sum(&mut self, o: &NackCounts) {
        self.trimmed += o.trimmed;
        self.no_pdc += o.no_pdc;
        self.no_pkt_buffer += o.no_pkt_buffer;
        self.psn_oor_window += o.psn_oor_window;
        self.no_resource += o.no_resource;
        self.other += o.other;
    }

    /// The receiver's resources ran short (everything but trimming and
    /// `other`).
    pub fn resources(&self) -> u64 {
        self.no_pdc + self.no_pkt_buffer + self.psn_oor_window + self.no_resource
    }
}

/// What a NACK code means to the sequencing.
pub fn nack_code(code: u8) -> NackCode {
    match Code::from_u8(code) {
        Some(c) if c.is_trimmed() => NackCode::Trimmed,
        Some(
            Code::NoPdcAvail
            | Code::NoCccAvail
            | Code::NoBitmap
            | Code::NoPktBuffer
            | Code::NoGtdDelAvail
            | Code::NoSesMsgAvail
            | Code::NoResource
            | Code::PsnOorWindow,
        ) => NackCode::NotReady,
        Some(Code::PktNotRcvd | Code::RcvrInferLoss) => NackCode::Sequence,
        _ => NackCode::Other(code),
    }
}

/// Shortest, longest, sum and count of some durations (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spread {
    pub n: u64,
    pub min: u64,
    pub max: u64,
    pub sum: u64,
}

impl Spread {
    fn add(&mut self, ns: u64) {
        self.min = if self.n == 0 { ns } else { self.min.min(ns) };
        self.max = self.max.max(ns);
        self.sum += ns;
        self.n += 1;
    }
}

/// One direction of a PDC at one tap.
#[derive(Clone, Debug, Default)]
pub struct Pdc {
    pub key: PdcKey,
    /// Its `flow_id` in `flows.parquet`.
    pub id: u32,
    /// What its first frame was recognised by (its row's Decode As).
    pub carrier: Carrier,
    /// The other end's PDC id, once a packet named it.
    pub peer: Option<u16>,
    pub pcp: Option<u8>,
    pub dscp: u8,
    pub first_ts: u64,
    pub last_ts: u64,
    pub max_idle_ns: u64,
    pub packets: u64,
    pub bytes: u64,
    /// RUD/ROD requests (and RUDI, UUD: none of those has a PDC id).
    pub requests: u64,
    pub payload_bytes: u64,
    /// Requests with the RETX flag, and their payload.
    pub retransmissions: u64,
    pub retrans_payload: u64,
    /// Of them, of a PSN an ACK the tap saw had covered.
    pub spurious: u64,
    /// Of them, not preceded by a NACK naming their PSN: the sender's
    /// timer resent them.
    pub timeout_resends: u64,
    pub ce: u64,
    /// ROD requests among `requests`.
    pub rod_requests: u64,
    pub acks: u64,
    /// ACKs with the M flag (the data they answer arrived ECN-marked).
    pub acks_ecn: u64,
    pub nacks: u64,
    pub nacks_by: NackCounts,
    /// Distinct PSNs of this direction's data NACKs named.
    pub nacked: u64,
    pub gaps: u64,
    /// Mirror copies of its frames, left out of every other count
    /// (docs/analysis.md, "Mirror duplicates").
    pub mirror_copies: u64,
    /// When the last NACK naming a PSN of its data passed the tap: a fast
    /// resend after it is no mirror copy.
    pub last_nack_ts: Option<u64>,
    /// Missing PSNs by [`GapClass`], in its order.
    pub gap: [u64; 5],
    pub late_max_ns: Option<u64>,
    pub late_max_psns: Option<u32>,
    /// First ACK covering a PSN after its first send seen here.
    pub ack_delay: Spread,
    /// Timeout resends: time since the PSN's previous send seen here.
    pub resend_wait: Spread,
    /// What the reverse direction's ACKs covered of this one's data.
    pub covered: Covered,
    seq: Option<Sack>,
    /// PSN → its last send here, and whether an ACK covered it since its
    /// first (at most WINDOW, the lowest forgotten first).
    sent: BTreeMap<u32, (u64, bool)>,
    /// PSNs a NACK named since their last send (at most WINDOW).
    nack_pending: BTreeSet<u32>,
    /// PSNs NACKs named, for the distinct count (at most WINDOW).
    nacked_psns: BTreeSet<u32>,
    /// Where its current `--flow-active` interval ends (0: none).
    pub(super) interval_end: u64,
}

fn gap_slot(c: GapClass) -> usize {
    match c {
        GapClass::Late => 0,
        GapClass::LostBeforeTap => 1,
        GapClass::NakLost => 2,
        GapClass::CaptureLost => 3,
        GapClass::Unresolved => 4,
    }
}

/// Inserts into a set bounded at WINDOW, dropping the lowest.
fn bounded_insert(set: &mut BTreeSet<u32>, q: u32) -> bool {
    if set.len() >= WINDOW && !set.contains(&q) {
        set.pop_first();
    }
    set.insert(q)
}

impl Pdc {
    pub(super) fn new(key: PdcKey, id: u32, rec: &PacketRecord, carrier: Carrier) -> Pdc {
        Pdc {
            key,
            id,
            carrier,
            pcp: rec.has(flags::HAS_VLAN).then_some(rec.pcp),
            dscp: rec.dscp,
            first_ts: rec.ts_ns,
            last_ts: rec.ts_ns,
            ..Pdc::default()
        }
    }

    pub(super) fn frame(&mut self, rec: &PacketRecord) {
        let now = rec.ts_ns;
        if self.packets > 0 {
            self.max_idle_ns = self.max_idle_ns.max(now.saturating_sub(self.last_ts));
        }
        self.last_ts = self.last_ts.max(now);
        self.packets += 1;
        self.bytes += u64::from(rec.frame_len);
        self.payload_bytes += u64::from(rec.payload_len);
    }

    fn judged(&mut self, out: &[Judgement]) {
        for j in out {
            match *j {
                Judgement::GapOpened { .. } => self.gaps += 1,
                Judgement::Resolved(r) => self.gap[gap_slot(r.class)] += u64::from(r.len),
                Judgement::Late {
                    at_ns,
                    since_ns,
                    psns_late,
                    ..
                } => {
                    self.gap[gap_slot(GapClass::Late)] += 1;
                    let ns = at_ns.saturating_sub(since_ns);
                    self.late_max_ns = Some(self.late_max_ns.map_or(ns, |m| m.max(ns)));
                    let p = self.late_max_psns.map_or(psns_late, |m| m.max(psns_late));
                    self.late_max_psns = Some(p);
                }
                Judgement::Retransmission { spurious } => self.spurious += u64::from(spurious),
                _ => {}
            }
        }
    }

    /// A RUD/ROD request of this direction.
    pub(super) fn request(&mut self, rec: &PacketRecord, out: &mut Vec<Judgement>) {
        let u = rec.uet();
        let now = rec.ts_ns;
        let retx = u.pds_flags & pf::FLAG_RETX != 0;
        self.requests += 1;
        self.ce += u64::from(rec.ecn == ECN_CE);
        if matches!(
            PdsType::from_u8(u.pds_type),
            Some(PdsType::RodRequest | PdsType::RodCcRequest)
        ) {
            self.rod_requests += 1;
        }
        let Some(q) = super::psn(u) else { return };
        self.covered.start_at(q);
        if retx {
            self.retransmissions += 1;
            self.retrans_payload += u64::from(rec.payload_len);
            let nacked = self.nack_pending.remove(&q);
            if !nacked {
                self.timeout_resends += 1;
                if let Some(&(prev, _)) = self.sent.get(&q) {
                    self.resend_wait.add(now.saturating_sub(prev));
                }
            }
        }
        if self.sent.len() >= WINDOW && !self.sent.contains_key(&q) {
            self.sent.pop_first();
        }
        let acked = Sack::covers(&self.covered, q);
        self.sent.insert(q, (now, acked));
        let d = Data {
            ts: now,
            psn: q,
            consumes: (1, 1),
            retx,
            never_resent: false,
            nacked: None,
        };
        out.clear();
        match self.seq.as_mut() {
            None => self.seq = Some(Sack::start(&d)),
            Some(s) => s.data(&d, &self.covered, out),
        }
        self.judged(out);
    }

    /// An ACK of this direction's data, seen at `now`.
    pub(super) fn acked(&mut self, now: u64, ack: &Ack, out: &mut Vec<Judgement>) {
        let before = self.covered.cumulative();
        let c = Sack::acknowledge(&mut self.covered, ack);
        // The first ACK covering each PSN sent: how long the answer took.
        let mut done: Vec<u32> = Vec::new();
        if before.is_none_or(|b| diff(c, b) > 0) {
            let lo = before.map_or(0, |b| b.wrapping_add(1));
            if lo <= c {
                done.extend(self.sent.range(lo..=c).map(|(&q, _)| q));
            } else {
                // Across the 32-bit wrap.
                done.extend(
                    self.sent
                        .range(lo..)
                        .chain(self.sent.range(..=c))
                        .map(|(&q, _)| q),
                );
            }
        }
        if let Ack::Selective { base, bitmap, .. } = *ack {
            let bits = (0..64u32).filter(|k| bitmap >> k & 1 == 1);
            done.extend(bits.map(|k| base.wrapping_add(k)));
        }
        for q in done {
            if let Some((t, acked)) = self.sent.get_mut(&q)
                && !*acked
            {
                *acked = true;
                self.ack_delay.add(now.saturating_sub(*t));
            }
        }
        out.clear();
        if let Some(s) = self.seq.as_mut() {
            s.ack(now, &self.covered, out);
        }
        self.judged(out);
    }

    /// A NACK naming `psn` of this direction's data.
    pub(super) fn nacked(&mut self, n: &Nack) {
        self.last_nack_ts = Some(n.ts);
        if bounded_insert(&mut self.nacked_psns, n.psn) {
            self.nacked += 1;
        }
        bounded_insert(&mut self.nack_pending, n.psn);
        if let Some(s) = self.seq.as_mut() {
            s.nack(n);
        }
    }

    /// Its payload bytes less those resent.
    pub fn goodput_bytes(&self) -> u64 {
        self.payload_bytes.saturating_sub(self.retrans_payload)
    }

    /// A copy without its windows (what the findings read of a retired one).
    pub(super) fn shed(&self) -> Pdc {
        Pdc {
            seq: None,
            sent: BTreeMap::new(),
            nack_pending: BTreeSet::new(),
            nacked_psns: BTreeSet::new(),
            covered: Covered::default(),
            ..self.clone()
        }
    }

    /// Settles what is still missing at `end`.
    pub(super) fn settle(&mut self, end: u64, out: &mut Vec<Judgement>) {
        out.clear();
        if let Some(s) = self.seq.as_mut() {
            s.finish(end, &self.covered, out);
        }
        self.judged(out);
    }
}

impl UetTotals {
    /// Adds direction `p`'s counts (`retrans_rate` is the caller's to set).
    pub fn add(&mut self, p: &Pdc) {
        self.pdc_directions += 1;
        self.request_directions += u64::from(p.requests > 0);
        self.data_packets += p.requests;
        self.payload_bytes += p.payload_bytes;
        self.retrans_packets += p.retransmissions;
        self.spurious_retrans += p.spurious;
        self.timeout_resends += p.timeout_resends;
        self.acks += p.acks;
        self.nacks += p.nacks;
        let n = &p.nacks_by;
        self.nacks_trimmed += n.trimmed;
        self.nacks_no_pdc += n.no_pdc;
        self.nacks_no_pkt_buffer += n.no_pkt_buffer;
        self.nacks_psn_oor_window += n.psn_oor_window;
        self.nacks_no_resource += n.no_resource;
        self.nacks_other += n.other;
        self.delivered += p.covered.delivered;
        self.sacked += p.covered.sacked_psns;
        self.ce += p.ce;
        self.acks_ecn += p.acks_ecn;
    }

    /// These sums with `more` directions added.
    pub fn with<'a>(&self, more: impl IntoIterator<Item = &'a Pdc>) -> UetTotals {
        let mut t = self.clone();
        for p in more {
            t.add(p);
        }
        t
    }
}

#[cfg(test)]
#[path = "pdc_tests.rs"]
pub(crate) mod tests;
