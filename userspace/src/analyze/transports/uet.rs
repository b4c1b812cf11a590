//! UET's part of the analyzer (docs/analysis.md, "UET: PDCs", "UET:
//! spraying and trimming"), which the registry `super` calls: its state
//! (the PDC directions and the paths per entropy value), a record's
//! dispatch, each PDC direction's row of `flows.parquet`, made the way a
//! QP's is, so the shared code that writes, retires and splits rows takes
//! both alike; its retirement and interim rows; UET's totals over them
//! (`summary.json`'s `uet`); at the end of the run its rows, findings and
//! the PSNs the capture lost; what a UET frame is compared on as a mirror
//! copy (`copy_fields`); and UET's part of a sharded run's merge
//! (`Analysis::add_transports`).

use super::super::dups::{self, CopyFields};
use super::super::findings::{self, Diagnosis};
use super::super::flows::{idle_past, next_boundary};
use super::super::rows::{FlowRow, Summary, TransportInput, Verdict, gbps, ratio};
use super::super::{Analysis, Analyzer, Config, Sink};
use crate::transport::uet::paths::Paths;
use crate::transport::uet::{Pdc, PdcValues, Pdcs, UetTotals};
use rocescope_common::PacketRecord;
use rocescope_common::wire::uet::{UetView, uet_present};

/// UET's state: its PDC directions and its paths.
pub(super) struct Uet {
    /// The PDC directions (`crate::transport::uet::Pdcs`).
    pub(super) pdcs: Pdcs,
    /// Spraying and trimming per tap, PDC direction and entropy value.
    pub(super) paths: Paths,
}

impl Uet {
    pub(super) fn new(config: &Config) -> Uet {
        Uet {
            pdcs: Pdcs::new(config.flow_active_ns, config.recognition),
            paths: Paths::default(),
        }
    }
}

impl Pdc {
    /// The row of a UET PDC direction (docs/analysis.md, "UET: PDCs"):
    /// the neutral columns filled as a QP's are, the QP's own left at
    /// their defaults (null in the table: `tables::analysis`).
    pub(in crate::analyze) fn flow_row(&self) -> FlowRow {
        let goodput = self.goodput_bytes();
        FlowRow {
            flow_id: self.id,
            iface: self.key.iface,
            src_ip: self.key.src_ip,
            dst_ip: self.key.dst_ip,
            pcp: self.pcp,
            dscp: Some(self.dscp),
            first_ts_ns: self.first_ts,
            last_ts_ns: self.last_ts,
            packets: self.packets,
            bytes: self.bytes,
            data_packets: self.requests,
            payload_bytes: self.payload_bytes,
            retrans_packets: self.retransmissions,
            retrans_rate: ratio(self.retransmissions, self.requests),
            spurious_retrans: self.spurious,
            gaps: self.gaps,
            acks: self.acks,
            naks: self.nacks,
            ce: self.ce,
            gbps: gbps(self.bytes, self.first_ts, self.last_ts),
            goodput_gbps: gbps(goodput, self.first_ts, self.last_ts),
            max_idle_us: self.max_idle_ns as f64 / 1000.0,
            gap_late: self.gap[0],
            gap_lost_before_tap: self.gap[1],
            gap_nak_lost: self.gap[2],
            gap_capture_lost: self.gap[3],
            mirror_copies: self.mirror_copies,
            gap_unresolved: self.gap[4],
            late_max_us: self.late_max_ns.map(|n| n as f64 / 1000.0),
            late_max_psns: self.late_max_psns,
            transport: super::super::rows::TransportRow {
                uet: Some(Box::new(PdcValues::of(self))),
            },
            ..FlowRow::default()
        }
    }
}

impl Analyzer {
    /// A UET record: per PDC direction (docs/analysis.md, "UET: PDCs"),
    /// and per entropy value ("UET: spraying and trimming").
    pub(super) fn push_uet(&mut self, rec: &PacketRecord) -> Verdict {
        // Mirror copies first, as a QP's are: counted, never analysed
        // (docs/analysis.md, "Mirror duplicates").
        let pdcs = &mut self.transports.uet.pdcs;
        let last_nack = pdcs.last_nack(rec);
        let owner = dups::Owner::Transport(pdcs.id_of(rec, &mut self.ids), copy_fields);
        self.note_live();
        if self.dups.is_copy(rec, owner, last_nack) {
            self.transports.uet.pdcs.mirror_copy(rec);
            self.frames.mirror_copies += 1;
            return Verdict {
                mirror_copy: true,
                ..Verdict::default()
            };
        }
        self.transports.uet.pdcs.record(rec, &mut self.ids);
        let idle = self.config.flow_idle_ns;
        self.transports.uet.paths.record(rec, self.last_ts, idle);
        Verdict::default()
    }

