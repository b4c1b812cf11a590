//! The ground truth of a UET run (docs/synth-truth.md, "UET"): per tap and
//! PDC what the tap's records show — counted from the model's own record of
//! each frame (which send it is, why it was resent, whether a switch
//! trimmed it, whether the target already held it) — and per PDC what the
//! model's ends counted.

use super::UetLog;
use super::frame::{Pdu, UetSpec};
use super::pdc::{PdcSummary, Reason};
use crate::synth::model::bridge::{CaptureOptions, EPOCH_NS};
use crate::synth::model::fabric::Run;
use crate::synth::model::truth::CaptureTruth;
use rocescope_common::proto::ip::ECN_CE;
use rocescope_common::wire::uet::NackCode;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

/// One entropy value of a PDC at a tap: its request records.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EntropyTruth {
    pub entropy: u16,
    pub packets: u64,
    pub payload_bytes: u64,
    pub trimmed: u64,
    pub retransmissions: u64,
}

/// One PDC at one tap.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PdcTapTruth {
    pub tap: usize,
    pub iface: String,
    pub pdc: usize,
    pub src_ip: Option<Ipv4Addr>,
    pub dst_ip: Option<Ipv4Addr>,
    /// The initiator's PDC id (its requests' SPDCID) and the target's.
    pub spdcid: u16,
    pub dpdcid: u16,
    pub requests: u64,
    pub payload_bytes: u64,
    /// Request records without RETX, and with it.
    pub first_transmissions: u64,
    pub retransmissions: u64,
    /// Of `retransmissions`, by the initiator's reason (the model's).
    pub retrans_nack: u64,
    pub retrans_timeout: u64,
    /// Request records a switch had trimmed before the tap.
    pub trimmed: u64,
    pub ce: u64,
    pub acks: u64,
    pub acks_ecn: u64,
    pub nacks: u64,
    pub nacks_by_code: BTreeMap<String, u64>,
    /// Distinct PSNs the ACKs recorded here cover (cumulatively or by a
    /// SACK bit), and of them those a SACK bit covered before any ACK
    /// recorded here covered them cumulatively.
    pub delivered: u64,
    pub sacked: u64,
    /// Distinct PSNs the NACKs recorded here name.
    pub nacked: u64,
    /// RETX records of a PSN an ACK recorded here before had covered.
    pub spurious: u64,
    /// RETX records of a packet the target already held whole when the
    /// resend left the initiator (the model's; a resend may pass the tap
    /// before the ACK that would show it).
    pub model_spurious: u64,
    pub entropies: Vec<EntropyTruth>,
    /// Frames of the PDC (requests, ACKs, NACKs) the mirror should have
    /// recorded here and dropped (the tap's `drop`).
    #[serde(skip_serializing_if = "crate::synth::model::is_zero")]
    pub tap_dropped: u64,
    /// Second copies of the PDC's frames the mirror recorded here (the
    /// tap's `duplicate`), and of them copies of requests; every other
    /// count of the PDC leaves them out.
    #[serde(skip_serializing_if = "crate::synth::model::is_zero")]
    pub tap_duplicates: u64,
    #[serde(skip_serializing_if = "crate::synth::model::is_zero")]
    pub tap_duplicate_requests: u64,
    /// PSNs the capture missed here: the tap recorded a higher PSN of the
    /// PDC before any record of it (after its first request record), the
    /// mirror dropped a send of it here, and an ACK recorded here covered
    /// it before any request of it was recorded here.
    #[serde(skip_serializing_if = "crate::synth::model::is_zero")]
    pub capture_lost: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct UetTapTruth {
    pub tap: usize,
    pub iface: String,
    pub frames: u64,
    pub requests: u64,
    pub acks: u64,
    pub nacks: u64,
    /// The recorded frames' lengths on the wire (FCS included).
    pub bytes: u64,
    pub trimmed: u64,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    /// Speed of the tapped link.
    pub link_gbps: f64,
    /// Frames the mirror should have recorded and dropped, and second
    /// copies it recorded (counted in the records above too).
    #[serde(skip_serializing_if = "crate::synth::model::is_zero")]
    pub tap_dropped: u64,
    #[serde(skip_serializing_if = "crate::synth::model::is_zero")]
    pub tap_duplicates: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct UetFabricTruth {
    pub events: u64,
    pub end_ns: u64,
    /// Requests the switches trimmed, in all and per egress port.
    pub trimmed: u64,
    pub trimmed_at: BTreeMap<String, u64>,
    pub switch_drops: u64,
    pub link_drops: u64,
    /// Frames that took the slower path (`reorder` impairments).
    pub delayed: u64,
    pub timeouts: u64,
    pub truncated: bool,
}

/// A UET run's `NAME.truth.json`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct UetTruth {
    pub scenario: String,
    pub seed: u64,
    pub transport: &'static str,
    pub capture: CaptureTruth,
    /// The initiators' retransmit timeout (`nic.min_rto_ns`).
    pub rto_ns: u64,
    pub taps: Vec<UetTapTruth>,
    pub pdcs: Vec<PdcTapTruth>,
    pub connections: Vec<PdcSummary>,
    pub fabric: UetFabricTruth,
}

