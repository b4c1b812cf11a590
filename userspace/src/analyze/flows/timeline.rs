//! Timeline bins: per-flow rows of `timeline.parquet`, and how a summary-mode
//! delta is spread over them (`docs/tables.md`, *timeline.parquet*).

use rocescope_common::summary::FlowDelta;

use super::Flow;
use crate::analyze::Sink;
use crate::analyze::pfc::PfcTracker;
use crate::analyze::rows::TimelineRow;

#[derive(Clone, Copy, Debug, Default)]
pub(in crate::analyze) struct Bin {
    pub(in crate::analyze) start: u64,
    pub(in crate::analyze) packets: u64,
    pub(in crate::analyze) bytes: u64,
    pub(in crate::analyze) retrans: u64,
    pub(in crate::analyze) ce: u64,
    pub(in crate::analyze) cnps: u64,
    pub(in crate::analyze) goodput_bytes: u64,
}

/// Flows per chunk of [`OpenBins`].
const CHUNK: usize = 4096;

/// Every flow's open bin, by flow index, beside the flows: held only while
/// the sink keeps timeline rows (`report` writes none, and its flows carry
/// no bin: 64 bytes a flow).
#[derive(Debug, Default)]
pub(in crate::analyze) struct OpenBins {
    chunks: Vec<Vec<Option<Bin>>>,
}

impl OpenBins {
    fn slot(&mut self, i: usize) -> &mut Option<Bin> {
        let c = i / CHUNK;
        if self.chunks.len() <= c {
            self.chunks.resize_with(c + 1, || vec![None; CHUNK]);
        }
        &mut self.chunks[c][i % CHUNK]
    }

    fn get(&self, i: usize) -> Option<&Bin> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)?.as_ref()
    }

    /// Slots below which a flow may hold an open bin (none when the sink
    /// keeps no timeline).
    pub(in crate::analyze) fn held(&self) -> usize {
        self.chunks.len() * CHUNK
    }

    /// Flow `i`'s open bin, closed.
    pub(in crate::analyze) fn take(&mut self, i: usize) -> Option<Bin> {
        self.chunks.get_mut(i / CHUNK)?.get_mut(i % CHUNK)?.take()
    }
}

/// Flow `i`'s (`f`'s) bin for time `now`, flushing the previous one when
/// `now` is in a later bin; `None` when the sink keeps no timeline.
pub(in crate::analyze) fn bin_mut<'a>(
    bins: &'a mut OpenBins,
    i: usize,
    f: &Flow,
    pfc: &PfcTracker,
    now: u64,
    bin_ns: u64,
    sink: &mut impl Sink,
) -> Option<&'a mut Bin> {
    if !sink.keeps_timeline() {
        return None;
    }
    let start = now - now % bin_ns;
    let slot = bins.slot(i);
    if let Some(b) = *slot
        && b.start < start
    {
        flush_bin(f, &b, pfc, bin_ns, now, sink);
        *slot = None;
    }
    Some(slot.get_or_insert(Bin {
        start,
        ..Bin::default()
    }))
}

/// Most timeline bins one delta's frames are spread over; a longer span
/// (a flush interval far above the bin width) goes into its last bin.
pub(in crate::analyze) const MAX_SPREAD_BINS: u64 = 4096;

/// A delta's frames into the flow's timeline, spread evenly over the time
/// they were counted in (`first_ts_ns..=last_ts_ns`): each bin gets the
/// share of the packets its part of that span holds (rounded so the shares
/// add up exactly), and bytes, goodput and CE marks in proportion to its
/// packets. Exact per flow; the shape within the span is an estimate.
pub(in crate::analyze) fn spread_over_bins(
    bins: &mut OpenBins,
    i: usize,
    f: &Flow,
    pfc: &PfcTracker,
    d: &FlowDelta,
    bin_ns: u64,
    sink: &mut impl Sink,
) {
    if !sink.keeps_timeline() {
        return;
    }
    let last = d.last_ts_ns;
    let mut first = d
        .first_ts_ns
        .min(last)
        .max(bins.get(i).map_or(0, |b| b.start));
    // An open bin that starts after the delta's last frame (a CNP to the
    // flow opened it, and the delta came after the CNP) takes all of it,
    // as the bin of its last frame would.
    if first > last || (last - first) / bin_ns >= MAX_SPREAD_BINS {
        first = last;
    }
    let span = u128::from(last - first) + 1;
    let share = |total: u64, of: u128, whole: u128| (u128::from(total) * of / whole) as u64;
    let (mut packets, mut bytes, mut goodput, mut ce) = (0u64, 0u64, 0u64, 0u64);
    let mut start = first - first % bin_ns;
    loop {
        let end = start.saturating_add(bin_ns).min(last.saturating_add(1));
        // Cumulative shares up to the end of this bin.
        let p = share(d.packets, u128::from(end - first), span);
        let by_packets = |total: u64| share(total, u128::from(p), u128::from(d.packets));
        let (b_, g_, c_) = (
            by_packets(d.bytes),
            by_packets(d.payload_bytes),
            by_packets(u64::from(d.ce)),
        );
        if p > packets
            && let Some(b) = bin_mut(bins, i, f, pfc, start.max(first), bin_ns, sink)
        {
            b.packets += p - packets;
            b.bytes += b_ - bytes;
            b.goodput_bytes += g_ - goodput;
            b.ce += c_ - ce;
            (packets, bytes, goodput, ce) = (p, b_, g_, c_);
        }
        if end > last {
            break;
        }
        start += bin_ns;
    }
}

pub(in crate::analyze) fn flush_bin(
    f: &Flow,
    b: &Bin,
    pfc: &PfcTracker,
    bin_ns: u64,
    now: u64,
    sink: &mut impl Sink,
) {
    let paused_ns = f
        .priority()
        .map(|p| {
            pfc.paused(f.iface, p, b.start, b.start.saturating_add(bin_ns), now)
                .0
        })
        .unwrap_or(0);
    sink.timeline(&TimelineRow {
        flow_id: f.id,
        bin_start_ns: b.start,
        bin_ns,
        packets: b.packets,
        bytes: b.bytes,
        retrans_packets: b.retrans,
        ce: b.ce,
        cnps: b.cnps,
        gbps: b.bytes as f64 * 8.0 / bin_ns as f64,
        goodput_gbps: b.goodput_bytes as f64 * 8.0 / bin_ns as f64,
        paused_ns,
    });
}