    /// The interim rows of the PDC directions whose `--flow-active`
    /// interval ended by `now`, by the QPs' rule.
    pub(super) fn uet_intervals(&mut self, now: u64, sink: &mut impl Sink) {
        let active = self.config.flow_active_ns;
        while let Some((boundary, p)) = self.transports.uet.pdcs.interval_due(now) {
            let (id, key, goodput) = (p.id, p.key, p.goodput_bytes());
            let life = p.flow_row();
            if self
                .interim_row(id, goodput, life, boundary, sink)
                .is_some()
            {
                self.retired.interim_rows += 1;
            }
            let next = next_boundary(boundary, now, active);
            self.transports.uet.pdcs.next_interval(id, key, next);
        }
    }

    /// Retires the PDC directions idle for longer than `--flow-idle` at
    /// `now`, by the QPs' rule: their rows to the sink.
    pub(super) fn retire_uet(&mut self, now: u64, sink: &mut impl Sink) {
        let idle = self.config.flow_idle_ns;
        for p in self
            .transports
            .uet
            .pdcs
            .retire_idle(now, idle, |last| idle_past(last, idle, now))
        {
            let (id, goodput) = (p.id, p.goodput_bytes());
            sink.flow(&self.expiry.intervals.row_since(id, goodput, p.flow_row()));
            self.expiry.intervals.forget(p.id);
        }
    }

    /// UET's totals (`summary.json`'s `uet`): the retired PDC directions'
    /// sums and `live`'s; none without a UET record, so a RoCE run's
    /// summary reads as before.
    pub(super) fn uet_totals<'a>(
        &self,
        live: impl IntoIterator<Item = &'a Pdc>,
    ) -> Option<UetTotals> {
        (self.frames.transports.uet > 0).then(|| {
            let mut t = self.transports.uet.pdcs.retired.with(live);
            t.retrans_rate = ratio(t.retrans_packets, t.data_packets);
            t
        })
    }

    /// The PDC directions retired before the end (`retirement`'s
    /// `retired_pdc_directions`): present when the run had UET records.
    pub(super) fn uet_retired(&self) -> Option<u64> {
        (self.frames.transports.uet > 0).then_some(self.transports.uet.pdcs.retired.pdc_directions)
    }

    /// What the findings read of UET: its paths, and its PDC directions
    /// kept as evidence then `live`.
    pub(super) fn uet_input<'a>(
        &'a self,
        live: impl IntoIterator<Item = &'a Pdc>,
    ) -> TransportInput<'a> {
        let pdcs = &self.transports.uet.pdcs;
        TransportInput {
            uet: vec![&self.transports.uet.paths],
            pdcs: pdcs.kept.iter().chain(live).collect(),
        }
    }

    /// The end of the run: the live PDC directions settled (returned), and
    /// the PSNs the capture lost of every PDC direction added to their
    /// taps' (`capture_lost`, by interface index).
    pub(super) fn end_uet(&mut self, last: u64, capture_lost: &mut [u64]) -> Vec<Pdc> {
        let pdcs = self.transports.uet.pdcs.finish(last);
        let retired = &self.transports.uet.pdcs.retired_capture_lost;
        let lost = retired.iter().map(|(&i, &n)| (i, n));
        for (iface, n) in lost.chain(pdcs.iter().map(|p| (p.key.iface, p.gap[3]))) {
            if let Some(c) = capture_lost.get_mut(usize::from(iface)) {
                *c += n;
            }
        }
        pdcs
    }

    /// The directions UET's PDC findings read: those kept as evidence
    /// (taken), then `live` (those live at the end).
    pub(super) fn uet_kept(&mut self, live: &[Pdc]) -> Vec<Pdc> {
        let mut evidence = std::mem::take(&mut self.transports.uet.pdcs.kept);
        evidence.extend(live.iter().cloned());
        evidence
    }

    /// The rows of the PDC directions live at the end (each since its last
    /// interim row).
    pub(super) fn uet_rows<'a>(&'a self, live: &'a [Pdc]) -> impl Iterator<Item = FlowRow> + 'a {
        let intervals = &self.expiry.intervals;
        live.iter()
            .map(|p| intervals.row_since(p.id, p.goodput_bytes(), p.flow_row()))
    }
}