/// A NACK code as the specification names it.
pub fn nack_name(code: u8) -> String {
    match NackCode::from_u8(code) {
        Some(NackCode::Trimmed) => "TRIMMED".into(),
        Some(NackCode::TrimmedLasthop) => "TRIMMED_LASTHOP".into(),
        Some(NackCode::TrimmedAck) => "TRIMMED_ACK".into(),
        Some(NackCode::NoPdcAvail) => "NO_PDC_AVAIL".into(),
        Some(NackCode::NoPktBuffer) => "NO_PKT_BUFFER".into(),
        Some(NackCode::PsnOorWindow) => "PSN_OOR_WINDOW".into(),
        _ => format!("0x{code:02X}"),
    }
}

/// Packet indices an ACK covers, from index `from` on: `(index, by a
/// SACK bit)` (the cumulative PSN covers every index up to its own).
pub fn ack_covers(
    start_psn: u32,
    from: i64,
    cack_psn: u32,
    sack_offset: u16,
    bitmap: u64,
) -> Vec<(i64, bool)> {
    let index = |psn: u32| i64::from(psn.wrapping_sub(start_psn) as i32);
    let mut v: Vec<(i64, bool)> = (from.max(0)..=index(cack_psn))
        .map(|i| (i, false))
        .collect();
    let base = cack_psn.wrapping_add(u32::from(sack_offset));
    for bit in 0..64u32 {
        if bitmap & (1 << bit) != 0 {
            v.push((index(base.wrapping_add(bit)), true));
        }
    }
    v
}

#[derive(Default)]
struct Seen {
    covered: BTreeSet<i64>,
    /// Indices below this are covered (the highest cumulative ACK seen);
    /// `None` before the first ACK recorded here.
    cumulative: Option<i64>,
    /// The lowest index of the requests recorded before the first ACK:
    /// where that ACK's cumulative coverage starts, as the tap shows it.
    floor: Option<i64>,
    nacked: BTreeSet<u32>,
    entropies: BTreeMap<u16, EntropyTruth>,
    /// Indices of requests recorded here, the highest of them, and those
    /// missing (a higher one recorded first).
    recorded: BTreeSet<i64>,
    highest: Option<i64>,
    missing: BTreeSet<i64>,
    /// Missing indices an ACK covered before any record of them.
    covered_unseen: BTreeSet<i64>,
}

