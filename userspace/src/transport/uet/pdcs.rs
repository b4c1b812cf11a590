//! Every live UET PDC direction at the taps ([`Pdcs`]): a direction made
//! by its first packet, retired when idle (its counts summed, its evidence
//! kept up to [`KEPT`]), and its interim rows for `--flow-active`
//! (docs/analysis.md, "UET: PDCs").

use std::collections::{BTreeMap, BTreeSet};

use rocescope_common::PacketRecord;
use rocescope_common::wire::Recognition;
use rocescope_common::wire::uet::PdsType;
use rocescope_common::wire::uet::pds::field as pf;
use rocescope_common::wire::uet::uet_present as present;

use super::pdc::{Pdc, nack_code};
use super::{Carrier, PdcKey, UetTotals};
use crate::transport::FlowIds;
use crate::transport::sequencing::{Ack, Judgement, Nack};

/// Retired PDC directions kept as the findings' evidence (those with
/// spurious resends, NACKs, PSNs missed by the capture or mirror copies),
/// at most this many; the rest are counted.
pub const KEPT: usize = 64;

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