/// UET's PDC findings over `evidence` ([`Analyzer::uet_kept`], one
/// analyzer's or several), added to `diagnoses` and ranked with them.
pub(super) fn findings(evidence: &[Pdc], summary: &Summary, diagnoses: &mut Vec<Diagnosis>) {
    if !evidence.is_empty() {
        let requests = summary
            .transports
            .uet
            .as_ref()
            .map_or(0, |u| u.data_packets);
        findings::transports::uet::pdc::findings(evidence, requests, diagnoses);
        findings::transports::uet::pdc::name_rows(evidence, diagnoses);
        findings::rank_diagnoses(diagnoses);
    }
}

/// What a UET frame is compared on as a mirror copy (`dups::Owner::Transport`):
/// its PDS type, flags and PSN (an ACK's cumulative PSN), and in place of
/// the ICRC it has none of, [`digest`].
pub(in crate::analyze) fn copy_fields(rec: &PacketRecord) -> CopyFields {
    let u = rec.uet();
    CopyFields {
        opcode: u.pds_type,
        flags: u.pds_flags,
        psn: if u.present & uet_present::ACK != 0 {
            u.cack_psn
        } else {
            u.psn
        },
        digest: digest(u),
    }
}

/// What tells two UET frames of one PDC direction with the same type,
/// flags, PSN and length apart, in 32 bits: every other field the walk
/// read (entropy, the other end's PDC id, the ACK's PSNs and SACK bitmap,
/// CC state, NACK code, packet and message ids, SES opcode …), folded by
/// FNV-1a. Two different frames alike in all the key's other fields
/// within one window collide once in 2^32.
fn digest(u: &UetView) -> u32 {
    let words = [
        u64::from(u.present),
        u64::from(u.next_header) | u64::from(u.nack_code) << 8 | u64::from(u.cc_type) << 16,
        u64::from(u.ccc_id) | u64::from(u.ses_opcode) << 8 | u64::from(u.ses_flags) << 16,
        u64::from(u.entropy) | u64::from(u.dpdcid) << 16 | u64::from(u.message_id) << 32,
        u64::from(u.psn) | u64::from(u.ack_psn) << 32,
        u64::from(u.sack_base) | u64::from(u.job_id) << 32,
        u.sack_bitmap,
        u.cc_state,
        u64::from(u.credit_target) | u64::from(u.pkt_id) << 32,
    ];
    let mut h: u32 = 0x811c_9dc5;
    for b in words.iter().flat_map(|w| w.to_le_bytes()) {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h
}

/// UET's part of another analyzer's analysis of the same run added to
/// `to` (a sharded run, `crate::shard::whole`): its totals added, the rate
/// taken again from the sums; its `uet_paths` rows joined, in key order as
/// one analyzer's live rows are.
pub(super) fn add(to: &mut Analysis, more: &Analysis) {
    add_summary_totals(&mut to.summary.transports.uet, &more.summary.transports.uet);
    let paths = &mut to.transport_tables.uet_paths;
    paths.extend(more.transport_tables.uet_paths.iter().cloned());
    paths.sort_by_key(|r| r.key);
}

/// UET's totals of another analyzer of the same run added (a sharded
/// run's end, or its running findings: `crate::shard::running`), the rate
/// taken again from the sums.
pub(super) fn add_summary_totals(to: &mut Option<UetTotals>, more: &Option<UetTotals>) {
    *to = match (to.take(), more) {
        (Some(mut t), Some(u)) => {
            add_totals(&mut t, u);
            t.retrans_rate = ratio(t.retrans_packets, t.data_packets);
            Some(t)
        }
        (t, u) => t.or_else(|| u.clone()),
    };
}

/// `to += more`, field by field (the rate aside).
fn add_totals(to: &mut UetTotals, more: &UetTotals) {
    macro_rules! add {
        ($($f:ident),*) => { $( to.$f += more.$f; )* };
    }
    add!(
        pdc_directions,
        request_directions,
        data_packets,
        payload_bytes,
        retrans_packets,
        spurious_retrans,
        timeout_resends,
        acks,
        nacks,
        nacks_trimmed,
        nacks_no_pdc,
        nacks_no_pkt_buffer,
        nacks_psn_oor_window,
        nacks_no_resource,
        nacks_other,
        delivered,
        sacked,
        ce,
        acks_ecn
    );
}