impl UetTruth {
    /// The truth of the capture `bridge::write_capture` writes of `run`
    /// (a UET run: `log` is its record, `super::log_of`) with `opts`.
    pub fn of_capture(run: &Run, log: &UetLog, opts: &CaptureOptions) -> UetTruth {
        let chosen: Vec<usize> = match &opts.taps {
            Some(t) => t.iter().copied().filter(|&t| t < run.taps.len()).collect(),
            None => (0..run.taps.len()).collect(),
        };
        let mut capture = CaptureTruth {
            taps: chosen.clone(),
            epoch_ns: EPOCH_NS,
            snaplen: opts.snaplen,
            ..CaptureTruth::default()
        };
        let mut taps: Vec<UetTapTruth> = run
            .taps
            .iter()
            .enumerate()
            .map(|(tap, t)| UetTapTruth {
                tap,
                iface: t.name.clone(),
                link_gbps: t.link_gbps,
                ..UetTapTruth::default()
            })
            .collect();
        let mut pdcs: BTreeMap<(usize, usize), (PdcTapTruth, Seen)> = BTreeMap::new();
        // The requests each tap's mirror dropped, by tap, PDC and index.
        let mut dropped: BTreeSet<(usize, usize, u64)> = BTreeSet::new();
        for d in &run.tap_drops {
            taps[d.tap].tap_dropped += 1;
            if let Some(q) = d.meta.flow {
                pdc_entry(&mut pdcs, run, log, d.tap, q).0.tap_dropped += 1;
                if let Some(idx) = d.meta.index {
                    dropped.insert((d.tap, q, idx));
                }
            }
        }
        for (i, f) in run.frames.iter().enumerate() {
            let Some(u) = super::frame::of(&f.frame) else {
                continue;
            };
            let Some(m) = run.meta.get(i).filter(|m| m.flow.is_some()) else {
                continue;
            };
            let q = m.flow.unwrap_or_default();
            let tt = &mut taps[f.tap];
            if tt.frames == 0 {
                tt.first_ts_ns = f.ts_ns;
            }
            tt.frames += 1;
            tt.last_ts_ns = f.ts_ns;
            tt.bytes += u64::from(u.frame_len());
            if chosen.contains(&f.tap) {
                if capture.frames == 0 {
                    capture.first_ts_ns = f.ts_ns;
                }
                capture.frames += 1;
                capture.last_ts_ns = f.ts_ns;
            }
            count_record(tt, u);
            let (pt, seen) = pdc_entry(&mut pdcs, run, log, f.tap, q);
            if m.copy {
                tt.tap_duplicates += 1;
                pt.tap_duplicates += 1;
                pt.tap_duplicate_requests += u64::from(u.request().is_some());
                continue;
            }
            let send = log.frame_sends.get(i).copied().flatten();
            count(
                pt,
                seen,
                u,
                send.map(|k| &log.sends[k]),
                log.pdcs[q].start_psn,
            );
        }
        capture.duration_ns = capture.last_ts_ns - capture.first_ts_ns;
        let pdcs = pdcs
            .into_values()
            .map(|(mut pt, seen)| {
                pt.delivered = seen.covered.len() as u64;
                let dropped_here = |idx: &&i64| {
                    u64::try_from(**idx).is_ok_and(|i| dropped.contains(&(pt.tap, pt.pdc, i)))
                };
                pt.capture_lost = seen.covered_unseen.iter().filter(dropped_here).count() as u64;
                pt.nacked = seen.nacked.len() as u64;
                pt.entropies = seen.entropies.into_values().collect();
                pt
            })
            .collect();
        let mut trimmed_at = BTreeMap::new();
        for t in &log.trims {
            *trimmed_at
                .entry(log.port_names[t.port].clone())
                .or_insert(0) += 1;
        }
        UetTruth {
            scenario: run.scenario.clone(),
            seed: run.seed,
            transport: "uet",
            capture,
            rto_ns: log.rto_ns,
            taps,
            pdcs,
            connections: log.pdcs.clone(),
            fabric: UetFabricTruth {
                events: run.fabric.events,
                end_ns: run.fabric.end_ns,
                trimmed: log.trims.len() as u64,
                trimmed_at,
                switch_drops: run.fabric.switch_drops,
                link_drops: run.fabric.link_drops,
                delayed: run.fabric.reordered,
                timeouts: log.timeouts,
                truncated: run.fabric.truncated,
            },
        }
    }
}

/// PDC `q` at tap `tap`, made when new.
fn pdc_entry<'a>(
    pdcs: &'a mut BTreeMap<(usize, usize), (PdcTapTruth, Seen)>,
    run: &Run,
    log: &UetLog,
    tap: usize,
    q: usize,
) -> &'a mut (PdcTapTruth, Seen) {
    let s = &log.pdcs[q];
    pdcs.entry((tap, q)).or_insert_with(|| {
        let pt = PdcTapTruth {
            tap,
            iface: run.taps[tap].name.clone(),
            pdc: q,
            src_ip: s.src_ip,
            dst_ip: s.dst_ip,
            spdcid: s.spdcid,
            dpdcid: s.dpdcid,
            ..PdcTapTruth::default()
        };
        (pt, Seen::default())
    })
}

