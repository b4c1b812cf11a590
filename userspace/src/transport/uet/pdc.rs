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
use rocescope_common::wire::Recognition;
use rocescope_common::wire::uet::pds::field as pf;
use rocescope_common::wire::uet::uet_present as present;
use rocescope_common::wire::uet::{NackCode as Code, PdsType};
use rocescope_common::{PacketRecord, flags};

use super::sack::{Covered, Sack, WINDOW, diff};
use super::{Carrier, PdcKey, UetTotals};
use crate::transport::FlowIds;
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
    fn add(&mut self, code: u8) {
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
    interval_end: u64,
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
    fn new(key: PdcKey, id: u32, rec: &PacketRecord, carrier: Carrier) -> Pdc {
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

    fn frame(&mut self, rec: &PacketRecord) {
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
    fn request(&mut self, rec: &PacketRecord, out: &mut Vec<Judgement>) {
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
    fn acked(&mut self, now: u64, ack: &Ack, out: &mut Vec<Judgement>) {
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
    fn nacked(&mut self, n: &Nack) {
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
    fn shed(&self) -> Pdc {
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
    fn settle(&mut self, end: u64, out: &mut Vec<Judgement>) {
        out.clear();
        if let Some(s) = self.seq.as_mut() {
            s.finish(end, &self.covered, out);
        }
        self.judged(out);
    }
}

/// Retired PDC directions kept as the findings' evidence (those with
/// spurious resends, NACKs, PSNs missed by the capture or mirror copies),
/// at most this many; the rest are counted.
pub const KEPT: usize = 64;

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

/// Every PDC direction live at the taps.
#[derive(Debug, Default)]
pub struct Pdcs {
    live: BTreeMap<PdcKey, Pdc>,
    /// Retired directions the findings may name (at most [`KEPT`]), their
    /// windows shed.
    pub kept: Vec<Pdc>,
    /// Retired directions with evidence beyond [`KEPT`].
    pub kept_omitted: u64,
    /// Retired directions' PSNs missed by the capture, per tap (interface
    /// index): `taps[].capture_lost` adds the live ones' to them.
    pub retired_capture_lost: BTreeMap<u16, u64>,
    /// Every retired direction's counts, summed as it retires
    /// (`summary.json`'s `uet` adds the live ones to them).
    pub retired: UetTotals,
    /// When the live directions are next looked at for retirement.
    sweep_at: u64,
    judged: Vec<Judgement>,
    /// `--flow-active` (0: no interim rows), and each live direction's
    /// current interval end, earliest first: `(end, id, key)`.
    active_ns: u64,
    intervals: BTreeSet<(u64, u32, PdcKey)>,
    /// No interval ends and no sweep is due before this time (a lower
    /// bound made by [`Self::settle_wake`]; a new direction sets it to 0).
    wake: u64,
    /// Where this run recognises UET (a new direction's [`Carrier`]).
    recognition: Recognition,
}

impl Pdcs {
    /// The direction `key`, made (with the next of `ids`) when new.
    fn get(&mut self, key: PdcKey, rec: &PacketRecord, ids: &mut FlowIds) -> &mut Pdc {
        let (active, intervals) = (self.active_ns, &mut self.intervals);
        let (reg, wake) = (&self.recognition, &mut self.wake);
        self.live.entry(key).or_insert_with(|| {
            *wake = 0;
            let mut p = Pdc::new(key, ids.take(), rec, Carrier::of(rec, reg));
            if active > 0 {
                p.interval_end = rec.ts_ns.saturating_add(active);
                intervals.insert((p.interval_end, p.id, key));
            }
            p
        })
    }

    /// Directions write interim rows every `active_ns` of capture time
    /// (`--flow-active`, docs/analysis.md "Retirement"); UET is recognised
    /// by `recognition` (`--udp-port`, `--ip-proto`).
    pub fn new(active_ns: u64, recognition: Recognition) -> Pdcs {
        Pdcs {
            active_ns,
            recognition,
            ..Pdcs::default()
        }
    }

    /// Before this time no direction's interval ends and no sweep is due:
    /// the caller need not look (see [`Self::interval_due`],
    /// [`Self::retire_idle`]).
    pub fn wake(&self) -> u64 {
        self.wake
    }

    /// Makes [`Self::wake`] the earliest such time after the look.
    pub fn settle_wake(&mut self) {
        let end = self
            .intervals
            .first()
            .map_or(u64::MAX, |e| e.0.saturating_add(1));
        let sweep = if self.live.is_empty() {
            u64::MAX
        } else {
            self.sweep_at
        };
        self.wake = end.min(sweep);
    }

    /// How many directions are live.
    pub fn live_count(&self) -> usize {
        self.live.len()
    }

    /// The live direction whose interval ended first, before `now`: its
    /// interval end, taken out; [`Self::next_interval`] queues its next.
    pub fn interval_due(&mut self, now: u64) -> Option<(u64, &Pdc)> {
        let &(end, _, key) = self.intervals.first().filter(|e| e.0 < now)?;
        self.intervals.pop_first();
        self.live.get(&key).map(|p| (end, p))
    }

    /// Direction `id`'s next interval ends at `end`.
    pub fn next_interval(&mut self, id: u32, key: PdcKey, end: u64) {
        if let Some(p) = self.live.get_mut(&key).filter(|p| p.id == id) {
            p.interval_end = end;
            self.intervals.insert((end, id, key));
        }
    }

    /// When the last NACK of `rec`'s data passed the tap, `rec` a resend
    /// (RETX) of a live direction; `None` otherwise: a UET resend carries
    /// RETX, so a first send and its resend never look alike, and only a
    /// resend can be a legitimate fast repeat of another.
    pub fn last_nack(&self, rec: &PacketRecord) -> Option<u64> {
        if rec.uet().pds_flags & pf::FLAG_RETX == 0 {
            return None;
        }
        self.live.get(&PdcKey::of(rec)?)?.last_nack_ts
    }

    /// The flow id of `rec`'s PDC direction, made when new (`None`: no
    /// PDC id, see [`Self::record`]).
    pub fn id_of(&mut self, rec: &PacketRecord, ids: &mut FlowIds) -> Option<u32> {
        let key = PdcKey::of(rec)?;
        Some(self.get(key, rec, ids).id)
    }

    /// `rec` was a mirror copy: counted on its direction (live: its
    /// original made it so), never analysed.
    pub fn mirror_copy(&mut self, rec: &PacketRecord) {
        if let Some(p) = PdcKey::of(rec).and_then(|k| self.live.get_mut(&k)) {
            p.mirror_copies += 1;
        }
    }

    /// One UET record, in capture order; `ids` hands out flow ids.
    /// Records without a PDC id (RUDI, UUD, TSS-encrypted, cut) are left
    /// out (docs/analysis.md, "UET: PDCs").
    pub fn record(&mut self, rec: &PacketRecord, ids: &mut FlowIds) {
        let Some(key) = PdcKey::of(rec) else { return };
        let u = *rec.uet();
        let reverse = PdcKey::reverse_of(rec);
        let mut out = std::mem::take(&mut self.judged);
        let p = self.get(key, rec, ids);
        p.frame(rec);
        if let Some(r) = reverse {
            p.peer = Some(r.spdcid);
        }
        let kind = PdsType::from_u8(u.pds_type);
        match kind {
            Some(
                PdsType::RudRequest
                | PdsType::RodRequest
                | PdsType::RudCcRequest
                | PdsType::RodCcRequest,
            ) => p.request(rec, &mut out),
            Some(PdsType::Ack | PdsType::AckCc | PdsType::AckCcx)
                if u.present & present::ACK != 0 =>
            {
                p.acks += 1;
                p.acks_ecn += u64::from(u.pds_flags & pf::FLAG_M != 0);
                let ack = if u.present & present::SACK != 0 {
                    Ack::Selective {
                        cumulative: u.cack_psn,
                        base: u.sack_base,
                        bitmap: u.sack_bitmap,
                    }
                } else {
                    Ack::Cumulative(u.cack_psn)
                };
                if let Some(d) = reverse.and_then(|r| self.live.get_mut(&r)) {
                    d.peer.get_or_insert(key.spdcid);
                    d.acked(rec.ts_ns, &ack, &mut out);
                }
            }
            Some(PdsType::Nack | PdsType::NackCcx) if u.present & present::NACK != 0 => {
                p.nacks += 1;
                p.nacks_by.add(u.nack_code);
                if let (Some(psn), Some(d)) =
                    (super::psn(&u), reverse.and_then(|r| self.live.get_mut(&r)))
                {
                    d.peer.get_or_insert(key.spdcid);
                    d.nacked(&Nack {
                        ts: rec.ts_ns,
                        psn,
                        code: nack_code(u.nack_code),
                    });
                }
            }
            _ => {}
        }
        self.judged = out;
    }

    /// The directions idle at `now` by the analyzer's rule (`idle(last
    /// packet)`, `--flow-idle`), settled and taken out; looked at once per
    /// `idle_ns` of capture time, so a record costs nothing more.
    pub fn retire_idle(&mut self, now: u64, idle_ns: u64, idle: impl Fn(u64) -> bool) -> Vec<Pdc> {
        if now < self.sweep_at || self.live.is_empty() {
            return Vec::new();
        }
        self.sweep_at = now.saturating_add(idle_ns);
        let keys: Vec<PdcKey> = self
            .live
            .iter()
            .filter(|(_, p)| idle(p.last_ts))
            .map(|(k, _)| *k)
            .collect();
        let mut out = std::mem::take(&mut self.judged);
        let done: Vec<Pdc> = keys
            .into_iter()
            .filter_map(|k| self.live.remove(&k))
            .map(|mut p| {
                self.intervals.remove(&(p.interval_end, p.id, p.key));
                p.settle(now, &mut out);
                p
            })
            .collect();
        self.judged = out;
        for p in &done {
            self.retired.add(p);
            if p.gap[3] > 0 {
                *self.retired_capture_lost.entry(p.key.iface).or_default() += p.gap[3];
            }
            if p.spurious > 0 || p.nacks > 0 || p.gap[3] > 0 || p.mirror_copies > 0 {
                if self.kept.len() < KEPT {
                    self.kept.push(p.shed());
                } else {
                    self.kept_omitted += 1;
                }
            }
        }
        done
    }

    /// The end of input at `end`: every live direction, settled, by id.
    pub fn finish(&mut self, end: u64) -> Vec<Pdc> {
        let mut out = Vec::new();
        self.intervals.clear();
        let mut all: Vec<Pdc> = std::mem::take(&mut self.live).into_values().collect();
        for p in &mut all {
            p.settle(end, &mut out);
        }
        all.sort_unstable_by_key(|p| p.id);
        all
    }

    /// The live directions.
    pub fn live(&self) -> impl Iterator<Item = &Pdc> {
        self.live.values()
    }
}

#[cfg(test)]
#[path = "pdc_tests.rs"]
pub(crate) mod tests;
