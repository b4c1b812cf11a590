//! Interim rows (docs/tables.md, flows' `interim`; the NetFlow/IPFIX active
//! timeout): a flow active longer than `--flow-active` writes a row for
//! each such interval of capture time, and its next row counts from there.
//! A flow's rows then add up to the flow: its counters are per interval
//! (summed by a reader), its maxima and measurements are over its life so
//! far (the last row's hold for the whole flow). A flow that sends nothing
//! after its last interim row ends with a row of zero counts at its last
//! packet's time (`interim` false): every flow's rows end with one.

use super::super::hash::FastMap;
use super::super::rows::{FlowRow, ratio};
use super::Flow;

/// Where a flow's current interval begins, and its row at that moment.
#[derive(Debug)]
pub(crate) struct Interval {
    start_ns: u64,
    base: FlowRow,
    goodput_bytes: u64,
}

/// The intervals of the flows that wrote an interim row, by flow id.
#[derive(Debug, Default)]
pub(crate) struct Intervals(FastMap<u32, Box<Interval>>);

impl Intervals {
    /// Whether flow `id` wrote an interim row (its row then counts from
    /// the last one's end).
    pub(crate) fn holds(&self, id: u32) -> bool {
        self.0.contains_key(&id)
    }

    /// `row`, flow `f`'s row over its life, made its row since its last
    /// interim row (unchanged for a flow that wrote none).
    pub(crate) fn since(&self, f: &Flow, row: &mut FlowRow) {
        self.since_of(f.id, f.goodput_bytes(), row);
    }

    /// [`Self::since`] for flow `id` (a QP's or another transport's) with
    /// `goodput_bytes` over its life.
    pub(crate) fn since_of(&self, id: u32, goodput_bytes: u64, row: &mut FlowRow) {
        if let Some(iv) = self.0.get(&id) {
            subtract(row, &iv.base);
            // Nothing since its last interim row: a row of zero counts at
            // its last packet ends it.
            row.first_ts_ns = if row.packets == 0 {
                row.last_ts_ns
            } else {
                iv.start_ns
            };
            let dur = row.last_ts_ns.saturating_sub(row.first_ts_ns);
            let gbps = |bytes: u64| {
                if dur == 0 {
                    0.0
                } else {
                    bytes as f64 * 8.0 / dur as f64
                }
            };
            row.gbps = gbps(row.bytes);
            row.goodput_gbps = gbps(goodput_bytes.saturating_sub(iv.goodput_bytes));
            row.retrans_rate = ratio(row.retrans_packets, row.data_packets);
        }
    }

    /// Flow `id`'s interval ends at `boundary`: its row over its life then
    /// is `life`, its goodput `goodput_bytes`.
    pub(crate) fn restart(&mut self, id: u32, goodput_bytes: u64, life: FlowRow, boundary: u64) {
        self.0.insert(
            id,
            Box::new(Interval {
                start_ns: boundary,
                base: life,
                goodput_bytes,
            }),
        );
    }

    /// [`Self::since_of`] on `life`, flow `id`'s row over its life,
    /// returned.
    pub(crate) fn row_since(&self, id: u32, goodput_bytes: u64, mut life: FlowRow) -> FlowRow {
        self.since_of(id, goodput_bytes, &mut life);
        life
    }

    /// Flow `id` retired.
    pub(crate) fn forget(&mut self, id: u32) {
        self.0.remove(&id);
    }
}

/// The counters of `r` less those of `base`; maxima and measurements stay
/// `r`'s.
fn subtract(r: &mut FlowRow, base: &FlowRow) {
    let sub = |a: &mut u64, b: u64| *a = a.saturating_sub(b);
    sub(&mut r.packets, base.packets);
    sub(&mut r.bytes, base.bytes);
    sub(&mut r.data_packets, base.data_packets);
    sub(&mut r.payload_bytes, base.payload_bytes);
    sub(&mut r.retrans_packets, base.retrans_packets);
    sub(&mut r.rewinds, base.rewinds);
    sub(&mut r.rewinds_nak, base.rewinds_nak);
    sub(&mut r.rewinds_rnr, base.rewinds_rnr);
    sub(&mut r.rewinds_timeout, base.rewinds_timeout);
    sub(&mut r.spurious_retrans, base.spurious_retrans);
    sub(&mut r.gaps, base.gaps);
    sub(&mut r.acks, base.acks);
    sub(&mut r.naks, base.naks);
    sub(&mut r.rnr_naks, base.rnr_naks);
    sub(&mut r.ce, base.ce);
    sub(&mut r.cnps, base.cnps);
    sub(&mut r.rewinds_timeout_ghost, base.rewinds_timeout_ghost);
    sub(&mut r.gap_late, base.gap_late);
    sub(&mut r.gap_lost_before_tap, base.gap_lost_before_tap);
    sub(&mut r.gap_nak_lost, base.gap_nak_lost);
    sub(&mut r.gap_capture_lost, base.gap_capture_lost);
    sub(&mut r.gap_unresolved, base.gap_unresolved);
    if let (Some(a), Some(b)) = (&mut r.icrc_errors, base.icrc_errors) {
        sub(a, b);
    }
    sub(&mut r.mirror_copies, base.mirror_copies);
    sub(&mut r.trimmed, base.trimmed);
    sub(&mut r.nic_timeout_samples, base.nic_timeout_samples);
    sub(&mut r.dcqcn_reactions, base.dcqcn_reactions);
    sub(
        &mut r.dcqcn_cnps_without_reaction,
        base.dcqcn_cnps_without_reaction,
    );
    sub(&mut r.becn, base.becn);
    r.subtract_transport(base);
}