/// One record at tap `tt` (a mirror's copy too: the tap's counts are of
/// records).
fn count_record(tt: &mut UetTapTruth, u: &UetSpec) {
    match &u.pdu {
        Pdu::Request(_) => {
            tt.requests += 1;
            tt.trimmed += u64::from(u.trimmed);
        }
        Pdu::Ack(_) => tt.acks += 1,
        Pdu::Nack(_) => tt.nacks += 1,
    }
}

/// One record of PDC `pt` at its tap (not a mirror's copy).
fn count(
    pt: &mut PdcTapTruth,
    seen: &mut Seen,
    u: &UetSpec,
    send: Option<&super::SendEvent>,
    start_psn: u32,
) {
    let index = |psn: u32| i64::from(psn.wrapping_sub(start_psn) as i32);
    match &u.pdu {
        Pdu::Request(r) => {
            seen.request(index(r.psn));
            pt.requests += 1;
            pt.payload_bytes += u64::from(u.payload_len);
            pt.trimmed += u64::from(u.trimmed);
            pt.ce += u64::from(u.ecn == ECN_CE);
            let e = seen.entropies.entry(u.entropy).or_insert(EntropyTruth {
                entropy: u.entropy,
                ..EntropyTruth::default()
            });
            e.packets += 1;
            e.payload_bytes += u64::from(u.payload_len);
            e.trimmed += u64::from(u.trimmed);
            if !r.retx {
                pt.first_transmissions += 1;
                return;
            }
            e.retransmissions += 1;
            pt.retransmissions += 1;
            pt.spurious += u64::from(seen.covers(index(r.psn)));
            if let Some(s) = send {
                pt.model_spurious += u64::from(s.spurious);
                match s.reason {
                    Some(Reason::Nack(_)) => pt.retrans_nack += 1,
                    Some(Reason::Timeout) => pt.retrans_timeout += 1,
                    None => {}
                }
            }
        }
        Pdu::Ack(a) => {
            pt.acks += 1;
            pt.acks_ecn += u64::from(a.ecn_marked);
            // Before any ACK and any request recorded here, where the
            // coverage starts is unknown: it counts from this ACK on.
            let after = index(a.cack_psn) + 1;
            let from = seen.cumulative.or(seen.floor).unwrap_or(after);
            seen.cumulative = Some(from.max(after));
            let covers = ack_covers(
                start_psn,
                from,
                a.cack_psn,
                a.sack_psn_offset,
                a.sack_bitmap,
            );
            for (idx, by_sack) in covers {
                if seen.covered.insert(idx) && by_sack {
                    pt.sacked += 1;
                }
                if seen.missing.remove(&idx) {
                    seen.covered_unseen.insert(idx);
                }
            }
        }
        Pdu::Nack(n) => {
            pt.nacks += 1;
            *pt.nacks_by_code.entry(nack_name(n.code)).or_insert(0) += 1;
            seen.nacked.insert(n.psn);
        }
    }
}

impl Seen {
    /// Whether an ACK recorded here so far covered index `idx`: a SACK bit,
    /// or a cumulative PSN at or past it (which covers it wherever the
    /// counting of `delivered` starts).
    fn covers(&self, idx: i64) -> bool {
        self.covered.contains(&idx) || self.cumulative.is_some_and(|c| idx < c)
    }

    /// A request of index `idx` recorded: before the first ACK it may lower
    /// where that ACK's coverage starts; past the highest recorded it makes
    /// the indices between missing (or, an ACK recorded here having covered
    /// one already, missed by the capture); a missing one recorded is no
    /// longer.
    fn request(&mut self, idx: i64) {
        if self.cumulative.is_none() {
            self.floor = Some(self.floor.map_or(idx, |f| f.min(idx)));
        }
        if let Some(h) = self.highest {
            for i in (h + 1..idx).filter(|i| !self.recorded.contains(i)) {
                if self.covers(i) {
                    self.covered_unseen.insert(i);
                } else {
                    self.missing.insert(i);
                }
            }
        }
        self.highest = Some(self.highest.map_or(idx, |h| h.max(idx)));
        self.recorded.insert(idx);
        self.missing.remove(&idx);
    }
}
