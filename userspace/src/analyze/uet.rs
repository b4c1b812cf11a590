//! UET's PDC directions as the analyzer's flows (docs/analysis.md, "UET:
//! PDCs"): each one's row of `flows.parquet`, made the way a QP's is, so
//! the shared code that writes, retires and splits rows takes both alike;
//! and UET's totals over them (`summary.json`'s `uet`); what a UET frame
//! is compared on as a mirror copy (`copy_fields`); and UET's part of a
//! sharded run's merge (`Analysis::add_transports`).

use super::Analyzer;
use super::dups::CopyFields;
use super::rows::{FlowRow, gbps, ratio};
use crate::transport::uet::{Pdc, PdcValues, UetTotals};
use rocescope_common::PacketRecord;
use rocescope_common::wire::uet::{UetView, uet_present};

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
            uet: Some(Box::new(PdcValues::of(self))),
            ..FlowRow::default()
        }
    }
}

impl Analyzer {
    /// UET's totals (`summary.json`'s `uet`): the retired PDC directions'
    /// sums and `live`'s; none without a UET record, so a RoCE run's
    /// summary reads as before.
    pub(super) fn uet_totals<'a>(
        &self,
        live: impl IntoIterator<Item = &'a Pdc>,
    ) -> Option<UetTotals> {
        (self.frames.uet > 0).then(|| {
            let mut t = self.pdcs.retired.with(live);
            t.retrans_rate = ratio(t.retrans_packets, t.data_packets);
            t
        })
    }
}

/// What a UET frame is compared on as a mirror copy (`dups::Owner::Transport`):
/// its PDS type, flags and PSN (an ACK's cumulative PSN), and in place of
/// the ICRC it has none of, [`digest`].
pub(super) fn copy_fields(rec: &PacketRecord) -> CopyFields {
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

impl super::Analysis {
    /// UET's part of another analyzer's analysis of the same run added to
    /// this one (a sharded run, `crate::shard::whole`): its totals added,
    /// the rate taken again from the sums; its `uet_paths` rows joined,
    /// in key order as one analyzer's live rows are.
    pub fn add_transports(&mut self, more: &super::Analysis) {
        let mine = &mut self.summary.transports.uet;
        *mine = match (mine.take(), &more.summary.transports.uet) {
            (Some(mut t), Some(u)) => {
                add_totals(&mut t, u);
                t.retrans_rate = ratio(t.retrans_packets, t.data_packets);
                Some(t)
            }
            (t, u) => t.or_else(|| u.clone()),
        };
        self.uet_paths.extend(more.uet_paths.iter().cloned());
        self.uet_paths.sort_by_key(|r| r.key);
    }
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
